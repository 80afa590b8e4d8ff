//! One runner: dequeue a rollout (as its worker), fetch the rollout's resources (by its
//! resources_id, else the latest), run the agent in a fresh instance, and finalize the attempt
//! (`succeeded`, or `failed` with the reason in the attempt's metadata). Spans reach the store
//! through the shared span recorder; the final reward span is written by the host. Heartbeats go
//! out on an interval, for as long as an attempt runs, and a runner may give the rollouts it takes
//! a default unresponsive limit (so that its death is noticed). Nothing an agent does can stop a
//! runner: every failure ends its attempt. Starting and stopping N runners is strategy.rs's.

use crate::hooks::{Hook, Hooks};
use crate::llm_capability::{self, IssuedCapability, ProxyCapabilities};
use crate::shutdown::Shutdown;
use agl_llm::LlmBackend;
use agl_store::{
    AttemptRef, AttemptStatus, AttemptUpdate, AttemptedRollout, EnqueueRolloutRequest, JsonMap, LightningStore, Mode,
    NamedResources, ResourcesUpdate, RolloutConfig, RolloutUpdate, RolloutView, StartRolloutRequest, StoreError,
    WorkerUpdate,
};
use agl_wasm::algorithm::ATTEMPT_FAILURE_KEY;
use agl_wasm::tape::TapeMode;
use agl_wasm::{AgentComponent, AttemptOutcome, AttemptRequest, LlmAllowance, SpanRecorder};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use thiserror::Error;

/// How a runner polls and reports.
#[derive(Debug, Clone)]
pub struct RunnerOptions {
    /// Interval of heartbeats: the worker's (`update_worker`, with its counts) and the running
    /// attempt's (`update_attempt` with `last_heartbeat_time`, also while the runner drains after
    /// a graceful stop), so that an agent waiting on a slow LLM call is not taken for unresponsive
    /// while a dead runner's attempt is.
    pub heartbeat_interval: Duration,
    /// The unresponsive limit given to a rollout that has none (`unresponsive_seconds` unset)
    /// when this runner takes it, with `unresponsive` made retryable (see [`liveness_default`]):
    /// runners in another process than the store's set it, so that an attempt whose runner died
    /// is taken back by the store's watchdog instead of staying `running` for ever. `None`: the
    /// rollout's config is left as its algorithm wrote it.
    pub default_unresponsive: Option<Duration>,
    /// First wait after an empty queue; doubles up to `max_poll_interval` while it stays empty.
    pub min_poll_interval: Duration,
    pub max_poll_interval: Duration,
    /// Whether each attempt's recording (everything that entered its guest, for `agl-host
    /// replay` and `fork`) is kept in the store. On by default.
    pub record: bool,
}

impl Default for RunnerOptions {
    fn default() -> Self {
        Self {
            heartbeat_interval: Duration::from_secs(2),
            default_unresponsive: None,
            min_poll_interval: Duration::from_millis(1),
            max_poll_interval: Duration::from_millis(50),
            record: true,
        }
    }
}

/// `config` with a runner's default unresponsive limit, or `None` when it has its own limit (its
/// algorithm decided; left alone). An attempt that goes unresponsive lost its runner, which is no
/// fault of the rollout's: `unresponsive` joins the retry conditions, and a rollout that had no
/// retries at all gets one more attempt for it (its failures still are not retried).
pub(crate) fn liveness_default(config: &RolloutConfig, limit: Duration) -> Option<RolloutConfig> {
    if config.unresponsive_seconds.is_some() {
        return None;
    }
    let mut config = config.clone();
    config.unresponsive_seconds = Some(limit.as_secs_f64());
    if !config.retry_condition.contains(&AttemptStatus::Unresponsive) {
        if config.retry_condition.is_empty() {
            config.max_attempts = config.max_attempts.max(2);
        }
        config.retry_condition.push(AttemptStatus::Unresponsive);
    }
    Some(config)
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
    /// The attempt running now, for its heartbeats.
    current: Arc<parking_lot::Mutex<Option<Running>>>,
    /// The LLM proxy whose per-attempt capabilities the agents get, if any.
    proxy: Option<Arc<dyn ProxyCapabilities>>,
}

