//! Recordings kept in SQL, the same statements for SQLite and PostgreSQL: the `agl_store::Storage`
//! writes (a blob inserted once, a recording replaced) and the `agl_store::Rows` reads, over the
//! `recordings` and `recording_blobs` tables (SQLite's schema version 2, PostgreSQL's 3).

use super::{Arg, Dialect, SqlExec, from_json, to_json};
use agl_store::StoreResult;

const INSERT_BLOB: &str = "INSERT INTO recording_blobs (address, text) VALUES ($1, $2)
     ON CONFLICT (address) DO NOTHING RETURNING address";
const SAVE_RECORDING: &str = "INSERT INTO recordings (rollout_id, attempt_id, tape, blobs) VALUES ($1, $2, $3, $4)
     ON CONFLICT (rollout_id, attempt_id) DO UPDATE SET tape = excluded.tape, blobs = excluded.blobs";
const RECORDING_BLOBS: &str = "SELECT blobs FROM recordings WHERE rollout_id = $1 AND attempt_id = $2";
const RECORDING_TAPE: &str = "SELECT tape FROM recordings WHERE rollout_id = $1 AND attempt_id = $2";
const BLOB: &str = "SELECT text FROM recording_blobs WHERE address = $1";

/// Whether the `recordings` table exists (a store file of an older schema opened to read only
/// has none): 1 or 0.
fn has_recordings_sql(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Sqlite => "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'recordings'",
        Dialect::Postgres => "SELECT CASE WHEN to_regclass('recordings') IS NULL THEN 0 ELSE 1 END::int8",
    }
}

/// Stores the blob unless one is held at its address; whether it was new.
pub(crate) fn insert_blob<E: SqlExec>(exec: &mut E, address: &str, text: &str) -> StoreResult<bool> {
    let inserted = exec.texts(INSERT_BLOB, &[Arg::text(address), Arg::text(text)])?;
    Ok(!inserted.is_empty())
}

/// Keeps the attempt's recording, replacing one it had.
pub(crate) fn save_recording<E: SqlExec>(
    exec: &mut E,
    rollout_id: &str,
    attempt_id: &str,
    tape: &str,
    blobs: &[String],
) -> StoreResult<()> {
    exec.execute(
        SAVE_RECORDING,
        &[
            Arg::text(rollout_id),
            Arg::text(attempt_id),
            Arg::text(tape),
            Arg::Text(to_json(&blobs)?),
        ],
    )
}

/// The attempt's tape and its blobs' addresses, if a recording was kept.
pub(crate) fn recording<E: SqlExec>(
    exec: &mut E,
    rollout_id: &str,
    attempt_id: &str,
) -> StoreResult<Option<(String, Vec<String>)>> {
    if exec.number(has_recordings_sql(E::DIALECT), &[])? != Some(1) {
        return Ok(None);
    }
    let key = [Arg::text(rollout_id), Arg::text(attempt_id)];
    let Some(blobs) = exec.texts(RECORDING_BLOBS, &key)?.pop() else {
        return Ok(None);
    };
    let Some(tape) = exec.texts(RECORDING_TAPE, &key)?.pop() else {
        return Ok(None);
    };
    Ok(Some((tape, from_json(&blobs)?)))
}

/// The blob's text, if one is held at this address.
pub(crate) fn blob<E: SqlExec>(exec: &mut E, address: &str) -> StoreResult<Option<String>> {
    Ok(exec.texts(BLOB, &[Arg::text(address)])?.pop())
}
