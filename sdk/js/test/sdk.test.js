// Unit tests of the SDK under Node (`npm test`, or `node --import ./testing/register.js --test
// test/`), against LocalHost: the rollout glue, the LLM request and response mapping, typed LLM
// errors, prompts, rewards, logs and operation spans.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import * as agl from 'agl';
import { LocalHost, run } from 'agl/testing';

test('a returned number is the final reward; nothing leaves it to ctx.reward', async () => {
  const host = new LocalHost();
  assert.deepEqual((await run(agl.rollout(() => 0.5), {}, host)).reward, 0.5);
  const none = await run(
    agl.rollout((task, ctx) => {
      ctx.reward('a', 0.25);
      ctx.reward(1);
    }),
    {},
    host,
  );
  assert.equal(none.reward, undefined);
  assert.equal(none.error, undefined);
  assert.deepEqual(host.rewards, [['a', 0.25], [undefined, 1]]);
});

test('ctx.feedback appends texts beside the reward, in order; a non-string throws', async () => {
  const host = new LocalHost();
  const outcome = await run(
    agl.rollout((task, ctx) => {
      ctx.feedback('expected 27, got 2.7: units');
      ctx.feedback('\u001b[2J kept as data');
      assert.throws(() => ctx.feedback(27), /feedback must be a string, not number/);
      return 0;
    }),
    {},
    host,
  );
  assert.equal(outcome.reward, 0);
  assert.deepEqual(host.feedback, ['expected 27, got 2.7: units', '\u001b[2J kept as data']);
});

test('the task is the parsed input and the context is the rollout context', async () => {
  const seen = [];
  const rollout = agl.rollout(async (task, ctx) => {
    seen.push(task.question, ctx.rolloutId, ctx.attemptId, ctx.attemptNumber, ctx.mode, ctx.resourcesId);
    return 1;
  });
  const outcome = await run(rollout, { question: 'q' }, new LocalHost(), { attemptNumber: 2, mode: 'val' });
  assert.equal(outcome.error, undefined);
  assert.deepEqual(seen, ['q', 'ro-local', 'at-local', 2, 'val', 'rs-local']);
});

test('an exception fails the attempt with its message and logs its stack at error level', async () => {
  const host = new LocalHost();
  const outcome = await run(
    agl.rollout(async () => {
      await null;
      throw new TypeError('no answer field');
    }),
    {},
    host,
  );
  assert.equal(outcome.error, 'no answer field');
  const [level, text] = host.logs.at(-1);
  assert.equal(level, 'error');
  assert.match(text, /^rollout failed: TypeError: no answer field\n/);
  assert.ok(text.length <= 4100, `bounded: ${text.length}`);
  assert.equal((await run(agl.rollout(() => Promise.reject('plain')), {})).error, 'plain');
  assert.equal((await run(agl.rollout(() => { throw new Error(''); }), {})).error, 'Error');
});

test('a deep stack is cut in the log, never in the reason', async () => {
  const host = new LocalHost();
  const deep = (n) => {
    if (n === 0) {
      throw new Error('bottom '.repeat(2000));
    }
    return deep(n - 1) + 1;
  };
  const outcome = await run(agl.rollout(() => deep(200)), {}, host);
  assert.equal(outcome.error.length, 'bottom '.length * 2000);
  const [, text] = host.logs.at(-1);
  assert.ok(text.length <= 4004 && text.endsWith('\n...'), text.slice(-40));
});

test('a wrong return value or a task that is not JSON fails with a clear reason', async () => {
  const wrong = await run(agl.rollout(() => 'yes'), {});
  assert.match(wrong.error, /^the rollout returned "yes"; return a number/);
  const fn = agl.rollout(() => 1);
  const host = new LocalHost();
  const { runAttempt } = await import('../src/rollout.js');
  await assert.rejects(runAttempt(fn.agent, {}, '{not json', host), /^the task is not JSON: /);
  assert.throws(() => agl.rollout('nope'), agl.AglError);
});

