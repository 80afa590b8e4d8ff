//! Execution strategies: who runs the rollouts, how they are started, and the one loop that stops
//! them. [`ExecutionStrategy`] is what the trainer (`agl-host run`) and `agl-host runner` start:
//! runners as tasks of this process on a store (shared memory; or an HTTP client of a store served
//! elsewhere), runner processes pointed at a store's URL (client-server), or runners that others
//! own. [`Fleet::drain`] is the stop: take no new work, finish what runs, abandon it when forced or
//! when time is up. Serving the store and what a runner process's command line is are the caller's
//! (a [`RunnerLauncher`]); this module supervises what it starts.

use crate::hooks::Hook;
use crate::llm_capability::ProxyCapabilities;
use crate::runner::{Runner, RunnerCounters, RunnerOptions};
use crate::shutdown::Shutdown;
use agl_llm::LlmBackend;
use agl_store::LightningStore;
use agl_wasm::{AgentComponent, SpanExport, SpanRecorder};
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;
use tokio::task::JoinSet;

/// Who executes the rollouts, and how they are started and stopped.
#[derive(Clone)]
pub enum ExecutionStrategy {
    /// Runners as tasks of this process, on the store they are started on: Agent-lightning's
    /// shared-memory strategy (`run`'s in-memory store), or the runner side of client-server
    /// (`agl-host runner`, on an HTTP client of the store).
    InProcess(InProcessRunners),
    /// Runner processes pointed at a store's URL: the algorithm side of client-server.
    Processes(RunnerProcesses),
    /// Runners that others start and stop (`agl-host run --store URL`): nothing to do here.
    External,
}

/// `count` runners in this process, named `PREFIX` when alone, else `PREFIX-1`, `PREFIX-2`, ...
#[derive(Clone)]
pub struct InProcessRunners {
    pub agent: Arc<AgentComponent>,
    /// The agents' LLM.
    pub llm: Arc<dyn LlmBackend>,
    /// Runners (at least one is started).
    pub count: usize,
    pub worker_prefix: String,
    pub options: RunnerOptions,
    /// Called around every rollout of every runner.
    pub hooks: Arc<[Arc<dyn Hook>]>,
    /// How often the runners' buffered spans are flushed to the store.
    pub span_flush_interval: Duration,
    /// Where the runners' spans also go (e.g. an OTLP exporter), besides the store.
    pub span_export: Option<SpanExport>,
    /// The LLM proxy the agents reach through per-attempt capabilities, if the run serves one.
    pub proxy: Option<Arc<dyn ProxyCapabilities>>,
}

impl InProcessRunners {
    /// `count` runners of `agent` named `runner`, `runner-1`, ..., with the default options and no
    /// hooks.
    pub fn new(agent: Arc<AgentComponent>, llm: Arc<dyn LlmBackend>, count: usize) -> Self {
        Self {
            agent,
            llm,
            count,
            worker_prefix: "runner".to_owned(),
            options: RunnerOptions::default(),
            hooks: Arc::new([]),
            span_flush_interval: Duration::from_millis(100),
            span_export: None,
            proxy: None,
        }
    }

    /// The worker id of runner `index` (1-based).
    pub fn worker_id(&self, index: usize) -> String {
        if self.count <= 1 {
            self.worker_prefix.clone()
        } else {
            format!("{}-{index}", self.worker_prefix)
        }
    }
}

/// `count` runner processes against the store at `store_url`, started by `launcher`.
#[derive(Clone)]
pub struct RunnerProcesses {
    pub store_url: String,
    /// Processes (at least one is started).
    pub count: usize,
    pub launcher: Arc<dyn RunnerLauncher>,
    /// Once asked to stop, how long the processes may take before they are killed. They apply
    /// their own grace period to their running attempts: this is the backstop for one that hangs.
    pub stop_timeout: Duration,
}

/// Starts runner processes (the CLI: `agl-host runner --store URL ...`).
pub trait RunnerLauncher: Send + Sync {
    /// Starts runner process `index` (1, 2, ...) against the store at `store_url`; the error says
    /// why it could not.
    fn launch(&self, index: usize, store_url: &str) -> Result<Box<dyn RunnerProcess>, String>;
}

