//! Resuming a kept run: [`ReplayStore`] hands a restarted algorithm the work its first run
//! already did. The algorithm starts again from the beginning; as long as it asks for what it
//! asked before — the same rollouts, in the same order, and the same resources — it is given the
//! rollouts and resources the store already holds (finished ones with their results, unfinished
//! ones to be run), so a deterministic algorithm (the baseline, APO with its seed) walks through
//! its earlier rounds without redoing them and goes on from where it stopped. From the first
//! request that differs, everything goes to the store as usual.
//!
//! [`abandon_running_attempts`] ends the attempts the stopped run left running, as
//! `unresponsive`: their rollouts are retried as their retry config says.

use agl_store::*;
use agl_wasm::algorithm::ATTEMPT_FAILURE_KEY;
use async_trait::async_trait;
use parking_lot::Mutex;
use serde_json::json;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

/// Why an attempt was ended on resume (in its metadata).
pub(crate) const ABANDONED_REASON: &str = "abandoned: the run was stopped while this attempt ran; ended on resume";

/// Ends, as `unresponsive`, the latest attempt of every rollout left preparing or running; returns
/// how many. Their rollouts are requeued or failed by their retry config.
pub async fn abandon_running_attempts(store: &dyn LightningStore) -> StoreResult<usize> {
    let live = store
        .query_rollouts(&RolloutQuery::default().status_in([RolloutStatus::Preparing, RolloutStatus::Running]))
        .await?;
    let mut ended = 0;
    for view in live.items {
        let Some(attempt) = view.attempt.filter(|a| !a.status.has_ended()) else {
            continue;
        };
        let mut metadata = attempt.metadata.clone().unwrap_or_default();
        metadata.insert(ATTEMPT_FAILURE_KEY.into(), json!(ABANDONED_REASON));
        let update = AttemptUpdate {
            metadata: Some(Some(metadata)),
            ..AttemptUpdate::status(AttemptStatus::Unresponsive)
        };
        store
            .update_attempt(&view.rollout.rollout_id, AttemptRef::Id(&attempt.attempt_id), update)
            .await?;
        ended += 1;
    }
    Ok(ended)
}

/// What the earlier run did, in order, still to be handed out.
struct Replay {
    /// The task rollouts (not an algorithm's own), in creation order.
    rollouts: VecDeque<Rollout>,
    /// Whether requests still match: false from the first one that does not.
    matching: bool,
    /// Rollouts and resources handed out again.
    reused_rollouts: usize,
    reused_resources: usize,
    /// The resources version last added or updated since the restart (handed out again or new):
    /// the latest the restarted run has made. The store's own latest may be a later version of
    /// the earlier run, not made again yet.
    latest_resources: Option<ResourcesUpdate>,
}

/// A store that replays the earlier run's rollouts and resources to a restarted algorithm.
pub struct ReplayStore {
    inner: Arc<dyn LightningStore>,
    replay: Mutex<Replay>,
}

/// How much of the earlier run was handed out again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplayCounts {
    pub rollouts: usize,
    pub resources: usize,
}

impl ReplayStore {
    /// Reads what `inner` holds; the replay follows it.
    pub async fn new(inner: Arc<dyn LightningStore>) -> StoreResult<Self> {
        let rollouts = inner
            .query_rollouts(&RolloutQuery::default())
            .await?
            .items
            .into_iter()
            .map(|view| view.rollout)
            .filter(|rollout| !rollout.is_algorithm_rollout())
            .collect();
        Ok(Self {
            inner,
            replay: Mutex::new(Replay {
                rollouts,
                matching: true,
                reused_rollouts: 0,
                reused_resources: 0,
                latest_resources: None,
            }),
        })
    }

    pub fn counts(&self) -> ReplayCounts {
        let replay = self.replay.lock();
        ReplayCounts {
            rollouts: replay.reused_rollouts,
            resources: replay.reused_resources,
        }
    }

