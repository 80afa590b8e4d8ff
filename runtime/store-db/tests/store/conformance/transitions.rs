//! The seed's status machine, one test per row of the rollout transition table and per arrow of
//! the attempt diagram (`store.md`), driven through each backend on a manual clock.

use crate::backends::manual_store;
use crate::common::*;
use agl_store::AttemptStatus as A;
use agl_store::RolloutStatus as R;
use agl_store::*;
use agl_testkit::{Backend, each_backend};

// ---- rollout transition table ----------------------------------------------------------------

#[each_backend]
async fn row_na_to_queuing_on_enqueue(backend: Backend) {
    let (store, _) = manual_store(backend);
    let r = enqueue(&store, RolloutConfig::default()).await;
    assert_eq!(r.status, R::Queuing);
    assert!(r.end_time.is_none());
    assert!(rollout(&store, &r.rollout_id).await.attempt.is_none());
    store.check_invariants().await.unwrap();
}

#[each_backend]
async fn row_preparing_from_queuing_on_dequeue(backend: Backend) {
    let (store, _) = manual_store(backend);
    enqueue(&store, RolloutConfig::default()).await;
    let ar = dequeue(&store, "w").await;
    assert_eq!(ar.rollout.status, R::Preparing);
    assert_eq!((ar.attempt.status, ar.attempt.sequence_id), (A::Preparing, 1));
    store.check_invariants().await.unwrap();
}

#[each_backend]
async fn row_preparing_from_requeuing_on_dequeue(backend: Backend) {
    let (store, _) = manual_store(backend);
    enqueue(&store, config(2, &[A::Failed])).await;
    let first = dequeue(&store, "w").await;
    set_attempt(&store, &first.attempt, A::Failed).await;
    assert_eq!(
        rollout(&store, &first.rollout.rollout_id).await.rollout.status,
        R::Requeuing
    );
    let second = dequeue(&store, "w").await;
    assert_eq!(second.rollout.rollout_id, first.rollout.rollout_id);
    assert_eq!((second.rollout.status, second.attempt.sequence_id), (R::Preparing, 2));
    store.check_invariants().await.unwrap();
}

#[each_backend]
async fn row_preparing_on_start_rollout_and_start_attempt(backend: Backend) {
    let (store, _) = manual_store(backend);
    let started = store
        .start_rollout(StartRolloutRequest {
            rollout: EnqueueRolloutRequest::new(serde_json::json!("hello")),
            worker_id: Some("w".into()),
        })
        .await
        .unwrap();
    assert_eq!(
        (started.rollout.status, started.attempt.status),
        (R::Preparing, A::Preparing)
    );
    assert_eq!(store.queue_len().await.unwrap(), 0, "start_rollout bypasses the queue");
    set_attempt(&store, &started.attempt, A::Failed).await;
    let again = store.start_attempt(&started.rollout.rollout_id, None).await.unwrap();
    assert_eq!((again.rollout.status, again.attempt.sequence_id), (R::Preparing, 2));
    store.check_invariants().await.unwrap();
}

#[each_backend]
async fn row_running_from_preparing_on_first_span(backend: Backend) {
    let (store, _) = manual_store(backend);
    enqueue(&store, RolloutConfig::default()).await;
    let ar = dequeue(&store, "w").await;
    add_span(&store, &ar.attempt).await.unwrap();
    let view = rollout(&store, &ar.rollout.rollout_id).await;
    assert_eq!(view.rollout.status, R::Running);
    assert_eq!(view.attempt.unwrap().status, A::Running);
}

#[each_backend]
async fn row_running_from_requeuing_and_queuing_on_span_of_latest_attempt(backend: Backend) {
    let (store, clock) = manual_store(backend);
    let mut cfg = config(2, &[A::Unresponsive]);
    cfg.unresponsive_seconds = Some(5.0);
    enqueue(&store, cfg).await;
    let ar = dequeue(&store, "w").await;
    clock.advance(6.0);
    assert_eq!(store.run_watchdog().await.unwrap(), 1);
    assert_eq!(
        rollout(&store, &ar.rollout.rollout_id).await.rollout.status,
        R::Requeuing
    );
    add_span(&store, &ar.attempt).await.unwrap();
    assert_eq!(rollout(&store, &ar.rollout.rollout_id).await.rollout.status, R::Running);

    store
        .update_rollout(&ar.rollout.rollout_id, RolloutUpdate::status(R::Queuing))
        .await
        .unwrap();
    add_span(&store, &ar.attempt).await.unwrap();
    assert_eq!(rollout(&store, &ar.rollout.rollout_id).await.rollout.status, R::Running);
    assert!(
        store.dequeue_rollout(None).await.unwrap().is_none(),
        "the stale queue entry is skipped"
    );
    store.check_invariants().await.unwrap();
}

