//! Request and small response bodies of the wire API that are not records themselves.
//! Patch bodies ([`RolloutUpdate`], [`AttemptUpdate`]) change only the keys present.

use super::serde_util::present;
use super::{AttemptStatus, JsonMap, Mode, RolloutConfig, RolloutStatus};
use serde::{Deserialize, Serialize};

/// One rollout to enqueue (`enqueue_rollout`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnqueueRolloutRequest {
    pub input: serde_json::Value,
    #[serde(default)]
    pub mode: Option<Mode>,
    /// Defaults to the latest resources at enqueue time.
    #[serde(default)]
    pub resources_id: Option<String>,
    #[serde(default)]
    pub config: Option<RolloutConfig>,
    #[serde(default)]
    pub metadata: Option<JsonMap>,
    /// The rollout's id, chosen by the caller (an agl-host extension, for Agent-lightning 1.0's
    /// gateway, whose `POST /api/rollouts` takes one): creating a rollout whose id exists returns
    /// the existing one unchanged (idempotent). `None`: the store picks a fresh `ro-` id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout_id: Option<String>,
}

impl EnqueueRolloutRequest {
    pub fn new(input: serde_json::Value) -> Self {
        Self {
            input,
            mode: None,
            resources_id: None,
            config: None,
            metadata: None,
            rollout_id: None,
        }
    }
    /// A caller-chosen id (see [`Self::rollout_id`]).
    pub fn with_rollout_id(mut self, id: impl Into<String>) -> Self {
        self.rollout_id = Some(id.into());
        self
    }
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = Some(mode);
        self
    }
    pub fn config(mut self, config: RolloutConfig) -> Self {
        self.config = Some(config);
        self
    }
    pub fn resources_id(mut self, id: impl Into<String>) -> Self {
        self.resources_id = Some(id.into());
        self
    }
}

/// `POST /v1/agl/queues/rollouts/enqueue`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnqueueManyRequest {
    pub rollouts: Vec<EnqueueRolloutRequest>,
}

/// `POST /v1/agl/rollouts` (`start_rollout`): create a rollout and its first attempt at once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartRolloutRequest {
    #[serde(flatten)]
    pub rollout: EnqueueRolloutRequest,
    #[serde(default)]
    pub worker_id: Option<String>,
}

/// `POST /v1/agl/queues/rollouts/dequeue`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DequeueRequest {
    #[serde(default = "default_dequeue_limit")]
    pub limit: i64,
    #[serde(default)]
    pub worker_id: Option<String>,
}

fn default_dequeue_limit() -> i64 {
    1
}

/// `POST /v1/agl/rollouts/{id}/attempts` (`start_attempt`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct StartAttemptRequest {
    #[serde(default)]
    pub worker_id: Option<String>,
}

/// `POST /v1/agl/rollouts/{id}` (`update_rollout`): only the keys present change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct RolloutUpdate {
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub input: Option<serde_json::Value>,
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub mode: Option<Option<Mode>>,
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub resources_id: Option<Option<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<RolloutStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<RolloutConfig>,
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Option<JsonMap>>,
}

impl RolloutUpdate {
    pub fn status(status: RolloutStatus) -> Self {
        Self {
            status: Some(status),
            ..Self::default()
        }
    }
}

/// `POST /v1/agl/rollouts/{id}/attempts/{attempt_id|latest}` (`update_attempt`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct AttemptUpdate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<AttemptStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_heartbeat_time: Option<f64>,
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Option<JsonMap>>,
}

impl AttemptUpdate {
    pub fn status(status: AttemptStatus) -> Self {
        Self {
            status: Some(status),
            ..Self::default()
        }
    }
    pub fn worker(mut self, worker_id: impl Into<String>) -> Self {
        self.worker_id = Some(worker_id.into());
        self
    }
}

/// `POST /v1/agl/workers/{id}`: a heartbeat, optionally with stats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct WorkerUpdate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat_stats: Option<JsonMap>,
}

/// `POST /v1/agl/spans/next`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NextSequenceIdRequest {
    pub rollout_id: String,
    pub attempt_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NextSequenceIdResponse {
    pub sequence_id: u64,
}

/// `POST /v1/agl/waits/rollouts`; `timeout` in seconds, absent = wait until all finish.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WaitForRolloutsRequest {
    pub rollout_ids: Vec<String>,
    #[serde(default)]
    pub timeout: Option<f64>,
}

/// `GET /v1/agl/health`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HealthResponse {
    pub status: String,
}

/// An error answer: `{"detail": ...}` (0.3.0 adds `error_type` and `traceback` on 5xx).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub detail: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceback: Option<String>,
}
