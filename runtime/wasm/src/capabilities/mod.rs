//! The host capabilities every instance is made with, agent or algorithm, one folder each, and
//! the one place they are composed.
//!
//! Modelled on Spin's factors: each capability is a [`Capability`] that prepares its
//! per-instance state from its slice of the [`SandboxPolicy`] (the slice and its manifest keys
//! and flags are `agl-policy`'s), may set up the `Store` (limits) and end what is still open
//! when the instance ends; and a [`Link`] that adds its imports — its `agl:agent` interfaces
//! (0.3.0, 0.2.0 and 0.1.0, each with its bindings' own `add_to_linker`) or its WASI ones — to the
//! linker of a world. A capability's spans are its own too (into the world's trace).
//!
//! [`capabilities!`] below is the one list: from it come [`Sandbox`] (one state per capability,
//! plus the one [`ResourceTable`] WASI's streams and wasi:http's bodies share), [`link`],
//! [`Sandbox::prepare`], [`new_store`] and [`Sandbox::finish`]. A new capability is a folder
//! here and one line in that list. [`InstanceState`] is a store's data: the sandbox plus the
//! world's own state (an attempt's trace; an algorithm's store and observer).

pub mod http;
pub mod limits;
pub mod llm;
pub mod resources;
pub mod reward;
pub mod tape;
pub mod trace;
pub mod wasi;

use crate::policy::SandboxPolicy;
pub(crate) use crate::state::InstanceState;
use agl_llm::LlmBackend;
use agl_store::ResourcesUpdate;
use agl_trace::{AttemptTrace, LlmAllowance};
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;
use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime::{Engine, Store};

/// A capability could not be prepared for an instance (e.g. a granted directory is gone).
#[derive(Debug, Error)]
#[error("{0}")]
pub struct SandboxError(pub String);

/// What an instance is prepared with besides its policy.
pub(crate) struct InstanceContext {
    /// Where the virtual wall clock starts (the attempt's recorded start, or now).
    pub start: Duration,
    /// Seeds the instance's random sources.
    pub seed: u64,
    pub llm: Arc<dyn LlmBackend>,
    /// The attempt's LLM allowance when others spend it too (the LLM proxy's capability); `None`:
    /// a fresh one from the policy.
    pub llm_allowance: Option<Arc<LlmAllowance>>,
    /// The rollout's resources (`None`: it has none, or the world has no rollout).
    pub resources: Option<Arc<ResourcesUpdate>>,
    /// The attempt's tape (off for an algorithm).
    pub tape: tape::TapeHandle,
}

/// What a world's own state offers the capabilities: the trace their calls are recorded in.
pub(crate) trait World: Send + 'static {
    /// The trace host-call spans go to (an algorithm's is started on first use); `None` when
    /// there is none.
    fn trace(&mut self) -> impl Future<Output = Option<&AttemptTrace>> + Send;
}

/// One host capability: its per-instance state and its part in making and ending the `Store`.
pub(crate) trait Capability: Sized + Send + 'static {
    /// The capability's state for one instance, from its slice of `policy`.
    fn prepare(policy: &SandboxPolicy, instance: &InstanceContext) -> Result<Self, SandboxError>;

    /// Sets up a new store holding this state (a limiter, a deadline...).
    fn attach<W: World>(_store: &mut Store<InstanceState<W>>, _policy: &SandboxPolicy) -> wasmtime::Result<()> {
        Ok(())
    }

    /// The instance is over (its call returned, trapped or was stopped): records what is still
    /// open (requests in flight) before the world's trace ends.
    fn finish(&mut self) {}
}

/// How a capability's imports are added to a linker of world `W`. The default links nothing: a
/// capability without imports (limits), or one a world does not import (an algorithm has no
/// `reward`).
pub(crate) trait Link<W: World> {
    fn link(_linker: &mut Linker<InstanceState<W>>) -> wasmtime::Result<()> {
        Ok(())
    }
}

/// The one list of capabilities: `field: Type` in the order they are prepared, attached,
/// linked and finished.
macro_rules! capabilities {
    ($($field:ident: $capability:ty),+ $(,)?) => {
        /// The per-instance state of every capability.
        pub struct Sandbox {
            pub(crate) table: ResourceTable,
            $(pub(crate) $field: $capability,)+
        }

        impl Sandbox {
            /// Every capability's state for one instance.
            pub(crate) fn prepare(policy: &SandboxPolicy, instance: &InstanceContext) -> Result<Self, SandboxError> {
                Ok(Self {
                    table: ResourceTable::new(),
                    $($field: <$capability as Capability>::prepare(policy, instance)?,)+
                })
            }

            /// Every capability's end of the instance; the world's trace ends after this.
            pub(crate) fn finish(&mut self) {
                $(Capability::finish(&mut self.$field);)+
            }
        }

        /// Adds every capability's imports (and the `types` interfaces they share) to a linker of
        /// world `W`.
        pub(crate) fn link<W: World>(linker: &mut Linker<InstanceState<W>>) -> wasmtime::Result<()>
        where
            $($capability: Link<W>,)+
        {
            link_types(linker)?;
            $(<$capability as Link<W>>::link(linker)?;)+
            Ok(())
        }

        /// The one store builder: a store holding `sandbox` and the world's state, set up by
        /// every capability. The error, if any, is the first capability's that could not set it
        /// up; the store is returned anyway so that what the instance holds (its trace) can still
        /// be finished.
        pub(crate) fn new_store<W: World>(
            engine: &Engine,
            policy: &SandboxPolicy,
            sandbox: Sandbox,
            world: W,
        ) -> (Store<InstanceState<W>>, wasmtime::Result<()>) {
            let mut store = Store::new(engine, InstanceState { sandbox, world });
            let attached = Ok(())
                $(.and_then(|()| <$capability as Capability>::attach(&mut store, policy)))+;
            (store, attached)
        }
    };
}

capabilities! {
    tape: tape::TapeState,
    wasi: wasi::WasiState,
    limits: limits::MeteredLimits,
    llm: llm::LlmGate,
    http: http::HttpState,
    trace: trace::Trace,
    reward: reward::Rewards,
    resources: resources::Resources,
}

/// `agl:agent/types` (records only, no functions), at 0.3.0, 0.2.0 and 0.1.0: every world imports
/// it.
impl<W: World> crate::bindings::types::Host for InstanceState<W> {}
impl<W: World> crate::v0_2::agent::types::Host for InstanceState<W> {}
impl<W: World> crate::v0_1::agent::types::Host for InstanceState<W> {}

fn link_types<W: World>(linker: &mut Linker<InstanceState<W>>) -> wasmtime::Result<()> {
    crate::bindings::types::add_to_linker::<_, HasSelf<_>>(linker, |state| state)?;
    crate::v0_2::agent::types::add_to_linker::<_, HasSelf<_>>(linker, |state| state)?;
    crate::v0_1::agent::types::add_to_linker::<_, HasSelf<_>>(linker, |state| state)
}
