//! OTLP/JSON → the protobuf `ExportTraceServiceRequest`.
//!
//! OTLP/JSON is the protobuf JSON mapping with OTLP's own rules: trace and span ids are
//! case-insensitive hex (not base64), keys are lowerCamelCase, 64-bit integers may be strings,
//! enums are integers, unknown keys are ignored. `opentelemetry-proto`'s `with-serde` support
//! does not accept all of it (an empty `arrayValue`/`kvlistValue` object, `null` fields, an int32
//! or uint32 as a string, `"NaN"` doubles in attributes), so the mapping is decoded here into
//! mirror structs and then moved into the prost types. Lenient where protobuf JSON parsers are:
//! `null` means the default, snake_case keys are accepted too, and enums may also be given by name.

use crate::error::OtlpError;
use base64::Engine;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    AnyValue, ArrayValue, InstrumentationScope, KeyValue, KeyValueList, any_value,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status, span, status};
use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use std::fmt;
use std::marker::PhantomData;
use std::str::FromStr;

/// Decodes an OTLP/JSON `ExportTraceServiceRequest`.
pub fn decode(body: &[u8]) -> Result<ExportTraceServiceRequest, OtlpError> {
    let request: RequestJson = serde_json::from_slice(body)
        .map_err(|e| OtlpError::Decode(format!("Unable to parse OTLP traces payload (OTLP/JSON): {e}")))?;
    Ok(request.into_proto())
}

// --- Scalars -----------------------------------------------------------------------------------

/// An integer given as a JSON number or a decimal string (int64/fixed64 are strings in OTLP/JSON).
#[derive(Debug, Default)]
struct Int<T>(T);

impl<'de, T> Deserialize<'de> for Int<T>
where
    T: TryFrom<u64> + TryFrom<i64> + FromStr,
{
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IntVisitor<T>(PhantomData<T>);
        impl<T> Visitor<'_> for IntVisitor<T>
        where
            T: TryFrom<u64> + TryFrom<i64> + FromStr,
        {
            type Value = T;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an integer or a string holding one")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
                T::try_from(v).map_err(|_| E::custom(format!("integer {v} out of range")))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
                T::try_from(v).map_err(|_| E::custom(format!("integer {v} out of range")))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
                // `1e3` is a valid integer in protobuf JSON when it has no fraction.
                if v.fract() == 0.0 && v.abs() < 9.007_199_254_740_992e15 {
                    self.visit_i64(v as i64)
                } else {
                    Err(E::custom(format!("{v} is not an integer")))
                }
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
                v.trim()
                    .parse()
                    .map_err(|_| E::custom(format!("'{v}' is not an integer")))
            }
        }
        deserializer.deserialize_any(IntVisitor(PhantomData)).map(Int)
    }
}

/// A double: a JSON number, or `"NaN"`, `"Infinity"`, `"-Infinity"` (or a numeric string).
#[derive(Debug, Default)]
struct Double(f64);

impl<'de> Deserialize<'de> for Double {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct DoubleVisitor;
        impl Visitor<'_> for DoubleVisitor {
            type Value = f64;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number, \"NaN\", \"Infinity\" or \"-Infinity\"")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
                Ok(v)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
                Ok(v as f64)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
                Ok(v as f64)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<f64, E> {
                match v {
                    "NaN" => Ok(f64::NAN),
                    "Infinity" => Ok(f64::INFINITY),
                    "-Infinity" => Ok(f64::NEG_INFINITY),
                    other => other
                        .trim()
                        .parse()
                        .map_err(|_| E::custom(format!("'{v}' is not a number"))),
                }
            }
        }
        deserializer.deserialize_any(DoubleVisitor).map(Double)
    }
}

/// A trace or span id: a case-insensitive hex string (OTLP/JSON's exception to base64 bytes).
#[derive(Debug, Default)]
struct HexId(Vec<u8>);

impl<'de> Deserialize<'de> for HexId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        hex_decode(&text)
            .map(HexId)
            .ok_or_else(|| de::Error::custom(format!("'{text}' is not a hex-encoded id")))
    }
}

fn hex_decode(text: &str) -> Option<Vec<u8>> {
    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(2) {
        return None;
    }
    bytes
        .chunks_exact(2)
        .map(|pair| Some(nibble(pair[0])? << 4 | nibble(pair[1])?))
        .collect()
}

/// A `bytesValue`: base64, standard or URL-safe alphabet, padding optional.
#[derive(Debug, Default)]
struct Base64(Vec<u8>);

