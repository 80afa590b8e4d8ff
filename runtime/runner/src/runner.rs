//! One runner: dequeue a rollout (as its worker), fetch the rollout's resources (by its
//! resources_id, else the latest), run the agent in a fresh instance, and finalize the attempt
//! (`succeeded`, or `failed` with the reason in the attempt's metadata). Spans reach the store
//! through the shared span recorder; the final reward span is written by the host. Heartbeats go
//! out on an interval. Nothing an agent does can stop a runner: every failure ends its attempt.

use crate::hooks::{Hook, Hooks};
use crate::shutdown::Shutdown;
use agl_llm::LlmBackend;
use agl_store::{
    AttemptRef, AttemptStatus, AttemptUpdate, AttemptedRollout, EnqueueRolloutRequest, JsonMap, LightningStore, Mode,
    NamedResources, ResourcesUpdate, RolloutView, StartRolloutRequest, StoreError, WorkerUpdate,
};
use agl_wasm::algorithm::ATTEMPT_FAILURE_KEY;
use agl_wasm::{AgentComponent, AttemptOutcome, AttemptRequest, SpanRecorder};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use thiserror::Error;

/// How a runner polls and reports.
#[derive(Debug, Clone)]
pub struct RunnerOptions {
    /// Interval of heartbeats: the worker's (`update_worker`, with its counts) and the running
    /// attempt's (`update_attempt` with `last_heartbeat_time`), so that an agent waiting on a slow
    /// LLM call is not taken for unresponsive while a dead runner's attempt is.
    pub heartbeat_interval: Duration,
    /// First wait after an empty queue; doubles up to `max_poll_interval` while it stays empty.
    pub min_poll_interval: Duration,
    pub max_poll_interval: Duration,
}

impl Default for RunnerOptions {
    fn default() -> Self {
        Self {
            heartbeat_interval: Duration::from_secs(2),
            min_poll_interval: Duration::from_millis(1),
            max_poll_interval: Duration::from_millis(50),
        }
    }
}

/// Why `step` could not run a rollout (agent failures are not errors: they are outcomes).
#[derive(Debug, Error)]
pub enum RunnerError {
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error("the rollout {0} disappeared from the store")]
    RolloutGone(String),
}

/// What a runner has done so far.
#[derive(Debug, Default)]
pub struct RunnerCounters {
    pub succeeded: AtomicU64,
    pub failed: AtomicU64,
}

impl RunnerCounters {
    pub fn succeeded(&self) -> u64 {
        self.succeeded.load(Ordering::Relaxed)
    }
    pub fn failed(&self) -> u64 {
        self.failed.load(Ordering::Relaxed)
    }
}

/// Executes rollouts with one agent component as one worker.
pub struct Runner {
    store: Arc<dyn LightningStore>,
    agent: Arc<AgentComponent>,
    llm: Arc<dyn LlmBackend>,
    recorder: Arc<SpanRecorder>,
    hooks: Hooks,
    worker_id: Arc<str>,
    options: RunnerOptions,
    counters: Arc<RunnerCounters>,
    /// The attempt running now (rollout id, attempt id), for its heartbeats.
    current: Arc<parking_lot::Mutex<Option<(String, String)>>>,
}

impl Runner {
    pub fn new(
        worker_id: impl Into<Arc<str>>,
        store: Arc<dyn LightningStore>,
        agent: Arc<AgentComponent>,
        llm: Arc<dyn LlmBackend>,
        recorder: Arc<SpanRecorder>,
    ) -> Self {
        let worker_id = worker_id.into();
        let agent_name: Arc<str> = agent.name().into();
        Self {
            store,
            agent,
            llm,
            recorder,
            hooks: Hooks::new(Arc::new([]), worker_id.clone(), agent_name),
            worker_id,
            options: RunnerOptions::default(),
            counters: Arc::default(),
            current: Arc::default(),
        }
    }

