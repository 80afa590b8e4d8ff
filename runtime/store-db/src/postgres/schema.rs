//! The PostgreSQL schema and its versioned migrations (`migrations/postgres/NNNN_*.sql`, in this
//! crate). The version lives in the table `agl_schema`; opening a database takes a transaction-
//! scoped advisory lock (so of several replicas starting together one migrates and the others
//! wait, then find the work done), applies every migration above the stored version in that one
//! transaction, and refuses a database whose version is newer than this binary knows. Opening to
//! read only checks the version and changes nothing.

use super::conn::describe;
use crate::error::DbError;
use ::postgres::Client;

/// The migrations, in order: migration `i` (0-based) takes the schema to version `i + 1`.
const MIGRATIONS: &[&str] = &[
    include_str!("../../migrations/postgres/0001_store.sql"),
    include_str!("../../migrations/postgres/0002_hot_updates.sql"),
    include_str!("../../migrations/postgres/0003_recordings.sql"),
];

/// The schema version this binary writes.
pub const VERSION: i64 = MIGRATIONS.len() as i64;

/// The advisory lock key migrations hold (advisory locks are per database): "aglmigra".
const MIGRATION_LOCK: i64 = 0x61676c6d69677261;

/// The oldest schema version this binary's queries read as it is (version 2 only dropped an
/// index and set fill factors; without version 3's tables there are no recordings to read).
pub const READABLE_FROM: i64 = 1;

/// Whether the database holds a store this binary can read as it is (opened to read only).
pub fn check_readable(client: &mut Client, place: &str) -> Result<(), DbError> {
    let cannot = |e: ::postgres::Error| DbError::Other {
        place: place.to_owned(),
        reason: format!("cannot read its schema version: {}", describe(&e)),
    };
    let exists: bool = client
        .query_one("SELECT to_regclass('agl_schema') IS NOT NULL", &[])
        .and_then(|row| row.try_get(0))
        .map_err(cannot)?;
    let found: i64 = if exists {
        client
            .query_one("SELECT COALESCE(MAX(version), 0)::bigint FROM agl_schema", &[])
            .and_then(|row| row.try_get(0))
            .map_err(cannot)?
    } else {
        0
    };
    crate::error::check_readable_version(place, found, READABLE_FROM, VERSION)
}

/// Brings the database to [`VERSION`].
pub fn migrate(client: &mut Client, place: &str) -> Result<(), DbError> {
    let other = |what: &str, e: ::postgres::Error| DbError::Other {
        place: place.to_owned(),
        reason: format!("{what}: {}", describe(&e)),
    };
    let mut tx = client
        .transaction()
        .map_err(|e| other("cannot begin the migration's transaction", e))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .map_err(|e| other("cannot take the migration lock", e))?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS agl_schema (version integer NOT NULL)")
        .map_err(|e| other("cannot create its schema version table", e))?;
    let found: i64 = tx
        .query_one("SELECT COALESCE(MAX(version), 0)::bigint FROM agl_schema", &[])
        .and_then(|row| row.try_get(0))
        .map_err(|e| other("cannot read its schema version", e))?;
    if found > VERSION {
        return Err(DbError::NewerSchema {
            place: place.to_owned(),
            found,
            known: VERSION,
        });
    }
    let start = usize::try_from(found).unwrap_or(0);
    if start == MIGRATIONS.len() {
        return Ok(());
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(start) {
        tx.batch_execute(sql).map_err(|e| DbError::Migration {
            place: place.to_owned(),
            version: index as i64 + 1,
            reason: describe(&e),
        })?;
    }
    let failed = |e: ::postgres::Error| DbError::Migration {
        place: place.to_owned(),
        version: VERSION,
        reason: describe(&e),
    };
    let version = i32::try_from(VERSION).unwrap_or(i32::MAX);
    tx.execute("DELETE FROM agl_schema", &[]).map_err(failed)?;
    tx.execute("INSERT INTO agl_schema (version) VALUES ($1)", &[&version])
        .map_err(failed)?;
    tx.commit().map_err(failed)
}
