//! Whether two attempts' spans tell the same story, up to what differs between any two runs:
//! ids, times, attributes that measure time (latencies), and which attempt of which agent file
//! it was (rollout and attempt ids, `agl.attempt.sequence_id`, `agl.agent`). A replay is identical to its
//! recording when [`first_difference`] finds none; a fork's prefix, when its first spans are.
//!
//! Spans are compared in the order the attempt recorded them (their sequence ids, then their
//! start), each by its name, its parent (as a position in that order), its status and its
//! attributes; events and links are not compared. The LLM spans the LLM proxy wrote for an
//! attempt are left out, and so are the root's LLM totals (`agl.llm.calls`, `agl.llm.tokens`),
//! which count the proxy's calls too: the proxy is outside the agent's instance (a replay answers
//! the agent's exchange with it from the record, and writes no proxy span). The agent's own LLM
//! calls are compared span by span.

use agl_store::Span;
use serde_json::{Map, Value};
use std::sync::Arc;

/// One span with what differs between runs left out.
#[derive(Debug, Clone, PartialEq)]
pub struct ComparableSpan {
    pub name: String,
    /// The parent's position in the attempt's spans (`None`: a root, or a parent not among them).
    pub parent: Option<usize>,
    pub status: String,
    pub attributes: Map<String, Value>,
}

/// Whether an attribute measures time, names the attempt or the agent's file rather than what
/// happened, or totals LLM calls the LLM proxy made too.
fn varies_between_runs(key: &str) -> bool {
    key.ends_with("_ms")
        || key.ends_with(".latency")
        || key.contains("duration")
        || key.ends_with("_time")
        || key.ends_with("rollout_id")
        || key.ends_with("attempt_id")
        || key == agl_store::semconv::ATTEMPT_SEQUENCE_ID
        || key == agl_store::semconv::AGENT
        || key == agl_store::semconv::LLM_CALLS
        || key == agl_store::semconv::LLM_TOKENS
}

/// The spans in their recorded order, comparable.
pub fn comparable(spans: &[Arc<Span>]) -> Vec<ComparableSpan> {
    let mut ordered: Vec<&Arc<Span>> = spans
        .iter()
        .filter(|span| !span.attributes.contains_key(agl_store::semconv::LLM_PROXY_UPSTREAM))
        .collect();
    ordered.sort_by(|a, b| {
        a.sequence_id.cmp(&b.sequence_id).then(
            a.start_time
                .partial_cmp(&b.start_time)
                .unwrap_or(std::cmp::Ordering::Equal),
        )
    });
    let position = |id: &str| ordered.iter().position(|span| span.span_id == id);
    ordered
        .iter()
        .map(|span| ComparableSpan {
            name: span.name.clone(),
            parent: span.parent_id.as_deref().and_then(position),
            status: match &span.status.description {
                Some(description) => format!("{:?}: {description}", span.status.status_code),
                None => format!("{:?}", span.status.status_code),
            },
            attributes: span
                .attributes
                .iter()
                .filter(|(key, _)| !varies_between_runs(key))
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect(),
        })
        .collect()
}

/// Where `actual` first differs from `expected`, in words (`None`: the same spans). Only the
/// first `limit` spans are compared when given (a fork's shared prefix).
pub fn first_difference(expected: &[Arc<Span>], actual: &[Arc<Span>], limit: Option<usize>) -> Option<String> {
    let (mut expected, mut actual) = (comparable(expected), comparable(actual));
    if let Some(limit) = limit {
        expected.truncate(limit);
        actual.truncate(limit);
    }
    for (index, (want, got)) in expected.iter().zip(&actual).enumerate() {
        if want.name != got.name {
            return Some(format!(
                "span {}: '{}' where '{}' was recorded",
                index + 1,
                got.name,
                want.name
            ));
        }
        if want.parent != got.parent {
            return Some(format!("span {} ('{}'): under another parent", index + 1, got.name));
        }
        if want.status != got.status {
            return Some(format!(
                "span {} ('{}'): status {} where {} was recorded",
                index + 1,
                got.name,
                got.status,
                want.status
            ));
        }
        if want.attributes != got.attributes {
            let keys = want.attributes.keys().chain(got.attributes.keys());
            let differing: Vec<&str> = keys
                .filter(|key| want.attributes.get(*key) != got.attributes.get(*key))
                .map(String::as_str)
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            return Some(format!(
                "span {} ('{}'): attributes differ: {}",
                index + 1,
                got.name,
                differing.join(", ")
            ));
        }
    }
    (expected.len() != actual.len()).then(|| format!("{} spans where {} were recorded", actual.len(), expected.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(sequence_id: u64, id: &str, parent: Option<&str>, name: &str, attributes: Value) -> Arc<Span> {
        let value = serde_json::json!({
            "rollout_id": "ro", "attempt_id": "at", "sequence_id": sequence_id,
            "trace_id": "t", "span_id": id, "parent_id": parent, "name": name,
            "status": {"status_code": "OK"}, "attributes": attributes,
            "events": [], "links": [], "start_time": sequence_id as f64, "end_time": null,
            "context": null, "parent": null, "resource": {"attributes": {}, "schema_url": ""},
        });
        Arc::new(serde_json::from_value(value).expect("a span"))
    }

    #[test]
    fn ids_times_and_latencies_do_not_count_but_everything_else_does() {
        let recorded = [
            span(1, "a", None, "root", serde_json::json!({"agent": "x"})),
            span(
                2,
                "b",
                Some("a"),
                "llm",
                serde_json::json!({"model": "m", "latency_ms": 3.0}),
            ),
        ];
        let replayed = [
            span(7, "c", None, "root", serde_json::json!({"agent": "x"})),
            span(
                8,
                "d",
                Some("c"),
                "llm",
                serde_json::json!({"model": "m", "latency_ms": 900.0}),
            ),
        ];
        assert_eq!(first_difference(&recorded, &replayed, None), None);
        let changed = [
            replayed[0].clone(),
            span(8, "d", Some("c"), "llm", serde_json::json!({"model": "other"})),
        ];
        let difference = first_difference(&recorded, &changed, None).expect("a difference");
        assert!(
            difference.contains("span 2") && difference.contains("model"),
            "{difference}"
        );
        assert_eq!(
            first_difference(&recorded, &changed, Some(1)),
            None,
            "the prefix is the same"
        );
        let fewer = first_difference(&recorded, &replayed[..1], None).expect("a difference");
        assert!(fewer.contains("1 spans where 2"), "{fewer}");
        let by_the_proxy = span(
            3,
            "e",
            None,
            "llm",
            serde_json::json!({"agl.llm.proxy.upstream": "http://up"}),
        );
        let with_proxy = [recorded[0].clone(), recorded[1].clone(), by_the_proxy];
        assert_eq!(
            first_difference(&with_proxy, &replayed, None),
            None,
            "the proxy's spans are not the instance's"
        );
    }
}
