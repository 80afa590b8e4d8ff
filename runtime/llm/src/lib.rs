//! agl-llm: talking to LLMs, and nothing else (no wasm, no store).
//!
//! - [`LlmBackend`]: the async trait the runtime calls, with the provider-neutral [`types`];
//! - [`OpenAiBackend`]: any OpenAI-compatible HTTP server, with timeouts and retries;
//! - [`limits`]: bounds on one request (bytes, `max_tokens`, tools), checked before it is sent;
//! - [`ScriptedBackend`]: offline, deterministic answers from a JSON rules file;
//! - [`server`]: an OpenAI-compatible HTTP front for any backend, with a
//!   fault-injection hook for tests;
//! - [`openai_json`]: the chat-completions JSON for code that relays it (the LLM proxy).

pub mod backend;
pub mod error;
pub mod limits;
pub mod openai;
pub mod openai_json;
mod retry;
pub mod scripted;
pub mod server;
pub mod types;
mod wire;

pub use backend::LlmBackend;
pub use error::LlmError;
pub use limits::{RequestLimits, RequestRejected, validate_request};
pub use openai::{OpenAiBackend, OpenAiConfig, shown_url};
pub use scripted::{
    ScriptedBackend, ScriptedCondition, ScriptedReply, ScriptedRule, ScriptedRules, ScriptedToolCall, ScriptedUsage,
};
pub use server::{Fault, Faults, ServerHandle, serve, serve_with_faults};
pub use types::{ChatRequest, ChatResponse, Message, Role, TokenDetail, Tool, ToolCall, Usage};
