//! agl-llm: talking to LLMs, and nothing else (no wasm, no store).
//!
//! - [`LlmBackend`]: the async trait the runtime calls, with the provider-neutral [`types`];
//! - [`OpenAiBackend`]: any OpenAI-compatible HTTP server, with timeouts and retries;
//! - [`limits`]: bounds on one request (bytes, `max_tokens`, tools), checked before it is sent;
//! - [`ScriptedBackend`]: offline, deterministic answers from a JSON rules file;
//! - [`SimulatedBackend`]: an offline simulated task and reflection model, for benchmarking
//!   prompt optimisers;
//! - [`openai_json`]: the chat-completions JSON for code that relays or serves it (the LLM proxy,
//!   the test server `agl_testkit::llm_server`).

pub mod backend;
pub mod error;
pub mod limits;
#[cfg(feature = "http-client")]
pub mod openai;
pub mod openai_json;
mod retry;
pub mod scripted;
pub mod simulated;
pub mod types;
mod wire;

pub use backend::LlmBackend;
pub use error::LlmError;
pub use limits::{RequestLimits, RequestRejected, validate_request};
#[cfg(feature = "http-client")]
pub use openai::{OpenAiBackend, OpenAiConfig, shown_url};
pub use scripted::{
    ScriptedBackend, ScriptedCondition, ScriptedReply, ScriptedRule, ScriptedRules, ScriptedToolCall, ScriptedUsage,
};
pub use simulated::{FailureMode, SimulatedBackend, SimulationSpec};
pub use types::{ChatRequest, ChatResponse, Message, Role, TokenDetail, Tool, ToolCall, Usage};
