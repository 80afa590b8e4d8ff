// The math agent under Node with agl/testing's LocalHost (`npm test`): grading as the Rust
// agent's tests have it, and one attempt end to end with a scripted reply.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { LocalHost, run } from 'agl/testing';
import { rollout } from '../agent.js';
import { lastNumber, sameNumber } from '../grading.js';

test('the last number wins, with separators, decimals and signs', () => {
  assert.equal(lastNumber('12 + 7 = 19. The answer is 19'), 19);
  assert.equal(lastNumber('She had 45, gave 18, so 27 are left.'), 27);
  assert.equal(lastNumber('It costs $1,200.'), 1200);
  assert.equal(lastNumber('about 4.5 km'), 4.5);
  assert.equal(lastNumber('the change is -3'), -3);
  assert.equal(lastNumber('3-2'), 2);
  assert.equal(lastNumber('list: 1, 2, 3'), 3);
  assert.equal(lastNumber('I do not know.'), undefined);
  assert.equal(lastNumber(''), undefined);
});

test('comparison is numeric', () => {
  assert.ok(sameNumber(19, '19'));
  assert.ok(sameNumber(19, ' 19.0 '));
  assert.ok(sameNumber(1200, '1,200'));
  assert.ok(!sameNumber(18, '19'));
  assert.ok(!sameNumber(19, 'nineteen'));
  assert.ok(!sameNumber(0, ''));
});

test('one attempt: the host formats the prompt, the reply is graded and logged, a wrong one gets feedback', async () => {
  const host = new LocalHost({
    prompts: { prompt: 'Solve this problem.\nProblem: {question}' },
    reply: () => '12 + 7 = 19. Tom has 19',
  });
  const task = { question: 'Tom has 12 apples and buys 7 more.', answer: '19' };
  const outcome = await run(rollout, task, host);
  assert.equal(outcome.error, undefined);
  assert.equal(outcome.reward, 1);
  assert.equal(host.requests[0].messages[0].content, 'Solve this problem.\nProblem: Tom has 12 apples and buys 7 more.');
  assert.deepEqual(host.logs, [['info', 'extracted answer: 19 (expected 19)']]);
  assert.deepEqual(host.feedback, [], 'no feedback on a right answer');
  const wrong = await run(rollout, { ...task, answer: '20' }, host);
  assert.equal(wrong.reward, 0);
  assert.deepEqual(host.feedback, ['expected 20, got 19']);
  const vague = new LocalHost({ reply: () => 'no idea' });
  assert.equal((await run(rollout, task, vague)).reward, 0);
  assert.deepEqual(vague.feedback, ['expected 19, got no number']);
  const bad = await run(rollout, { question: 'q' }, host);
  assert.equal(bad.error, 'the task must be {"question": string, "answer": string}');
});
