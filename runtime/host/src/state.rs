//! What one attempt's `Store` holds: its WASI context, memory limits, trace, LLM gate, the
//! rollout's resources and the rewards seen so far. Dropped with the store after the attempt.

use crate::imports::llm::LlmGate;
use crate::memory::MeteredLimits;
use crate::spans::AttemptTrace;
use agl_store::ResourcesUpdate;
pub use agl_store::clip;
use std::sync::Arc;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// Longest string kept from a guest where no span budget applies (an algorithm's log line).
pub use agl_policy::DEFAULT_MAX_ATTRIBUTE_BYTES as MAX_ATTRIBUTE_BYTES;

/// The rewards an attempt emitted, as far as its final reward is concerned.
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

pub struct HostState {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limits: MeteredLimits,
    pub(crate) trace: AttemptTrace,
    pub(crate) llm: LlmGate,
    pub(crate) resources: Option<Arc<ResourcesUpdate>>,
    pub(crate) rewards: Rewards,
}

impl HostState {
    pub(crate) fn new(
        wasi: WasiCtx,
        limits: MeteredLimits,
        trace: AttemptTrace,
        llm: LlmGate,
        resources: Option<Arc<ResourcesUpdate>>,
    ) -> Self {
        Self {
            wasi,
            table: ResourceTable::new(),
            limits,
            trace,
            llm,
            resources,
            rewards: Rewards::default(),
        }
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}
