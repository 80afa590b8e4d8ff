//! `PostgresLightningStore`: the LightningStore kept in a PostgreSQL database, which several
//! `agl-host store` processes (replicas) may share and see as one store. Every call is one
//! transaction on a pooled connection (`pool.rs`) running the shared transitions
//! (`agl_store::transitions`) over [`tx::PgTx`], which locks what they decide on; the watchdog
//! runs before every call and on a background tick, in every replica, safely. `wait_for_rollouts`
//! sleeps until a commit anywhere finishes a rollout (`NOTIFY`, heard by `listen.rs`), re-reading
//! the database then and every [`RECHECK`] at the latest.
//!
//! # The client crate
//!
//! [`agl_store::Storage`] is synchronous (a transition calls it step by step inside one
//! transaction), so each call runs on a pool thread (`pool.rs`) that owns one connection:
//! tokio-postgres's client, driven by a current-thread runtime of that thread's own (`conn.rs`),
//! which the thread blocks on. That is what the synchronous `postgres` crate does too, but only
//! the asynchronous client sends several statements before reading their answers, and
//! `tx.rs` needs that: the statements whose answers a transition does not read (`BEGIN`, the
//! writes) and the answers it assumes (the watchdog's question, an insert of a new id) go
//! together with the next statement it reads, or with `COMMIT`. An enqueue is two round trips,
//! a dequeue and an add_span three (before: five, eight and seven). The synchronous crate stays
//! for the migrations and the listening thread. Driving tokio-postgres from the store's own
//! runtime through `Handle::block_on` was measured slower (a hop to a runtime worker and back on
//! every statement) and ties the connections to the runtime that made the store; sqlx is
//! async-only too, and its query layer is of no use here.
//!
//! What limits this store is PostgreSQL's own work per statement, not the round trips: on the
//! 2-core development machine its server processes take most of both cores under load while
//! each call runs five to seven statements (see `runtime/host/benches/README.md`). Through the
//! whole store (`tests/postgres.rs`, `throughput_figure`: enqueue, dequeue, succeed; 8 tasks,
//! 8 connections; release build; fsync on) the same machine does about 900 rollouts/s
//! (2,700 calls/s).

mod conn;
mod listen;
mod pool;
mod queries;
mod schema;
mod tx;

pub use schema::VERSION as SCHEMA_VERSION;

use crate::Access;
use crate::error::DbError;
use crate::url::DbUrl;
use agl_store::model::*;
use agl_store::transitions;
use agl_store::{AttemptRef, Clock, LightningStore, RunRecord, StoreBackend, StoreError, StoreOptions, StoreResult};
use async_trait::async_trait;
use pool::{Isolation, Job, Pool, Session};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::{oneshot, watch};
use tx::PgTx;

/// How many connections a store opens at most by default (besides its listening one). Calls
/// beyond that wait for a free connection.
pub const DEFAULT_POOL_SIZE: usize = 8;

/// How long `wait_for_rollouts` sleeps at most before it looks again without being woken: the
/// delay a lost notification can cause.
pub const RECHECK: Duration = Duration::from_millis(1500);

/// How long opening a connection may take when the URL says nothing (`connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

struct Inner {
    pool: Pool,
    clock: Arc<dyn Clock>,
    started_at: f64,
    /// Bumped after every commit, here or in another replica, that finished a rollout.
    finished: watch::Sender<u64>,
    /// Set when the store is dropped: the listening thread ends.
    stop_listening: Arc<AtomicBool>,
    place: String,
    /// Opened with [`PostgresLightningStore::open_read_only`]: reads never run the watchdog.
    read_only: bool,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop_listening.store(true, Ordering::Relaxed);
    }
}

/// The PostgreSQL LightningStore. Cloning gives another handle to the same store.
#[derive(Clone)]
pub struct PostgresLightningStore {
    inner: Arc<Inner>,
}

impl PostgresLightningStore {
    /// Opens the database at `url` (`postgres://USER[:PASSWORD]@HOST[:PORT]/DB`) with up to
    /// [`DEFAULT_POOL_SIZE`] connections and brings its schema up to date. A background watchdog
    /// tick needs a Tokio runtime.
    pub fn open(url: &str, options: StoreOptions) -> Result<Self, DbError> {
        Self::open_with_pool_size(url, options, DEFAULT_POOL_SIZE)
    }

