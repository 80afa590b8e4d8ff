//! Hostile guests (the probe component, built from `tests/guests/probe`) against the sandbox:
//! each attack ends its attempt as denied or failed with a clear reason, and the same host then
//! runs a normal rollout correctly.

use crate::common::*;
use agl_store::AttemptStatus;
use agl_wasm::policy::{Grants, Limits};
use agl_wasm::*;
use serde_json::json;
use std::time::Duration;

const PROBE: &str = "tests/guests/probe";

fn probe(policy: SandboxPolicy) -> AgentComponent {
    load(PROBE, policy)
}

fn failure(ran: &Ran) -> &str {
    assert_eq!(ran.outcome.status, AttemptStatus::Failed);
    let reason = ran.outcome.failure.as_deref().expect("a failure reason");
    let root = ran.root();
    assert_eq!(
        root.status.status_code,
        agl_store::StatusCode::Error,
        "the root span is an ERROR span"
    );
    assert_eq!(root.status.description.as_deref(), Some(reason));
    reason
}

#[tokio::test]
async fn an_infinite_loop_is_stopped_at_the_deadline() {
    let deadline = Duration::from_millis(300);
    let agent = probe(SandboxPolicy {
        limits: Limits {
            deadline,
            ..Limits::default()
        },
        ..SandboxPolicy::default()
    });
    let ran = run(&agent, json!({"do": "spin"}), echo_llm(), None).await;
    assert!(failure(&ran).contains("deadline"), "{:?}", ran.outcome.failure);
    // Deadline + one 10 ms tick in principle; the bound here only catches a missing interrupt.
    assert!(
        ran.outcome.elapsed < deadline + Duration::from_secs(3),
        "{:?}",
        ran.outcome.elapsed
    );
    still_serves(&agent).await;
}

fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse::<u64>().ok())
        .unwrap_or(0)
        * 4096
}

#[tokio::test]
async fn a_memory_bomb_hits_the_memory_limit_and_host_memory_stays_bounded() {
    let limit = 64 << 20;
    let agent = probe(SandboxPolicy {
        limits: Limits {
            memory_bytes: limit,
            ..Limits::default()
        },
        ..SandboxPolicy::default()
    });
    let before = resident_bytes();
    for _ in 0..3 {
        let ran = run(&agent, json!({"do": "memory_bomb"}), echo_llm(), None).await;
        let reason = failure(&ran);
        assert!(reason.contains("memory limit of 64 MiB"), "{reason}");
    }
    let grown = resident_bytes().saturating_sub(before);
    assert!(
        grown < 4 * limit,
        "three 64 MiB bombs grew the host by {} MiB",
        grown >> 20
    );
    still_serves(&agent).await;
}

#[tokio::test]
async fn deep_recursion_traps() {
    let agent = probe(SandboxPolicy::default());
    let ran = run(&agent, json!({"do": "deep_recursion"}), echo_llm(), None).await;
    // Rust guests keep their stack in linear memory: it runs into the data below it before the
    // engine's call stack is exhausted; either way the attempt traps with a reason that says so.
    assert!(failure(&ran).contains("recursion"), "{:?}", ran.outcome.failure);
    still_serves(&agent).await;
}

/// Runs a "may it?" probe action; the probe returns 1.0 when the sandbox let it through.
async fn attempt_access(agent: &AgentComponent, task: serde_json::Value) -> (f64, Vec<String>) {
    let ran = run(agent, task.clone(), echo_llm(), None).await;
    assert_eq!(
        ran.outcome.status,
        AttemptStatus::Succeeded,
        "{task}: {:?}",
        ran.outcome.failure
    );
    (ran.outcome.reward.expect("a verdict"), ran.logs())
}

#[tokio::test]
async fn files_env_and_sockets_are_denied_by_default() {
    let agent = probe(SandboxPolicy::default());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    for task in [
        json!({"do": "read_file", "path": "/etc/passwd"}),
        json!({"do": "list_dir", "path": "/"}),
        json!({"do": "read_env"}),
        json!({"do": "read_env", "name": "HOME"}),
        json!({"do": "open_socket", "addr": format!("127.0.0.1:{port}")}),
    ] {
        let (verdict, logs) = attempt_access(&agent, task.clone()).await;
        assert_eq!(verdict, 0.0, "{task} must be denied; the probe logged {logs:?}");
        assert!(logs.iter().any(|l| l.contains("denied")), "{task}: {logs:?}");
    }
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_err(), "no connection reached the host");
    still_serves(&agent).await;
}