impl<'de> Deserialize<'de> for Base64 {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use base64::engine::general_purpose::{STANDARD_PAD_INDIFFERENT, URL_SAFE_PAD_INDIFFERENT};
        let text = String::deserialize(deserializer)?;
        STANDARD_PAD_INDIFFERENT
            .decode(&text)
            .or_else(|_| URL_SAFE_PAD_INDIFFERENT.decode(&text))
            .map(Base64)
            .map_err(|e| de::Error::custom(format!("bytesValue is not base64: {e}")))
    }
}

/// An enum: its integer (what OTLP/JSON requires) or its protobuf name; an unknown name is 0.
#[derive(Debug, Default)]
struct Enum<E>(i32, PhantomData<E>);

/// Looks an enum value up by its protobuf name.
trait ByName {
    fn by_name(name: &str) -> Option<i32>;
}

impl ByName for span::SpanKind {
    fn by_name(name: &str) -> Option<i32> {
        Self::from_str_name(name).map(|kind| kind as i32)
    }
}

impl ByName for status::StatusCode {
    fn by_name(name: &str) -> Option<i32> {
        Self::from_str_name(name).map(|code| code as i32)
    }
}

impl<'de, E: ByName> Deserialize<'de> for Enum<E> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(Int<i32>),
            Name(String),
        }
        let value = match Raw::deserialize(deserializer)? {
            Raw::Number(Int(n)) => n,
            Raw::Name(name) => E::by_name(&name).unwrap_or_default(),
        };
        Ok(Enum(value, PhantomData))
    }
}

fn int<T: Default>(value: Option<Int<T>>) -> T {
    value.map(|Int(v)| v).unwrap_or_default()
}

fn list<J, P>(values: Option<Vec<J>>, into: impl Fn(J) -> P) -> Vec<P> {
    values.unwrap_or_default().into_iter().map(into).collect()
}

// --- Messages: every field optional, so that a missing key and `null` both mean the default ------

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RequestJson {
    #[serde(alias = "resource_spans")]
    resource_spans: Option<Vec<ResourceSpansJson>>,
}

