//! Agent-lightning 1.0's wire shapes (`agentlightning/schemas.py`) and how our rollouts read as
//! them: the 1.0 state of a status, the rollout with its lifecycle status, and what the gateway
//! keeps of 1.0 in a rollout's metadata (under [`GATEWAY_KEY`]: its config, patched status
//! fields, version, and whether it was deleted).

use agl_store::{JsonMap, Mode, RolloutStatus, RolloutView};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The rollout metadata key under which the gateway keeps what 1.0 has and we do not.
pub(crate) const GATEWAY_KEY: &str = "agl.gateway";
/// 1.0's default `RolloutConfig.timeout_seconds`.
pub(crate) const DEFAULT_TIMEOUT_SECONDS: i64 = 3600;

/// 1.0's `RolloutState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum State {
    Queuing,
    Running,
    Succeeded,
    Failed,
}

impl State {
    /// Our statuses this state stands for.
    pub fn statuses(self) -> &'static [RolloutStatus] {
        match self {
            State::Queuing => &[RolloutStatus::Queuing, RolloutStatus::Requeuing],
            State::Running => &[RolloutStatus::Preparing, RolloutStatus::Running],
            State::Succeeded => &[RolloutStatus::Succeeded],
            State::Failed => &[RolloutStatus::Failed, RolloutStatus::Cancelled],
        }
    }

    pub fn of(status: RolloutStatus) -> Self {
        match status {
            RolloutStatus::Queuing | RolloutStatus::Requeuing => State::Queuing,
            RolloutStatus::Preparing | RolloutStatus::Running => State::Running,
            RolloutStatus::Succeeded => State::Succeeded,
            RolloutStatus::Failed | RolloutStatus::Cancelled => State::Failed,
        }
    }

    /// 1.0's `VALID_TRANSITIONS`.
    pub fn may_become(self, next: State) -> bool {
        matches!(
            (self, next),
            (State::Queuing, State::Running | State::Failed) | (State::Running, State::Succeeded | State::Failed)
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            State::Queuing => "queuing",
            State::Running => "running",
            State::Succeeded => "succeeded",
            State::Failed => "failed",
        }
    }

    /// Our status a patch to this state sets.
    pub fn status(self) -> RolloutStatus {
        match self {
            State::Queuing => RolloutStatus::Queuing,
            State::Running => RolloutStatus::Running,
            State::Succeeded => RolloutStatus::Succeeded,
            State::Failed => RolloutStatus::Failed,
        }
    }
}

/// 1.0's `RolloutConfig` (controller-facing; `local` and `k8s` are kept and given back).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Config {
    #[serde(default = "default_timeout")]
    pub timeout_seconds: i64,
    #[serde(default)]
    pub local: Option<LocalConfig>,
    #[serde(default)]
    pub k8s: Option<K8sConfig>,
}

fn default_timeout() -> i64 {
    DEFAULT_TIMEOUT_SECONDS
}

impl Default for Config {
    fn default() -> Self {
        Config {
            timeout_seconds: DEFAULT_TIMEOUT_SECONDS,
            local: None,
            k8s: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LocalConfig {
    #[serde(default)]
    pub agent_class: Option<String>,
    #[serde(default)]
    pub env_map: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct K8sConfig {
    #[serde(default)]
    pub job_template: Option<String>,
}

/// 1.0's `RolloutCreate`.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct RolloutCreate {
    /// Required (1.0: `input: Any`); `null` is a value.
    pub input: Value,
    #[serde(default = "yes")]
    pub is_train: bool,
    #[serde(default)]
    pub config: Option<Config>,
    #[serde(default)]
    pub metadata: Option<JsonMap>,
    #[serde(default)]
    pub rollout_id: Option<String>,
}

fn yes() -> bool {
    true
}

/// 1.0's `RolloutStatusPatch` (`extra="forbid"`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StatusPatch {
    #[serde(default)]
    pub state: Option<State>,
    #[serde(default)]
    pub k8s_job_name: Option<String>,
    #[serde(default)]
    pub last_attempt_id: Option<String>,
    #[serde(default)]
    pub error_message: Option<String>,
}

/// 1.0's `RolloutPatch`.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct RolloutPatch {
    #[serde(default)]
    pub status: Option<StatusPatch>,
}

/// 1.0's `EventCreate`.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct EventCreate {
    pub event_type: String,
    #[serde(default)]
    pub data: JsonMap,
}

