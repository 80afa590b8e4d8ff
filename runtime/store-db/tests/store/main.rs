//! The store's tests, one binary: the conformance suite (`conformance/`: the status machine,
//! behaviour, recordings, property tests), each test stamped once per backend of the one list
//! (`agl_testkit::Backend`, by `#[each_backend]`: `…::memory`, `…::sqlite`, `…::postgres`), then
//! what only one backend shows (`sqlite`, `postgres`).
//!
//! A PostgreSQL test needs the server `agl-testkit` starts: without it (and not under `CI=true`,
//! where it is required) it is ignored, with the reason; it never runs on another backend.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test: a failed step panics and fails it"
)]

mod common;

mod conformance {
    mod behaviour;
    mod properties;
    pub(crate) mod recordings;
    mod transitions;
}

mod postgres;
mod sqlite;

/// A fresh store of each backend for the suite: the match is over the one list of backends, so a
/// new backend cannot be left out.
mod backends {
    use crate::common;
    use agl_store::*;
    use agl_store_db::{PostgresLightningStore, SqliteLightningStore};
    use agl_testkit::Backend;
    use std::path::PathBuf;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// Random operation sequences the property test tries: as many as the backend affords (each
    /// call on a database backend is a committed transaction; each PostgreSQL case a database).
    pub fn property_cases(backend: Backend) -> u32 {
        match backend {
            Backend::Memory => 512,
            Backend::Sqlite => 64,
            Backend::Postgres => 8,
        }
    }

    /// Options for a store whose time moves only when the test says so, with no background tick.
    pub fn manual_options(clock: &ManualClock) -> StoreOptions {
        StoreOptions {
            watchdog_interval: None,
            clock: Arc::new(clock.clone()),
        }
    }

    /// A fresh store whose time moves only when the test says so, with no background tick.
    pub fn manual_store(backend: Backend) -> (Arc<dyn StoreBackend>, ManualClock) {
        let clock = ManualClock::new(common::T0);
        (open(backend, manual_options(&clock)), clock)
    }

    /// A fresh store on the system clock, with this background watchdog tick (needs a Tokio
    /// runtime when the tick is set).
    pub fn live_store(backend: Backend, watchdog_interval: Option<Duration>) -> Arc<dyn StoreBackend> {
        let options = StoreOptions {
            watchdog_interval,
            ..StoreOptions::default()
        };
        open(backend, options)
    }

    fn open(backend: Backend, options: StoreOptions) -> Arc<dyn StoreBackend> {
        match backend {
            Backend::Memory => Arc::new(InMemoryLightningStore::with_options(options)),
            Backend::Sqlite => {
                Arc::new(SqliteLightningStore::open(&fresh_sqlite_path(), options).expect("SQLite store"))
            }
            Backend::Postgres => {
                let url = agl_testkit::postgres::server().fresh_database();
                Arc::new(PostgresLightningStore::open(&url, options).expect("PostgreSQL store"))
            }
        }
    }

    /// A fresh database file under the build's `target/tmp`.
    pub fn fresh_sqlite_path() -> PathBuf {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("agl-sqlite-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch folder");
        dir.join(format!("store-{}.db", NEXT.fetch_add(1, Ordering::Relaxed)))
    }
}
