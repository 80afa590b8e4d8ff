//! The status machine, in one place for every backend: how an attempt's status drives its
//! rollout (the seed's rollout transition table), what a span does as a heartbeat, what the
//! watchdog decides, and how a worker's status follows its attempts. Pure functions, no storage.

use crate::model::{Attempt, AttemptStatus, RolloutConfig, RolloutStatus, Worker, WorkerStatus};

/// Rollout status from its latest attempt: preparing/running/succeeded pass through;
/// failed/timeout/unresponsive requeue while `status ∈ retry_condition ∧ sequence_id < max_attempts`,
/// else fail.
pub fn rollout_status_from_attempt(attempt: &Attempt, config: &RolloutConfig) -> RolloutStatus {
    match attempt.status {
        AttemptStatus::Preparing => RolloutStatus::Preparing,
        AttemptStatus::Running => RolloutStatus::Running,
        AttemptStatus::Succeeded => RolloutStatus::Succeeded,
        AttemptStatus::Failed | AttemptStatus::Timeout | AttemptStatus::Unresponsive => {
            let retryable = config.retry_condition.contains(&attempt.status);
            if retryable && attempt.sequence_id < config.max_attempts {
                RolloutStatus::Requeuing
            } else {
                RolloutStatus::Failed
            }
        }
    }
}

/// The rollout status after its latest attempt changed, or `None` to leave it.
/// A cancelled rollout stays cancelled: an explicit cancel is not undone by a late runner report.
pub fn propagate_to_rollout(current: RolloutStatus, latest: &Attempt, config: &RolloutConfig) -> Option<RolloutStatus> {
    if current == RolloutStatus::Cancelled {
        return None;
    }
    let derived = rollout_status_from_attempt(latest, config);
    (derived != current).then_some(derived)
}

/// An attempt's status after one of its spans arrives: the first span starts it and a span
/// revives an unresponsive attempt; anything else is unchanged.
pub fn attempt_status_after_span(status: AttemptStatus) -> AttemptStatus {
    match status {
        AttemptStatus::Preparing | AttemptStatus::Unresponsive => AttemptStatus::Running,
        other => other,
    }
}

/// A rollout's status after a span on its latest attempt: preparing/queuing/requeuing → running
/// (the seed's table; a span proves the attempt runs, even if the rollout was put back in line).
pub fn rollout_status_after_span(status: RolloutStatus) -> Option<RolloutStatus> {
    matches!(
        status,
        RolloutStatus::Preparing | RolloutStatus::Queuing | RolloutStatus::Requeuing
    )
    .then_some(RolloutStatus::Running)
}

/// When the attempt would time out, by its start time.
pub fn timeout_at(attempt: &Attempt, config: &RolloutConfig) -> Option<f64> {
    config.timeout_seconds.map(|t| attempt.start_time + t)
}

/// When the attempt would be unresponsive: silence since the last heartbeat, or since the start.
pub fn unresponsive_at(attempt: &Attempt, config: &RolloutConfig) -> Option<f64> {
    let since = attempt.last_heartbeat_time.unwrap_or(attempt.start_time);
    config.unresponsive_seconds.map(|u| since + u)
}

/// The earliest moment the watchdog has something to decide about this attempt.
pub fn watchdog_deadline(attempt: &Attempt, config: &RolloutConfig) -> Option<f64> {
    match (timeout_at(attempt, config), unresponsive_at(attempt, config)) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The watchdog's verdict on the latest attempt of a preparing/running rollout at `now`:
/// timeout first (`now - start > timeout_seconds`), then unresponsive.
pub fn watchdog_verdict(now: f64, attempt: &Attempt, config: &RolloutConfig) -> Option<AttemptStatus> {
    if timeout_at(attempt, config).is_some_and(|at| now > at) {
        return Some(AttemptStatus::Timeout);
    }
    if unresponsive_at(attempt, config).is_some_and(|at| now > at) {
        return Some(AttemptStatus::Unresponsive);
    }
    None
}

/// Derives a worker's record from the attempt it works on.
/// preparing/running → busy on this attempt; succeeded/failed → idle; timeout/unresponsive →
/// unknown. An attempt that is not the worker's current one does not take it off newer work.
pub fn sync_worker_with_attempt(worker: &mut Worker, attempt: &Attempt, now: f64, dequeued: bool) {
    if dequeued {
        worker.last_dequeue_time = Some(now);
    }
    match attempt.status {
        AttemptStatus::Preparing | AttemptStatus::Running => {
            worker.status = WorkerStatus::Busy;
            worker.last_busy_time = Some(now);
            worker.current_rollout_id = Some(attempt.rollout_id.clone());
            worker.current_attempt_id = Some(attempt.attempt_id.clone());
        }
        ended => {
            let is_current = worker.current_attempt_id.as_deref() == Some(attempt.attempt_id.as_str())
                && worker.current_rollout_id.as_deref() == Some(attempt.rollout_id.as_str());
            if !is_current && worker.current_attempt_id.is_some() {
                return;
            }
            worker.status = if matches!(ended, AttemptStatus::Succeeded | AttemptStatus::Failed) {
                WorkerStatus::Idle
            } else {
                WorkerStatus::Unknown
            };
            worker.last_idle_time = Some(now);
            worker.current_rollout_id = None;
            worker.current_attempt_id = None;
        }
    }
}

/// A worker polled an empty queue: it is idle unless it still holds an attempt.
pub fn mark_worker_polled_empty(worker: &mut Worker, now: f64) {
    worker.last_dequeue_time = Some(now);
    if worker.current_attempt_id.is_none() && worker.status != WorkerStatus::Idle {
        worker.status = WorkerStatus::Idle;
        worker.last_idle_time = Some(now);
    }
}

/// Whether a rollout entering `status` gets its `end_time` stamped.
pub fn rollout_ends(status: RolloutStatus) -> bool {
    status.is_finished()
}

/// Whether an attempt entering `status` gets its `end_time` stamped.
pub fn attempt_ends(status: AttemptStatus) -> bool {
    status.has_ended()
}