    /// [`PostgresLightningStore::open`] with up to `pool_size` connections (at least one).
    pub fn open_with_pool_size(url: &str, options: StoreOptions, pool_size: usize) -> Result<Self, DbError> {
        Self::open_as(url, options, pool_size, Access::ReadWrite)
    }

    /// Opens the database at `url` to read only: every transaction of its connections is read
    /// only (`default_transaction_read_only`), the schema is checked, not migrated, and the
    /// watchdog never runs. Calls that write fail.
    pub fn open_read_only(url: &str, options: StoreOptions) -> Result<Self, DbError> {
        Self::open_as(url, options, DEFAULT_POOL_SIZE, Access::ReadOnly)
    }

    fn open_as(url: &str, options: StoreOptions, pool_size: usize, access: Access) -> Result<Self, DbError> {
        let place = DbUrl::Postgres(url.to_owned()).redacted();
        let mut config: tokio_postgres::Config = url.parse().map_err(|e| DbError::Url {
            url: place.clone(),
            reason: format!("not a PostgreSQL URL: {}", conn::describe(&e)),
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("agl-host");
        }
        let read_only = access == Access::ReadOnly;
        if read_only {
            let options = match config.get_options() {
                Some(given) => format!("{given} -c default_transaction_read_only=on"),
                None => "-c default_transaction_read_only=on".to_owned(),
            };
            config.options(&options);
        }
        let listen_config = Arc::new(::postgres::Config::from(config.clone()));
        let setup_place = place.clone();
        let pool = Pool::open(config, &place, pool_size, move |client| match access {
            Access::ReadWrite => schema::migrate(client, &setup_place),
            Access::ReadOnly => schema::check_readable(client, &setup_place),
        })?;

        let (finished, _) = watch::channel(0u64);
        let stop_listening = Arc::new(AtomicBool::new(false));
        listen::spawn(
            listen_config,
            place.clone(),
            finished.clone(),
            Arc::clone(&stop_listening),
            CONNECT_TIMEOUT,
        )
        .map_err(|e| DbError::Other {
            place: place.clone(),
            reason: format!("cannot start its listening thread: {e}"),
        })?;
        let inner = Arc::new(Inner {
            pool,
            started_at: options.clock.now(),
            clock: options.clock,
            finished,
            stop_listening,
            place,
            read_only,
        });
        if let Some(period) = options.watchdog_interval.filter(|_| !read_only)
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(watchdog_tick(Arc::downgrade(&inner), period));
        }
        Ok(Self { inner })
    }

    /// The database's URL, password hidden.
    pub fn place(&self) -> &str {
        &self.inner.place
    }
}

impl Inner {
    /// Runs `op` in a transaction on a pool thread, at the clock's now (read again if the
    /// transaction has to run again); answers once it is committed.
    async fn call<T: Send + 'static>(
        &self,
        isolation: Isolation,
        mut op: impl FnMut(&mut PgTx<'_>, f64) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        let (answer, answered) = oneshot::channel();
        let clock = Arc::clone(&self.clock);
        let finished = self.finished.clone();
        let job: Job = Box::new(move |session: &mut Session| {
            let result = session
                .transact(isolation, &*clock, &mut op)
                .map(|(value, finished_any)| {
                    if finished_any {
                        finished.send_modify(|generation| *generation = generation.wrapping_add(1));
                    }
                    value
                });
            let _ = answer.send(result);
        });
        let stopped = || StoreError::Backend(format!("the PostgreSQL store {} has stopped (see the log)", self.place));
        if !self.pool.submit(job) {
            return Err(stopped());
        }
        answered.await.map_err(|_| stopped())?
    }

    /// A call that changes things.
    async fn write<T: Send + 'static>(
        &self,
        op: impl FnMut(&mut PgTx<'_>, f64) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        self.call(Isolation::Write, op).await
    }

    /// A read, in one snapshot, after the watchdog has acted on whatever is due (not on a store
    /// opened to read only).
    async fn read<T: Send + 'static>(
        &self,
        mut op: impl FnMut(&mut PgTx<'_>) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        let read_only = self.read_only;
        self.call(Isolation::Read, move |tx, now| {
            if !read_only {
                transitions::run_watchdog_if_due(tx, now)?;
            }
            op(tx)
        })
        .await
    }
}

