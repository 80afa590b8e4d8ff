//! Rollouts in the LightningStore: the [`NewRollout`] builder, helpers on [`Rollout`] and
//! [`RolloutStatus`], and the [`Host`] methods of the WIT `store` interface that deal with rollouts
//! (enqueue, wait, get, query, spans, cancel). Resources are in `resources.rs`, waiting for many
//! rollouts in `wait.rs`.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::bindings::agl::agent::store as wit;
use crate::{Error, Host, Mode, NewRollout, Result, Rollout, RolloutConfig, RolloutStatus};

impl NewRollout {
    /// A rollout of the task `input` (what the agent's function receives, parsed into its task
    /// type), with no mode, the latest resources, the store's default config and no metadata.
    pub fn new(input: &Value) -> Self {
        NewRollout::from_json(input.to_string())
    }

    /// A rollout of a task given as JSON text, sent as it is (a dataset line, say).
    pub fn from_json(input_json: impl Into<String>) -> Self {
        NewRollout {
            input_json: input_json.into(),
            mode: None,
            resources_id: None,
            config_json: None,
            metadata_json: None,
        }
    }

    /// Sets the split (train, val, test) the rollout belongs to.
    pub fn with_mode(mut self, mode: Mode) -> Self {
        self.mode = Some(mode);
        self
    }

    /// Runs the rollout with this resources version instead of whatever is latest when a runner
    /// picks it up. The store refuses an id it does not know.
    pub fn with_resources_id(mut self, resources_id: impl Into<String>) -> Self {
        self.resources_id = Some(resources_id.into());
        self
    }

    /// Sets the retry and timeout settings of the rollout's attempts.
    pub fn with_config(mut self, config: &RolloutConfig) -> Self {
        self.config_json = Some(config.to_json().to_string());
        self
    }

    /// Attaches free-form metadata (a JSON object) kept with the rollout.
    pub fn with_metadata(mut self, metadata: &Value) -> Self {
        self.metadata_json = Some(metadata.to_string());
        self
    }
}

impl RolloutStatus {
    /// Whether the rollout is over: succeeded, failed or cancelled (it will not be retried).
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            RolloutStatus::Succeeded | RolloutStatus::Failed | RolloutStatus::Cancelled
        )
    }

    /// The wire name: "queuing", "preparing", "running", "failed", "succeeded", "cancelled",
    /// "requeuing".
    pub fn as_str(self) -> &'static str {
        match self {
            RolloutStatus::Queuing => "queuing",
            RolloutStatus::Preparing => "preparing",
            RolloutStatus::Running => "running",
            RolloutStatus::Failed => "failed",
            RolloutStatus::Succeeded => "succeeded",
            RolloutStatus::Cancelled => "cancelled",
            RolloutStatus::Requeuing => "requeuing",
        }
    }
}

impl Rollout {
    /// Whether the rollout is over (see [`RolloutStatus::is_finished`]).
    pub fn is_finished(&self) -> bool {
        self.status.is_finished()
    }

    /// Whether the rollout succeeded (its latest attempt finished without error).
    pub fn succeeded(&self) -> bool {
        self.status == RolloutStatus::Succeeded
    }

    /// The rollout's task, parsed into `T`.
    pub fn input<T: DeserializeOwned>(&self) -> Result<T> {
        serde_json::from_str(&self.input_json).map_err(|err| {
            Error::new(format!(
                "input of rollout {} does not match {}: {err}",
                self.rollout_id,
                std::any::type_name::<T>()
            ))
        })
    }
}

/// An error of the store call `call`: `store.<call>: <why>`.
pub(crate) fn store_error(call: &str) -> impl FnOnce(String) -> Error + '_ {
    move |why| Error::new(format!("store.{call}: {why}"))
}

impl Host {
    /// Enqueues rollouts in one host call (none for an empty list); returns them, with their ids and
    /// status, in the same order. For thousands of tasks, call it once per batch (e.g. of 1,024).
    pub fn enqueue(&self, rollouts: impl IntoIterator<Item = NewRollout>) -> Result<Vec<Rollout>> {
        let rollouts: Vec<NewRollout> = rollouts.into_iter().collect();
        if rollouts.is_empty() {
            return Ok(Vec::new());
        }
        let enqueued = wit::enqueue(&rollouts).map_err(store_error("enqueue"))?;
        if enqueued.len() != rollouts.len() {
            return Err(Error::new(format!(
                "store.enqueue: asked for {} rollouts, the host returned {}",
                rollouts.len(),
                enqueued.len()
            )));
        }
        Ok(enqueued)
    }

    /// Enqueues one rollout.
    pub fn enqueue_one(&self, rollout: NewRollout) -> Result<Rollout> {
        self.enqueue([rollout])?
            .pop()
            .ok_or_else(|| Error::new("store.enqueue: the host returned no rollout"))
    }

