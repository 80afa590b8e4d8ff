//! What every store backend offers beyond the wire API, for the conformance suite and for tools:
//! the [`StoreBackend`] trait (run the watchdog now, the queue's length, a structural
//! self-check, the [`RunRecord`] of the run the store keeps), the [`StoreOptions`] every backend
//! is built with (its clock and watchdog tick), and [`check_through_api`], the invariants any
//! backend must keep, checked through the API alone.

use crate::clock::{Clock, SystemClock};
use crate::error::StoreResult;
use crate::model::*;
use crate::store::LightningStore;
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// How a store backend is built: where it reads the time, and how often its watchdog looks on
/// its own.
#[derive(Clone)]
pub struct StoreOptions {
    /// Period of the background watchdog tick; `None` leaves only the check before each call.
    /// The tick needs a Tokio runtime when the store is created.
    pub watchdog_interval: Option<Duration>,
    pub clock: Arc<dyn Clock>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            watchdog_interval: Some(Duration::from_millis(250)),
            clock: Arc::new(SystemClock),
        }
    }
}

/// What a store says about the run it keeps (`agl-host run` writes it at the start and the end;
/// `agl-host runs` and `show` read it). Not part of the 0.3.0 wire API.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunRecord {
    /// E.g. `run-20261124-210512-3f2a`.
    pub run_id: String,
    /// The name the user gave the run (`agl-host run --name`), if any: their text, printable
    /// and short, but to be shown through a terminal sanitiser all the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Seconds since the Unix epoch.
    pub started_at: f64,
    pub finished_at: Option<f64>,
    /// `running`, then `completed`, `algorithm_failed` or `interrupted`.
    pub status: String,
    /// What ran: the agent and the algorithm as given on the command line.
    pub agent: String,
    pub algorithm: String,
    /// The command line's arguments after the program name (secrets are never on it: keys come
    /// from the environment).
    pub command: Vec<String>,
    /// The working directory the command ran in (its relative paths are relative to it).
    #[serde(default)]
    pub directory: Option<String>,
    /// When the run was resumed (`agl-host run --resume`), each time.
    #[serde(default)]
    pub resumed_at: Vec<f64>,
    /// The run's results (the `--output` JSON) once it has ended.
    pub results: Option<serde_json::Value>,
}

/// A store backend: the LightningStore API plus what its tests and tools drive directly.
#[async_trait]
pub trait StoreBackend: LightningStore {
    /// Runs the watchdog now; returns how many attempts it changed.
    async fn run_watchdog(&self) -> StoreResult<usize>;

    /// How many entries the queue holds (stale ones, whose rollout left the queuing states,
    /// included where the backend keeps them).
    async fn queue_len(&self) -> StoreResult<usize>;

    /// Keeps `record` as the store's run record (replacing the one kept before).
    async fn save_run(&self, record: &RunRecord) -> StoreResult<()>;

    /// The run record kept, if any.
    async fn run_record(&self) -> StoreResult<Option<RunRecord>>;

    /// Folds what is pending into the store's main file (a database's write-ahead log), so that
    /// the store is compact on disk; it stays usable. Nothing to do in memory.
    async fn checkpoint(&self) -> StoreResult<()> {
        Ok(())
    }

    /// Checks the store's invariants; the first violation found is the error. Linear in the
    /// store's size: for tests and debugging. By default, what [`check_through_api`] checks.
    async fn check_invariants(&self) -> Result<(), String> {
        check_through_api(self).await
    }
}

/// The invariants every backend keeps, seen through the API:
/// - a preparing or running rollout has a live (preparing/running) latest attempt, and the
///   attempt `get_rollout_by_id` shows is the one with the highest sequence id;
/// - a finished rollout, and an ended attempt, has an end time;
/// - a rollout's attempts are numbered 1, 2, ... in order;
/// - a busy worker works on a live attempt; a worker that is not busy holds none.
pub async fn check_through_api<S: LightningStore + ?Sized>(store: &S) -> Result<(), String> {
    let rollouts = store
        .query_rollouts(&RolloutQuery::default())
        .await
        .map_err(|e| format!("query_rollouts: {e}"))?
        .items;
    let mut live: HashMap<(String, String), AttemptStatus> = HashMap::new();
    for view in &rollouts {
        let rollout = &view.rollout;
        let id = &rollout.rollout_id;
        let attempts = store
            .query_attempts(id, &AttemptQuery::default())
            .await
            .map_err(|e| format!("query_attempts({id}): {e}"))?
            .items;
        for (position, attempt) in attempts.iter().enumerate() {
            if attempt.sequence_id as usize != position + 1 {
                return Err(format!(
                    "attempt {} of {id} has sequence_id {}",
                    position + 1,
                    attempt.sequence_id
                ));
            }
            if attempt.status.has_ended() && attempt.end_time.is_none() {
                return Err(format!(
                    "{} attempt {} of {id} has no end_time",
                    attempt.status, attempt.attempt_id
                ));
            }
            live.insert((id.clone(), attempt.attempt_id.clone()), attempt.status);
        }
        let latest = attempts.last();
        if view.attempt.as_ref().map(|a| &a.attempt_id) != latest.map(|a| &a.attempt_id) {
            return Err(format!(
                "rollout {id} shows attempt {:?}, its latest is {:?}",
                view.attempt.as_ref().map(|a| &a.attempt_id),
                latest.map(|a| &a.attempt_id)
            ));
        }
        match rollout.status {
            RolloutStatus::Preparing | RolloutStatus::Running
                if !latest.is_some_and(|a| matches!(a.status, AttemptStatus::Preparing | AttemptStatus::Running)) =>
            {
                return Err(format!(
                    "{} rollout {id} has no live latest attempt ({latest:?})",
                    rollout.status
                ));
            }
            status if status.is_finished() && rollout.end_time.is_none() => {
                return Err(format!("{status} rollout {id} has no end_time"));
            }
            _ => {}
        }
    }
    let workers = store
        .query_workers(&WorkerQuery::default())
        .await
        .map_err(|e| format!("query_workers: {e}"))?
        .items;
    for worker in workers {
        let current = worker.current_rollout_id.clone().zip(worker.current_attempt_id.clone());
        match (worker.status, current) {
            (WorkerStatus::Busy, Some(key)) => match live.get(&key) {
                Some(AttemptStatus::Preparing | AttemptStatus::Running) => {}
                Some(status) => {
                    return Err(format!("worker {} is busy on a {status} attempt", worker.worker_id));
                }
                None => return Err(format!("worker {} is busy on a missing attempt", worker.worker_id)),
            },
            (WorkerStatus::Busy, None) => return Err(format!("worker {} is busy on nothing", worker.worker_id)),
            (_, Some(_)) => {
                return Err(format!(
                    "worker {} is {} yet holds an attempt",
                    worker.worker_id, worker.status
                ));
            }
            (_, None) => {}
        }
    }
    Ok(())
}
