//! Why a database store could not be opened (a bad URL, a file that cannot be opened or is not a
//! database, a schema newer than this binary, a failed migration). Errors of store calls are
//! `agl_store::StoreError`s.

use std::path::PathBuf;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum DbError {
    #[error("store URL `{url}`: {reason}")]
    Url { url: String, reason: String },

    #[error("cannot open the SQLite database {}: {reason}", path.display())]
    Open { path: PathBuf, reason: String },

    #[error(
        "the database {place} has schema version {found}, newer than this agl-host knows ({known}): \
         use a newer agl-host, or another database"
    )]
    NewerSchema { place: String, found: i64, known: i64 },

    #[error("the database {place}: migration to schema version {version} failed: {reason}")]
    Migration {
        place: String,
        version: i64,
        reason: String,
    },

    #[error("the database {place}: {reason}")]
    Other { place: String, reason: String },
}
