//! Conversions between the store's model and the algorithm world's WIT records.

use super::bindings::store as wit;
use crate::bindings::wit_mode;
use agl_store::{Attempt, Rollout, RolloutStatus};

/// The attempt metadata key under which a runner records why an attempt failed.
pub const ATTEMPT_FAILURE_KEY: &str = "failure";

pub(crate) fn wit_status(status: RolloutStatus) -> wit::RolloutStatus {
    match status {
        RolloutStatus::Queuing => wit::RolloutStatus::Queuing,
        RolloutStatus::Preparing => wit::RolloutStatus::Preparing,
        RolloutStatus::Running => wit::RolloutStatus::Running,
        RolloutStatus::Failed => wit::RolloutStatus::Failed,
        RolloutStatus::Succeeded => wit::RolloutStatus::Succeeded,
        RolloutStatus::Cancelled => wit::RolloutStatus::Cancelled,
        RolloutStatus::Requeuing => wit::RolloutStatus::Requeuing,
    }
}

pub(crate) fn store_status(status: wit::RolloutStatus) -> RolloutStatus {
    match status {
        wit::RolloutStatus::Queuing => RolloutStatus::Queuing,
        wit::RolloutStatus::Preparing => RolloutStatus::Preparing,
        wit::RolloutStatus::Running => RolloutStatus::Running,
        wit::RolloutStatus::Failed => RolloutStatus::Failed,
        wit::RolloutStatus::Succeeded => RolloutStatus::Succeeded,
        wit::RolloutStatus::Cancelled => RolloutStatus::Cancelled,
        wit::RolloutStatus::Requeuing => RolloutStatus::Requeuing,
    }
}

/// Why an attempt failed, as its runner recorded it.
pub fn attempt_failure(attempt: &Attempt) -> Option<String> {
    let value = attempt.metadata.as_ref()?.get(ATTEMPT_FAILURE_KEY)?;
    Some(value.as_str().map_or_else(|| value.to_string(), str::to_owned))
}

/// A store rollout (with its latest attempt, when known) as the WIT record.
pub(crate) fn wit_rollout(rollout: &Rollout, latest: Option<&Attempt>) -> wit::Rollout {
    wit::Rollout {
        rollout_id: rollout.rollout_id.clone(),
        input_json: rollout.input.to_string(),
        mode: rollout.mode.map(wit_mode),
        resources_id: rollout.resources_id.clone(),
        status: wit_status(rollout.status),
        attempts: latest.map_or(0, |a| a.sequence_id),
        failure: latest.and_then(attempt_failure),
        start_time: rollout.start_time,
        end_time: rollout.end_time,
    }
}
