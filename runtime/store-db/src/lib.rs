//! The LightningStore kept in a database, and the one place a store URL becomes a store.
//!
//! - [`DbUrl`]: `memory`, `sqlite:PATH`, `postgres://...`, as `--db` and `AGL_DB` take them;
//! - [`open`]: the store a URL names, as an `Arc<dyn StoreBackend>`; [`open_read_only`]: the
//!   same to read only (nothing created, migrated or written);
//! - [`SqliteLightningStore`]: one SQLite file (WAL), the embedded default for kept runs;
//! - [`PostgresLightningStore`]: a PostgreSQL database, which several processes may share.
//!
//! Every backend runs the same transitions (`agl_store::transitions`) over its own
//! `agl_store::Storage`, and passes the same conformance suite (`runtime/store/tests/conformance`).

pub mod error;
pub mod postgres;
pub mod sqlite;
pub mod url;

pub use self::postgres::PostgresLightningStore;
pub use error::DbError;
pub use sqlite::SqliteLightningStore;
pub use url::DbUrl;

use agl_store::{InMemoryLightningStore, StoreBackend, StoreOptions};
use std::sync::Arc;

/// Whether a store may write to its database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    ReadWrite,
    ReadOnly,
}

/// Opens the store `url` names (a database is created, or migrated, as needed).
pub fn open(url: &DbUrl, options: StoreOptions) -> Result<Arc<dyn StoreBackend>, DbError> {
    match url {
        DbUrl::Memory => Ok(Arc::new(InMemoryLightningStore::with_options(options))),
        DbUrl::Sqlite(path) => Ok(Arc::new(SqliteLightningStore::open(path, options)?)),
        DbUrl::Postgres(postgres_url) => Ok(Arc::new(PostgresLightningStore::open(postgres_url, options)?)),
    }
}

/// Opens the store `url` names to read only (`agl-host show`, `runs`, `export`, `dashboard`): a
/// database must already hold a store this binary reads; nothing is created, migrated or written
/// (SQLite: opened read-only; PostgreSQL: `default_transaction_read_only`), and the watchdog never
/// runs. `memory` is a new, empty store, as with [`open`].
pub fn open_read_only(url: &DbUrl, options: StoreOptions) -> Result<Arc<dyn StoreBackend>, DbError> {
    match url {
        DbUrl::Memory => Ok(Arc::new(InMemoryLightningStore::with_options(options))),
        DbUrl::Sqlite(path) => Ok(Arc::new(SqliteLightningStore::open_read_only(path, options)?)),
        DbUrl::Postgres(postgres_url) => Ok(Arc::new(PostgresLightningStore::open_read_only(postgres_url, options)?)),
    }
}