#[each_backend]
async fn row_succeeded_from_any_on_succeeded_attempt(backend: Backend) {
    let (store, _) = manual_store(backend);
    enqueue(&store, RolloutConfig::default()).await;
    let ar = dequeue(&store, "w").await;
    let attempt = set_attempt(&store, &ar.attempt, A::Succeeded).await;
    assert!(attempt.end_time.is_some());
    let view = rollout(&store, &ar.rollout.rollout_id).await;
    assert_eq!(view.rollout.status, R::Succeeded);
    assert!(view.rollout.end_time.is_some());
    store.check_invariants().await.unwrap();
}

#[each_backend]
async fn row_requeuing_when_status_in_retry_condition_and_attempts_left(backend: Backend) {
    for failure in [A::Failed, A::Timeout, A::Unresponsive] {
        let (store, _) = manual_store(backend);
        enqueue(&store, config(3, &[failure])).await;
        let ar = dequeue(&store, "w").await;
        set_attempt(&store, &ar.attempt, failure).await;
        let view = rollout(&store, &ar.rollout.rollout_id).await;
        assert_eq!(view.rollout.status, R::Requeuing, "{failure}");
        assert!(view.rollout.end_time.is_none());
        assert_eq!(store.queue_len().await.unwrap(), 1, "requeued exactly once");
        store.check_invariants().await.unwrap();
    }
}

#[each_backend]
async fn row_failed_when_not_retryable_or_out_of_attempts(backend: Backend) {
    for (max_attempts, retry_on, failure) in [
        (3, vec![], A::Failed),
        (3, vec![A::Timeout], A::Failed),
        (1, vec![A::Failed], A::Failed),
        (1, vec![A::Timeout], A::Timeout),
        (1, vec![A::Unresponsive], A::Unresponsive),
    ] {
        let (store, _) = manual_store(backend);
        enqueue(&store, config(max_attempts, &retry_on)).await;
        let ar = dequeue(&store, "w").await;
        set_attempt(&store, &ar.attempt, failure).await;
        let view = rollout(&store, &ar.rollout.rollout_id).await;
        assert_eq!(
            view.rollout.status,
            R::Failed,
            "{failure} with {retry_on:?} max {max_attempts}"
        );
        assert!(view.rollout.end_time.is_some());
        assert_eq!(store.queue_len().await.unwrap(), 0);
    }
}

#[each_backend]
async fn row_failed_when_the_last_allowed_attempt_fails(backend: Backend) {
    let (store, _) = manual_store(backend);
    enqueue(&store, config(2, &[A::Failed])).await;
    let first = dequeue(&store, "w").await;
    set_attempt(&store, &first.attempt, A::Failed).await;
    let second = dequeue(&store, "w").await;
    set_attempt(&store, &second.attempt, A::Failed).await;
    assert_eq!(
        rollout(&store, &first.rollout.rollout_id).await.rollout.status,
        R::Failed
    );
    assert!(store.dequeue_rollout(None).await.unwrap().is_none());
}

