//! The three status enums and the rollout mode.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The outside view of a unit of work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum RolloutStatus {
    #[default]
    Queuing,
    Preparing,
    Running,
    Failed,
    Succeeded,
    Cancelled,
    Requeuing,
}

impl RolloutStatus {
    pub const ALL: [RolloutStatus; 7] = [
        Self::Queuing,
        Self::Preparing,
        Self::Running,
        Self::Failed,
        Self::Succeeded,
        Self::Cancelled,
        Self::Requeuing,
    ];

    /// Terminal: succeeded, failed or cancelled (what `wait_for_rollouts` waits for).
    pub fn is_finished(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Cancelled)
    }

    /// Waiting in the queue: queuing or requeuing.
    pub fn is_queuing(self) -> bool {
        matches!(self, Self::Queuing | Self::Requeuing)
    }

    /// Has an attempt in flight that the watchdog watches.
    pub fn is_active(self) -> bool {
        matches!(self, Self::Preparing | Self::Running)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queuing => "queuing",
            Self::Preparing => "preparing",
            Self::Running => "running",
            Self::Failed => "failed",
            Self::Succeeded => "succeeded",
            Self::Cancelled => "cancelled",
            Self::Requeuing => "requeuing",
        }
    }
}

/// The inside view: one execution of a rollout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AttemptStatus {
    #[default]
    Preparing,
    Running,
    Failed,
    Succeeded,
    Unresponsive,
    Timeout,
}

impl AttemptStatus {
    pub const ALL: [AttemptStatus; 6] = [
        Self::Preparing,
        Self::Running,
        Self::Failed,
        Self::Succeeded,
        Self::Unresponsive,
        Self::Timeout,
    ];

    /// The attempt ended (a timeout is final too; an unresponsive attempt may still revive).
    pub fn has_ended(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Timeout)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Preparing => "preparing",
            Self::Running => "running",
            Self::Failed => "failed",
            Self::Succeeded => "succeeded",
            Self::Unresponsive => "unresponsive",
            Self::Timeout => "timeout",
        }
    }
}

/// A runner's state, derived from the attempts it works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum WorkerStatus {
    Idle,
    Busy,
    #[default]
    Unknown,
}

impl WorkerStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Busy => "busy",
            Self::Unknown => "unknown",
        }
    }
}

/// Which split a rollout belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Train,
    Val,
    Test,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Train => "train",
            Self::Val => "val",
            Self::Test => "test",
        }
    }
}

macro_rules! display_as_str {
    ($($t:ty),*) => {$(
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}
display_as_str!(RolloutStatus, AttemptStatus, WorkerStatus, Mode);
