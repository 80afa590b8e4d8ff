//! What a guest can make the host hold: span floods of every kind stop at the attempt's span
//! budget (summarised by one marker span), the final reward survives any flood, and rewards that
//! are not numbers fail the attempt at the host boundary.

use crate::common::*;
use agl_store::{AttemptStatus, Span};
use agl_wasm::policy::SpanBudget;
use agl_wasm::*;
use serde_json::json;
use std::sync::Arc;

const PROBE: &str = "tests/guests/probe";

/// Bytes of attribute text a span carries (keys and string values, other values as 8).
fn attribute_bytes(span: &Span) -> usize {
    span.attributes
        .iter()
        .map(|(k, v)| k.len() + v.as_str().map_or(8, str::len))
        .sum()
}

/// The value of the last reward span, in sequence order: what Agent-lightning's
/// `find_final_reward` reads.
fn last_reward_span_value(spans: &[Arc<Span>]) -> Option<f64> {
    let mut rewards: Vec<&Arc<Span>> = spans
        .iter()
        .filter(|s| s.attributes.contains_key("agentlightning.reward.0.value"))
        .collect();
    rewards.sort_by_key(|s| s.sequence_id);
    rewards
        .last()
        .and_then(|s| s.attributes["agentlightning.reward.0.value"].as_f64())
}

fn marker(ran: &Ran) -> &Arc<Span> {
    let markers = ran.spans_named("agl.spans.dropped");
    assert_eq!(markers.len(), 1, "one marker span");
    markers[0]
}

#[tokio::test]
async fn a_flood_of_each_kind_stops_at_the_span_budget_and_the_returned_reward_is_kept() {
    let budget = SpanBudget {
        max_spans: 1_000,
        max_bytes: 4 << 20,
        max_attribute_bytes: 16 << 10,
    };
    let agent = load(
        PROBE,
        SandboxPolicy {
            spans: budget,
            ..SandboxPolicy::default()
        },
    );
    for kind in ["log", "message", "object", "operation"] {
        // 3,000 calls of 64 KiB: 192 MiB offered, at most 4 MiB kept.
        let task = json!({"do": "trace_flood", "kind": kind, "count": 3000, "bytes": 64 << 10, "then": 0.75});
        let ran = run(&agent, task, echo_llm(), None).await;
        assert_eq!(
            (ran.outcome.status, ran.outcome.reward),
            (AttemptStatus::Succeeded, Some(0.75)),
            "{kind}: {:?}",
            ran.outcome.failure
        );
        let held: usize = ran.spans.iter().map(|s| attribute_bytes(s)).sum();
        assert!(held <= (4 << 20) + (64 << 10), "{kind}: {held} bytes held");
        assert!(ran.spans.len() <= 1_000 + 4, "{kind}: {} spans", ran.spans.len());
        let marker = marker(&ran);
        let dropped = marker.attributes["agl.spans.dropped.count"]
            .as_i64()
            .unwrap_or_default();
        assert_eq!(dropped, i64::from(ran.outcome.spans_dropped), "{kind}");
        assert!(dropped >= 2_000, "{kind}: {dropped} dropped");
        assert!(
            ran.spans.iter().all(|s| attribute_bytes(s) < (16 << 10) + 1024),
            "{kind}: every attribute clipped to the per-attribute cap"
        );
        assert_eq!(last_reward_span_value(&ran.spans), Some(0.75), "{kind}");
    }
    still_serves(&agent).await;
}

#[tokio::test]
async fn a_hundred_thousand_small_logs_then_a_returned_reward_keeps_the_reward() {
    let agent = load(PROBE, SandboxPolicy::default());
    let task = json!({"do": "trace_flood", "kind": "log", "count": 100_000, "bytes": 8, "then": 1.0});
    let ran = run(&agent, task, echo_llm(), None).await;
    assert_eq!(
        (ran.outcome.status, ran.outcome.reward),
        (AttemptStatus::Succeeded, Some(1.0)),
        "{:?}",
        ran.outcome.failure
    );
    let marker = marker(&ran);
    assert_eq!(marker.attributes["agl.spans.budget.bound"], "count");
    let by_name: serde_json::Value =
        serde_json::from_str(marker.attributes["agl.spans.dropped.by_name"].as_str().unwrap_or("{}")).unwrap();
    let logs_dropped: u64 = by_name
        .as_object()
        .map(|names| names.values().filter_map(|n| n.as_u64()).sum())
        .unwrap_or_default();
    assert_eq!(
        logs_dropped,
        100_000 - 10_000,
        "the default budget keeps 10,000 spans: {by_name}"
    );
    assert_eq!(last_reward_span_value(&ran.spans), Some(1.0));
    assert_eq!(agl_adapter::final_reward(&ran.spans), Some(1.0));
}

#[tokio::test]
async fn rewards_that_are_not_numbers_fail_the_attempt_at_the_host_boundary() {
    let agent = load(PROBE, SandboxPolicy::default());
    for (value, words) in [
        ("nan", "reward.emit: NaN is not a reward"),
        ("inf", "reward.emit: inf is out of range"),
        ("-1.79e308", "reward.emit: -1.79e308 is out of range"),
    ] {
        let ran = run(&agent, json!({"do": "emit_reward", "value": value}), echo_llm(), None).await;
        assert_eq!(ran.outcome.status, AttemptStatus::Failed, "{value}");
        let reason = ran.outcome.failure.clone().unwrap_or_default();
        assert!(
            reason.starts_with("a host call refused: ") && reason.contains(words),
            "{value}: {reason}"
        );
        assert!(
            ran.spans_named("agentlightning.annotation").is_empty(),
            "{value}: no reward span"
        );
        let root = ran.root();
        let detail = root.attributes["agl.failure.detail"].as_str().unwrap_or_default();
        assert!(
            detail.contains("wasm backtrace"),
            "{value}: the detail is on the root span: {detail}"
        );
    }
    let ran = run(&agent, json!({"do": "reward", "value": 1.79e308}), echo_llm(), None).await;
    assert_eq!(ran.outcome.status, AttemptStatus::Failed);
    let reason = ran.outcome.failure.clone().unwrap_or_default();
    assert_eq!(
        reason,
        "the agent returned a bad reward: 1.79e308 is out of range (rewards are finite numbers within ±1e15)"
    );
    still_serves(&agent).await;
}

#[tokio::test]
async fn the_final_reward_is_the_last_reward_span_whatever_the_agent_emitted() {
    let agent = load(PROBE, SandboxPolicy::default());
    // `reward_named("a", 0.5)` then `reward(0.25)`, nothing returned: 0.25 is final and already
    // the last reward span.
    let ran = run(&agent, json!({"do": "emit_rewards"}), echo_llm(), None).await;
    assert_eq!(ran.outcome.reward, Some(0.25));
    assert_eq!(last_reward_span_value(&ran.spans), Some(0.25));
    assert_eq!(
        ran.spans_named("agentlightning.annotation").len(),
        2,
        "no closing span needed"
    );
    // A returned reward is recorded last.
    let ran = run(&agent, json!({"do": "reward", "value": 0.5}), echo_llm(), None).await;
    assert_eq!(last_reward_span_value(&ran.spans), Some(0.5));
}
