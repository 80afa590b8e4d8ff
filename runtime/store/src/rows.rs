//! The row loaders the store's reads are written over ([`Rows`]): what a backend loads for each
//! query, and nothing of what the query then does with it (the filters, sorting and pagination
//! are in [`crate::reads`], once). Every loader reads without locking: a store opened to read
//! only answers them too.

use crate::backend::RunRecord;
use crate::error::StoreResult;
use crate::model::*;
use crate::store::AttemptRef;
use std::collections::HashSet;
use std::sync::Arc;

/// A slice of the records that match, in their natural order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub offset: u64,
    /// `None`: every record from `offset` on.
    pub limit: Option<u64>,
}

impl Window {
    /// Whether the record at `position` (0-based, among those that match) is in the window.
    pub fn holds(&self, position: u64) -> bool {
        position >= self.offset && self.limit.is_none_or(|limit| position - self.offset < limit)
    }
}

/// A rollout's spans (of one attempt, or every attempt), in arrival order, lent to a reader.
#[derive(Debug, Clone, Default)]
pub struct SpanRows<'a> {
    pub spans: Vec<&'a Arc<Span>>,
    /// Whether arrival order is also non-decreasing sequence id order (sorting by it then keeps
    /// the order); `false` when the backend does not know.
    pub in_sequence_order: bool,
}

/// One transaction's loaders of records, for the reads.
pub trait Rows {
    fn find_rollout(&mut self, rollout_id: &str) -> StoreResult<Option<Rollout>>;

    /// The rollout's attempt with the highest sequence id.
    fn find_latest_attempt(&mut self, rollout_id: &str) -> StoreResult<Option<Attempt>>;

    /// The rollouts that meet the conditions of `query` (`status_in`, `rollout_id_in`,
    /// `rollout_id_contains`, combined by its `filter_logic`: its pagination and sorting are
    /// not read), in insertion order, only those in `window` when one is given; and how many meet
    /// them in all.
    fn select_rollouts(&mut self, query: &RolloutQuery, window: Option<Window>) -> StoreResult<(Vec<Rollout>, u64)>;

    /// The latest attempt of each of these rollouts that has one, in any order.
    fn latest_attempts(&mut self, rollout_ids: &[&str]) -> StoreResult<Vec<Attempt>>;

    /// The rollout's attempts, in sequence order.
    fn attempts(&mut self, rollout_id: &str) -> StoreResult<Vec<Attempt>>;

    /// The sequence id of the rollout's attempt `which`, if it has that attempt.
    fn attempt_sequence(&mut self, rollout_id: &str, which: AttemptRef<'_>) -> StoreResult<Option<u32>>;

    /// What `read` makes of the rollout's spans of the attempt with this sequence id, or of every
    /// attempt (lent, so that a reader that keeps a few copies only those).
    fn spans<T>(
        &mut self,
        rollout_id: &str,
        attempt_sequence: Option<u32>,
        read: impl FnOnce(SpanRows<'_>) -> T,
    ) -> StoreResult<T>;

    /// Every resources bundle, in the order they were first stored.
    fn all_resources(&mut self) -> StoreResult<Vec<ResourcesUpdate>>;
    fn find_resources(&mut self, resources_id: &str) -> StoreResult<Option<ResourcesUpdate>>;
    fn latest_resources(&mut self) -> StoreResult<Option<ResourcesUpdate>>;

    /// Every worker, in the order they were first seen.
    fn all_workers(&mut self) -> StoreResult<Vec<Worker>>;
    fn find_worker(&mut self, worker_id: &str) -> StoreResult<Option<Worker>>;

    /// Of these rollout ids, those of known rollouts that have not finished (no record read).
    fn unfinished_rollouts(&mut self, rollout_ids: &[String]) -> StoreResult<HashSet<String>>;

    /// The finished rollouts among these ids, in the order asked (unknown ids are skipped).
    fn finished_rollouts(&mut self, rollout_ids: &[String]) -> StoreResult<Vec<Rollout>>;

    /// How many entries the queue holds (stale ones included where the backend keeps them).
    fn queue_len(&mut self) -> StoreResult<usize>;

    /// The attempt's recording, its tape and the addresses of its blobs, if one was kept; `None`
    /// too where the storage predates recordings (a file opened to read only, not migrated).
    fn recording(&mut self, rollout_id: &str, attempt_id: &str) -> StoreResult<Option<(String, Vec<String>)>>;

    /// A recording's blob, its text, if the store holds it.
    fn blob(&mut self, address: &str) -> StoreResult<Option<String>>;

    fn run_record(&mut self) -> StoreResult<Option<RunRecord>>;
    /// Keeps `record` as the run record (a write: only in a write transaction).
    fn save_run_record(&mut self, record: &RunRecord) -> StoreResult<()>;
}
