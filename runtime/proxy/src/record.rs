//! The LLM span of one proxied call, written to the store under the call's rollout and attempt:
//! the span the host records for an agent's own LLM calls (`openai.chat.completion`, built by
//! `agl_trace::llm`, so our adapter and Agent-lightning's `TracerTraceToTriplet` read it
//! alike), its own trace (the proxy sees no parent), plus what the proxy adds: the mode, the
//! upstream, the retries, whether it streamed, and on failure the error.

use agl_llm::{ChatRequest, ChatResponse};
use agl_store::{JsonMap, LightningStore, Span, StatusCode, TraceStatus, hex_id, json_number};
use agl_trace::SpanExport;
use agl_trace::llm::{request_attributes, response_attributes};
use agl_trace::names;
use opentelemetry::trace::SpanKind;
use opentelemetry::{Array, KeyValue, Value};
use serde_json::Value as Json;
use std::time::{SystemTime, UNIX_EPOCH};

/// `train`, `val` or `test`: the route's mode, else the rollout's.
pub const PROXY_MODE: &str = "agl.llm.proxy.mode";
/// The upstream that answered (its API root or backend name; never a key).
pub const PROXY_UPSTREAM: &str = agl_store::semconv::LLM_PROXY_UPSTREAM;
/// How many times the upstream was tried again before this answer.
pub const PROXY_RETRIES: &str = "agl.llm.proxy.retries";
/// `true` when the answer was streamed (server-sent events) to the client.
pub const PROXY_STREAM: &str = "agl.llm.proxy.stream";
/// The HTTP status the client got.
pub const HTTP_STATUS: &str = "http.response.status_code";

/// Seconds since the epoch.
pub(crate) fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The attempt a call is recorded under, and what is known of it when it starts.
#[derive(Debug, Clone)]
pub(crate) struct CallRecord {
    pub rollout_id: String,
    pub attempt_id: String,
    pub sequence_id: u64,
    pub mode: Option<String>,
    pub started: f64,
    /// The model the upstream was asked for.
    pub model: String,
    pub upstream: String,
    pub stream: bool,
}

/// How the call ended.
pub(crate) enum Outcome<'a> {
    Answered {
        response: &'a ChatResponse,
        retries: u32,
    },
    /// `partial`: what a stream had brought when it broke off.
    Failed {
        why: String,
        status: u16,
        partial: Option<&'a ChatResponse>,
    },
}

impl CallRecord {
    /// The store span of the call: `request` (when it could be read) and its outcome.
    pub fn span(&self, request: Option<&ChatRequest>, outcome: Outcome<'_>, cap: usize) -> Span {
        let mut attributes = Vec::new();
        if let Some(request) = request {
            attributes.extend(request_attributes(request, &self.model, cap));
        } else {
            attributes.push(KeyValue::new(names::GEN_AI_REQUEST_MODEL, self.model.clone()));
        }
        if let Some(mode) = &self.mode {
            attributes.push(KeyValue::new(PROXY_MODE, mode.clone()));
        }
        attributes.push(KeyValue::new(PROXY_UPSTREAM, self.upstream.clone()));
        attributes.push(KeyValue::new(PROXY_STREAM, self.stream));
        let status = match outcome {
            Outcome::Answered { response, retries } => {
                attributes.extend(response_attributes(response, cap));
                attributes.push(KeyValue::new(PROXY_RETRIES, i64::from(retries)));
                attributes.push(KeyValue::new(HTTP_STATUS, 200_i64));
                TraceStatus {
                    status_code: StatusCode::Ok,
                    ..TraceStatus::default()
                }
            }
            Outcome::Failed { why, status, partial } => {
                if let Some(partial) = partial {
                    attributes.extend(response_attributes(partial, cap));
                }
                attributes.push(KeyValue::new(names::ERROR_TYPE, agl_store::clip(&why, cap)));
                attributes.push(KeyValue::new(HTTP_STATUS, i64::from(status)));
                TraceStatus {
                    status_code: StatusCode::Error,
                    description: Some(agl_store::clip(&why, cap)),
                    extra: JsonMap::new(),
                }
            }
        };
        let trace_id = hex_id(&fastrand::u128(..).to_be_bytes(), 0);
        let span_id = hex_id(&fastrand::u64(..).to_be_bytes(), 0);
        let mut span = Span::new(
            self.rollout_id.clone(),
            self.attempt_id.clone(),
            self.sequence_id,
            trace_id,
            span_id,
            names::LLM,
        );
        span.context = Some(agl_store::SpanContext::new(span.trace_id.clone(), span.span_id.clone()));
        span.status = status;
        span.attributes = attributes
            .into_iter()
            .map(|kv| (kv.key.as_str().to_owned(), json(kv.value)))
            .collect();
        span.start_time = Some(self.started);
        span.end_time = Some(now());
        span
    }
}

/// Writes `span` (and hands it to `export`, when the host exports its spans); a store that
/// refuses it is logged, never the caller's failure (the client has its answer either way).
pub(crate) async fn write(store: &dyn LightningStore, export: Option<&SpanExport>, span: Span) {
    if let Some(export) = export {
        export.send_stored(&span, SpanKind::Client);
    }
    let (rollout_id, attempt_id) = (span.rollout_id.clone(), span.attempt_id.clone());
    if let Err(error) = store.add_span(span).await {
        tracing::warn!(%rollout_id, %attempt_id, %error, "LLM proxy: the call's span was not recorded");
    }
}

/// An attribute value as the store keeps it.
fn json(value: Value) -> Json {
    match value {
        Value::Bool(b) => Json::Bool(b),
        Value::I64(i) => Json::from(i),
        Value::F64(f) => json_number(f),
        Value::String(s) => Json::String(s.into()),
        Value::Array(Array::Bool(v)) => v.into_iter().map(Json::Bool).collect(),
        Value::Array(Array::I64(v)) => v.into_iter().map(Json::from).collect(),
        Value::Array(Array::F64(v)) => v.into_iter().map(json_number).collect(),
        Value::Array(Array::String(v)) => v.into_iter().map(|s| Json::String(s.into())).collect(),
        other => Json::String(other.to_string()),
    }
}
