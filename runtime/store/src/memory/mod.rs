//! `InMemoryLightningStore`: the whole store in one process's memory, the generic
//! [`crate::BackedStore`] over [`MemoryBackend`].
//!
//! One short-held lock guards the state (never held across `.await`); a transaction is a run
//! under it (nothing can fail half-way: every transition checks before it changes). Enqueue and
//! dequeue are O(1) on a FIFO of slots; spans are indexed per rollout; the watchdog's agenda is
//! a min-heap, so the look before every call is an O(1) peek when nothing is due.

mod invariants;
mod state;
mod watchdog;

use crate::backend::StoreOptions;
use crate::engine::BackedStore;
use crate::error::StoreResult;
use crate::notifier::Notifier;
use crate::storage_backend::{Access, StorageBackend, TxKind};
use crate::transitions;
use parking_lot::Mutex;
pub use state::State;
use std::sync::Arc;

/// How an in-memory store is built (the options every backend takes).
pub type InMemoryOptions = StoreOptions;

/// The in-memory LightningStore. Cloning gives another handle to the same store.
pub type InMemoryLightningStore = BackedStore<MemoryBackend>;

/// The in-memory storage: the state under its lock.
pub struct MemoryBackend {
    state: Mutex<State>,
    notifier: Arc<Notifier>,
}

impl MemoryBackend {
    /// Runs `op` under the lock; then tells the waiters which rollouts it finished.
    fn run<T>(&self, op: impl FnOnce(&mut State) -> StoreResult<T>) -> StoreResult<T> {
        let (result, finished) = {
            let mut state = self.state.lock();
            let result = op(&mut state);
            (result, std::mem::take(&mut state.finished))
        };
        self.notifier.finished(&finished);
        result
    }
}

impl StorageBackend for MemoryBackend {
    type Tx<'t> = State;
    const NAME: &'static str = "InMemoryLightningStore";
    const REPLAYS: bool = false;

    fn transact<T, F>(&self, _kind: TxKind, op: F) -> impl Future<Output = StoreResult<T>> + Send
    where
        T: Send + 'static,
        F: FnMut(&mut State) -> StoreResult<T> + Send + 'static,
    {
        std::future::ready(self.run(op))
    }

    fn check_structure(&self) -> Result<(), String> {
        invariants::check(&self.state.lock())
    }
}

impl Default for BackedStore<MemoryBackend> {
    fn default() -> Self {
        Self::new()
    }
}

impl BackedStore<MemoryBackend> {
    /// A store on the system clock, with a 250 ms watchdog tick when a Tokio runtime is running.
    pub fn new() -> Self {
        Self::with_options(InMemoryOptions::default())
    }

    pub fn with_options(options: InMemoryOptions) -> Self {
        let notifier = Arc::new(Notifier::default());
        let backend = MemoryBackend {
            state: Mutex::new(State::default()),
            notifier: Arc::clone(&notifier),
        };
        Self::assemble(backend, notifier, options, Access::ReadWrite)
    }

    /// Runs the watchdog now; returns how many attempts it changed.
    pub fn run_watchdog(&self) -> usize {
        let now = self.now();
        self.backend()
            .run(|state| transitions::run_watchdog(state, now))
            .unwrap_or(0)
    }

    /// How many rollout slots the queue holds (stale ones included); for tests and diagnostics.
    pub fn queue_len(&self) -> usize {
        self.backend().state.lock().queue.len()
    }

    /// Checks the state's structural invariants (its queue, indexes and counters included);
    /// returns the first violation found. Linear in the store's size: for tests and debugging.
    pub fn check_state_invariants(&self) -> Result<(), String> {
        self.backend().check_structure()
    }
}
