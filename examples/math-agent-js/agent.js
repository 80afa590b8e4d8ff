// Example agent: solves a grade-school word problem with one LLM call and grades itself by the
// last number of the reply — examples/math-agent in JavaScript, with the same prompt use, log and
// grading, so the same scripted LLM rules apply. The prompt is the tunable `prompt` resource (a
// template with a `{question}` placeholder), so a prompt-optimization algorithm can improve it.

import * as agl from 'agl';
import { lastNumber, sameNumber } from './grading.js';

/** Used when the rollout's resources have no `prompt` template. */
const FALLBACK_PROMPT = 'Solve the problem and end with the number.\nProblem: {question}';

export const rollout = agl.rollout(async (task, ctx) => {
  if (typeof task?.question !== 'string' || typeof task?.answer !== 'string') {
    throw new agl.AglError('the task must be {"question": string, "answer": string}');
  }
  // The tunable prompt, filled by the host (which records which version was used).
  const prompt = ctx.prompt('prompt', FALLBACK_PROMPT).format({ question: task.question });
  const reply = await ctx.llm.ask(prompt);

  // Exact match of the final number: "... so she has 27 left." -> 27.
  const extracted = lastNumber(reply);
  const correct = extracted !== undefined && sameNumber(extracted, task.answer);
  const shown = extracted === undefined ? 'no number' : String(extracted);
  ctx.info(`extracted answer: ${shown} (expected ${task.answer})`);
  if (!correct) {
    // Textual feedback beside the reward, for algorithms that learn from text: what went wrong
    // on this task. The reward stays 0.
    ctx.feedback(`expected ${task.answer}, got ${shown}`);
  }

  // The final reward; an algorithm reads it from the rollout.
  return correct ? 1 : 0;
});
