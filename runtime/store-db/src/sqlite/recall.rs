//! [`Recall`]: what the SQLite writer remembers between transactions so that a call does not read
//! back what an earlier call wrote — rollouts (with their attempt counts), workers, the latest
//! resources id, and a floor under the watchdog's earliest deadline.
//!
//! The writer is this process's only writer, so what it remembers is what the database holds,
//! with three exceptions, each handled by forgetting: a job that fails (its savepoint is rolled
//! back: what it touched is forgotten), a transaction that fails to commit (everything is), and
//! another connection committing to the file (another process: seen through
//! `PRAGMA data_version` at the start of each transaction; everything is forgotten). Bounded:
//! past [`MAX_ROLLOUT_BYTES`] of rollouts or [`MAX_WORKERS`] workers it starts over.

use agl_store::model::{Rollout, Worker};
use std::collections::HashMap;
use std::collections::hash_map::Entry;

/// Rollouts kept, by the size of their stored JSON (a rollout's input can be large).
const MAX_ROLLOUT_BYTES: usize = 8 << 20;
const MAX_WORKERS: usize = 4096;

/// A rollout as stored, and how many attempts it has, where known.
pub(crate) struct RecalledRollout {
    pub rollout: Rollout,
    pub attempts: Option<u32>,
    bytes: usize,
}

#[derive(Default)]
pub(crate) struct Recall {
    rollouts: HashMap<String, RecalledRollout>,
    rollout_bytes: usize,
    workers: HashMap<String, Worker>,
    /// The latest resources id (`Some(None)`: the store has none), once read or written.
    latest_resources: Option<Option<String>>,
    /// No attempt is due for the watchdog before this time (`None`: unknown, ask the database).
    watchdog_floor: Option<f64>,
    /// `PRAGMA data_version` when the last transaction began.
    data_version: Option<i64>,
    /// What the running job changed or added, forgotten if it fails.
    touched_rollouts: Vec<String>,
    touched_workers: Vec<String>,
}

impl Recall {
    /// A transaction begins and the database is at `data_version`: if another connection has
    /// committed since the last one, nothing remembered can be trusted.
    pub fn begin(&mut self, data_version: i64) {
        if self.data_version != Some(data_version) {
            self.forget_all();
            self.data_version = Some(data_version);
        }
    }

    /// The transaction did not commit.
    pub fn forget_all(&mut self) {
        *self = Self {
            data_version: self.data_version,
            ..Self::default()
        };
    }

    /// A job starts: nothing touched yet.
    pub fn start_job(&mut self) {
        self.touched_rollouts.clear();
        self.touched_workers.clear();
    }

    /// The job's savepoint was rolled back: forget what it touched.
    pub fn job_failed(&mut self) {
        for rollout_id in std::mem::take(&mut self.touched_rollouts) {
            if let Some(gone) = self.rollouts.remove(&rollout_id) {
                self.rollout_bytes -= gone.bytes;
            }
        }
        for worker_id in std::mem::take(&mut self.touched_workers) {
            self.workers.remove(&worker_id);
        }
        self.latest_resources = None;
        // A rolled-back pop of the watchdog's agenda puts entries back.
        self.watchdog_floor = None;
    }

    // ---- rollouts ---------------------------------------------------------------------------

    pub fn rollout(&mut self, rollout_id: &str) -> Option<&mut RecalledRollout> {
        self.rollouts.get_mut(rollout_id)
    }

    /// Remembers the rollout as read from the database (its JSON `bytes` long).
    pub fn read_rollout(&mut self, rollout: Rollout, attempts: Option<u32>, bytes: usize) -> &mut RecalledRollout {
        if self.rollout_bytes + bytes > MAX_ROLLOUT_BYTES {
            self.rollouts.clear();
            self.rollout_bytes = 0;
        }
        self.rollout_bytes += bytes;
        let entry = RecalledRollout {
            attempts,
            bytes,
            rollout,
        };
        match self.rollouts.entry(entry.rollout.rollout_id.clone()) {
            Entry::Occupied(mut occupied) => {
                self.rollout_bytes -= occupied.get().bytes;
                occupied.insert(entry);
                occupied.into_mut()
            }
            Entry::Vacant(vacant) => vacant.insert(entry),
        }
    }

    /// Remembers the rollout as this job wrote it.
    pub fn wrote_rollout(&mut self, rollout: &Rollout, bytes: usize) {
        let attempts = self.rollouts.get(&rollout.rollout_id).and_then(|r| r.attempts);
        self.touched_rollouts.push(rollout.rollout_id.clone());
        self.read_rollout(rollout.clone(), attempts, bytes);
    }

    /// This job changes the remembered rollout (through [`Recall::rollout`]) or its attempts.
    pub fn touch_rollout(&mut self, rollout_id: &str) {
        self.touched_rollouts.push(rollout_id.to_owned());
    }

