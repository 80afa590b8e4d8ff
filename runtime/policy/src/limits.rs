//! The limits slice: how much memory an instance may grow to, how long it may run (wall clock,
//! enforced by epochs) and, optionally, how many instructions (fuel). Not the grants (`grants`),
//! nor the LLM budget (`llm`).

use crate::value::{HumanDuration, Size};
use crate::{Layer, set};
use serde::Deserialize;
use std::time::Duration;

pub const DEFAULT_MEMORY_BYTES: u64 = 256 << 20;
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(300);
/// An algorithm runs the whole optimisation: its limits are per run, not per rollout.
pub const ALGORITHM_DEADLINE: Duration = Duration::from_secs(7 * 24 * 3600);
pub const ALGORITHM_MEMORY_BYTES: u64 = 1 << 30;

/// Memory, time and instructions of one instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest linear memory an instance may grow to; growing past it traps.
    pub memory_bytes: u64,
    /// Wall-clock limit of one attempt (enforced by epoch interruption inside wasm).
    pub deadline: Duration,
    /// Optional instruction budget (needs an engine built with fuel).
    pub fuel: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory_bytes: DEFAULT_MEMORY_BYTES,
            deadline: DEFAULT_DEADLINE,
            fuel: None,
        }
    }
}

impl Limits {
    /// An algorithm's: a week and 1 GiB per run.
    pub fn algorithm() -> Self {
        Self {
            memory_bytes: ALGORITHM_MEMORY_BYTES,
            deadline: ALGORITHM_DEADLINE,
            fuel: None,
        }
    }
}

/// The limits as a manifest (top-level keys) or the flags set them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, clap::Args)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct LimitsOptions {
    /// Memory limit per agent instance, e.g. 256MiB.
    #[arg(long = "agent-memory", value_name = "SIZE")]
    pub max_memory_size: Option<Size>,
    /// Wall-clock deadline per attempt, e.g. 300s, 2m.
    #[arg(id = "agent_timeout", long = "agent-timeout", value_name = "DURATION")]
    pub timeout: Option<HumanDuration>,
    /// Instruction budget per attempt (fuel).
    #[arg(long = "agent-fuel", value_name = "N")]
    pub fuel: Option<u64>,
}

impl Layer for LimitsOptions {
    type Policy = Limits;
    fn apply(self, limits: &mut Limits) {
        set(&mut limits.memory_bytes, self.max_memory_size.map(|s| s.0));
        set(&mut limits.deadline, self.timeout.map(|t| t.0));
        if self.fuel.is_some() {
            limits.fuel = self.fuel;
        }
    }
}
