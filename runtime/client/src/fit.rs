//! A span made to fit one request body. The store server refuses a body over its limit (413), so
//! a span whose JSON is larger than the client's `max_span_bytes` has its largest string
//! attributes clipped — each says how much it lost, and `agl.span.clipped_bytes` the total —
//! until it fits: an oversize span is sent clipped, never lost.

use agl_store::{Span, clip};
use serde_json::Value;

/// The attribute that records how many bytes of text were clipped to make a span fit.
pub const CLIPPED_BYTES: &str = "agl.span.clipped_bytes";
/// Room left for the clip markers and the counter.
const MARGIN: usize = 256;

fn json_size(span: &Span) -> usize {
    serde_json::to_vec(span).map_or(usize::MAX, |bytes| bytes.len())
}

/// `span`, clipped if its JSON is over `max_bytes`.
pub fn fit_span(mut span: Span, max_bytes: usize) -> Span {
    let mut size = json_size(&span);
    let mut clipped: u64 = 0;
    while size > max_bytes {
        let largest = span
            .attributes
            .iter()
            .filter_map(|(key, value)| value.as_str().map(|text| (key.clone(), text.len())))
            .max_by_key(|(_, len)| *len);
        let Some((key, len)) = largest.filter(|(_, len)| *len > MARGIN) else {
            break; // nothing left to clip: the server decides
        };
        // Each raw byte is at least one byte of JSON, so cutting the excess (or half) is enough.
        let keep = len.saturating_sub(size - max_bytes + MARGIN).min(len / 2);
        if let Some(Value::String(text)) = span.attributes.get_mut(&key) {
            let cut = clip(text, keep);
            clipped += (text.len() - keep) as u64;
            *text = cut;
        }
        size = json_size(&span);
    }
    if clipped > 0 {
        span.attributes.insert(CLIPPED_BYTES.to_owned(), Value::from(clipped));
    }
    span
}

#[cfg(test)]
mod tests {
    use super::*;
    use agl_store::JsonMap;

    fn span_with(attributes: JsonMap) -> Span {
        let mut span: Span = serde_json::from_value(serde_json::json!({
            "rollout_id": "ro-1", "attempt_id": "at-1", "sequence_id": 1,
            "trace_id": "0".repeat(32), "span_id": "0".repeat(16), "parent_id": null,
            "name": "agl.log", "status": {"status_code": "UNSET"},
            "attributes": {}, "events": [], "links": [],
            "resource": {"attributes": {}, "schema_url": ""}
        }))
        .expect("a span");
        span.attributes = attributes;
        span
    }

    #[test]
    fn a_small_span_is_untouched() {
        let mut attributes = JsonMap::new();
        attributes.insert("agl.log.message".into(), Value::from("hello"));
        let span = span_with(attributes.clone());
        assert_eq!(fit_span(span, 1 << 20).attributes, attributes);
    }

    #[test]
    fn an_oversize_span_is_clipped_largest_first_and_says_so() {
        let mut attributes = JsonMap::new();
        attributes.insert("big".into(), Value::from("b".repeat(300_000)));
        attributes.insert("medium".into(), Value::from("m".repeat(50_000)));
        attributes.insert("small".into(), Value::from("s".repeat(100)));
        // Control characters take six bytes of JSON each: the size is measured as sent.
        attributes.insert("escaped".into(), Value::from("\u{1}".repeat(20_000)));
        let span = fit_span(span_with(attributes), 100_000);
        assert!(json_size(&span) <= 100_000, "{}", json_size(&span));
        assert_eq!(span.attributes["small"], "s".repeat(100));
        assert!(
            span.attributes["big"]
                .as_str()
                .is_some_and(|t| t.contains("more bytes]"))
        );
        assert!(span.attributes[CLIPPED_BYTES].as_u64().is_some_and(|n| n > 200_000));
    }
}
