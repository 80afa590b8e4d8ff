//! The store's reads as SQL, once for SQLite and PostgreSQL: the statements (the same text for
//! both, but for what [`Dialect`] writes) and what each loader of `agl_store::Rows` makes of
//! their rows. Rollout queries are answered in the database — their conditions in `WHERE`, their
//! page in `LIMIT`/`OFFSET`, the total by `count(*)` — so no read decodes a record it does not
//! return; the rest loads a rollout's attempts or spans, or the (few) resources and workers.

use super::{Arg, SqlExec, from_json, to_json};
use agl_store::model::*;
use agl_store::rows::{SpanRows, Window};
use agl_store::{AttemptRef, RunRecord, StoreResult};
use serde::de::DeserializeOwned;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

const FIND_ROLLOUT: &str = "SELECT record FROM rollouts WHERE rollout_id = $1";
const LATEST_ATTEMPT: &str = "SELECT record FROM attempts WHERE rollout_id = $1 ORDER BY sequence_id DESC LIMIT 1";
const ATTEMPTS: &str = "SELECT record FROM attempts WHERE rollout_id = $1 ORDER BY sequence_id";
const LATEST_SEQUENCE: &str = "SELECT MAX(sequence_id) FROM attempts WHERE rollout_id = $1";
const ATTEMPT_SEQUENCE: &str = "SELECT sequence_id FROM attempts WHERE rollout_id = $1 AND attempt_id = $2";
const SPANS: &str = "SELECT record FROM spans WHERE rollout_id = $1 ORDER BY seq";
const ATTEMPT_SPANS: &str = "SELECT record FROM spans WHERE rollout_id = $1 AND attempt_sequence = $2 ORDER BY seq";
const ALL_RESOURCES: &str = "SELECT record FROM resources ORDER BY seq";
const FIND_RESOURCES: &str = "SELECT record FROM resources WHERE resources_id = $1";
const LATEST_RESOURCES: &str = "SELECT r.record FROM resources r \
     JOIN store_values v ON v.key = 'latest_resources' AND v.value = r.resources_id";
const ALL_WORKERS: &str = "SELECT record FROM workers ORDER BY seq";
const FIND_WORKER: &str = "SELECT record FROM workers WHERE worker_id = $1";
const QUEUE_LEN: &str = "SELECT count(*) FROM rollouts WHERE queue_seq IS NOT NULL";
const RUN_RECORD: &str = "SELECT value FROM store_values WHERE key = 'run'";
const SAVE_RUN_RECORD: &str = "INSERT INTO store_values (key, value) VALUES ('run', $1) \
     ON CONFLICT (key) DO UPDATE SET value = excluded.value";

/// Every record (column 0) a statement returns, decoded.
fn records<T: DeserializeOwned, E: SqlExec>(exec: &mut E, sql: &str, args: &[Arg]) -> StoreResult<Vec<T>> {
    exec.texts(sql, args)?.iter().map(|text| from_json(text)).collect()
}

/// The first record a statement returns, decoded.
fn record<T: DeserializeOwned, E: SqlExec>(exec: &mut E, sql: &str, args: &[Arg]) -> StoreResult<Option<T>> {
    exec.texts(sql, args)?.first().map(|text| from_json(text)).transpose()
}

fn sequence(value: Option<i64>) -> Option<u32> {
    value.and_then(|n| u32::try_from(n).ok())
}

pub(crate) fn find_rollout<E: SqlExec>(exec: &mut E, rollout_id: &str) -> StoreResult<Option<Rollout>> {
    record(exec, FIND_ROLLOUT, &[Arg::text(rollout_id)])
}

pub(crate) fn find_latest_attempt<E: SqlExec>(exec: &mut E, rollout_id: &str) -> StoreResult<Option<Attempt>> {
    record(exec, LATEST_ATTEMPT, &[Arg::text(rollout_id)])
}

