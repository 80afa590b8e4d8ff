//! Shared helpers of the store's conformance suite (`conformance/`), for any backend (the
//! stores themselves come from `main.rs`'s `backends`).

#![allow(dead_code)]

use agl_store::*;
use std::sync::Arc;

pub const T0: f64 = 1_800_000_000.0;

/// A backend under test.
pub type Store = Arc<dyn StoreBackend>;

pub fn config(max_attempts: u32, retry_on: &[AttemptStatus]) -> RolloutConfig {
    RolloutConfig {
        max_attempts,
        retry_condition: retry_on.to_vec(),
        ..RolloutConfig::default()
    }
}

pub async fn enqueue(store: &Store, config: RolloutConfig) -> Rollout {
    store
        .enqueue_rollout(EnqueueRolloutRequest::new(serde_json::json!({"q": 1})).config(config))
        .await
        .expect("enqueue")
}

pub async fn dequeue(store: &Store, worker: &str) -> AttemptedRollout {
    store
        .dequeue_rollout(Some(worker))
        .await
        .expect("dequeue")
        .expect("something queued")
}

pub fn span_for(attempt: &Attempt, sequence_id: u64, span_id: &str) -> Span {
    Span::new(
        &attempt.rollout_id,
        &attempt.attempt_id,
        sequence_id,
        "0".repeat(32),
        span_id,
        "step",
    )
}

pub async fn add_span(store: &Store, attempt: &Attempt) -> Option<Arc<Span>> {
    let seq = store
        .get_next_span_sequence_id(&attempt.rollout_id, &attempt.attempt_id)
        .await
        .unwrap();
    store
        .add_span(span_for(attempt, seq, &format!("{seq:016x}")))
        .await
        .unwrap()
}

pub async fn rollout(store: &Store, id: &str) -> RolloutView {
    store.get_rollout_by_id(id).await.unwrap().expect("rollout exists")
}

pub async fn set_attempt(store: &Store, attempt: &Attempt, status: AttemptStatus) -> Attempt {
    store
        .update_attempt(
            &attempt.rollout_id,
            AttemptRef::Id(&attempt.attempt_id),
            AttemptUpdate::status(status),
        )
        .await
        .unwrap()
}
