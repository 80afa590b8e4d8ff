//! OTLP protobuf span → the store's `Span`, field for field as Agent-lightning 0.3.0's
//! `spans_from_proto` (agentlightning/utils/otlp.py) builds it: lower-case hex ids (left-padded
//! with zeros; all zeros when empty), `parent_id` only when the parent span id is set (and, unlike
//! 0.3.0, not all zeros: that is the invalid span id, i.e. no parent), status
//! UNSET/OK/ERROR (an unknown code is UNSET) with the message as description, attributes
//! flattened to JSON (bytes as hex, arrays as lists, key-value lists as objects), events, links
//! (attributes `None` when empty), times as float seconds (`None` for 0), `context` from the
//! span's own ids, no `parent` context, and the resource's attributes with the `ResourceSpans`
//! schema URL.

use agl_store::{Event, JsonMap, Link, OtelResource, Span, SpanContext, StatusCode, TraceStatus, hex_id, json_number};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{Span as ProtoSpan, span, status};
use serde_json::Value as Json;
use std::time::Duration;

/// A trace id as 32 hex digits.
pub fn trace_id_hex(bytes: &[u8]) -> String {
    hex_id(bytes, 32)
}

/// A span id as 16 hex digits.
pub fn span_id_hex(bytes: &[u8]) -> String {
    hex_id(bytes, 16)
}

/// Nanoseconds since the epoch → seconds; `None` for 0 (unset). Like 0.3.0's
/// `convert_timestamp`, a value up to 1e12 is taken to be seconds already.
pub fn seconds(unix_nano: u64) -> Option<f64> {
    match unix_nano {
        0 => None,
        n if n > 1_000_000_000_000 => Some(Duration::from_nanos(n).as_secs_f64()),
        n => Some(n as f64),
    }
}

/// An `AnyValue` as plain JSON; an empty value is `null`.
pub fn any_value(value: Option<&AnyValue>) -> Json {
    use any_value::Value;
    match value.and_then(|v| v.value.as_ref()) {
        None => Json::Null,
        Some(Value::StringValue(s)) => Json::String(s.clone()),
        Some(Value::BoolValue(b)) => Json::Bool(*b),
        Some(Value::IntValue(i)) => Json::from(*i),
        Some(Value::DoubleValue(d)) => json_number(*d),
        Some(Value::ArrayValue(array)) => array.values.iter().map(|v| any_value(Some(v))).collect(),
        Some(Value::KvlistValue(list)) => Json::Object(attributes(&list.values)),
        Some(Value::BytesValue(bytes)) => Json::String(hex_id(bytes, 0)),
        // Only profiles use string tables; a span has nothing to resolve it against.
        Some(Value::StringValueStrindex(_)) => Json::Null,
    }
}

/// Key-value pairs as a JSON object (a repeated key keeps its last value).
pub fn attributes(pairs: &[KeyValue]) -> JsonMap {
    pairs
        .iter()
        .map(|kv| (kv.key.clone(), any_value(kv.value.as_ref())))
        .collect()
}

/// The span's OpenTelemetry resource: its attributes and the `ResourceSpans` schema URL.
pub fn resource(resource: Option<&Resource>, schema_url: &str) -> OtelResource {
    OtelResource {
        attributes: resource.map(|r| attributes(&r.attributes)).unwrap_or_default(),
        schema_url: schema_url.to_owned(),
    }
}

fn trace_status(status: Option<&opentelemetry_proto::tonic::trace::v1::Status>) -> TraceStatus {
    let (code, message) = status.map_or((0, ""), |s| (s.code, s.message.as_str()));
    let status_code = match status::StatusCode::try_from(code) {
        Ok(status::StatusCode::Ok) => StatusCode::Ok,
        Ok(status::StatusCode::Error) => StatusCode::Error,
        _ => StatusCode::Unset,
    };
    TraceStatus {
        status_code,
        description: (!message.is_empty()).then(|| message.to_owned()),
        extra: JsonMap::new(),
    }
}

fn event(event: &span::Event) -> Event {
    Event {
        name: event.name.clone(),
        attributes: attributes(&event.attributes),
        timestamp: seconds(event.time_unix_nano),
        extra: JsonMap::new(),
    }
}