test('chat sends the WIT request and maps the response, tool calls included', async () => {
  const host = new LocalHost({
    reply: () => ({ content: '', toolCalls: [{ id: 'c1', name: 'add', arguments: { a: 1, b: 2 } }], model: 'm' }),
  });
  const outcome = await run(
    agl.rollout(async (task, ctx) => {
      const tools = [{ name: 'add', description: 'adds', parameters: { type: 'object' } }];
      const first = await ctx.llm.chat([{ role: 'system', content: 's' }, 'hi'], {
        tools,
        model: 'm',
        temperature: 0.5,
        maxTokens: 64,
        stop: 'END',
      });
      assert.equal(first.finishReason, 'tool_calls');
      assert.deepEqual(first.toolCalls, [{ id: 'c1', name: 'add', argumentsJson: '{"a":1,"b":2}' }]);
      assert.deepEqual(first.toolCalls[0].arguments, { a: 1, b: 2 });
      assert.deepEqual(first.message, { role: 'assistant', content: '', toolCalls: first.toolCalls });
      await ctx.llm.chat([first.message, { role: 'tool', content: '3', toolCallId: 'c1' }]);
      return 1;
    }),
    {},
    host,
  );
  assert.equal(outcome.error, undefined);
  const [first, second] = host.requests;
  assert.deepEqual(first, {
    messages: [
      { role: 'system', content: 's', toolCallId: undefined, toolCalls: [] },
      { role: 'user', content: 'hi', toolCallId: undefined, toolCalls: [] },
    ],
    model: 'm',
    temperature: 0.5,
    maxTokens: 64,
    stop: ['END'],
    tools: [{ name: 'add', description: 'adds', parametersJson: '{"type":"object"}' }],
  });
  assert.deepEqual(second.messages[0].toolCalls, [{ id: 'c1', name: 'add', argumentsJson: '{"a":1,"b":2}' }]);
  assert.deepEqual(second.messages[1], { role: 'tool', content: '3', toolCallId: 'c1', toolCalls: [] });
});

test('a tool call has its arguments as the JSON text and parsed', async () => {
  const written = '{"a": 2,\n "b": [3]}';
  const host = new LocalHost({
    reply: () => ({
      content: '',
      toolCalls: [
        { id: 'c1', name: 'add', arguments: written },
        { id: 'c2', name: 'add', arguments: '{"a": 2,' },
      ],
    }),
  });
  const outcome = await run(
    agl.rollout(async (task, ctx) => {
      const [good, broken] = (await ctx.llm.chat('hi')).toolCalls;
      assert.equal(good.argumentsJson, written, 'the text exactly as the model wrote it');
      assert.deepEqual(good.arguments, { a: 2, b: [3] });
      assert.equal(broken.argumentsJson, '{"a": 2,');
      assert.throws(() => broken.arguments, SyntaxError, 'invalid JSON throws only when read');
      assert.equal(JSON.stringify(broken), '{"id":"c2","name":"add","argumentsJson":"{\\"a\\": 2,"}');
      // Sent back, both go as written (unparsed); a call written by the agent may give `arguments`.
      await ctx.llm.chat([
        { role: 'assistant', content: '', toolCalls: [good, broken, { id: 'c3', name: 'f', arguments: { x: 1 } }] },
      ]);
      return 1;
    }),
    {},
    host,
  );
  assert.equal(outcome.error, undefined);
  assert.deepEqual(
    host.requests[1].messages[0].toolCalls.map((c) => c.argumentsJson),
    [written, '{"a": 2,', '{"x":1}'],
  );
});

test('LLM errors are typed, one class per WIT case, and read as sentences', async () => {
  const cases = [
    [new agl.ModelNotAllowedError('gpt-x'), agl.ModelNotAllowedError, 'LLM call refused: model `gpt-x` is not allowed for this agent'],
    [new agl.BudgetExceededError('calls (10)'), agl.BudgetExceededError, 'LLM budget of this attempt exceeded: calls (10)'],
    [new agl.LlmTimeoutError(), agl.LlmTimeoutError, "LLM call timed out: the backend did not answer within the host's limit"],
    [new agl.InvalidRequestError('no messages'), agl.InvalidRequestError, 'invalid LLM request: no messages'],
    [new agl.BackendError('HTTP 503'), agl.BackendError, 'LLM backend failed: HTTP 503'],
  ];
  for (const [refusal, type, message] of cases) {
    const host = new LocalHost({
      reply: () => {
        throw refusal;
      },
    });
    const outcome = await run(
      agl.rollout(async (task, ctx) => {
        const err = await ctx.llm.ask('hi').then(
          () => assert.fail('the call must fail'),
          (e) => e,
        );
        assert.ok(err instanceof type && err instanceof agl.LlmError && err instanceof agl.AglError, err.name);
        assert.equal(err.kind, refusal.kind);
        throw err;
      }),
      {},
      host,
    );
    assert.equal(outcome.error, message);
  }
});

