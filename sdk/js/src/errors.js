// The SDK's errors. `AglError` is the base of every error the SDK throws; `LlmError` and its
// subclasses mirror the WIT `llm-error` variant one to one (`kind` is the variant's name), with
// messages that read as sentences. Whatever an agent throws becomes the failure reason of its
// attempt (see rollout.js), so the messages say what went wrong.

/** An error raised by the SDK (a bad argument, a missing prompt, a refused host call). */
export class AglError extends Error {
  constructor(message) {
    super(message);
    this.name = new.target.name;
  }
}

/** The host refused or failed an LLM call; `kind` is the WIT `llm-error` case. */
export class LlmError extends AglError {
  constructor(message, kind, detail) {
    super(message);
    /** The WIT case: "model-not-allowed", "budget-exceeded", "timeout", "invalid-request", "backend". */
    this.kind = kind;
    /** The case's text (the model, what budget, why), or undefined for "timeout". */
    this.detail = detail;
  }
}

/** `model-not-allowed`: the model asked for is not among those this agent may use. */
export class ModelNotAllowedError extends LlmError {
  constructor(model) {
    super(`LLM call refused: model \`${model}\` is not allowed for this agent`, 'model-not-allowed', model);
  }
}

/** `budget-exceeded`: this attempt's LLM budget (calls or tokens) is spent. */
export class BudgetExceededError extends LlmError {
  constructor(what) {
    super(`LLM budget of this attempt exceeded: ${what}`, 'budget-exceeded', what);
  }
}

/** `timeout`: the backend did not answer within the host's LLM timeout. */
export class LlmTimeoutError extends LlmError {
  constructor() {
    super("LLM call timed out: the backend did not answer within the host's limit", 'timeout', undefined);
  }
}

/** `invalid-request`: the request is malformed or over the host's limits; it was not sent. */
export class InvalidRequestError extends LlmError {
  constructor(why) {
    super(`invalid LLM request: ${why}`, 'invalid-request', why);
  }
}

/** `backend`: the backend failed (after the host's retries). */
export class BackendError extends LlmError {
  constructor(why) {
    super(`LLM backend failed: ${why}`, 'backend', why);
  }
}

/** A prompt template that cannot be found or formatted. */
export class PromptError extends AglError {}

/** The SDK error for a WIT `llm-error` value (`{tag, val}`), as thrown by the host's `chat`. */
export function llmErrorFrom(variant) {
  const tag = variant && typeof variant === 'object' ? variant.tag : undefined;
  const val = variant && typeof variant === 'object' ? variant.val : undefined;
  switch (tag) {
    case 'model-not-allowed':
      return new ModelNotAllowedError(val);
    case 'budget-exceeded':
      return new BudgetExceededError(val);
    case 'timeout':
      return new LlmTimeoutError();
    case 'invalid-request':
      return new InvalidRequestError(val);
    case 'backend':
      return new BackendError(val);
    default:
      return new BackendError(`unexpected error from the host: ${describe(variant)}`);
  }
}

/** The payload of an error thrown by a WIT import (a ComponentError carries it as `payload`). */
export function payloadOf(thrown) {
  if (thrown && typeof thrown === 'object' && 'payload' in thrown) {
    return thrown.payload;
  }
  return thrown;
}

/** A one-line description of any thrown value: an Error's message, or the value as text. */
export function describe(value) {
  if (value instanceof Error) {
    return value.message || value.name || 'an error without a message';
  }
  if (typeof value === 'string') {
    return value;
  }
  try {
    const json = JSON.stringify(value);
    if (json !== undefined) {
      return json;
    }
  } catch {
    // Not JSON: fall back to String below.
  }
  return String(value);
}
