//! Query strings of the GET query routes, read as FastAPI reads them: a list parameter repeats
//! its key (`status_in=queuing&status_in=running`), a scalar takes its last value, integers must
//! parse, unknown keys are ignored. The result is deserialized into the store's query types.

use crate::error::ApiError;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// Which parameters of one route are lists and which are integers; the rest are strings.
pub(crate) struct QuerySpec {
    pub lists: &'static [&'static str],
    pub integers: &'static [&'static str],
}

/// Parses `raw` (the part after `?`, if any) into `T` following `spec`; a bad value is a 422.
pub(crate) fn parse<T: DeserializeOwned>(raw: Option<&str>, spec: &QuerySpec) -> Result<T, ApiError> {
    let mut object = Map::new();
    for (key, value) in pairs(raw.unwrap_or("")) {
        if spec.lists.contains(&key.as_str()) {
            let entry = object.entry(key).or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(items) = entry {
                items.push(Value::String(value));
            }
        } else if spec.integers.contains(&key.as_str()) {
            let number: i64 = value.trim().parse().map_err(|_| {
                ApiError::unprocessable(format!("query parameter `{key}` must be an integer, got `{value}`"))
            })?;
            object.insert(key, Value::from(number));
        } else {
            object.insert(key, Value::String(value));
        }
    }
    serde_json::from_value(Value::Object(object))
        .map_err(|error| ApiError::unprocessable(format!("invalid query string: {error}")))
}

/// The decoded `key=value` pairs, in order; a key without `=` has an empty value.
fn pairs(raw: &str) -> impl Iterator<Item = (String, String)> + '_ {
    raw.split('&').filter(|part| !part.is_empty()).map(|part| {
        let (key, value) = part.split_once('=').unwrap_or((part, ""));
        (decode(key), decode(value))
    })
}

/// `application/x-www-form-urlencoded` decoding: `+` is a space, `%XX` a byte; a malformed
/// escape is kept as written, and bytes that are not UTF-8 become U+FFFD.
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => match (digit_at(bytes, i + 1), digit_at(bytes, i + 2)) {
                (Some(high), Some(low)) => {
                    out.push(high << 4 | low);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The value of the hex digit at `index`, if there is one.
fn digit_at(bytes: &[u8], index: usize) -> Option<u8> {
    let byte = *bytes.get(index)?;
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agl_store::{RolloutQuery, RolloutStatus, SortOrder};

    const ROLLOUTS: QuerySpec = QuerySpec {
        lists: &["status_in", "rollout_id_in"],
        integers: &["limit", "offset"],
    };

    #[test]
    fn decodes_escapes_plus_and_malformed_escapes() {
        assert_eq!(decode("a+b%20c%2Fd"), "a b c/d");
        assert_eq!(decode("100%"), "100%");
        assert_eq!(decode("%zz%4"), "%zz%4");
        assert_eq!(decode("%e2%9c%93"), "✓");
        assert_eq!(decode("%ff"), "\u{fffd}");
    }

    #[test]
    fn lists_repeat_scalars_take_the_last_value_unknown_keys_are_ignored() {
        let query: RolloutQuery = parse(
            Some("status_in=queuing&status_in=running&limit=1&limit=5&sort_order=desc&other=x&flag"),
            &ROLLOUTS,
        )
        .expect("parses");
        assert_eq!(
            query.status_in,
            Some(vec![RolloutStatus::Queuing, RolloutStatus::Running])
        );
        assert_eq!(query.limit, Some(5));
        assert_eq!(query.sort_order, Some(SortOrder::Desc));
    }

    #[test]
    fn bad_values_are_422_with_the_parameter_named() {
        let error = parse::<RolloutQuery>(Some("limit=ten"), &ROLLOUTS).expect_err("not an integer");
        assert_eq!(error.status.as_u16(), 422);
        assert!(error.detail.contains("`limit`"), "{}", error.detail);
        let error = parse::<RolloutQuery>(Some("status_in=sleeping"), &ROLLOUTS).expect_err("bad enum");
        assert_eq!(error.status.as_u16(), 422);
        assert!(error.detail.contains("sleeping"), "{}", error.detail);
    }

    #[test]
    fn no_query_string_gives_the_defaults() {
        assert_eq!(
            parse::<RolloutQuery>(None, &ROLLOUTS).expect("empty"),
            RolloutQuery::default()
        );
    }
}
