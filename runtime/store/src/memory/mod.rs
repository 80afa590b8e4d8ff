//! `InMemoryLightningStore`: the whole store in one process's memory.
//!
//! One short-held lock guards the state (never held across `.await`); every change is one of
//! [`crate::transitions`] run over the state's [`crate::Storage`] primitives; enqueue/dequeue are
//! O(1) on a FIFO of slots; spans are indexed per rollout. The watchdog runs before every call (an
//! O(1) peek when nothing is due) and on a background tick, so a timeout lands without waiting
//! for traffic. `wait_for_rollouts` sleeps until the last awaited rollout finishes.

mod state;
mod waiters;
mod watchdog;

use crate::backend::{RunRecord, StoreBackend, StoreOptions};
use crate::clock::Clock;
use crate::error::StoreResult;
use crate::model::*;
use crate::store::{AttemptRef, LightningStore};
use crate::transitions;
use async_trait::async_trait;
use parking_lot::Mutex;
use state::State;
use std::sync::{Arc, Weak};
use std::time::Duration;
use waiters::Waiter;

/// How an in-memory store is built (the options every backend takes).
pub type InMemoryOptions = StoreOptions;

struct Inner {
    state: Mutex<State>,
    run: Mutex<Option<RunRecord>>,
    clock: Arc<dyn Clock>,
    started_at: f64,
}

impl Inner {
    /// Locks the state after letting the watchdog act on whatever is due by now.
    fn lock_checked(&self) -> (parking_lot::MutexGuard<'_, State>, f64) {
        let now = self.clock.now();
        let mut state = self.state.lock();
        // Infallible in memory: the state's storage primitives never fail.
        let _ = transitions::run_watchdog_if_due(&mut *state, now);
        (state, now)
    }

    /// Runs one transition under the lock, at the clock's now.
    fn apply<T>(&self, transition: impl FnOnce(&mut State, f64) -> StoreResult<T>) -> StoreResult<T> {
        let now = self.clock.now();
        transition(&mut self.state.lock(), now)
    }
}

/// The in-memory LightningStore. Cloning gives another handle to the same store.
#[derive(Clone)]
pub struct InMemoryLightningStore {
    inner: Arc<Inner>,
}

impl Default for InMemoryLightningStore {
    fn default() -> Self {
        Self::new()
    }
}

impl InMemoryLightningStore {
    /// A store on the system clock, with a 250 ms watchdog tick when a Tokio runtime is running.
    pub fn new() -> Self {
        Self::with_options(InMemoryOptions::default())
    }

    pub fn with_options(options: InMemoryOptions) -> Self {
        let inner = Arc::new(Inner {
            state: Mutex::new(State::default()),
            run: Mutex::new(None),
            started_at: options.clock.now(),
            clock: options.clock,
        });
        if let Some(period) = options.watchdog_interval
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(watchdog_tick(Arc::downgrade(&inner), period));
        }
        Self { inner }
    }

    /// Runs the watchdog now; returns how many attempts it changed.
    pub fn run_watchdog(&self) -> usize {
        self.inner.apply(transitions::run_watchdog).unwrap_or(0)
    }

    /// How many rollout slots the queue holds (stale ones included); for tests and diagnostics.
    pub fn queue_len(&self) -> usize {
        self.inner.state.lock().queue.len()
    }

    /// Checks the state's structural invariants (its queue, indexes and counters included);
    /// returns the first violation found. Linear in the store's size: for tests and debugging.
    pub fn check_state_invariants(&self) -> Result<(), String> {
        invariants::check(&self.inner.state.lock())
    }
}

async fn watchdog_tick(inner: Weak<Inner>, period: Duration) {
    let mut interval = tokio::time::interval(period);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        interval.tick().await;
        let Some(inner) = inner.upgrade() else { break };
        let _ = inner.apply(transitions::run_watchdog);
    }
}

/// Unregisters a `wait_for_rollouts` waiter however the wait ends (woken, timed out, dropped).
struct WaitRegistration<'a> {
    inner: &'a Inner,
    waiter: Arc<Waiter>,
    slots: Vec<u32>,
}

impl Drop for WaitRegistration<'_> {
    fn drop(&mut self) {
        self.inner.state.lock().waiters.unregister(&self.waiter, &self.slots);
    }
}

#[async_trait]
impl LightningStore for InMemoryLightningStore {
    async fn start_rollout(&self, request: StartRolloutRequest) -> StoreResult<AttemptedRollout> {
        self.inner
            .apply(|state, now| transitions::start_rollout(state, request, now))
    }

    async fn enqueue_rollouts(&self, requests: Vec<EnqueueRolloutRequest>) -> StoreResult<Vec<Rollout>> {
        self.inner
            .apply(|state, now| transitions::enqueue(state, requests, now))
    }

    async fn dequeue_rollouts(&self, limit: usize, worker_id: Option<&str>) -> StoreResult<Vec<AttemptedRollout>> {
        self.inner
            .apply(|state, now| transitions::dequeue(state, limit, worker_id, now))
    }

    async fn start_attempt(&self, rollout_id: &str, worker_id: Option<&str>) -> StoreResult<AttemptedRollout> {
        self.inner
            .apply(|state, now| transitions::start_attempt(state, rollout_id, worker_id, now))
    }

    async fn update_rollout(&self, rollout_id: &str, update: RolloutUpdate) -> StoreResult<Rollout> {
        self.inner
            .apply(|state, now| transitions::update_rollout(state, rollout_id, update, now))
    }