    /// The earlier rollout `request` asks for again, if the replay is still on and the next
    /// earlier rollout is that one; otherwise the replay ends.
    fn take_match(&self, request: &EnqueueRolloutRequest) -> Option<Rollout> {
        let mut replay = self.replay.lock();
        if !replay.matching {
            return None;
        }
        let same = replay.rollouts.front().is_some_and(|earlier| {
            earlier.input == request.input
                && earlier.mode == request.mode
                && request
                    .resources_id
                    .as_ref()
                    .is_none_or(|id| earlier.resources_id.as_ref() == Some(id))
        });
        if same {
            replay.reused_rollouts += 1;
            replay.rollouts.pop_front()
        } else {
            replay.matching = false;
            replay.rollouts.clear();
            None
        }
    }

    fn still_matching(&self) -> bool {
        self.replay.lock().matching
    }

    /// Notes `version` as the latest the restarted run has made.
    fn made(&self, version: ResourcesUpdate) -> ResourcesUpdate {
        self.replay.lock().latest_resources = Some(version.clone());
        version
    }
}

#[async_trait]
impl LightningStore for ReplayStore {
    async fn start_rollout(&self, request: StartRolloutRequest) -> StoreResult<AttemptedRollout> {
        self.inner.start_rollout(request).await
    }

    async fn enqueue_rollouts(&self, requests: Vec<EnqueueRolloutRequest>) -> StoreResult<Vec<Rollout>> {
        let mut out = Vec::with_capacity(requests.len());
        let mut fresh = Vec::new();
        for request in requests {
            match (fresh.is_empty(), self.take_match(&request)) {
                (true, Some(earlier)) => {
                    // Handed out as it is now (it may have finished, or been requeued on resume).
                    let now = self.inner.get_rollout_by_id(&earlier.rollout_id).await?;
                    out.push(now.map_or(earlier, |view| view.rollout));
                }
                _ => fresh.push(request),
            }
        }
        if !fresh.is_empty() {
            out.extend(self.inner.enqueue_rollouts(fresh).await?);
        }
        Ok(out)
    }

    async fn dequeue_rollouts(&self, limit: usize, worker_id: Option<&str>) -> StoreResult<Vec<AttemptedRollout>> {
        self.inner.dequeue_rollouts(limit, worker_id).await
    }

    async fn start_attempt(&self, rollout_id: &str, worker_id: Option<&str>) -> StoreResult<AttemptedRollout> {
        self.inner.start_attempt(rollout_id, worker_id).await
    }

    async fn update_rollout(&self, rollout_id: &str, update: RolloutUpdate) -> StoreResult<Rollout> {
        self.inner.update_rollout(rollout_id, update).await
    }

    async fn update_attempt(
        &self,
        rollout_id: &str,
        attempt: AttemptRef<'_>,
        update: AttemptUpdate,
    ) -> StoreResult<Attempt> {
        self.inner.update_attempt(rollout_id, attempt, update).await
    }

    async fn query_rollouts(&self, query: &RolloutQuery) -> StoreResult<Paginated<RolloutView>> {
        self.inner.query_rollouts(query).await
    }

    async fn query_attempts(&self, rollout_id: &str, query: &AttemptQuery) -> StoreResult<Paginated<Attempt>> {
        self.inner.query_attempts(rollout_id, query).await
    }

    async fn query_spans(&self, query: &SpanQuery) -> StoreResult<Paginated<Arc<Span>>> {
        self.inner.query_spans(query).await
    }

    async fn query_resources(&self, query: &ResourcesQuery) -> StoreResult<Paginated<ResourcesUpdate>> {
        self.inner.query_resources(query).await
    }

    async fn query_workers(&self, query: &WorkerQuery) -> StoreResult<Paginated<Worker>> {
        self.inner.query_workers(query).await
    }

    async fn get_rollout_by_id(&self, rollout_id: &str) -> StoreResult<Option<RolloutView>> {
        self.inner.get_rollout_by_id(rollout_id).await
    }

    async fn get_latest_attempt(&self, rollout_id: &str) -> StoreResult<Option<Attempt>> {
        self.inner.get_latest_attempt(rollout_id).await
    }

