//! The baseline's algorithm config (`--algo-config`): every key optional, unknown keys refused.

use agl_algorithm_sdk::{Error, Mode, Result, RolloutConfig, WaitOptions};
use serde::Deserialize;

/// `{"rollout_config": {...}, "wait_timeout_seconds": 600, "poll_seconds": 1.0}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Retries and time limits of every rollout (Agent-lightning's `RolloutConfig`); none: the
    /// store's defaults (one attempt, no limits).
    #[serde(default)]
    pub rollout_config: Option<RolloutConfig>,
    /// The most time to wait for all rollouts, in seconds; none: until all have finished.
    #[serde(default)]
    pub wait_timeout_seconds: Option<f64>,
    /// The timeout of each wait call, in seconds: how often progress is reported.
    #[serde(default = "one_second")]
    pub poll_seconds: f64,
    /// The mode of the train tasks' rollouts, and their split's name in the summary: `train`
    /// (the default) or `test` (`agl-host eval`: a held-out split is evaluated, not trained on).
    #[serde(default)]
    pub train_mode: Option<String>,
    /// Adds `tasks` to the summary: every rollout's task view (input, output, reward, the agent's
    /// feedback, the LLM transcript), as an algorithm that learns from text reads it.
    #[serde(default)]
    pub task_views: bool,
}

fn one_second() -> f64 {
    1.0
}

impl Default for Config {
    fn default() -> Self {
        Config {
            rollout_config: None,
            wait_timeout_seconds: None,
            poll_seconds: one_second(),
            train_mode: None,
            task_views: false,
        }
    }
}

impl Config {
    /// Refuses values the run could not use, naming the key.
    pub fn check(&self) -> Result<()> {
        if !(self.poll_seconds.is_finite() && self.poll_seconds > 0.0) {
            return Err(Error::new(format!(
                "poll_seconds must be a positive number of seconds, not {}",
                self.poll_seconds
            )));
        }
        if let Some(timeout) = self.wait_timeout_seconds
            && !(timeout.is_finite() && timeout > 0.0)
        {
            return Err(Error::new(format!(
                "wait_timeout_seconds must be a positive number of seconds, not {timeout}"
            )));
        }
        if let Some(rollout_config) = &self.rollout_config
            && rollout_config.max_attempts == 0
        {
            return Err(Error::new("rollout_config.max_attempts must be at least 1"));
        }
        if let Some(mode) = &self.train_mode
            && mode != "train"
            && mode != "test"
        {
            return Err(Error::new(format!(
                "train_mode must be \"train\" or \"test\", not {mode:?}"
            )));
        }
        Ok(())
    }

    /// The train tasks' split: its name and the mode of its rollouts (`train_mode`).
    pub fn train_split(&self) -> (&'static str, Mode) {
        match self.train_mode.as_deref() {
            Some("test") => ("test", Mode::Test),
            _ => ("train", Mode::Train),
        }
    }

    /// How to wait for the rollouts.
    pub fn wait_options(&self) -> WaitOptions {
        WaitOptions {
            poll_seconds: self.poll_seconds,
            timeout_seconds: self.wait_timeout_seconds,
        }
    }
}

#[cfg(test)]
mod tests {
    use agl_algorithm_sdk::AttemptStatus;

    use super::*;

    fn parse(text: &str) -> std::result::Result<Config, String> {
        serde_json::from_str(text).map_err(|err| err.to_string())
    }

    #[test]
    fn every_key_is_optional() {
        let config = parse("{}").unwrap();
        assert_eq!(config, Config::default());
        assert!(config.check().is_ok());
        assert_eq!(config.wait_options(), WaitOptions::default());
    }

    #[test]
    fn every_key_is_read() {
        let config = parse(
            r#"{"rollout_config": {"max_attempts": 2, "retry_condition": ["failed"], "timeout_seconds": 60},
                "wait_timeout_seconds": 600, "poll_seconds": 0.25, "task_views": true}"#,
        )
        .unwrap();
        assert!(config.check().is_ok());
        assert!(config.task_views);
        let rollout_config = config.rollout_config.clone().unwrap();
        assert_eq!(rollout_config.max_attempts, 2);
        assert_eq!(rollout_config.retry_condition, [AttemptStatus::Failed]);
        assert_eq!(rollout_config.timeout_seconds, Some(60.0));
        assert_eq!(
            config.wait_options(),
            WaitOptions {
                poll_seconds: 0.25,
                timeout_seconds: Some(600.0)
            }
        );
    }

    #[test]
    fn unknown_keys_are_named() {
        let err = parse(r#"{"poll_second": 2}"#).unwrap_err();
        assert!(err.starts_with("unknown field `poll_second`"), "{err}");
        let err = parse(r#"{"rollout_config": {"max_attempt": 2}}"#).unwrap_err();
        assert!(err.starts_with("unknown field `max_attempt`"), "{err}");
    }

    #[test]
    fn unusable_values_are_refused() {
        let message = |text: &str| parse(text).unwrap().check().unwrap_err().into_message();
        assert_eq!(
            message(r#"{"poll_seconds": 0}"#),
            "poll_seconds must be a positive number of seconds, not 0"
        );
        assert_eq!(
            message(r#"{"wait_timeout_seconds": -5}"#),
            "wait_timeout_seconds must be a positive number of seconds, not -5"
        );
        assert_eq!(
            message(r#"{"rollout_config": {"max_attempts": 0}}"#),
            "rollout_config.max_attempts must be at least 1"
        );
        assert!(parse(r#"{"poll_seconds": "fast"}"#).is_err());
        assert_eq!(
            message(r#"{"train_mode": "val"}"#),
            "train_mode must be \"train\" or \"test\", not \"val\""
        );
    }

    #[test]
    fn train_tasks_may_run_as_a_test_split() {
        assert_eq!(Config::default().train_split(), ("train", Mode::Train));
        let config = parse(r#"{"train_mode": "test"}"#).unwrap();
        assert!(config.check().is_ok());
        assert_eq!(config.train_split(), ("test", Mode::Test));
    }
}
