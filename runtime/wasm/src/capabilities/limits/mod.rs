//! The limits capability: the memory limit (a metered `ResourceLimiter`, `memory.rs`), the
//! wall-clock deadline (epochs, `deadline.rs`) and the fuel budget, set on each new store.
//! Policy slice: `limits`.

mod deadline;
mod memory;

use super::{Capability, InstanceContext, InstanceState, Link, SandboxError, World};
use crate::policy::SandboxPolicy;
pub use memory::MeteredLimits;
use wasmtime::Store;

impl Capability for MeteredLimits {
    fn prepare(policy: &SandboxPolicy, _instance: &InstanceContext) -> Result<Self, SandboxError> {
        Ok(MeteredLimits::new(policy.limits.memory_bytes))
    }

    fn attach<W: World>(store: &mut Store<InstanceState<W>>, policy: &SandboxPolicy) -> wasmtime::Result<()> {
        store.limiter(|state| &mut state.sandbox.limits);
        deadline::arm(store, policy.limits.deadline);
        match policy.limits.fuel {
            Some(fuel) => store
                .set_fuel(fuel)
                .map_err(|e| e.context("cannot set the fuel budget")),
            // No budget: unmetered. An engine that counts fuel (because the agent has a budget)
            // would otherwise start the algorithm's store with none; one that does not refuses.
            None => {
                let _ = store.set_fuel(u64::MAX);
                Ok(())
            }
        }
    }
}

/// No imports: the limits are the store's.
impl<W: World> Link<W> for MeteredLimits {}
