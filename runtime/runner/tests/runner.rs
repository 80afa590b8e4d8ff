//! Runner and trainer against real components (the probe agent, the baseline plugin) and the
//! in-memory store: hook order, step(), heartbeats, a dead runner's attempt taken back and run
//! again, a whole fit.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test: a failed step panics and fails it"
)]

use agl_llm::{ChatRequest, ChatResponse, LlmBackend, LlmError, ScriptedBackend};
use agl_runner::{
    ExecutionStrategy, FitRequest, FitStatus, Hook, HookContext, InProcessRunners, Runner, RunnerOptions, Shutdown,
    Trainer, TrainerOptions,
};
use agl_store::{
    AttemptQuery, AttemptStatus, EnqueueRolloutRequest, InMemoryLightningStore, LightningStore, Mode, NamedResources,
    RolloutStatus,
};
use agl_wasm::{
    AgentComponent, AttemptOutcome, EngineOptions, RecordingObserver, SandboxPolicy, SpanRecorder, WasmHost,
};
use parking_lot::Mutex;
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

fn host() -> &'static WasmHost {
    static HOST: OnceLock<WasmHost> = OnceLock::new();
    HOST.get_or_init(|| WasmHost::new(EngineOptions::default()).expect("engine"))
}

fn probe() -> Arc<AgentComponent> {
    let path = agl_guest_build::build_guest("tests/guests/probe").expect("probe builds");
    Arc::new(host().load_agent(&path, SandboxPolicy::default()).expect("probe loads"))
}

fn llm() -> Arc<ScriptedBackend> {
    let rules = agl_guest_build::repo_root().join("examples/math-agent/rules.json");
    Arc::new(ScriptedBackend::from_file(rules).expect("rules"))
}

fn setup() -> (Arc<dyn LightningStore>, Runner) {
    let store: Arc<dyn LightningStore> = Arc::new(InMemoryLightningStore::new());
    let recorder = Arc::new(SpanRecorder::new(store.clone(), Duration::from_millis(20)));
    let runner = Runner::new("w-1", store.clone(), probe(), llm(), recorder);
    (store, runner)
}

fn prompt_resources() -> NamedResources {
    serde_json::from_value(
        json!({"prompt": {"resource_type": "prompt_template", "template": "{x}", "engine": "f-string"}}),
    )
    .expect("resources")
}

/// Records every hook call as "<event> <rollout id>".
#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl Hook for Recorder {
    fn on_rollout_start(&self, ctx: &HookContext<'_>) {
        self.0.lock().push(format!("rollout_start {}", ctx.rollout.rollout_id));
    }
    fn on_trace_start(&self, ctx: &HookContext<'_>) {
        self.0.lock().push(format!("trace_start {}", ctx.rollout.rollout_id));
    }
    fn on_trace_end(&self, ctx: &HookContext<'_>) {
        self.0.lock().push(format!("trace_end {}", ctx.rollout.rollout_id));
    }
    fn on_rollout_end(&self, ctx: &HookContext<'_>, outcome: &AttemptOutcome) {
        assert_eq!(ctx.worker_id, "w-1");
        self.0
            .lock()
            .push(format!("rollout_end {} {:?}", ctx.rollout.rollout_id, outcome.status));
    }
}

