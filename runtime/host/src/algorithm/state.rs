//! What an algorithm run's `Store` holds: its WASI context and limits, the LightningStore it
//! drives, its LLM gate and LLM trace, the observer that hears its progress, and its open operation spans.

use super::llm_trace::AlgorithmTrace;
use super::observer::AlgorithmObserver;
use crate::imports::llm::LlmGate;
use crate::memory::MeteredLimits;
use agl_store::LightningStore;
use rustc_hash::FxHashMap;
use std::sync::Arc;
use std::time::Instant;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

pub struct AlgorithmState {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limits: MeteredLimits,
    pub(crate) store: Arc<dyn LightningStore>,
    pub(crate) llm: LlmGate,
    /// Its LLM calls as spans of its own rollout (started on the first call).
    pub(crate) llm_trace: AlgorithmTrace,
    pub(crate) observer: Arc<dyn AlgorithmObserver>,
    /// Open `trace.start-operation` handles: name and start.
    pub(crate) operations: FxHashMap<u64, (String, Instant)>,
    pub(crate) next_operation: u64,
}

impl AlgorithmState {
    pub(crate) fn new(
        wasi: WasiCtx,
        limits: MeteredLimits,
        store: Arc<dyn LightningStore>,
        llm: LlmGate,
        llm_trace: AlgorithmTrace,
        observer: Arc<dyn AlgorithmObserver>,
    ) -> Self {
        Self {
            wasi,
            table: ResourceTable::new(),
            limits,
            store,
            llm,
            llm_trace,
            observer,
            operations: FxHashMap::default(),
            next_operation: 1,
        }
    }
}

impl WasiView for AlgorithmState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}