/// The `WHERE` clause of a rollout query's conditions (empty when it has none), and its
/// arguments, `$1` on.
fn rollout_conditions<E: SqlExec>(query: &RolloutQuery) -> (String, Vec<Arg>) {
    let dialect = E::DIALECT;
    let mut args = Vec::new();
    let mut conditions = Vec::new();
    let mut in_list = |column: &str, values: Vec<String>, args: &mut Vec<Arg>| {
        if values.is_empty() {
            // Asked, and nothing can be in an empty list.
            conditions.push("1 = 0".to_owned());
        } else {
            args.push(Arg::Texts(values));
            conditions.push(dialect.in_list(column, args.len()));
        }
    };
    if let Some(statuses) = &query.status_in {
        let names = statuses.iter().map(|status| status.as_str().to_owned()).collect();
        in_list("status", names, &mut args);
    }
    if let Some(ids) = &query.rollout_id_in {
        in_list("rollout_id", ids.clone(), &mut args);
    }
    if let Some(part) = &query.rollout_id_contains {
        args.push(Arg::text(part));
        conditions.push(dialect.contains("rollout_id", args.len()));
    }
    if conditions.is_empty() {
        return (String::new(), args);
    }
    let joint = match query.filter_logic.unwrap_or_default() {
        FilterLogic::And => " AND ",
        FilterLogic::Or => " OR ",
    };
    let clause: Vec<String> = conditions.into_iter().map(|c| format!("({c})")).collect();
    (format!(" WHERE {}", clause.join(joint)), args)
}

pub(crate) fn select_rollouts<E: SqlExec>(
    exec: &mut E,
    query: &RolloutQuery,
    window: Option<Window>,
) -> StoreResult<(Vec<Rollout>, u64)> {
    let (filter, mut args) = rollout_conditions::<E>(query);
    let Some(window) = window else {
        let all: Vec<Rollout> = records(
            exec,
            &format!("SELECT record FROM rollouts{filter} ORDER BY seq"),
            &args,
        )?;
        let total = all.len() as u64;
        return Ok((all, total));
    };
    let counted = exec.number(&format!("SELECT count(*) FROM rollouts{filter}"), &args)?;
    let total = counted.and_then(|n| u64::try_from(n).ok()).unwrap_or(0);
    if total <= window.offset {
        return Ok((Vec::new(), total));
    }
    let limit = window
        .limit
        .map_or(i64::MAX, |limit| i64::try_from(limit).unwrap_or(i64::MAX));
    args.push(Arg::Int(limit));
    args.push(Arg::Int(i64::try_from(window.offset).unwrap_or(i64::MAX)));
    let sql = format!(
        "SELECT record FROM rollouts{filter} ORDER BY seq LIMIT ${} OFFSET ${}",
        args.len() - 1,
        args.len()
    );
    Ok((records(exec, &sql, &args)?, total))
}

pub(crate) fn latest_attempts<E: SqlExec>(exec: &mut E, rollout_ids: &[&str]) -> StoreResult<Vec<Attempt>> {
    if rollout_ids.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT a.record FROM attempts a WHERE {} AND a.sequence_id = \
         (SELECT MAX(b.sequence_id) FROM attempts b WHERE b.rollout_id = a.rollout_id)",
        E::DIALECT.in_list("a.rollout_id", 1)
    );
    let ids = rollout_ids.iter().map(|id| (*id).to_owned()).collect();
    records(exec, &sql, &[Arg::Texts(ids)])
}

pub(crate) fn attempts<E: SqlExec>(exec: &mut E, rollout_id: &str) -> StoreResult<Vec<Attempt>> {
    records(exec, ATTEMPTS, &[Arg::text(rollout_id)])
}

pub(crate) fn attempt_sequence<E: SqlExec>(
    exec: &mut E,
    rollout_id: &str,
    which: AttemptRef<'_>,
) -> StoreResult<Option<u32>> {
    let found = match which {
        AttemptRef::Latest => exec.number(LATEST_SEQUENCE, &[Arg::text(rollout_id)])?,
        AttemptRef::Id(id) => exec.number(ATTEMPT_SEQUENCE, &[Arg::text(rollout_id), Arg::text(id)])?,
    };
    Ok(sequence(found))
}

