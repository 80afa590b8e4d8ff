//! Rewards read from spans, after Agent-lightning 0.3.0's `get_rewards_from_span`,
//! `get_reward_value` and `find_final_reward` (`agentlightning/emitter/reward.py`).
//!
//! A span carries rewards in one of three shapes, tried in this order:
//! 1. 0.3.0: `agentlightning.reward.{i}.name` / `.value` on any span (agl-host and `emit_reward`
//!    write them on an `agentlightning.annotation` span);
//! 2. AgentOps' `@reward`: `agentops.task.output` (or `agentops.entity.output`) holding
//!    `{"type": "reward", "value": x}`, as an object or its JSON text — unnamed;
//! 3. 0.2: an `agentlightning.annotation` span with a numeric `reward` attribute — unnamed.
//!
//! The primary reward of a span is its dimension named `primary`; failing that, its first
//! dimension when that one is unnamed or when the span holds several (Agent-lightning's
//! `emit_reward` puts the `primary_key` first). A span holding a single dimension under another
//! name is a named reward only: that is what agl-host's `reward.emit-named` writes, and the host
//! does not count it as the primary reward. (Agent-lightning would take it as primary.)
//!
//! Differences from Agent-lightning, on purpose: spans with status `ERROR` carry no reward (the
//! host records a non-finite reward that way); values that are not finite numbers (or numeric
//! text) are skipped rather than failing the whole read; spans are taken in sequence-id order.

use crate::attrs::{self, indexed, number, string};
use crate::conventions as c;
use agl_store::{RolloutStatus, Span, StatusCode};
use serde_json::Value;
use std::borrow::Borrow;

/// One reward dimension of a span.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Dimension {
    pub name: Option<String>,
    pub value: f64,
    /// Whether it sits at the span's lowest reward index (Agent-lightning's `reward_list[0]`).
    pub first: bool,
}

/// The rewards one span carries, with the index of its primary one.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SpanRewards {
    pub dimensions: Vec<Dimension>,
    pub primary: Option<usize>,
}

impl SpanRewards {
    /// `several`: the span recorded more than one dimension (usable or not).
    fn new(dimensions: Vec<Dimension>, several: bool) -> Self {
        let named_primary = dimensions
            .iter()
            .position(|d| d.name.as_deref() == Some(c::PRIMARY_REWARD));
        let first = dimensions
            .first()
            .filter(|d| d.first && (d.name.is_none() || several))
            .map(|_| 0);
        Self {
            primary: named_primary.or(first),
            dimensions,
        }
    }

    fn unnamed(value: f64) -> Self {
        let only = Dimension {
            name: None,
            value,
            first: true,
        };
        Self::new(vec![only], false)
    }

    pub fn primary_value(&self) -> Option<f64> {
        self.primary.and_then(|i| self.dimensions.get(i)).map(|d| d.value)
    }
}

/// 0.3.0's `agentlightning.reward.{i}.name/value` dimensions, in index order; an entry without a
/// usable value is skipped (and so cannot be primary by position). `None` when the span has no
/// such attribute at all.
fn dimensions(span: &Span) -> Option<SpanRewards> {
    if !attrs::has_family(span.attributes.keys(), c::REWARD_PREFIX) {
        return None;
    }
    let groups = indexed(span.attributes.iter().map(|(k, v)| (k.as_str(), v)), c::REWARD_PREFIX);
    let found: Vec<Dimension> = groups
        .values()
        .enumerate()
        .filter_map(|(position, fields)| {
            let value = number(fields.get(c::REWARD_VALUE_FIELD).copied())?;
            let name = string(fields.get(c::REWARD_NAME_FIELD).copied()).map(str::to_owned);
            Some(Dimension {
                name,
                value,
                first: position == 0,
            })
        })
        .collect();
    Some(SpanRewards::new(found, groups.len() > 1))
}

/// AgentOps' `{"type": "reward", "value": x}` output, as an object or JSON text.
fn agentops_reward(span: &Span) -> Option<f64> {
    let output = c::AGENTOPS_OUTPUTS.iter().find_map(|key| span.attributes.get(*key))?;
    let parsed;
    let object = match output {
        Value::Object(map) => map,
        Value::String(text) => {
            parsed = serde_json::from_str::<Value>(text).ok()?;
            parsed.as_object()?
        }
        _ => return None,
    };
    if string(object.get("type")) != Some(c::AGENTOPS_REWARD_TYPE) {
        return None;
    }
    number(object.get("value"))
}

