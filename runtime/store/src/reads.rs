//! The store's read queries, written once over the [`Rows`] every backend loads: which records
//! each `query_*` returns, in what order, and which page of them ([`crate::query_exec`] holds
//! the filters, sorting and pagination rules). A backend that can slice the matching rollouts
//! itself (a database: `LIMIT`/`OFFSET`) is asked for the page only when no sorting is asked.

use crate::error::{StoreError, StoreResult};
use crate::model::*;
use crate::query_exec::{Page, resources_match, span_matches, worker_matches};
use crate::rows::{Rows, Window};
use crate::store::AttemptRef;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

impl<T> Page<T> {
    /// The slice this page takes of the matching records, in their natural order.
    fn window(&self) -> Window {
        Window {
            offset: u64::try_from(self.offset).unwrap_or(0),
            limit: u64::try_from(self.limit).ok(),
        }
    }
}

/// The rollout with its latest attempt.
pub fn rollout_view<R: Rows + ?Sized>(rows: &mut R, rollout_id: &str) -> StoreResult<Option<RolloutView>> {
    let Some(rollout) = rows.find_rollout(rollout_id)? else {
        return Ok(None);
    };
    Ok(Some(RolloutView {
        attempt: rows.find_latest_attempt(rollout_id)?,
        rollout,
    }))
}

pub fn query_rollouts<R: Rows + ?Sized>(rows: &mut R, query: &RolloutQuery) -> StoreResult<Paginated<RolloutView>> {
    let page = Page::<Rollout>::of(query)?;
    let (items, total) = if page.sort_by.is_none() {
        rows.select_rollouts(query, Some(page.window()))?
    } else {
        let (all, _) = rows.select_rollouts(query, None)?;
        let (items, total) = page.apply(all.iter().collect());
        (items.into_iter().cloned().collect(), total)
    };
    let ids: Vec<&str> = items.iter().map(|r| r.rollout_id.as_str()).collect();
    let mut latest: HashMap<String, Attempt> = if ids.is_empty() {
        HashMap::new()
    } else {
        rows.latest_attempts(&ids)?
            .into_iter()
            .map(|attempt| (attempt.rollout_id.clone(), attempt))
            .collect()
    };
    let views = items
        .into_iter()
        .map(|rollout| RolloutView {
            attempt: latest.remove(&rollout.rollout_id),
            rollout,
        })
        .collect();
    Ok(page.result(views, total))
}

pub fn query_attempts<R: Rows + ?Sized>(
    rows: &mut R,
    rollout_id: &str,
    query: &AttemptQuery,
) -> StoreResult<Paginated<Attempt>> {
    let page = Page::<Attempt>::of(query)?;
    let attempts = rows.attempts(rollout_id)?;
    let (items, total) = page.apply(attempts.iter().collect());
    Ok(page.result(items.into_iter().cloned().collect(), total))
}

pub fn query_spans<R: Rows + ?Sized>(rows: &mut R, query: &SpanQuery) -> StoreResult<Paginated<Arc<Span>>> {
    let page = Page::<Arc<Span>>::of(query)?;
    let attempt_sequence = match query.attempt_id.as_deref() {
        None => None,
        Some(wanted) => match rows.attempt_sequence(&query.rollout_id, AttemptRef::from(wanted))? {
            Some(sequence) => Some(sequence),
            None => return Ok(page.result(Vec::new(), 0)),
        },
    };
    let logic = query.filter_logic.unwrap_or_default();
    let has_conditions = [
        &query.trace_id,
        &query.trace_id_contains,
        &query.span_id,
        &query.span_id_contains,
        &query.parent_id,
        &query.parent_id_contains,
        &query.name,
        &query.name_contains,
    ]
    .iter()
    .any(|c| c.is_some());
    rows.spans(&query.rollout_id, attempt_sequence, |mut loaded| {
        if has_conditions {
            loaded.spans.retain(|s| span_matches(s, query, logic));
        }
        let page = if loaded.in_sequence_order && page.sorts_by("sequence_id", SortOrder::Asc) {
            page.keeping_order()
        } else {
            page
        };
        let (items, total) = page.apply(loaded.spans);
        page.result(items.into_iter().map(Arc::clone).collect(), total)
    })
}

pub fn query_resources<R: Rows + ?Sized>(
    rows: &mut R,
    query: &ResourcesQuery,
) -> StoreResult<Paginated<ResourcesUpdate>> {
    let page = Page::<ResourcesUpdate>::of(query)?;
    let all = rows.all_resources()?;
    let (items, total) = page.apply(all.iter().filter(|r| resources_match(r, query)).collect());
    Ok(page.result(items.into_iter().cloned().collect(), total))
}

pub fn query_workers<R: Rows + ?Sized>(rows: &mut R, query: &WorkerQuery) -> StoreResult<Paginated<Worker>> {
    let page = Page::<Worker>::of(query)?;
    let all = rows.all_workers()?;
    let (items, total) = page.apply(all.iter().filter(|w| worker_matches(w, query)).collect());
    Ok(page.result(items.into_iter().cloned().collect(), total))
}

/// The attempt's recording with every blob it refers to, if one was kept.
pub fn recording<R: Rows + ?Sized>(rows: &mut R, rollout_id: &str, attempt_id: &str) -> StoreResult<Option<Recording>> {
    let Some((tape, addresses)) = rows.recording(rollout_id, attempt_id)? else {
        return Ok(None);
    };
    let mut blobs = BTreeMap::new();
    for address in addresses {
        let text = rows.blob(&address)?.ok_or_else(|| {
            StoreError::Backend(format!(
                "the recording of attempt {attempt_id} of rollout {rollout_id} refers to blob {address}, which the store does not hold"
            ))
        })?;
        blobs.insert(address, text);
    }
    Ok(Some(Recording {
        rollout_id: rollout_id.to_owned(),
        attempt_id: attempt_id.to_owned(),
        tape,
        blobs,
    }))
}
