//! The LightningStore kept in a database, and the one place a store URL becomes a store.
//!
//! - [`DbUrl`]: `memory`, `sqlite:PATH`, `postgres://...`, as `--db` and `AGL_DB` take them;
//! - [`open`]: the store a URL names, as an `Arc<dyn StoreBackend>`; [`open_read_only`]: the
//!   same to read only (nothing created, migrated or written);
//! - [`SqliteLightningStore`]: one SQLite file (WAL), the embedded default for kept runs;
//! - [`PostgresLightningStore`]: a PostgreSQL database, which several processes may share.
//!
//! Both are the generic `agl_store::BackedStore` over a backend of this crate: each supplies
//! transactions over its `agl_store::Storage` (the shared transitions run over it) and the
//! `agl_store::Rows` the shared reads load — written once for both as SQL (`sql/`) — and passes
//! the same conformance suite (`tests/store/conformance`, run on every backend).

pub mod error;
pub mod postgres;
mod sql;
pub mod sqlite;
pub mod url;

pub use self::postgres::PostgresLightningStore;
pub use error::DbError;
pub use sqlite::SqliteLightningStore;
pub use url::DbUrl;

use agl_store::{InMemoryLightningStore, StoreBackend, StoreOptions};
use std::sync::Arc;

pub(crate) use agl_store::storage_backend::Access;

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
