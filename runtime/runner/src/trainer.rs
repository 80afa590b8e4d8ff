//! The trainer: publish the initial resources, start the runners (shared-memory: N runners on the
//! store in this process; or runners elsewhere), run the algorithm component on this task, and when
//! it ends let the runners drain (finish what they run, take nothing new) and stop. A graceful stop
//! aborts the algorithm and gives the runners `grace` to finish; a forced stop (or the grace
//! running out) abandons running attempts. An agent can only fail its own attempt; a panicking
//! runner task is logged, not propagated.

use crate::hooks::Hook;
use crate::runner::{Runner, RunnerOptions};
use crate::shutdown::Shutdown;
use agl_llm::LlmBackend;
use agl_store::{LightningStore, NamedResources, StoreError};
use agl_wasm::{
    AgentComponent, AlgorithmComponent, AlgorithmObserver, AlgorithmOutcome, AlgorithmRequest, SpanRecorder,
};
use std::sync::Arc;
use std::time::{Duration, Instant};
use thiserror::Error;
use tokio::task::JoinSet;

/// Runners outside this process (the client-server strategy's runner processes, or runners on
/// other machines): the trainer starts none itself and stops these when the algorithm ends or the
/// run is stopped.
#[async_trait::async_trait]
pub trait RemoteRunners: Send + Sync {
    /// Asks them to stop (finishing what they run), waits up to `grace` — less when `forced`
    /// fires — then stops them for good. Returns whether it had to. Runners this run does not own
    /// (`agl-host run --store URL`) are left running: nothing to do.
    async fn stop(&self, grace: Duration, forced: &Shutdown) -> bool;
}

/// Who executes the rollouts the algorithm enqueues.
#[derive(Clone)]
pub enum Runners {
    /// `count` (≥ 1) runners in this process, on the trainer's store, running `agent`.
    Local { agent: Arc<AgentComponent>, count: usize },
    /// Runners elsewhere, reading the same store (over HTTP).
    Remote(Arc<dyn RemoteRunners>),
}

/// How the trainer runs.
#[derive(Clone)]
pub struct TrainerOptions {
    /// After a graceful stop, how long running attempts may take before they are abandoned; after
    /// the algorithm ends, how long remote runners may take to stop.
    pub grace: Duration,
    pub runner: RunnerOptions,
    /// How often buffered spans are flushed to the store.
    pub span_flush_interval: Duration,
    pub hooks: Arc<[Arc<dyn Hook>]>,
}

impl Default for TrainerOptions {
    fn default() -> Self {
        Self {
            grace: Duration::from_secs(10),
            runner: RunnerOptions::default(),
            span_flush_interval: Duration::from_millis(100),
            hooks: Arc::new([]),
        }
    }
}

/// One training run's inputs.
pub struct FitRequest {
    /// The algorithm's configuration, JSON text.
    pub config_json: String,
    pub train: Vec<String>,
    pub val: Vec<String>,
    pub seed: u64,
    /// Published as the first resources version before anything runs.
    pub initial_resources: Option<NamedResources>,
}

#[derive(Debug, Error)]
pub enum TrainerError {
    #[error("cannot publish the initial resources: {0}")]
    InitialResources(StoreError),
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum FitStatus {
    /// The algorithm returned its summary.
    Completed,
    /// The algorithm failed (its error, a trap, its deadline).
    AlgorithmFailed(String),
    /// Stopped by the user before the algorithm finished.
    Interrupted,
}

#[derive(Debug)]
pub struct FitReport {
    pub status: FitStatus,
    /// The algorithm's outcome, unless the run was interrupted first.
    pub algorithm: Option<AlgorithmOutcome>,
    /// Attempts this process's runners finished, by outcome (`None` with remote runners).
    pub attempts: Option<(u64, u64)>,
    /// Whether running attempts had to be abandoned.
    pub forced: bool,
    pub elapsed: Duration,
}

pub struct Trainer {
    store: Arc<dyn LightningStore>,
    runners: Runners,
    algorithm: Arc<AlgorithmComponent>,
    llm: Arc<dyn LlmBackend>,
    observer: Arc<dyn AlgorithmObserver>,
    options: TrainerOptions,
}

impl Trainer {
    pub fn new(
        store: Arc<dyn LightningStore>,
        runners: Runners,
        algorithm: Arc<AlgorithmComponent>,
        llm: Arc<dyn LlmBackend>,
        observer: Arc<dyn AlgorithmObserver>,
        options: TrainerOptions,
    ) -> Self {
        Self {
            store,
            runners,
            algorithm,
            llm,
            observer,
            options,
        }
    }

