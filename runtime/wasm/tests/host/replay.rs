//! Recording and replay (`capabilities/tape`): every attempt is recorded; a replay answers each
//! host call from its own recording (no LLM, no network) and is the same attempt — the guest
//! cannot tell, and cannot reach past its own record; a changed guest diverges at the call that
//! changed; a fork replays up to its LLM call and goes on from there.

use crate::common::*;
use agl_store::*;
use agl_wasm::tape::{ForkPoint, OnDivergence, ReplayPlan, Tape};
use agl_wasm::*;
use serde_json::{Value, json};
use std::sync::Arc;

const PROBE: &str = "tests/guests/probe";

fn probe() -> AgentComponent {
    load(PROBE, SandboxPolicy::default())
}

/// Answers every request with its last user message, prefixed (so each request has its own answer).
fn answering(prefix: &str) -> Arc<dyn agl_llm::LlmBackend> {
    scripted_json(&format!(
        r#"{{"model": "scripted", "rules": [{{"when": [{{"role": "user", "matches": "(?s)^(.*)$"}}], "reply": "{prefix}: {{1}}"}}]}}"#
    ))
}

#[tokio::test]
async fn every_kind_of_host_call_replays_identically_without_an_llm() {
    let agent = probe();
    for task in [
        json!({"do": "llm_conversation", "messages": 3}),
        json!({"do": "llm_tool_conversation"}),
        json!({"do": "llm_flood", "calls": 3}),
        json!({"do": "clock_and_random"}),
        json!({"do": "operation"}),
        json!({"do": "emit_rewards"}),
        json!({"do": "host_calls", "n": 5}),
        json!({"do": "error_text", "text": "failed on purpose", "reward": null}),
        json!({"do": "panic"}),
        json!({"do": "garbage_reward"}),
    ] {
        let ran = run(&agent, task.clone(), echo_llm(), None).await;
        assert!(ran.outcome.recording.is_some(), "{task}: recorded");
        assert_replays_identically(&ran, &agent).await;
    }
}

#[tokio::test]
async fn the_math_example_replays_identically_with_its_resources() {
    let agent = load("examples/math-agent", SandboxPolicy::default());
    let resources = resources_from("examples/math-agent/initial-resources.json");
    let llm = scripted("examples/math-agent/rules.json");
    let ran = run(
        &agent,
        json!({"question": "What is 6 * 7?", "answer": "42"}),
        llm,
        Some(resources),
    )
    .await;
    let tape = tape_of(&ran);
    assert!(
        tape.header.resources.is_some(),
        "the resources the guest could read are on the tape"
    );
    assert!(tape.calls.iter().any(|c| c.call == "llm.chat"));
    assert_replays_identically(&ran, &agent).await;
}

#[tokio::test]
async fn a_guest_sees_the_same_clocks_random_and_context_when_replayed() {
    let agent = probe();
    let ran = run(&agent, json!({"do": "clock_and_random"}), echo_llm(), None).await;
    let seen = |ran: &Ran| -> Value {
        let object = ran.spans_named(semconv::OBJECT_SPAN);
        let text = object[0]
            .attributes
            .get(semconv::OBJECT_JSON)
            .and_then(Value::as_str)
            .unwrap();
        serde_json::from_str(text).unwrap()
    };
    let replayed = replay(&ran, &agent).await;
    assert_eq!(
        seen(&replayed),
        seen(&ran),
        "the same wall clock, monotonic clock and random numbers"
    );
    // And a live re-run of the same attempt, for comparison, sees them too: replay adds nothing.
    assert_eq!(replayed.outcome.replay.unwrap().divergence, None);
}

#[tokio::test]
async fn real_clocks_are_recorded_and_replayed_reading_by_reading() {
    let mut policy = SandboxPolicy::default();
    policy.clock.real = true;
    let agent = load(PROBE, policy);
    let ran = run(&agent, json!({"do": "clock_and_random"}), echo_llm(), None).await;
    let tape = tape_of(&ran);
    assert!(
        !tape.clock.wall.is_empty() && !tape.clock.monotonic.is_empty(),
        "{:?}",
        tape.clock
    );
    // The readings the guest logged are the recorded ones, so a replay (later, on another clock)
    // makes the same request: identical.
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    assert_replays_identically(&ran, &agent).await;
}

