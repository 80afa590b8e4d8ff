//! Span: Agent-lightning's canonical OpenTelemetry span record. Unknown keys are kept and echoed
//! (decoded without serde's `flatten`: see [`super::keep_extra`]).

use super::JsonMap;
use super::keep_extra::deserialize_keeping_extra;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::sync::OnceLock;

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

#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct TraceStatus {
    pub status_code: StatusCode,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(flatten)]
    pub extra: JsonMap,
}

deserialize_keeping_extra!(TraceStatus {
    required: [status_code],
    defaulted: [description],
});

#[derive(Debug, Clone, PartialEq, Serialize)]
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

deserialize_keeping_extra!(SpanContext {
    required: [trace_id, span_id],
    defaulted: [is_remote, trace_state],
});

impl SpanContext {
    /// A local (not remote) context with no trace state.
    pub fn new(trace_id: impl Into<String>, span_id: impl Into<String>) -> Self {
        Self {
            trace_id: trace_id.into(),
            span_id: span_id.into(),
            is_remote: false,
            trace_state: Default::default(),
            extra: JsonMap::new(),
        }
    }
}

/// Lower-case hex of id bytes, left-padded with `0` to `width` digits (all zeros when empty):
/// how trace ids (32 digits) and span ids (16) are written in a span.
pub fn hex_id(bytes: &[u8], width: usize) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let digits = bytes.len() * 2;
    // Built as bytes (every span's ids go through here; pushing chars checked each one).
    let mut out = Vec::with_capacity(digits.max(width));
    out.resize(width.saturating_sub(digits), b'0');
    for byte in bytes {
        out.extend_from_slice(&[DIGITS[usize::from(byte >> 4)], DIGITS[usize::from(byte & 0xf)]]);
    }
    String::from_utf8(out).unwrap_or_default() // ASCII digits only: always valid
}

/// A float as a JSON number; NaN and the infinities, which JSON lacks, as `null`.
pub fn json_number(x: f64) -> serde_json::Value {
    serde_json::Number::from_f64(x).map_or(serde_json::Value::Null, serde_json::Value::Number)
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    pub name: String,
    #[serde(default)]
    pub attributes: JsonMap,
    #[serde(default)]
    pub timestamp: Option<f64>,
    #[serde(flatten)]
    pub extra: JsonMap,
}

deserialize_keeping_extra!(Event {
    required: [name],
    defaulted: [attributes, timestamp],
});

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Link {
    pub context: SpanContext,
    #[serde(default)]
    pub attributes: Option<JsonMap>,
    #[serde(flatten)]
    pub extra: JsonMap,
}

deserialize_keeping_extra!(Link {
    required: [context],
    defaulted: [attributes],
});

/// The OpenTelemetry resource a span came from (not to be confused with tunable resources).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct OtelResource {
    #[serde(default)]
    pub attributes: JsonMap,
    #[serde(default)]
    pub schema_url: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
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
    /// This span's JSON, made on the first [`Span::encoded_json`] call and kept (not part of
    /// the span's value: clones start without it, equality ignores it).
    #[serde(skip)]
    pub encoded: EncodedJson,
}

deserialize_keeping_extra!(Span {
    required: [rollout_id, attempt_id, sequence_id, trace_id, span_id, name],
    defaulted: [
        parent_id, status, attributes, events, links, start_time, end_time, context, parent, resource
    ],
    skipped: [encoded],
});

/// A span's JSON encoding, made once: a span a store hands out is shared (`Arc<Span>`) and never
/// changes, so a server answering the same spans to many queries encodes each span once.
#[derive(Default)]
pub struct EncodedJson(OnceLock<Box<RawValue>>);

impl Clone for EncodedJson {
    /// Empty: a clone may be changed, so it must not carry its original's encoding.
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl PartialEq for EncodedJson {
    /// Always equal: the encoding is a cache, not part of the span.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for EncodedJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "EncodedJson(made)"
        } else {
            "EncodedJson(not yet)"
        })
    }
}

impl Span {
    /// The span as compact JSON (what serialising it gives), encoded on the first call and kept.
    /// Only for spans that no longer change, such as the `Arc<Span>`s a store returns: a change
    /// made after the first call is not seen by later calls.
    pub fn encoded_json(&self) -> serde_json::Result<&RawValue> {
        if let Some(encoded) = self.encoded.0.get() {
            return Ok(encoded);
        }
        let encoded = serde_json::value::to_raw_value(self)?;
        Ok(self.encoded.0.get_or_init(move || encoded))
    }

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
            encoded: EncodedJson::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_ids_are_lower_case_and_padded_to_their_width() {
        assert_eq!(hex_id(&[0xAB, 0x01], 0), "ab01");
        assert_eq!(hex_id(&[0xAB, 0x01], 8), "0000ab01");
        assert_eq!(hex_id(&[], 16), "0".repeat(16));
        assert_eq!(hex_id(&u128::MAX.to_be_bytes(), 32), "f".repeat(32));
    }

