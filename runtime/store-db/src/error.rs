//! Why a database store could not be opened (a bad URL, a file that cannot be opened or is not a
//! database, a schema newer than this binary, a failed migration; opened to read only: no store
//! in it, or a schema too old to read as it is). Errors of store calls are
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

    #[error(
        "the database {place} holds no agl-host store (it is empty, or another program's database); a command \
         that only reads never creates one"
    )]
    NoStore { place: String },

    #[error(
        "the database {place} has schema version {found}, older than this agl-host reads ({oldest} to {known}): \
         open it once with a command that writes (e.g. `agl-host store --db URL`) to migrate it"
    )]
    OlderSchema {
        place: String,
        found: i64,
        oldest: i64,
        known: i64,
    },

    #[error("the database {place}: migration to schema version {version} failed: {reason}")]
    Migration {
        place: String,
        version: i64,
        reason: String,
    },

    #[error("the database {place}: {reason}")]
    Other { place: String, reason: String },
}

/// Opened to read only: whether schema version `found` can be read as it is by a binary that
/// reads `oldest` to `known`.
pub(crate) fn check_readable_version(place: &str, found: i64, oldest: i64, known: i64) -> Result<(), DbError> {
    let place = place.to_owned();
    match found {
        ..=0 => Err(DbError::NoStore { place }),
        found if found > known => Err(DbError::NewerSchema { place, found, known }),
        found if found < oldest => Err(DbError::OlderSchema {
            place,
            found,
            oldest,
            known,
        }),
        _ => Ok(()),
    }
}
