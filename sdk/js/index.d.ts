// Type declarations of the `agl` module: agl-host agents in JavaScript or TypeScript
// (world agl:agent/agent@0.3.0). See README.md.

/** Which split a rollout belongs to. */
export type Mode = 'train' | 'val' | 'test';

/** Who is running: the WIT `rollout-context`. */
export interface RolloutContext {
  readonly rolloutId: string;
  readonly attemptId: string;
  /** 1 for the first attempt, 2 for the first retry, ... */
  readonly attemptNumber: number;
  readonly mode?: Mode;
  /** The version of the resources this attempt uses (e.g. "rs-1a2b3c4d5e6f"). */
  readonly resourcesId?: string;
}

export type Role = 'system' | 'user' | 'assistant' | 'tool';

/**
 * A tool call the model made, its arguments both ways as in every SDK: `argumentsJson` is the JSON
 * text exactly as the model wrote it; `arguments` is that text parsed (a non-enumerable getter that
 * throws SyntaxError when read if the model wrote invalid JSON).
 */
export interface ToolCall {
  id: string;
  name: string;
  argumentsJson: string;
  readonly arguments: any;
}

/** One message of a conversation. */
export interface Message {
  role: Role;
  content?: string;
  /** For role `tool`: the id of the tool call this message answers. */
  toolCallId?: string;
  /**
   * For role `assistant`: the tool calls the model made (a reply's `ToolCall`s, sent with their
   * `argumentsJson` as written; or calls of your own with `argumentsJson`, or `arguments` as an
   * object or JSON text).
   */
  toolCalls?: Array<{ id: string; name: string; argumentsJson?: string; arguments?: string | object }>;
}

/** A tool the model may call; `parameters` is the JSON schema of its arguments (object or text). */
export interface Tool {
  name: string;
  description?: string;
  parameters?: object | string;
}

export interface ChatOptions {
  tools?: Tool[];
  /** Another model than the host's default (the host may refuse it: ModelNotAllowedError). */
  model?: string;
  temperature?: number;
  maxTokens?: number;
  stop?: string | string[];
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
}

export interface ChatResponse {
  content: string;
  toolCalls: ToolCall[];
  /** "stop", "length", "tool_calls", ... */
  finishReason: string;
  usage: Usage;
  model: string;
  /** The assistant message to append to the conversation (content and tool calls). */
  message: Message & { role: 'assistant'; content: string; toolCalls: ToolCall[] };
}

/** The host's LLM (`ctx.llm`). Rejects with an LlmError subclass. */
export declare class Llm {
  private constructor();
  /** A conversation (or one string: a user message) in, the model's response out. */
  chat(messages: Array<Message | string> | string, options?: ChatOptions): Promise<ChatResponse>;
  /** One user message in, the reply's text out. */
  ask(prompt: string, options?: ChatOptions): Promise<string>;
}

/** A resource of the rollout (`ctx.resource(name)`). */
export type Resource =
  | { kind: 'prompt-template'; template: string; engine: string }
  | { kind: 'llm' | 'proxy-llm'; endpoint: string; model: string; samplingParametersJson: string };

/** A prompt template (`ctx.prompt(name)` or `Prompt.inline(template)`). */
export declare class Prompt {
  private constructor();
  /** An f-string template the agent carries itself. */
  static inline(template: string): Prompt;
  /** The resource it came from; undefined for an inline template. */
  readonly resourceName: string | undefined;
  readonly template: string;
  /** "f-string", "jinja" or "poml". */
  readonly engine: string;
  /** Fills `{name}` placeholders (the host formats resources, so the trace shows the prompt used). */
  format(vars?: Record<string, unknown>): string;
}

export type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error';

