//! The store's reads on SQLite: each query loads its candidate records (a rollout's spans, every
//! rollout...) and answers with the same filters, sorting and pagination as every backend
//! (`agl_store::query_exec`), so the answers match the in-memory store's exactly.

use super::tx::{db_error, from_json, status_name};
use agl_store::StoreResult;
use agl_store::model::*;
use agl_store::query_exec::{Page, RolloutFilter, resources_match, span_matches, worker_matches};
use rusqlite::{Connection, OptionalExtension, params_from_iter};
use serde::de::DeserializeOwned;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Every record a query returns, decoded.
fn records<T: DeserializeOwned>(conn: &Connection, sql: &str, params: impl rusqlite::Params) -> StoreResult<Vec<T>> {
    let mut statement = conn.prepare_cached(sql).map_err(db_error)?;
    let texts = statement
        .query_map(params, |row| row.get::<_, String>(0))
        .map_err(db_error)?
        .collect::<Result<Vec<String>, _>>()
        .map_err(db_error)?;
    texts.iter().map(|text| from_json(text)).collect()
}

fn record<T: DeserializeOwned>(conn: &Connection, sql: &str, params: impl rusqlite::Params) -> StoreResult<Option<T>> {
    let text: Option<String> = conn
        .prepare_cached(sql)
        .and_then(|mut statement| statement.query_row(params, |row| row.get(0)).optional())
        .map_err(db_error)?;
    text.map(|text| from_json(&text)).transpose()
}

pub(crate) fn rollout(conn: &Connection, rollout_id: &str) -> StoreResult<Option<Rollout>> {
    record(conn, "SELECT record FROM rollouts WHERE rollout_id = ?1", [rollout_id])
}

pub(crate) fn latest_attempt(conn: &Connection, rollout_id: &str) -> StoreResult<Option<Attempt>> {
    record(
        conn,
        "SELECT record FROM attempts WHERE rollout_id = ?1 ORDER BY sequence_id DESC LIMIT 1",
        [rollout_id],
    )
}

pub(crate) fn rollout_view(conn: &Connection, rollout_id: &str) -> StoreResult<Option<RolloutView>> {
    let Some(rollout) = rollout(conn, rollout_id)? else {
        return Ok(None);
    };
    Ok(Some(RolloutView {
        attempt: latest_attempt(conn, rollout_id)?,
        rollout,
    }))
}

pub(crate) fn query_rollouts(conn: &Connection, query: &RolloutQuery) -> StoreResult<Paginated<RolloutView>> {
    let page = Page::<Rollout>::of(query)?;
    // With `rollout_id_in` and AND logic only those rollouts can match: load just them.
    let rollouts: Vec<Rollout> = match (&query.rollout_id_in, query.filter_logic.unwrap_or_default()) {
        (Some(ids), FilterLogic::And) if ids.len() <= 500 => {
            if ids.is_empty() {
                Vec::new()
            } else {
                let marks = vec!["?"; ids.len()].join(", ");
                records(
                    conn,
                    &format!("SELECT record FROM rollouts WHERE rollout_id IN ({marks}) ORDER BY seq"),
                    params_from_iter(ids.iter()),
                )?
            }
        }
        _ => records(conn, "SELECT record FROM rollouts ORDER BY seq", [])?,
    };
    let filter = RolloutFilter::of(query);
    let matches: Vec<&Rollout> = rollouts.iter().filter(|r| filter.matches(r)).collect();
    let (items, total) = page.apply(matches);
    let latest = latest_attempts(conn, &items)?;
    let views = items
        .into_iter()
        .map(|rollout| RolloutView {
            attempt: latest.get(&rollout.rollout_id).cloned(),
            rollout: rollout.clone(),
        })
        .collect();
    Ok(page.result(views, total))
}

/// The latest attempt of each of these rollouts, by rollout id.
fn latest_attempts(conn: &Connection, rollouts: &[&Rollout]) -> StoreResult<HashMap<String, Attempt>> {
    let mut latest = HashMap::with_capacity(rollouts.len());
    for rollout in rollouts {
        if let Some(attempt) = latest_attempt(conn, &rollout.rollout_id)? {
            latest.insert(rollout.rollout_id.clone(), attempt);
        }
    }
    Ok(latest)
}

pub(crate) fn query_attempts(
    conn: &Connection,
    rollout_id: &str,
    query: &AttemptQuery,
) -> StoreResult<Paginated<Attempt>> {
    let page = Page::<Attempt>::of(query)?;
    let attempts: Vec<Attempt> = records(
        conn,
        "SELECT record FROM attempts WHERE rollout_id = ?1 ORDER BY sequence_id",
        [rollout_id],
    )?;
    let (items, total) = page.apply(attempts.iter().collect());
    Ok(page.result(items.into_iter().cloned().collect(), total))
}

