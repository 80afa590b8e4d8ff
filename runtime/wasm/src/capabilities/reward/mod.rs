//! The reward capability, `agl:agent/reward` (agents only): rewards as Agent-lightning records them — an `agentlightning.annotation`
//! span with `agentlightning.reward.0.name` / `.value` — and the attempt's final reward.
//!
//! A reward is a finite number within ±[`MAX_REWARD_MAGNITUDE`]; anything else (NaN, ±inf,
//! 1.79e308) is refused at the host boundary: the call traps and the attempt fails saying why.
//!
//! The final reward is the one the agent returns, else the last it emitted with `emit`, else the
//! last it emitted with `emit-named`. The host ends every attempt that has one with a reward span
//! holding it (unless the last reward span recorded already does), outside the span budget, so
//! Agent-lightning's `find_final_reward` — the first dimension of the last reward span — reads
//! the same number, whatever the guest emitted or the budget dropped.

use super::{Capability, InstanceContext, Link, SandboxError};
use crate::algorithm::AlgorithmRun;
use crate::bindings::reward::Host;
use crate::policy::SandboxPolicy;
use crate::state::{AttemptState, HostState, clip};
use crate::v0_1::agent::reward as v0_1_reward;
use agl_trace::names;
use opentelemetry::KeyValue;
use opentelemetry::trace::Status;
use wasmtime::component::{HasSelf, Linker};

/// The name of the reward `emit` and a returned reward record.
pub const PRIMARY: &str = "primary";
/// Largest reward magnitude accepted: sums of a million such rewards stay finite, and every
/// integer up to it is exact in an f64.
pub const MAX_REWARD_MAGNITUDE: f64 = 1e15;
/// Longest reward name kept.
const MAX_REWARD_NAME_BYTES: usize = 256;

/// The rewards an attempt emitted, as far as its final reward is concerned: the capability's
/// per-instance state (no policy slice).
#[derive(Debug, Default, Clone, Copy)]
pub struct Rewards {
    /// The last primary reward emitted by the agent (`reward.emit`).
    pub last_primary: Option<f64>,
    /// The last named reward (`reward.emit-named`).
    pub last_named: Option<f64>,
    /// The value of the last reward span recorded when that span is a primary reward (`None`
    /// when the last reward emitted was named, went past the span budget, or none was emitted).
    pub last_recorded: Option<f64>,
    pub emitted: u32,
}

impl Capability for Rewards {
    fn prepare(_policy: &SandboxPolicy, _instance: &InstanceContext) -> Result<Self, SandboxError> {
        Ok(Self::default())
    }
}

/// `agl:agent/reward` at 0.2.0 and 0.1.0.
impl Link<AttemptState> for Rewards {
    fn link(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
        crate::bindings::reward::add_to_linker::<_, HasSelf<_>>(linker, |state| state)?;
        v0_1_reward::add_to_linker::<_, HasSelf<_>>(linker, |state| state)
    }
}

/// The algorithm world has no rewards.
impl Link<AlgorithmRun> for Rewards {}

/// Why `value` is not a reward, if it is not one.
pub fn invalid_reward(value: f64) -> Option<String> {
    if value.is_nan() {
        Some("NaN is not a reward".to_owned())
    } else if value.is_infinite() || value.abs() > MAX_REWARD_MAGNITUDE {
        Some(format!(
            "{value:e} is out of range (rewards are finite numbers within ±{MAX_REWARD_MAGNITUDE:e})"
        ))
    } else {
        None
    }
}

fn reward_attributes(name: &str, value: f64) -> Vec<KeyValue> {
    vec![
        KeyValue::new(names::REWARD_NAME, clip(name, MAX_REWARD_NAME_BYTES)),
        KeyValue::new(names::REWARD_VALUE, value),
    ]
}

/// Records one emitted reward (within the span budget) and remembers it for the final reward.
fn emit_reward(state: &mut HostState, call: &str, name: &str, value: f64) -> wasmtime::Result<()> {
    if let Some(why) = invalid_reward(value) {
        return Err(wasmtime::Error::msg(format!("reward.{call}: {why}")));
    }
    let rewards = &mut state.sandbox.reward;
    if name == PRIMARY {
        rewards.last_primary = Some(value);
    } else {
        rewards.last_named = Some(value);
    }
    rewards.emitted += 1;
    let recorded = state
        .world
        .trace
        .instant(names::REWARD, reward_attributes(name, value), Status::Ok);
    // Only a primary reward span can stand as the final one (a lone named dimension is not
    // primary to the adapter).
    state.sandbox.reward.last_recorded = (recorded && name == PRIMARY).then_some(value);
    Ok(())
}

/// The attempt's final reward (see the module doc) given what it returned.
pub(crate) fn final_reward(returned: Option<f64>, rewards: &Rewards) -> Option<f64> {
    returned.or(rewards.last_primary).or(rewards.last_named)
}

/// Ends the attempt's rewards: records `final_value` as its last reward span, outside the span
/// budget, unless the last reward span recorded already holds it and nothing was returned.
pub(crate) fn record_final_reward(state: &mut HostState, returned: Option<f64>, final_value: f64) {
    let already_last = returned.is_none() && state.sandbox.reward.last_recorded == Some(final_value);
    if !already_last {
        state
            .world
            .trace
            .instant_always(names::REWARD, reward_attributes(PRIMARY, final_value), Status::Ok);
        state.sandbox.reward.last_recorded = Some(final_value);
    }
}

impl Host for HostState {
    fn emit(&mut self, value: f64) -> wasmtime::Result<()> {
        emit_reward(self, "emit", PRIMARY, value)
    }

    fn emit_named(&mut self, name: String, value: f64) -> wasmtime::Result<()> {
        emit_reward(self, "emit-named", &name, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewards_are_finite_numbers_within_range() {
        for good in [
            0.0,
            -1.0,
            1.0,
            MAX_REWARD_MAGNITUDE,
            -MAX_REWARD_MAGNITUDE,
            f64::MIN_POSITIVE,
        ] {
            assert_eq!(invalid_reward(good), None, "{good}");
        }
        assert_eq!(invalid_reward(f64::NAN).as_deref(), Some("NaN is not a reward"));
        for bad in [f64::INFINITY, f64::NEG_INFINITY, 1.79e308, -2e15] {
            let why = invalid_reward(bad).expect("refused");
            assert!(why.contains("out of range"), "{why}");
        }
    }

    #[test]
    fn the_returned_reward_wins_then_the_last_primary_then_the_last_named() {
        let rewards = Rewards {
            last_primary: Some(0.2),
            last_named: Some(0.9),
            ..Rewards::default()
        };
        assert_eq!(final_reward(Some(1.0), &rewards), Some(1.0));
        assert_eq!(final_reward(None, &rewards), Some(0.2));
        let named_only = Rewards {
            last_named: Some(0.9),
            ..Rewards::default()
        };
        assert_eq!(final_reward(None, &named_only), Some(0.9));
        assert_eq!(final_reward(None, &Rewards::default()), None);
    }
}
