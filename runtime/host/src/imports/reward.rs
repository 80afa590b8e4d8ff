//! `agl:agent/reward`: rewards as Agent-lightning records them — an `agentlightning.annotation`
//! span with `agentlightning.reward.0.name` / `.value`.

use crate::bindings::reward::Host;
use crate::spans::names;
use crate::state::{HostState, MAX_ATTRIBUTE_BYTES, clip};
use opentelemetry::KeyValue;
use opentelemetry::trace::Status;

/// The name of the reward `emit` and a returned reward record.
pub const PRIMARY: &str = "primary";

/// Records one reward span; a non-finite value is recorded as an error and otherwise ignored.
pub(crate) fn record_reward(state: &mut HostState, name: &str, value: f64) {
    if !state.take_span_allowance() {
        return;
    }
    let name = clip(name, MAX_ATTRIBUTE_BYTES);
    if !value.is_finite() {
        let attributes = vec![KeyValue::new(names::REWARD_NAME, name)];
        state.trace.instant(
            names::REWARD,
            attributes,
            Status::error(format!("non-finite reward {value} ignored")),
        );
        return;
    }
    if name == PRIMARY {
        state.rewards.last_primary = Some(value);
    }
    state.rewards.emitted += 1;
    let attributes = vec![
        KeyValue::new(names::REWARD_NAME, name),
        KeyValue::new(names::REWARD_VALUE, value),
    ];
    state.trace.instant(names::REWARD, attributes, Status::Ok);
}

impl Host for HostState {
    fn emit(&mut self, value: f64) -> wasmtime::Result<()> {
        record_reward(self, PRIMARY, value);
        Ok(())
    }

    fn emit_named(&mut self, name: String, value: f64) -> wasmtime::Result<()> {
        record_reward(self, &name, value);
        Ok(())
    }
}
