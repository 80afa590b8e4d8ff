//! The capabilities every instance has, agent or algorithm, and the one way a `Store` is made.
//!
//! Modelled on Spin's factors: each capability is a [`Capability`] that links its imports into
//! a linker of either world, prepares its per-instance state from its slice of the
//! [`SandboxPolicy`] (the slice and its manifest keys and flags are `agl-policy`'s), and may
//! set up the `Store` (limits). [`Sandbox`] holds one state per capability; [`InstanceState`]
//! is a store's data: the sandbox plus the world's own state (an attempt's trace, rewards and
//! resources; an algorithm's store and observer). [`new_store`] is the one store builder.
//!
//! A new capability: a module here (its state, `Capability` impl and host trait impls), one
//! field in [`Sandbox`] and one line in each of [`link`], [`Sandbox::prepare`], [`new_store`]
//! and [`Sandbox::finish`] below. Resources a capability hands the guest live in the sandbox's one [`ResourceTable`]
//! (WASI's streams and wasi:http's bodies must share it).

mod http;
pub use http::keys as http_span_keys;
mod limits;
mod wasi;

pub use http::HttpState;
pub use wasi::WasiState;

use crate::imports::llm::LlmGate;
use crate::memory::MeteredLimits;
use crate::policy::SandboxPolicy;
use crate::spans::AttemptTrace;
pub(crate) use crate::state::InstanceState;
use agl_llm::LlmBackend;
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;
use wasmtime::component::{Linker, ResourceTable};
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
    pub llm_allowance: Option<Arc<crate::LlmAllowance>>,
}

/// What a world's own state offers the capabilities: the trace their calls are recorded in.
pub(crate) trait World: Send + 'static {
    /// The trace host-call spans go to (an algorithm's is started on first use); `None` when
    /// there is none.
    fn trace(&mut self) -> impl Future<Output = Option<&AttemptTrace>> + Send;
}

/// One host capability: its imports, its per-instance state, its part in making the `Store`.
pub(crate) trait Capability: Sized + Send + 'static {
    /// Adds the capability's imports to a linker of either world. Those of the `agl:agent`
    /// interfaces come with the world's bindings instead (`engine.rs`).
    fn link<W: World>(_linker: &mut Linker<InstanceState<W>>) -> wasmtime::Result<()> {
        Ok(())
    }

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

/// The per-instance state of every capability.
pub struct Sandbox {
    pub(crate) table: ResourceTable,
    pub(crate) wasi: WasiState,
    pub(crate) limits: MeteredLimits,
    pub(crate) llm: LlmGate,
    pub(crate) http: HttpState,
}

impl Sandbox {
    /// Every capability's state for one instance.
    pub(crate) fn prepare(policy: &SandboxPolicy, instance: &InstanceContext) -> Result<Self, SandboxError> {
        Ok(Self {
            table: ResourceTable::new(),
            wasi: WasiState::prepare(policy, instance)?,
            limits: MeteredLimits::prepare(policy, instance)?,
            llm: LlmGate::prepare(policy, instance)?,
            http: HttpState::prepare(policy, instance)?,
        })
    }

    /// Every capability's end of the instance; the world's trace ends after this.
    pub(crate) fn finish(&mut self) {
        self.wasi.finish();
        self.limits.finish();
        self.llm.finish();
        self.http.finish();
    }
}

/// Adds every capability's imports to a linker of either world.
pub(crate) fn link<W: World>(linker: &mut Linker<InstanceState<W>>) -> wasmtime::Result<()> {
    WasiState::link(linker)?;
    MeteredLimits::link(linker)?;
    LlmGate::link(linker)?;
    HttpState::link(linker)?;
    Ok(())
}

/// The one store builder: a store holding `sandbox` and the world's state, set up by every
/// capability. The error, if any, is the first capability's that could not set it up; the store
/// is returned anyway so that what the instance holds (its trace) can still be finished.
pub(crate) fn new_store<W: World>(
    engine: &Engine,
    policy: &SandboxPolicy,
    sandbox: Sandbox,
    world: W,
) -> (Store<InstanceState<W>>, wasmtime::Result<()>) {
    let mut store = Store::new(engine, InstanceState { sandbox, world });
    let attached = WasiState::attach(&mut store, policy)
        .and_then(|()| MeteredLimits::attach(&mut store, policy))
        .and_then(|()| LlmGate::attach(&mut store, policy))
        .and_then(|()| HttpState::attach(&mut store, policy));
    (store, attached)
}