    async fn add_spans(&self, spans: Vec<Span>) -> StoreResult<Vec<Arc<Span>>> {
        self.inner.add_spans(spans).await
    }

    async fn get_next_span_sequence_ids(&self, pairs: &[(&str, &str)]) -> StoreResult<Vec<u64>> {
        self.inner.get_next_span_sequence_ids(pairs).await
    }

    async fn add_resources(&self, resources: NamedResources) -> StoreResult<ResourcesUpdate> {
        // The same bundle as an earlier one is that one again (while the replay lasts).
        if self.still_matching() {
            let earlier = self.inner.query_resources(&ResourcesQuery::default()).await?;
            if let Some(same) = earlier.items.into_iter().find(|r| r.resources == resources) {
                self.replay.lock().reused_resources += 1;
                return Ok(self.made(same));
            }
        }
        self.inner.add_resources(resources).await.map(|added| self.made(added))
    }

    async fn update_resources(&self, resources_id: &str, resources: NamedResources) -> StoreResult<ResourcesUpdate> {
        if self.still_matching()
            && let Some(same) = self
                .inner
                .get_resources_by_id(resources_id)
                .await?
                .filter(|r| r.resources == resources)
        {
            self.replay.lock().reused_resources += 1;
            return Ok(self.made(same));
        }
        self.inner
            .update_resources(resources_id, resources)
            .await
            .map(|updated| self.made(updated))
    }

    /// The latest version the restarted run has made (its initial resources, given again, among
    /// them), as the run saw it at this point before it stopped; the store's own latest until it
    /// has made one.
    async fn get_latest_resources(&self) -> StoreResult<Option<ResourcesUpdate>> {
        let made = self.replay.lock().latest_resources.clone();
        match made {
            Some(version) => Ok(Some(version)),
            None => self.inner.get_latest_resources().await,
        }
    }

    async fn get_resources_by_id(&self, resources_id: &str) -> StoreResult<Option<ResourcesUpdate>> {
        self.inner.get_resources_by_id(resources_id).await
    }

    async fn update_worker(&self, worker_id: &str, update: WorkerUpdate) -> StoreResult<Worker> {
        self.inner.update_worker(worker_id, update).await
    }

    async fn get_worker_by_id(&self, worker_id: &str) -> StoreResult<Option<Worker>> {
        self.inner.get_worker_by_id(worker_id).await
    }

    async fn wait_for_rollouts(&self, rollout_ids: &[String], timeout: Option<Duration>) -> StoreResult<Vec<Rollout>> {
        self.inner.wait_for_rollouts(rollout_ids, timeout).await
    }

    async fn add_recording(&self, recording: Recording) -> StoreResult<RecordingStored> {
        self.inner.add_recording(recording).await
    }

    async fn get_recording(&self, rollout_id: &str, attempt_id: &str) -> StoreResult<Option<Recording>> {
        self.inner.get_recording(rollout_id, attempt_id).await
    }

