// Chat completions through the host, which holds the keys, enforces the attempt's budget and
// traces each call. `Llm` turns JavaScript messages and options into the WIT `chat-request`
// (checking them first, so a wrong type is an InvalidRequestError rather than a trap) and the
// WIT `chat-response` back into plain objects. Calls return promises (the host call itself is
// synchronous today; `await` keeps agents unchanged when the component model gains async).

import { InvalidRequestError, llmErrorFrom, payloadOf } from './errors.js';

const ROLES = new Set(['system', 'user', 'assistant', 'tool']);
const U32_MAX = 0xffffffff;

function fail(why) {
  throw new InvalidRequestError(why);
}

function text(value, what) {
  if (typeof value !== 'string') {
    fail(`${what} must be a string, not ${value === null ? 'null' : typeof value}`);
  }
  return value;
}

function optionalText(value, what) {
  return value === undefined || value === null ? undefined : text(value, what);
}

function jsonText(value, what) {
  if (typeof value === 'string') {
    return value;
  }
  let json;
  try {
    json = JSON.stringify(value);
  } catch (err) {
    fail(`${what} cannot be written as JSON: ${err.message}`);
  }
  if (json === undefined) {
    fail(`${what} cannot be written as JSON`);
  }
  return json;
}

function toWitToolCall(call, i, where) {
  if (call === null || typeof call !== 'object') {
    fail(`${where}.toolCalls[${i}] must be an object {id, name, argumentsJson or arguments}`);
  }
  // `argumentsJson` (a reply's tool call) is sent as it is, unparsed; else `arguments`, text or value.
  const argumentsJson =
    call.argumentsJson !== undefined
      ? text(call.argumentsJson, `${where}.toolCalls[${i}].argumentsJson`)
      : jsonText(call.arguments ?? '{}', `${where}.toolCalls[${i}].arguments`);
  return {
    id: text(call.id, `${where}.toolCalls[${i}].id`),
    name: text(call.name, `${where}.toolCalls[${i}].name`),
    argumentsJson,
  };
}

/**
 * A tool call the model made, its arguments both ways as in every SDK: `argumentsJson` is the JSON
 * text exactly as the model wrote it; `arguments` is that text parsed, a getter that throws
 * SyntaxError when read if the model wrote invalid JSON (not enumerable, like a property of a
 * class: spreading or `JSON.stringify` copies `id`, `name` and `argumentsJson`).
 */
export function toolCall(id, name, argumentsJson) {
  const call = { id, name, argumentsJson };
  Object.defineProperty(call, 'arguments', {
    get() {
      return JSON.parse(this.argumentsJson);
    },
    enumerable: false,
  });
  return call;
}

/** A WIT `message` from `{role, content, toolCallId?, toolCalls?}` (or a string: a user message). */
export function toWitMessage(message, i) {
  const where = `messages[${i}]`;
  if (typeof message === 'string') {
    return { role: 'user', content: message, toolCallId: undefined, toolCalls: [] };
  }
  if (message === null || typeof message !== 'object') {
    fail(`${where} must be an object {role, content} or a string`);
  }
  if (!ROLES.has(message.role)) {
    fail(`${where}.role must be one of system, user, assistant, tool, not ${JSON.stringify(message.role)}`);
  }
  const calls = message.toolCalls ?? [];
  if (!Array.isArray(calls)) {
    fail(`${where}.toolCalls must be an array`);
  }
  return {
    role: message.role,
    content: message.content === undefined || message.content === null ? '' : text(message.content, `${where}.content`),
    toolCallId: optionalText(message.toolCallId, `${where}.toolCallId`),
    toolCalls: calls.map((call, j) => toWitToolCall(call, j, where)),
  };
}

/** A WIT `tool` from `{name, description?, parameters?}` (`parameters`: a JSON schema, object or text). */
export function toWitTool(tool, i) {
  if (tool === null || typeof tool !== 'object') {
    fail(`tools[${i}] must be an object {name, description, parameters}`);
  }
  return {
    name: text(tool.name, `tools[${i}].name`),
    description: tool.description === undefined ? '' : text(tool.description, `tools[${i}].description`),
    parametersJson: jsonText(tool.parameters ?? { type: 'object', properties: {} }, `tools[${i}].parameters`),
  };
}

/** The WIT `chat-request` for `messages` and `options`. */
export function toWitRequest(messages, options = {}) {
  const list = typeof messages === 'string' ? [messages] : messages;
  if (!Array.isArray(list)) {
    fail('messages must be an array of messages (or one string: a user message)');
  }
  if (options === null || typeof options !== 'object') {
    fail('chat options must be an object');
  }
  const { model, temperature, maxTokens, stop, tools } = options;
  if (temperature !== undefined && !(typeof temperature === 'number' && Number.isFinite(temperature))) {
    fail(`temperature must be a finite number, not ${String(temperature)}`);
  }
  if (maxTokens !== undefined && !(Number.isInteger(maxTokens) && maxTokens >= 0 && maxTokens <= U32_MAX)) {
    fail(`maxTokens must be an integer from 0 to ${U32_MAX}, not ${String(maxTokens)}`);
  }
  const stops = stop === undefined ? [] : typeof stop === 'string' ? [stop] : stop;
  if (!Array.isArray(stops)) {
    fail('stop must be a string or an array of strings');
  }
  const toolList = tools ?? [];
  if (!Array.isArray(toolList)) {
    fail('tools must be an array');
  }
  return {
    messages: list.map(toWitMessage),
    model: optionalText(model, 'model'),
    temperature,
    maxTokens,
    stop: stops.map((s, i) => text(s, `stop[${i}]`)),
    tools: toolList.map(toWitTool),
  };
}

/** The agent's view of a WIT `chat-response`. */
export function fromWitResponse(response) {
  const toolCalls = response.toolCalls.map((call) => toolCall(call.id, call.name, call.argumentsJson));
  return {
    content: response.content,
    toolCalls,
    finishReason: response.finishReason,
    usage: { inputTokens: response.usage.inputTokens, outputTokens: response.usage.outputTokens },
    model: response.model,
    /** The assistant message to append to the conversation (content and tool calls). */
    message: { role: 'assistant', content: response.content, toolCalls },
  };
}

/** The host's LLM for one attempt: `ctx.llm`. */
export class Llm {
  #host;

  constructor(host) {
    this.#host = host;
  }

  /**
   * Sends a conversation; resolves to `{content, toolCalls, finishReason, usage, model, message}`,
   * rejects with an LlmError subclass when the host refuses or the backend fails.
   */
  async chat(messages, options = {}) {
    const request = toWitRequest(messages, options);
    let response;
    try {
      response = this.#host.chat(request);
    } catch (err) {
      throw llmErrorFrom(payloadOf(err));
    }
    return fromWitResponse(response);
  }

  /** One user message in, the reply's text out. */
  async ask(prompt, options = {}) {
    const reply = await this.chat([{ role: 'user', content: text(prompt, 'the prompt') }], options);
    return reply.content;
  }
}
