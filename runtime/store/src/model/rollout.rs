//! Rollout (a unit of work), its retry/timeout config, and the rollout+attempt pairings.

use super::{Attempt, AttemptStatus, JsonMap, Mode, RolloutStatus};
use serde::{Deserialize, Serialize};

fn one() -> u32 {
    1
}

/// Retry and liveness policy of a rollout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RolloutConfig {
    /// Longest an attempt may run (from its start) before the watchdog marks it `timeout`.
    #[serde(default)]
    pub timeout_seconds: Option<f64>,
    /// Longest silence (no span, from the last one or the start) before it is `unresponsive`.
    #[serde(default)]
    pub unresponsive_seconds: Option<f64>,
    /// Attempts allowed in total, the first included (≥ 1).
    #[serde(default = "one")]
    pub max_attempts: u32,
    /// Attempt outcomes that send the rollout back to the queue while attempts remain.
    #[serde(default)]
    pub retry_condition: Vec<AttemptStatus>,
}

impl Default for RolloutConfig {
    fn default() -> Self {
        Self {
            timeout_seconds: None,
            unresponsive_seconds: None,
            max_attempts: 1,
            retry_condition: Vec::new(),
        }
    }
}

impl RolloutConfig {
    /// Checks the invariants the wire schema states (max_attempts ≥ 1, non-negative durations).
    pub fn validate(&self) -> Result<(), String> {
        if self.max_attempts < 1 {
            return Err(format!("max_attempts must be at least 1, got {}", self.max_attempts));
        }
        for (name, value) in [
            ("timeout_seconds", self.timeout_seconds),
            ("unresponsive_seconds", self.unresponsive_seconds),
        ] {
            if let Some(v) = value
                && !(v >= 0.0 && v.is_finite())
            {
                return Err(format!("{name} must be a finite number ≥ 0, got {v}"));
            }
        }
        Ok(())
    }
}

/// A unit of work: its input, lifecycle status and links to resources.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rollout {
    pub rollout_id: String,
    pub input: serde_json::Value,
    pub start_time: f64,
    #[serde(default)]
    pub end_time: Option<f64>,
    #[serde(default)]
    pub mode: Option<Mode>,
    #[serde(default)]
    pub resources_id: Option<String>,
    #[serde(default)]
    pub status: RolloutStatus,
    #[serde(default)]
    pub config: RolloutConfig,
    #[serde(default)]
    pub metadata: Option<JsonMap>,
}

/// A rollout paired with the attempt that was just created for it (dequeue, start_rollout...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptedRollout {
    #[serde(flatten)]
    pub rollout: Rollout,
    pub attempt: Attempt,
}

/// A rollout as queries return it: with its latest attempt when it has one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RolloutView {
    #[serde(flatten)]
    pub rollout: Rollout,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<Attempt>,
}

impl Rollout {
    /// Whether it holds an algorithm's own trace (its LLM calls) rather than a task
    /// ([`crate::semconv::ROLLOUT_KIND`]).
    pub fn is_algorithm_rollout(&self) -> bool {
        self.metadata
            .as_ref()
            .and_then(|metadata| metadata.get(crate::semconv::ROLLOUT_KIND))
            .and_then(serde_json::Value::as_str)
            == Some(crate::semconv::ALGORITHM_ROLLOUT)
    }

    /// A fork's lineage: the object under [`crate::semconv::FORK`] in its metadata, as stored
    /// (its fields unchecked). `None` for a rollout that is not a fork, including one whose
    /// `agl.fork` is not an object.
    pub fn fork_lineage(&self) -> Option<&JsonMap> {
        self.metadata
            .as_ref()
            .and_then(|metadata| metadata.get(crate::semconv::FORK))
            .and_then(serde_json::Value::as_object)
    }
}

impl From<AttemptedRollout> for RolloutView {
    fn from(value: AttemptedRollout) -> Self {
        Self {
            rollout: value.rollout,
            attempt: Some(value.attempt),
        }
    }
}