/// The rewards a span carries, whatever its status.
fn parse(span: &Span) -> Option<SpanRewards> {
    if let Some(found) = dimensions(span) {
        return (!found.dimensions.is_empty()).then_some(found);
    }
    if let Some(value) = agentops_reward(span) {
        return Some(SpanRewards::unnamed(value));
    }
    if span.name == c::ANNOTATION_SPAN {
        return number(span.attributes.get(c::LEGACY_REWARD)).map(SpanRewards::unnamed);
    }
    None
}

/// The rewards of a span that counts: one without status `ERROR`.
pub(crate) fn span_rewards(span: &Span) -> Option<SpanRewards> {
    if span.status.status_code == StatusCode::Error {
        return None;
    }
    parse(span)
}

/// Whether LLM calls beneath this span belong to reward computation (an LLM judge) rather than to
/// the agent: it carries a reward, or it is an `agentlightning.operation` named
/// `agentlightning.reward` (`TraceTree.is_reward_span`).
pub(crate) fn is_reward_scope(span: &Span) -> bool {
    let reward_operation =
        span.name == c::OPERATION_SPAN && string(span.attributes.get(c::OPERATION_NAME)) == Some(c::REWARD_OPERATION);
    reward_operation || attrs::has_family(span.attributes.keys(), c::REWARD_PREFIX) || parse(span).is_some()
}

/// The spans in sequence-id order (stable: equal ids keep their given order).
fn in_sequence<S: Borrow<Span>>(spans: &[S]) -> Vec<&Span> {
    let mut ordered: Vec<&Span> = spans.iter().map(Borrow::borrow).collect();
    ordered.sort_by_key(|s| s.sequence_id);
    ordered
}

/// The attempt's final reward: the primary reward of the last span (by sequence id) that has one.
/// Error-status spans and non-finite values are ignored; `None` when no span has a primary reward.
pub fn final_reward<S: Borrow<Span>>(spans: &[S]) -> Option<f64> {
    in_sequence(spans)
        .into_iter()
        .rev()
        .find_map(|s| span_rewards(s)?.primary_value())
}

/// A rollout's reward as a run's mean reward counts it, the one definition the results, `show`
/// and the dashboard share: the final reward of its latest attempt if the rollout succeeded, and
/// 0 otherwise (a rollout that failed counts 0 even when its attempt emitted a reward before
/// failing; one not yet finished counts 0 too). The mean is over all of the group's rollouts.
pub fn counted_reward(status: RolloutStatus, final_reward: Option<f64>) -> f64 {
    match (status, final_reward) {
        (RolloutStatus::Succeeded, Some(value)) if value.is_finite() => value,
        _ => 0.0,
    }
}