    async fn update_attempt(
        &self,
        rollout_id: &str,
        attempt: AttemptRef<'_>,
        update: AttemptUpdate,
    ) -> StoreResult<Attempt> {
        self.inner
            .apply(|state, now| transitions::update_attempt(state, rollout_id, attempt, update, now))
    }

    async fn query_rollouts(&self, query: &RolloutQuery) -> StoreResult<Paginated<RolloutView>> {
        self.inner.lock_checked().0.query_rollouts(query)
    }

    async fn query_attempts(&self, rollout_id: &str, query: &AttemptQuery) -> StoreResult<Paginated<Attempt>> {
        self.inner.lock_checked().0.query_attempts(rollout_id, query)
    }

    async fn query_spans(&self, query: &SpanQuery) -> StoreResult<Paginated<Arc<Span>>> {
        self.inner.lock_checked().0.query_spans(query)
    }

    async fn query_resources(&self, query: &ResourcesQuery) -> StoreResult<Paginated<ResourcesUpdate>> {
        self.inner.lock_checked().0.query_resources(query)
    }

    async fn query_workers(&self, query: &WorkerQuery) -> StoreResult<Paginated<Worker>> {
        self.inner.lock_checked().0.query_workers(query)
    }

    async fn get_rollout_by_id(&self, rollout_id: &str) -> StoreResult<Option<RolloutView>> {
        Ok(self.inner.lock_checked().0.get_rollout(rollout_id))
    }

    async fn get_latest_attempt(&self, rollout_id: &str) -> StoreResult<Option<Attempt>> {
        Ok(self.inner.lock_checked().0.latest_attempt_of(rollout_id))
    }

    async fn add_spans(&self, spans: Vec<Span>) -> StoreResult<Vec<Arc<Span>>> {
        self.inner.apply(|state, now| transitions::add_spans(state, spans, now))
    }

    async fn get_next_span_sequence_ids(&self, pairs: &[(&str, &str)]) -> StoreResult<Vec<u64>> {
        self.inner
            .apply(|state, now| transitions::next_span_sequence_ids(state, pairs, now))
    }

    async fn add_resources(&self, resources: NamedResources) -> StoreResult<ResourcesUpdate> {
        self.inner
            .apply(|state, now| transitions::add_resources(state, resources, now))
    }

    async fn update_resources(&self, resources_id: &str, resources: NamedResources) -> StoreResult<ResourcesUpdate> {
        self.inner
            .apply(|state, now| transitions::update_resources(state, resources_id, resources, now))
    }

    async fn get_latest_resources(&self) -> StoreResult<Option<ResourcesUpdate>> {
        Ok(self.inner.state.lock().latest_resources())
    }

    async fn get_resources_by_id(&self, resources_id: &str) -> StoreResult<Option<ResourcesUpdate>> {
        Ok(self.inner.state.lock().resources_by_id(resources_id))
    }

    async fn update_worker(&self, worker_id: &str, update: WorkerUpdate) -> StoreResult<Worker> {
        self.inner
            .apply(|state, now| transitions::heartbeat_worker(state, worker_id, update, now))
    }

    async fn get_worker_by_id(&self, worker_id: &str) -> StoreResult<Option<Worker>> {
        Ok(self.inner.lock_checked().0.workers.get(worker_id).cloned())
    }

    async fn wait_for_rollouts(&self, rollout_ids: &[String], timeout: Option<Duration>) -> StoreResult<Vec<Rollout>> {
        let registration = {
            let (mut state, _) = self.inner.lock_checked();
            let pending: Vec<u32> = rollout_ids
                .iter()
                .filter_map(|id| state.slot(id))
                .filter(|slot| !state.rollouts[*slot as usize].rollout.status.is_finished())
                .collect();
            if pending.is_empty() || timeout.is_some_and(|t| t.is_zero()) {
                return Ok(state.finished_rollouts(rollout_ids));
            }
            let waiter = state.waiters.register(&pending);
            WaitRegistration {
                inner: &self.inner,
                waiter,
                slots: pending,
            }
        };
        let woken = registration.waiter.notify.notified();
        match timeout {
            Some(limit) => {
                let _ = tokio::time::timeout(limit, woken).await;
            }
            None => woken.await,
        }
        drop(registration);
        Ok(self.inner.lock_checked().0.finished_rollouts(rollout_ids))
    }

    async fn statistics(&self) -> StoreResult<Statistics> {
        let counts = crate::storage::Storage::counts(&mut *self.inner.state.lock())?;
        Ok(counts.statistics("InMemoryLightningStore", self.inner.clock.now() - self.inner.started_at))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            thread_safe: true,
            async_safe: true,
            zero_copy: false,
            otlp_traces: false,
        }
    }
}

#[async_trait]
impl StoreBackend for InMemoryLightningStore {
    async fn run_watchdog(&self) -> StoreResult<usize> {
        self.inner.apply(transitions::run_watchdog)
    }

    async fn queue_len(&self) -> StoreResult<usize> {
        Ok(self.inner.state.lock().queue.len())
    }

    async fn save_run(&self, record: &RunRecord) -> StoreResult<()> {
        *self.inner.run.lock() = Some(record.clone());
        Ok(())
    }

    async fn run_record(&self) -> StoreResult<Option<RunRecord>> {
        Ok(self.inner.run.lock().clone())
    }

    async fn check_invariants(&self) -> Result<(), String> {
        self.check_state_invariants()?;
        crate::backend::check_through_api(self).await
    }
}

mod invariants;