pub(crate) fn query_spans(conn: &Connection, query: &SpanQuery) -> StoreResult<Paginated<Arc<Span>>> {
    let page = Page::<Span>::of(query)?;
    let attempt_sequence: Option<u32> = match query.attempt_id.as_deref() {
        None => None,
        Some(wanted) => {
            let found: Option<u32> = match wanted {
                "latest" => conn
                    .query_row(
                        "SELECT MAX(sequence_id) FROM attempts WHERE rollout_id = ?1",
                        [&query.rollout_id],
                        |row| row.get(0),
                    )
                    .map_err(db_error)?,
                id => conn
                    .query_row(
                        "SELECT sequence_id FROM attempts WHERE rollout_id = ?1 AND attempt_id = ?2",
                        [query.rollout_id.as_str(), id],
                        |row| row.get(0),
                    )
                    .optional()
                    .map_err(db_error)?,
            };
            match found {
                Some(sequence) => Some(sequence),
                None => return Ok(page.result(Vec::new(), 0)),
            }
        }
    };
    let spans: Vec<Span> = match attempt_sequence {
        None => records(
            conn,
            "SELECT record FROM spans WHERE rollout_id = ?1 ORDER BY seq",
            [&query.rollout_id],
        )?,
        Some(sequence) => records(
            conn,
            "SELECT record FROM spans WHERE rollout_id = ?1 AND attempt_sequence = ?2 ORDER BY seq",
            rusqlite::params![query.rollout_id, sequence],
        )?,
    };
    let logic = query.filter_logic.unwrap_or_default();
    let matches: Vec<&Span> = spans.iter().filter(|s| span_matches(s, query, logic)).collect();
    let (items, total) = page.apply(matches);
    Ok(page.result(items.into_iter().map(|s| Arc::new(s.clone())).collect(), total))
}

pub(crate) fn query_resources(conn: &Connection, query: &ResourcesQuery) -> StoreResult<Paginated<ResourcesUpdate>> {
    let page = Page::<ResourcesUpdate>::of(query)?;
    let all: Vec<ResourcesUpdate> = records(conn, "SELECT record FROM resources ORDER BY seq", [])?;
    let (items, total) = page.apply(all.iter().filter(|r| resources_match(r, query)).collect());
    Ok(page.result(items.into_iter().cloned().collect(), total))
}

pub(crate) fn resources(conn: &Connection, resources_id: &str) -> StoreResult<Option<ResourcesUpdate>> {
    record(
        conn,
        "SELECT record FROM resources WHERE resources_id = ?1",
        [resources_id],
    )
}

pub(crate) fn latest_resources(conn: &Connection) -> StoreResult<Option<ResourcesUpdate>> {
    record(
        conn,
        "SELECT r.record FROM resources r JOIN store_values v ON v.key = 'latest_resources' AND v.value = r.resources_id",
        [],
    )
}

pub(crate) fn query_workers(conn: &Connection, query: &WorkerQuery) -> StoreResult<Paginated<Worker>> {
    let page = Page::<Worker>::of(query)?;
    let all: Vec<Worker> = records(conn, "SELECT record FROM workers ORDER BY seq", [])?;
    let (items, total) = page.apply(all.iter().filter(|w| worker_matches(w, query)).collect());
    Ok(page.result(items.into_iter().cloned().collect(), total))
}

pub(crate) fn worker(conn: &Connection, worker_id: &str) -> StoreResult<Option<Worker>> {
    record(conn, "SELECT record FROM workers WHERE worker_id = ?1", [worker_id])
}

/// Of these rollout ids: the finished rollouts (in the order asked), and the known ones that have
/// not finished. Only finished rollouts are decoded: the `status` column tells which they are.
pub(crate) fn finished_rollouts(
    conn: &Connection,
    rollout_ids: &[String],
) -> StoreResult<(Vec<Rollout>, HashSet<String>)> {
    let finished_names = RolloutStatus::ALL
        .into_iter()
        .filter(|status| status.is_finished())
        .map(|status| status_name(&status))
        .collect::<StoreResult<Vec<String>>>()?;
    let mut statement = conn
        .prepare_cached("SELECT status, record FROM rollouts WHERE rollout_id = ?1")
        .map_err(db_error)?;
    let (mut finished, mut unfinished) = (Vec::new(), HashSet::new());
    for id in rollout_ids {
        let found: Option<Option<String>> = statement
            .query_row([id], |row| {
                let status = row.get_ref(0)?.as_str()?;
                if finished_names.iter().any(|name| name == status) {
                    Ok(Some(row.get(1)?))
                } else {
                    Ok(None)
                }
            })
            .optional()
            .map_err(db_error)?;
        match found {
            Some(Some(record)) => finished.push(from_json(&record)?),
            Some(None) => {
                unfinished.insert(id.clone());
            }
            None => {}
        }
    }
    Ok((finished, unfinished))
}

pub(crate) fn run_record(conn: &Connection) -> StoreResult<Option<agl_store::RunRecord>> {
    record(conn, "SELECT value FROM store_values WHERE key = 'run'", [])
}
