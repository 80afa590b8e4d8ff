//! Structural invariants of the in-memory state, checked by tests (property tests above all).

use super::state::State;
use crate::model::{AttemptStatus, RolloutStatus, WorkerStatus};

pub(super) fn check(state: &State) -> Result<(), String> {
    let mut queued = vec![0u32; state.rollouts.len()];
    for slot in &state.queue {
        let count = queued
            .get_mut(*slot as usize)
            .ok_or_else(|| format!("queue holds unknown slot {slot}"))?;
        *count += 1;
    }
    let (mut attempts, mut spans) = (0u64, 0u64);
    for (slot, entry) in state.rollouts.iter().enumerate() {
        let rollout = &entry.rollout;
        let id = &rollout.rollout_id;
        if state.slot(id) != Some(slot as u32) {
            return Err(format!("rollout {id} is not reachable by its id"));
        }
        if queued[slot] > 1 {
            return Err(format!("rollout {id} is queued {} times", queued[slot]));
        }
        if entry.in_queue != (queued[slot] == 1) {
            return Err(format!("rollout {id}: in_queue flag disagrees with the queue"));
        }
        let latest = entry.attempts.last();
        match rollout.status {
            RolloutStatus::Queuing | RolloutStatus::Requeuing if queued[slot] != 1 => {
                return Err(format!("{} rollout {id} is not in the queue", rollout.status));
            }
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
        for (position, attempt) in entry.attempts.iter().enumerate() {
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
        }
        if let Some(max) = entry.spans.iter().map(|s| s.sequence_id).max()
            && max > entry.last_span_sequence
        {
            return Err(format!(
                "rollout {id}: span sequence {max} above the counter {}",
                entry.last_span_sequence
            ));
        }
        for (attempt_id, (_, addresses)) in &entry.recordings {
            if !entry.attempts.iter().any(|a| a.attempt_id == *attempt_id) {
                return Err(format!(
                    "rollout {id} keeps a recording of unknown attempt {attempt_id}"
                ));
            }
            if let Some(missing) = addresses.iter().find(|a| !state.blobs.contains_key(*a)) {
                return Err(format!("the recording of {attempt_id} of {id} lacks blob {missing}"));
            }
        }
        attempts += entry.attempts.len() as u64;
        spans += entry.spans.len() as u64;
    }
    let [_, total_attempts, total_spans, _, _] = state.totals();
    if (attempts, spans) != (total_attempts, total_spans) {
        return Err(format!(
            "counters ({total_attempts}, {total_spans}) != stored ({attempts}, {spans})"
        ));
    }
    for worker in state.workers.values() {
        let current = worker
            .current_rollout_id
            .as_deref()
            .zip(worker.current_attempt_id.as_deref());
        match (worker.status, current) {
            (WorkerStatus::Busy, Some((rollout_id, attempt_id))) => {
                let attempt = state
                    .slot(rollout_id)
                    .and_then(|slot| {
                        state.rollouts[slot as usize]
                            .attempts
                            .iter()
                            .find(|a| a.attempt_id == attempt_id)
                    })
                    .ok_or_else(|| format!("worker {} is busy on a missing attempt", worker.worker_id))?;
                if !matches!(attempt.status, AttemptStatus::Preparing | AttemptStatus::Running) {
                    return Err(format!(
                        "worker {} is busy on a {} attempt",
                        worker.worker_id, attempt.status
                    ));
                }
            }
            (WorkerStatus::Busy, None) => {
                return Err(format!("worker {} is busy on nothing", worker.worker_id));
            }
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