async fn watchdog_tick(inner: Weak<Inner>, period: Duration) {
    let mut interval = tokio::time::interval(period);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        interval.tick().await;
        let Some(inner) = inner.upgrade() else { break };
        // `_if_due`: asked with `BEGIN`, so an idle replica's tick is two round trips.
        if let Err(error) = inner.write(|tx, now| transitions::run_watchdog_if_due(tx, now)).await {
            tracing::warn!("PostgreSQL store: the watchdog failed: {error}");
        }
    }
}

#[async_trait]
impl LightningStore for PostgresLightningStore {
    async fn start_rollout(&self, request: StartRolloutRequest) -> StoreResult<AttemptedRollout> {
        self.inner
            .write(move |tx, now| transitions::start_rollout(tx, request.clone(), now))
            .await
    }

    async fn enqueue_rollouts(&self, requests: Vec<EnqueueRolloutRequest>) -> StoreResult<Vec<Rollout>> {
        self.inner
            .write(move |tx, now| transitions::enqueue(tx, requests.clone(), now))
            .await
    }

    async fn dequeue_rollouts(&self, limit: usize, worker_id: Option<&str>) -> StoreResult<Vec<AttemptedRollout>> {
        let worker_id = worker_id.map(str::to_owned);
        self.inner
            .write(move |tx, now| transitions::dequeue(tx, limit, worker_id.as_deref(), now))
            .await
    }

    async fn start_attempt(&self, rollout_id: &str, worker_id: Option<&str>) -> StoreResult<AttemptedRollout> {
        let (rollout_id, worker_id) = (rollout_id.to_owned(), worker_id.map(str::to_owned));
        self.inner
            .write(move |tx, now| transitions::start_attempt(tx, &rollout_id, worker_id.as_deref(), now))
            .await
    }

    async fn update_rollout(&self, rollout_id: &str, update: RolloutUpdate) -> StoreResult<Rollout> {
        let rollout_id = rollout_id.to_owned();
        self.inner
            .write(move |tx, now| transitions::update_rollout(tx, &rollout_id, update.clone(), now))
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
        self.inner
            .write(move |tx, now| {
                let which = attempt_id.as_deref().map_or(AttemptRef::Latest, AttemptRef::Id);
                transitions::update_attempt(tx, &rollout_id, which, update.clone(), now)
            })
            .await
    }

    async fn query_rollouts(&self, query: &RolloutQuery) -> StoreResult<Paginated<RolloutView>> {
        let query = query.clone();
        self.inner.read(move |tx| queries::query_rollouts(tx, &query)).await
    }

    async fn query_attempts(&self, rollout_id: &str, query: &AttemptQuery) -> StoreResult<Paginated<Attempt>> {
        let (rollout_id, query) = (rollout_id.to_owned(), query.clone());
        self.inner
            .read(move |tx| queries::query_attempts(tx, &rollout_id, &query))
            .await
    }

    async fn query_spans(&self, query: &SpanQuery) -> StoreResult<Paginated<Arc<Span>>> {
        let query = query.clone();
        self.inner.read(move |tx| queries::query_spans(tx, &query)).await
    }

    async fn query_resources(&self, query: &ResourcesQuery) -> StoreResult<Paginated<ResourcesUpdate>> {
        let query = query.clone();
        self.inner.read(move |tx| queries::query_resources(tx, &query)).await
    }

    async fn query_workers(&self, query: &WorkerQuery) -> StoreResult<Paginated<Worker>> {
        let query = query.clone();
        self.inner.read(move |tx| queries::query_workers(tx, &query)).await
    }

    async fn get_rollout_by_id(&self, rollout_id: &str) -> StoreResult<Option<RolloutView>> {
        let rollout_id = rollout_id.to_owned();
        self.inner.read(move |tx| queries::rollout_view(tx, &rollout_id)).await
    }

    async fn get_latest_attempt(&self, rollout_id: &str) -> StoreResult<Option<Attempt>> {
        let rollout_id = rollout_id.to_owned();
        self.inner
            .read(move |tx| queries::latest_attempt(tx, &rollout_id))
            .await
    }

    async fn add_spans(&self, spans: Vec<Span>) -> StoreResult<Vec<Arc<Span>>> {
        self.inner
            .write(move |tx, now| transitions::add_spans(tx, spans.clone(), now))
            .await
    }

