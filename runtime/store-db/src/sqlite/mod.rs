//! `SqliteLightningStore`: the LightningStore kept in one SQLite file (WAL mode), for one process.
//! Every call is a job for the writer thread (`writer.rs`), which runs the shared transitions
//! (`agl_store::transitions`) over [`tx::SqliteTx`] and commits groups of calls together; a call
//! returns once its change is committed. `wait_for_rollouts` sleeps until the commits have
//! finished every rollout it waits for (the writer tells each waiter which rollouts a commit
//! finished); the watchdog runs before every call and on a background tick, as in memory. The
//! write-ahead log is folded into the file mostly by a thread of its own (`checkpointer.rs`).

mod checkpointer;
mod queries;
mod recall;
mod schema;
mod tx;
mod writer;

pub use schema::VERSION as SCHEMA_VERSION;

use crate::Access;
use crate::error::DbError;
use agl_store::model::*;
use agl_store::transitions;
use agl_store::{AttemptRef, Clock, LightningStore, RunRecord, StoreBackend, StoreError, StoreOptions, StoreResult};
use async_trait::async_trait;
use rusqlite::{Connection, OpenFlags};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, Weak, mpsc};
use std::time::Duration;
use tokio::sync::{Notify, oneshot};
use tx::SqliteTx;
use writer::{Job, JobEnd, Message};

struct Inner {
    jobs: std::sync::Mutex<mpsc::Sender<Message>>,
    clock: Arc<dyn Clock>,
    started_at: f64,
    /// The `wait_for_rollouts` calls waiting: each commit that finished rollouts tells them.
    waiters: Arc<Waiters>,
    path: PathBuf,
    /// Opened with [`SqliteLightningStore::open_read_only`]: reads never run the watchdog.
    read_only: bool,
}

/// The SQLite LightningStore. Cloning gives another handle to the same store.
#[derive(Clone)]
pub struct SqliteLightningStore {
    inner: Arc<Inner>,
}

impl SqliteLightningStore {
    /// Opens (creating it and its folder if missing) the database at `path` and brings its
    /// schema up to date. A background watchdog tick needs a Tokio runtime.
    pub fn open(path: &Path, options: StoreOptions) -> Result<Self, DbError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| DbError::Open {
                path: path.to_owned(),
                reason: match parent.ancestors().find(|a| a.is_file()) {
                    Some(file) => format!("{} is a file, not a folder", file.display()),
                    None => format!("cannot create its folder: {e}"),
                },
            })?;
        }
        Self::open_as(path, options, Access::ReadWrite)
    }

    /// Opens the existing database at `path` to read only (`agl-host show`, `runs`, `export`,
    /// `dashboard`): nothing is created, migrated or written, not even a schema into an empty
    /// file; the watchdog never runs. A database with no store schema, or one this binary
    /// cannot read, is refused. Calls that write fail.
    pub fn open_read_only(path: &Path, options: StoreOptions) -> Result<Self, DbError> {
        Self::open_as(path, options, Access::ReadOnly)
    }

    fn open_as(path: &Path, options: StoreOptions, access: Access) -> Result<Self, DbError> {
        let place = path.display().to_string();
        let open_error = |e: rusqlite::Error| DbError::Open {
            path: path.to_owned(),
            reason: e.to_string(),
        };
        let read_only = access == Access::ReadOnly;
        let mut conn = if read_only {
            let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
            Connection::open_with_flags(path, flags).map_err(open_error)?
        } else {
            Connection::open(path).map_err(open_error)?
        };
        conn.busy_timeout(Duration::from_secs(10)).map_err(open_error)?;
        if !read_only {
            // WAL: readers never block the writer, and a commit is one append; NORMAL: a commit
            // is durable once the process has written it (it survives the process being killed).
            let mode: String = conn
                .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
                .map_err(open_error)?;
            if !mode.eq_ignore_ascii_case("wal") {
                tracing::warn!(path = %place, mode, "SQLite would not use WAL mode");
            }
            conn.pragma_update(None, "synchronous", "NORMAL").map_err(open_error)?;
        }
        // Plans that do not depend on bound values: otherwise SQLite looks at a parameter while
        // planning some statements (an `=` beside ORDER BY or MAX), and every new binding of it
        // then compiles the cached statement again (each span's insert did so).
        conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
            .map_err(open_error)?;
        // Room for every statement the store runs (rusqlite keeps 16 by default; a run uses more,
        // and a statement pushed out is compiled again when next used).
        conn.set_prepared_statement_cache_capacity(128);
        // No memory map (SQLite's default): a map of the file counts in the process's resident
        // memory, and over an hour's soak it grew to the map's size (1 GiB) while the store's own
        // memory stayed flat; the bench's dequeue measured the same with and without it.
        let fold = if read_only {
            // A file that is not a database fails here, as opening to write fails on its mode.
            let found: i64 = conn
                .query_row("PRAGMA user_version", [], |row| row.get(0))
                .map_err(open_error)?;
            schema::check_readable(found, &place)?;
            checkpointer::Fold::none()
        } else {
            // SQLite's own fold of the write-ahead log, where the checkpointer cannot hook
            // commits: every 16,000 pages (64 MiB) rather than 1,000 (see `checkpointer.rs`).
            conn.pragma_update(None, "wal_autocheckpoint", checkpointer::FOLD_PAGES)
                .map_err(open_error)?;
            schema::migrate(&mut conn, &place)?;
            checkpointer::Fold::start(&mut conn, path)
        };

        let (sender, receiver) = mpsc::channel::<Message>();
        let inner = Arc::new(Inner {
            jobs: std::sync::Mutex::new(sender),
            started_at: options.clock.now(),
            clock: options.clock,
            waiters: Arc::default(),
            path: path.to_owned(),
            read_only,
        });
        let waiters = Arc::clone(&inner.waiters);
        std::thread::Builder::new()
            .name("agl-sqlite-writer".into())
            .spawn(move || writer::run(conn, fold, access, receiver, |finished| waiters.heard(&finished)))
            .map_err(|e| DbError::Other {
                place,
                reason: format!("cannot start its writer thread: {e}"),
            })?;
        if let Some(period) = options.watchdog_interval.filter(|_| !read_only)
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(watchdog_tick(Arc::downgrade(&inner), period));
        }
        Ok(Self { inner })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }
}

