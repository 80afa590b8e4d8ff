//! Reading a kept run back: a rollout's spans page by page.

use crate::RunsError;
use agl_store::{LightningStore, Rollout, Span, SpanQuery};
use std::sync::Arc;

/// Rows fetched per query page.
pub const PAGE: i64 = 10_000;

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
