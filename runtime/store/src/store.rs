//! The `LightningStore` trait: the whole Agent-lightning 0.3.0 store API, async.
//! Backends implement it — the in-memory one here (`crate::memory`), the HTTP client in
//! `agl-client` — and share the status machine in [`crate::rules`]. Algorithms and runners depend
//! on this trait only.

use crate::error::StoreResult;
use crate::model::*;
use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;

/// Which attempt of a rollout an `update_attempt` addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptRef<'a> {
    /// The attempt with the highest sequence id.
    Latest,
    Id(&'a str),
}

impl<'a> From<&'a str> for AttemptRef<'a> {
    /// `"latest"` means [`AttemptRef::Latest`], as on the wire.
    fn from(value: &'a str) -> Self {
        if value == "latest" {
            Self::Latest
        } else {
            Self::Id(value)
        }
    }
}

#[async_trait]
pub trait LightningStore: Send + Sync {
    /// Creates a rollout together with its first attempt (`preparing`), bypassing the queue.
    async fn start_rollout(&self, request: StartRolloutRequest) -> StoreResult<AttemptedRollout>;

    /// Adds one rollout to the tail of the queue (`queuing`).
    async fn enqueue_rollout(&self, request: EnqueueRolloutRequest) -> StoreResult<Rollout> {
        let mut rollouts = self.enqueue_rollouts(vec![request]).await?;
        rollouts
            .pop()
            .ok_or_else(|| crate::StoreError::Backend("enqueue returned nothing".into()))
    }

    /// Adds rollouts to the queue in order; all or none (a bad request rejects the batch).
    async fn enqueue_rollouts(&self, requests: Vec<EnqueueRolloutRequest>) -> StoreResult<Vec<Rollout>>;

    /// Takes the next queued rollout and starts an attempt on it; never blocks.
    async fn dequeue_rollout(&self, worker_id: Option<&str>) -> StoreResult<Option<AttemptedRollout>> {
        Ok(self.dequeue_rollouts(1, worker_id).await?.pop())
    }

    /// Takes up to `limit` queued rollouts, each with a fresh attempt.
    async fn dequeue_rollouts(&self, limit: usize, worker_id: Option<&str>) -> StoreResult<Vec<AttemptedRollout>>;

    /// Starts a new attempt on a rollout explicitly (may exceed `max_attempts`).
    async fn start_attempt(&self, rollout_id: &str, worker_id: Option<&str>) -> StoreResult<AttemptedRollout>;

    /// Changes the keys present in `update`; `status = cancelled` is allowed from any state.
    async fn update_rollout(&self, rollout_id: &str, update: RolloutUpdate) -> StoreResult<Rollout>;

    /// Changes an attempt; on the latest attempt the rollout status is re-derived.
    async fn update_attempt(
        &self,
        rollout_id: &str,
        attempt: AttemptRef<'_>,
        update: AttemptUpdate,
    ) -> StoreResult<Attempt>;

    async fn query_rollouts(&self, query: &RolloutQuery) -> StoreResult<Paginated<RolloutView>>;
    async fn query_attempts(&self, rollout_id: &str, query: &AttemptQuery) -> StoreResult<Paginated<Attempt>>;
    async fn query_spans(&self, query: &SpanQuery) -> StoreResult<Paginated<Arc<Span>>>;
    async fn query_resources(&self, query: &ResourcesQuery) -> StoreResult<Paginated<ResourcesUpdate>>;
    async fn query_workers(&self, query: &WorkerQuery) -> StoreResult<Paginated<Worker>>;

    /// The rollout with its latest attempt, or `None` when the id is unknown.
    async fn get_rollout_by_id(&self, rollout_id: &str) -> StoreResult<Option<RolloutView>>;
    async fn get_latest_attempt(&self, rollout_id: &str) -> StoreResult<Option<Attempt>>;

    /// Stores a span (a heartbeat too); `None` when the same (rollout, attempt, span_id) exists.
    async fn add_span(&self, span: Span) -> StoreResult<Option<Arc<Span>>> {
        Ok(self.add_spans(vec![span]).await?.pop())
    }

    /// Stores spans in one go; duplicates are skipped, unknown rollouts/attempts reject the batch.
    async fn add_spans(&self, spans: Vec<Span>) -> StoreResult<Vec<Arc<Span>>>;

    /// Hands out the next span sequence id of a rollout (one counter per rollout, from 1).
    async fn get_next_span_sequence_id(&self, rollout_id: &str, attempt_id: &str) -> StoreResult<u64> {
        let ids = self.get_next_span_sequence_ids(&[(rollout_id, attempt_id)]).await?;
        ids.first()
            .copied()
            .ok_or_else(|| crate::StoreError::Backend("no sequence id issued".into()))
    }

    /// One sequence id per `(rollout_id, attempt_id)` pair, in order.
    async fn get_next_span_sequence_ids(&self, pairs: &[(&str, &str)]) -> StoreResult<Vec<u64>>;

    /// Stores a new resource bundle under a fresh `rs-` id; it becomes the latest.
    async fn add_resources(&self, resources: NamedResources) -> StoreResult<ResourcesUpdate>;
    /// Creates or replaces the bundle with this id (version + 1); it becomes the latest.
    async fn update_resources(&self, resources_id: &str, resources: NamedResources) -> StoreResult<ResourcesUpdate>;
    async fn get_latest_resources(&self) -> StoreResult<Option<ResourcesUpdate>>;
    async fn get_resources_by_id(&self, resources_id: &str) -> StoreResult<Option<ResourcesUpdate>>;

    /// A worker heartbeat (creates the worker if new); never changes its status.
    async fn update_worker(&self, worker_id: &str, update: WorkerUpdate) -> StoreResult<Worker>;
    async fn get_worker_by_id(&self, worker_id: &str) -> StoreResult<Option<Worker>>;

    /// Waits until every listed rollout is finished or the timeout passes (`None`: no limit);
    /// returns the finished ones, in the order asked. Unknown ids are never finished.
    async fn wait_for_rollouts(&self, rollout_ids: &[String], timeout: Option<Duration>) -> StoreResult<Vec<Rollout>>;

    /// Keeps the attempt's recording, replacing one it had. Its blobs are stored once across every
    /// recording of the store (a blob already held is not written again). Fails when the attempt is
    /// unknown, when a blob's key is not the SHA-256 of its text, or when it is over the size limits
    /// ([`Recording::check`]).
    async fn add_recording(&self, recording: Recording) -> StoreResult<RecordingStored>;
    /// The attempt's recording with every blob it refers to, if one was kept.
    async fn get_recording(&self, rollout_id: &str, attempt_id: &str) -> StoreResult<Option<Recording>>;

    async fn statistics(&self) -> StoreResult<Statistics>;
    fn capabilities(&self) -> Capabilities;
}
