//! Names and attribute keys the host and the LLM proxy write: the span contract of
//! [`agl_store::semconv`] (Agent-lightning's names where it has one), plus the short aliases the
//! host's code uses.

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

/// An outgoing HTTP request's span: its name and attribute keys (OpenTelemetry's HTTP client conventions where they have one);
/// written by the WASM host's outgoing HTTP capability and read by the span tree.
pub mod http {
    pub const SPAN: &str = "agl.http.request";
    pub const METHOD: &str = "http.request.method";
    pub const SCHEME: &str = "url.scheme";
    pub const HOST: &str = "server.address";
    pub const PORT: &str = "server.port";
    pub const PATH: &str = "url.path";
    pub const STATUS: &str = "http.response.status_code";
    pub const BYTES_SENT: &str = "http.request.body.size";
    pub const BYTES_RECEIVED: &str = "http.response.body.size";
    /// Milliseconds from `handle` to the response's head.
    pub const LATENCY_MS: &str = "agl.http.latency_ms";
    /// False when the guest stopped before the response body's end.
    pub const BODY_COMPLETE: &str = "agl.http.response.body.complete";
    /// Requests sent so far in this attempt, this one included.
    pub const REQUESTS_USED: &str = "agl.http.requests_used";
    pub use super::ERROR_TYPE;
    /// A refused request: what was refused and the flag that would allow it.
    pub use super::{SANDBOX_GRANT as GRANT, SANDBOX_REFUSED as REFUSED};
}
