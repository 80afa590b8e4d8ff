//! What a run did, read back from the store: per split, how many rollouts ended how, how many
//! were retried, and the mean final reward (from the spans, through the adapter; a failed or
//! missing reward counts as 0, as Agent-lightning's algorithms score them); and every failed
//! rollout with the reason its last attempt failed, so that a user sees why; and what the
//! sandbox refused the agents (spans with `agl.sandbox.refused`), with the grant that would allow
//! it, even where the agent caught the refusal and the rollout succeeded.

use agl_store::{
    Attempt, AttemptStatus, LightningStore, Mode, RolloutQuery, RolloutStatus, Span, SpanQuery, StoreError, semconv,
};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

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
    /// Every rollout that ended `failed`, in the store's order.
    pub failures: Vec<FailedRollout>,
    /// What the sandbox refused the latest attempts of the ended rollouts, most frequent first.
    pub refusals: Vec<SandboxRefusal>,
}

/// One thing the sandbox refused (an HTTP origin not granted, an LLM model not allowed, a budget
/// spent), the grant that would allow it, and how often.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SandboxRefusal {
    /// What was refused (`HTTP to http://127.0.0.1:9`): partly the guest's own text.
    pub refused: String,
    /// The flag or manifest key that would allow it (`--agent-http http://127.0.0.1:9`).
    pub grant: String,
    /// Refused calls (spans).
    pub count: u64,
    /// Distinct rollouts they were refused in.
    pub rollouts: u64,
}

/// The refusals over every rollout: (refused, grant) → its entry, in first-seen order.
#[derive(Default)]
struct Refusals {
    index: std::collections::HashMap<(String, String), usize>,
    list: Vec<SandboxRefusal>,
}

impl Refusals {
    /// Adds the refusals of one rollout's spans.
    fn add(&mut self, spans: &[Arc<Span>]) {
        let mut seen = std::collections::HashSet::new();
        for span in spans {
            let text = |key| span.attributes.get(key).and_then(|v| v.as_str());
            let (Some(refused), Some(grant)) = (text(semconv::SANDBOX_REFUSED), text(semconv::SANDBOX_GRANT)) else {
                continue;
            };
            let key = (refused.to_owned(), grant.to_owned());
            let at = match self.index.get(&key) {
                Some(&at) => at,
                None => {
                    self.list.push(SandboxRefusal {
                        refused: key.0.clone(),
                        grant: key.1.clone(),
                        count: 0,
                        rollouts: 0,
                    });
                    self.index.insert(key.clone(), self.list.len() - 1);
                    self.list.len() - 1
                }
            };
            self.list[at].count += 1;
            if seen.insert(key) {
                self.list[at].rollouts += 1;
            }
        }
    }

    /// Most frequent first (by calls refused; ties: first seen).
    fn finish(self) -> Vec<SandboxRefusal> {
        let mut list = self.list;
        list.sort_by_key(|r| std::cmp::Reverse(r.count));
        list
    }
}

/// A rollout that failed, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailedRollout {
    pub rollout_id: String,
    /// Its split (`train`, `val`, `test`, `none`).
    pub mode: &'static str,
    /// Attempts it had.
    pub attempts: u32,
    /// Why its last attempt failed, as its runner recorded it (or the watchdog's verdict).
    pub reason: String,
}

/// One failure reason and how many failed rollouts gave it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailureReason {
    pub reason: String,
    pub count: u64,
}

