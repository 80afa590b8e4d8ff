//! The writes of the `agl_store::Storage` primitives whose statement is the same for SQLite and
//! PostgreSQL (each backend keeps what it caches of them, and its own locking, in its `tx.rs`).

use super::{Arg, SqlExec, to_json};
use agl_store::StoreResult;
use agl_store::model::Attempt;

const INSERT_ATTEMPT: &str =
    "INSERT INTO attempts (rollout_id, sequence_id, attempt_id, record) VALUES ($1, $2, $3, $4)";
const UPDATE_ATTEMPT: &str = "UPDATE attempts SET record = $1 WHERE rollout_id = $2 AND sequence_id = $3";

/// Stores a new attempt's row.
pub(crate) fn insert_attempt<E: SqlExec>(exec: &mut E, attempt: &Attempt) -> StoreResult<()> {
    exec.execute(
        INSERT_ATTEMPT,
        &[
            Arg::text(&attempt.rollout_id),
            Arg::Int(i64::from(attempt.sequence_id)),
            Arg::text(&attempt.attempt_id),
            Arg::Text(to_json(attempt)?),
        ],
    )
}

/// Writes a changed attempt's record back.
pub(crate) fn update_attempt<E: SqlExec>(exec: &mut E, attempt: &Attempt) -> StoreResult<()> {
    exec.execute(
        UPDATE_ATTEMPT,
        &[
            Arg::Text(to_json(attempt)?),
            Arg::text(&attempt.rollout_id),
            Arg::Int(i64::from(attempt.sequence_id)),
        ],
    )
}