    async fn get_next_span_sequence_ids(&self, pairs: &[(&str, &str)]) -> StoreResult<Vec<u64>> {
        let pairs: Vec<(String, String)> = pairs.iter().map(|(r, a)| ((*r).to_owned(), (*a).to_owned())).collect();
        self.inner
            .write(move |tx, now| {
                let borrowed: Vec<(&str, &str)> = pairs.iter().map(|(r, a)| (r.as_str(), a.as_str())).collect();
                transitions::next_span_sequence_ids(tx, &borrowed, now)
            })
            .await
    }

    async fn add_resources(&self, resources: NamedResources) -> StoreResult<ResourcesUpdate> {
        self.inner
            .write(move |tx, now| transitions::add_resources(tx, resources.clone(), now))
            .await
    }

    async fn update_resources(&self, resources_id: &str, resources: NamedResources) -> StoreResult<ResourcesUpdate> {
        let resources_id = resources_id.to_owned();
        self.inner
            .write(move |tx, now| transitions::update_resources(tx, &resources_id, resources.clone(), now))
            .await
    }

    async fn get_latest_resources(&self) -> StoreResult<Option<ResourcesUpdate>> {
        self.inner.read(queries::latest_resources).await
    }

    async fn get_resources_by_id(&self, resources_id: &str) -> StoreResult<Option<ResourcesUpdate>> {
        let resources_id = resources_id.to_owned();
        self.inner.read(move |tx| queries::resources(tx, &resources_id)).await
    }

    async fn update_worker(&self, worker_id: &str, update: WorkerUpdate) -> StoreResult<Worker> {
        let worker_id = worker_id.to_owned();
        self.inner
            .write(move |tx, now| transitions::heartbeat_worker(tx, &worker_id, update.clone(), now))
            .await
    }

    async fn get_worker_by_id(&self, worker_id: &str) -> StoreResult<Option<Worker>> {
        let worker_id = worker_id.to_owned();
        self.inner.read(move |tx| queries::worker(tx, &worker_id)).await
    }

    async fn wait_for_rollouts(&self, rollout_ids: &[String], timeout: Option<Duration>) -> StoreResult<Vec<Rollout>> {
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        // Subscribed before looking, so that no commit between the look and the wait is missed.
        let mut commits = self.inner.finished.subscribe();
        let ids: Arc<[String]> = rollout_ids.into();
        loop {
            // Each look only counts what is unfinished; the records are read once, at the end.
            let look = Arc::clone(&ids);
            let waiting = self.inner.read(move |tx| queries::any_unfinished(tx, &look)).await?;
            let timed_out = deadline.is_some_and(|deadline| tokio::time::Instant::now() >= deadline);
            if !waiting || timed_out {
                let look = Arc::clone(&ids);
                let (finished, _) = self.inner.read(move |tx| queries::finished_rollouts(tx, &look)).await?;
                return Ok(finished);
            }
            // Woken by a commit (here or, through `listen.rs`, in another replica), by the
            // recheck timer, or by the deadline; either way, look again.
            let recheck = tokio::time::Instant::now() + RECHECK;
            let wake = deadline.map_or(recheck, |deadline| deadline.min(recheck));
            let _ = tokio::time::timeout_at(wake, commits.changed()).await;
        }
    }

    async fn statistics(&self) -> StoreResult<Statistics> {
        let counts = self.inner.read(|tx| agl_store::Storage::counts(tx)).await?;
        Ok(counts.statistics("PostgresLightningStore", self.inner.clock.now() - self.inner.started_at))
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
impl StoreBackend for PostgresLightningStore {
    async fn run_watchdog(&self) -> StoreResult<usize> {
        self.inner.write(|tx, now| transitions::run_watchdog(tx, now)).await
    }

    async fn save_run(&self, record: &RunRecord) -> StoreResult<()> {
        let text = tx::to_json(record)?;
        self.inner
            .write(move |tx, _| {
                tx.write(
                    "INSERT INTO store_values (key, value) VALUES ('run', $1)
                     ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    vec![Box::new(text.clone())],
                )
            })
            .await
    }

    async fn run_record(&self) -> StoreResult<Option<RunRecord>> {
        self.inner.read(queries::run_record).await
    }

    async fn queue_len(&self) -> StoreResult<usize> {
        self.inner.read(queries::queue_len).await
    }
}
