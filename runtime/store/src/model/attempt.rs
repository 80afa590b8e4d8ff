//! Attempt: one execution of a rollout.

use super::{AttemptStatus, JsonMap};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    pub rollout_id: String,
    pub attempt_id: String,
    /// 1-based position among the rollout's attempts.
    pub sequence_id: u32,
    pub start_time: f64,
    #[serde(default)]
    pub end_time: Option<f64>,
    #[serde(default)]
    pub status: AttemptStatus,
    #[serde(default)]
    pub worker_id: Option<String>,
    #[serde(default)]
    pub last_heartbeat_time: Option<f64>,
    #[serde(default)]
    pub metadata: Option<JsonMap>,
}