/// The attempt a runner is running, as its heartbeats name it.
#[derive(Debug, Clone)]
struct Running {
    rollout_id: String,
    attempt_id: String,
    /// The store's clock minus this machine's, estimated from the attempt's start time when the
    /// runner got it (early by the time the answer took): heartbeats are stamped in the store's
    /// time, so that a runner whose clock is behind is not taken for unresponsive.
    store_clock_offset: f64,
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
            proxy: None,
        }
    }

    /// Agents reach `proxy` only through a capability of their own attempt, handed to them in
    /// their `proxy_llm` resources.
    pub fn with_proxy(mut self, proxy: Option<Arc<dyn ProxyCapabilities>>) -> Self {
        self.proxy = proxy;
        self
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
        // Aborted when dropped: the heartbeat of a runner whose `run` ended or was dropped.
        let _heartbeat = tokio_util::task::AbortOnDropHandle::new(self.spawn_heartbeat());
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

    /// The attempt's capability of the LLM proxy, when its resources have a `proxy_llm` one: the
    /// resources the agent sees (pointed at the capability) and the capability, alive until
    /// dropped.
    async fn with_capability(
        &self,
        rollout: &AttemptedRollout,
        resources: Option<Arc<ResourcesUpdate>>,
        allowance: &Arc<LlmAllowance>,
    ) -> Result<(Option<Arc<ResourcesUpdate>>, Option<IssuedCapability>), String> {
        let (Some(proxy), Some(found)) = (&self.proxy, &resources) else {
            return Ok((resources, None));
        };
        if !llm_capability::has_proxy_llm(found) {
            return Ok((resources, None));
        }
        let (r, a) = (&rollout.rollout, &rollout.attempt);
        let Some(issued) = proxy
            .issue(&r.rollout_id, &a.attempt_id, allowance.clone())
            .await
            .map_err(|e| format!("cannot give the attempt its LLM proxy capability: {e}"))?
        else {
            return Ok((resources, None));
        };
        let seen = llm_capability::pointed_at_capability(found, &issued.endpoint);
        Ok((Some(Arc::new(seen)), Some(issued)))
    }

    /// Runs one attempt to its end and finalizes it in the store.
    async fn execute(&self, rollout: &AttemptedRollout) -> AttemptOutcome {
        let (r, a) = (&rollout.rollout, &rollout.attempt);
        let offset = a.start_time - unix_now();
        *self.current.lock() = Some(Running {
            rollout_id: r.rollout_id.clone(),
            attempt_id: a.attempt_id.clone(),
            store_clock_offset: if offset.is_finite() { offset } else { 0.0 },
        });
        self.apply_liveness_default(rollout).await;
        // One LLM allowance for the attempt, whichever way its agent calls (its `llm` import or
        // the proxy's capability).
        let allowance = Arc::new(LlmAllowance::new(&self.agent.policy().llm));
        let prepared = match self.resources_for(rollout).await {
            Ok(resources) => self.with_capability(rollout, resources, &allowance).await,
            Err(reason) => Err(reason),
        };
        let (resources, capability) = match prepared {
            Ok((resources, capability)) => (Ok(resources), capability),
            Err(reason) => (Err(reason), None),
        };
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
                        llm_allowance: Some(allowance),
                        recorder: &self.recorder,
                        trace_observer: (!self.hooks.is_empty()).then_some(&self.hooks as _),
                        tape: if self.options.record {
                            TapeMode::Record
                        } else {
                            TapeMode::Off
                        },
                    })
                    .await
            }
            Err(reason) => AttemptOutcome::failed_before_start(reason),
        };
        // Kept before the attempt is final: whoever reads a finished attempt finds its recording.
        let mut outcome = outcome;
        if let Some(recording) = outcome.recording.take()
            && let Err(e) = self.store.add_recording(recording).await
        {
            tracing::warn!(worker = %self.worker_id, rollout = %r.rollout_id, "cannot keep the recording of attempt {}: {e}", a.attempt_id);
        }
        // Revoked before the attempt is final: nothing more can be recorded under it.
        drop(capability);
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

    /// Gives the rollout this runner's default unresponsive limit if it has none (see
    /// [`RunnerOptions::default_unresponsive`]). Failing to is logged: the attempt still runs.
    async fn apply_liveness_default(&self, rollout: &AttemptedRollout) {
        let Some(limit) = self.options.default_unresponsive else {
            return;
        };
        let Some(config) = liveness_default(&rollout.rollout.config, limit) else {
            return;
        };
        let rollout_id = &rollout.rollout.rollout_id;
        let update = RolloutUpdate {
            config: Some(config),
            ..RolloutUpdate::default()
        };
        if let Err(e) = self.store.update_rollout(rollout_id, update).await {
            tracing::warn!(worker = %self.worker_id, rollout = %rollout_id,
                "cannot give the rollout the default unresponsive limit ({limit:?}): {e}");
        }
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

    /// Heartbeats until aborted (when [`Self::run`] ends): a draining runner's attempt is alive.
    fn spawn_heartbeat(&self) -> tokio::task::JoinHandle<()> {
        let store = self.store.clone();
        let worker_id = self.worker_id.clone();
        let counters = self.counters.clone();
        let current = self.current.clone();
        let interval = self.options.heartbeat_interval;
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(interval);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticker.tick().await;
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
                if let Some(running) = running {
                    let update = AttemptUpdate {
                        last_heartbeat_time: Some(unix_now() + running.store_clock_offset),
                        ..AttemptUpdate::default()
                    };
                    if let Err(e) = store
                        .update_attempt(&running.rollout_id, AttemptRef::Id(&running.attempt_id), update)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn config(json: serde_json::Value) -> RolloutConfig {
        serde_json::from_value(json).expect("a rollout config")
    }

    #[test]
    fn a_rollout_without_retries_gets_the_limit_and_one_retry_for_an_unresponsive_attempt() {
        let given = liveness_default(&RolloutConfig::default(), Duration::from_secs(30)).expect("a default");
        assert_eq!(given.unresponsive_seconds, Some(30.0));
        assert_eq!(given.max_attempts, 2);
        assert_eq!(given.retry_condition, [AttemptStatus::Unresponsive]);
        assert_eq!(given.timeout_seconds, None);
    }

    #[test]
    fn a_rollout_with_retries_keeps_its_attempts_and_retries_unresponsive_ones_too() {
        let own = config(serde_json::json!({"max_attempts": 3, "retry_condition": ["failed"], "timeout_seconds": 60}));
        let given = liveness_default(&own, Duration::from_millis(1500)).expect("a default");
        assert_eq!(given.unresponsive_seconds, Some(1.5));
        assert_eq!(given.max_attempts, 3);
        assert_eq!(
            given.retry_condition,
            [AttemptStatus::Failed, AttemptStatus::Unresponsive]
        );
        assert_eq!(given.timeout_seconds, Some(60.0));
    }

    #[test]
    fn a_rollout_that_already_retries_unresponsive_attempts_only_gets_the_limit() {
        let own = config(serde_json::json!({"max_attempts": 4, "retry_condition": ["unresponsive"]}));
        let given = liveness_default(&own, Duration::from_secs(30)).expect("a default");
        assert_eq!((given.max_attempts, given.retry_condition.len()), (4, 1));
    }

    #[test]
    fn a_rollout_with_its_own_unresponsive_limit_is_left_alone() {
        let own = config(serde_json::json!({"unresponsive_seconds": 5, "max_attempts": 1}));
        assert_eq!(liveness_default(&own, Duration::from_secs(30)), None);
    }
}
