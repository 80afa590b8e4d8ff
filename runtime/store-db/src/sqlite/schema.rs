//! The SQLite schema and its versioned migrations (`migrations/sqlite/NNNN_*.sql`, in this
//! crate): the version lives in `PRAGMA user_version`; opening a database applies every
//! migration above it, each in its own transaction, and refuses a database whose version is
//! newer than this binary knows. Opening to read only checks the version and changes nothing.

use crate::error::DbError;
use rusqlite::Connection;

/// The migrations, in order: migration `i` (0-based) takes the schema to version `i + 1`.
const MIGRATIONS: &[&str] = &[
    include_str!("../../migrations/sqlite/0001_store.sql"),
    include_str!("../../migrations/sqlite/0002_recordings.sql"),
];

/// The schema version this binary writes.
pub const VERSION: i64 = MIGRATIONS.len() as i64;

/// The oldest schema version this binary's queries read (opened to read only, nothing is
/// migrated): version 1 has no recordings, which then reads as none.
pub const READABLE_FROM: i64 = 1;

/// Whether a database at schema version `found` (`PRAGMA user_version`) holds a store this
/// binary can read as it is (opened to read only).
pub fn check_readable(found: i64, place: &str) -> Result<(), DbError> {
    crate::error::check_readable_version(place, found, READABLE_FROM, VERSION)
}

/// Brings the database to [`VERSION`].
pub fn migrate(conn: &mut Connection, place: &str) -> Result<(), DbError> {
    let found: i64 = conn
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(|e| DbError::Other {
            place: place.to_owned(),
            reason: format!("cannot read its schema version: {e}"),
        })?;
    if found > VERSION {
        return Err(DbError::NewerSchema {
            place: place.to_owned(),
            found,
            known: VERSION,
        });
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(usize::try_from(found).unwrap_or(0)) {
        let version = index as i64 + 1;
        let failed = |e: rusqlite::Error| DbError::Migration {
            place: place.to_owned(),
            version,
            reason: e.to_string(),
        };
        let tx = conn.transaction().map_err(failed)?;
        tx.execute_batch(sql).map_err(failed)?;
        tx.pragma_update(None, "user_version", version).map_err(failed)?;
        tx.commit().map_err(failed)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_database_gets_every_migration_and_a_second_open_changes_nothing() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn, "test").unwrap();
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
        assert_eq!(version, VERSION);
        migrate(&mut conn, "test").unwrap();
        let tables: i64 = conn
            .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(tables, 9);
    }

    #[test]
    fn reading_only_refuses_an_empty_database_and_a_newer_one() {
        let err = check_readable(0, "x.db").unwrap_err().to_string();
        assert!(err.contains("no agl-host store"), "{err}");
        let err = check_readable(VERSION + 1, "x.db").unwrap_err().to_string();
        assert!(err.contains("newer than this agl-host"), "{err}");
        check_readable(VERSION, "x.db").unwrap();
    }

    #[test]
    fn a_newer_database_is_refused() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "user_version", VERSION + 1).unwrap();
        let err = migrate(&mut conn, "x.db").unwrap_err().to_string();
        assert!(err.contains("newer than this agl-host"), "{err}");
    }
}
