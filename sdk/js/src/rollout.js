// The glue between the WIT export `rollout(ctx, task-json) -> result<option<f64>, string>` and the
// agent function: parse the task, build the Ctx, await the function, and map its outcome. A
// returned number is the final reward, undefined/null leaves it to `ctx.reward`; an exception
// fails the attempt with its message (thrown to componentize-js as a string, which becomes the
// WIT `err`), after its stack is logged at error level. Nothing the agent throws becomes a trap.

import { AglError, describe } from './errors.js';
import { Ctx } from './ctx.js';

/** At most this many characters of a stack go into the error log. */
const STACK_CHARS = 4000;
/** At most this many lines of it. */
const STACK_LINES = 40;

/** The failure reason for a thrown value: its message, never empty. */
export function reasonOf(thrown) {
  const reason = describe(thrown);
  return reason.length > 0 ? reason : 'the rollout threw an empty error';
}

/** The error log for a thrown value: its name, message and bounded stack. */
export function errorLog(thrown) {
  if (!(thrown instanceof Error)) {
    return `rollout failed: ${reasonOf(thrown)}`;
  }
  const head = `rollout failed: ${thrown.name}: ${reasonOf(thrown)}`.slice(0, STACK_CHARS);
  const stack = typeof thrown.stack === 'string' ? thrown.stack : '';
  let lines = stack.split('\n').filter((line) => line.length > 0);
  const cut = lines.length > STACK_LINES;
  lines = lines.slice(0, STACK_LINES);
  let text = lines.length > 0 ? `${head}\n${lines.join('\n')}` : head;
  if (cut || text.length > STACK_CHARS) {
    text = `${text.slice(0, STACK_CHARS)}\n...`;
  }
  return text;
}

/** The final reward for what the agent function returned. */
export function finalReward(value) {
  if (value === undefined || value === null) {
    return undefined;
  }
  if (typeof value === 'number') {
    return value;
  }
  throw new AglError(
    `the rollout returned ${typeof value === 'string' ? JSON.stringify(value) : `a ${typeof value}`}; ` +
      'return a number (the final reward), or null/undefined to leave it to ctx.reward',
  );
}

/**
 * Runs one attempt of `fn` on the WIT `context` and `taskJson` against `host`. Resolves to the
 * final reward (a number or undefined); rejects with the failure reason (a string).
 */
export async function runAttempt(fn, context, taskJson, host) {
  try {
    let task;
    try {
      task = JSON.parse(taskJson);
    } catch (err) {
      throw new AglError(`the task is not JSON: ${describe(err)}`);
    }
    const ctx = new Ctx(context, host);
    return finalReward(await fn(task, ctx));
  } catch (thrown) {
    try {
      host.log('error', errorLog(thrown));
    } catch {
      // The log is a courtesy; the reason below is what the host records.
    }
    throw reasonOf(thrown);
  }
}