/** The context of one attempt. Every call is a host call, recorded as a span. */
export declare class Ctx {
  private constructor();
  readonly context: RolloutContext;
  readonly rolloutId: string;
  readonly attemptId: string;
  readonly attemptNumber: number;
  readonly mode: Mode | undefined;
  readonly resourcesId: string | undefined;
  readonly llm: Llm;
  resource(name: string): Resource | undefined;
  /** The prompt template resource `name`, else `fallbackTemplate` inline, else a PromptError. */
  prompt(name: string, fallbackTemplate?: string): Prompt;
  log(level: Level, message: string): void;
  trace(message: string): void;
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  /** Logs at error level; the attempt goes on (throw to fail it). */
  error(message: string): void;
  /** A free-form message (an `agentlightning.message` span). */
  message(text: string): void;
  /** A structured object, recorded as JSON (an `agentlightning.object` span). */
  object(value: unknown): void;
  /** Runs `body` inside an operation span; an exception marks the span failed and is thrown on. */
  operation<T>(name: string, body: () => T): T;
}

// What each capability module (src/capabilities/*.js) adds: its Ctx members, and what its fake
// adds to agl/testing's LocalHost (and LocalHostOptions), in one block each.

/** Capability `reward` (src/capabilities/reward.js). */
export interface Ctx {
  /** The primary reward (a later one replaces an earlier one as final). */
  reward(value: number): void;
  /** One of several named rewards. */
  reward(name: string, value: number): void;
  /**
   * Textual feedback on this attempt beside its reward (what went wrong on this task), for
   * algorithms that learn from text; several calls append, bounded by the host (16 KiB).
   */
  feedback(text: string): void;
}
declare module './testing/index.js' {
  interface LocalHost {
    /** `[name, value]` per reward, the name undefined for the primary one. */
    readonly rewards: Array<[string | undefined, number]>;
    /** The `ctx.feedback` texts, in order. */
    readonly feedback: string[];
  }
}

/** What the agent function may return: the final reward, or nothing (then `ctx.reward` counts). */
export type FinalReward = number | null | undefined | void;

/** The exported `rollout` (the WIT export); `agent` is the function it wraps. */
export interface RolloutExport<Task> {
  (context: RolloutContext, taskJson: string): Promise<number | undefined>;
  readonly agent: (task: Task, ctx: Ctx) => FinalReward | Promise<FinalReward>;
}

/**
 * Wraps the agent function as the component's export:
 * `export const rollout = agl.rollout(async (task, ctx) => ...)`.
 * Throwing fails the attempt with the exception's message.
 */
export declare function rollout<Task = any>(
  fn: (task: Task, ctx: Ctx) => FinalReward | Promise<FinalReward>,
): RolloutExport<Task>;

/** Formats an f-string template in the guest (`{name}`, `{{`, `}}`). */
export declare function formatTemplate(template: string, vars: Record<string, unknown>): string;

export declare const WIT_PACKAGE: 'agl:agent@0.3.0';

/** Every error the SDK throws. */
export declare class AglError extends Error {}

/** A prompt template that cannot be found or formatted. */
export declare class PromptError extends AglError {}

export type LlmErrorKind = 'model-not-allowed' | 'budget-exceeded' | 'timeout' | 'invalid-request' | 'backend';

/** The host refused or failed an LLM call (the WIT `llm-error`). */
export declare class LlmError extends AglError {
  readonly kind: LlmErrorKind;
  /** The case's text; undefined for "timeout". */
  readonly detail: string | undefined;
}
export declare class ModelNotAllowedError extends LlmError {
  constructor(model: string);
  readonly kind: 'model-not-allowed';
}
export declare class BudgetExceededError extends LlmError {
  constructor(what: string);
  readonly kind: 'budget-exceeded';
}
export declare class LlmTimeoutError extends LlmError {
  constructor();
  readonly kind: 'timeout';
}
export declare class InvalidRequestError extends LlmError {
  constructor(why: string);
  readonly kind: 'invalid-request';
}
export declare class BackendError extends LlmError {
  constructor(why: string);
  readonly kind: 'backend';
}
