//! [`BackedStore`]: the LightningStore, written once over a [`StorageBackend`]. Every change is one of
//! [`crate::transitions`] in a write transaction; every read is one of [`crate::reads`] in a read
//! transaction, after the watchdog has acted on whatever is due (not in a store opened to read
//! only). Also here, once: the background watchdog tick, `wait_for_rollouts` (woken through the
//! backend's [`Notifier`]), statistics and the run record.

use crate::backend::{RunRecord, StoreBackend, StoreOptions};
use crate::clock::Clock;
use crate::error::{StoreError, StoreResult};
use crate::model::*;
use crate::notifier::Notifier;
use crate::reads;
use crate::rows::Rows;
use crate::storage::Storage;
use crate::storage_backend::{Access, OpenBackend, Opening, StorageBackend, TxKind};
use crate::store::{AttemptRef, LightningStore};
use crate::transitions;
use async_trait::async_trait;
use std::sync::{Arc, Weak};
use std::time::Duration;

struct Shared<B> {
    backend: B,
    clock: Arc<dyn Clock>,
    started_at: f64,
    notifier: Arc<Notifier>,
    access: Access,
}

/// A LightningStore kept in `B`. Cloning gives another handle to the same store.
pub struct BackedStore<B> {
    shared: Arc<Shared<B>>,
}

impl<B> Clone for BackedStore<B> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<B: StorageBackend> BackedStore<B> {
    /// The store over `backend`, which tells `notifier` what its commits finish. With
    /// `options.watchdog_interval`, and unless it is read only, a background tick runs the
    /// watchdog (it needs a Tokio runtime running now; without one there is no tick).
    pub fn assemble(backend: B, notifier: Arc<Notifier>, options: StoreOptions, access: Access) -> Self {
        let shared = Arc::new(Shared {
            backend,
            started_at: options.clock.now(),
            clock: options.clock,
            notifier,
            access,
        });
        if let Some(period) = options.watchdog_interval.filter(|_| access == Access::ReadWrite)
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(watchdog_tick(Arc::downgrade(&shared), period));
        }
        Self { shared }
    }

    /// Opens the store at `target` (creating or migrating its storage as needed).
    pub fn open<T: ?Sized>(target: &T, options: StoreOptions) -> Result<Self, B::Error>
    where
        B: OpenBackend<T>,
    {
        Self::open_as(target, options, Access::ReadWrite)
    }

    /// Opens the existing store at `target` to read only (`agl-host show`, `runs`, `export`,
    /// `dashboard`): nothing is created, migrated or written, and the watchdog never runs.
    pub fn open_read_only<T: ?Sized>(target: &T, options: StoreOptions) -> Result<Self, B::Error>
    where
        B: OpenBackend<T>,
    {
        Self::open_as(target, options, Access::ReadOnly)
    }

    fn open_as<T: ?Sized>(target: &T, options: StoreOptions, access: Access) -> Result<Self, B::Error>
    where
        B: OpenBackend<T>,
    {
        let notifier = Arc::new(Notifier::default());
        let opening = Opening { access };
        let backend = B::open_backend(target, opening, &options, Arc::clone(&notifier))?;
        Ok(Self::assemble(backend, notifier, options, access))
    }

    /// The store's clock's now.
    pub fn now(&self) -> f64 {
        self.shared.clock.now()
    }

    /// The storage the store is kept in.
    pub fn backend(&self) -> &B {
        &self.shared.backend
    }

    /// A change: `op` in a write transaction, at the clock's now (read again for each run).
    async fn write<T: Send + 'static>(
        &self,
        mut op: impl FnMut(&mut B::Tx<'_>, f64) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        let clock = Arc::clone(&self.shared.clock);
        self.shared
            .backend
            .transact(TxKind::Write, move |tx| op(tx, clock.now()))
            .await
    }

    /// A read, after the watchdog has acted on whatever is due (not on a store opened to read
    /// only).
    async fn read<T: Send + 'static>(
        &self,
        mut op: impl FnMut(&mut B::Tx<'_>) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        let clock = Arc::clone(&self.shared.clock);
        let watch = self.shared.access == Access::ReadWrite;
        self.shared
            .backend
            .transact(TxKind::Read, move |tx| {
                if watch {
                    transitions::run_watchdog_if_due(tx, clock.now())?;
                }
                op(tx)
            })
            .await
    }

    /// A look that never runs the watchdog (the queue's length, the totals).
    async fn look<T: Send + 'static>(
        &self,
        op: impl FnMut(&mut B::Tx<'_>) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        self.shared.backend.transact(TxKind::Read, op).await
    }
}

