// Testing an agent under Node, without agl-host or WebAssembly. `LocalHost` plays the host:
// prompt templates and other resources from plain objects, LLM replies from a function, and a
// record of every call (requests, logs, messages, objects, operations, and what each capability
// module's fake records: rewards, ...). `run` runs one attempt of an exported rollout exactly as
// the component does, exceptions included.
//
//   // node --import <sdk>/testing/register.js --test
//   import { LocalHost, run } from 'agl/testing';
//   import { rollout } from '../agent.js';
//   const host = new LocalHost({ prompts: { prompt: 'Q: {question}' }, reply: () => '19' });
//   const outcome = await run(rollout, { question: '12+7?', answer: '19' }, host);
//   assert.equal(outcome.reward, 1);

import capabilities from 'agl:capabilities';

import { defineMembers } from '../src/capability.js';
import { LlmError, describe } from '../src/errors.js';
import { runAttempt } from '../src/rollout.js';
import { formatTemplate } from '../src/template.js';

/** A WIT-shaped error, as the component's imports throw them. */
function componentError(payload) {
  const err = new Error(typeof payload === 'string' ? payload : describe(payload));
  err.payload = payload;
  return err;
}

/** A host in plain JavaScript, for unit tests of agents. */
export class LocalHost {
  /**
   * `prompts`: name -> f-string template; `resources`: name -> a resource as `ctx.resource`
   * returns it; `reply(request)`: the model, returning a string or `{content, toolCalls, ...}`, or
   * throwing an LlmError (an `agl` LlmError subclass) to refuse the call.
   */
  constructor(options = {}) {
    const { prompts = {}, resources = {}, reply } = options;
    this.resources = { ...resources };
    for (const [name, template] of Object.entries(prompts)) {
      this.resources[name] = { kind: 'prompt-template', template, engine: 'f-string' };
    }
    this.reply = reply;
    this.requests = [];
    this.logs = [];
    this.messages = [];
    this.objects = [];
    this.operations = [];
    for (const capability of capabilities) {
      Object.assign(this, capability.local?.state?.(options));
    }
  }

  chat(request) {
    this.requests.push(request);
    if (this.reply === undefined) {
      throw componentError({ tag: 'backend', val: 'LocalHost has no reply function' });
    }
    let answer;
    try {
      answer = this.reply(request);
    } catch (err) {
      if (err instanceof LlmError) {
        throw componentError(err.detail === undefined ? { tag: err.kind } : { tag: err.kind, val: err.detail });
      }
      throw err;
    }
    const reply = typeof answer === 'string' ? { content: answer } : answer;
    return {
      content: reply.content ?? '',
      toolCalls: (reply.toolCalls ?? []).map((call) => ({
        id: call.id,
        name: call.name,
        argumentsJson: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {}),
      })),
      finishReason: reply.finishReason ?? ((reply.toolCalls ?? []).length > 0 ? 'tool_calls' : 'stop'),
      usage: reply.usage ?? { inputTokens: 0, outputTokens: 0 },
      model: reply.model ?? 'local',
    };
  }

  get(name) {
    const resource = this.resources[name];
    if (resource === undefined) {
      return undefined;
    }
    if (resource.kind === 'prompt-template') {
      return { tag: 'prompt-template', val: { template: resource.template, engine: resource.engine ?? 'f-string' } };
    }
    return {
      tag: resource.kind,
      val: {
        endpoint: resource.endpoint ?? '',
        model: resource.model ?? '',
        samplingParametersJson: resource.samplingParametersJson ?? '{}',
      },
    };
  }

  formatPrompt(name, pairs) {
    const resource = this.resources[name];
    if (resource === undefined) {
      throw componentError(`no resource named '${name}' in this rollout's resources`);
    }
    if (resource.kind !== 'prompt-template') {
      throw componentError(`resource '${name}' is not a prompt template`);
    }
    try {
      return formatTemplate(resource.template, Object.fromEntries(pairs));
    } catch (err) {
      throw componentError(describe(err));
    }
  }

  log(level, message) {
    this.logs.push([level, message]);
  }

  message(text) {
    this.messages.push(text);
  }

  object(json) {
    this.objects.push(JSON.parse(json));
  }

  startOperation(name) {
    this.operations.push({ name, ended: false, error: undefined });
    return BigInt(this.operations.length);
  }

  endOperation(handle, error) {
    const operation = this.operations[Number(handle) - 1];
    if (operation !== undefined && !operation.ended) {
      operation.ended = true;
      operation.error = error;
    }
  }
}

// Every capability's fake functions, as if written in the class body.
for (const capability of capabilities) {
  defineMembers(LocalHost.prototype, capability.local?.imports, 'LocalHost');
}

/** The rollout context `run` uses unless given one. */
export const DEFAULT_CONTEXT = Object.freeze({
  rolloutId: 'ro-local',
  attemptId: 'at-local',
  attemptNumber: 1,
  mode: 'train',
  resourcesId: 'rs-local',
});

/**
 * Runs one attempt of `rollout` (what `agl.rollout(fn)` returned, or a plain `fn(task, ctx)`) on
 * `task` (any JSON value) against `host`. Resolves to `{reward, error, host}`: `reward` the final
 * reward (or undefined), `error` the failure reason (a string) when the attempt failed.
 */
export async function run(rollout, task, host = new LocalHost(), context = {}) {
  const fn = typeof rollout.agent === 'function' ? rollout.agent : rollout;
  const taskJson = JSON.stringify(task);
  try {
    const reward = await runAttempt(fn, { ...DEFAULT_CONTEXT, ...context }, taskJson, host);
    return { reward, error: undefined, host };
  } catch (reason) {
    return { reward: undefined, error: reason, host };
  }
}
