//! Shared setup of the host's integration tests: guests built once per test binary, one engine,
//! and a helper that runs one attempt against a fresh in-memory store and returns its spans.

use agl_llm::{LlmBackend, ScriptedBackend};
use agl_store::*;
use agl_wasm::*;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// Builds a guest crate (once per test binary) and returns its component.
pub fn guest(relative: &str) -> PathBuf {
    static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let built = BUILT.get_or_init(Default::default);
    let mut built = built.lock().unwrap_or_else(|e| e.into_inner());
    built
        .entry(relative.to_owned())
        .or_insert_with(|| {
            agl_guest_build::build_guest(relative).unwrap_or_else(|e| panic!("building {relative}: {e}"))
        })
        .clone()
}

/// One engine for the whole test binary, with a compile cache under the target dir.
pub fn host() -> &'static WasmHost {
    static HOST: OnceLock<WasmHost> = OnceLock::new();
    HOST.get_or_init(|| {
        let options = EngineOptions {
            cache_dir: Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("component-cache")),
            ..EngineOptions::default()
        };
        WasmHost::new(options).expect("the engine starts")
    })
}

pub fn repo_path(relative: &str) -> PathBuf {
    agl_guest_build::repo_root().join(relative)
}

pub fn scripted(relative_rules: &str) -> Arc<dyn LlmBackend> {
    Arc::new(ScriptedBackend::from_file(repo_path(relative_rules)).expect("rules load"))
}

pub fn scripted_json(json: &str) -> Arc<dyn LlmBackend> {
    Arc::new(ScriptedBackend::from_json_str(json).expect("rules parse"))
}

