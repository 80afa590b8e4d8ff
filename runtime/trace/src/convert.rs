//! OpenTelemetry `SpanData` → the store's `Span` (Agent-lightning's shape): hex ids, seconds
//! since the epoch, attributes as JSON, the parent's context kept.

use agl_store::{Event, JsonMap, Link, OtelResource, Span, SpanContext, StatusCode, TraceStatus, hex_id, json_number};
use opentelemetry::trace::Status;
use opentelemetry::{Array, KeyValue, Value};
use opentelemetry_sdk::trace::SpanData;
use serde_json::Value as Json;
use std::time::{SystemTime, UNIX_EPOCH};

/// Lower-case hex of an id's bytes (a trace id gives 32 digits, a span id 16).
fn hex(bytes: &[u8]) -> String {
    hex_id(bytes, 0)
}

fn seconds(time: SystemTime) -> f64 {
    time.duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

fn json(value: &Value) -> Json {
    match value {
        Value::Bool(b) => Json::Bool(*b),
        Value::I64(i) => Json::from(*i),
        Value::F64(f) => json_number(*f),
        Value::String(s) => Json::String(s.as_str().to_owned()),
        Value::Array(Array::Bool(v)) => v.iter().map(|b| Json::Bool(*b)).collect(),
        Value::Array(Array::I64(v)) => v.iter().map(|i| Json::from(*i)).collect(),
        Value::Array(Array::F64(v)) => v.iter().map(|f| json_number(*f)).collect(),
        Value::Array(Array::String(v)) => v.iter().map(|s| Json::String(s.as_str().to_owned())).collect(),
        _ => Json::String(value.to_string()),
    }
}

fn attributes(pairs: &[KeyValue]) -> JsonMap {
    pairs
        .iter()
        .map(|kv| (kv.key.as_str().to_owned(), json(&kv.value)))
        .collect()
}

/// Like [`attributes`], moving string values out instead of copying them (the span's own
/// attributes: a log message or a prompt can be long).
fn owned_attributes(pairs: Vec<KeyValue>) -> JsonMap {
    pairs
        .into_iter()
        .map(|kv| {
            let value = match kv.value {
                Value::String(s) => Json::String(s.into()),
                other => json(&other),
            };
            (kv.key.as_str().to_owned(), value)
        })
        .collect()
}

/// Converts a finished span of `rollout_id`/`attempt_id` with its store sequence id.
pub fn to_store_span(data: SpanData, rollout_id: &str, attempt_id: &str, sequence_id: u64) -> Span {
    let trace_id = hex(&data.span_context.trace_id().to_bytes());
    let span_id = hex(&data.span_context.span_id().to_bytes());
    let parent_id =
        (data.parent_span_id != opentelemetry::trace::SpanId::INVALID).then(|| hex(&data.parent_span_id.to_bytes()));
    let status = match &data.status {
        Status::Unset => TraceStatus::default(),
        Status::Ok => TraceStatus {
            status_code: StatusCode::Ok,
            ..TraceStatus::default()
        },
        Status::Error { description } => TraceStatus {
            status_code: StatusCode::Error,
            description: Some(description.to_string()),
            extra: JsonMap::new(),
        },
    };
    let events = data
        .events
        .events
        .iter()
        .map(|e| Event {
            name: e.name.to_string(),
            attributes: attributes(&e.attributes),
            timestamp: Some(seconds(e.timestamp)),
            extra: JsonMap::new(),
        })
        .collect();
    let links = data
        .links
        .links
        .iter()
        .map(|l| Link {
            context: SpanContext::new(
                hex(&l.span_context.trace_id().to_bytes()),
                hex(&l.span_context.span_id().to_bytes()),
            ),
            attributes: Some(attributes(&l.attributes)),
            extra: JsonMap::new(),
        })
        .collect();
    Span {
        rollout_id: rollout_id.to_owned(),
        attempt_id: attempt_id.to_owned(),
        sequence_id,
        parent: parent_id.clone().map(|p| SpanContext::new(trace_id.clone(), p)),
        context: Some(SpanContext::new(trace_id.clone(), span_id.clone())),
        trace_id,
        span_id,
        parent_id,
        name: data.name.into_owned(),
        status,
        attributes: owned_attributes(data.attributes),
        events,
        links,
        start_time: Some(seconds(data.start_time)),
        end_time: Some(seconds(data.end_time)),
        resource: OtelResource::default(),
        extra: JsonMap::new(),
        encoded: Default::default(),
    }
}
