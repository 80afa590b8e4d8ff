// agl: write an agl-host agent in JavaScript.
//
//   import * as agl from 'agl';
//   export const rollout = agl.rollout(async (task, ctx) => {
//     const prompt = ctx.prompt('prompt').format({ question: task.question });
//     const reply = await ctx.llm.ask(prompt);
//     return reply.trim() === task.answer ? 1 : 0;
//   });
//
// `agl-host build DIR` bundles the module with this SDK and builds a component of the world
// agl:agent/agent@0.3.0 with componentize-js. See sdk/js/README.md.

import { AglError } from './errors.js';
import { witHost } from './host.js';
import { runAttempt } from './rollout.js';

export {
  AglError,
  BackendError,
  BudgetExceededError,
  InvalidRequestError,
  LlmError,
  LlmTimeoutError,
  ModelNotAllowedError,
  PromptError,
} from './errors.js';
export { Ctx } from './ctx.js';
export { Llm } from './llm.js';
export { Prompt } from './prompt.js';
export { formatTemplate } from './template.js';
// What capability modules export (src/capabilities/*.js, see capability.js).
export * from 'agl:capabilities';

/** The WIT package this SDK speaks. */
export const WIT_PACKAGE = 'agl:agent@0.3.0';

/**
 * Wraps the agent function `fn(task, ctx)` (sync or async) as the component's `rollout` export:
 * `export const rollout = agl.rollout(async (task, ctx) => ...)`. `task` is the rollout's input,
 * parsed from JSON. Return the final reward (a number) or nothing; throw to fail the attempt.
 */
export function rollout(fn) {
  if (typeof fn !== 'function') {
    throw new AglError('agl.rollout(fn): fn must be a function (task, ctx) => reward');
  }
  const exported = (context, taskJson) => runAttempt(fn, context, taskJson, witHost);
  Object.defineProperty(exported, 'agent', { value: fn });
  return exported;
}
