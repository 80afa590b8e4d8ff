//! The LightningStore kept in a database, and the one place a store URL becomes a store.
//!
//! - [`DbUrl`]: `memory`, `sqlite:PATH`, `postgres://...`, as `--db` and `AGL_DB` take them;
//! - [`open`]: the store a URL names, as an `Arc<dyn StoreBackend>`;
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

/// Opens the store `url` names (a database is created, or migrated, as needed).
pub fn open(url: &DbUrl, options: StoreOptions) -> Result<Arc<dyn StoreBackend>, DbError> {
    match url {
        DbUrl::Memory => Ok(Arc::new(InMemoryLightningStore::with_options(options))),
        DbUrl::Sqlite(path) => Ok(Arc::new(SqliteLightningStore::open(path, options)?)),
        DbUrl::Postgres(postgres_url) => Ok(Arc::new(PostgresLightningStore::open(postgres_url, options)?)),
    }
}
