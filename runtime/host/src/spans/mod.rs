//! Automatic tracing: every host call of an attempt becomes an OpenTelemetry span (via
//! `opentelemetry_sdk`), and a span processor hands finished spans to the LightningStore in
//! batches with sequence ids. One root span per attempt; host-call spans are its children.

mod attempt;
mod convert;
mod recorder;

pub use attempt::{AttemptTrace, LiveSpan};
pub use convert::to_store_span;
pub use recorder::SpanRecorder;

/// Names and attribute keys the host writes (Agent-lightning's where it has one).
pub mod names {
    pub const ROOT: &str = "agentlightning.rollout";
    pub const REWARD: &str = "agentlightning.annotation";
    pub const LLM: &str = "openai.chat.completion";
    pub const LOG: &str = "agl.log";
    pub const MESSAGE: &str = "agl.message";
    pub const OBJECT: &str = "agl.object";
    pub const STDOUT: &str = "agl.stdout";
    pub const STDERR: &str = "agl.stderr";
    pub const RESOURCE_GET: &str = "agl.resources.get";
    pub const FORMAT_PROMPT: &str = "agl.resources.format_prompt";

    pub const ROLLOUT_ID: &str = "agentlightning.rollout_id";
    pub const ATTEMPT_ID: &str = "agentlightning.attempt_id";
    pub const REWARD_NAME: &str = "agentlightning.reward.0.name";
    pub const REWARD_VALUE: &str = "agentlightning.reward.0.value";
}