    // ---- workers ----------------------------------------------------------------------------

    pub fn worker(&mut self, worker_id: &str) -> Option<&mut Worker> {
        self.workers.get_mut(worker_id)
    }

    pub fn wrote_worker(&mut self, worker: Worker) {
        if self.workers.len() >= MAX_WORKERS {
            self.workers.clear();
        }
        self.touched_workers.push(worker.worker_id.clone());
        self.workers.insert(worker.worker_id.clone(), worker);
    }

    // ---- resources ----------------------------------------------------------------------------

    pub fn latest_resources(&self) -> Option<Option<String>> {
        self.latest_resources.clone()
    }

    pub fn set_latest_resources(&mut self, resources_id: Option<String>) {
        self.latest_resources = Some(resources_id);
    }

    // ---- the watchdog's agenda ----------------------------------------------------------------

    /// Whether nothing can be due strictly before `now` (`false`: ask the database).
    pub fn nothing_due_before(&self, now: f64) -> bool {
        self.watchdog_floor.is_some_and(|floor| now <= floor)
    }

    /// The database's earliest deadline (`None`: nothing scheduled).
    pub fn set_watchdog_floor(&mut self, earliest: Option<f64>) {
        self.watchdog_floor = Some(earliest.unwrap_or(f64::INFINITY));
    }

    /// Something was scheduled at `at`.
    pub fn scheduled(&mut self, at: f64) {
        if let Some(floor) = &mut self.watchdog_floor {
            *floor = floor.min(at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agl_store::model::RolloutStatus;

    fn rollout(id: &str) -> Rollout {
        Rollout {
            rollout_id: id.to_owned(),
            input: serde_json::json!({}),
            start_time: 0.0,
            end_time: None,
            mode: None,
            resources_id: None,
            status: RolloutStatus::Queuing,
            config: Default::default(),
            metadata: None,
        }
    }

    #[test]
    fn a_failed_job_forgets_what_it_touched_and_keeps_the_rest() {
        let mut recall = Recall::default();
        recall.begin(1);
        recall.start_job();
        recall.wrote_rollout(&rollout("ro-kept"), 10);
        recall.wrote_worker(Worker::new("w-kept"));
        recall.start_job();
        recall.wrote_rollout(&rollout("ro-undone"), 10);
        recall.wrote_worker(Worker::new("w-undone"));
        recall.set_watchdog_floor(Some(5.0));
        recall.job_failed();
        assert!(recall.rollout("ro-kept").is_some());
        assert!(recall.worker("w-kept").is_some());
        assert!(recall.rollout("ro-undone").is_none());
        assert!(recall.worker("w-undone").is_none());
        assert!(!recall.nothing_due_before(1.0), "the watchdog floor is asked again");
    }

    #[test]
    fn another_connections_commit_forgets_everything() {
        let mut recall = Recall::default();
        recall.begin(1);
        recall.start_job();
        recall.wrote_rollout(&rollout("ro-1"), 10);
        recall.set_latest_resources(Some("rs-1".into()));
        recall.begin(1);
        assert!(recall.rollout("ro-1").is_some(), "our own commits keep the version");
        recall.begin(2);
        assert!(recall.rollout("ro-1").is_none());
        assert_eq!(recall.latest_resources(), None);
    }

    #[test]
    fn the_watchdog_floor_only_moves_down_until_asked_again() {
        let mut recall = Recall::default();
        assert!(!recall.nothing_due_before(0.0), "unknown: ask");
        recall.set_watchdog_floor(None);
        assert!(recall.nothing_due_before(1e12));
        recall.scheduled(30.0);
        assert!(recall.nothing_due_before(30.0), "due means strictly before now");
        assert!(!recall.nothing_due_before(30.5));
    }

    #[test]
    fn rollouts_past_the_byte_bound_start_over() {
        let mut recall = Recall::default();
        recall.read_rollout(rollout("ro-1"), Some(1), MAX_ROLLOUT_BYTES / 2);
        recall.read_rollout(rollout("ro-1"), Some(2), MAX_ROLLOUT_BYTES / 2);
        assert_eq!(
            recall.rollout("ro-1").and_then(|r| r.attempts),
            Some(2),
            "replaced, not added"
        );
        recall.read_rollout(rollout("ro-2"), None, MAX_ROLLOUT_BYTES / 2);
        assert!(recall.rollout("ro-1").is_some() && recall.rollout("ro-2").is_some());
        recall.read_rollout(rollout("ro-3"), None, MAX_ROLLOUT_BYTES / 2);
        assert!(recall.rollout("ro-1").is_none(), "over the bound: forgotten");
        assert!(recall.rollout("ro-3").is_some());
    }
}
