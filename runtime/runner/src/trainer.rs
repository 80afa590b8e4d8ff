//! The trainer: publish the initial resources, start the runners of its [`ExecutionStrategy`], run
//! the algorithm component on this task, and when it ends let the runners drain (finish what they
//! run, take nothing new) and stop. A graceful stop aborts the algorithm and gives the runners
//! `grace` to finish; a forced stop (or the grace running out) abandons running attempts. How
//! runners start and stop is strategy.rs's; an agent can only fail its own attempt.

use crate::shutdown::Shutdown;
use crate::strategy::{ExecutionStrategy, StrategyError};
use agl_llm::LlmBackend;
use agl_store::{LightningStore, NamedResources, StoreError};
use agl_wasm::{AlgorithmComponent, AlgorithmObserver, AlgorithmOutcome, AlgorithmRequest, SpanExport};
use std::sync::Arc;
use std::time::{Duration, Instant};
use thiserror::Error;

/// How the trainer runs.
#[derive(Debug, Clone)]
pub struct TrainerOptions {
    /// After a graceful stop, how long running attempts may take before they are abandoned.
    pub grace: Duration,
    /// Where the algorithm's LLM spans also go (e.g. an OTLP exporter), besides the store.
    pub span_export: Option<SpanExport>,
}

impl Default for TrainerOptions {
    fn default() -> Self {
        Self {
            grace: Duration::from_secs(10),
            span_export: None,
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
    #[error(transparent)]
    Runners(#[from] StrategyError),
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
    /// Attempts this process's runners finished, (succeeded, failed) (`None` with runners in
    /// other processes).
    pub attempts: Option<(u64, u64)>,
    /// Whether running attempts had to be abandoned.
    pub forced: bool,
    pub elapsed: Duration,
}

pub struct Trainer {
    store: Arc<dyn LightningStore>,
    strategy: ExecutionStrategy,
    algorithm: Arc<AlgorithmComponent>,
    llm: Arc<dyn LlmBackend>,
    observer: Arc<dyn AlgorithmObserver>,
    options: TrainerOptions,
}

impl Trainer {
    pub fn new(
        store: Arc<dyn LightningStore>,
        strategy: ExecutionStrategy,
        algorithm: Arc<AlgorithmComponent>,
        llm: Arc<dyn LlmBackend>,
        observer: Arc<dyn AlgorithmObserver>,
        options: TrainerOptions,
    ) -> Self {
        Self {
            store,
            strategy,
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
        let fleet = self.strategy.start(&self.store, shutdown)?;

        let algorithm_run = self.algorithm.run(AlgorithmRequest {
            store: self.store.clone(),
            llm: self.llm.clone(),
            observer: self.observer.clone(),
            config_json: request.config_json,
            train: request.train,
            val: request.val,
            seed: request.seed,
            span_export: self.options.span_export.clone(),
        });
        let algorithm = tokio::select! {
            outcome = algorithm_run => Some(outcome),
            _ = shutdown.stopping() => None,
        };
        // The algorithm is done: nothing waits for new work, so only an interrupted run's running
        // attempts have a time limit.
        let grace = algorithm.is_none().then_some(self.options.grace);
        let drained = fleet.drain(grace, shutdown).await;

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
            attempts: drained.attempts,
            forced: drained.forced,
            elapsed: started.elapsed(),
        })
    }
}
