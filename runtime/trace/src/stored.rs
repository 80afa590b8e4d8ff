//! The store's `Span` back to OpenTelemetry `SpanData`: for spans written to the store without
//! going through the host's tracer (the LLM proxy's), so that they can be exported like the
//! rest. Ids, parent, name, times, status, attributes and events are kept; links are not (the
//! spans this serves have none). The inverse of [`super::convert`] up to attribute types: JSON
//! arrays of one kind become OpenTelemetry arrays, objects and mixed arrays their JSON text.

use agl_store::{Span, StatusCode};
use opentelemetry::trace::{Event, SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState};
use opentelemetry::{Array, InstrumentationScope, KeyValue, StringValue, Value};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
use serde_json::Value as Json;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `span` as the tracer would have recorded it, of `kind`; `None` when its ids are not hex.
pub fn from_store_span(span: &Span, kind: SpanKind) -> Option<SpanData> {
    let trace_id = TraceId::from_hex(&span.trace_id).ok()?;
    let span_id = SpanId::from_hex(&span.span_id).ok()?;
    let parent_span_id = match &span.parent_id {
        Some(parent) => SpanId::from_hex(parent).ok()?,
        None => SpanId::INVALID,
    };
    let status = match span.status.status_code {
        StatusCode::Unset => Status::Unset,
        StatusCode::Ok => Status::Ok,
        StatusCode::Error => Status::error(span.status.description.clone().unwrap_or_default()),
    };
    let events = span
        .events
        .iter()
        .map(|event| {
            Event::new(
                event.name.clone(),
                time(event.timestamp),
                key_values(&event.attributes),
                0,
            )
        })
        .collect();
    Some(SpanData {
        span_context: SpanContext::new(trace_id, span_id, TraceFlags::SAMPLED, false, TraceState::default()),
        parent_span_id,
        parent_span_is_remote: false,
        span_kind: kind,
        name: span.name.clone().into(),
        start_time: time(span.start_time),
        end_time: time(span.end_time.or(span.start_time)),
        attributes: key_values(&span.attributes),
        dropped_attributes_count: 0,
        events: span_events(events),
        links: SpanLinks::default(),
        status,
        instrumentation_scope: InstrumentationScope::builder("agl-host").build(),
    })
}

fn span_events(events: Vec<Event>) -> SpanEvents {
    let mut all = SpanEvents::default();
    all.events = events;
    all
}

fn time(seconds: Option<f64>) -> SystemTime {
    let seconds = seconds.filter(|s| s.is_finite() && *s >= 0.0).unwrap_or_default();
    UNIX_EPOCH + Duration::from_secs_f64(seconds)
}

fn key_values(attributes: &agl_store::JsonMap) -> Vec<KeyValue> {
    attributes
        .iter()
        .filter(|(_, value)| !value.is_null())
        .map(|(key, value)| KeyValue::new(key.clone(), otel_value(value)))
        .collect()
}

fn otel_value(value: &Json) -> Value {
    match value {
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => n
            .as_i64()
            .map_or_else(|| Value::F64(n.as_f64().unwrap_or_default()), Value::I64),
        Json::String(s) => Value::String(s.clone().into()),
        Json::Array(items) => array(items).map_or_else(|| Value::String(value.to_string().into()), Value::Array),
        Json::Object(_) | Json::Null => Value::String(value.to_string().into()),
    }
}

/// A JSON array whose items are all of one kind (and not empty) as an OpenTelemetry array.
fn array(items: &[Json]) -> Option<Array> {
    let first = items.first()?;
    let all = |keep: fn(&Json) -> bool| items.iter().all(keep);
    Some(match first {
        Json::Bool(_) if all(Json::is_boolean) => Array::Bool(items.iter().filter_map(Json::as_bool).collect()),
        Json::Number(_) if all(Json::is_i64) => Array::I64(items.iter().filter_map(Json::as_i64).collect()),
        Json::Number(_) if all(Json::is_number) => Array::F64(items.iter().filter_map(Json::as_f64).collect()),
        Json::String(_) if all(Json::is_string) => Array::String(
            items
                .iter()
                .filter_map(Json::as_str)
                .map(|s| StringValue::from(s.to_owned()))
                .collect(),
        ),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::to_store_span;
    use serde_json::json;

    #[test]
    fn a_store_span_comes_back_with_its_ids_times_status_and_typed_attributes() {
        let mut span = Span::new(
            "ro-1",
            "at-1",
            3,
            "0af7651916cd43dd8448eb211c80319c",
            "b7ad6b7169203331",
            "openai.chat.completion",
        );
        span.parent_id = Some("00f067aa0ba902b7".into());
        span.start_time = Some(1_700_000_000.25);
        span.end_time = Some(1_700_000_001.5);
        span.status.status_code = StatusCode::Error;
        span.status.description = Some("upstream 503".into());
        span.attributes = json!({
            "gen_ai.usage.input_tokens": 7, "temperature": 0.5, "stream": true, "model": "m",
            "ids": [1, 2], "stops": ["a", "b"], "mixed": [1, "x"], "tools": {"k": 1}
        })
        .as_object()
        .cloned()
        .unwrap_or_default();

        let data = from_store_span(&span, SpanKind::Client).expect("hex ids");
        assert_eq!(data.span_kind, SpanKind::Client);
        assert_eq!(data.status, Status::error("upstream 503"));
        let value = |key: &str| {
            data.attributes
                .iter()
                .find(|kv| kv.key.as_str() == key)
                .map(|kv| kv.value.clone())
        };
        assert_eq!(value("gen_ai.usage.input_tokens"), Some(Value::I64(7)));
        assert_eq!(value("temperature"), Some(Value::F64(0.5)));
        assert_eq!(value("stream"), Some(Value::Bool(true)));
        assert_eq!(value("ids"), Some(Value::Array(Array::I64(vec![1, 2]))));
        assert_eq!(
            value("stops"),
            Some(Value::Array(Array::String(vec!["a".into(), "b".into()])))
        );
        assert_eq!(value("mixed"), Some(Value::String(r#"[1,"x"]"#.into())));
        assert_eq!(value("tools"), Some(Value::String(r#"{"k":1}"#.into())));

        // Converted again, it is the span it was (ids, parent, name, times, status, attributes).
        let back = to_store_span(data, "ro-1", "at-1", 3);
        assert_eq!(
            (&back.trace_id, &back.span_id, &back.parent_id, &back.name),
            (&span.trace_id, &span.span_id, &span.parent_id, &span.name)
        );
        assert_eq!((back.start_time, back.end_time), (span.start_time, span.end_time));
        assert_eq!(back.status.status_code, StatusCode::Error);
        assert_eq!(back.attributes["ids"], json!([1, 2]));
        assert_eq!(back.attributes["model"], json!("m"));
    }

    #[test]
    fn ids_that_are_not_hex_give_nothing() {
        let span = Span::new("r", "a", 1, "zz", "b7ad6b7169203331", "x");
        assert!(from_store_span(&span, SpanKind::Internal).is_none());
    }
}
