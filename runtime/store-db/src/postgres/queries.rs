//! The store's reads on PostgreSQL, each inside one repeatable-read transaction (one snapshot):
//! each query loads its candidate records (a rollout's spans, every rollout...) and answers with
//! the same filters, sorting and pagination as every backend (`agl_store::query_exec`), so the
//! answers match the in-memory store's exactly. Reads lock nothing.

use super::tx::{Params, PgTx, column, from_json, status_name};
use agl_store::StoreResult;
use agl_store::model::*;
use agl_store::query_exec::{Page, RolloutFilter, resources_match, span_matches, worker_matches};
use serde::de::DeserializeOwned;
use std::collections::HashMap;
use std::sync::Arc;

/// Every record (column 0) a query returns, decoded.
fn records<T: DeserializeOwned>(tx: &mut PgTx<'_>, sql: &'static str, params: &Params<'_>) -> StoreResult<Vec<T>> {
    tx.rows(sql, params)?
        .iter()
        .map(|row| from_json(column::<&str>(row, 0)?))
        .collect()
}

fn record<T: DeserializeOwned>(tx: &mut PgTx<'_>, sql: &'static str, params: &Params<'_>) -> StoreResult<Option<T>> {
    tx.row(sql, params)?
        .map(|row| from_json(column::<&str>(&row, 0)?))
        .transpose()
}

pub(crate) fn rollout(tx: &mut PgTx<'_>, rollout_id: &str) -> StoreResult<Option<Rollout>> {
    record(tx, "SELECT record FROM rollouts WHERE rollout_id = $1", &[&rollout_id])
}

pub(crate) fn latest_attempt(tx: &mut PgTx<'_>, rollout_id: &str) -> StoreResult<Option<Attempt>> {
    record(
        tx,
        "SELECT record FROM attempts WHERE rollout_id = $1 ORDER BY sequence_id DESC LIMIT 1",
        &[&rollout_id],
    )
}

pub(crate) fn rollout_view(tx: &mut PgTx<'_>, rollout_id: &str) -> StoreResult<Option<RolloutView>> {
    let Some(rollout) = rollout(tx, rollout_id)? else {
        return Ok(None);
    };
    Ok(Some(RolloutView {
        attempt: latest_attempt(tx, rollout_id)?,
        rollout,
    }))
}