/// 1.0's `Model`: a model server, keyed by (model, endpoint).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Model {
    pub model: String,
    pub endpoint: String,
    #[serde(default)]
    pub version: i64,
}

/// What the gateway keeps in a rollout's metadata (all optional: rollouts made elsewhere have
/// none of it).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Kept {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Config>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k8s_job_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempt_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<f64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deleted: bool,
}

impl Kept {
    /// What a rollout's metadata keeps; nothing when it has no (readable) gateway entry.
    pub fn of(metadata: Option<&JsonMap>) -> Kept {
        metadata
            .and_then(|m| m.get(GATEWAY_KEY))
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    }

    /// `metadata` with this kept under [`GATEWAY_KEY`].
    pub fn into_metadata(self, metadata: Option<JsonMap>) -> JsonMap {
        let mut metadata = metadata.unwrap_or_default();
        let kept = serde_json::to_value(self).unwrap_or(Value::Null);
        metadata.insert(GATEWAY_KEY.to_owned(), kept);
        metadata
    }
}

/// Whether the gateway deleted this rollout (it is kept, but the gateway no longer shows it).
pub(crate) fn is_deleted(view: &RolloutView) -> bool {
    Kept::of(view.rollout.metadata.as_ref()).deleted
}

/// A rollout as 1.0's `Rollout`.
pub(crate) fn rollout(view: &RolloutView) -> Value {
    let rollout = &view.rollout;
    let kept = Kept::of(rollout.metadata.as_ref());
    let state = State::of(rollout.status);
    let config = kept.config.clone().unwrap_or_else(|| Config {
        timeout_seconds: rollout
            .config
            .timeout_seconds
            .filter(|t| t.is_finite())
            .map_or(DEFAULT_TIMEOUT_SECONDS, |t| t as i64),
        ..Config::default()
    });
    let mut metadata = JsonMap::new();
    metadata.insert("batch_idx".into(), Value::Null);
    metadata.insert("sample_idx_in_batch".into(), Value::Null);
    for (key, value) in rollout.metadata.iter().flatten() {
        if key != GATEWAY_KEY {
            metadata.insert(key.clone(), value.clone());
        }
    }
    let attempt = view.attempt.as_ref();
    let updated_at = match state {
        State::Succeeded | State::Failed => rollout.end_time.unwrap_or(rollout.start_time),
        State::Running => attempt.map_or(rollout.start_time, |a| a.start_time),
        State::Queuing => kept.updated_at.unwrap_or(rollout.start_time),
    };
    let error_message = kept.error_message.clone().or_else(|| {
        (state == State::Failed).then(|| match attempt {
            Some(a) => format!(
                "rollout {}; its latest attempt {}",
                rollout.status.as_str(),
                a.status.as_str()
            ),
            None => format!("rollout {}", rollout.status.as_str()),
        })
    });
    json!({
        "rollout_id": rollout.rollout_id,
        "input": rollout.input,
        "is_train": !matches!(rollout.mode, Some(Mode::Val | Mode::Test)),
        "config": config,
        "metadata": metadata,
        "status": {
            "state": state.as_str(),
            "k8s_job_name": kept.k8s_job_name,
            "last_attempt_id": attempt.map(|a| a.attempt_id.clone()).or(kept.last_attempt_id),
            "error_message": error_message,
            "version": kept.version.unwrap_or(1),
            "created_at": rollout.start_time,
            "updated_at": updated_at,
        },
    })
}

/// 1.0's `_data_id_of`: the input's `data_id`, else `instance_id`, as text; else empty.
pub(crate) fn data_id(input: &Value) -> String {
    let text = |v: &Value| match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) if n.as_f64() != Some(0.0) => Some(n.to_string()),
        Value::Bool(true) => Some("True".to_owned()),
        Value::Array(a) if !a.is_empty() => Some(v.to_string()),
        Value::Object(o) if !o.is_empty() => Some(v.to_string()),
        _ => None,
    };
    input
        .as_object()
        .and_then(|o| {
            o.get("data_id")
                .and_then(text)
                .or_else(|| o.get("instance_id").and_then(text))
        })
        .unwrap_or_default()
}