#[each_backend]
async fn row_cancelled_from_any_on_update_rollout(backend: Backend) {
    let (store, _) = manual_store(backend);
    let first = enqueue(&store, RolloutConfig::default()).await;
    let queued = enqueue(&store, RolloutConfig::default()).await;
    let running = dequeue(&store, "w").await;
    assert_eq!(running.rollout.rollout_id, first.rollout_id, "FIFO");
    let finished = enqueue(&store, RolloutConfig::default()).await;
    // One rollout in each state: preparing, succeeded, preparing with a late runner, queuing.
    let mut to_cancel = vec![queued.rollout_id.clone()];
    let ar = dequeue(&store, "w2").await;
    assert_eq!(ar.rollout.rollout_id, queued.rollout_id);
    let ar = dequeue(&store, "w2").await;
    assert_eq!(ar.rollout.rollout_id, finished.rollout_id);
    set_attempt(&store, &ar.attempt, A::Succeeded).await;
    to_cancel.push(finished.rollout_id.clone());
    to_cancel.push(first.rollout_id.clone());
    let requeued = enqueue(&store, RolloutConfig::default()).await;
    to_cancel.push(requeued.rollout_id.clone());
    for id in &to_cancel {
        let r = store
            .update_rollout(id, RolloutUpdate::status(R::Cancelled))
            .await
            .unwrap();
        assert_eq!(r.status, R::Cancelled);
        assert!(r.end_time.is_some());
    }
    let late = set_attempt(&store, &running.attempt, A::Succeeded).await;
    assert_eq!(late.status, A::Succeeded, "the attempt records the runner's report");
    assert_eq!(
        rollout(&store, &first.rollout_id).await.rollout.status,
        R::Cancelled,
        "cancel sticks"
    );
    assert!(
        store.dequeue_rollout(None).await.unwrap().is_none(),
        "a cancelled rollout is never dequeued"
    );
    store.check_invariants().await.unwrap();
}

// ---- attempt diagram ---------------------------------------------------------------------------

#[each_backend]
async fn arrow_start_to_preparing_by_dequeue_start_rollout_or_start_attempt(backend: Backend) {
    let (store, _) = manual_store(backend);
    enqueue(&store, RolloutConfig::default()).await;
    assert_eq!(dequeue(&store, "w").await.attempt.status, A::Preparing);
    let started = store
        .start_rollout(StartRolloutRequest {
            rollout: EnqueueRolloutRequest::new(1.into()),
            worker_id: None,
        })
        .await
        .unwrap();
    assert_eq!(started.attempt.status, A::Preparing);
    let again = store
        .start_attempt(&started.rollout.rollout_id, Some("w2"))
        .await
        .unwrap();
    assert_eq!(
        (again.attempt.status, again.attempt.worker_id.as_deref()),
        (A::Preparing, Some("w2"))
    );
}

#[each_backend]
async fn arrow_preparing_to_running_on_first_span(backend: Backend) {
    let (store, clock) = manual_store(backend);
    enqueue(&store, RolloutConfig::default()).await;
    let ar = dequeue(&store, "w").await;
    clock.advance(1.5);
    add_span(&store, &ar.attempt).await.unwrap();
    let attempt = store.get_latest_attempt(&ar.rollout.rollout_id).await.unwrap().unwrap();
    assert_eq!(attempt.status, A::Running);
    assert_eq!(attempt.last_heartbeat_time, Some(T0 + 1.5));
}

#[each_backend]
async fn arrow_preparing_to_succeeded_or_failed_by_update_attempt(backend: Backend) {
    for outcome in [A::Succeeded, A::Failed] {
        let (store, _) = manual_store(backend);
        enqueue(&store, RolloutConfig::default()).await;
        let ar = dequeue(&store, "w").await;
        let attempt = store
            .update_attempt(
                &ar.rollout.rollout_id,
                AttemptRef::Latest,
                AttemptUpdate::status(outcome),
            )
            .await
            .unwrap();
        assert_eq!(attempt.status, outcome);
        assert!(attempt.end_time.is_some());
    }
}

#[each_backend]
async fn arrow_running_to_succeeded_or_failed_by_update_attempt(backend: Backend) {
    for outcome in [A::Succeeded, A::Failed] {
        let (store, _) = manual_store(backend);
        enqueue(&store, RolloutConfig::default()).await;
        let ar = dequeue(&store, "w").await;
        add_span(&store, &ar.attempt).await;
        let attempt = set_attempt(&store, &ar.attempt, outcome).await;
        assert_eq!(attempt.status, outcome);
        assert!(attempt.end_time.is_some());
    }
}