/// A value a transaction's closure consumes: moved out on its only run, or cloned for each run
/// where the backend may run it again ([`StorageBackend::REPLAYS`]).
struct Input<T> {
    value: Option<T>,
    replays: bool,
}

impl<T: Clone> Input<T> {
    fn new<B: StorageBackend>(value: T) -> Self {
        Self {
            value: Some(value),
            replays: B::REPLAYS,
        }
    }

    fn take(&mut self) -> StoreResult<T> {
        let value = if self.replays {
            self.value.clone()
        } else {
            self.value.take()
        };
        value.ok_or_else(|| StoreError::Backend("a transaction ran again with its input spent".into()))
    }
}

async fn watchdog_tick<B: StorageBackend>(shared: Weak<Shared<B>>, period: Duration) {
    let mut interval = tokio::time::interval(period);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        interval.tick().await;
        let Some(shared) = shared.upgrade() else { break };
        let clock = Arc::clone(&shared.clock);
        // `_if_due`: a database asks first, so an idle store's tick changes nothing.
        let ticked = shared
            .backend
            .transact(TxKind::Write, move |tx| {
                transitions::run_watchdog_if_due(tx, clock.now())
            })
            .await;
        if let Err(error) = ticked {
            tracing::warn!("{}: the watchdog failed: {error}", B::NAME);
        }
    }
}

/// Recordings up to this size are checked on the calling task; larger ones (hashing hundreds of
/// MiB takes a while) on Tokio's blocking threads, where there is a runtime.
const CHECK_INLINE_BYTES: usize = 1 << 20;

/// The recording, once it has passed [`Recording::check`] (before any transaction: the hashing
/// holds no lock and, on SQLite, not the writer thread).
async fn check_recording(recording: Recording) -> StoreResult<Recording> {
    if recording.content_bytes() > CHECK_INLINE_BYTES
        && let Ok(runtime) = tokio::runtime::Handle::try_current()
    {
        return runtime
            .spawn_blocking(move || recording.check().map(|()| recording))
            .await
            .map_err(|e| StoreError::Backend(format!("checking a recording failed: {e}")))?;
    }
    recording.check()?;
    Ok(recording)
}

fn owned_pairs(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(r, a)| ((*r).to_owned(), (*a).to_owned())).collect()
}

#[async_trait]
impl<B: StorageBackend> LightningStore for BackedStore<B> {
    async fn start_rollout(&self, request: StartRolloutRequest) -> StoreResult<AttemptedRollout> {
        let mut request = Input::new::<B>(request);
        self.write(move |tx, now| transitions::start_rollout(tx, request.take()?, now))
            .await
    }

    async fn enqueue_rollouts(&self, requests: Vec<EnqueueRolloutRequest>) -> StoreResult<Vec<Rollout>> {
        let mut requests = Input::new::<B>(requests);
        self.write(move |tx, now| transitions::enqueue(tx, requests.take()?, now))
            .await
    }

    async fn dequeue_rollouts(&self, limit: usize, worker_id: Option<&str>) -> StoreResult<Vec<AttemptedRollout>> {
        let worker_id = worker_id.map(str::to_owned);
        self.write(move |tx, now| transitions::dequeue(tx, limit, worker_id.as_deref(), now))
            .await
    }

    async fn start_attempt(&self, rollout_id: &str, worker_id: Option<&str>) -> StoreResult<AttemptedRollout> {
        let (rollout_id, worker_id) = (rollout_id.to_owned(), worker_id.map(str::to_owned));
        self.write(move |tx, now| transitions::start_attempt(tx, &rollout_id, worker_id.as_deref(), now))
            .await
    }