    async fn statistics(&self) -> StoreResult<Statistics> {
        self.inner.statistics().await
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(i: i64) -> EnqueueRolloutRequest {
        EnqueueRolloutRequest::new(json!({ "i": i }))
    }

    #[tokio::test]
    async fn the_same_requests_get_the_earlier_rollouts_until_one_differs() {
        let store: Arc<dyn LightningStore> = Arc::new(InMemoryLightningStore::new());
        let earlier = store.enqueue_rollouts(vec![task(1), task(2), task(3)]).await.unwrap();
        let replay = ReplayStore::new(store.clone()).await.unwrap();
        let again = replay.enqueue_rollouts(vec![task(1), task(2)]).await.unwrap();
        assert_eq!(again[0].rollout_id, earlier[0].rollout_id);
        assert_eq!(again[1].rollout_id, earlier[1].rollout_id);
        // task 4 where task 3 was: the replay ends; task 3 is not handed out any more.
        let new = replay.enqueue_rollouts(vec![task(4), task(3)]).await.unwrap();
        assert!(new.iter().all(|r| earlier.iter().all(|e| e.rollout_id != r.rollout_id)));
        assert_eq!(replay.counts().rollouts, 2);
        assert_eq!(store.statistics().await.unwrap().total_rollouts, 5);
    }

    #[tokio::test]
    async fn the_same_resources_are_the_earlier_version() {
        let store: Arc<dyn LightningStore> = Arc::new(InMemoryLightningStore::new());
        let mut resources = NamedResources::new();
        resources.insert(
            "prompt".into(),
            Resource::PromptTemplate(PromptTemplate {
                template: "Q: {q}".into(),
                engine: TemplateEngine::FString,
            }),
        );
        let v1 = store.update_resources("v1", resources.clone()).await.unwrap();
        let replay = ReplayStore::new(store.clone()).await.unwrap();
        assert_eq!(replay.update_resources("v1", resources.clone()).await.unwrap(), v1);
        assert_eq!(replay.add_resources(resources).await.unwrap(), v1);
        assert_eq!(replay.counts().resources, 2);
    }

    #[tokio::test]
    async fn the_latest_resources_are_the_latest_the_restarted_run_made() {
        let store: Arc<dyn LightningStore> = Arc::new(InMemoryLightningStore::new());
        let prompt = |template: &str| {
            let mut resources = NamedResources::new();
            resources.insert(
                "prompt".into(),
                Resource::PromptTemplate(PromptTemplate {
                    template: template.into(),
                    engine: TemplateEngine::FString,
                }),
            );
            resources
        };
        // The earlier run: its initial resources, then two versions of its algorithm.
        let initial = store.add_resources(prompt("Q: {q}")).await.unwrap();
        let v0 = store.update_resources("v0", prompt("Q: {q}")).await.unwrap();
        let v1 = store.update_resources("v1", prompt("Answer Q: {q}")).await.unwrap();
        assert_eq!(store.get_latest_resources().await.unwrap(), Some(v1.clone()));

        let replay = ReplayStore::new(store.clone()).await.unwrap();
        // Restarted, the run gives its initial resources again: that is its latest, not v1.
        assert_eq!(replay.add_resources(prompt("Q: {q}")).await.unwrap(), initial);
        assert_eq!(replay.get_latest_resources().await.unwrap(), Some(initial));
        assert_eq!(replay.update_resources("v0", prompt("Q: {q}")).await.unwrap(), v0);
        assert_eq!(replay.get_latest_resources().await.unwrap(), Some(v0));
        assert_eq!(
            replay.update_resources("v1", prompt("Answer Q: {q}")).await.unwrap(),
            v1
        );
        assert_eq!(replay.get_latest_resources().await.unwrap(), Some(v1));
    }

    #[tokio::test]
    async fn attempts_left_running_end_unresponsive_and_retryable_rollouts_go_back_to_the_queue() {
        let store = InMemoryLightningStore::new();
        let retry = RolloutConfig {
            max_attempts: 2,
            retry_condition: vec![AttemptStatus::Unresponsive],
            ..RolloutConfig::default()
        };
        store
            .enqueue_rollouts(vec![task(1).config(retry), task(2)])
            .await
            .unwrap();
        let taken = store.dequeue_rollouts(2, Some("w")).await.unwrap();
        assert_eq!(abandon_running_attempts(&store).await.unwrap(), 2);
        let first = store
            .get_rollout_by_id(&taken[0].rollout.rollout_id)
            .await
            .unwrap()
            .unwrap();
        let second = store
            .get_rollout_by_id(&taken[1].rollout.rollout_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(first.rollout.status, RolloutStatus::Requeuing);
        assert_eq!(second.rollout.status, RolloutStatus::Failed, "no retry in its config");
        let attempt = second.attempt.unwrap();
        assert_eq!(attempt.status, AttemptStatus::Unresponsive);
        assert_eq!(attempt.metadata.unwrap()[ATTEMPT_FAILURE_KEY], json!(ABANDONED_REASON));
    }
}
