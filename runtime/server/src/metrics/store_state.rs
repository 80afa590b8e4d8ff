//! The store's state as gauges, read at scrape time through the `LightningStore` trait (so a
//! PostgreSQL store shared by replicas answers the same on each): rollouts and attempts by status,
//! the queue's depth, workers by status and each worker's last heartbeat. Nothing is kept between
//! scrapes.

use super::PREFIX;
use agl_store::{
    AttemptQuery, AttemptStatus, LightningStore, RolloutQuery, RolloutStatus, StoreResult, WorkerQuery, WorkerStatus,
};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

/// Every worker status, in the order they are exposed.
const WORKER_STATUSES: [WorkerStatus; 3] = [WorkerStatus::Idle, WorkerStatus::Busy, WorkerStatus::Unknown];

/// What the store held at one scrape, or nothing when it could not be read.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct StoreState {
    counts: Option<Counts>,
}

#[derive(Debug, Clone, PartialEq, Default)]
struct Counts {
    /// By status, in [`RolloutStatus::ALL`]'s order.
    rollouts: [u64; RolloutStatus::ALL.len()],
    /// By status, in [`AttemptStatus::ALL`]'s order.
    attempts: [u64; AttemptStatus::ALL.len()],
    /// By status, in [`WORKER_STATUSES`]' order.
    workers: [u64; WORKER_STATUSES.len()],
    /// (worker id, Unix time of its last heartbeat), for the workers that sent one.
    last_heartbeats: Vec<(String, f64)>,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    status: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WorkerLabel {
    worker_id: String,
}

impl StoreState {
    /// The state of a store that could not be read: only `agl_store_up 0` is exposed.
    pub(crate) fn unread() -> Self {
        Self::default()
    }

    /// Reads the store: every rollout with its latest attempt in one query, then the earlier
    /// attempts of the (few) rollouts that were retried, then the workers.
    pub(crate) async fn read(store: &dyn LightningStore) -> StoreResult<Self> {
        let mut counts = Counts::default();
        let rollouts = store.query_rollouts(&RolloutQuery::default()).await?;
        for view in &rollouts.items {
            counts.rollouts[position(&RolloutStatus::ALL, view.rollout.status)] += 1;
            match &view.attempt {
                Some(latest) if latest.sequence_id > 1 => {
                    let attempts = store
                        .query_attempts(&view.rollout.rollout_id, &AttemptQuery::default())
                        .await?;
                    for attempt in &attempts.items {
                        counts.attempts[position(&AttemptStatus::ALL, attempt.status)] += 1;
                    }
                }
                Some(only) => counts.attempts[position(&AttemptStatus::ALL, only.status)] += 1,
                None => {}
            }
        }
        let workers = store.query_workers(&WorkerQuery::default()).await?;
        for worker in workers.items {
            counts.workers[position(&WORKER_STATUSES, worker.status)] += 1;
            if let Some(at) = worker.last_heartbeat_time {
                counts.last_heartbeats.push((worker.worker_id, at));
            }
        }
        Ok(Self { counts: Some(counts) })
    }

