// `Ctx`: what one attempt of a rollout can reach — who is running (the WIT rollout-context), the
// LLM, the rollout's resources and prompts, logs, messages, objects and operation spans, and the
// members every capability module adds (`agl:capabilities`, see capability.js; rewards are one).
// Every call goes to the host, which records it as a span of the attempt.

import capabilities from 'agl:capabilities';

import { attachHost, defineMembers } from './capability.js';
import { AglError, PromptError, describe } from './errors.js';
import { Llm } from './llm.js';
import { Prompt } from './prompt.js';

const LEVELS = new Set(['trace', 'debug', 'info', 'warn', 'error']);

const KIND_WORDS = {
  'prompt-template': 'a prompt template',
  llm: 'an LLM endpoint',
  'proxy-llm': 'a proxy LLM endpoint',
};

/** The agent's view of a WIT `resource` variant. */
function fromWitResource(resource) {
  if (resource.tag === 'prompt-template') {
    return { kind: 'prompt-template', template: resource.val.template, engine: resource.val.engine };
  }
  return {
    kind: resource.tag,
    endpoint: resource.val.endpoint,
    model: resource.val.model,
    samplingParametersJson: resource.val.samplingParametersJson,
  };
}

/** The context of one attempt, handed to the agent function with its task. */
export class Ctx {
  #host;
  #llm;

  constructor(context, host) {
    this.#host = host;
    attachHost(this, host);
    this.#llm = new Llm(host);
    /** The WIT rollout-context as the host gave it. */
    this.context = Object.freeze({ ...context });
  }

  /** The rollout this attempt belongs to. */
  get rolloutId() {
    return this.context.rolloutId;
  }

  /** This attempt's id. */
  get attemptId() {
    return this.context.attemptId;
  }

  /** 1 for the first attempt, 2 for the first retry, ... */
  get attemptNumber() {
    return this.context.attemptNumber;
  }

  /** "train", "val", "test", or undefined when the algorithm set none. */
  get mode() {
    return this.context.mode;
  }

  /** The version of the resources this attempt uses, if any. */
  get resourcesId() {
    return this.context.resourcesId;
  }

  /** The host's LLM. */
  get llm() {
    return this.#llm;
  }

  /** The resource called `name` in this attempt's resources, or undefined. */
  resource(name) {
    const resource = this.#host.get(String(name));
    return resource === undefined || resource === null ? undefined : fromWitResource(resource);
  }

  /**
   * The prompt template resource called `name`. Without it: `fallbackTemplate` as an inline
   * template when given, else a PromptError. A resource of another kind is always a PromptError.
   */
  prompt(name, fallbackTemplate) {
    const resource = this.resource(name);
    if (resource === undefined) {
      if (fallbackTemplate !== undefined) {
        return Prompt.inline(fallbackTemplate);
      }
      const version = this.resourcesId === undefined ? 'the rollout has no resources' : `version ${this.resourcesId}`;
      throw new PromptError(`no resource named \`${name}\` in this rollout's resources (${version})`);
    }
    if (resource.kind !== 'prompt-template') {
      throw new PromptError(`resource \`${name}\` is ${KIND_WORDS[resource.kind] ?? resource.kind}, not a prompt template`);
    }
    return new Prompt(this.#host, String(name), resource.template, resource.engine);
  }

  /** Logs `message` at `level` ("trace", "debug", "info", "warn", "error"). */
  log(level, message) {
    if (!LEVELS.has(level)) {
      throw new AglError(`log level must be one of trace, debug, info, warn, error, not ${JSON.stringify(level)}`);
    }
    this.#host.log(level, String(message));
  }

  trace(message) {
    this.log('trace', message);
  }

  debug(message) {
    this.log('debug', message);
  }

  info(message) {
    this.log('info', message);
  }

  warn(message) {
    this.log('warn', message);
  }

  /** Logs at error level; the attempt goes on (throw to fail it). */
  error(message) {
    this.log('error', message);
  }

  /** A free-form message (an `agentlightning.message` span). */
  message(text) {
    this.#host.message(String(text));
  }

  /** A structured object, recorded as JSON (an `agentlightning.object` span). */
  object(value) {
    let json;
    try {
      json = JSON.stringify(value);
    } catch (err) {
      throw new AglError(`ctx.object: the value cannot be written as JSON: ${describe(err)}`);
    }
    if (json === undefined) {
      throw new AglError(`ctx.object: ${typeof value} cannot be written as JSON`);
    }
    this.#host.object(json);
  }

  /**
   * Runs `body` inside an operation span called `name`: host calls made meanwhile are its
   * children. Returns what `body` returns (a promise if it is async); an exception marks the span
   * failed with its message and is thrown on.
   */
  operation(name, body) {
    if (typeof body !== 'function') {
      throw new AglError('ctx.operation(name, body): body must be a function');
    }
    const host = this.#host;
    const handle = host.startOperation(String(name));
    let result;
    try {
      result = body();
    } catch (err) {
      host.endOperation(handle, describe(err));
      throw err;
    }
    if (result !== null && typeof result === 'object' && typeof result.then === 'function') {
      return Promise.resolve(result).then(
        (value) => {
          host.endOperation(handle, undefined);
          return value;
        },
        (err) => {
          host.endOperation(handle, describe(err));
          throw err;
        },
      );
    }
    host.endOperation(handle, undefined);
    return result;
  }
}

// Every capability's Ctx members, as if written in the class body.
for (const capability of capabilities) {
  defineMembers(Ctx.prototype, capability.ctx, 'Ctx');
}