test('bad requests are refused in the guest before the host sees them', async () => {
  const host = new LocalHost({ reply: () => 'x' });
  const bad = [
    [[{ role: 'robot', content: 'x' }], {}, /messages\[0\]\.role must be one of/],
    [['x'], { maxTokens: -1 }, /maxTokens must be an integer/],
    [['x'], { temperature: Number.NaN }, /temperature must be a finite number/],
    [[{ role: 'user', content: 5 }], {}, /messages\[0\]\.content must be a string/],
    ['x', { stop: [1] }, /stop\[0\] must be a string/],
  ];
  const outcome = await run(
    agl.rollout(async (task, ctx) => {
      for (const [messages, options, why] of bad) {
        await assert.rejects(ctx.llm.chat(messages, options), (err) => err instanceof agl.InvalidRequestError && why.test(err.message));
      }
    }),
    {},
    host,
  );
  assert.equal(outcome.error, undefined);
  assert.equal(host.requests.length, 0);
});

test('prompts: resources are formatted by the host, inline fallbacks here, errors name the prompt', async () => {
  const host = new LocalHost({
    prompts: { prompt: 'Q: {question}' },
    resources: { main: { kind: 'llm', endpoint: 'http://x', model: 'm' } },
  });
  const outcome = await run(
    agl.rollout((task, ctx) => {
      assert.equal(ctx.prompt('prompt').format({ question: '1+1?' }), 'Q: 1+1?');
      assert.equal(ctx.prompt('other', 'Fallback {question}').format({ question: 'q', extra: 1 }), 'Fallback q');
      assert.throws(() => ctx.prompt('prompt').format({}), /^PromptError: prompt `prompt`: no value for placeholder `\{question\}` \(given: nothing\)$/);
      assert.throws(() => ctx.prompt('missing'), /no resource named `missing` in this rollout's resources \(version rs-local\)/);
      assert.throws(() => ctx.prompt('main', 'x'), /resource `main` is an LLM endpoint, not a prompt template/);
      assert.throws(() => agl.Prompt.inline('{a b}').format({}), /the placeholder `\{a b\}`, which is not a plain name/);
      assert.deepEqual(ctx.resource('main'), { kind: 'llm', endpoint: 'http://x', model: 'm', samplingParametersJson: '{}' });
      assert.equal(ctx.resource('none'), undefined);
    }),
    {},
    host,
  );
  assert.equal(outcome.error, undefined);
});

// The f-string rules every formatter follows, shared with agl-template's and the Python SDK's tests.
const FSTRING_VECTORS = JSON.parse(readFileSync(new URL('../../../tests/vectors/fstring.json', import.meta.url), 'utf8'));

test('the f-string formatter follows the host: the shared vectors', () => {
  assert.ok(FSTRING_VECTORS.format.length >= 15);
  for (const { template, values, expected, error } of FSTRING_VECTORS.format) {
    const vars = Object.fromEntries(values);
    if (error === undefined) {
      assert.equal(agl.formatTemplate(template, vars), expected, template);
    } else {
      assert.throws(
        () => agl.formatTemplate(template, vars),
        (thrown) => thrown instanceof agl.PromptError && thrown.message === error.message,
        template,
      );
    }
  }
});

test('operations wrap sync and async bodies and record failures', async () => {
  const host = new LocalHost({ reply: () => 'x' });
  const outcome = await run(
    agl.rollout(async (task, ctx) => {
      assert.equal(ctx.operation('sync', () => 7), 7);
      assert.equal(await ctx.operation('async', async () => ctx.llm.ask('hi')), 'x');
      assert.throws(() => ctx.operation('throws', () => { throw new Error('bad step'); }), /bad step/);
      await assert.rejects(ctx.operation('rejects', async () => { throw new Error('bad async step'); }), /bad async step/);
    }),
    {},
    host,
  );
  assert.equal(outcome.error, undefined);
  assert.deepEqual(host.operations, [
    { name: 'sync', ended: true, error: undefined },
    { name: 'async', ended: true, error: undefined },
    { name: 'throws', ended: true, error: 'bad step' },
    { name: 'rejects', ended: true, error: 'bad async step' },
  ]);
});

test('logs, messages and objects reach the host; bad values are SDK errors', async () => {
  const host = new LocalHost();
  const outcome = await run(
    agl.rollout((task, ctx) => {
      ctx.debug('d');
      ctx.info('i');
      ctx.warn('w');
      ctx.error('e');
      ctx.log('trace', 't');
      ctx.message('m');
      ctx.object({ a: [1, 2] });
      assert.throws(() => ctx.log('loud', 'x'), agl.AglError);
      assert.throws(() => ctx.object({ big: 1n }), /cannot be written as JSON/);
      assert.throws(() => ctx.reward('0.5'), /a reward must be a number, not string/);
    }),
    {},
    host,
  );
  assert.equal(outcome.error, undefined);
  assert.deepEqual(host.logs, [['debug', 'd'], ['info', 'i'], ['warn', 'w'], ['error', 'e'], ['trace', 't']]);
  assert.deepEqual(host.messages, ['m']);
  assert.deepEqual(host.objects, [{ a: [1, 2] }]);
});