    /// Hooks called around every rollout, in this order.
    pub fn with_hooks(mut self, hooks: Arc<[Arc<dyn Hook>]>) -> Self {
        self.hooks = Hooks::new(hooks, self.worker_id.clone(), self.agent.name().into());
        self
    }

    pub fn with_options(mut self, options: RunnerOptions) -> Self {
        self.options = options;
        self
    }

    pub fn worker_id(&self) -> &str {
        &self.worker_id
    }

    pub fn counters(&self) -> Arc<RunnerCounters> {
        self.counters.clone()
    }

    /// Runs rollouts from the queue until `shutdown` stops it. A graceful stop lets the running
    /// attempt finish; a forced one abandons it (failed, "stopped before it finished").
    pub async fn run(&self, shutdown: &Shutdown) {
        let heartbeat = self.spawn_heartbeat(shutdown.clone());
        let mut idle = self.options.min_poll_interval;
        while !shutdown.is_stopping() {
            match self.store.dequeue_rollout(Some(&self.worker_id)).await {
                Ok(Some(rollout)) => {
                    idle = self.options.min_poll_interval;
                    tokio::select! {
                        biased;
                        _ = shutdown.forced() => {
                            self.abandon(&rollout).await;
                            break;
                        }
                        _ = self.execute(&rollout) => {}
                    }
                }
                Ok(None) => {
                    tokio::select! {
                        _ = shutdown.stopping() => break,
                        _ = tokio::time::sleep(idle) => {}
                    }
                    idle = (idle * 2).min(self.options.max_poll_interval);
                }
                Err(e) => {
                    tracing::warn!(worker = %self.worker_id, "dequeue failed: {e}");
                    tokio::select! {
                        _ = shutdown.stopping() => break,
                        _ = tokio::time::sleep(self.options.max_poll_interval) => {}
                    }
                }
            }
        }
        heartbeat.abort();
    }

    /// Online learning: starts a rollout on `input` (with `resources` published as a new
    /// version first, if given), runs it now on this runner, and returns the finished rollout.
    pub async fn step(
        &self,
        input: serde_json::Value,
        resources: Option<NamedResources>,
        mode: Option<Mode>,
    ) -> Result<RolloutView, RunnerError> {
        let mut request = EnqueueRolloutRequest::new(input);
        request.mode = mode;
        if let Some(resources) = resources {
            request.resources_id = Some(self.store.add_resources(resources).await?.resources_id);
        }
        let started = self
            .store
            .start_rollout(StartRolloutRequest {
                rollout: request,
                worker_id: Some(self.worker_id.to_string()),
            })
            .await?;
        self.execute(&started).await;
        let id = &started.rollout.rollout_id;
        self.store
            .get_rollout_by_id(id)
            .await?
            .ok_or_else(|| RunnerError::RolloutGone(id.clone()))
    }

    /// The resources the rollout runs with: its own version, else the latest.
    async fn resources_for(&self, rollout: &AttemptedRollout) -> Result<Option<Arc<ResourcesUpdate>>, String> {
        let found = match &rollout.rollout.resources_id {
            Some(id) => match self.store.get_resources_by_id(id).await {
                Ok(Some(found)) => Some(found),
                Ok(None) => return Err(format!("resources '{id}' not found in the store")),
                Err(e) => return Err(format!("cannot fetch resources '{id}': {e}")),
            },
            None => self
                .store
                .get_latest_resources()
                .await
                .map_err(|e| format!("cannot fetch the latest resources: {e}"))?,
        };
        Ok(found.map(Arc::new))
    }