impl Inner {
    /// Runs `op` on the writer thread, at the clock's now, inside a transaction; answers once it
    /// is committed.
    async fn call<T: Send + 'static>(
        &self,
        op: impl FnOnce(&mut SqliteTx<'_>, f64) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        let (answer, answered) = oneshot::channel();
        let clock = Arc::clone(&self.clock);
        let job: Job = Box::new(move |tx: &mut SqliteTx<'_>| {
            let result = op(tx, clock.now());
            JobEnd {
                succeeded: result.is_ok(),
                answer: Box::new(move |failure: Option<StoreError>| {
                    let _ = answer.send(match failure {
                        Some(error) => Err(error),
                        None => result,
                    });
                }),
            }
        });
        self.send(Message::Job(job))?;
        answered.await.map_err(|_| writer_stopped())?
    }

    /// Copies the write-ahead log into the database file and empties it.
    async fn checkpoint(&self) -> StoreResult<()> {
        let (answer, answered) = oneshot::channel();
        self.send(Message::Checkpoint(answer))?;
        answered.await.map_err(|_| writer_stopped())?
    }

    fn send(&self, message: Message) -> StoreResult<()> {
        self.jobs
            .lock()
            .map_err(|_| writer_stopped())?
            .send(message)
            .map_err(|_| writer_stopped())
    }

    /// A read, after the watchdog has acted on whatever is due (not on a store opened to read
    /// only).
    async fn read<T: Send + 'static>(
        &self,
        op: impl FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        let read_only = self.read_only;
        self.call(move |tx, now| {
            if !read_only {
                transitions::run_watchdog_if_due(tx, now)?;
            }
            op(tx.conn())
        })
        .await
    }
}

/// The `wait_for_rollouts` calls in progress.
#[derive(Default)]
struct Waiters(std::sync::Mutex<Vec<Arc<Waiter>>>);

/// One `wait_for_rollouts` call: the rollouts it waits for that have not finished.
struct Waiter {
    pending: std::sync::Mutex<HashSet<String>>,
    /// Notified once `pending` is empty.
    all_finished: Notify,
}

impl Waiters {
    /// After a commit (on the writer thread): these rollouts finished.
    fn heard(&self, finished: &[String]) {
        for waiter in self.0.lock().unwrap_or_else(PoisonError::into_inner).iter() {
            let mut pending = waiter.pending.lock().unwrap_or_else(PoisonError::into_inner);
            if pending.is_empty() {
                continue;
            }
            for rollout_id in finished {
                pending.remove(rollout_id);
            }
            if pending.is_empty() {
                waiter.all_finished.notify_one();
            }
        }
    }
}

/// A waiter while it is registered (removed on drop).
struct Registration<'a> {
    waiters: &'a Waiters,
    waiter: Arc<Waiter>,
}

impl<'a> Registration<'a> {
    fn new(waiters: &'a Waiters, rollout_ids: &[String]) -> Self {
        let waiter = Arc::new(Waiter {
            pending: std::sync::Mutex::new(rollout_ids.iter().cloned().collect()),
            all_finished: Notify::new(),
        });
        waiters
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Arc::clone(&waiter));
        Registration { waiters, waiter }
    }

    /// Keeps waiting only for those of `unfinished` (what a read found) that no commit has
    /// finished since; false when none is left.
    fn keep_only(&self, unfinished: &HashSet<String>) -> bool {
        let mut pending = self.waiter.pending.lock().unwrap_or_else(PoisonError::into_inner);
        pending.retain(|rollout_id| unfinished.contains(rollout_id));
        !pending.is_empty()
    }
}

