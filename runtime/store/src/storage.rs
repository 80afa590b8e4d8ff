//! The storage primitives a store backend provides: reading and writing rollouts, attempts, the
//! queue, spans, sequence counters, resources, workers and recordings, inside one transaction.
//! They decide nothing: every status decision is made once, in [`crate::transitions`] (over
//! [`crate::rules`]), which every backend runs over its own [`Storage`] — the in-memory state
//! under its lock, an SQLite or PostgreSQL transaction.
//!
//! Conventions: `save_*` overwrites the stored record with the one given; `read_*` and `modify_*`
//! hand the stored record to a closure (in memory, no copy is made; a database reads the row,
//! and writes it back after `modify_*`); ids are unique per kind (an attempt id per rollout); a
//! backend where several processes write at once locks the rows it reads until the transaction
//! ends.

use crate::error::StoreResult;
use crate::model::*;
use crate::store::AttemptRef;
use std::sync::Arc;

/// How many records a store holds, for [`Statistics`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StorageCounts {
    pub rollouts: u64,
    pub attempts: u64,
    pub spans: u64,
    pub resources: u64,
    pub workers: u64,
}

impl StorageCounts {
    /// The store's statistics (the wire's shape) from these counts: `name` is the store's class,
    /// `uptime` seconds since it started.
    pub fn statistics(self, name: &str, uptime: f64) -> Statistics {
        Statistics {
            name: name.to_owned(),
            total_rollouts: self.rollouts,
            total_attempts: self.attempts,
            total_spans: self.spans,
            total_resources: self.resources,
            total_workers: self.workers,
            uptime,
            total_span_bytes: None,
            eviction_threshold_bytes: None,
            safe_threshold_bytes: None,
            memory_capacity_bytes: None,
        }
    }
}

/// One transaction's view of a backend's records.
pub trait Storage {
    // ---- rollouts ---------------------------------------------------------------------------

    /// The rollout, if the store holds it.
    fn rollout(&mut self, rollout_id: &str) -> StoreResult<Option<Rollout>>;

    /// What `read` makes of the rollout, if the store holds it.
    fn read_rollout<T>(&mut self, rollout_id: &str, read: impl FnOnce(&Rollout) -> T) -> StoreResult<Option<T>>;

    /// Stores a new rollout; `false` when the id is taken (the caller draws another). A span
    /// sequence counter already issued for this id (see [`Storage::next_span_sequence`]) becomes
    /// the rollout's.
    fn insert_rollout(&mut self, rollout: &Rollout) -> StoreResult<bool>;

    /// Overwrites the stored rollout.
    fn save_rollout(&mut self, rollout: &Rollout) -> StoreResult<()>;

    /// Overwrites only the status and end time.
    fn save_rollout_status(
        &mut self,
        rollout_id: &str,
        status: RolloutStatus,
        end_time: Option<f64>,
    ) -> StoreResult<()>;

    /// Puts the rollout at the tail of the queue, unless the queue holds it already.
    fn push_queue(&mut self, rollout_id: &str) -> StoreResult<()>;

    /// Takes up to `limit` rollouts off the head of the queue, in order, skipping (and dropping)
    /// any whose status is no longer queuing or requeuing.
    fn pop_queue(&mut self, limit: usize) -> StoreResult<Vec<Rollout>>;

    /// The rollout has finished: whoever waits for it is told once the transaction is done.
    fn rollout_finished(&mut self, rollout_id: &str);

    // ---- attempts ---------------------------------------------------------------------------

    /// How many attempts the rollout has (the next one's sequence id is this + 1).
    fn attempt_count(&mut self, rollout_id: &str) -> StoreResult<u32>;

    /// The attempt with the highest sequence id.
    fn latest_attempt(&mut self, rollout_id: &str) -> StoreResult<Option<Attempt>>;

    /// What `read` makes of the attempt `which` of the rollout, if there is one.
    fn read_attempt<T>(
        &mut self,
        rollout_id: &str,
        which: AttemptRef<'_>,
        read: impl FnOnce(&Attempt) -> T,
    ) -> StoreResult<Option<T>>;

    /// Changes the attempt `which` of the rollout with `modify`, if there is one.
    fn modify_attempt<T>(
        &mut self,
        rollout_id: &str,
        which: AttemptRef<'_>,
        modify: impl FnOnce(&mut Attempt) -> T,
    ) -> StoreResult<Option<T>>;

    fn insert_attempt(&mut self, attempt: &Attempt) -> StoreResult<()>;

    // ---- the watchdog's agenda ----------------------------------------------------------------

    /// The watchdog should look at this attempt at `at` (a hint: the verdict is re-checked then).
    fn schedule_watchdog(&mut self, attempt: &Attempt, at: f64) -> StoreResult<()>;

    /// Whether something is scheduled strictly before `now` (checked before every call: cheap).
    fn watchdog_due(&mut self, now: f64) -> StoreResult<bool>;

    /// Removes and returns the earliest scheduled (rollout id, attempt sequence id) strictly
    /// before `now`.
    fn pop_watchdog(&mut self, now: f64) -> StoreResult<Option<(String, u32)>>;

    // ---- spans ------------------------------------------------------------------------------

    /// Stores a span of the attempt with sequence id `attempt_sequence`, unless that attempt has a
    /// span with the same span id (then `None`). Raises the rollout's span sequence counter to
    /// the span's sequence id if it is below.
    fn insert_span(&mut self, span: Span, attempt_sequence: u32) -> StoreResult<Option<Arc<Span>>>;

    /// Increments and returns the rollout's span sequence counter; a rollout id the store does not
    /// hold gets a counter of its own (Agent-lightning 0.3.0 keeps counters by id alone).
    fn next_span_sequence(&mut self, rollout_id: &str) -> StoreResult<u64>;

    // ---- resources ----------------------------------------------------------------------------

    fn resources(&mut self, resources_id: &str) -> StoreResult<Option<ResourcesUpdate>>;

    /// Stores the bundle (new or replacing the one with its id) and makes it the latest.
    fn save_resources(&mut self, update: &ResourcesUpdate) -> StoreResult<()>;

    fn latest_resources_id(&mut self) -> StoreResult<Option<String>>;

    // ---- workers ----------------------------------------------------------------------------

    /// Changes the worker with `modify`, creating it (`Worker::new`) first if the store has none.
    fn modify_worker<T>(&mut self, worker_id: &str, modify: impl FnOnce(&mut Worker) -> T) -> StoreResult<T>;

    // ---- recordings --------------------------------------------------------------------------

    /// Stores a recording's blob under its address (the caller has checked it is the text's
    /// hash) unless the store holds one there; whether it was new.
    fn insert_blob(&mut self, address: &str, text: &str) -> StoreResult<bool>;

    /// Keeps the attempt's recording, its tape and the addresses of its blobs (stored already),
    /// replacing one it had. (Reading them back is [`crate::Rows`]'.)
    fn save_recording(&mut self, rollout_id: &str, attempt_id: &str, tape: &str, blobs: &[String]) -> StoreResult<()>;

    // ---- totals -----------------------------------------------------------------------------

    fn counts(&mut self) -> StoreResult<StorageCounts>;
}
