//! Span: Agent-lightning's canonical OpenTelemetry span record. Unknown keys are kept and echoed.

use super::JsonMap;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum StatusCode {
    #[default]
    #[serde(rename = "UNSET")]
    Unset,
    #[serde(rename = "OK")]
    Ok,
    #[serde(rename = "ERROR")]
    Error,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct TraceStatus {
    pub status_code: StatusCode,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(flatten)]
    pub extra: JsonMap,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpanContext {
    pub trace_id: String,
    pub span_id: String,
    #[serde(default)]
    pub is_remote: bool,
    #[serde(default)]
    pub trace_state: indexmap::IndexMap<String, String>,
    #[serde(flatten)]
    pub extra: JsonMap,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub name: String,
    #[serde(default)]
    pub attributes: JsonMap,
    #[serde(default)]
    pub timestamp: Option<f64>,
    #[serde(flatten)]
    pub extra: JsonMap,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Link {
    pub context: SpanContext,
    #[serde(default)]
    pub attributes: Option<JsonMap>,
    #[serde(flatten)]
    pub extra: JsonMap,
}

/// The OpenTelemetry resource a span came from (not to be confused with tunable resources).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct OtelResource {
    #[serde(default)]
    pub attributes: JsonMap,
    #[serde(default)]
    pub schema_url: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Span {
    pub rollout_id: String,
    pub attempt_id: String,
    /// Ordering key within the rollout, from `get_next_span_sequence_id`.
    pub sequence_id: u64,
    /// 32 hex digits.
    pub trace_id: String,
    /// 16 hex digits.
    pub span_id: String,
    #[serde(default)]
    pub parent_id: Option<String>,
    pub name: String,
    #[serde(default)]
    pub status: TraceStatus,
    #[serde(default)]
    pub attributes: JsonMap,
    #[serde(default)]
    pub events: Vec<Event>,
    #[serde(default)]
    pub links: Vec<Link>,
    #[serde(default)]
    pub start_time: Option<f64>,
    #[serde(default)]
    pub end_time: Option<f64>,
    #[serde(default)]
    pub context: Option<SpanContext>,
    #[serde(default)]
    pub parent: Option<SpanContext>,
    #[serde(default)]
    pub resource: OtelResource,
    /// Keys the model does not name, kept for forward compatibility.
    #[serde(flatten)]
    pub extra: JsonMap,
}

impl Span {
    /// A minimal span with the given identity; everything else empty.
    pub fn new(
        rollout_id: impl Into<String>,
        attempt_id: impl Into<String>,
        sequence_id: u64,
        trace_id: impl Into<String>,
        span_id: impl Into<String>,
        name: impl Into<String>,
    ) -> Self {
        Self {
            rollout_id: rollout_id.into(),
            attempt_id: attempt_id.into(),
            sequence_id,
            trace_id: trace_id.into(),
            span_id: span_id.into(),
            parent_id: None,
            name: name.into(),
            status: TraceStatus::default(),
            attributes: JsonMap::new(),
            events: Vec::new(),
            links: Vec::new(),
            start_time: None,
            end_time: None,
            context: None,
            parent: None,
            resource: OtelResource::default(),
            extra: JsonMap::new(),
        }
    }
}
