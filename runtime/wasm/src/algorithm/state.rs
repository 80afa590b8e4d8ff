//! What an algorithm run's `Store` holds besides the sandbox's capabilities (`capabilities/`): the
//! LightningStore it drives, its LLM trace, the observer that hears its progress, and its open
//! operation spans.

use super::llm_trace::AlgorithmTrace;
use super::observer::AlgorithmObserver;
use crate::capabilities::World;
use crate::state::InstanceState;
use agl_store::LightningStore;
use agl_trace::AttemptTrace;
use rustc_hash::FxHashMap;
use std::sync::Arc;
use std::time::Instant;

/// An algorithm run's store data.
pub type AlgorithmState = InstanceState<AlgorithmRun>;

/// What the algorithm world adds to a run's store.
pub struct AlgorithmRun {
    pub(crate) store: Arc<dyn LightningStore>,
    /// Its LLM calls as spans of its own rollout (started on the first call).
    pub(crate) llm_trace: AlgorithmTrace,
    pub(crate) observer: Arc<dyn AlgorithmObserver>,
    /// Open `trace.start-operation` handles: name and start.
    pub(crate) operations: FxHashMap<u64, (String, Instant)>,
    pub(crate) next_operation: u64,
}

impl World for AlgorithmRun {
    fn trace(&mut self) -> impl Future<Output = Option<&AttemptTrace>> + Send {
        self.llm_trace.trace(&*self.observer)
    }
}

impl AlgorithmRun {
    pub(crate) fn new(
        store: Arc<dyn LightningStore>,
        llm_trace: AlgorithmTrace,
        observer: Arc<dyn AlgorithmObserver>,
    ) -> Self {
        Self {
            store,
            llm_trace,
            observer,
            operations: FxHashMap::default(),
            next_operation: 1,
        }
    }
}
