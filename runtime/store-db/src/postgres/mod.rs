//! `PostgresLightningStore`: the LightningStore kept in a PostgreSQL database, which several
//! `agl-host store` processes (replicas) may share and see as one store: the generic
//! [`BackedStore`] over [`PostgresBackend`]. Every call is one transaction on a pooled connection
//! (`pool.rs`, which runs it again after a serialization failure or a deadlock) over
//! [`tx::PgTx`], which locks what the transitions decide on; the watchdog runs before every call
//! and on a background tick, in every replica, safely. `wait_for_rollouts` sleeps until a commit
//! anywhere finishes a rollout (`NOTIFY`, heard by `listen.rs`), re-reading the database then and
//! every [`RECHECK`] at the latest.
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
//! whole store (`tests/store/postgres.rs`, `throughput_figure`: enqueue, dequeue, succeed; 8 tasks,
//! 8 connections; release build; fsync on) the same machine does about 900 rollouts/s
//! (2,700 calls/s).

mod conn;
mod listen;
mod pool;
mod schema;
mod tx;

pub use schema::VERSION as SCHEMA_VERSION;

use crate::error::DbError;
use crate::url::DbUrl;
use agl_store::notifier::Notifier;
use agl_store::storage_backend::{Access, OpenBackend, Opening, TxKind};
use agl_store::{BackedStore, StorageBackend, StoreError, StoreOptions, StoreResult};
use pool::{Isolation, Job, Pool, Session};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::oneshot;
pub use tx::PgTx;

/// How many connections a store opens at most by default (besides its listening one). Calls
/// beyond that wait for a free connection.
pub const DEFAULT_POOL_SIZE: usize = 8;

/// How long `wait_for_rollouts` sleeps at most before it looks again without being woken: the
/// delay a lost notification can cause.
pub const RECHECK: Duration = Duration::from_millis(1500);

/// How long opening a connection may take when the URL says nothing (`connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The PostgreSQL LightningStore. Cloning gives another handle to the same store.
pub type PostgresLightningStore = BackedStore<PostgresBackend>;

/// A PostgreSQL database, through a pool of connections and a listening one.
pub struct PostgresBackend {
    pool: Pool,
    /// Told when a commit of this process finished a rollout (another replica's: by `listen.rs`).
    notifier: Arc<Notifier>,
    /// Set when the store is dropped: the listening thread ends.
    stop_listening: Arc<AtomicBool>,
    place: String,
}

impl Drop for PostgresBackend {
    fn drop(&mut self) {
        self.stop_listening.store(true, Ordering::Relaxed);
    }
}

impl<U: AsRef<str> + ?Sized> OpenBackend<U> for PostgresBackend {
    type Error = DbError;

    /// Opens the database at `target` (`postgres://USER[:PASSWORD]@HOST[:PORT]/DB`) with up to
    /// [`DEFAULT_POOL_SIZE`] connections. To write, its schema is brought up to date; to read
    /// only, every transaction of its connections is read only (`default_transaction_read_only`)
    /// and the schema is checked, not migrated.
    fn open_backend(
        target: &U,
        opening: Opening,
        _options: &StoreOptions,
        notifier: Arc<Notifier>,
    ) -> Result<Self, DbError> {
        let url = target.as_ref();
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
        let access = opening.access;
        if access == Access::ReadOnly {
            let options = match config.get_options() {
                Some(given) => format!("{given} -c default_transaction_read_only=on"),
                None => "-c default_transaction_read_only=on".to_owned(),
            };
            config.options(&options);
        }
        let listen_config = Arc::new(::postgres::Config::from(config.clone()));
        let setup_place = place.clone();
        let pool = Pool::open(config, &place, DEFAULT_POOL_SIZE, move |client| match access {
            Access::ReadWrite => schema::migrate(client, &setup_place),
            Access::ReadOnly => schema::check_readable(client, &setup_place),
        })?;
        let stop_listening = Arc::new(AtomicBool::new(false));
        listen::spawn(
            listen_config,
            place.clone(),
            Arc::clone(&notifier),
            Arc::clone(&stop_listening),
            CONNECT_TIMEOUT,
        )
        .map_err(|e| DbError::Other {
            place: place.clone(),
            reason: format!("cannot start its listening thread: {e}"),
        })?;
        Ok(Self {
            pool,
            notifier,
            stop_listening,
            place,
        })
    }
}

impl PostgresBackend {
    /// The database's URL, password hidden.
    pub fn place(&self) -> &str {
        &self.place
    }
}

impl StorageBackend for PostgresBackend {
    type Tx<'t> = PgTx<'t>;
    const NAME: &'static str = "PostgresLightningStore";
    const REPLAYS: bool = true;
    const RECHECK: Option<Duration> = Some(RECHECK);

    /// On a pool thread; a write locks what it reads, a read is one snapshot and locks nothing.
    fn transact<T, F>(&self, kind: TxKind, mut op: F) -> impl Future<Output = StoreResult<T>> + Send
    where
        T: Send + 'static,
        F: FnMut(&mut PgTx<'_>) -> StoreResult<T> + Send + 'static,
    {
        let isolation = match kind {
            TxKind::Write => Isolation::Write,
            TxKind::Read => Isolation::Read,
        };
        let (answer, answered) = oneshot::channel();
        let notifier = Arc::clone(&self.notifier);
        let job: Job = Box::new(move |session: &mut Session| {
            let result = session.transact(isolation, &mut op).map(|(value, finished_any)| {
                if finished_any {
                    notifier.wake_all();
                }
                value
            });
            let _ = answer.send(result);
        });
        let place = self.place.clone();
        let stopped = move || StoreError::Backend(format!("the PostgreSQL store {place} has stopped (see the log)"));
        let submitted = self.pool.submit(job);
        async move {
            if !submitted {
                return Err(stopped());
            }
            answered.await.map_err(|_| stopped())?
        }
    }
}
