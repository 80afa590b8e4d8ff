//! The baseline's results: the summary JSON the run returns and the best result it reports
//! (the val split's mean reward when there is a val split, else the train split's).

use serde_json::{Map, Value, json};

use crate::stats::SplitStats;

/// The figures of both splits (a split without tasks is `None`) and the resources they used.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The train tasks' split name: `train`, or `test` (config `train_mode`).
    pub train_name: &'static str,
    pub train: Option<SplitStats>,
    pub val: Option<SplitStats>,
    pub resources_id: Option<String>,
}

impl Report {
    /// `{"train": {...}, "val": {...}, "resources_id": ...}`, without a split that had no tasks.
    pub fn summary(&self) -> Value {
        let mut summary = Map::new();
        for (name, stats) in self.splits() {
            summary.insert(name.to_string(), stats.to_json());
        }
        summary.insert("resources_id".to_string(), json!(self.resources_id));
        Value::Object(summary)
    }

    /// The score to report as best (the val mean reward, else the train one) and its detail
    /// (`{"split": ..., "count": ..., ...}`); none when neither split had tasks.
    pub fn best(&self) -> Option<(f64, Value)> {
        let (name, stats) = self.splits().last()?;
        let mut detail = Map::new();
        detail.insert("split".to_string(), json!(name));
        if let Value::Object(figures) = stats.to_json() {
            detail.extend(figures);
        }
        Some((stats.mean_reward, Value::Object(detail)))
    }

    /// The splits that had tasks, train first.
    fn splits(&self) -> impl Iterator<Item = (&'static str, &SplitStats)> {
        [(self.train_name, &self.train), ("val", &self.val)]
            .into_iter()
            .filter_map(|(name, stats)| stats.as_ref().map(|stats| (name, stats)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Outcome;

    fn stats(outcomes: &[Outcome]) -> Option<SplitStats> {
        Some(SplitStats::from_outcomes(outcomes))
    }

    #[test]
    fn both_splits_are_summed_up_and_val_is_the_best() {
        let report = Report {
            train_name: "train",
            train: stats(&[Outcome::Succeeded(Some(1.0)), Outcome::Failed]),
            val: stats(&[Outcome::Succeeded(Some(0.25))]),
            resources_id: Some("rs-1".into()),
        };
        assert_eq!(
            report.summary(),
            json!({
                "train": {"count": 2, "succeeded": 1, "failed": 1, "mean_reward": 0.5, "mean_reward_succeeded": 1.0},
                "val": {"count": 1, "succeeded": 1, "failed": 0, "mean_reward": 0.25, "mean_reward_succeeded": 0.25},
                "resources_id": "rs-1",
            })
        );
        let (score, detail) = report.best().unwrap();
        assert_eq!(score, 0.25);
        assert_eq!(
            detail,
            json!({"split": "val", "count": 1, "succeeded": 1, "failed": 0, "mean_reward": 0.25,
                   "mean_reward_succeeded": 0.25})
        );
    }

    #[test]
    fn without_val_the_train_split_is_the_best_and_val_is_left_out() {
        let report = Report {
            train_name: "train",
            train: stats(&[Outcome::Failed]),
            val: None,
            resources_id: None,
        };
        assert_eq!(
            report.summary(),
            json!({
                "train": {"count": 1, "succeeded": 0, "failed": 1, "mean_reward": 0.0, "mean_reward_succeeded": null},
                "resources_id": null,
            })
        );
        let (score, detail) = report.best().unwrap();
        assert_eq!(score, 0.0);
        assert_eq!(detail["split"], "train");
    }

    #[test]
    fn only_val() {
        let report = Report {
            train_name: "train",
            train: None,
            val: stats(&[Outcome::Succeeded(Some(1.0))]),
            resources_id: None,
        };
        assert!(report.summary().get("train").is_none());
        assert_eq!(report.best().map(|(score, _)| score), Some(1.0));
    }

    #[test]
    fn no_split_has_no_best() {
        let report = Report {
            train_name: "train",
            train: None,
            val: None,
            resources_id: None,
        };
        assert_eq!(report.summary(), json!({"resources_id": null}));
        assert!(report.best().is_none());
    }
}