impl std::ops::Deref for Registration<'_> {
    type Target = Waiter;
    fn deref(&self) -> &Waiter {
        &self.waiter
    }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.waiters
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|waiter| !Arc::ptr_eq(waiter, &self.waiter));
    }
}

fn writer_stopped() -> StoreError {
    StoreError::Backend("the SQLite store's writer has stopped (see the log)".into())
}

async fn watchdog_tick(inner: Weak<Inner>, period: Duration) {
    let mut interval = tokio::time::interval(period);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        interval.tick().await;
        let Some(inner) = inner.upgrade() else { break };
        if let Err(error) = inner.call(|tx, now| transitions::run_watchdog(tx, now)).await {
            tracing::warn!("SQLite store: the watchdog failed: {error}");
        }
    }
}

#[async_trait]
impl LightningStore for SqliteLightningStore {
    async fn start_rollout(&self, request: StartRolloutRequest) -> StoreResult<AttemptedRollout> {
        self.inner
            .call(move |tx, now| transitions::start_rollout(tx, request, now))
            .await
    }

    async fn enqueue_rollouts(&self, requests: Vec<EnqueueRolloutRequest>) -> StoreResult<Vec<Rollout>> {
        self.inner
            .call(move |tx, now| transitions::enqueue(tx, requests, now))
            .await
    }

    async fn dequeue_rollouts(&self, limit: usize, worker_id: Option<&str>) -> StoreResult<Vec<AttemptedRollout>> {
        let worker_id = worker_id.map(str::to_owned);
        self.inner
            .call(move |tx, now| transitions::dequeue(tx, limit, worker_id.as_deref(), now))
            .await
    }

    async fn start_attempt(&self, rollout_id: &str, worker_id: Option<&str>) -> StoreResult<AttemptedRollout> {
        let (rollout_id, worker_id) = (rollout_id.to_owned(), worker_id.map(str::to_owned));
        self.inner
            .call(move |tx, now| transitions::start_attempt(tx, &rollout_id, worker_id.as_deref(), now))
            .await
    }

    async fn update_rollout(&self, rollout_id: &str, update: RolloutUpdate) -> StoreResult<Rollout> {
        let rollout_id = rollout_id.to_owned();
        self.inner
            .call(move |tx, now| transitions::update_rollout(tx, &rollout_id, update, now))
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
            .call(move |tx, now| {
                let which = attempt_id.as_deref().map_or(AttemptRef::Latest, AttemptRef::Id);
                transitions::update_attempt(tx, &rollout_id, which, update, now)
            })
            .await
    }

    async fn query_rollouts(&self, query: &RolloutQuery) -> StoreResult<Paginated<RolloutView>> {
        let query = query.clone();
        self.inner.read(move |conn| queries::query_rollouts(conn, &query)).await
    }

    async fn query_attempts(&self, rollout_id: &str, query: &AttemptQuery) -> StoreResult<Paginated<Attempt>> {
        let (rollout_id, query) = (rollout_id.to_owned(), query.clone());
        self.inner
            .read(move |conn| queries::query_attempts(conn, &rollout_id, &query))
            .await
    }

    async fn query_spans(&self, query: &SpanQuery) -> StoreResult<Paginated<Arc<Span>>> {
        let query = query.clone();
        self.inner.read(move |conn| queries::query_spans(conn, &query)).await
    }

    async fn query_resources(&self, query: &ResourcesQuery) -> StoreResult<Paginated<ResourcesUpdate>> {
        let query = query.clone();
        self.inner
            .read(move |conn| queries::query_resources(conn, &query))
            .await
    }

    async fn query_workers(&self, query: &WorkerQuery) -> StoreResult<Paginated<Worker>> {
        let query = query.clone();
        self.inner.read(move |conn| queries::query_workers(conn, &query)).await
    }

    async fn get_rollout_by_id(&self, rollout_id: &str) -> StoreResult<Option<RolloutView>> {
        let rollout_id = rollout_id.to_owned();
        self.inner
            .read(move |conn| queries::rollout_view(conn, &rollout_id))
            .await
    }

    async fn get_latest_attempt(&self, rollout_id: &str) -> StoreResult<Option<Attempt>> {
        let rollout_id = rollout_id.to_owned();
        self.inner
            .read(move |conn| queries::latest_attempt(conn, &rollout_id))
            .await
    }

    async fn add_spans(&self, spans: Vec<Span>) -> StoreResult<Vec<Arc<Span>>> {
        self.inner
            .call(move |tx, now| transitions::add_spans(tx, spans, now))
            .await
    }