#[each_backend]
async fn arrow_running_and_preparing_to_timeout_by_watchdog(backend: Backend) {
    for with_span in [true, false] {
        let (store, clock) = manual_store(backend);
        let mut cfg = config(1, &[]);
        cfg.timeout_seconds = Some(10.0);
        enqueue(&store, cfg).await;
        let ar = dequeue(&store, "w").await;
        if with_span {
            add_span(&store, &ar.attempt).await;
        }
        clock.advance(10.0);
        assert_eq!(
            store.run_watchdog().await.unwrap(),
            0,
            "exactly at the limit is not over it"
        );
        clock.advance(0.5);
        // The watchdog also runs before any call: a read sees the verdict without a tick.
        let attempt = store.get_latest_attempt(&ar.rollout.rollout_id).await.unwrap().unwrap();
        assert_eq!(attempt.status, A::Timeout);
        assert!(attempt.end_time.is_some());
        assert_eq!(rollout(&store, &ar.rollout.rollout_id).await.rollout.status, R::Failed);
        store.check_invariants().await.unwrap();
    }
}

#[each_backend]
async fn arrow_running_to_unresponsive_by_watchdog_counting_from_last_heartbeat(backend: Backend) {
    let (store, clock) = manual_store(backend);
    let mut cfg = config(1, &[]);
    cfg.unresponsive_seconds = Some(5.0);
    enqueue(&store, cfg).await;
    let ar = dequeue(&store, "w").await;
    clock.advance(4.0);
    add_span(&store, &ar.attempt).await;
    clock.advance(4.0);
    assert_eq!(store.run_watchdog().await.unwrap(), 0, "the span moved the deadline");
    clock.advance(1.5);
    assert_eq!(store.run_watchdog().await.unwrap(), 1);
    let attempt = store.get_latest_attempt(&ar.rollout.rollout_id).await.unwrap().unwrap();
    assert_eq!(attempt.status, A::Unresponsive);
}

#[each_backend]
async fn arrow_preparing_to_unresponsive_by_watchdog_counting_from_start(backend: Backend) {
    let (store, clock) = manual_store(backend);
    let mut cfg = config(1, &[]);
    cfg.unresponsive_seconds = Some(5.0);
    enqueue(&store, cfg).await;
    let ar = dequeue(&store, "w").await;
    clock.advance(5.5);
    assert_eq!(store.run_watchdog().await.unwrap(), 1);
    assert_eq!(
        store
            .get_latest_attempt(&ar.rollout.rollout_id)
            .await
            .unwrap()
            .unwrap()
            .status,
        A::Unresponsive
    );
}

#[each_backend]
async fn arrow_unresponsive_to_running_on_span(backend: Backend) {
    let (store, clock) = manual_store(backend);
    let mut cfg = config(1, &[]);
    cfg.unresponsive_seconds = Some(5.0);
    enqueue(&store, cfg).await;
    let ar = dequeue(&store, "w").await;
    clock.advance(6.0);
    store.run_watchdog().await.unwrap();
    add_span(&store, &ar.attempt).await.unwrap();
    let attempt = store.get_latest_attempt(&ar.rollout.rollout_id).await.unwrap().unwrap();
    assert_eq!(attempt.status, A::Running);
    // Revived, it is watched again: another silence makes it unresponsive again.
    clock.advance(6.0);
    assert_eq!(
        store.run_watchdog().await.unwrap(),
        0,
        "its rollout already failed, so the watchdog leaves it"
    );
    assert_eq!(rollout(&store, &ar.rollout.rollout_id).await.rollout.status, R::Failed);
}

#[each_backend]
async fn a_revived_attempt_of_a_requeued_rollout_is_watched_again(backend: Backend) {
    let (store, clock) = manual_store(backend);
    let mut cfg = config(3, &[A::Unresponsive]);
    cfg.unresponsive_seconds = Some(5.0);
    enqueue(&store, cfg).await;
    let ar = dequeue(&store, "w").await;
    clock.advance(6.0);
    assert_eq!(store.run_watchdog().await.unwrap(), 1);
    add_span(&store, &ar.attempt).await.unwrap();
    assert_eq!(rollout(&store, &ar.rollout.rollout_id).await.rollout.status, R::Running);
    clock.advance(6.0);
    assert_eq!(store.run_watchdog().await.unwrap(), 1);
    assert_eq!(
        rollout(&store, &ar.rollout.rollout_id).await.rollout.status,
        R::Requeuing
    );
    store.check_invariants().await.unwrap();
}
