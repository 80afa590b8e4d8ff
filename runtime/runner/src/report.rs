//! What a run did, read back from the store: per split, how many rollouts ended how, how many
//! were retried, and the mean final reward (from the spans, through the adapter; a failed or
//! missing reward counts as 0, as Agent-lightning's algorithms score them).

use agl_store::{LightningStore, Mode, RolloutQuery, RolloutStatus, SpanQuery, StoreError};
use serde::Serialize;
use std::collections::BTreeMap;

/// Rollouts fetched per query page.
const PAGE: i64 = 10_000;

/// One split's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SplitReport {
    pub rollouts: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub cancelled: u64,
    /// Still queued or running when the run ended (e.g. interrupted).
    pub unfinished: u64,
    /// Rollouts that needed more than one attempt.
    pub retried: u64,
    /// Mean final reward over all rollouts (failed or missing rewards count 0).
    pub mean_reward: f64,
    /// Mean final reward over the rollouts that succeeded and have one.
    pub mean_reward_succeeded: Option<f64>,
}

/// The whole run, by split name (`train`, `val`, `test`, `none` for rollouts without a mode).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunReport {
    pub splits: BTreeMap<String, SplitReport>,
    pub total: SplitReport,
}

#[derive(Default)]
struct Tally {
    report: SplitReport,
    reward_sum: f64,
    succeeded_rewards: (f64, u64),
}

impl Tally {
    fn add(&mut self, status: RolloutStatus, attempts: u32, reward: Option<f64>) {
        let r = &mut self.report;
        r.rollouts += 1;
        match status {
            RolloutStatus::Succeeded => r.succeeded += 1,
            RolloutStatus::Failed => r.failed += 1,
            RolloutStatus::Cancelled => r.cancelled += 1,
            _ => r.unfinished += 1,
        }
        if attempts > 1 {
            r.retried += 1;
        }
        if status == RolloutStatus::Succeeded
            && let Some(value) = reward
        {
            self.reward_sum += value;
            self.succeeded_rewards.0 += value;
            self.succeeded_rewards.1 += 1;
        }
    }

    fn finish(self) -> SplitReport {
        let mut report = self.report;
        if report.rollouts > 0 {
            report.mean_reward = self.reward_sum / report.rollouts as f64;
        }
        let (sum, count) = self.succeeded_rewards;
        report.mean_reward_succeeded = (count > 0).then(|| sum / count as f64);
        report
    }
}

fn split_name(mode: Option<Mode>) -> &'static str {
    match mode {
        Some(Mode::Train) => "train",
        Some(Mode::Val) => "val",
        Some(Mode::Test) => "test",
        None => "none",
    }
}

impl RunReport {
    /// Reads every rollout of the store and the final reward of its latest attempt.
    pub async fn collect(store: &dyn LightningStore) -> Result<Self, StoreError> {
        let mut splits: BTreeMap<&'static str, Tally> = BTreeMap::new();
        let mut total = Tally::default();
        let mut offset = 0;
        loop {
            let page = store
                .query_rollouts(&RolloutQuery::default().limit(PAGE).offset(offset))
                .await?;
            let fetched = page.items.len();
            for view in &page.items {
                let rollout = &view.rollout;
                let attempts = view.attempt.as_ref().map_or(0, |a| a.sequence_id);
                let reward = if rollout.status == RolloutStatus::Succeeded {
                    let spans = store
                        .query_spans(&SpanQuery::for_rollout(rollout.rollout_id.clone()).attempt("latest"))
                        .await?;
                    agl_adapter::final_reward(&spans.items)
                } else {
                    None
                };
                splits
                    .entry(split_name(rollout.mode))
                    .or_default()
                    .add(rollout.status, attempts, reward);
                total.add(rollout.status, attempts, reward);
            }
            offset += fetched as i64;
            if fetched == 0 || offset as u64 >= page.total {
                break;
            }
        }
        Ok(Self {
            splits: splits
                .into_iter()
                .map(|(name, t)| (name.to_owned(), t.finish()))
                .collect(),
            total: total.finish(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_and_missing_rewards_count_zero_in_the_mean() {
        let mut tally = Tally::default();
        tally.add(RolloutStatus::Succeeded, 1, Some(1.0));
        tally.add(RolloutStatus::Succeeded, 2, None);
        tally.add(RolloutStatus::Failed, 2, None);
        tally.add(RolloutStatus::Queuing, 0, None);
        let report = tally.finish();
        assert_eq!(report.rollouts, 4);
        assert_eq!((report.succeeded, report.failed, report.unfinished), (2, 1, 1));
        assert_eq!(report.retried, 2);
        assert_eq!(report.mean_reward, 0.25);
        assert_eq!(report.mean_reward_succeeded, Some(1.0));
    }

    #[test]
    fn an_empty_split_has_no_mean() {
        let report = Tally::default().finish();
        assert_eq!(report.mean_reward, 0.0);
        assert_eq!(report.mean_reward_succeeded, None);
    }
}