/// One started runner process, as the strategy drives it.
#[async_trait::async_trait]
pub trait RunnerProcess: Send {
    /// Asks it to finish its running attempts and exit (SIGTERM).
    fn stop(&mut self);
    /// Ends it now (SIGKILL).
    fn kill(&mut self);
    /// Waits for it to exit (cancel-safe).
    async fn wait(&mut self) -> std::io::Result<ExitStatus>;
}

#[derive(Debug, Error)]
pub enum StrategyError {
    #[error("cannot start runner process {index}: {reason}")]
    Launch { index: usize, reason: String },
}

/// The runners a strategy started; [`Fleet::drain`] is how they stop.
pub struct Fleet {
    tasks: JoinSet<()>,
    /// The runners' own stop: a child of the caller's shutdown, also stopped by `drain`.
    stop: Shutdown,
    /// In-process runners' counts and span recorder.
    counters: Option<Vec<Arc<RunnerCounters>>>,
    recorder: Option<Arc<SpanRecorder>>,
    /// Runner processes' backstop (see [`RunnerProcesses::stop_timeout`]).
    stop_timeout: Option<Duration>,
}

/// How a fleet stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drained {
    /// Whether running attempts (or processes) had to be abandoned.
    pub forced: bool,
    /// Attempts the in-process runners finished, (succeeded, failed); `None` for other runners.
    pub attempts: Option<(u64, u64)>,
}

impl ExecutionStrategy {
    /// Starts the runners: in-process ones on `store`, processes against their URL. They run until
    /// `shutdown` stops them or [`Fleet::drain`] does. Must be called within a tokio runtime.
    pub fn start(&self, store: &Arc<dyn LightningStore>, shutdown: &Shutdown) -> Result<Fleet, StrategyError> {
        let mut fleet = Fleet {
            tasks: JoinSet::new(),
            stop: shutdown.child(),
            counters: None,
            recorder: None,
            stop_timeout: None,
        };
        match self {
            ExecutionStrategy::InProcess(spec) => {
                let recorder = Arc::new(SpanRecorder::with_export(
                    store.clone(),
                    spec.span_flush_interval,
                    spec.span_export.clone(),
                ));
                let mut counters = Vec::new();
                for index in 1..=spec.count.max(1) {
                    let runner = Runner::new(
                        spec.worker_id(index),
                        store.clone(),
                        spec.agent.clone(),
                        spec.llm.clone(),
                        recorder.clone(),
                    )
                    .with_hooks(spec.hooks.clone())
                    .with_options(spec.options.clone())
                    .with_proxy(spec.proxy.clone());
                    counters.push(runner.counters());
                    let stop = fleet.stop.clone();
                    fleet.tasks.spawn(async move { runner.run(&stop).await });
                }
                fleet.counters = Some(counters);
                fleet.recorder = Some(recorder);
            }
            ExecutionStrategy::Processes(spec) => {
                fleet.stop_timeout = Some(spec.stop_timeout);
                for index in 1..=spec.count.max(1) {
                    // On an error the fleet is dropped: its tasks are aborted, which drops (and
                    // so must kill) the processes already started.
                    let process = spec
                        .launcher
                        .launch(index, &spec.store_url)
                        .map_err(|reason| StrategyError::Launch { index, reason })?;
                    fleet.tasks.spawn(supervise(index, process, fleet.stop.clone()));
                }
            }
            ExecutionStrategy::External => {}
        }
        Ok(fleet)
    }
}

impl Fleet {
    /// Stops the runners: they take no new work and finish what they run; a forced `shutdown`,
    /// or `grace` running out (`None`: no limit), abandons it. In-process runners mark abandoned
    /// attempts failed; runner processes get SIGTERM (they apply their own grace period) and
    /// SIGKILL when forced or after their stop timeout. Flushes the in-process runners' spans.
    /// Runners that others own are not waited for; a runner task that panicked is logged.
    pub async fn drain(mut self, grace: Option<Duration>, shutdown: &Shutdown) -> Drained {
        self.stop.stop();
        let forced = !self.tasks.is_empty() && !self.wait_for_runners(grace, shutdown).await;
        if let Some(recorder) = &self.recorder
            && let Err(e) = recorder.flush().await
        {
            tracing::warn!("final span flush failed: {e}");
        }
        let attempts = self.counters.as_ref().map(|counters| {
            (
                counters.iter().map(|c| c.succeeded()).sum(),
                counters.iter().map(|c| c.failed()).sum(),
            )
        });
        Drained { forced, attempts }
    }

