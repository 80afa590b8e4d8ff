//! Per-split aggregation: what became of each rollout ([`Outcome`]) summed up into [`SplitStats`].

use serde_json::{Value, json};

/// What became of one rollout.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Outcome {
    /// It succeeded, with this final reward (none when the agent gave no reward).
    Succeeded(Option<f64>),
    /// It failed, was cancelled, or never finished: its reward counts as 0.
    Failed,
}

impl Outcome {
    /// The reward this rollout contributes to the mean: the final reward of a success, 0 for a
    /// failure or a missing reward. A non-finite reward (NaN, infinite) counts as missing.
    pub fn reward(self) -> f64 {
        match self {
            Outcome::Succeeded(Some(reward)) if reward.is_finite() => reward,
            _ => 0.0,
        }
    }
}

/// One split's figures, as they appear in the summary.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitStats {
    /// Tasks in the split (one rollout each).
    pub count: usize,
    /// Rollouts that succeeded.
    pub succeeded: usize,
    /// Rollouts that failed, were cancelled or never finished.
    pub failed: usize,
    /// Mean reward over all rollouts (failures and missing rewards count as 0); 0 for no rollouts.
    pub mean_reward: f64,
    /// Mean reward over the rollouts that succeeded; none when none did.
    pub mean_reward_succeeded: Option<f64>,
}

impl SplitStats {
    /// Sums up the outcomes of a split's rollouts.
    pub fn from_outcomes(outcomes: &[Outcome]) -> Self {
        let count = outcomes.len();
        let succeeded = outcomes.iter().filter(|o| matches!(o, Outcome::Succeeded(_))).count();
        let total: f64 = outcomes.iter().map(|o| o.reward()).sum();
        SplitStats {
            count,
            succeeded,
            failed: count - succeeded,
            mean_reward: if count == 0 { 0.0 } else { total / count as f64 },
            // Failures add 0 to `total`, so it is also the successes' sum.
            mean_reward_succeeded: (succeeded > 0).then(|| total / succeeded as f64),
        }
    }

    /// The figures as a JSON object (built by hand, so it cannot fail).
    pub fn to_json(&self) -> Value {
        json!({
            "count": self.count,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "mean_reward": self.mean_reward,
            "mean_reward_succeeded": self.mean_reward_succeeded,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_and_missing_rewards_count_as_zero() {
        let stats = SplitStats::from_outcomes(&[
            Outcome::Succeeded(Some(1.0)),
            Outcome::Succeeded(Some(0.5)),
            Outcome::Succeeded(None),
            Outcome::Failed,
        ]);
        assert_eq!(
            stats,
            SplitStats {
                count: 4,
                succeeded: 3,
                failed: 1,
                mean_reward: 0.375,
                mean_reward_succeeded: Some(0.5),
            }
        );
    }

    #[test]
    fn non_finite_rewards_count_as_missing() {
        let stats = SplitStats::from_outcomes(&[
            Outcome::Succeeded(Some(f64::NAN)),
            Outcome::Succeeded(Some(f64::INFINITY)),
            Outcome::Succeeded(Some(1.0)),
            Outcome::Succeeded(Some(-1.0)),
        ]);
        assert_eq!(stats.mean_reward, 0.0);
        assert_eq!(stats.mean_reward_succeeded, Some(0.0));
        assert_eq!(Outcome::Succeeded(Some(-0.5)).reward(), -0.5);
    }

    #[test]
    fn all_failed_has_no_success_mean() {
        let stats = SplitStats::from_outcomes(&[Outcome::Failed, Outcome::Failed]);
        assert_eq!((stats.count, stats.succeeded, stats.failed), (2, 0, 2));
        assert_eq!(stats.mean_reward, 0.0);
        assert_eq!(stats.mean_reward_succeeded, None);
    }

    #[test]
    fn no_rollouts_is_all_zero() {
        let stats = SplitStats::from_outcomes(&[]);
        assert_eq!((stats.count, stats.succeeded, stats.failed), (0, 0, 0));
        assert_eq!((stats.mean_reward, stats.mean_reward_succeeded), (0.0, None));
    }

    #[test]
    fn json_has_the_summary_keys() {
        let stats = SplitStats::from_outcomes(&[Outcome::Succeeded(Some(1.0)), Outcome::Failed]);
        assert_eq!(
            stats.to_json(),
            json!({"count": 2, "succeeded": 1, "failed": 1, "mean_reward": 0.5,
                               "mean_reward_succeeded": 1.0})
        );
    }
}
