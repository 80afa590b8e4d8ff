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
//!
//! Feedback (`reward.feedback`, 0.3.0): texts beside the reward, kept in order as data (control
//! characters and all: nothing here or in the span store interprets them) up to
//! [`MAX_FEEDBACK_BYTES`] in all and [`MAX_FEEDBACK_TEXTS`] texts. The text that crosses the bound
//! is cut on a character boundary; what is past it is dropped and its bytes counted. A feedback
//! call never fails the attempt. The texts are recorded once, when the attempt ends: on its final
//! reward span (`agl.reward.feedback`, written then even when the last reward span already holds
//! the final value), or, when it ends without a reward (failed, or none emitted), on an
//! annotation span of their own; both outside the span budget, with
//! `agl.reward.feedback.dropped_bytes` when something was dropped.

use super::{Capability, InstanceContext, Link, SandboxError};
use crate::algorithm::AlgorithmRun;
use crate::bindings::reward::Host;
use crate::policy::SandboxPolicy;
use crate::state::{AttemptState, HostState, clip};
use crate::v0_1::agent::reward as v0_1_reward;
use crate::v0_2::agent::reward as v0_2_reward;
use agl_trace::names;
use opentelemetry::trace::Status;
use opentelemetry::{Array, KeyValue, StringValue, Value};
use wasmtime::component::{HasSelf, Linker};

/// The name of the reward `emit` and a returned reward record.
pub const PRIMARY: &str = "primary";
/// Largest reward magnitude accepted: sums of a million such rewards stay finite, and every
/// integer up to it is exact in an f64.
pub const MAX_REWARD_MAGNITUDE: f64 = 1e15;
/// Longest reward name kept.
const MAX_REWARD_NAME_BYTES: usize = 256;
/// Most feedback bytes an attempt keeps, all texts together.
pub const MAX_FEEDBACK_BYTES: usize = 16 << 10;
/// Most feedback texts an attempt keeps.
pub const MAX_FEEDBACK_TEXTS: usize = 64;

/// The rewards an attempt emitted, as far as its final reward is concerned: the capability's
/// per-instance state (no policy slice).
#[derive(Debug, Default, Clone)]
pub struct Rewards {
    /// The last primary reward emitted by the agent (`reward.emit`).
    pub last_primary: Option<f64>,
    /// The last named reward (`reward.emit-named`).
    pub last_named: Option<f64>,
    /// The value of the last reward span recorded when that span is a primary reward (`None`
    /// when the last reward emitted was named, went past the span budget, or none was emitted).
    pub last_recorded: Option<f64>,
    pub emitted: u32,
    /// The feedback texts kept (`reward.feedback`), in order, within the bounds.
    pub feedback: Vec<String>,
    /// Their bytes.
    pub feedback_bytes: usize,
    /// Bytes of feedback dropped past the bounds.
    pub feedback_dropped_bytes: u64,
}

impl Rewards {
    /// Keeps `text` as the next feedback, as far as the bounds allow.
    pub fn add_feedback(&mut self, mut text: String) {
        let room = MAX_FEEDBACK_BYTES - self.feedback_bytes;
        let mut cut = if self.feedback.len() >= MAX_FEEDBACK_TEXTS {
            0
        } else {
            room.min(text.len())
        };
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let dropped = text.len() - cut;
        self.feedback_dropped_bytes = self
            .feedback_dropped_bytes
            .saturating_add(u64::try_from(dropped).unwrap_or(u64::MAX));
        if cut == 0 && (dropped > 0 || self.feedback.len() >= MAX_FEEDBACK_TEXTS) {
            return;
        }
        text.truncate(cut);
        self.feedback_bytes += cut;
        self.feedback.push(text);
    }

    /// The feedback attributes of the span that records them (none without feedback).
    fn feedback_attributes(&self) -> Vec<KeyValue> {
        if self.feedback.is_empty() && self.feedback_dropped_bytes == 0 {
            return Vec::new();
        }
        let texts = self.feedback.iter().cloned().map(StringValue::from).collect();
        let mut attributes = vec![KeyValue::new(
            names::REWARD_FEEDBACK,
            Value::Array(Array::String(texts)),
        )];
        if self.feedback_dropped_bytes > 0 {
            attributes.push(KeyValue::new(
                names::REWARD_FEEDBACK_DROPPED_BYTES,
                i64::try_from(self.feedback_dropped_bytes).unwrap_or(i64::MAX),
            ));
        }
        attributes
    }
}