    /// The gauges, in a registry of their own (made for this one scrape).
    pub(crate) fn registry(&self) -> Registry {
        let mut registry = Registry::with_prefix(PREFIX);
        let up = Gauge::<i64>::default();
        up.set(i64::from(self.counts.is_some()));
        registry.register(
            "store_up",
            "1 when this scrape could read the store, 0 when it failed (the server logs why); the other store gauges are then absent",
            up,
        );
        let Some(counts) = &self.counts else {
            return registry;
        };

        let rollouts = statuses(RolloutStatus::ALL.map(RolloutStatus::as_str), &counts.rollouts);
        registry.register("rollouts", "Rollouts in the store, by status", rollouts);
        let queue_depth = Gauge::<i64>::default();
        let queuing: u64 = RolloutStatus::ALL
            .iter()
            .zip(&counts.rollouts)
            .filter(|(status, _)| status.is_queuing())
            .map(|(_, n)| n)
            .sum();
        queue_depth.set(as_i64(queuing));
        registry.register(
            "rollout_queue_depth",
            "Rollouts waiting for a runner (queuing or requeuing)",
            queue_depth,
        );
        let attempts = statuses(AttemptStatus::ALL.map(AttemptStatus::as_str), &counts.attempts);
        registry.register("attempts", "Attempts in the store, by status", attempts);
        let workers = statuses(WORKER_STATUSES.map(WorkerStatus::as_str), &counts.workers);
        registry.register("workers", "Workers (runners) the store knows, by status", workers);

        let heartbeats = Family::<WorkerLabel, Gauge<f64, AtomicU64>>::default();
        for (worker_id, at) in &counts.last_heartbeats {
            heartbeats
                .get_or_create(&WorkerLabel {
                    worker_id: worker_id.clone(),
                })
                .set(*at);
        }
        registry.register(
            "worker_last_heartbeat_timestamp_seconds",
            "Unix time of each worker's last heartbeat (seconds since it: time() minus this)",
            heartbeats,
        );
        registry
    }
}

/// A gauge per status, every status present (0 when none has it).
fn statuses<const N: usize>(names: [&'static str; N], counts: &[u64; N]) -> Family<StatusLabel, Gauge> {
    let family = Family::<StatusLabel, Gauge>::default();
    for (status, n) in names.into_iter().zip(counts) {
        family.get_or_create(&StatusLabel { status }).set(as_i64(*n));
    }
    family
}

/// Where `status` sits in `all` (every status is in its `ALL` list).
fn position<T: PartialEq + Copy>(all: &[T], status: T) -> usize {
    all.iter().position(|s| *s == status).unwrap_or_default()
}

fn as_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agl_store::{EnqueueRolloutRequest, InMemoryLightningStore, WorkerUpdate};

    fn encoded(state: &StoreState) -> String {
        let mut text = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut text, &state.registry()).expect("encodes");
        text
    }

    #[test]
    fn an_unread_store_shows_only_that_it_is_down() {
        let text = encoded(&StoreState::unread());
        let samples: Vec<_> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(samples, ["agl_store_up 0"]);
    }

    #[tokio::test]
    async fn every_status_is_counted_and_retried_rollouts_count_each_attempt() {
        let store = InMemoryLightningStore::new();
        let requests = (0..3)
            .map(|i| EnqueueRolloutRequest::new(serde_json::json!(i)))
            .collect();
        store.enqueue_rollouts(requests).await.expect("enqueued");
        let taken = store
            .dequeue_rollout(Some("w-1"))
            .await
            .expect("dequeue")
            .expect("one queued");
        // A second attempt on the same rollout: two attempts, both preparing.
        store
            .start_attempt(&taken.rollout.rollout_id, Some("w-1"))
            .await
            .expect("second attempt");
        store
            .update_worker("w-2", WorkerUpdate::default())
            .await
            .expect("heartbeat");

        let state = StoreState::read(&store).await.expect("read");
        let counts = state.counts.clone().expect("read");
        let rollouts: Vec<_> = RolloutStatus::ALL.iter().zip(counts.rollouts).collect();
        assert!(rollouts.contains(&(&RolloutStatus::Queuing, 2)), "{rollouts:?}");
        assert!(rollouts.contains(&(&RolloutStatus::Preparing, 1)), "{rollouts:?}");
        assert_eq!(counts.rollouts.iter().sum::<u64>(), 3);
        assert_eq!(
            counts.attempts[position(&AttemptStatus::ALL, AttemptStatus::Preparing)],
            2
        );
        assert_eq!(counts.attempts.iter().sum::<u64>(), 2);
        assert_eq!(counts.workers.iter().sum::<u64>(), 2);
        assert_eq!(counts.last_heartbeats.len(), 1, "only w-2 sent a heartbeat");
        assert_eq!(counts.last_heartbeats[0].0, "w-2");

        let text = encoded(&state);
        for line in [
            "agl_store_up 1",
            "agl_rollouts{status=\"queuing\"} 2",
            "agl_rollouts{status=\"succeeded\"} 0",
            "agl_rollout_queue_depth 2",
            "agl_attempts{status=\"preparing\"} 2",
            "agl_attempts{status=\"timeout\"} 0",
        ] {
            assert!(text.lines().any(|l| l == line), "no line {line:?} in:\n{text}");
        }
    }
}