#[tokio::test]
async fn granted_env_and_read_only_dirs_are_visible_and_nothing_more() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("grant-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("note.txt"), "hello").unwrap();
    let policy = SandboxPolicy {
        grants: Grants {
            env: vec![EnvGrant::new("AGENT_MODE", "test")],
            dirs: vec![DirGrant {
                host_path: dir.clone(),
                guest_path: "/data".into(),
                access: DirAccess::ReadOnly,
            }],
        },
        ..SandboxPolicy::default()
    };
    let agent = probe(policy);
    assert_eq!(
        attempt_access(&agent, json!({"do": "read_env", "name": "AGENT_MODE"}))
            .await
            .0,
        1.0
    );
    assert_eq!(
        attempt_access(&agent, json!({"do": "read_env", "name": "HOME"}))
            .await
            .0,
        0.0
    );
    assert_eq!(
        attempt_access(&agent, json!({"do": "read_file", "path": "/data/note.txt"}))
            .await
            .0,
        1.0
    );
    assert_eq!(
        attempt_access(&agent, json!({"do": "read_file", "path": "/etc/passwd"}))
            .await
            .0,
        0.0
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn ten_megabytes_of_stdout_are_truncated_not_fatal() {
    let agent = probe(SandboxPolicy::default());
    let ran = run(
        &agent,
        json!({"do": "stdout_flood", "bytes": 10 << 20}),
        echo_llm(),
        None,
    )
    .await;
    assert_eq!(
        ran.outcome.status,
        AttemptStatus::Succeeded,
        "{:?}",
        ran.outcome.failure
    );
    assert_eq!(ran.outcome.stdout.text.len(), 64 << 10);
    assert_eq!(ran.outcome.stdout.dropped_bytes, (10 << 20) - (64 << 10));
    let stdout = ran.spans_named("agl.stdout");
    assert_eq!(stdout.len(), 1);
    assert_eq!(
        stdout[0].attributes["agl.output.dropped_bytes"],
        (10 << 20) - (64 << 10)
    );
    still_serves(&agent).await;
}

#[tokio::test]
async fn an_llm_budget_of_ten_calls_stops_a_thousand_call_flood_after_ten() {
    let mut policy = SandboxPolicy::default();
    policy.llm.budget.max_calls = 10;
    let agent = probe(policy);
    let ran = run(&agent, json!({"do": "llm_flood", "calls": 1000}), echo_llm(), None).await;
    assert_eq!(
        ran.outcome.reward,
        Some(10.0),
        "ten calls succeed: {:?}",
        ran.outcome.failure
    );
    assert_eq!(ran.outcome.llm_calls, 10);
    let llm_spans = ran.spans_named("openai.chat.completion");
    assert_eq!(llm_spans.len(), 11, "ten answers and one refusal are traced");
    let refused = llm_spans
        .iter()
        .find(|s| s.status.status_code == agl_store::StatusCode::Error)
        .expect("a refusal");
    assert_eq!(refused.attributes["error.type"], "budget-exceeded");
    assert!(
        ran.logs().iter().any(|l| l.contains("budget")),
        "the agent saw budget-exceeded: {:?}",
        ran.logs()
    );
    still_serves(&agent).await;
}

#[tokio::test]
async fn a_model_outside_the_policy_is_refused() {
    let agent = probe(SandboxPolicy::default());
    let ran = run(
        &agent,
        json!({"do": "llm_once", "model": "gpt-9-secret"}),
        echo_llm(),
        None,
    )
    .await;
    let span = &ran.spans_named("openai.chat.completion")[0];
    assert_eq!(span.attributes["error.type"], "model-not-allowed");
    assert_eq!(ran.outcome.llm_calls, 0);
}

#[tokio::test]
async fn garbage_results_are_clear_failures() {
    let agent = probe(SandboxPolicy::default());
    let ran = run(&agent, json!({"do": "garbage_reward"}), echo_llm(), None).await;
    assert_eq!(failure(&ran), "the agent returned a bad reward: NaN is not a reward");
    let ran = run(&agent, json!({"do": "huge_error", "bytes": 5 << 20}), echo_llm(), None).await;
    let reason = failure(&ran);
    assert!(
        reason.starts_with("agent error: ") && reason.len() < 8 << 10,
        "clipped to a few KiB: {}",
        reason.len()
    );
    let ran = run(&agent, json!({"do": "panic"}), echo_llm(), None).await;
    assert_eq!(
        failure(&ran),
        "the agent panicked (wasm `unreachable` executed): probe: panic on purpose",
        "the reason quotes the guest's own panic message"
    );
    let ran = run(&agent, json!({"do": "no such action"}), echo_llm(), None).await;
    assert!(failure(&ran).starts_with("agent error"), "{:?}", ran.outcome.failure);
    let ran = run(&agent, json!(["not", "a", "task"]), echo_llm(), None).await;
    assert!(
        failure(&ran).contains("task does not match"),
        "{:?}",
        ran.outcome.failure
    );
    still_serves(&agent).await;
}

#[tokio::test]
async fn named_and_primary_rewards_and_operation_spans_are_traced() {
    let agent = probe(SandboxPolicy::default());
    let ran = run(&agent, json!({"do": "emit_rewards"}), echo_llm(), None).await;
    assert_eq!(
        ran.outcome.reward,
        Some(0.25),
        "no return value: the last primary reward counts"
    );
    let rewards: Vec<(String, f64)> = ran
        .spans_named("agentlightning.annotation")
        .iter()
        .map(|s| {
            let name = s.attributes["agentlightning.reward.0.name"]
                .as_str()
                .unwrap()
                .to_owned();
            (name, s.attributes["agentlightning.reward.0.value"].as_f64().unwrap())
        })
        .collect();
    assert_eq!(rewards, vec![("a".to_string(), 0.5), ("primary".to_string(), 0.25)]);

    let ran = run(&agent, json!({"do": "operation"}), echo_llm(), None).await;
    let operation = ran
        .spans
        .iter()
        .find(|s| s.name == agl_store::semconv::OPERATION_SPAN)
        .expect("the agent's operation span");
    assert_eq!(operation.parent_id.as_deref(), Some(ran.root().span_id.as_str()));
    assert_eq!(
        operation.attributes[agl_store::semconv::OPERATION_NAME],
        "probe-operation"
    );
    assert_eq!(operation.status.status_code, agl_store::StatusCode::Error);
    let children: Vec<&str> = ran
        .spans
        .iter()
        .filter(|s| s.parent_id.as_deref() == Some(operation.span_id.as_str()))
        .map(|s| s.name.as_str())
        .collect();
    assert!(
        children.contains(&"openai.chat.completion") && children.contains(&agl_store::semconv::MESSAGE_SPAN),
        "{children:?}"
    );
}

fn clock_and_random(ran: &Ran) -> serde_json::Value {
    let object = ran.spans_named(agl_store::semconv::OBJECT_SPAN);
    serde_json::from_str(object[0].attributes[agl_store::semconv::OBJECT_JSON].as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn clocks_and_randomness_are_deterministic_per_attempt() {
    let agent = probe(SandboxPolicy::default());
    let store = std::sync::Arc::new(agl_store::InMemoryLightningStore::new());
    let first = run_in(
        &store,
        &agent,
        json!({"do": "clock_and_random"}),
        echo_llm(),
        None,
        None,
    )
    .await;
    let id = first.rollout.rollout.rollout_id.clone();
    // The same attempt replayed (same rollout, same attempt number) sees the same world...
    let seed = first.root().attributes["agl.random_seed"].clone();
    assert_eq!(seed, attempt_seed(&id, 1).to_string());
    let replay = rerun(&first, &agent, echo_llm()).await;
    assert_eq!(
        clock_and_random(&first),
        clock_and_random(&replay),
        "same clocks, same random numbers"
    );
    // ...while a retry draws new random numbers.
    let retry = run_in(&store, &agent, json!(null), echo_llm(), None, Some(&id)).await;
    assert_eq!(retry.rollout.attempt.sequence_id, 2);
    assert_ne!(clock_and_random(&first)["random"], clock_and_random(&retry)["random"]);
    let again = run_in(&store, &agent, json!(null), echo_llm(), None, Some(&id)).await;
    assert_eq!(again.rollout.attempt.sequence_id, 3);
    assert_ne!(clock_and_random(&retry)["random"], clock_and_random(&again)["random"]);
}

/// The scripted "ok" backend behind a real OpenAI-compatible HTTP server on loopback, and a
/// client of it: what reaches the endpoint is counted there.
async fn llm_over_http() -> (
    agl_testkit::llm_server::ServerHandle,
    std::sync::Arc<dyn agl_llm::LlmBackend>,
) {
    let scripted =
        agl_llm::ScriptedBackend::from_json_str(r#"{"model": "scripted", "rules": [], "fallback": {"reply": "ok"}}"#)
            .expect("rules parse");
    let server = agl_testkit::llm_server::serve(std::sync::Arc::new(scripted), "127.0.0.1:0".parse().expect("address"))
        .await
        .expect("server starts");
    let client =
        agl_llm::OpenAiBackend::new(agl_llm::OpenAiConfig::new(server.base_url(), "scripted")).expect("client");
    (server, std::sync::Arc::new(client))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_llm_requests_are_refused_in_the_guest_and_never_reach_the_endpoint() {
    let mut policy = SandboxPolicy::default();
    policy.llm.budget.max_tokens = 10_000;
    let agent = probe(policy);
    let (server, llm) = llm_over_http().await;
    let cases = [
        // 100 MiB of messages against the 4 MiB default.
        (
            json!({"do": "llm_oversized", "message_bytes": 100 << 20}),
            "invalid-request",
            "over the limit",
        ),
        (
            json!({"do": "llm_oversized", "max_tokens": 2_000_000}),
            "invalid-request",
            "max_tokens",
        ),
        (
            json!({"do": "llm_oversized", "max_tokens": 20_000}),
            "budget-exceeded",
            "left in the budget",
        ),
        (json!({"do": "llm_oversized", "tools": 200}), "invalid-request", "tools"),
    ];
    for (task, kind, says) in cases {
        let ran = run(&agent, task.clone(), llm.clone(), None).await;
        assert_eq!(ran.outcome.reward, Some(0.0), "{task}: refused: {:?}", ran.logs());
        let refusal = ran
            .logs()
            .into_iter()
            .find(|l| l.starts_with("llm_oversized: refused"))
            .expect("the guest saw an llm error");
        assert!(refusal.contains(says), "{task}: {refusal}");
        let span = &ran.spans_named("openai.chat.completion")[0];
        assert_eq!(span.attributes["error.type"], kind, "{task}");
        assert_eq!(ran.outcome.llm_calls, 0, "{task}: not counted as a call");
        assert_eq!(server.chat_requests(), 0, "{task}: nothing reached the endpoint");
    }
    // The same agent's reasonable request does go out.
    let ran = run(
        &agent,
        json!({"do": "llm_oversized", "message_bytes": 1 << 20, "max_tokens": 512, "tools": 4}),
        llm,
        None,
    )
    .await;
    assert_eq!(ran.outcome.reward, Some(1.0), "{:?}", ran.logs());
    assert_eq!(server.chat_requests(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn long_conversations_keep_their_completion_and_record_what_was_left_out() {
    let agent = probe(SandboxPolicy::default());
    for (messages, dropped) in [(100, None), (300, Some(300 - 128))] {
        let ran = run(
            &agent,
            json!({"do": "llm_conversation", "messages": messages}),
            echo_llm(),
            None,
        )
        .await;
        assert_eq!(ran.outcome.reward, Some(1.0), "{:?}", ran.outcome.failure);
        let span = &ran.spans_named(agl_store::semconv::LLM_SPAN)[0];
        assert_eq!(span.attributes[agl_store::semconv::LLM_PROMPT_MESSAGES], messages);
        assert_eq!(
            span.attributes
                .get(agl_store::semconv::LLM_PROMPT_MESSAGES_DROPPED)
                .and_then(|v| v.as_u64()),
            dropped
        );
        let triplets = agl_adapter::triplets(&ran.spans);
        assert_eq!(triplets.len(), 1);
        assert_eq!(
            triplets[0].response, "ok",
            "the completion survives {messages} messages"
        );
        assert_eq!(triplets[0].prompt.len(), messages.min(128));
        assert_eq!(triplets[0].prompt[0].content, "system 0");
        assert_eq!(
            triplets[0].prompt.last().map(|m| m.content.clone()),
            Some(format!("user {}", messages - 1)),
            "the last message is kept"
        );
        assert_eq!(triplets[0].reward, Some(1.0));
    }
}