    /// Runs the algorithm with the runners until it ends or `shutdown` stops the run.
    pub async fn fit(&self, request: FitRequest, shutdown: &Shutdown) -> Result<FitReport, TrainerError> {
        let started = Instant::now();
        if let Some(resources) = request.initial_resources {
            self.store
                .add_resources(resources)
                .await
                .map_err(TrainerError::InitialResources)?;
        }
        let recorder = Arc::new(SpanRecorder::new(self.store.clone(), self.options.span_flush_interval));
        let runner_stop = shutdown.child();
        let mut runners = JoinSet::new();
        let mut counters = Vec::new();
        if let Runners::Local { agent, count } = &self.runners {
            for index in 0..(*count).max(1) {
                let runner = Runner::new(
                    format!("runner-{index}"),
                    self.store.clone(),
                    agent.clone(),
                    self.llm.clone(),
                    recorder.clone(),
                )
                .with_hooks(self.options.hooks.clone())
                .with_options(self.options.runner.clone());
                counters.push(runner.counters());
                let stop = runner_stop.clone();
                runners.spawn(async move { runner.run(&stop).await });
            }
        }

        let algorithm_run = self.algorithm.run(AlgorithmRequest {
            store: self.store.clone(),
            llm: self.llm.clone(),
            observer: self.observer.clone(),
            config_json: request.config_json,
            train: request.train,
            val: request.val,
            seed: request.seed,
        });
        let algorithm = tokio::select! {
            outcome = algorithm_run => Some(outcome),
            _ = shutdown.stopping() => None,
        };
        let interrupted = algorithm.is_none();
        runner_stop.stop();
        let forced = self
            .wait_for_runners(&mut runners, &runner_stop, shutdown, interrupted)
            .await;
        if let Err(e) = recorder.flush().await {
            tracing::warn!("final span flush failed: {e}");
        }

        let status = match &algorithm {
            None => FitStatus::Interrupted,
            Some(outcome) => match &outcome.result {
                Ok(_) => FitStatus::Completed,
                Err(reason) => FitStatus::AlgorithmFailed(reason.clone()),
            },
        };
        Ok(FitReport {
            status,
            algorithm,
            attempts: matches!(self.runners, Runners::Local { .. }).then(|| {
                (
                    counters.iter().map(|c| c.succeeded()).sum(),
                    counters.iter().map(|c| c.failed()).sum(),
                )
            }),
            forced,
            elapsed: started.elapsed(),
        })
    }

    /// Waits for the draining runners; forces them on a forced shutdown, or when an interrupted
    /// run's grace period is over. Remote runners are asked to stop (they get the grace period).
    /// Returns whether it had to force.
    async fn wait_for_runners(
        &self,
        runners: &mut JoinSet<()>,
        runner_stop: &Shutdown,
        shutdown: &Shutdown,
        interrupted: bool,
    ) -> bool {
        if let Runners::Remote(remote) = &self.runners {
            return remote.stop(self.options.grace, shutdown).await;
        }
        let grace = async {
            if interrupted {
                tokio::time::sleep(self.options.grace).await;
            } else {
                std::future::pending::<()>().await;
            }
        };
        // A forced stop wins over runners that have just drained: they drained because of it
        // (each abandons its attempt on the same signal), and the report must say so.
        let drained = tokio::select! {
            biased;
            _ = shutdown.forced() => false,
            _ = grace => false,
            _ = join_all(runners) => true,
        };
        if !drained {
            runner_stop.force();
            join_all(runners).await;
        }
        !drained
    }
}

async fn join_all(runners: &mut JoinSet<()>) {
    while let Some(joined) = runners.join_next().await {
        if let Err(e) = joined {
            tracing::error!("a runner task ended abnormally: {e}");
        }
    }
}