/// Why a failed rollout's last attempt failed: its runner's reason, else its status.
fn failure_reason(attempt: Option<&Attempt>) -> String {
    let Some(attempt) = attempt else {
        return "failed before any attempt ran".to_owned();
    };
    if let Some(reason) = agl_wasm::algorithm::attempt_failure(attempt) {
        return reason;
    }
    match attempt.status {
        AttemptStatus::Timeout => "the attempt timed out (the store's watchdog: timeout_seconds)".to_owned(),
        AttemptStatus::Unresponsive => {
            "the runner stopped sending heartbeats (the store's watchdog: unresponsive_seconds)".to_owned()
        }
        status => format!("the attempt ended {status:?} with no reason recorded").to_lowercase(),
    }
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
        // The one definition of what a rollout adds to the mean (`agl_adapter::counted_reward`).
        self.reward_sum += agl_adapter::counted_reward(status, reward);
        if status == RolloutStatus::Succeeded
            && let Some(value) = reward
        {
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
    /// Reads every rollout of the store but an algorithm's own, and the final reward of its
    /// latest attempt.
    pub async fn collect(store: &dyn LightningStore) -> Result<Self, StoreError> {
        let mut splits: BTreeMap<&'static str, Tally> = BTreeMap::new();
        let mut total = Tally::default();
        let mut failures = Vec::new();
        let mut refusals = Refusals::default();
        let mut offset = 0;
        loop {
            let page = store
                .query_rollouts(&RolloutQuery::default().limit(PAGE).offset(offset))
                .await?;
            let fetched = page.items.len();
            for view in &page.items {
                let rollout = &view.rollout;
                if rollout.is_algorithm_rollout() {
                    continue; // the algorithm's own trace (its LLM calls), not a task
                }
                let attempts = view.attempt.as_ref().map_or(0, |a| a.sequence_id);
                // The latest attempt's spans, once, of every ended rollout that had one: its reward
                // (when it succeeded) and what the sandbox refused it.
                let spans = if rollout.status.is_finished() && view.attempt.is_some() {
                    store
                        .query_spans(&SpanQuery::for_rollout(rollout.rollout_id.clone()).attempt("latest"))
                        .await?
                        .items
                } else {
                    Vec::new()
                };
                refusals.add(&spans);
                let reward = match rollout.status {
                    RolloutStatus::Succeeded => agl_adapter::final_reward(&spans),
                    _ => None,
                };
                splits
                    .entry(split_name(rollout.mode))
                    .or_default()
                    .add(rollout.status, attempts, reward);
                total.add(rollout.status, attempts, reward);
                if rollout.status == RolloutStatus::Failed {
                    failures.push(FailedRollout {
                        rollout_id: rollout.rollout_id.clone(),
                        mode: split_name(rollout.mode),
                        attempts,
                        reason: failure_reason(view.attempt.as_ref()),
                    });
                }
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
            failures,
            refusals: refusals.finish(),
        })
    }

    /// The distinct failure reasons with their counts, most frequent first (ties: first seen).
    pub fn failure_reasons(&self) -> Vec<FailureReason> {
        let mut reasons: Vec<FailureReason> = Vec::new();
        let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for failure in &self.failures {
            match index.get(failure.reason.as_str()) {
                Some(&at) => reasons[at].count += 1,
                None => {
                    index.insert(&failure.reason, reasons.len());
                    reasons.push(FailureReason {
                        reason: failure.reason.clone(),
                        count: 1,
                    });
                }
            }
        }
        reasons.sort_by_key(|reason| std::cmp::Reverse(reason.count));
        reasons
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

    #[tokio::test]
    async fn an_algorithms_own_rollout_is_not_a_task() {
        use agl_store::{EnqueueRolloutRequest, InMemoryLightningStore, JsonMap, StartRolloutRequest};
        let store = InMemoryLightningStore::new();
        store
            .enqueue_rollouts(vec![EnqueueRolloutRequest::new(serde_json::json!({"q": 1}))])
            .await
            .expect("a task");
        let mut metadata = JsonMap::new();
        metadata.insert(semconv::ROLLOUT_KIND.into(), semconv::ALGORITHM_ROLLOUT.into());
        let mut own = EnqueueRolloutRequest::new(serde_json::json!({"agl.algorithm": "apo"}));
        own.metadata = Some(metadata);
        store
            .start_rollout(StartRolloutRequest {
                rollout: own,
                worker_id: None,
            })
            .await
            .expect("the algorithm's rollout");
        let report = RunReport::collect(&store).await.expect("report");
        assert_eq!(report.total.rollouts, 1, "{report:?}");
    }

    fn failed(reason: &str) -> FailedRollout {
        FailedRollout {
            rollout_id: format!("ro-{reason}"),
            mode: "train",
            attempts: 1,
            reason: reason.to_owned(),
        }
    }

    #[test]
    fn failure_reasons_are_counted_most_frequent_first() {
        let report = RunReport {
            failures: ["b", "a", "b", "c", "a", "b"].map(failed).to_vec(),
            ..RunReport::default()
        };
        let reasons: Vec<(String, u64)> = report
            .failure_reasons()
            .into_iter()
            .map(|r| (r.reason, r.count))
            .collect();
        assert_eq!(reasons, [("b".to_owned(), 3), ("a".to_owned(), 2), ("c".to_owned(), 1)]);
    }

    #[test]
    fn a_failure_without_a_recorded_reason_names_the_watchdog_or_the_status() {
        let mut attempt: Attempt = serde_json::from_value(serde_json::json!({
            "rollout_id": "ro-1", "attempt_id": "at-1", "sequence_id": 1, "start_time": 1.0,
            "status": "timeout"
        }))
        .expect("an attempt");
        assert!(failure_reason(Some(&attempt)).contains("timed out"));
        attempt.status = AttemptStatus::Unresponsive;
        assert!(failure_reason(Some(&attempt)).contains("heartbeats"));
        attempt.metadata =
            Some(serde_json::from_value(serde_json::json!({"failure": "the agent panicked"})).expect("map"));
        assert_eq!(failure_reason(Some(&attempt)), "the agent panicked");
        assert_eq!(failure_reason(None), "failed before any attempt ran");
    }

    fn span(rollout: &str, sequence_id: u64, refusal: Option<(&str, &str)>) -> Span {
        let mut attributes = serde_json::Map::new();
        if let Some((refused, grant)) = refusal {
            attributes.insert(semconv::SANDBOX_REFUSED.into(), refused.into());
            attributes.insert(semconv::SANDBOX_GRANT.into(), grant.into());
        }
        serde_json::from_value(serde_json::json!({
            "rollout_id": rollout, "attempt_id": format!("at-{rollout}"), "sequence_id": sequence_id,
            "trace_id": "t", "span_id": format!("s{sequence_id}"), "name": "agl.http.request",
            "attributes": attributes,
        }))
        .expect("a span")
    }

    #[tokio::test]
    async fn refusals_are_counted_over_the_latest_attempts_of_ended_rollouts_even_succeeded_ones() {
        use agl_store::{
            AttemptRef, AttemptUpdate, EnqueueRolloutRequest, InMemoryLightningStore, StartRolloutRequest,
        };
        let http = ("HTTP to http://127.0.0.1:9", "--agent-http http://127.0.0.1:9");
        let model = ("LLM model gpt-4o", "--agent-model gpt-4o");
        let store = InMemoryLightningStore::new();
        // Two succeeded rollouts refused HTTP (one twice, one also a model), one still running.
        for (n, refused, status) in [
            (0, vec![Some(http), Some(http), None], AttemptStatus::Succeeded),
            (1, vec![Some(model), Some(http)], AttemptStatus::Succeeded),
            (2, vec![Some(http)], AttemptStatus::Running),
        ] {
            let started = store
                .start_rollout(StartRolloutRequest {
                    rollout: EnqueueRolloutRequest::new(serde_json::json!({"n": n})),
                    worker_id: None,
                })
                .await
                .expect("a rollout");
            let attempt = started.attempt.clone();
            let spans: Vec<Span> = refused
                .into_iter()
                .zip(1..)
                .map(|(refusal, seq)| {
                    let mut span = span(&attempt.rollout_id, seq, refusal);
                    span.attempt_id = attempt.attempt_id.clone();
                    span
                })
                .collect();
            store.add_spans(spans).await.expect("spans");
            if status != AttemptStatus::Running {
                store
                    .update_attempt(
                        &attempt.rollout_id,
                        AttemptRef::Id(&attempt.attempt_id),
                        AttemptUpdate::status(status),
                    )
                    .await
                    .expect("ended");
            }
        }
        let report = RunReport::collect(&store).await.expect("report");
        assert_eq!(report.total.succeeded, 2, "{report:?}");
        let refusals: Vec<(&str, &str, u64, u64)> = report
            .refusals
            .iter()
            .map(|r| (r.refused.as_str(), r.grant.as_str(), r.count, r.rollouts))
            .collect();
        assert_eq!(refusals, [(http.0, http.1, 3, 2), (model.0, model.1, 1, 1)]);
    }

    #[test]
    fn an_empty_split_has_no_mean() {
        let report = Tally::default().finish();
        assert_eq!(report.mean_reward, 0.0);
        assert_eq!(report.mean_reward_succeeded, None);
    }
}
