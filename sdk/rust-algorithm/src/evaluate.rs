//! Scoring resources versions on tasks (APO's and GEPA's candidates): rollouts of tasks with a
//! given resources version are enqueued (all jobs of a step in one go, so the runners work in
//! parallel), waited for, and scored by mean final reward — a failed, cancelled, timed-out or
//! reward-less rollout counts 0. The same calls in the same order on a replayed store (a resumed
//! run) are handed the rollouts the earlier run finished.

use crate::{Host, Mode, NewRollout, Result, RolloutConfig, RolloutStatus, Trace, WaitOptions, WaitOutcome};

/// Rollouts enqueued per store call.
const ENQUEUE_CHUNK: usize = 1024;

/// Tasks to run with one resources version.
pub struct Job<'a> {
    pub resources_id: &'a str,
    pub tasks: Vec<&'a str>,
    pub mode: Mode,
}

/// How one rollout ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub rollout_id: String,
    /// `succeeded`, `failed`, `cancelled`, or `unfinished` (did not end within the timeout).
    pub status: &'static str,
    pub reward: f64,
    /// Why it failed, when the runner said.
    pub failure: Option<String>,
}

/// The outcomes of one job and their mean reward.
#[derive(Debug, Clone)]
pub struct Evaluation {
    pub outcomes: Vec<Outcome>,
}

impl Evaluation {
    pub fn score(&self) -> f64 {
        mean(self.outcomes.iter().map(|o| o.reward))
    }
}

/// The mean of `values` (0 when there are none).
pub fn mean(values: impl IntoIterator<Item = f64>) -> f64 {
    let (sum, count) = values.into_iter().fold((0.0, 0usize), |(s, c), v| (s + v, c + 1));
    if count == 0 { 0.0 } else { sum / count as f64 }
}

/// How [`run_jobs`] runs rollouts.
#[derive(Debug, Clone, Copy)]
pub struct Settings<'a> {
    /// Who is asking, the prefix of the log lines (`apo`, `gepa`).
    pub who: &'a str,
    pub rollout_config: Option<&'a RolloutConfig>,
    /// Seconds to wait for all rollouts of one call.
    pub timeout_seconds: f64,
}

/// Runs every job's tasks and returns one evaluation per job, in order. `label` prefixes the
/// progress line ("round 2: candidates on val").
pub fn run_jobs(host: &Host, jobs: &[Job<'_>], settings: &Settings<'_>, label: &str) -> Result<Vec<Evaluation>> {
    let mut requests = Vec::new();
    for job in jobs {
        for task in &job.tasks {
            let mut rollout = NewRollout::from_json(*task)
                .with_mode(job.mode)
                .with_resources_id(job.resources_id);
            if let Some(config) = settings.rollout_config {
                rollout = rollout.with_config(config);
            }
            requests.push(rollout);
        }
    }
    let mut ids = Vec::with_capacity(requests.len());
    let mut requests = requests.into_iter().peekable();
    while requests.peek().is_some() {
        let chunk: Vec<NewRollout> = requests.by_ref().take(ENQUEUE_CHUNK).collect();
        ids.extend(host.enqueue(chunk)?.into_iter().map(|r| r.rollout_id));
    }
    let options = WaitOptions::default().with_timeout_seconds(settings.timeout_seconds);
    let waited = host.wait_all(&ids, &options, |done, total| {
        host.status(&format!("{label}: {done}/{total} rollouts finished"));
    })?;
    if !waited.all_finished() {
        host.warn(&format!(
            "{}: {label}: {} of {} rollouts did not finish within {} s; they are cancelled and score 0",
            settings.who,
            waited.unfinished.len(),
            ids.len(),
            settings.timeout_seconds
        ));
        for id in &waited.unfinished {
            if let Err(e) = host.cancel(id) {
                host.warn(&format!("{}: cannot cancel {id}: {e}", settings.who));
            }
        }
    }
    let mut ids = ids.into_iter();
    let mut evaluations = Vec::with_capacity(jobs.len());
    for job in jobs {
        let mut outcomes = Vec::with_capacity(job.tasks.len());
        for rollout_id in ids.by_ref().take(job.tasks.len()) {
            outcomes.push(outcome(host, &waited, rollout_id)?);
        }
        evaluations.push(Evaluation { outcomes });
    }
    Ok(evaluations)
}

fn outcome(host: &Host, waited: &WaitOutcome, rollout_id: String) -> Result<Outcome> {
    let Some(rollout) = waited.get(&rollout_id) else {
        return Ok(Outcome {
            rollout_id,
            status: "unfinished",
            reward: 0.0,
            failure: Some("did not finish in time".into()),
        });
    };
    let (status, reward) = match rollout.status {
        RolloutStatus::Succeeded => {
            let reward = host.final_reward(&rollout_id, None)?.filter(|r| r.is_finite());
            ("succeeded", reward.unwrap_or(0.0))
        }
        RolloutStatus::Cancelled => ("cancelled", 0.0),
        _ => ("failed", 0.0),
    };
    Ok(Outcome {
        failure: rollout.failure.clone(),
        rollout_id,
        status,
        reward,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_count_zero_in_the_score() {
        let outcome = |status, reward| Outcome {
            rollout_id: String::new(),
            status,
            reward,
            failure: None,
        };
        let evaluation = Evaluation {
            outcomes: vec![
                outcome("succeeded", 1.0),
                outcome("failed", 0.0),
                outcome("succeeded", 0.5),
                outcome("unfinished", 0.0),
            ],
        };
        assert_eq!(evaluation.score(), 0.375);
        assert_eq!(mean([]), 0.0);
    }
}
