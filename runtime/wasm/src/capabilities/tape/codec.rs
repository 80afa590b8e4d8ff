//! How a tape is kept compactly: every long string in it (a prompt, a task, an LLM answer, a
//! resource) becomes the address of a text blob, so that a text a thousand attempts saw is stored
//! once. [`pack`] turns a JSON value into its packed form and the blobs it refers to; [`unpack`]
//! reverses it, reading only the blobs handed to it (an attempt's own record).
//!
//! The encoding is unambiguous whatever the strings hold: a blob reference is a string starting
//! with `\u{1}#`; any other string starting with `\u{1}` gets one more `\u{1}` in front.

use agl_store::blob_address;
use serde_json::Value;
use std::collections::BTreeMap;
use thiserror::Error;

/// Strings at least this long are kept as blobs.
pub const BLOB_MIN_BYTES: usize = 128;

const ESCAPE: char = '\u{1}';
const REFERENCE: &str = "\u{1}#";

/// A packed tape refers to a blob that is not in its record.
#[derive(Debug, Error, PartialEq)]
#[error("the tape refers to blob {0}, which its record does not hold")]
pub struct MissingBlob(pub String);

/// `value` with every string of [`BLOB_MIN_BYTES`] or more replaced by its blob's address; the
/// blobs are added to `blobs`.
pub fn pack(value: Value, blobs: &mut BTreeMap<String, String>) -> Value {
    match value {
        Value::String(text) => Value::String(pack_text(text, blobs)),
        Value::Array(items) => Value::Array(items.into_iter().map(|item| pack(item, blobs)).collect()),
        Value::Object(fields) => Value::Object(fields.into_iter().map(|(k, v)| (k, pack(v, blobs))).collect()),
        other => other,
    }
}

/// Whether [`pack`] changes `text` (a blob, or an escape).
pub fn is_packable(text: &str) -> bool {
    text.len() >= BLOB_MIN_BYTES || text.starts_with(ESCAPE)
}

/// Whether [`pack`] changes some string of `value`.
pub fn any_packable(value: &Value) -> bool {
    match value {
        Value::String(text) => is_packable(text),
        Value::Array(items) => items.iter().any(any_packable),
        Value::Object(fields) => fields.values().any(any_packable),
        _ => false,
    }
}

fn pack_text(text: String, blobs: &mut BTreeMap<String, String>) -> String {
    if text.len() >= BLOB_MIN_BYTES {
        let address = blob_address(&text);
        let reference = format!("{REFERENCE}{address}");
        blobs.entry(address).or_insert(text);
        reference
    } else if text.starts_with(ESCAPE) {
        format!("{ESCAPE}{text}")
    } else {
        text
    }
}

/// The value [`pack`] was given, its blobs read from `blobs`.
pub fn unpack(value: Value, blobs: &BTreeMap<String, String>) -> Result<Value, MissingBlob> {
    Ok(match value {
        Value::String(text) => Value::String(unpack_text(text, blobs)?),
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|item| unpack(item, blobs))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(fields) => Value::Object(
            fields
                .into_iter()
                .map(|(k, v)| Ok((k, unpack(v, blobs)?)))
                .collect::<Result<_, MissingBlob>>()?,
        ),
        other => other,
    })
}

fn unpack_text(text: String, blobs: &BTreeMap<String, String>) -> Result<String, MissingBlob> {
    if let Some(address) = text.strip_prefix(REFERENCE) {
        return blobs
            .get(address)
            .cloned()
            .ok_or_else(|| MissingBlob(address.to_owned()));
    }
    match text.strip_prefix(ESCAPE) {
        Some(rest) => Ok(rest.to_owned()),
        None => Ok(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn long_strings_become_blobs_stored_once_and_come_back() {
        let long = "x".repeat(BLOB_MIN_BYTES);
        let value = json!({"a": long, "b": [long, "short", 3, null], "c": {"d": long}});
        let mut blobs = BTreeMap::new();
        let packed = pack(value.clone(), &mut blobs);
        assert_eq!(blobs.len(), 1);
        assert!(!packed.to_string().contains(&long));
        assert_eq!(unpack(packed, &blobs), Ok(value));
    }

    #[test]
    fn strings_that_look_like_references_survive() {
        let address = blob_address(&"y".repeat(BLOB_MIN_BYTES));
        let tricky = [
            format!("{REFERENCE}{address}"),
            format!("{ESCAPE}"),
            format!("{ESCAPE}{ESCAPE}#"),
            "#plain".to_owned(),
        ];
        for text in tricky {
            let mut blobs = BTreeMap::new();
            let packed = pack(Value::String(text.clone()), &mut blobs);
            assert_eq!(unpack(packed, &blobs), Ok(Value::String(text)));
        }
    }

    #[test]
    fn a_reference_outside_the_record_is_an_error() {
        let reference = Value::String(format!("{REFERENCE}{}", "0".repeat(64)));
        assert!(unpack(reference, &BTreeMap::new()).is_err());
    }
}