    /// Runs one attempt to its end and finalizes it in the store.
    async fn execute(&self, rollout: &AttemptedRollout) -> AttemptOutcome {
        let (r, a) = (&rollout.rollout, &rollout.attempt);
        *self.current.lock() = Some((r.rollout_id.clone(), a.attempt_id.clone()));
        let resources = self.resources_for(rollout).await;
        tracing::debug!(worker = %self.worker_id, rollout = %r.rollout_id, attempt = %a.attempt_id, "attempt started");
        self.hooks.rollout_start(r, a);
        let outcome = match resources {
            Ok(resources) => {
                self.agent
                    .run_attempt(AttemptRequest {
                        rollout: r,
                        attempt: a,
                        resources,
                        llm: self.llm.clone(),
                        recorder: &self.recorder,
                        trace_observer: (!self.hooks.is_empty()).then_some(&self.hooks as _),
                    })
                    .await
            }
            Err(reason) => AttemptOutcome::failed_before_start(reason),
        };
        self.finalize(rollout, outcome.status, outcome.failure.as_deref()).await;
        tracing::debug!(worker = %self.worker_id, rollout = %r.rollout_id, attempt = %a.attempt_id,
            status = ?outcome.status, failure = outcome.failure.as_deref().unwrap_or(""), "attempt ended");
        *self.current.lock() = None;
        match outcome.status {
            AttemptStatus::Succeeded => self.counters.succeeded.fetch_add(1, Ordering::Relaxed),
            _ => self.counters.failed.fetch_add(1, Ordering::Relaxed),
        };
        self.hooks.rollout_end(r, a, &outcome);
        outcome
    }

    /// Marks an attempt that was running when a forced stop came as failed.
    async fn abandon(&self, rollout: &AttemptedRollout) {
        self.finalize(
            rollout,
            AttemptStatus::Failed,
            Some("stopped before it finished (forced shutdown)"),
        )
        .await;
        self.counters.failed.fetch_add(1, Ordering::Relaxed);
    }

    async fn finalize(&self, rollout: &AttemptedRollout, status: AttemptStatus, failure: Option<&str>) {
        let mut update = AttemptUpdate::status(status).worker(self.worker_id.to_string());
        if let Some(reason) = failure {
            let mut metadata = JsonMap::new();
            metadata.insert(ATTEMPT_FAILURE_KEY.to_owned(), reason.into());
            update.metadata = Some(Some(metadata));
        }
        let (rollout_id, attempt_id) = (&rollout.rollout.rollout_id, &rollout.attempt.attempt_id);
        if let Err(e) = self
            .store
            .update_attempt(rollout_id, AttemptRef::Id(attempt_id), update)
            .await
        {
            // E.g. the watchdog already ended the attempt (timeout): the store's word stands.
            tracing::warn!(worker = %self.worker_id, rollout = %rollout_id, "cannot finalize attempt {attempt_id}: {e}");
        }
    }

    fn spawn_heartbeat(&self, shutdown: Shutdown) -> tokio::task::JoinHandle<()> {
        let store = self.store.clone();
        let worker_id = self.worker_id.clone();
        let counters = self.counters.clone();
        let current = self.current.clone();
        let interval = self.options.heartbeat_interval;
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(interval);
            loop {
                tokio::select! {
                    _ = shutdown.stopping() => return,
                    _ = ticker.tick() => {}
                }
                let mut stats = JsonMap::new();
                stats.insert("succeeded".into(), counters.succeeded().into());
                stats.insert("failed".into(), counters.failed().into());
                let update = WorkerUpdate {
                    heartbeat_stats: Some(stats),
                };
                if let Err(e) = store.update_worker(&worker_id, update).await {
                    tracing::warn!(worker = %worker_id, "heartbeat failed: {e}");
                }
                let running = current.lock().clone();
                if let Some((rollout_id, attempt_id)) = running {
                    let update = AttemptUpdate {
                        last_heartbeat_time: Some(unix_now()),
                        ..AttemptUpdate::default()
                    };
                    if let Err(e) = store
                        .update_attempt(&rollout_id, AttemptRef::Id(&attempt_id), update)
                        .await
                    {
                        tracing::warn!(worker = %worker_id, "attempt heartbeat failed: {e}");
                    }
                }
            }
        })
    }
}

/// Seconds since the Unix epoch, as the store's times are.
fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}
