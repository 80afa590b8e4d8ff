//! A kept store opened to look at it (`agl-host runs`, `show`, `export`, `best`, `dashboard`):
//! read only, with no watchdog, and how to name it to the user.

use crate::RunsError;
use agl_store::{RunRecord, StoreBackend, StoreOptions};
use agl_store_db::DbUrl;
use std::sync::Arc;

/// Opens a kept run's store to look at it: read only (`agl_store_db::open_read_only`: nothing is
/// created, migrated or written, not even a schema into an empty file; a database with no store
/// is refused), with no watchdog, so reading never times out or requeues an attempt of a run
/// that was killed, or of one that another process is still running.
pub fn open_to_read(url: &DbUrl) -> Result<Arc<dyn StoreBackend>, agl_store_db::DbError> {
    let options = StoreOptions {
        watchdog_interval: None,
        clock: Arc::new(agl_store::ManualClock::new(0.0)),
    };
    agl_store_db::open_read_only(url, options)
}

/// A store that already exists, opened to read as [`open_to_read`] does; a SQLite file that is
/// not there is an error (`agl-host show`, `export`), not a new empty database.
pub fn open_existing(url: &DbUrl) -> Result<Arc<dyn StoreBackend>, RunsError> {
    if let DbUrl::Sqlite(path) = url
        && !path.is_file()
    {
        return Err(RunsError::Input(format!("{}: no such file", path.display())));
    }
    Ok(open_to_read(url)?)
}

/// How to name a store to the user: a SQLite database by its path, any other by its URL with
/// no password.
pub fn place(url: &DbUrl) -> String {
    match url {
        DbUrl::Sqlite(path) => path.display().to_string(),
        other => other.redacted(),
    }
}

/// A kept store opened to read, with its run record and how to name it.
pub struct OpenedKept {
    pub store: Arc<dyn StoreBackend>,
    pub record: Option<RunRecord>,
    pub place: String,
}

/// Opens the kept store at `url` (it must exist) and reads its run record.
pub async fn open_kept(url: &DbUrl) -> Result<OpenedKept, RunsError> {
    let place = place(url);
    let store = open_existing(url)?;
    let record = store
        .run_record()
        .await
        .map_err(RunsError::store(format!("reading the run record of {place}")))?;
    Ok(OpenedKept { store, record, place })
}
