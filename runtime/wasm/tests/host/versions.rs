//! Every version of the WIT: components built against `agl:agent@0.1.0` and `@0.2.0` (from the
//! last commit before the next version, kept in `tests/fixtures/agl-agent-0.1.0/` and
//! `agl-agent-0.2.0/`) run unchanged beside 0.3.0 ones, and assistant tool calls (0.2.0) reach the
//! LLM span and the adapter's conversations.

use crate::common::*;
use agl_store::AttemptStatus;
use agl_wasm::*;
use serde_json::json;

fn fixture(name: &str) -> AgentComponent {
    fixture_of("0.1.0", name)
}

fn fixture_of(version: &str, name: &str) -> AgentComponent {
    host()
        .load_agent(
            &repo_path(&format!("tests/fixtures/agl-agent-{version}/{name}")),
            SandboxPolicy::default(),
        )
        .unwrap_or_else(|e| panic!("a {version} component loads: {e}"))
}

#[test]
fn the_fixtures_import_versions_0_1_0_and_0_2_0_and_the_probe_0_3_0() {
    let v2 = fixture_of("0.2.0", "probe.wasm");
    assert!(
        v2.imports().iter().any(|i| i == "agl:agent/reward@0.2.0"),
        "{:?}",
        v2.imports()
    );
    let v2_baseline = host()
        .load_algorithm(
            &repo_path("tests/fixtures/agl-agent-0.2.0/agl_baseline.wasm"),
            SandboxPolicy::algorithm_defaults(),
        )
        .expect("a 0.2.0 algorithm loads");
    assert!(
        v2_baseline.imports().iter().any(|i| i == "agl:agent/adapter@0.2.0"),
        "{:?}",
        v2_baseline.imports()
    );
    let old = fixture("probe.wasm");
    assert!(
        old.imports().iter().any(|i| i == "agl:agent/llm@0.1.0"),
        "{:?}",
        old.imports()
    );
    let new = load("tests/guests/probe", SandboxPolicy::default());
    assert!(
        new.imports().iter().any(|i| i == "agl:agent/llm@0.3.0"),
        "{:?}",
        new.imports()
    );
    assert!(old.uses_llm() && new.uses_llm());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_0_1_0_math_agent_solves_its_task_as_before() {
    let agent = fixture("math_agent.wasm");
    let llm = scripted("examples/math-agent/rules.json");
    let resources = resources_from("examples/math-agent/initial-resources.json");
    let task =
        json!({"question": "Noah had 64 marbles and won 29 more. How many marbles does he have?", "answer": "93"});
    let ran = run(&agent, task, llm, Some(resources)).await;
    assert_eq!(
        ran.outcome.status,
        AttemptStatus::Succeeded,
        "{:?}",
        ran.outcome.failure
    );
    assert_eq!(ran.outcome.reward, Some(1.0));
    assert_eq!(ran.outcome.llm_calls, 1);
    assert_eq!(ran.spans_named("agl.resources.format_prompt").len(), 1);
    let llm_span = ran.spans_named("openai.chat.completion");
    assert_eq!(llm_span.len(), 1);
    assert!(
        llm_span[0].attributes["gen_ai.prompt.0.content"]
            .as_str()
            .is_some_and(|p| p.contains("Noah had 64 marbles"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_0_1_0_probe_uses_every_import_and_survives_a_trap() {
    let agent = fixture("probe.wasm");
    let ran = run(&agent, json!({"do": "operation"}), echo_llm(), None).await;
    assert_eq!(
        ran.outcome.status,
        AttemptStatus::Succeeded,
        "{:?}",
        ran.outcome.failure
    );
    let operation = ran.spans_named(agl_store::semconv::OPERATION_SPAN);
    assert_eq!(operation.len(), 1);
    assert_eq!(
        operation[0].attributes[agl_store::semconv::OPERATION_NAME],
        "probe-operation"
    );
    assert_eq!(operation[0].status.status_code, agl_store::StatusCode::Error);
    let llm_span = ran.spans_named("openai.chat.completion");
    assert_eq!(llm_span.len(), 1);
    assert_eq!(llm_span[0].parent_id.as_deref(), Some(operation[0].span_id.as_str()));

    let ran = run(&agent, json!({"do": "emit_rewards"}), echo_llm(), None).await;
    assert_eq!(ran.outcome.reward, Some(0.25));

    let ran = run(
        &agent,
        json!({"do": "llm_conversation", "messages": 3}),
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
    let llm_span = ran.spans_named("openai.chat.completion");
    assert_eq!(llm_span[0].attributes["gen_ai.prompt.1.role"], "assistant");

    let ran = run(&agent, json!({"do": "panic"}), echo_llm(), None).await;
    assert_eq!(ran.outcome.status, AttemptStatus::Failed);
    still_serves(&agent).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_0_2_0_math_agent_and_probe_run_as_before() {
    let agent = fixture_of("0.2.0", "math_agent.wasm");
    let llm = scripted("examples/math-agent/rules.json");
    let resources = resources_from("examples/math-agent/initial-resources.json");
    let task =
        json!({"question": "Noah had 64 marbles and won 29 more. How many marbles does he have?", "answer": "93"});
    let ran = run(&agent, task, llm, Some(resources)).await;
    assert_eq!(
        ran.outcome.status,
        AttemptStatus::Succeeded,
        "{:?}",
        ran.outcome.failure
    );
    assert_eq!(ran.outcome.reward, Some(1.0));

    let probe = fixture_of("0.2.0", "probe.wasm");
    let ran = run(&probe, json!({"do": "emit_rewards"}), echo_llm(), None).await;
    assert_eq!(ran.outcome.reward, Some(0.25));
    assert!(agl_adapter::feedback(&ran.spans).is_empty());
    let ran = run(&probe, json!({"do": "llm_tool_conversation"}), echo_llm(), None).await;
    assert_eq!(
        ran.outcome.status,
        AttemptStatus::Succeeded,
        "{:?}",
        ran.outcome.failure
    );
    let llm_span = ran.spans_named("openai.chat.completion");
    assert_eq!(llm_span[0].attributes["gen_ai.prompt.1.tool_calls.0.id"], "call-1");
    let ran = run(&probe, json!({"do": "panic"}), echo_llm(), None).await;
    assert_eq!(ran.outcome.status, AttemptStatus::Failed);
    still_serves(&probe).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assistant_tool_calls_reach_the_llm_span_and_the_adapters_conversation() {
    let agent = load("tests/guests/probe", SandboxPolicy::default());
    let ran = run(&agent, json!({"do": "llm_tool_conversation"}), echo_llm(), None).await;
    assert_eq!(
        ran.outcome.status,
        AttemptStatus::Succeeded,
        "{:?}",
        ran.outcome.failure
    );
    let llm_span = ran.spans_named("openai.chat.completion");
    let attributes = &llm_span[0].attributes;
    assert_eq!(attributes["gen_ai.prompt.1.role"], "assistant");
    assert_eq!(attributes["gen_ai.prompt.1.tool_calls.0.id"], "call-1");
    assert_eq!(attributes["gen_ai.prompt.1.tool_calls.0.name"], "add");
    assert_eq!(
        attributes["gen_ai.prompt.1.tool_calls.0.arguments"],
        r#"{"a": 2, "b": 3}"#
    );
    assert_eq!(attributes["gen_ai.prompt.2.role"], "tool");
    assert_eq!(attributes["gen_ai.prompt.2.tool_call_id"], "call-1");

    let conversations = agl_adapter::messages(&ran.spans);
    let assistant = &conversations[0][1];
    assert_eq!(assistant.role, "assistant");
    assert_eq!(assistant.tool_calls.len(), 1);
    assert_eq!(
        (
            assistant.tool_calls[0].id.as_str(),
            assistant.tool_calls[0].name.as_str()
        ),
        ("call-1", "add")
    );
}
