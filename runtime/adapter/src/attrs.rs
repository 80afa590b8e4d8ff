//! Reading flattened span attributes defensively. Values may have any JSON type whatever the
//! convention says, and indexed families (`prefix.{i}.field`) may come out of order or with gaps:
//! nothing here panics, a value of the wrong kind reads as absent.

use serde_json::Value;
use std::collections::BTreeMap;

/// The fields of one indexed entry, by the key that follows the index (`role`, `tool_calls.0.id`).
pub(crate) type Fields<'a> = BTreeMap<&'a str, &'a Value>;

/// Groups `prefix.{i}.rest` entries by `i`, in ascending index order (gaps are simply absent).
/// Keys whose segment after `prefix` is not a decimal index that fits in `u64`, or that have
/// nothing after the index, are ignored (e.g. `gen_ai.prompt.prompt_filter_results`).
pub(crate) fn indexed<'a, I>(entries: I, prefix: &str) -> BTreeMap<u64, Fields<'a>>
where
    I: IntoIterator<Item = (&'a str, &'a Value)>,
{
    let mut groups: BTreeMap<u64, Fields<'a>> = BTreeMap::new();
    for (key, value) in entries {
        let Some(rest) = key.strip_prefix(prefix).and_then(|r| r.strip_prefix('.')) else {
            continue;
        };
        let Some((index, field)) = rest.split_once('.') else {
            continue;
        };
        if field.is_empty() || index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(index) = index.parse::<u64>() else {
            continue;
        };
        groups.entry(index).or_default().insert(field, value);
    }
    groups
}

/// Whether any key is `prefix.<something>`.
pub(crate) fn has_family<'a, I>(keys: I, prefix: &str) -> bool
where
    I: IntoIterator<Item = &'a String>,
{
    keys.into_iter().any(|k| {
        k.strip_prefix(prefix)
            .is_some_and(|r| r.len() > 1 && r.starts_with('.'))
    })
}

/// A string value only.
pub(crate) fn string(value: Option<&Value>) -> Option<&str> {
    value.and_then(Value::as_str)
}

/// Text of any value: a string as it is, `null` as absent, anything else as its JSON text (some
/// instrumentations leave structured content, e.g. a list of parts, unserialised).
pub(crate) fn text(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// An identifier: a string, or a number written as text.
pub(crate) fn ident(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A finite number: a JSON number, or a string that parses as one (exporters sometimes stringify).
/// Booleans, NaN and infinities read as absent.
pub(crate) fn number(value: Option<&Value>) -> Option<f64> {
    let x = match value? {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse::<f64>().ok()?,
        _ => return None,
    };
    x.is_finite().then_some(x)
}

/// A non-negative whole count (token usage): an unsigned integer, an integral float, or its text.
pub(crate) fn count(value: Option<&Value>) -> Option<u64> {
    match value? {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|x| x.is_finite() && *x >= 0.0 && x.fract() == 0.0 && *x <= u64::MAX as f64)
                .map(|x| x as u64)
        }),
        Value::String(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn indexed_sorts_skips_junk_and_allows_gaps() {
        let attrs = json!({
            "p.10.role": "user",
            "p.2.role": "system",
            "p.2.tool_calls.0.id": "c",
            "p.filter_results": "x",
            "p.3": "no field",
            "p.-1.role": "neg",
            "p.99999999999999999999999.role": "too big",
            "p.1.": "empty field",
            "px.0.role": "other family",
        });
        let map = attrs.as_object().expect("object");
        let groups = indexed(map.iter().map(|(k, v)| (k.as_str(), v)), "p");
        assert_eq!(groups.keys().copied().collect::<Vec<_>>(), vec![2, 10]);
        assert_eq!(groups[&2].len(), 2);
        assert_eq!(string(groups[&10].get("role").copied()), Some("user"));
    }

    #[test]
    fn values_of_the_wrong_kind_read_as_absent() {
        assert_eq!(number(Some(&json!("0.5"))), Some(0.5));
        assert_eq!(number(Some(&json!(true))), None);
        assert_eq!(number(Some(&json!("NaN"))), None);
        assert_eq!(number(Some(&json!("inf"))), None);
        assert_eq!(number(None), None);
        assert_eq!(count(Some(&json!(12.0))), Some(12));
        assert_eq!(count(Some(&json!(-3))), None);
        assert_eq!(count(Some(&json!(1.5))), None);
        assert_eq!(count(Some(&json!("7"))), Some(7));
        assert_eq!(text(Some(&json!(null))), None);
        assert_eq!(text(Some(&json!([1, 2]))).as_deref(), Some("[1,2]"));
        assert_eq!(ident(Some(&json!(42))).as_deref(), Some("42"));
        assert_eq!(ident(Some(&json!({"a": 1}))), None);
    }

    #[test]
    fn families_need_a_dot_and_more() {
        let keys = ["gen_ai.prompt".to_owned(), "gen_ai.promptx.0".to_owned()];
        assert!(!has_family(&keys, "gen_ai.prompt"));
        let keys = ["gen_ai.prompt.0.role".to_owned()];
        assert!(has_family(&keys, "gen_ai.prompt"));
    }
}