    /// Waits until every rollout of `rollout_ids` has finished or `timeout_seconds` have passed;
    /// returns those that finished, in no particular order. See [`Host::wait_all`] for waiting on
    /// many rollouts with progress reports.
    pub fn wait(&self, rollout_ids: &[String], timeout_seconds: f64) -> Result<Vec<Rollout>> {
        wit::wait(rollout_ids, timeout_seconds).map_err(store_error("wait"))
    }

    /// One rollout by id; `None` when the store does not know it.
    pub fn rollout(&self, rollout_id: &str) -> Result<Option<Rollout>> {
        wit::get_rollout(rollout_id).map_err(store_error("get-rollout"))
    }

    /// Rollouts with one of `statuses` (all when empty), oldest first, `limit` of them from
    /// `offset`.
    pub fn query_rollouts(&self, statuses: &[RolloutStatus], limit: u32, offset: u32) -> Result<Vec<Rollout>> {
        wit::query_rollouts(statuses, limit, offset).map_err(store_error("query-rollouts"))
    }

    /// The spans of a rollout's attempt (its latest when `attempt_id` is `None`), in sequence
    /// order, as Agent-lightning span JSON. The adapter methods ([`Host::final_reward`],
    /// [`Host::triplets`], [`Host::messages`]) give the usual views without parsing spans.
    pub fn spans(&self, rollout_id: &str, attempt_id: Option<&str>) -> Result<Vec<Value>> {
        let spans = wit::query_spans(rollout_id, attempt_id).map_err(store_error("query-spans"))?;
        spans
            .iter()
            .map(|text| {
                serde_json::from_str(text)
                    .map_err(|err| Error::new(format!("store.query-spans: a span of {rollout_id} is not JSON: {err}")))
            })
            .collect()
    }

    /// Cancels a rollout that has not finished.
    pub fn cancel(&self, rollout_id: &str) -> Result<()> {
        wit::cancel(rollout_id).map_err(store_error("cancel"))
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;
    use crate::AttemptStatus;

    fn rollout(status: RolloutStatus, input_json: &str) -> Rollout {
        Rollout {
            rollout_id: "ro-1".into(),
            input_json: input_json.into(),
            mode: Some(Mode::Val),
            resources_id: None,
            status,
            attempts: 1,
            failure: None,
            start_time: 0.0,
            end_time: None,
        }
    }

    #[test]
    fn a_new_rollout_carries_what_the_builder_set() {
        let config = RolloutConfig::default().with_retries(2, [AttemptStatus::Failed]);
        let new = NewRollout::new(&json!({"q": "1+1?"}))
            .with_mode(Mode::Train)
            .with_resources_id("rs-1")
            .with_config(&config)
            .with_metadata(&json!({"round": 1}));
        assert_eq!(new.input_json, r#"{"q":"1+1?"}"#);
        assert_eq!(new.mode, Some(Mode::Train));
        assert_eq!(new.resources_id.as_deref(), Some("rs-1"));
        let sent: Value = serde_json::from_str(new.config_json.as_deref().unwrap()).unwrap();
        assert_eq!(sent, json!({"max_attempts": 2, "retry_condition": ["failed"]}));
        assert_eq!(new.metadata_json.as_deref(), Some(r#"{"round":1}"#));
    }

    #[test]
    fn json_text_is_sent_as_it_is() {
        let new = NewRollout::from_json("{\"b\": 1,  \"a\": 2}");
        assert_eq!(new.input_json, "{\"b\": 1,  \"a\": 2}");
        assert!(new.mode.is_none() && new.resources_id.is_none());
        assert!(new.config_json.is_none() && new.metadata_json.is_none());
    }

    #[test]
    fn finished_means_succeeded_failed_or_cancelled() {
        let finished = [
            RolloutStatus::Succeeded,
            RolloutStatus::Failed,
            RolloutStatus::Cancelled,
        ];
        let pending = [
            RolloutStatus::Queuing,
            RolloutStatus::Preparing,
            RolloutStatus::Running,
            RolloutStatus::Requeuing,
        ];
        assert!(finished.iter().all(|s| s.is_finished()));
        assert!(pending.iter().all(|s| !s.is_finished()));
        assert!(rollout(RolloutStatus::Succeeded, "{}").succeeded());
        assert!(!rollout(RolloutStatus::Failed, "{}").succeeded());
        assert_eq!(RolloutStatus::Requeuing.as_str(), "requeuing");
    }

    #[test]
    fn the_input_parses_into_a_task_type() {
        #[derive(Debug, Deserialize, PartialEq)]
        struct Task {
            q: String,
        }
        let task: Task = rollout(RolloutStatus::Queuing, r#"{"q": "x"}"#).input().unwrap();
        assert_eq!(task, Task { q: "x".into() });
        let err = rollout(RolloutStatus::Queuing, "[]").input::<Task>().unwrap_err();
        assert!(
            err.message().starts_with("input of rollout ro-1 does not match"),
            "{err}"
        );
    }
}
