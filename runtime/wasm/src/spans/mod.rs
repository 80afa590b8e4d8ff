//! Automatic tracing: every host call of an attempt becomes an OpenTelemetry span (via
//! `opentelemetry_sdk`), and a span processor hands finished spans to the LightningStore in
//! batches with sequence ids. One root span per attempt; host-call spans are its children.

mod attempt;
mod budget;
mod convert;
mod export;
pub mod llm;
mod recorder;
mod stored;

pub use attempt::{AttemptTrace, LiveSpan};
pub use budget::{DroppedSpans, SPAN_OVERHEAD_BYTES, SpanAccount};
pub use convert::to_store_span;
pub use export::SpanExport;
pub use recorder::SpanRecorder;
pub use stored::from_store_span;

/// Names and attribute keys the host writes: the span contract of [`agl_store::semconv`] (Agent-
/// lightning's names where it has one), plus the short aliases the host's code uses.
pub mod names {
    use agl_store::semconv as s;
    pub use agl_store::semconv::*;

    pub const ROOT: &str = s::ROLLOUT_SPAN;
    pub const REWARD: &str = s::ANNOTATION_SPAN;
    pub const LLM: &str = s::LLM_SPAN;
    /// Logs are message spans with a level (Agent-lightning's `AGL_MESSAGE` is for both).
    pub const LOG: &str = s::MESSAGE_SPAN;
    pub const MESSAGE: &str = s::MESSAGE_SPAN;
    pub const OBJECT: &str = s::OBJECT_SPAN;
    pub const STDOUT: &str = s::STDOUT_SPAN;
    pub const STDERR: &str = s::STDERR_SPAN;
    pub const RESOURCE_GET: &str = s::RESOURCE_GET_SPAN;
    pub const FORMAT_PROMPT: &str = s::FORMAT_PROMPT_SPAN;
    pub const REWARD_NAME: &str = s::REWARD_0_NAME;
    pub const REWARD_VALUE: &str = s::REWARD_0_VALUE;
    pub const SPANS_DROPPED: &str = s::SPANS_DROPPED_SPAN;
}
