//! The example agents (built from `examples/`) run against the scripted backend and against a
//! real OpenAI-compatible HTTP server on loopback; their spans land in the store with the right
//! parents, names and attributes.

use crate::common::*;
use agl_llm::{OpenAiBackend, OpenAiConfig, ScriptedBackend};
use agl_testkit::llm_server::serve;
use agl_wasm::*;
use serde_json::Value;
use std::sync::Arc;

/// One attempt of `task` by the agent of `example` (a folder under examples/), with that
/// example's initial resources.
async fn run_example(example: &str, agent: &AgentComponent, task: &Value, llm: &Arc<dyn agl_llm::LlmBackend>) -> Ran {
    let resources = resources_from(&format!("examples/{example}/initial-resources.json"));
    run(agent, task.clone(), llm.clone(), Some(resources)).await
}

fn dataset(relative: &str) -> Vec<Value> {
    std::fs::read_to_string(repo_path(relative))
        .expect("dataset")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn math_agent_solves_the_val_set_with_the_scripted_model_and_traces_every_call() {
    let agent = load("examples/math-agent", SandboxPolicy::default());
    let llm = scripted("examples/math-agent/rules.json");
    let tasks = dataset("examples/math-agent/data/val.jsonl");
    assert!(tasks.len() >= 5);
    for task in tasks {
        let ran = run_example("math-agent", &agent, &task, &llm).await;
        assert_eq!(
            ran.outcome.status,
            agl_store::AttemptStatus::Succeeded,
            "{:?}",
            ran.outcome.failure
        );
        assert_eq!(ran.outcome.reward, Some(1.0), "task {task}");
        assert_eq!(ran.outcome.llm_calls, 1);
        assert_replays_identically(&ran, &agent).await;

        // One root span per attempt; every other span is a descendant of it.
        let root = ran.root();
        assert_eq!(root.parent_id, None);
        assert_eq!(root.status.status_code, agl_store::StatusCode::Ok);
        assert_eq!(
            root.attributes["agentlightning.rollout_id"],
            ran.rollout.rollout.rollout_id.as_str()
        );
        assert!(root.attributes.contains_key("agl.random_seed"));
        for span in ran.spans.iter().filter(|s| s.span_id != root.span_id) {
            assert_eq!(
                span.parent_id.as_deref(),
                Some(root.span_id.as_str()),
                "{} hangs under the root",
                span.name
            );
            assert_eq!(span.trace_id, root.trace_id);
            assert_eq!(span.attempt_id, ran.rollout.attempt.attempt_id);
        }

        // The LLM span follows the GenAI conventions and carries prompt and completion.
        let llm_span = ran.spans_named("openai.chat.completion");
        assert_eq!(llm_span.len(), 1);
        let attributes = &llm_span[0].attributes;
        assert_eq!(attributes["gen_ai.operation.name"], "chat");
        assert_eq!(attributes["gen_ai.request.model"], "scripted");
        assert!(attributes["gen_ai.usage.input_tokens"].as_i64().unwrap() > 0);
        assert!(attributes["gen_ai.usage.output_tokens"].as_i64().unwrap() > 0);
        let question = task["question"].as_str().unwrap();
        let prompt = attributes
            .iter()
            .filter(|(k, _)| k.starts_with("gen_ai.prompt."))
            .map(|(_, v)| v.to_string())
            .collect::<String>();
        assert!(prompt.contains(question), "the prompt holds the question");
        assert!(
            attributes["gen_ai.completion.0.content"]
                .as_str()
                .unwrap()
                .contains(task["answer"].as_str().unwrap())
        );

        // The reward span is Agent-lightning's.
        let rewards = ran.spans_named("agentlightning.annotation");
        let last = rewards.last().expect("a reward span");
        assert_eq!(last.attributes["agentlightning.reward.0.name"], "primary");
        assert_eq!(last.attributes["agentlightning.reward.0.value"], 1.0);
        assert_eq!(ran.spans_named("agl.resources.format_prompt").len(), 1);

        // Sequence ids are the store's, strictly increasing within the attempt.
        let mut sequence: Vec<u64> = ran.spans.iter().map(|s| s.sequence_id).collect();
        let count = sequence.len();
        sequence.dedup();
        assert_eq!(sequence.len(), count);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn math_agent_works_against_an_openai_compatible_http_server_on_loopback() {
    let scripted = ScriptedBackend::from_file(repo_path("examples/math-agent/rules.json")).unwrap();
    let server = serve(Arc::new(scripted), "127.0.0.1:0".parse().unwrap()).await.unwrap();
    let mut config = OpenAiConfig::new(server.base_url(), "scripted");
    config.api_key = Some("test-key".into());
    let llm: Arc<dyn agl_llm::LlmBackend> = Arc::new(OpenAiBackend::new(config).unwrap());
    let agent = load("examples/math-agent", SandboxPolicy::default());
    let tasks = dataset("examples/math-agent/data/train.jsonl");
    for task in tasks.iter().take(4) {
        let ran = run_example("math-agent", &agent, task, &llm).await;
        assert_eq!(ran.outcome.reward, Some(1.0), "task {task}: {:?}", ran.outcome.failure);
        let llm_span = ran.spans_named("openai.chat.completion");
        assert_eq!(llm_span[0].attributes["gen_ai.response.model"], "scripted");
    }
    assert_eq!(server.chat_requests(), 4, "every call went over HTTP");
    assert_eq!(
        server.last_authorization().as_deref(),
        Some("Bearer test-key"),
        "the host holds the key"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn classifier_agent_scores_what_the_scripted_model_gets_right() {
    let agent = load("examples/classifier-agent", SandboxPolicy::default());
    let llm = scripted("examples/classifier-agent/rules.json");
    let tasks = dataset("examples/classifier-agent/data/val.jsonl");
    let mut total = 0.0;
    for task in &tasks {
        let ran = run_example("classifier-agent", &agent, task, &llm).await;
        assert_eq!(
            ran.outcome.status,
            agl_store::AttemptStatus::Succeeded,
            "{:?}",
            ran.outcome.failure
        );
        total += ran.outcome.reward.expect("a reward");
        assert_replays_identically(&ran, &agent).await;
    }
    let mean = total / tasks.len() as f64;
    assert!(
        mean > 0.0 && mean < 1.0,
        "the scripted model is right on some, not all: {mean}"
    );
}

#[tokio::test]
async fn a_component_compiles_once_and_then_loads_from_the_cache() {
    let dir = tempdir("cache");
    let host = WasmHost::new(EngineOptions {
        cache_dir: Some(dir.clone()),
        ..EngineOptions::default()
    })
    .unwrap();
    let path = guest("tests/guests/probe");
    let first = host.load_agent(&path, SandboxPolicy::default()).unwrap();
    let second = host.load_agent(&path, SandboxPolicy::default()).unwrap();
    assert_eq!(first.load_info().0, Compiled::Fresh);
    assert_eq!(second.load_info().0, Compiled::Cached);
    let ran = run(&second, serde_json::json!({"do": "noop"}), echo_llm(), None).await;
    assert_eq!(ran.outcome.reward, Some(1.0));
    // A corrupt entry is recompiled, not trusted. (Entries are replaced as new files, as the
    // cache itself does: rewriting a file in place under a live mapping would crash its users.)
    drop((first, second));
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, b"not a compiled component").unwrap();
    }
    assert_eq!(
        host.load_agent(&path, SandboxPolicy::default()).unwrap().load_info().0,
        Compiled::Fresh
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_component_of_another_world_is_refused_with_a_clear_error() {
    let Err(error) = host().load_agent(&guest("tests/guests/wrong-world"), SandboxPolicy::default()) else {
        panic!("a wrong-world component must not load");
    };
    assert!(matches!(error, HostError::WrongWorld { .. }), "{error}");
    assert!(error.to_string().contains("agl:agent/agent"), "{error}");
    let error = host()
        .load_agent_bytes(b"\0asm garbage", "junk.wasm", SandboxPolicy::default())
        .err()
        .unwrap();
    assert!(matches!(error, HostError::Compile { .. }), "{error}");
    let error = host()
        .load_agent(std::path::Path::new("/no/such/agent.wasm"), SandboxPolicy::default())
        .err()
        .unwrap();
    assert!(matches!(error, HostError::Read { .. }), "{error}");
}

fn tempdir(tag: &str) -> std::path::PathBuf {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "{tag}-{}-{}",
        std::process::id(),
        fastrand_u64()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn fastrand_u64() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

#[test]
fn a_component_says_whether_it_uses_the_llm() {
    // The CLI refuses a run whose components use the LLM when none is configured.
    let math = load("examples/math-agent", SandboxPolicy::default());
    assert!(math.uses_llm(), "{:?}", math.imports());
    assert!(
        math.imports().iter().any(|i| i.starts_with("agl:agent/resources@")),
        "{:?}",
        math.imports()
    );
    let apo = host()
        .load_algorithm(&guest("plugins/apo"), SandboxPolicy::algorithm_defaults())
        .expect("apo loads");
    assert!(apo.uses_llm(), "{:?}", apo.imports());
    let baseline = host()
        .load_algorithm(&guest("plugins/baseline"), SandboxPolicy::algorithm_defaults())
        .expect("baseline loads");
    // The baseline imports `llm` for the types of `adapter.task`'s transcript only: no call.
    assert!(
        baseline.imports().iter().any(|i| i.starts_with("agl:agent/llm@")),
        "{:?}",
        baseline.imports()
    );
    assert!(!baseline.uses_llm(), "{:?}", baseline.imports());
}
