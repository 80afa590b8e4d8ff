//! Worker: a runner's telemetry record, derived from the attempts it works on and its heartbeats.

use super::{JsonMap, WorkerStatus};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Worker {
    pub worker_id: String,
    #[serde(default)]
    pub status: WorkerStatus,
    #[serde(default)]
    pub heartbeat_stats: Option<JsonMap>,
    #[serde(default)]
    pub last_heartbeat_time: Option<f64>,
    #[serde(default)]
    pub last_dequeue_time: Option<f64>,
    #[serde(default)]
    pub last_busy_time: Option<f64>,
    #[serde(default)]
    pub last_idle_time: Option<f64>,
    #[serde(default)]
    pub current_rollout_id: Option<String>,
    #[serde(default)]
    pub current_attempt_id: Option<String>,
}

impl Worker {
    /// A worker seen for the first time: status unknown, nothing recorded.
    pub fn new(worker_id: impl Into<String>) -> Self {
        Self {
            worker_id: worker_id.into(),
            status: WorkerStatus::Unknown,
            heartbeat_stats: None,
            last_heartbeat_time: None,
            last_dequeue_time: None,
            last_busy_time: None,
            last_idle_time: None,
            current_rollout_id: None,
            current_attempt_id: None,
        }
    }
}