/// A backend that answers everything with "ok".
pub fn echo_llm() -> Arc<dyn LlmBackend> {
    scripted_json(r#"{"model": "scripted", "rules": [], "fallback": {"reply": "ok"}}"#)
}

pub fn resources_from(relative_json: &str) -> NamedResources {
    let text = std::fs::read_to_string(repo_path(relative_json)).expect("resources file");
    serde_json::from_str(&text).expect("resources parse")
}

pub struct Ran {
    pub outcome: AttemptOutcome,
    pub spans: Vec<Arc<Span>>,
    pub rollout: AttemptedRollout,
    pub store: Arc<InMemoryLightningStore>,
}

impl Ran {
    pub fn spans_named(&self, name: &str) -> Vec<&Arc<Span>> {
        self.spans.iter().filter(|s| s.name == name).collect()
    }

    pub fn root(&self) -> &Arc<Span> {
        self.spans
            .iter()
            .find(|s| s.name == "agentlightning.rollout")
            .expect("a root span")
    }

    /// The text of every log span (a message span with a level).
    pub fn logs(&self) -> Vec<String> {
        self.spans_named(semconv::MESSAGE_SPAN)
            .iter()
            .filter(|s| s.attributes.contains_key(semconv::LOG_LEVEL))
            .filter_map(|s| {
                s.attributes
                    .get(semconv::MESSAGE_BODY)
                    .and_then(|v| v.as_str())
                    .map(str::to_owned)
            })
            .collect()
    }
}

/// Runs one attempt of `agent` on `input` in a fresh store; returns the outcome and the spans.
pub async fn run(
    agent: &AgentComponent,
    input: serde_json::Value,
    llm: Arc<dyn LlmBackend>,
    resources: Option<NamedResources>,
) -> Ran {
    let store = Arc::new(InMemoryLightningStore::new());
    run_in(&store, agent, input, llm, resources, None).await
}

/// Like [`run`] on a given store; `retry_of` starts a new attempt on that rollout instead.
pub async fn run_in(
    store: &Arc<InMemoryLightningStore>,
    agent: &AgentComponent,
    input: serde_json::Value,
    llm: Arc<dyn LlmBackend>,
    resources: Option<NamedResources>,
    retry_of: Option<&str>,
) -> Ran {
    let update = match resources {
        Some(r) => Some(Arc::new(store.add_resources(r).await.expect("resources stored"))),
        None => None,
    };
    let rollout = match retry_of {
        Some(id) => store.start_attempt(id, Some("test-worker")).await.expect("attempt"),
        None => store
            .start_rollout(StartRolloutRequest {
                rollout: EnqueueRolloutRequest::new(input).mode(Mode::Val),
                worker_id: Some("test-worker".into()),
            })
            .await
            .expect("rollout"),
    };
    attempt(store, rollout, agent, update, llm, tape::TapeMode::Record).await
}

/// Runs `rollout`'s attempt of `agent` with `tape` in `store`; returns it with its spans.
async fn attempt(
    store: &Arc<InMemoryLightningStore>,
    rollout: AttemptedRollout,
    agent: &AgentComponent,
    resources: Option<Arc<ResourcesUpdate>>,
    llm: Arc<dyn LlmBackend>,
    tape: tape::TapeMode,
) -> Ran {
    let recorder = SpanRecorder::new(store.clone() as Arc<dyn LightningStore>, Duration::from_millis(50));
    let request = AttemptRequest {
        rollout: &rollout.rollout,
        attempt: &rollout.attempt,
        resources,
        llm,
        llm_allowance: None,
        recorder: &recorder,
        trace_observer: None,
        tape,
    };
    let outcome = agent.run_attempt(request).await;
    assert_eq!(outcome.trace_error, None, "spans reach the store");
    let query = SpanQuery::for_rollout(&rollout.rollout.rollout_id).attempt(&rollout.attempt.attempt_id);
    let spans = store.query_spans(&query).await.expect("spans").items;
    Ran {
        outcome,
        spans,
        rollout,
        store: store.clone(),
    }
}

/// Runs the same attempt again (same rollout, attempt and seed), as a replay would.
pub async fn rerun(previous: &Ran, agent: &AgentComponent, llm: Arc<dyn LlmBackend>) -> Ran {
    let recorder = SpanRecorder::new(
        previous.store.clone() as Arc<dyn LightningStore>,
        Duration::from_millis(50),
    );
    let request = AttemptRequest {
        rollout: &previous.rollout.rollout,
        attempt: &previous.rollout.attempt,
        resources: None,
        llm,
        llm_allowance: None,
        recorder: &recorder,
        trace_observer: None,
        tape: tape::TapeMode::Off,
    };
    let outcome = agent.run_attempt(request).await;
    let query =
        SpanQuery::for_rollout(&previous.rollout.rollout.rollout_id).attempt(&previous.rollout.attempt.attempt_id);
    let all = previous.store.query_spans(&query).await.expect("spans").items;
    let spans = all
        .into_iter()
        .filter(|s| !previous.spans.iter().any(|p| p.span_id == s.span_id))
        .collect();
    Ran {
        outcome,
        spans,
        rollout: previous.rollout.clone(),
        store: previous.store.clone(),
    }
}

pub fn load(relative: &str, policy: SandboxPolicy) -> AgentComponent {
    host()
        .load_agent(&guest(relative), policy)
        .expect("the component loads")
}

/// After an attack, the same host still runs a normal rollout of the probe.
pub async fn still_serves(agent: &AgentComponent) {
    let ran = run(agent, serde_json::json!({"do": "noop"}), echo_llm(), None).await;
    assert_eq!(
        (ran.outcome.status, ran.outcome.reward),
        (AttemptStatus::Succeeded, Some(1.0)),
        "{:?}",
        ran.outcome.failure
    );
}

/// An LLM backend that must not be reached: a replay answers from its tape.
pub struct NoLlm;

#[async_trait::async_trait]
impl agl_llm::LlmBackend for NoLlm {
    async fn chat(&self, _request: &agl_llm::ChatRequest) -> Result<agl_llm::ChatResponse, agl_llm::LlmError> {
        panic!("a replay reached the LLM")
    }

    /// Not the recorded backend's: a replay's requests are still the recorded ones.
    fn default_model(&self) -> &str {
        "no-model"
    }

    fn describe(&self) -> String {
        "no LLM".to_owned()
    }
}

/// The tape `ran` recorded.
pub fn tape_of(ran: &Ran) -> tape::Tape {
    let recording = ran.outcome.recording.as_ref().expect("the attempt was recorded");
    tape::Tape::from_recording(recording).expect("the recording reads back")
}

/// Replays `tape` with `agent` as a new attempt of `previous`'s rollout, with `llm` for what goes
/// live (nothing, unless the plan forks or goes live).
pub async fn replay_with(
    previous: &Ran,
    agent: &AgentComponent,
    plan: tape::ReplayPlan,
    llm: Arc<dyn LlmBackend>,
) -> Ran {
    let store = &previous.store;
    let rollout = store
        .start_attempt(&previous.rollout.rollout.rollout_id, Some("replayer"))
        .await
        .expect("a new attempt");
    attempt(store, rollout, agent, None, llm, tape::TapeMode::Replay(Box::new(plan))).await
}

/// Replays what `ran` recorded, stopping at a divergence, with no LLM.
pub async fn replay(ran: &Ran, agent: &AgentComponent) -> Ran {
    let plan = tape::ReplayPlan {
        tape: tape_of(ran),
        on_divergence: tape::OnDivergence::Stop,
        fork: None,
    };
    replay_with(ran, agent, plan, Arc::new(NoLlm)).await
}

/// `ran`, replayed from its recording, is the same attempt: the same outcome, every call
/// answered from the tape, the same spans up to ids and times.
pub async fn assert_replays_identically(ran: &Ran, agent: &AgentComponent) {
    let replayed = replay(ran, agent).await;
    let report = replayed.outcome.replay.clone().expect("a replay report");
    assert_eq!(report.divergence, None, "{:?}", replayed.outcome.failure);
    assert_eq!(
        report.replayed,
        tape_of(ran).calls.len(),
        "every call came from the tape"
    );
    assert_eq!(
        (
            replayed.outcome.status,
            replayed.outcome.reward,
            &replayed.outcome.failure
        ),
        (ran.outcome.status, ran.outcome.reward, &ran.outcome.failure)
    );
    assert_eq!(
        agl_trace::compare::first_difference(&ran.spans, &replayed.spans, None),
        None
    );
    assert_eq!(
        tape_of(&replayed).calls,
        tape_of(ran).calls,
        "the replay recorded the same calls and answers"
    );
}