#[tokio::test]
async fn a_granted_directory_is_replayed_as_it_was_when_the_attempt_ran() {
    let dir = std::env::temp_dir().join(format!("agl-replay-dir-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("notes.txt"), "as it was when the attempt ran").unwrap();
    std::fs::write(dir.join("sub/more.txt"), "more").unwrap();
    let mut policy = SandboxPolicy::default();
    policy.grants.dirs.push(DirGrant {
        host_path: dir.clone(),
        guest_path: "/data".into(),
        access: DirAccess::ReadOnly,
    });
    let agent = load(PROBE, policy);
    for task in [
        json!({"do": "read_file", "path": "/data/notes.txt"}),
        json!({"do": "list_dir", "path": "/data"}),
    ] {
        std::fs::write(dir.join("notes.txt"), "as it was when the attempt ran").unwrap();
        let ran = run(&agent, task.clone(), echo_llm(), None).await;
        assert_eq!(ran.outcome.reward, Some(1.0), "{task}: {:?}", ran.logs());
        // The directory changes after the run: the replay reads what the attempt read.
        std::fs::write(dir.join("notes.txt"), "changed since").unwrap();
        std::fs::write(dir.join("new.txt"), "new").unwrap();
        assert_replays_identically(&ran, &agent).await;
        std::fs::remove_file(dir.join("new.txt")).unwrap();
    }
    let _ = std::fs::remove_dir_all(dir);
}

fn with_task(mut tape: Tape, task: Value) -> Tape {
    tape.header.task = task.to_string();
    tape
}

#[tokio::test]
async fn a_changed_request_diverges_at_that_call_and_is_never_answered_from_another_record() {
    let agent = probe();
    let store = Arc::new(InMemoryLightningStore::new());
    let ask = |prompt: &str| json!({"do": "llm_once", "prompt": prompt});
    let a = run_in(&store, &agent, ask("question a"), answering("secret-a"), None, None).await;
    let b = run_in(&store, &agent, ask("question b"), answering("secret-b"), None, None).await;
    assert!(format!("{:?}", b.spans).contains("secret-b: question b"));

    // A guest that asks what the other attempt asked gets no answer from that attempt's record.
    let plan = ReplayPlan {
        tape: with_task(tape_of(&a), ask("question b")),
        on_divergence: OnDivergence::Stop,
        fork: None,
    };
    let replayed = replay_with(&a, &agent, plan, Arc::new(NoLlm)).await;
    assert_eq!(replayed.outcome.status, AttemptStatus::Failed);
    let failure = replayed.outcome.failure.clone().unwrap();
    assert!(
        failure.contains("replay diverged at host call #1 (llm.chat)"),
        "{failure}"
    );
    let divergence = replayed.outcome.replay.clone().unwrap().divergence.unwrap();
    assert_eq!(divergence.index, 0);
    assert!(divergence.recorded.unwrap().request.to_string().contains("question a"));
    assert!(divergence.actual.unwrap().request.to_string().contains("question b"));
    assert!(
        !format!("{:?}", replayed.spans).contains("secret-b"),
        "nothing of the other attempt's record reached the guest"
    );
}

#[tokio::test]
async fn past_a_divergence_a_replay_may_go_on_live() {
    let agent = probe();
    let ran = run(
        &agent,
        json!({"do": "llm_once", "prompt": "old"}),
        answering("was"),
        None,
    )
    .await;
    let plan = ReplayPlan {
        tape: with_task(tape_of(&ran), json!({"do": "llm_once", "prompt": "new"})),
        on_divergence: OnDivergence::GoLive,
        fork: None,
    };
    let replayed = replay_with(&ran, &agent, plan, answering("live")).await;
    assert_eq!(
        replayed.outcome.status,
        AttemptStatus::Succeeded,
        "{:?}",
        replayed.outcome.failure
    );
    assert_eq!(replayed.outcome.replay.clone().unwrap().divergence.unwrap().index, 0);
    let made = tape_of(&replayed);
    assert!(made.calls[0].answer.as_ref().unwrap().to_string().contains("live: new"));
}

#[tokio::test]
async fn a_fork_replays_up_to_its_llm_call_then_takes_the_given_reply_and_goes_on_live() {
    let agent = probe();
    let ran = run(&agent, json!({"do": "llm_flood", "calls": 3}), echo_llm(), None).await;
    assert_eq!(tape_of(&ran).llm_calls(), 3);
    let plan = ReplayPlan {
        tape: tape_of(&ran),
        on_divergence: OnDivergence::Stop,
        fork: Some(ForkPoint {
            at_llm_call: 2,
            answer: Some(scripted_answer("what if the model had said this", "scripted")),
        }),
    };
    let forked = replay_with(&ran, &agent, plan, answering("live")).await;
    assert_eq!(
        forked.outcome.status,
        AttemptStatus::Succeeded,
        "{:?}",
        forked.outcome.failure
    );
    let report = forked.outcome.replay.clone().unwrap();
    assert_eq!((report.divergence, report.forked_at), (None, Some(1)));
    let made = tape_of(&forked);
    let answers: Vec<String> = made
        .calls
        .iter()
        .filter(|c| c.call == "llm.chat")
        .map(|c| c.answer.clone().unwrap_or_default().to_string())
        .collect();
    assert!(
        answers[0].contains("\"ok\""),
        "the first call came from the record: {}",
        answers[0]
    );
    assert!(answers[1].contains("what if the model had said this"), "{}", answers[1]);
    assert!(
        answers[2].contains("live:"),
        "the calls after it are live: {}",
        answers[2]
    );
    // The spans before the branch point are the parent's.
    let until_branch = agl_trace::compare::comparable(&ran.spans)
        .iter()
        .position(|s| s.name == agl_trace::names::LLM)
        .map(|first_llm| first_llm + 1);
    assert_eq!(
        agl_trace::compare::first_difference(&ran.spans, &forked.spans, until_branch),
        None
    );
}