/// Every reward of the attempt as `(name, value)`, spans in sequence-id order and dimensions in
/// index order. An unnamed primary reward (AgentOps, 0.2, an unnamed first dimension) is named
/// `primary`; other unnamed dimensions are left out.
pub fn rewards<S: Borrow<Span>>(spans: &[S]) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for span in in_sequence(spans) {
        let Some(found) = span_rewards(span) else {
            continue;
        };
        for (i, dimension) in found.dimensions.iter().enumerate() {
            let name = match &dimension.name {
                Some(name) => name.clone(),
                None if found.primary == Some(i) => c::PRIMARY_REWARD.to_owned(),
                None => continue,
            };
            out.push((name, dimension.value));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::support::SpanBuilder;
    use serde_json::json;

    fn reward_span(seq: u64, attributes: Value) -> Span {
        SpanBuilder::new(c::ANNOTATION_SPAN, seq).attrs(attributes).build()
    }

    #[test]
    fn primary_is_named_or_first_of_several_or_unnamed() {
        let named = reward_span(
            1,
            json!({"agentlightning.reward.0.name": "primary", "agentlightning.reward.0.value": 0.5}),
        );
        assert_eq!(span_rewards(&named).and_then(|r| r.primary_value()), Some(0.5));

        let multi = reward_span(
            2,
            json!({
                "agentlightning.reward.0.name": "task_completion", "agentlightning.reward.0.value": 1.0,
                "agentlightning.reward.1.name": "efficiency", "agentlightning.reward.1.value": 0.25,
            }),
        );
        assert_eq!(span_rewards(&multi).and_then(|r| r.primary_value()), Some(1.0));

        let unnamed = reward_span(3, json!({"agentlightning.reward.0.value": 0.75}));
        assert_eq!(span_rewards(&unnamed).and_then(|r| r.primary_value()), Some(0.75));

        let secondary = reward_span(
            4,
            json!({"agentlightning.reward.0.name": "accuracy", "agentlightning.reward.0.value": 0.1}),
        );
        let parsed = span_rewards(&secondary).expect("a reward span");
        assert_eq!(parsed.primary_value(), None);
        assert_eq!(parsed.dimensions.len(), 1);
    }

    #[test]
    fn only_a_rollout_that_succeeded_counts_its_reward() {
        assert_eq!(counted_reward(RolloutStatus::Succeeded, Some(0.5)), 0.5);
        assert_eq!(counted_reward(RolloutStatus::Succeeded, None), 0.0);
        assert_eq!(counted_reward(RolloutStatus::Succeeded, Some(f64::NAN)), 0.0);
        assert_eq!(
            counted_reward(RolloutStatus::Failed, Some(1.0)),
            0.0,
            "emitted, then failed"
        );
        assert_eq!(counted_reward(RolloutStatus::Running, Some(1.0)), 0.0);
        assert_eq!(counted_reward(RolloutStatus::Cancelled, Some(1.0)), 0.0);
    }

    #[test]
    fn agentops_and_legacy_shapes() {
        let text = SpanBuilder::new("agent.reward", 1)
            .attrs(json!({"agentops.task.output": "{\"type\": \"reward\", \"value\": 0.3}"}))
            .build();
        assert_eq!(final_reward(&[text]), Some(0.3));

        let object = SpanBuilder::new("reward_fn", 1)
            .attrs(json!({"agentops.entity.output": {"type": "reward", "value": 0.4}}))
            .build();
        assert_eq!(final_reward(&[object]), Some(0.4));

        let not_reward = SpanBuilder::new("tool", 1)
            .attrs(json!({"agentops.task.output": "{\"type\": \"answer\", \"value\": 1}"}))
            .build();
        let broken = SpanBuilder::new("tool", 2)
            .attrs(json!({"agentops.task.output": "{not json"}))
            .build();
        let null_value = SpanBuilder::new("tool", 3)
            .attrs(json!({"agentops.task.output": "{\"type\": \"reward\", \"value\": null}"}))
            .build();
        assert_eq!(final_reward(&[not_reward, broken, null_value]), None);

        let legacy = reward_span(1, json!({"reward": 0.9}));
        assert_eq!(final_reward(&[legacy]), Some(0.9));
        let legacy_elsewhere = SpanBuilder::new("other", 1).attrs(json!({"reward": 0.9})).build();
        assert_eq!(final_reward(&[legacy_elsewhere]), None);
    }

    #[test]
    fn malformed_dimensions_are_skipped() {
        let span = reward_span(
            1,
            json!({
                "agentlightning.reward.0.name": "primary", "agentlightning.reward.0.value": "oops",
                "agentlightning.reward.3.name": 7, "agentlightning.reward.3.value": 0.5,
                "agentlightning.reward.x.value": 1.0,
                "agentlightning.reward.4.name": "speed",
            }),
        );
        // Dimension 0, the primary, has no usable value; 3 is unnamed (a non-string name) and not
        // first, so it is neither primary nor listed; 4 has no value.
        assert_eq!(rewards(std::slice::from_ref(&span)), vec![]);
        assert_eq!(final_reward(&[span]), None);

        let gap = reward_span(
            1,
            json!({"agentlightning.reward.2.name": "primary", "agentlightning.reward.2.value": 1,
                   "agentlightning.reward.5.name": "speed", "agentlightning.reward.5.value": "0.5"}),
        );
        assert_eq!(
            rewards(std::slice::from_ref(&gap)),
            vec![("primary".to_owned(), 1.0), ("speed".to_owned(), 0.5)]
        );
        assert_eq!(final_reward(&[gap]), Some(1.0));
    }

    #[test]
    fn order_is_by_sequence_id() {
        let later = reward_span(
            5,
            json!({"agentlightning.reward.0.name": "primary", "agentlightning.reward.0.value": 1.0}),
        );
        let earlier = reward_span(
            2,
            json!({"agentlightning.reward.0.name": "primary", "agentlightning.reward.0.value": 0.0}),
        );
        assert_eq!(final_reward(&[later, earlier]), Some(1.0));
    }

    #[test]
    fn reward_scopes() {
        let op = SpanBuilder::new(c::OPERATION_SPAN, 1)
            .attrs(json!({"agentlightning.operation.name": "agentlightning.reward"}))
            .build();
        assert!(is_reward_scope(&op));
        let failed = SpanBuilder::new(c::ANNOTATION_SPAN, 2)
            .attrs(json!({"agentlightning.reward.0.name": "primary"}))
            .error("non-finite reward NaN ignored")
            .build();
        assert!(is_reward_scope(&failed));
        assert!(span_rewards(&failed).is_none());
        let plain = SpanBuilder::new("agl.log", 3).build();
        assert!(!is_reward_scope(&plain));
    }
}
