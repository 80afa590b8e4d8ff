// Type declarations of `agl/testing`: running agents under Node against a LocalHost.

import type { ChatOptions, LlmError, Message, Resource, RolloutContext, RolloutExport, Ctx, FinalReward } from '../index.js';

/** The WIT chat-request as the host receives it. */
export interface WitChatRequest {
  messages: Array<{ role: Message['role']; content: string; toolCallId?: string; toolCalls: Array<{ id: string; name: string; argumentsJson: string }> }>;
  model?: string;
  temperature?: number;
  maxTokens?: number;
  stop: string[];
  tools: Array<{ name: string; description: string; parametersJson: string }>;
}

export interface LocalReply {
  content?: string;
  toolCalls?: Array<{ id: string; name: string; arguments?: string | object }>;
  finishReason?: string;
  usage?: { inputTokens: number; outputTokens: number };
  model?: string;
}

export interface LocalHostOptions {
  /** Prompt template resources: name -> f-string template. */
  prompts?: Record<string, string>;
  /** Other resources, as `ctx.resource` returns them. */
  resources?: Record<string, Resource>;
  /** The model: a reply text or object, or throw an LlmError to refuse the call. */
  reply?: (request: WitChatRequest) => string | LocalReply;
}

/** A host in plain JavaScript that records every call. */
export declare class LocalHost {
  constructor(options?: LocalHostOptions);
  readonly requests: WitChatRequest[];
  readonly logs: Array<[string, string]>;
  readonly messages: string[];
  readonly objects: unknown[];
  readonly operations: Array<{ name: string; ended: boolean; error: string | undefined }>;
}

// What the fakes of capability modules (src/capabilities/*.js) add to LocalHost (and to
// LocalHostOptions) is declared beside their Ctx members, in ../index.d.ts.

export declare const DEFAULT_CONTEXT: RolloutContext;

export interface Outcome {
  /** The final reward, when the attempt succeeded with one. */
  reward: number | undefined;
  /** The failure reason, when the attempt failed. */
  error: string | undefined;
  host: LocalHost;
}

/** Runs one attempt of `rollout` on `task` against `host`, as the component would. */
export declare function run<Task>(
  rollout: RolloutExport<Task> | ((task: Task, ctx: Ctx) => FinalReward | Promise<FinalReward>),
  task: Task,
  host?: LocalHost,
  context?: Partial<RolloutContext>,
): Promise<Outcome>;

export type { ChatOptions, LlmError };