pub(crate) fn spans<E: SqlExec, T>(
    exec: &mut E,
    rollout_id: &str,
    attempt_sequence: Option<u32>,
    read: impl FnOnce(SpanRows<'_>) -> T,
) -> StoreResult<T> {
    let spans: Vec<Arc<Span>> = match attempt_sequence {
        None => records(exec, SPANS, &[Arg::text(rollout_id)])?,
        Some(sequence) => records(
            exec,
            ATTEMPT_SPANS,
            &[Arg::text(rollout_id), Arg::Int(i64::from(sequence))],
        )?,
    };
    Ok(read(SpanRows {
        spans: spans.iter().collect(),
        in_sequence_order: false,
    }))
}

pub(crate) fn all_resources<E: SqlExec>(exec: &mut E) -> StoreResult<Vec<ResourcesUpdate>> {
    records(exec, ALL_RESOURCES, &[])
}

pub(crate) fn find_resources<E: SqlExec>(exec: &mut E, resources_id: &str) -> StoreResult<Option<ResourcesUpdate>> {
    record(exec, FIND_RESOURCES, &[Arg::text(resources_id)])
}

pub(crate) fn latest_resources<E: SqlExec>(exec: &mut E) -> StoreResult<Option<ResourcesUpdate>> {
    record(exec, LATEST_RESOURCES, &[])
}

pub(crate) fn all_workers<E: SqlExec>(exec: &mut E) -> StoreResult<Vec<Worker>> {
    records(exec, ALL_WORKERS, &[])
}

pub(crate) fn find_worker<E: SqlExec>(exec: &mut E, worker_id: &str) -> StoreResult<Option<Worker>> {
    record(exec, FIND_WORKER, &[Arg::text(worker_id)])
}

/// The wire names of the finished statuses, as an argument.
fn finished_statuses() -> Arg {
    Arg::Texts(
        RolloutStatus::ALL
            .into_iter()
            .filter(|status| status.is_finished())
            .map(|status| status.as_str().to_owned())
            .collect(),
    )
}

pub(crate) fn unfinished_rollouts<E: SqlExec>(exec: &mut E, rollout_ids: &[String]) -> StoreResult<HashSet<String>> {
    if rollout_ids.is_empty() {
        return Ok(HashSet::new());
    }
    let dialect = E::DIALECT;
    let sql = format!(
        "SELECT rollout_id FROM rollouts WHERE {} AND NOT ({})",
        dialect.in_list("rollout_id", 1),
        dialect.in_list("status", 2)
    );
    let ids = exec.texts(&sql, &[Arg::Texts(rollout_ids.to_vec()), finished_statuses()])?;
    Ok(ids.into_iter().collect())
}

pub(crate) fn finished_rollouts<E: SqlExec>(exec: &mut E, rollout_ids: &[String]) -> StoreResult<Vec<Rollout>> {
    if rollout_ids.is_empty() {
        return Ok(Vec::new());
    }
    let dialect = E::DIALECT;
    let sql = format!(
        "SELECT record FROM rollouts WHERE {} AND ({})",
        dialect.in_list("rollout_id", 1),
        dialect.in_list("status", 2)
    );
    let found: Vec<Rollout> = records(exec, &sql, &[Arg::Texts(rollout_ids.to_vec()), finished_statuses()])?;
    let by_id: HashMap<&str, &Rollout> = found.iter().map(|r| (r.rollout_id.as_str(), r)).collect();
    Ok(rollout_ids
        .iter()
        .filter_map(|id| by_id.get(id.as_str()).map(|rollout| (*rollout).clone()))
        .collect())
}

pub(crate) fn queue_len<E: SqlExec>(exec: &mut E) -> StoreResult<usize> {
    let count = exec.number(QUEUE_LEN, &[])?;
    Ok(count.and_then(|n| usize::try_from(n).ok()).unwrap_or(0))
}

pub(crate) fn run_record<E: SqlExec>(exec: &mut E) -> StoreResult<Option<RunRecord>> {
    record(exec, RUN_RECORD, &[])
}

pub(crate) fn save_run_record<E: SqlExec>(exec: &mut E, record: &RunRecord) -> StoreResult<()> {
    exec.execute(SAVE_RUN_RECORD, &[Arg::Text(to_json(record)?)])
}
