//! Reading a kept run back page by page: its rollouts, a rollout's spans.

use crate::RunsError;
use agl_store::{LightningStore, Rollout, RolloutQuery, RolloutView, Span, SpanQuery};
use std::sync::Arc;

/// Rows fetched per query page.
pub const PAGE: i64 = 10_000;

/// Every rollout of the store with its latest attempt, in the store's order.
pub async fn every_rollout(store: &dyn LightningStore) -> Result<Vec<RolloutView>, RunsError> {
    let mut views = Vec::new();
    loop {
        let page = store
            .query_rollouts(&RolloutQuery::default().limit(PAGE).offset(views.len() as i64))
            .await
            .map_err(RunsError::store("reading the rollouts"))?;
        let fetched = page.items.len();
        views.extend(page.items);
        if fetched == 0 || views.len() as u64 >= page.total {
            return Ok(views);
        }
    }
}

/// The spans of `rollout`'s attempt `attempt_id`, or of every attempt, in sequence order.
pub async fn spans_of(
    store: &dyn LightningStore,
    rollout: &Rollout,
    attempt_id: Option<&str>,
) -> Result<Vec<Arc<Span>>, RunsError> {
    let mut query = SpanQuery::for_rollout(rollout.rollout_id.clone());
    if let Some(id) = attempt_id {
        query = query.attempt(id);
    }
    let mut spans = Vec::new();
    loop {
        let page = store
            .query_spans(&query.clone().limit(PAGE).offset(spans.len() as i64))
            .await
            .map_err(RunsError::store(format!(
                "reading the spans of rollout {}",
                rollout.rollout_id
            )))?;
        let fetched = page.items.len();
        spans.extend(page.items);
        if fetched == 0 || spans.len() as u64 >= page.total {
            return Ok(spans);
        }
    }
}