fn link(link: &span::Link) -> Link {
    let attrs = attributes(&link.attributes);
    Link {
        context: SpanContext::new(trace_id_hex(&link.trace_id), span_id_hex(&link.span_id)),
        attributes: (!attrs.is_empty()).then_some(attrs),
        extra: JsonMap::new(),
    }
}

/// Converts one span. `attrs` are the span's attributes already flattened (attribution reads
/// them too); `sequence_id` is the explicit one or 0 until allocated.
pub fn span(
    proto: &ProtoSpan,
    attrs: JsonMap,
    resource: &OtelResource,
    rollout_id: String,
    attempt_id: String,
    sequence_id: u64,
) -> Span {
    let trace_id = trace_id_hex(&proto.trace_id);
    let span_id = span_id_hex(&proto.span_id);
    Span {
        rollout_id,
        attempt_id,
        sequence_id,
        parent_id: proto
            .parent_span_id
            .iter()
            .any(|b| *b != 0)
            .then(|| span_id_hex(&proto.parent_span_id)),
        name: proto.name.clone(),
        status: trace_status(proto.status.as_ref()),
        attributes: attrs,
        events: proto.events.iter().map(event).collect(),
        links: proto.links.iter().map(link).collect(),
        start_time: seconds(proto.start_time_unix_nano),
        end_time: seconds(proto.end_time_unix_nano),
        context: Some(SpanContext::new(trace_id.clone(), span_id.clone())),
        parent: None,
        resource: resource.clone(),
        trace_id,
        span_id,
        extra: JsonMap::new(),
        encoded: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::common::v1::{ArrayValue, KeyValueList};

    fn value(v: any_value::Value) -> AnyValue {
        AnyValue { value: Some(v) }
    }

    #[test]
    fn ids_are_lower_hex_left_padded_and_zero_when_empty() {
        assert_eq!(span_id_hex(&[0xAB, 0x01]), "000000000000ab01");
        assert_eq!(span_id_hex(&[]), "0000000000000000");
        assert_eq!(trace_id_hex(&[0xff; 16]), "f".repeat(32));
        assert_eq!(hex_id(&[0x0f; 9], 16), "0f".repeat(9), "longer ids are not cut");
    }

    #[test]
    fn timestamps_are_seconds_and_zero_is_none() {
        assert_eq!(seconds(0), None);
        assert_eq!(seconds(1_700_000_000_500_000_000), Some(1_700_000_000.5));
        assert_eq!(
            seconds(1_700_000_000),
            Some(1_700_000_000.0),
            "small values are seconds already"
        );
    }

    #[test]
    fn any_values_flatten_to_json() {
        use any_value::Value as V;
        let nested = KeyValueList {
            values: vec![KeyValue {
                key: "k".into(),
                value: Some(value(V::IntValue(-3))),
                key_strindex: 0,
            }],
        };
        let array = ArrayValue {
            values: vec![
                value(V::StringValue("a".into())),
                value(V::BoolValue(true)),
                AnyValue::default(),
            ],
        };
        assert_eq!(any_value(Some(&value(V::DoubleValue(0.5)))), serde_json::json!(0.5));
        assert_eq!(any_value(Some(&value(V::DoubleValue(f64::NAN)))), Json::Null);
        assert_eq!(
            any_value(Some(&value(V::BytesValue(vec![1, 0xfe])))),
            serde_json::json!("01fe")
        );
        assert_eq!(
            any_value(Some(&value(V::KvlistValue(nested)))),
            serde_json::json!({"k": -3})
        );
        assert_eq!(
            any_value(Some(&value(V::ArrayValue(array)))),
            serde_json::json!(["a", true, null])
        );
        assert_eq!(any_value(None), Json::Null);
    }

    #[test]
    fn status_codes_map_and_unknown_is_unset() {
        use opentelemetry_proto::tonic::trace::v1::Status;
        let of = |code, message: &str| {
            trace_status(Some(&Status {
                code,
                message: message.into(),
            }))
        };
        assert_eq!(of(2, "boom").status_code, StatusCode::Error);
        assert_eq!(of(2, "boom").description.as_deref(), Some("boom"));
        assert_eq!(of(1, "").status_code, StatusCode::Ok);
        assert_eq!(of(1, "").description, None);
        assert_eq!(of(42, "").status_code, StatusCode::Unset);
        assert_eq!(trace_status(None), TraceStatus::default());
    }
}