    async fn update_rollout(&self, rollout_id: &str, update: RolloutUpdate) -> StoreResult<Rollout> {
        let rollout_id = rollout_id.to_owned();
        let mut update = Input::new::<B>(update);
        self.write(move |tx, now| transitions::update_rollout(tx, &rollout_id, update.take()?, now))
            .await
    }

    async fn update_attempt(
        &self,
        rollout_id: &str,
        attempt: AttemptRef<'_>,
        update: AttemptUpdate,
    ) -> StoreResult<Attempt> {
        let rollout_id = rollout_id.to_owned();
        let attempt_id = match attempt {
            AttemptRef::Latest => None,
            AttemptRef::Id(id) => Some(id.to_owned()),
        };
        let mut update = Input::new::<B>(update);
        self.write(move |tx, now| {
            let which = attempt_id.as_deref().map_or(AttemptRef::Latest, AttemptRef::Id);
            transitions::update_attempt(tx, &rollout_id, which, update.take()?, now)
        })
        .await
    }

    async fn query_rollouts(&self, query: &RolloutQuery) -> StoreResult<Paginated<RolloutView>> {
        let query = query.clone();
        self.read(move |tx| reads::query_rollouts(tx, &query)).await
    }

    async fn query_attempts(&self, rollout_id: &str, query: &AttemptQuery) -> StoreResult<Paginated<Attempt>> {
        let (rollout_id, query) = (rollout_id.to_owned(), query.clone());
        self.read(move |tx| reads::query_attempts(tx, &rollout_id, &query))
            .await
    }

    async fn query_spans(&self, query: &SpanQuery) -> StoreResult<Paginated<Arc<Span>>> {
        let query = query.clone();
        self.read(move |tx| reads::query_spans(tx, &query)).await
    }

    async fn query_resources(&self, query: &ResourcesQuery) -> StoreResult<Paginated<ResourcesUpdate>> {
        let query = query.clone();
        self.read(move |tx| reads::query_resources(tx, &query)).await
    }

    async fn query_workers(&self, query: &WorkerQuery) -> StoreResult<Paginated<Worker>> {
        let query = query.clone();
        self.read(move |tx| reads::query_workers(tx, &query)).await
    }

    async fn get_rollout_by_id(&self, rollout_id: &str) -> StoreResult<Option<RolloutView>> {
        let rollout_id = rollout_id.to_owned();
        self.read(move |tx| reads::rollout_view(tx, &rollout_id)).await
    }

    async fn get_latest_attempt(&self, rollout_id: &str) -> StoreResult<Option<Attempt>> {
        let rollout_id = rollout_id.to_owned();
        self.read(move |tx| tx.find_latest_attempt(&rollout_id)).await
    }

    async fn add_spans(&self, spans: Vec<Span>) -> StoreResult<Vec<Arc<Span>>> {
        let mut spans = Input::new::<B>(spans);
        self.write(move |tx, now| transitions::add_spans(tx, spans.take()?, now))
            .await
    }

    async fn get_next_span_sequence_ids(&self, pairs: &[(&str, &str)]) -> StoreResult<Vec<u64>> {
        let pairs = owned_pairs(pairs);
        self.write(move |tx, now| {
            let borrowed: Vec<(&str, &str)> = pairs.iter().map(|(r, a)| (r.as_str(), a.as_str())).collect();
            transitions::next_span_sequence_ids(tx, &borrowed, now)
        })
        .await
    }

    async fn add_resources(&self, resources: NamedResources) -> StoreResult<ResourcesUpdate> {
        let mut resources = Input::new::<B>(resources);
        self.write(move |tx, now| transitions::add_resources(tx, resources.take()?, now))
            .await
    }

    async fn update_resources(&self, resources_id: &str, resources: NamedResources) -> StoreResult<ResourcesUpdate> {
        let resources_id = resources_id.to_owned();
        let mut resources = Input::new::<B>(resources);
        self.write(move |tx, now| transitions::update_resources(tx, &resources_id, resources.take()?, now))
            .await
    }