/// Runs the runner until the store has no queued rollouts left, then stops it.
async fn drain(store: &Arc<dyn LightningStore>, runner: &Runner, ids: &[String]) {
    let shutdown = Shutdown::new();
    let stopper = {
        let (store, ids, shutdown) = (store.clone(), ids.to_vec(), shutdown.clone());
        tokio::spawn(async move {
            store
                .wait_for_rollouts(&ids, Some(Duration::from_secs(60)))
                .await
                .expect("wait");
            shutdown.stop();
        })
    };
    runner.run(&shutdown).await;
    stopper.await.expect("stopper");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_are_called_in_the_order_of_the_hooks_diagram() {
    let (store, runner) = setup();
    let recorder = Arc::new(Recorder::default());
    let runner = runner.with_hooks(Arc::new([recorder.clone() as Arc<dyn Hook>]));
    let enqueued = store
        .enqueue_rollouts(vec![
            EnqueueRolloutRequest::new(json!({"do": "noop"})),
            EnqueueRolloutRequest::new(json!({"do": "panic"})),
        ])
        .await
        .expect("enqueue");
    let ids: Vec<String> = enqueued.iter().map(|r| r.rollout_id.clone()).collect();
    drain(&store, &runner, &ids).await;
    let (a, b) = (&ids[0], &ids[1]);
    assert_eq!(
        *recorder.0.lock(),
        [
            format!("rollout_start {a}"),
            format!("trace_start {a}"),
            format!("trace_end {a}"),
            format!("rollout_end {a} Succeeded"),
            format!("rollout_start {b}"),
            format!("trace_start {b}"),
            format!("trace_end {b}"),
            format!("rollout_end {b} Failed"),
        ]
    );
    let failed = store.get_latest_attempt(b).await.expect("query").expect("attempt");
    assert_eq!(failed.status, AttemptStatus::Failed);
    let reason = agl_wasm::algorithm::attempt_failure(&failed).expect("a failure reason");
    assert!(reason.contains("panicked"), "{reason}");
    assert_eq!(runner.counters().succeeded(), 1);
    assert_eq!(runner.counters().failed(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn step_runs_one_rollout_now_with_the_given_resources() {
    let (store, runner) = setup();
    let view = runner
        .step(
            json!({"do": "reward", "value": 0.25}),
            Some(prompt_resources()),
            Some(Mode::Val),
        )
        .await
        .expect("step");
    assert_eq!(view.rollout.status, RolloutStatus::Succeeded);
    assert_eq!(view.rollout.mode, Some(Mode::Val));
    let resources_id = view.rollout.resources_id.clone().expect("resources id");
    assert!(store.get_resources_by_id(&resources_id).await.expect("query").is_some());
    let attempt = view.attempt.expect("attempt");
    assert_eq!(attempt.worker_id.as_deref(), Some("w-1"));
    let spans = store
        .query_spans(&agl_store::SpanQuery::for_rollout(view.rollout.rollout_id.clone()))
        .await
        .expect("spans");
    assert_eq!(agl_adapter::final_reward(&spans.items), Some(0.25));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_runner_sends_heartbeats_with_its_counts() {
    let (store, runner) = setup();
    let runner = runner.with_options(RunnerOptions {
        heartbeat_interval: Duration::from_millis(10),
        ..RunnerOptions::default()
    });
    let rollout = store
        .enqueue_rollout(EnqueueRolloutRequest::new(json!({"do": "noop"})))
        .await
        .expect("enqueue");
    let ids = vec![rollout.rollout_id.clone()];
    let shutdown = Shutdown::new();
    let run = runner.run(&shutdown);
    let check = async {
        store
            .wait_for_rollouts(&ids, Some(Duration::from_secs(60)))
            .await
            .expect("wait");
        tokio::time::sleep(Duration::from_millis(60)).await;
        shutdown.stop();
    };
    tokio::join!(run, check);
    let worker = store.get_worker_by_id("w-1").await.expect("query").expect("worker");
    assert!(worker.last_heartbeat_time.is_some(), "{worker:?}");
    let stats = worker.heartbeat_stats.expect("stats");
    assert_eq!(stats["succeeded"], 1, "{stats:?}");
    assert_eq!(stats["failed"], 0, "{stats:?}");
}

/// An LLM whose first call never returns (its agent waits, alive); later calls answer "ok".
struct StallsFirst {
    calls: AtomicU64,
    stalled: tokio::sync::Notify,
    answers: ScriptedBackend,
}

impl StallsFirst {
    fn new() -> Self {
        let rules = r#"{"rules": [], "fallback": {"reply": "ok"}}"#;
        Self {
            calls: AtomicU64::new(0),
            stalled: tokio::sync::Notify::new(),
            answers: ScriptedBackend::from_json_str(rules).expect("rules"),
        }
    }
}

#[async_trait::async_trait]
impl LlmBackend for StallsFirst {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
            self.stalled.notify_one();
            std::future::pending::<()>().await;
        }
        self.answers.chat(request).await
    }
    fn default_model(&self) -> &str {
        self.answers.default_model()
    }
    fn describe(&self) -> String {
        "an LLM whose first call never returns".into()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_runners_attempt_goes_unresponsive_and_its_rollout_runs_again_on_another_runner() {
    let store: Arc<dyn LightningStore> = Arc::new(InMemoryLightningStore::new());
    let recorder = Arc::new(SpanRecorder::new(store.clone(), Duration::from_millis(20)));
    let llm = Arc::new(StallsFirst::new());
    let options = RunnerOptions {
        heartbeat_interval: Duration::from_millis(50),
        default_unresponsive: Some(Duration::from_secs(1)),
        ..RunnerOptions::default()
    };
    let runner = |name: &str| {
        Runner::new(name, store.clone(), probe(), llm.clone(), recorder.clone()).with_options(options.clone())
    };
    // The algorithm set no unresponsive limit, nor retries.
    let rollout = store
        .enqueue_rollout(EnqueueRolloutRequest::new(json!({"do": "llm_once", "prompt": "hi"})))
        .await
        .expect("enqueue");
    let id = rollout.rollout_id.clone();
    let first = runner("w-a");
    let dies = tokio::spawn(async move { first.run(&Shutdown::new()).await });
    tokio::time::timeout(Duration::from_secs(120), llm.stalled.notified())
        .await
        .expect("the agent calls the LLM");

    // The runner gave the rollout its default limit, and a retry for an unresponsive attempt.
    let config = store
        .get_rollout_by_id(&id)
        .await
        .expect("query")
        .expect("rollout")
        .rollout
        .config;
    assert_eq!(config.unresponsive_seconds, Some(1.0), "{config:?}");
    assert_eq!(
        (config.max_attempts, config.retry_condition),
        (2, vec![AttemptStatus::Unresponsive])
    );
    // Silent for longer than the limit, the agent is still alive: its runner's heartbeats say so.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let attempt = store.get_latest_attempt(&id).await.expect("query").expect("attempt");
    // (`preparing` until its first span, which the LLM call has not made yet.)
    assert!(
        matches!(attempt.status, AttemptStatus::Preparing | AttemptStatus::Running),
        "{attempt:?}"
    );

    // The runner dies: no more heartbeats, no final status. Another runner takes the rollout over.
    dies.abort();
    let _ = dies.await;
    let second = runner("w-b");
    drain(&store, &second, std::slice::from_ref(&id)).await;
    let view = store.get_rollout_by_id(&id).await.expect("query").expect("rollout");
    assert_eq!(view.rollout.status, RolloutStatus::Succeeded, "{view:?}");
    let attempts = store
        .query_attempts(&id, &AttemptQuery::default())
        .await
        .expect("attempts")
        .items;
    let seen: Vec<(AttemptStatus, Option<&str>)> =
        attempts.iter().map(|a| (a.status, a.worker_id.as_deref())).collect();
    assert_eq!(
        seen,
        [
            (AttemptStatus::Unresponsive, Some("w-a")),
            (AttemptStatus::Succeeded, Some("w-b"))
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fit_runs_the_baseline_with_two_runners_to_completion() {
    let store: Arc<dyn LightningStore> = Arc::new(InMemoryLightningStore::new());
    let algo_path = agl_guest_build::build_guest("plugins/baseline").expect("baseline builds");
    let algorithm = host()
        .load_algorithm(&algo_path, SandboxPolicy::algorithm_defaults())
        .expect("baseline loads");
    let observer = Arc::new(RecordingObserver::default());
    let trainer = Trainer::new(
        store.clone(),
        ExecutionStrategy::InProcess(InProcessRunners::new(probe(), llm(), 2)),
        Arc::new(algorithm),
        llm(),
        observer.clone(),
        TrainerOptions::default(),
    );
    let task = |value: f64| json!({"do": "reward", "value": value}).to_string();
    let request = FitRequest {
        config_json: "{}".into(),
        train: vec![task(1.0), task(0.0), task(0.5), task(0.5)],
        val: vec![task(0.25), json!({"do": "panic"}).to_string()],
        seed: 7,
        initial_resources: Some(prompt_resources()),
    };
    let report = trainer.fit(request, &Shutdown::new()).await.expect("fit");
    assert_eq!(report.status, FitStatus::Completed, "{report:?}");
    assert_eq!(report.attempts, Some((5, 1)));
    assert!(!report.forced);
    let best = observer.recorded().best.expect("the baseline reports a best result");
    // val: 0.25 and a failure counted as 0.
    assert_eq!(best.score, 0.125);
    assert!(best.resources_id.is_some());
    let summary = report.algorithm.expect("outcome").result.expect("summary");
    assert_eq!(summary["train"]["mean_reward"], 0.5, "{summary:#}");
    let stats = store.statistics().await.expect("stats");
    assert_eq!(stats.total_rollouts, 6);
}
