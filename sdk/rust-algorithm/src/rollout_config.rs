//! [`RolloutConfig`]: Agent-lightning's per-rollout retry and timeout settings, typed, as an
//! algorithm attaches them to [`NewRollout`](crate::NewRollout)s (and, usually, reads them from its
//! own config). It travels to the store as JSON.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// How a rollout's attempts are run: Agent-lightning's `RolloutConfig`.
///
/// Parsed from JSON with unknown keys refused, so a misspelt key in a user's config is an error:
///
/// ```
/// # use agl_algorithm_sdk::{AttemptStatus, RolloutConfig};
/// let config: RolloutConfig =
///     serde_json::from_str(r#"{"max_attempts": 3, "retry_condition": ["failed", "timeout"]}"#).unwrap();
/// assert_eq!(config.max_attempts, 3);
/// assert_eq!(config.retry_condition, [AttemptStatus::Failed, AttemptStatus::Timeout]);
/// assert!(serde_json::from_str::<RolloutConfig>(r#"{"max_attempt": 3}"#).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RolloutConfig {
    /// Longest an attempt may run, from its start, before the store marks it `timeout`.
    #[serde(default)]
    pub timeout_seconds: Option<f64>,
    /// Longest an attempt may stay silent (no span) before the store marks it `unresponsive`.
    #[serde(default)]
    pub unresponsive_seconds: Option<f64>,
    /// Attempts allowed in total, the first included (at least 1; the store refuses 0).
    #[serde(default = "one")]
    pub max_attempts: u32,
    /// Attempt outcomes that send the rollout back to the queue while attempts remain.
    #[serde(default)]
    pub retry_condition: Vec<AttemptStatus>,
}

fn one() -> u32 {
    1
}

impl Default for RolloutConfig {
    /// The store's own default: one attempt, no timeouts, no retry.
    fn default() -> Self {
        RolloutConfig {
            timeout_seconds: None,
            unresponsive_seconds: None,
            max_attempts: 1,
            retry_condition: Vec::new(),
        }
    }
}

impl RolloutConfig {
    /// Allows `max_attempts` attempts in all, retrying after any of `conditions`.
    pub fn with_retries(mut self, max_attempts: u32, conditions: impl IntoIterator<Item = AttemptStatus>) -> Self {
        self.max_attempts = max_attempts;
        self.retry_condition = conditions.into_iter().collect();
        self
    }

    /// Sets the attempt's time limit.
    pub fn with_timeout_seconds(mut self, seconds: f64) -> Self {
        self.timeout_seconds = Some(seconds);
        self
    }

    /// Sets the longest silence before an attempt counts as unresponsive.
    pub fn with_unresponsive_seconds(mut self, seconds: f64) -> Self {
        self.unresponsive_seconds = Some(seconds);
        self
    }

    /// The config as the store reads it (absent limits left out).
    pub fn to_json(&self) -> Value {
        let mut value = json!({
            "max_attempts": self.max_attempts,
            "retry_condition": self.retry_condition.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        });
        if let Value::Object(map) = &mut value {
            if let Some(seconds) = self.timeout_seconds {
                map.insert("timeout_seconds".into(), json!(seconds));
            }
            if let Some(seconds) = self.unresponsive_seconds {
                map.insert("unresponsive_seconds".into(), json!(seconds));
            }
        }
        value
    }
}

/// The status of one attempt, as `retry_condition` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttemptStatus {
    /// Started, not yet running the agent.
    Preparing,
    /// Running the agent.
    Running,
    /// The agent failed (an error or a trap).
    Failed,
    /// The agent finished.
    Succeeded,
    /// No span for longer than `unresponsive_seconds`.
    Unresponsive,
    /// Ran longer than `timeout_seconds`.
    Timeout,
}

impl AttemptStatus {
    /// The wire name: "preparing", "running", "failed", "succeeded", "unresponsive", "timeout".
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptStatus::Preparing => "preparing",
            AttemptStatus::Running => "running",
            AttemptStatus::Failed => "failed",
            AttemptStatus::Succeeded => "succeeded",
            AttemptStatus::Unresponsive => "unresponsive",
            AttemptStatus::Timeout => "timeout",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_object_is_the_store_default() {
        let config: RolloutConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(config, RolloutConfig::default());
        assert_eq!(config.to_json(), json!({"max_attempts": 1, "retry_condition": []}));
    }

    #[test]
    fn every_field_is_read_and_written() {
        let text = r#"{"timeout_seconds": 30, "unresponsive_seconds": 5.5, "max_attempts": 2,
                       "retry_condition": ["failed", "timeout", "unresponsive"]}"#;
        let config: RolloutConfig = serde_json::from_str(text).unwrap();
        assert_eq!(
            config,
            RolloutConfig::default()
                .with_timeout_seconds(30.0)
                .with_unresponsive_seconds(5.5)
                .with_retries(
                    2,
                    [
                        AttemptStatus::Failed,
                        AttemptStatus::Timeout,
                        AttemptStatus::Unresponsive
                    ]
                )
        );
        assert_eq!(
            config.to_json(),
            json!({"timeout_seconds": 30.0, "unresponsive_seconds": 5.5, "max_attempts": 2,
                   "retry_condition": ["failed", "timeout", "unresponsive"]})
        );
    }

    #[test]
    fn nulls_mean_no_limit() {
        let config: RolloutConfig = serde_json::from_str(r#"{"timeout_seconds": null}"#).unwrap();
        assert_eq!(config.timeout_seconds, None);
    }

    #[test]
    fn unknown_keys_and_statuses_are_refused() {
        let err = serde_json::from_str::<RolloutConfig>(r#"{"retries": 2}"#).unwrap_err();
        assert!(err.to_string().starts_with("unknown field `retries`"), "{err}");
        let err = serde_json::from_str::<RolloutConfig>(r#"{"retry_condition": ["crashed"]}"#).unwrap_err();
        assert!(err.to_string().starts_with("unknown variant `crashed`"), "{err}");
    }

    #[test]
    fn wire_names_match_serde() {
        for status in [
            AttemptStatus::Preparing,
            AttemptStatus::Running,
            AttemptStatus::Failed,
            AttemptStatus::Succeeded,
            AttemptStatus::Unresponsive,
            AttemptStatus::Timeout,
        ] {
            assert_eq!(serde_json::to_value(status).unwrap(), json!(status.as_str()));
        }
    }
}