    async fn get_latest_resources(&self) -> StoreResult<Option<ResourcesUpdate>> {
        self.read(|tx| tx.latest_resources()).await
    }

    async fn get_resources_by_id(&self, resources_id: &str) -> StoreResult<Option<ResourcesUpdate>> {
        let resources_id = resources_id.to_owned();
        self.read(move |tx| tx.find_resources(&resources_id)).await
    }

    async fn update_worker(&self, worker_id: &str, update: WorkerUpdate) -> StoreResult<Worker> {
        let worker_id = worker_id.to_owned();
        let mut update = Input::new::<B>(update);
        self.write(move |tx, now| transitions::heartbeat_worker(tx, &worker_id, update.take()?, now))
            .await
    }

    async fn get_worker_by_id(&self, worker_id: &str) -> StoreResult<Option<Worker>> {
        let worker_id = worker_id.to_owned();
        self.read(move |tx| tx.find_worker(&worker_id)).await
    }

    async fn wait_for_rollouts(&self, rollout_ids: &[String], timeout: Option<Duration>) -> StoreResult<Vec<Rollout>> {
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        let ids: Arc<[String]> = rollout_ids.into();
        let wait = self.shared.notifier.register(rollout_ids);
        loop {
            // Armed before looking, so that a rollout finishing between the look and the wait
            // is heard; each look reads only which are unfinished, the records once at the end.
            wait.arm();
            let look = Arc::clone(&ids);
            let unfinished = self.read(move |tx| tx.unfinished_rollouts(&look)).await?;
            let timed_out = deadline.is_some_and(|deadline| tokio::time::Instant::now() >= deadline);
            if unfinished.is_empty() || timed_out {
                break;
            }
            if !wait.keep_only(&unfinished) {
                // All of them finished since the look: look again.
                continue;
            }
            let wake = match (deadline, B::RECHECK) {
                (Some(deadline), Some(recheck)) => Some(deadline.min(tokio::time::Instant::now() + recheck)),
                (deadline, None) => deadline,
                (None, Some(recheck)) => Some(tokio::time::Instant::now() + recheck),
            };
            match wake {
                Some(at) => {
                    let _ = tokio::time::timeout_at(at, wait.woken()).await;
                }
                None => wait.woken().await,
            }
        }
        drop(wait);
        self.read(move |tx| tx.finished_rollouts(&ids)).await
    }

    async fn add_recording(&self, recording: Recording) -> StoreResult<RecordingStored> {
        let recording = Arc::new(check_recording(recording).await?);
        self.write(move |tx, now| transitions::add_recording(tx, &recording, now))
            .await
    }

    async fn get_recording(&self, rollout_id: &str, attempt_id: &str) -> StoreResult<Option<Recording>> {
        let (rollout_id, attempt_id) = (rollout_id.to_owned(), attempt_id.to_owned());
        self.read(move |tx| reads::recording(tx, &rollout_id, &attempt_id))
            .await
    }

    async fn statistics(&self) -> StoreResult<Statistics> {
        let counts = self.look(|tx| tx.counts()).await?;
        Ok(counts.statistics(B::NAME, self.shared.clock.now() - self.shared.started_at))
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
impl<B: StorageBackend> StoreBackend for BackedStore<B> {
    async fn run_watchdog(&self) -> StoreResult<usize> {
        self.write(|tx, now| transitions::run_watchdog(tx, now)).await
    }

    async fn queue_len(&self) -> StoreResult<usize> {
        self.look(|tx| tx.queue_len()).await
    }

    async fn save_run(&self, record: &RunRecord) -> StoreResult<()> {
        let record = record.clone();
        self.write(move |tx, _| tx.save_run_record(&record)).await
    }

    async fn run_record(&self) -> StoreResult<Option<RunRecord>> {
        self.read(|tx| tx.run_record()).await
    }

    async fn checkpoint(&self) -> StoreResult<()> {
        self.shared.backend.checkpoint().await
    }

    async fn check_invariants(&self) -> Result<(), String> {
        self.shared.backend.check_structure()?;
        crate::backend::check_through_api(self).await
    }
}