impl RequestJson {
    fn into_proto(self) -> ExportTraceServiceRequest {
        ExportTraceServiceRequest {
            resource_spans: list(self.resource_spans, ResourceSpansJson::into_proto),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ResourceSpansJson {
    resource: Option<ResourceJson>,
    #[serde(alias = "scope_spans")]
    scope_spans: Option<Vec<ScopeSpansJson>>,
    #[serde(alias = "schema_url")]
    schema_url: Option<String>,
}

impl ResourceSpansJson {
    fn into_proto(self) -> ResourceSpans {
        ResourceSpans {
            resource: self.resource.map(ResourceJson::into_proto),
            scope_spans: list(self.scope_spans, ScopeSpansJson::into_proto),
            schema_url: self.schema_url.unwrap_or_default(),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ResourceJson {
    attributes: Option<Vec<KeyValueJson>>,
    #[serde(alias = "dropped_attributes_count")]
    dropped_attributes_count: Option<Int<u32>>,
}

impl ResourceJson {
    fn into_proto(self) -> Resource {
        Resource {
            attributes: list(self.attributes, KeyValueJson::into_proto),
            dropped_attributes_count: int(self.dropped_attributes_count),
            entity_refs: Vec::new(),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ScopeSpansJson {
    scope: Option<ScopeJson>,
    spans: Option<Vec<SpanJson>>,
    #[serde(alias = "schema_url")]
    schema_url: Option<String>,
}

impl ScopeSpansJson {
    fn into_proto(self) -> ScopeSpans {
        ScopeSpans {
            scope: self.scope.map(ScopeJson::into_proto),
            spans: list(self.spans, SpanJson::into_proto),
            schema_url: self.schema_url.unwrap_or_default(),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ScopeJson {
    name: Option<String>,
    version: Option<String>,
    attributes: Option<Vec<KeyValueJson>>,
    #[serde(alias = "dropped_attributes_count")]
    dropped_attributes_count: Option<Int<u32>>,
}

impl ScopeJson {
    fn into_proto(self) -> InstrumentationScope {
        InstrumentationScope {
            name: self.name.unwrap_or_default(),
            version: self.version.unwrap_or_default(),
            attributes: list(self.attributes, KeyValueJson::into_proto),
            dropped_attributes_count: int(self.dropped_attributes_count),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct SpanJson {
    #[serde(alias = "trace_id")]
    trace_id: Option<HexId>,
    #[serde(alias = "span_id")]
    span_id: Option<HexId>,
    #[serde(alias = "trace_state")]
    trace_state: Option<String>,
    #[serde(alias = "parent_span_id")]
    parent_span_id: Option<HexId>,
    flags: Option<Int<u32>>,
    name: Option<String>,
    kind: Option<Enum<span::SpanKind>>,
    #[serde(alias = "start_time_unix_nano")]
    start_time_unix_nano: Option<Int<u64>>,
    #[serde(alias = "end_time_unix_nano")]
    end_time_unix_nano: Option<Int<u64>>,
    attributes: Option<Vec<KeyValueJson>>,
    #[serde(alias = "dropped_attributes_count")]
    dropped_attributes_count: Option<Int<u32>>,
    events: Option<Vec<EventJson>>,
    #[serde(alias = "dropped_events_count")]
    dropped_events_count: Option<Int<u32>>,
    links: Option<Vec<LinkJson>>,
    #[serde(alias = "dropped_links_count")]
    dropped_links_count: Option<Int<u32>>,
    status: Option<StatusJson>,
}

impl SpanJson {
    fn into_proto(self) -> Span {
        Span {
            trace_id: self.trace_id.unwrap_or_default().0,
            span_id: self.span_id.unwrap_or_default().0,
            trace_state: self.trace_state.unwrap_or_default(),
            parent_span_id: self.parent_span_id.unwrap_or_default().0,
            flags: int(self.flags),
            name: self.name.unwrap_or_default(),
            kind: self.kind.map(|kind| kind.0).unwrap_or_default(),
            start_time_unix_nano: int(self.start_time_unix_nano),
            end_time_unix_nano: int(self.end_time_unix_nano),
            attributes: list(self.attributes, KeyValueJson::into_proto),
            dropped_attributes_count: int(self.dropped_attributes_count),
            events: list(self.events, EventJson::into_proto),
            dropped_events_count: int(self.dropped_events_count),
            links: list(self.links, LinkJson::into_proto),
            dropped_links_count: int(self.dropped_links_count),
            status: self.status.map(StatusJson::into_proto),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct EventJson {
    #[serde(alias = "time_unix_nano")]
    time_unix_nano: Option<Int<u64>>,
    name: Option<String>,
    attributes: Option<Vec<KeyValueJson>>,
    #[serde(alias = "dropped_attributes_count")]
    dropped_attributes_count: Option<Int<u32>>,
}

impl EventJson {
    fn into_proto(self) -> span::Event {
        span::Event {
            time_unix_nano: int(self.time_unix_nano),
            name: self.name.unwrap_or_default(),
            attributes: list(self.attributes, KeyValueJson::into_proto),
            dropped_attributes_count: int(self.dropped_attributes_count),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct LinkJson {
    #[serde(alias = "trace_id")]
    trace_id: Option<HexId>,
    #[serde(alias = "span_id")]
    span_id: Option<HexId>,
    #[serde(alias = "trace_state")]
    trace_state: Option<String>,
    attributes: Option<Vec<KeyValueJson>>,
    #[serde(alias = "dropped_attributes_count")]
    dropped_attributes_count: Option<Int<u32>>,
    flags: Option<Int<u32>>,
}

impl LinkJson {
    fn into_proto(self) -> span::Link {
        span::Link {
            trace_id: self.trace_id.unwrap_or_default().0,
            span_id: self.span_id.unwrap_or_default().0,
            trace_state: self.trace_state.unwrap_or_default(),
            attributes: list(self.attributes, KeyValueJson::into_proto),
            dropped_attributes_count: int(self.dropped_attributes_count),
            flags: int(self.flags),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct StatusJson {
    message: Option<String>,
    code: Option<Enum<status::StatusCode>>,
}

impl StatusJson {
    fn into_proto(self) -> Status {
        Status {
            message: self.message.unwrap_or_default(),
            code: self.code.map(|code| code.0).unwrap_or_default(),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct KeyValueJson {
    key: Option<String>,
    value: Option<AnyValueJson>,
}

impl KeyValueJson {
    fn into_proto(self) -> KeyValue {
        KeyValue {
            key: self.key.unwrap_or_default(),
            value: self.value.map(AnyValueJson::into_proto),
            key_strindex: 0,
        }
    }
}

/// `AnyValue`: at most one key is set; an object with none (or only unknown keys) is empty.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct AnyValueJson {
    #[serde(alias = "string_value")]
    string_value: Option<String>,
    #[serde(alias = "bool_value")]
    bool_value: Option<bool>,
    #[serde(alias = "int_value")]
    int_value: Option<Int<i64>>,
    #[serde(alias = "double_value")]
    double_value: Option<Double>,
    #[serde(alias = "array_value")]
    array_value: Option<ValuesJson<AnyValueJson>>,
    #[serde(alias = "kvlist_value")]
    kvlist_value: Option<ValuesJson<KeyValueJson>>,
    #[serde(alias = "bytes_value")]
    bytes_value: Option<Base64>,
}

/// `ArrayValue` / `KeyValueList`: `{"values": [...]}`, where `{}` is empty.
#[derive(Deserialize)]
#[serde(default)]
struct ValuesJson<T> {
    values: Option<Vec<T>>,
}

impl<T> Default for ValuesJson<T> {
    fn default() -> Self {
        Self { values: None }
    }
}

impl AnyValueJson {
    fn into_proto(self) -> AnyValue {
        use any_value::Value;
        let value = if let Some(s) = self.string_value {
            Some(Value::StringValue(s))
        } else if let Some(b) = self.bool_value {
            Some(Value::BoolValue(b))
        } else if let Some(Int(i)) = self.int_value {
            Some(Value::IntValue(i))
        } else if let Some(Double(d)) = self.double_value {
            Some(Value::DoubleValue(d))
        } else if let Some(array) = self.array_value {
            Some(Value::ArrayValue(ArrayValue {
                values: list(array.values, AnyValueJson::into_proto),
            }))
        } else if let Some(kvlist) = self.kvlist_value {
            Some(Value::KvlistValue(KeyValueList {
                values: list(kvlist.values, KeyValueJson::into_proto),
            }))
        } else {
            self.bytes_value.map(|Base64(bytes)| Value::BytesValue(bytes))
        };
        AnyValue { value }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse<T: for<'de> Deserialize<'de>>(text: &str) -> Result<T, serde_json::Error> {
        serde_json::from_str(text)
    }

    #[test]
    fn hex_ids_are_case_insensitive_and_must_be_whole_bytes() {
        assert_eq!(hex_decode("0aFf"), Some(vec![0x0a, 0xff]));
        assert_eq!(hex_decode(""), Some(vec![]));
        assert_eq!(hex_decode("abc"), None);
        assert_eq!(hex_decode("zz"), None);
        assert!(parse::<HexId>("\"not hex\"").is_err());
    }

    #[test]
    fn integers_come_as_numbers_or_strings() {
        assert_eq!(
            parse::<Int<u64>>("\"18446744073709551615\"").map(|i| i.0).ok(),
            Some(u64::MAX)
        );
        assert_eq!(parse::<Int<u64>>("12").map(|i| i.0).ok(), Some(12));
        assert_eq!(parse::<Int<i64>>("\"-7\"").map(|i| i.0).ok(), Some(-7));
        assert_eq!(parse::<Int<u32>>("1e3").map(|i| i.0).ok(), Some(1000));
        assert!(parse::<Int<u32>>("-1").is_err());
        assert!(parse::<Int<u32>>("1.5").is_err());
    }

    #[test]
    fn doubles_take_the_special_strings() {
        assert!(parse::<Double>("\"NaN\"").is_ok_and(|d| d.0.is_nan()));
        assert_eq!(
            parse::<Double>("\"-Infinity\"").map(|d| d.0).ok(),
            Some(f64::NEG_INFINITY)
        );
        assert_eq!(parse::<Double>("2").map(|d| d.0).ok(), Some(2.0));
    }

    #[test]
    fn enums_are_integers_or_names() {
        assert_eq!(parse::<Enum<span::SpanKind>>("3").map(|e| e.0).ok(), Some(3));
        assert_eq!(
            parse::<Enum<span::SpanKind>>("\"SPAN_KIND_SERVER\"").map(|e| e.0).ok(),
            Some(2)
        );
        assert_eq!(
            parse::<Enum<status::StatusCode>>("\"STATUS_CODE_ERROR\"")
                .map(|e| e.0)
                .ok(),
            Some(2)
        );
        assert_eq!(
            parse::<Enum<status::StatusCode>>("\"BOGUS\"").map(|e| e.0).ok(),
            Some(0)
        );
    }

    #[test]
    fn any_value_objects_may_be_empty() {
        use any_value::Value;
        let of = |text: &str| parse::<AnyValueJson>(text).map(|v| v.into_proto().value);
        assert_eq!(of("{}").ok(), Some(None));
        assert_eq!(
            of("{\"arrayValue\": {}}").ok(),
            Some(Some(Value::ArrayValue(ArrayValue::default())))
        );
        assert_eq!(
            of("{\"kvlistValue\": {\"values\": null}}").ok(),
            Some(Some(Value::KvlistValue(KeyValueList::default())))
        );
        assert_eq!(
            of("{\"bytesValue\": \"AQI=\"}").ok(),
            Some(Some(Value::BytesValue(vec![1, 2])))
        );
        assert_eq!(
            of("{\"bytesValue\": \"_-8\"}").ok(),
            Some(Some(Value::BytesValue(vec![0xff, 0xef])))
        );
        assert_eq!(of("{\"intValue\": \"5\"}").ok(), Some(Some(Value::IntValue(5))));
        assert_eq!(of("{\"somethingNew\": 1}").ok(), Some(None), "unknown keys are ignored");
    }
}
