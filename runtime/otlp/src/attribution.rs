//! Which rollout, attempt and sequence id a span belongs to, from Agent-lightning's semantic
//! conventions (`LightningResourceAttributes` in agentlightning/semconv.py, 0.3.0):
//! `agentlightning.rollout_id`, `agentlightning.attempt_id`, `agentlightning.span_sequence_id`.
//!
//! As 0.3.0's `spans_from_proto`: each of the three is read from the span's attributes, else from
//! its resource's (a `null` value counts as absent); ids are stringified, the sequence id is an
//! integer or a decimal string, and a negative or unreadable one is allocated instead. A span
//! without a rollout or attempt id is dropped. Unlike 0.3.0, an empty id counts as absent (0.3.0
//! keeps it, and the unknown rollout `""` then fails the whole batch in the store).

use crate::convert;
use crate::{Decoded, DecodedSpan};
use agl_store::JsonMap;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use serde_json::Value as Json;

pub use agl_store::semconv::{ATTEMPT_ID, ROLLOUT_ID, SPAN_SEQUENCE_ID};

/// The value of `key`, span-level first; `null` is absent.
fn lookup<'a>(key: &str, span: &'a JsonMap, resource: &'a JsonMap) -> Option<&'a Json> {
    let present = |map: &'a JsonMap| map.get(key).filter(|v| !v.is_null());
    present(span).or_else(|| present(resource))
}

/// An id attribute as a string (0.3.0 applies Python's `str()`); empty means absent.
fn id(value: Option<&Json>) -> Option<String> {
    let text = match value? {
        Json::String(s) => s.clone(),
        Json::Bool(true) => "True".to_owned(),
        Json::Bool(false) => "False".to_owned(),
        other => other.to_string(),
    };
    (!text.is_empty()).then_some(text)
}

/// A sequence id attribute: a non-negative integer, or a string holding one (surrounding
/// whitespace allowed, as Python's `int(str(v))`); anything else means "allocate one".
pub fn sequence_id(value: Option<&Json>) -> Option<u64> {
    match value? {
        Json::Number(n) => n.as_u64(),
        Json::String(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    }
}

/// Attributes and converts every span of a request, in request order.
pub fn spans_from_request(request: &ExportTraceServiceRequest) -> Decoded {
    let mut decoded = Decoded::default();
    for resource_spans in &request.resource_spans {
        let resource = convert::resource(resource_spans.resource.as_ref(), &resource_spans.schema_url);
        for scope_spans in &resource_spans.scope_spans {
            for proto in &scope_spans.spans {
                let attrs = convert::attributes(&proto.attributes);
                let rollout_id = id(lookup(ROLLOUT_ID, &attrs, &resource.attributes));
                let attempt_id = id(lookup(ATTEMPT_ID, &attrs, &resource.attributes));
                let (Some(rollout_id), Some(attempt_id)) = (rollout_id, attempt_id) else {
                    decoded.dropped += 1;
                    continue;
                };
                let sequence_id = sequence_id(lookup(SPAN_SEQUENCE_ID, &attrs, &resource.attributes));
                let span = convert::span(
                    proto,
                    attrs,
                    &resource,
                    rollout_id,
                    attempt_id,
                    sequence_id.unwrap_or_default(),
                );
                decoded.spans.push(DecodedSpan { span, sequence_id });
            }
        }
    }
    decoded
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sequence_ids_read_like_python_int_of_str() {
        assert_eq!(sequence_id(Some(&json!(7))), Some(7));
        assert_eq!(sequence_id(Some(&json!("12"))), Some(12));
        assert_eq!(sequence_id(Some(&json!(" 3 "))), Some(3));
        assert_eq!(
            sequence_id(Some(&json!(0))),
            Some(0),
            "0.3.0 keeps 0: only a negative id is re-issued"
        );
        assert_eq!(sequence_id(Some(&json!(-1))), None);
        assert_eq!(sequence_id(Some(&json!("-5"))), None);
        assert_eq!(sequence_id(Some(&json!(2.0))), None, "str(2.0) is not an int");
        assert_eq!(sequence_id(Some(&json!("x"))), None);
        assert_eq!(sequence_id(Some(&json!(true))), None);
        assert_eq!(sequence_id(None), None);
    }

    #[test]
    fn ids_are_stringified_and_empty_is_absent() {
        assert_eq!(id(Some(&json!("ro-1"))).as_deref(), Some("ro-1"));
        assert_eq!(id(Some(&json!(42))).as_deref(), Some("42"));
        assert_eq!(id(Some(&json!(true))).as_deref(), Some("True"));
        assert_eq!(id(Some(&json!(""))), None);
        assert_eq!(id(None), None);
    }

    #[test]
    fn span_level_wins_and_null_falls_back() {
        let span: JsonMap = json!({ROLLOUT_ID: "ro-span", ATTEMPT_ID: null})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let resource: JsonMap = json!({ROLLOUT_ID: "ro-res", ATTEMPT_ID: "at-res"})
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert_eq!(lookup(ROLLOUT_ID, &span, &resource), Some(&json!("ro-span")));
        assert_eq!(lookup(ATTEMPT_ID, &span, &resource), Some(&json!("at-res")));
        assert_eq!(lookup(SPAN_SEQUENCE_ID, &span, &resource), None);
    }
}