    #[test]
    fn numbers_json_lacks_are_null() {
        assert_eq!(json_number(0.25), serde_json::json!(0.25));
        assert_eq!(json_number(f64::NAN), serde_json::Value::Null);
        assert_eq!(json_number(f64::INFINITY), serde_json::Value::Null);
    }

    #[test]
    fn the_kept_encoding_is_the_serialised_span_and_clones_start_without_it() {
        let mut span = Span::new("ro-1", "at-1", 1, "ab".repeat(16), "cd".repeat(8), "step");
        span.attributes.insert("x".into(), 1.5.into());
        let encoded = span.encoded_json().unwrap().get().to_string();
        assert_eq!(encoded, serde_json::to_string(&span).unwrap());
        assert_eq!(format!("{:?}", span.encoded), "EncodedJson(made)");

        let mut changed = span.clone();
        assert_eq!(format!("{:?}", changed.encoded), "EncodedJson(not yet)");
        assert_eq!(changed, span, "the encoding is not part of the value");
        changed.name = "renamed".into();
        assert!(changed.encoded_json().unwrap().get().contains(r#""name":"renamed""#));
    }

    fn decode(json: &str) -> serde_json::Result<Span> {
        serde_json::from_str(json)
    }

    const MINIMAL: &str =
        r#"{"rollout_id":"ro-1","attempt_id":"at-1","sequence_id":1,"trace_id":"t","span_id":"s","name":"n"}"#;

    #[test]
    fn unknown_keys_are_kept_in_order_at_every_level_and_echoed() {
        let json = concat!(
            r#"{"zeta":1,"rollout_id":"ro-1","attempt_id":"at-1","sequence_id":1,"trace_id":"t","span_id":"s","#,
            r#""name":"n","alpha":{"deep":[1,2]},"status":{"status_code":"ERROR","origin":"sdk"},"#,
            r#""events":[{"name":"e","source":"judge"}],"#,
            r#""links":[{"context":{"trace_id":"t","span_id":"l","remote_host":"h"},"weight":2}],"#,
            r#""context":{"trace_id":"t","span_id":"s","kind":"internal"}}"#
        );
        let span = decode(json).unwrap();
        assert_eq!(span.extra.keys().collect::<Vec<_>>(), ["zeta", "alpha"]);
        assert_eq!(span.extra["alpha"], serde_json::json!({"deep": [1, 2]}));
        assert_eq!(span.status.status_code, StatusCode::Error);
        assert_eq!(span.status.extra["origin"], "sdk");
        assert_eq!(span.events[0].extra["source"], "judge");
        assert_eq!(span.links[0].extra["weight"], 2);
        assert_eq!(span.links[0].context.extra["remote_host"], "h");
        assert_eq!(span.context.as_ref().unwrap().extra["kind"], "internal");
        // Echoed: what is encoded decodes to the same span, unknown keys included.
        assert_eq!(decode(&serde_json::to_string(&span).unwrap()).unwrap(), span);
    }

    #[test]
    fn missing_keys_take_their_defaults_and_required_ones_are_named() {
        let span = decode(MINIMAL).unwrap();
        assert_eq!(span, Span::new("ro-1", "at-1", 1, "t", "s", "n"));
        let without_name = MINIMAL.replace(r#","name":"n""#, "");
        let error = decode(&without_name).unwrap_err().to_string();
        assert!(error.contains("missing field `name`"), "{error}");
        let error = serde_json::from_str::<TraceStatus>("{}").unwrap_err().to_string();
        assert!(error.contains("missing field `status_code`"), "{error}");
    }

    #[test]
    fn duplicate_fields_mistyped_values_and_non_objects_are_refused() {
        let duplicate = MINIMAL.replace(r#""name":"n""#, r#""name":"n","name":"m""#);
        assert!(
            decode(&duplicate)
                .unwrap_err()
                .to_string()
                .contains("duplicate field `name`")
        );
        let mistyped = MINIMAL.replace(r#""sequence_id":1"#, r#""sequence_id":"one""#);
        assert!(decode(&mistyped).unwrap_err().to_string().contains("invalid type"));
        let null_events = MINIMAL.replace(r#""name":"n""#, r#""name":"n","events":null"#);
        assert!(decode(&null_events).is_err(), "events must be a list when present");
        let error = decode(r#"["ro-1"]"#).unwrap_err().to_string();
        assert!(error.contains("expected struct Span"), "{error}");
    }

    #[test]
    fn escaped_keys_name_their_fields_and_values_decode_from_a_json_value() {
        let escaped = MINIMAL.replace(r#""name":"n""#, r#""na\u006de":"n","x\ty":true"#);
        let span = decode(&escaped).unwrap();
        assert_eq!(span.name, "n");
        assert_eq!(span.extra["x\ty"], true);
        let value: serde_json::Value = serde_json::from_str(MINIMAL).unwrap();
        assert_eq!(serde_json::from_value::<Span>(value).unwrap(), decode(MINIMAL).unwrap());
    }
}