pub(crate) fn query_rollouts(tx: &mut PgTx<'_>, query: &RolloutQuery) -> StoreResult<Paginated<RolloutView>> {
    let page = Page::<Rollout>::of(query)?;
    // With `rollout_id_in` and AND logic only those rollouts can match: load just them.
    let rollouts: Vec<Rollout> = match (&query.rollout_id_in, query.filter_logic.unwrap_or_default()) {
        (Some(ids), FilterLogic::And) => records(
            tx,
            "SELECT record FROM rollouts WHERE rollout_id = ANY($1) ORDER BY seq",
            &[ids],
        )?,
        _ => records(tx, "SELECT record FROM rollouts ORDER BY seq", &[])?,
    };
    let filter = RolloutFilter::of(query);
    let matches: Vec<&Rollout> = rollouts.iter().filter(|r| filter.matches(r)).collect();
    let (items, total) = page.apply(matches);
    let latest = latest_attempts(tx, &items)?;
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
fn latest_attempts(tx: &mut PgTx<'_>, rollouts: &[&Rollout]) -> StoreResult<HashMap<String, Attempt>> {
    if rollouts.is_empty() {
        return Ok(HashMap::new());
    }
    let ids: Vec<&str> = rollouts.iter().map(|r| r.rollout_id.as_str()).collect();
    let attempts: Vec<Attempt> = records(
        tx,
        "SELECT DISTINCT ON (rollout_id) record FROM attempts WHERE rollout_id = ANY($1)
         ORDER BY rollout_id, sequence_id DESC",
        &[&ids],
    )?;
    Ok(attempts.into_iter().map(|a| (a.rollout_id.clone(), a)).collect())
}

pub(crate) fn query_attempts(
    tx: &mut PgTx<'_>,
    rollout_id: &str,
    query: &AttemptQuery,
) -> StoreResult<Paginated<Attempt>> {
    let page = Page::<Attempt>::of(query)?;
    let attempts: Vec<Attempt> = records(
        tx,
        "SELECT record FROM attempts WHERE rollout_id = $1 ORDER BY sequence_id",
        &[&rollout_id],
    )?;
    let (items, total) = page.apply(attempts.iter().collect());
    Ok(page.result(items.into_iter().cloned().collect(), total))
}

pub(crate) fn query_spans(tx: &mut PgTx<'_>, query: &SpanQuery) -> StoreResult<Paginated<Arc<Span>>> {
    let page = Page::<Span>::of(query)?;
    let attempt_sequence: Option<i64> = match query.attempt_id.as_deref() {
        None => None,
        Some(wanted) => {
            let found: Option<i64> = match wanted {
                "latest" => tx
                    .value::<Option<i64>>(
                        "SELECT MAX(sequence_id) FROM attempts WHERE rollout_id = $1",
                        &[&query.rollout_id],
                    )?
                    .flatten(),
                id => tx.value::<i64>(
                    "SELECT sequence_id FROM attempts WHERE rollout_id = $1 AND attempt_id = $2",
                    &[&query.rollout_id, &id],
                )?,
            };
            match found {
                Some(sequence) => Some(sequence),
                None => return Ok(page.result(Vec::new(), 0)),
            }
        }
    };
    let spans: Vec<Span> = match attempt_sequence {
        None => records(
            tx,
            "SELECT record FROM spans WHERE rollout_id = $1 ORDER BY seq",
            &[&query.rollout_id],
        )?,
        Some(sequence) => records(
            tx,
            "SELECT record FROM spans WHERE rollout_id = $1 AND attempt_sequence = $2 ORDER BY seq",
            &[&query.rollout_id, &sequence],
        )?,
    };
    let logic = query.filter_logic.unwrap_or_default();
    let matches: Vec<&Span> = spans.iter().filter(|s| span_matches(s, query, logic)).collect();
    let (items, total) = page.apply(matches);
    Ok(page.result(items.into_iter().map(|s| Arc::new(s.clone())).collect(), total))
}

pub(crate) fn query_resources(tx: &mut PgTx<'_>, query: &ResourcesQuery) -> StoreResult<Paginated<ResourcesUpdate>> {
    let page = Page::<ResourcesUpdate>::of(query)?;
    let all: Vec<ResourcesUpdate> = records(tx, "SELECT record FROM resources ORDER BY seq", &[])?;
    let (items, total) = page.apply(all.iter().filter(|r| resources_match(r, query)).collect());
    Ok(page.result(items.into_iter().cloned().collect(), total))
}

pub(crate) fn resources(tx: &mut PgTx<'_>, resources_id: &str) -> StoreResult<Option<ResourcesUpdate>> {
    record(
        tx,
        "SELECT record FROM resources WHERE resources_id = $1",
        &[&resources_id],
    )
}

pub(crate) fn latest_resources(tx: &mut PgTx<'_>) -> StoreResult<Option<ResourcesUpdate>> {
    record(
        tx,
        "SELECT r.record FROM resources r JOIN store_values v ON v.key = 'latest_resources' AND v.value = r.resources_id",
        &[],
    )
}

pub(crate) fn query_workers(tx: &mut PgTx<'_>, query: &WorkerQuery) -> StoreResult<Paginated<Worker>> {
    let page = Page::<Worker>::of(query)?;
    let all: Vec<Worker> = records(tx, "SELECT record FROM workers ORDER BY seq", &[])?;
    let (items, total) = page.apply(all.iter().filter(|w| worker_matches(w, query)).collect());
    Ok(page.result(items.into_iter().cloned().collect(), total))
}

pub(crate) fn worker(tx: &mut PgTx<'_>, worker_id: &str) -> StoreResult<Option<Worker>> {
    record(tx, "SELECT record FROM workers WHERE worker_id = $1", &[&worker_id])
}

/// Whether any of these rollout ids names a rollout that is not finished: one count, no record
/// read (a wait asks this every time it is woken).
pub(crate) fn any_unfinished(tx: &mut PgTx<'_>, rollout_ids: &[String]) -> StoreResult<bool> {
    let finished: Vec<String> = RolloutStatus::ALL
        .iter()
        .filter(|status| status.is_finished())
        .map(status_name)
        .collect::<StoreResult<_>>()?;
    let unfinished: Option<i64> = tx.value(
        "SELECT count(*) FROM rollouts WHERE rollout_id = ANY($1) AND status <> ALL($2)",
        &[&rollout_ids, &finished],
    )?;
    Ok(unfinished.unwrap_or(0) > 0)
}

/// Of these rollout ids: the finished rollouts (in the order asked), and whether any known one
/// is still unfinished.
pub(crate) fn finished_rollouts(tx: &mut PgTx<'_>, rollout_ids: &[String]) -> StoreResult<(Vec<Rollout>, bool)> {
    let found: Vec<Rollout> = records(
        tx,
        "SELECT record FROM rollouts WHERE rollout_id = ANY($1)",
        &[&rollout_ids],
    )?;
    let by_id: HashMap<&str, &Rollout> = found.iter().map(|r| (r.rollout_id.as_str(), r)).collect();
    let mut finished = Vec::new();
    let mut pending = false;
    for id in rollout_ids {
        match by_id.get(id.as_str()) {
            Some(rollout) if rollout.status.is_finished() => finished.push((*rollout).clone()),
            Some(_) => pending = true,
            None => {}
        }
    }
    Ok((finished, pending))
}

pub(crate) fn run_record(tx: &mut PgTx<'_>) -> StoreResult<Option<agl_store::RunRecord>> {
    record(tx, "SELECT value FROM store_values WHERE key = 'run'", &[])
}

pub(crate) fn queue_len(tx: &mut PgTx<'_>) -> StoreResult<usize> {
    let count: Option<i64> = tx.value("SELECT count(*) FROM rollouts WHERE queue_seq IS NOT NULL", &[])?;
    Ok(count.and_then(|n| usize::try_from(n).ok()).unwrap_or(0))
}