impl Capability for Rewards {
    fn prepare(_policy: &SandboxPolicy, _instance: &InstanceContext) -> Result<Self, SandboxError> {
        Ok(Self::default())
    }
}

/// `agl:agent/reward` at 0.3.0, 0.2.0 and 0.1.0.
impl Link<AttemptState> for Rewards {
    fn link(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
        crate::bindings::reward::add_to_linker::<_, HasSelf<_>>(linker, |state| state)?;
        v0_2_reward::add_to_linker::<_, HasSelf<_>>(linker, |state| state)?;
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
    state.sandbox.tape.handle.note(&format!("reward.{call}"), || {
        // The value as text: NaN and infinities are not JSON numbers.
        serde_json::json!({ "name": name, "value": value.to_string() })
    })?;
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
/// budget, unless the last reward span recorded already holds it, nothing was returned and there
/// is no feedback to record on it.
pub(crate) fn record_final_reward(state: &mut HostState, returned: Option<f64>, final_value: f64) {
    let feedback = state.sandbox.reward.feedback_attributes();
    let already_last =
        returned.is_none() && state.sandbox.reward.last_recorded == Some(final_value) && feedback.is_empty();
    if !already_last {
        let mut attributes = reward_attributes(PRIMARY, final_value);
        attributes.extend(feedback);
        state.world.trace.instant_always(names::REWARD, attributes, Status::Ok);
        state.sandbox.reward.last_recorded = Some(final_value);
    }
}

/// Ends an attempt without a final reward: records its feedback, if any, on an annotation span
/// of its own (no reward dimension, so no reader takes it for a reward), outside the span budget.
pub(crate) fn record_feedback_alone(state: &mut HostState) {
    let feedback = state.sandbox.reward.feedback_attributes();
    if !feedback.is_empty() {
        state.world.trace.instant_always(names::REWARD, feedback, Status::Ok);
    }
}

impl Host for HostState {
    fn emit(&mut self, value: f64) -> wasmtime::Result<()> {
        emit_reward(self, "emit", PRIMARY, value)
    }

    fn emit_named(&mut self, name: String, value: f64) -> wasmtime::Result<()> {
        emit_reward(self, "emit-named", &name, value)
    }

    fn feedback(&mut self, text: String) -> wasmtime::Result<()> {
        self.sandbox
            .tape
            .handle
            .note("reward.feedback", || serde_json::json!({ "text": text }))?;
        self.sandbox.reward.add_feedback(text);
        Ok(())
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
    fn feedback_appends_within_its_bounds_cut_on_a_char_boundary_and_counts_the_rest() {
        let mut rewards = Rewards::default();
        rewards.add_feedback("expected 27, got 2.7: units".into());
        rewards.add_feedback("\u{1b}[2J\r\0 kept as data".into());
        assert_eq!(
            rewards.feedback,
            ["expected 27, got 2.7: units", "\u{1b}[2J\r\0 kept as data"]
        );
        assert_eq!(rewards.feedback_dropped_bytes, 0);

        let mut full = Rewards::default();
        full.add_feedback("a".repeat(MAX_FEEDBACK_BYTES - 1));
        full.add_feedback("é and more".into());
        assert_eq!(full.feedback.len(), 1, "no room for a whole é");
        assert_eq!(full.feedback_dropped_bytes, "é and more".len() as u64);
        full.add_feedback("x".into());
        assert_eq!(full.feedback.len(), 2);
        assert_eq!(full.feedback_bytes, MAX_FEEDBACK_BYTES);
        full.add_feedback("past the end".into());
        assert_eq!(full.feedback.len(), 2);
        assert_eq!(
            full.feedback_dropped_bytes,
            ("é and more".len() + "past the end".len()) as u64
        );

        let mut many = Rewards::default();
        for i in 0..MAX_FEEDBACK_TEXTS + 3 {
            many.add_feedback(format!("{i}"));
        }
        assert_eq!(many.feedback.len(), MAX_FEEDBACK_TEXTS);
        assert_eq!(many.feedback_dropped_bytes, 6, "64, 65 and 66 dropped");
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
