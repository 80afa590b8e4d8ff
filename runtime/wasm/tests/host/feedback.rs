//! `reward.feedback` (agl:agent 0.3.0): a 0.3.0 agent's feedback lands on its final reward span,
//! in order, bounded, as data; an attempt without a reward (or a failed one) keeps it on an
//! annotation span of its own; the adapter's task view reads it back with the attempt's output,
//! reward and transcript.

use crate::common::*;
use agl_store::AttemptStatus;
use agl_store::semconv as c;
use agl_wasm::*;
use serde_json::{Value, json};

fn probe() -> AgentComponent {
    load("tests/guests/probe", SandboxPolicy::default())
}

/// The feedback attributes of the attempt's last annotation span.
fn last_annotation(ran: &Ran) -> serde_json::Map<String, Value> {
    let spans = ran.spans_named(c::ANNOTATION_SPAN);
    let last = spans.iter().max_by_key(|s| s.sequence_id).expect("an annotation span");
    last.attributes.clone()
}

/// `task` run on `agent` against the echo LLM, which must succeed.
async fn run_succeeded(agent: &AgentComponent, task: Value) -> Ran {
    let ran = run(agent, task, echo_llm(), None).await;
    assert_eq!(
        ran.outcome.status,
        AttemptStatus::Succeeded,
        "{:?}",
        ran.outcome.failure
    );
    ran
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn feedback_lands_on_the_final_reward_span_in_order_and_as_data() {
    let agent = probe();
    let texts = [
        "expected 27, got 2.7: units",
        "\u{1b}[2J\r\0 a terminal escape, kept as data",
    ];
    let ran = run_succeeded(&agent, json!({"do": "feedback", "texts": texts, "reward": 0.5})).await;
    assert_eq!(ran.outcome.reward, Some(0.5));
    let attributes = last_annotation(&ran);
    assert_eq!(attributes[c::REWARD_0_VALUE], 0.5);
    assert_eq!(attributes[c::REWARD_FEEDBACK], json!(texts));
    assert!(!attributes.contains_key(c::REWARD_FEEDBACK_DROPPED_BYTES));
    assert_eq!(agl_adapter::final_reward(&ran.spans), Some(0.5));
    assert_eq!(agl_adapter::feedback(&ran.spans), texts);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_feedback_is_cut_on_a_char_boundary_and_counted_never_failing_the_attempt() {
    let agent = probe();
    // 6000 bytes of 'é' (2 bytes each) three times: 18000 bytes, past the 16 KiB bound.
    let big = "é".repeat(3000);
    let ran = run_succeeded(
        &agent,
        json!({"do": "feedback", "texts": [big], "repeat": 2, "reward": 1.0}),
    )
    .await;
    let attributes = last_annotation(&ran);
    let kept: Vec<&str> = attributes[c::REWARD_FEEDBACK]
        .as_array()
        .expect("a list")
        .iter()
        .map(|t| t.as_str().expect("text"))
        .collect();
    assert_eq!(kept.len(), 3);
    let kept_bytes: usize = kept.iter().map(|t| t.len()).sum();
    assert_eq!(
        kept_bytes,
        16 << 10,
        "cut at the bound, which falls on a char boundary here"
    );
    assert!(kept[2].chars().all(|ch| ch == 'é'));
    assert_eq!(attributes[c::REWARD_FEEDBACK_DROPPED_BYTES], json!(18_000 - (16 << 10)));

    // Many texts: 64 kept, the rest counted.
    let ran = run_succeeded(
        &agent,
        json!({"do": "feedback", "texts": ["ab"], "repeat": 99, "reward": 1.0}),
    )
    .await;
    let attributes = last_annotation(&ran);
    assert_eq!(attributes[c::REWARD_FEEDBACK].as_array().map(Vec::len), Some(64));
    assert_eq!(attributes[c::REWARD_FEEDBACK_DROPPED_BYTES], json!(36 * 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_attempt_keeps_its_feedback_on_a_span_that_is_no_reward() {
    let agent = probe();
    let ran = run(
        &agent,
        json!({"do": "feedback", "texts": ["error[E0308]: mismatched types"], "fail": true}),
        echo_llm(),
        None,
    )
    .await;
    assert_eq!(ran.outcome.status, AttemptStatus::Failed);
    assert_eq!(ran.outcome.reward, None);
    let attributes = last_annotation(&ran);
    assert_eq!(
        attributes[c::REWARD_FEEDBACK],
        json!(["error[E0308]: mismatched types"])
    );
    assert!(!attributes.contains_key(c::REWARD_0_VALUE));
    assert_eq!(agl_adapter::final_reward(&ran.spans), None);
    assert!(agl_adapter::rewards(&ran.spans).is_empty());

    // No feedback, no reward: no annotation span at all.
    let ran = run(&agent, json!({"do": "feedback", "texts": []}), echo_llm(), None).await;
    assert!(ran.spans_named(c::ANNOTATION_SPAN).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_task_view_holds_input_output_reward_feedback_and_transcript() {
    let agent = probe();
    let ran = run_succeeded(&agent, json!({"do": "llm_conversation", "messages": 3})).await;
    let input = json!({"do": "llm_conversation", "messages": 3});
    let view = agl_adapter::task_view(input.clone(), &ran.spans);
    assert_eq!(view.input, input);
    let calls = agl_adapter::triplets(&ran.spans);
    assert_eq!(view.output.as_deref(), calls.last().map(|c| c.response.as_str()));
    assert_eq!(view.reward, ran.outcome.reward);
    assert!(view.feedback.is_empty());
    assert_eq!(view.transcript, agl_adapter::transcript(&calls));
    assert!(!view.transcript.is_empty());
}