    /// Waits for the stopping runners; forces them on a forced shutdown or when time is up (for
    /// processes, their stop timeout: `grace` is theirs to apply). Returns whether they stopped
    /// without being forced.
    async fn wait_for_runners(&mut self, grace: Option<Duration>, shutdown: &Shutdown) -> bool {
        let limit = self.stop_timeout.or(grace);
        let time_up = async {
            match limit {
                Some(limit) => tokio::time::sleep(limit).await,
                None => std::future::pending::<()>().await,
            }
        };
        // A forced stop wins over runners that have just drained: they drained because of it
        // (each abandons its attempt on the same signal), and the report must say so.
        let drained = tokio::select! {
            biased;
            _ = shutdown.forced() => false,
            _ = time_up => false,
            _ = join_all(&mut self.tasks) => true,
        };
        if !drained {
            self.stop.force();
            join_all(&mut self.tasks).await;
        }
        drained
    }
}

async fn join_all(tasks: &mut JoinSet<()>) {
    while let Some(joined) = tasks.join_next().await {
        if let Err(e) = joined {
            tracing::error!("a runner task ended abnormally: {e}");
        }
    }
}

/// Drives runner process `index` by `stop`: SIGTERM on a graceful stop, SIGKILL on a forced one;
/// returns when it has exited. One that exits before it is asked to is reported: its attempt is
/// left to the store's watchdog.
async fn supervise(index: usize, mut process: Box<dyn RunnerProcess>, stop: Shutdown) {
    tokio::select! {
        exited = process.wait() => {
            let how = exited.map_or_else(|e| e.to_string(), |status| status.to_string());
            tracing::warn!(
                "runner process {index} exited before it was asked to ({how}); the store takes back \
                 its attempt when its heartbeats stop (unresponsive)"
            );
            return;
        }
        _ = stop.stopping() => process.stop(),
    }
    tokio::select! {
        _ = process.wait() => return,
        _ = stop.forced() => {
            tracing::warn!("runner process {index} is still running; killing it");
            process.kill();
        }
    }
    let _ = process.wait().await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use agl_store::InMemoryLightningStore;
    use parking_lot::Mutex;
    use tokio::sync::watch;

    /// A runner process that logs what it is told; it exits when killed, and when stopped if it
    /// `obeys`.
    struct FakeProcess {
        index: usize,
        obeys: bool,
        log: Arc<Mutex<Vec<String>>>,
        exited: watch::Sender<bool>,
    }

    #[async_trait::async_trait]
    impl RunnerProcess for FakeProcess {
        fn stop(&mut self) {
            self.log.lock().push(format!("stop {}", self.index));
            if self.obeys {
                self.exited.send_replace(true);
            }
        }
        fn kill(&mut self) {
            self.log.lock().push(format!("kill {}", self.index));
            self.exited.send_replace(true);
        }
        async fn wait(&mut self) -> std::io::Result<ExitStatus> {
            let mut exited = self.exited.subscribe();
            let _ = exited.wait_for(|exited| *exited).await;
            Ok(ExitStatus::default())
        }
    }

    impl Drop for FakeProcess {
        fn drop(&mut self) {
            self.log.lock().push(format!("dropped {}", self.index));
        }
    }

    /// Launches fake processes: those in `obeying` exit when stopped; `failing` cannot start.
    struct FakeLauncher {
        obeying: Vec<usize>,
        failing: Option<usize>,
        log: Arc<Mutex<Vec<String>>>,
    }

    impl RunnerLauncher for FakeLauncher {
        fn launch(&self, index: usize, store_url: &str) -> Result<Box<dyn RunnerProcess>, String> {
            if self.failing == Some(index) {
                return Err("no such executable".into());
            }
            self.log.lock().push(format!("launch {index} {store_url}"));
            Ok(Box::new(FakeProcess {
                index,
                obeys: self.obeying.contains(&index),
                log: self.log.clone(),
                exited: watch::channel(false).0,
            }))
        }
    }

    fn processes(launcher: FakeLauncher, count: usize, stop_timeout: Duration) -> ExecutionStrategy {
        ExecutionStrategy::Processes(RunnerProcesses {
            store_url: "http://127.0.0.1:1".into(),
            count,
            launcher: Arc::new(launcher),
            stop_timeout,
        })
    }

    fn store() -> Arc<dyn LightningStore> {
        Arc::new(InMemoryLightningStore::new())
    }

    #[tokio::test]
    async fn runner_processes_are_asked_to_stop_and_killed_only_when_they_outstay_their_timeout() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let launcher = FakeLauncher {
            obeying: vec![1],
            failing: None,
            log: log.clone(),
        };
        let shutdown = Shutdown::new();
        let fleet = processes(launcher, 2, Duration::from_millis(50))
            .start(&store(), &shutdown)
            .expect("started");
        let drained = fleet.drain(None, &shutdown).await;
        assert_eq!(
            drained,
            Drained {
                forced: true,
                attempts: None
            }
        );
        let log = log.lock().clone();
        for event in [
            "launch 1 http://127.0.0.1:1",
            "launch 2 http://127.0.0.1:1",
            "stop 1",
            "stop 2",
            "kill 2",
        ] {
            assert!(log.contains(&event.to_owned()), "{event}: {log:?}");
        }
        assert!(!log.contains(&"kill 1".to_owned()), "{log:?}");
    }

    #[tokio::test]
    async fn runner_processes_that_exit_when_asked_are_not_forced() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let launcher = FakeLauncher {
            obeying: vec![1, 2],
            failing: None,
            log: log.clone(),
        };
        let shutdown = Shutdown::new();
        let fleet = processes(launcher, 2, Duration::from_secs(3600))
            .start(&store(), &shutdown)
            .expect("started");
        assert!(!fleet.drain(None, &shutdown).await.forced);
        assert!(
            !log.lock().iter().any(|event| event.starts_with("kill")),
            "{:?}",
            log.lock()
        );
    }

    #[tokio::test]
    async fn a_forced_shutdown_kills_runner_processes_at_once() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let launcher = FakeLauncher {
            obeying: vec![],
            failing: None,
            log: log.clone(),
        };
        let shutdown = Shutdown::new();
        let fleet = processes(launcher, 2, Duration::from_secs(3600))
            .start(&store(), &shutdown)
            .expect("started");
        shutdown.force();
        assert!(fleet.drain(None, &shutdown).await.forced);
        let log = log.lock().clone();
        assert!(
            log.contains(&"kill 1".to_owned()) && log.contains(&"kill 2".to_owned()),
            "{log:?}"
        );
    }

    #[tokio::test]
    async fn a_runner_process_that_cannot_start_is_named_and_the_started_ones_are_dropped() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let launcher = FakeLauncher {
            obeying: vec![],
            failing: Some(2),
            log: log.clone(),
        };
        let Err(error) = processes(launcher, 3, Duration::from_secs(1)).start(&store(), &Shutdown::new()) else {
            panic!("the second process cannot start");
        };
        assert_eq!(error.to_string(), "cannot start runner process 2: no such executable");
        // The aborted supervisor drops process 1 (a real one is killed on drop) at its next poll.
        for _ in 0..100 {
            if log.lock().contains(&"dropped 1".to_owned()) {
                break;
            }
            tokio::task::yield_now().await;
        }
        let log = log.lock().clone();
        assert!(log.contains(&"dropped 1".to_owned()), "{log:?}");
        assert!(!log.iter().any(|event| event.starts_with("launch 3")), "{log:?}");
    }

    #[tokio::test]
    async fn runners_owned_elsewhere_are_neither_started_nor_waited_for() {
        let shutdown = Shutdown::new();
        shutdown.force();
        let fleet = ExecutionStrategy::External
            .start(&store(), &shutdown)
            .expect("nothing to start");
        let drained = fleet.drain(None, &shutdown).await;
        assert_eq!(
            drained,
            Drained {
                forced: false,
                attempts: None
            }
        );
    }
}
