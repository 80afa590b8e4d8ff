//! One split against the host: its tasks enqueued in batches as rollouts of its mode, and what
//! became of each once the waiting is over (the final reward of those that succeeded).

use agl_algorithm_sdk::{Host, Mode, NewRollout, Result, Rollout, RolloutConfig, WaitOutcome};

use crate::stats::Outcome;

/// Rollouts per `enqueue` call.
pub const BATCH: usize = 1024;

/// A split of the datasets: its name in the summary, its rollout mode and its tasks (JSON text).
#[derive(Debug, Clone, Copy)]
pub struct Split<'a> {
    pub name: &'static str,
    pub mode: Mode,
    pub tasks: &'a [String],
}

/// What every rollout of the run shares: the resources version and the rollout config.
#[derive(Debug, Clone, Copy)]
pub struct Settings<'a> {
    pub resources_id: Option<&'a str>,
    pub rollout_config: Option<&'a RolloutConfig>,
}

/// The rollout of one task of `mode`; the task's JSON text is sent as it is.
pub fn new_rollout(task: &str, mode: Mode, settings: Settings<'_>) -> NewRollout {
    let mut rollout = NewRollout::from_json(task).with_mode(mode);
    if let Some(id) = settings.resources_id {
        rollout = rollout.with_resources_id(id);
    }
    if let Some(config) = settings.rollout_config {
        rollout = rollout.with_config(config);
    }
    rollout
}

/// Enqueues one rollout per task of `split`, [`BATCH`] per call; returns their ids in task order.
pub fn enqueue(host: &Host, split: Split<'_>, settings: Settings<'_>) -> Result<Vec<String>> {
    let mut ids = Vec::with_capacity(split.tasks.len());
    for tasks in split.tasks.chunks(BATCH) {
        let batch = tasks.iter().map(|task| new_rollout(task, split.mode, settings));
        let enqueued = host
            .enqueue(batch)
            .map_err(|err| err.context(format!("enqueuing the {} tasks", split.name)))?;
        ids.extend(enqueued.into_iter().map(|rollout| rollout.rollout_id));
    }
    Ok(ids)
}

/// What became of each rollout of `ids`, in order, reading the final reward of each success.
pub fn outcomes(host: &Host, ids: &[String], waited: &WaitOutcome) -> Result<Vec<Outcome>> {
    ids.iter()
        .map(|id| outcome(waited.get(id), || host.final_reward(id, None)))
        .collect()
}

/// A rollout's outcome: a success with the reward `final_reward` reads, or a failure (failed,
/// cancelled, or not finished: `None`).
pub fn outcome(rollout: Option<&Rollout>, final_reward: impl FnOnce() -> Result<Option<f64>>) -> Result<Outcome> {
    match rollout {
        Some(rollout) if rollout.succeeded() => Ok(Outcome::Succeeded(final_reward()?)),
        _ => Ok(Outcome::Failed),
    }
}

#[cfg(test)]
mod tests {
    use agl_algorithm_sdk::{AttemptStatus, Error, RolloutStatus};

    use super::*;

    fn rollout(status: RolloutStatus) -> Rollout {
        Rollout {
            rollout_id: "ro-1".into(),
            input_json: "{}".into(),
            mode: Some(Mode::Val),
            resources_id: None,
            status,
            attempts: 1,
            failure: None,
            start_time: 0.0,
            end_time: Some(1.0),
        }
    }

    #[test]
    fn a_rollout_carries_the_task_mode_resources_and_config() {
        let config = RolloutConfig::default().with_retries(3, [AttemptStatus::Failed]);
        let settings = Settings {
            resources_id: Some("rs-1"),
            rollout_config: Some(&config),
        };
        let rollout = new_rollout(r#"{"q": 1}"#, Mode::Val, settings);
        assert_eq!(rollout.input_json, r#"{"q": 1}"#);
        assert_eq!(rollout.mode, Some(Mode::Val));
        assert_eq!(rollout.resources_id.as_deref(), Some("rs-1"));
        let sent: serde_json::Value = serde_json::from_str(rollout.config_json.as_deref().unwrap()).unwrap();
        assert_eq!(sent["max_attempts"], 3);
        assert!(rollout.metadata_json.is_none());
    }

    #[test]
    fn without_settings_the_store_decides() {
        let settings = Settings {
            resources_id: None,
            rollout_config: None,
        };
        let rollout = new_rollout("{}", Mode::Train, settings);
        assert!(rollout.resources_id.is_none() && rollout.config_json.is_none());
    }

    #[test]
    fn only_successes_read_a_reward() {
        let succeeded = rollout(RolloutStatus::Succeeded);
        assert_eq!(
            outcome(Some(&succeeded), || Ok(Some(0.5))).unwrap(),
            Outcome::Succeeded(Some(0.5))
        );
        assert_eq!(
            outcome(Some(&succeeded), || Ok(None)).unwrap(),
            Outcome::Succeeded(None)
        );
        for status in [RolloutStatus::Failed, RolloutStatus::Cancelled] {
            let reward = || -> Result<Option<f64>> { panic!("a failure has no reward to read") };
            assert_eq!(outcome(Some(&rollout(status)), reward).unwrap(), Outcome::Failed);
        }
        assert_eq!(outcome(None, || Ok(Some(1.0))).unwrap(), Outcome::Failed);
    }

    #[test]
    fn a_reward_the_host_cannot_read_is_an_error() {
        let succeeded = rollout(RolloutStatus::Succeeded);
        let err = outcome(Some(&succeeded), || Err(Error::new("adapter.final-reward: gone"))).unwrap_err();
        assert_eq!(err.message(), "adapter.final-reward: gone");
    }
}