    async fn get_next_span_sequence_ids(&self, pairs: &[(&str, &str)]) -> StoreResult<Vec<u64>> {
        let pairs: Vec<(String, String)> = pairs.iter().map(|(r, a)| ((*r).to_owned(), (*a).to_owned())).collect();
        self.inner
            .call(move |tx, now| {
                let borrowed: Vec<(&str, &str)> = pairs.iter().map(|(r, a)| (r.as_str(), a.as_str())).collect();
                transitions::next_span_sequence_ids(tx, &borrowed, now)
            })
            .await
    }

    async fn add_resources(&self, resources: NamedResources) -> StoreResult<ResourcesUpdate> {
        self.inner
            .call(move |tx, now| transitions::add_resources(tx, resources, now))
            .await
    }

    async fn update_resources(&self, resources_id: &str, resources: NamedResources) -> StoreResult<ResourcesUpdate> {
        let resources_id = resources_id.to_owned();
        self.inner
            .call(move |tx, now| transitions::update_resources(tx, &resources_id, resources, now))
            .await
    }

    async fn get_latest_resources(&self) -> StoreResult<Option<ResourcesUpdate>> {
        self.inner.read(queries::latest_resources).await
    }

    async fn get_resources_by_id(&self, resources_id: &str) -> StoreResult<Option<ResourcesUpdate>> {
        let resources_id = resources_id.to_owned();
        self.inner
            .read(move |conn| queries::resources(conn, &resources_id))
            .await
    }

    async fn update_worker(&self, worker_id: &str, update: WorkerUpdate) -> StoreResult<Worker> {
        let worker_id = worker_id.to_owned();
        self.inner
            .call(move |tx, now| transitions::heartbeat_worker(tx, &worker_id, update, now))
            .await
    }

    async fn get_worker_by_id(&self, worker_id: &str) -> StoreResult<Option<Worker>> {
        let worker_id = worker_id.to_owned();
        self.inner.read(move |conn| queries::worker(conn, &worker_id)).await
    }

    async fn wait_for_rollouts(&self, rollout_ids: &[String], timeout: Option<Duration>) -> StoreResult<Vec<Rollout>> {
        // Registered before looking, so that a rollout finishing between the look and the wait
        // is heard; the commits then tell the waiter which rollouts finished, so the database is
        // read again only once all of them have (or the time is up).
        let waiter = Registration::new(&self.inner.waiters, rollout_ids);
        let ids = rollout_ids.to_vec();
        let (finished, unfinished) = self
            .inner
            .read(move |conn| queries::finished_rollouts(conn, &ids))
            .await?;
        if !waiter.keep_only(&unfinished) || timeout.is_some_and(|t| t.is_zero()) {
            return Ok(finished);
        }
        let all_finished = waiter.all_finished.notified();
        match timeout {
            Some(limit) => {
                let _ = tokio::time::timeout(limit, all_finished).await;
            }
            None => all_finished.await,
        }
        drop(waiter);
        let ids = rollout_ids.to_vec();
        let (finished, _) = self
            .inner
            .read(move |conn| queries::finished_rollouts(conn, &ids))
            .await?;
        Ok(finished)
    }

    async fn statistics(&self) -> StoreResult<Statistics> {
        let counts = self.inner.call(|tx, _| agl_store::Storage::counts(tx)).await?;
        Ok(counts.statistics("SqliteLightningStore", self.inner.clock.now() - self.inner.started_at))
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
impl StoreBackend for SqliteLightningStore {
    async fn run_watchdog(&self) -> StoreResult<usize> {
        self.inner.call(|tx, now| transitions::run_watchdog(tx, now)).await
    }

    async fn save_run(&self, record: &RunRecord) -> StoreResult<()> {
        let text = tx::to_json(record)?;
        self.inner
            .call(move |tx, _| {
                tx.conn()
                    .execute(
                        "INSERT INTO store_values (key, value) VALUES ('run', ?1)
                         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        [text],
                    )
                    .map(|_| ())
                    .map_err(tx::db_error)
            })
            .await
    }

    async fn run_record(&self) -> StoreResult<Option<RunRecord>> {
        self.inner.read(queries::run_record).await
    }

    async fn checkpoint(&self) -> StoreResult<()> {
        self.inner.checkpoint().await
    }

    async fn queue_len(&self) -> StoreResult<usize> {
        self.inner
            .call(|tx, _| {
                tx.conn()
                    .query_row("SELECT count(*) FROM rollouts WHERE queue_seq IS NOT NULL", [], |row| {
                        row.get::<_, i64>(0)
                    })
                    .map(|n| usize::try_from(n).unwrap_or(0))
                    .map_err(tx::db_error)
            })
            .await
    }
}
