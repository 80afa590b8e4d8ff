//! Which attempts an export takes, the one definition `agl-host export` and the store server's
//! export route share: rollouts of the statuses, splits and resources asked for (the finished ones
//! by default, never an algorithm's own), by start time; each one's latest attempt or all of them;
//! attempts whose final reward is in range.

use crate::conventions as c;
use agl_store::{
    Attempt, AttemptQuery, LightningStore, Mode, Rollout, RolloutQuery, RolloutStatus, RolloutView, SortOrder, Span,
    SpanQuery, StoreResult,
};
use serde_json::Value;
use std::sync::Arc;

/// Rows fetched per page.
const PAGE: i64 = 10_000;

/// The rollout statuses exported when none is asked for: the finished ones.
pub const FINISHED: [RolloutStatus; 3] = [
    RolloutStatus::Succeeded,
    RolloutStatus::Failed,
    RolloutStatus::Cancelled,
];

/// What to export: empty lists mean any (statuses: [`FINISHED`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    pub statuses: Vec<RolloutStatus>,
    pub modes: Vec<Mode>,
    /// Resources ids: the rollouts that ran with one of them.
    pub resources: Vec<String>,
    /// Every attempt of each rollout rather than its latest.
    pub all_attempts: bool,
    /// The final rewards an exported attempt may have, bounds included; with either, an attempt
    /// without a reward is left out.
    pub min_reward: Option<f64>,
    pub max_reward: Option<f64>,
}

impl Filter {
    /// Whether an attempt with this final reward is exported.
    pub fn admits(&self, reward: Option<f64>) -> bool {
        if self.min_reward.is_none() && self.max_reward.is_none() {
            return true;
        }
        reward.is_some_and(|reward| {
            self.min_reward.is_none_or(|min| reward >= min) && self.max_reward.is_none_or(|max| reward <= max)
        })
    }
}

/// Whether `rollout` holds an algorithm's own trace (its LLM calls) rather than a task.
pub fn is_algorithm_rollout(rollout: &Rollout) -> bool {
    rollout
        .metadata
        .as_ref()
        .and_then(|metadata| metadata.get(c::ROLLOUT_KIND))
        .and_then(Value::as_str)
        == Some(c::ALGORITHM_ROLLOUT)
}

/// The rollouts to export: of the statuses, modes and resources asked for, not the algorithm's
/// own, by start time (then id).
pub async fn rollouts(store: &dyn LightningStore, filter: &Filter) -> StoreResult<Vec<RolloutView>> {
    let statuses = if filter.statuses.is_empty() {
        FINISHED.to_vec()
    } else {
        filter.statuses.clone()
    };
    let mut views: Vec<RolloutView> = Vec::new();
    loop {
        // Pages in id order, so that no rollout is seen twice or missed between pages.
        let query = RolloutQuery::default()
            .status_in(statuses.iter().copied())
            .sort_by("rollout_id", SortOrder::Asc)
            .limit(PAGE)
            .offset(views.len() as i64);
        let page = store.query_rollouts(&query).await?;
        let fetched = page.items.len();
        views.extend(page.items);
        if fetched == 0 || views.len() as u64 >= page.total {
            break;
        }
    }
    views.retain(|view| {
        let rollout = &view.rollout;
        !is_algorithm_rollout(rollout)
            && (filter.modes.is_empty() || rollout.mode.is_some_and(|mode| filter.modes.contains(&mode)))
            && (filter.resources.is_empty()
                || rollout
                    .resources_id
                    .as_ref()
                    .is_some_and(|id| filter.resources.contains(id)))
    });
    views.sort_by(|a, b| {
        a.rollout
            .start_time
            .total_cmp(&b.rollout.start_time)
            .then_with(|| a.rollout.rollout_id.cmp(&b.rollout.rollout_id))
    });
    Ok(views)
}

/// The rollout's latest attempt, or all of them in order; none when it never ran.
pub async fn attempts(store: &dyn LightningStore, view: &RolloutView, all: bool) -> StoreResult<Vec<Attempt>> {
    if !all {
        return Ok(view.attempt.clone().into_iter().collect());
    }
    let mut attempts = store
        .query_attempts(&view.rollout.rollout_id, &AttemptQuery::default())
        .await?
        .items;
    attempts.sort_by_key(|attempt| attempt.sequence_id);
    Ok(attempts)
}

/// The spans of one attempt, in sequence order.
pub async fn spans(store: &dyn LightningStore, rollout_id: &str, attempt_id: &str) -> StoreResult<Vec<Arc<Span>>> {
    let query = SpanQuery::for_rollout(rollout_id.to_owned()).attempt(attempt_id);
    let mut spans = Vec::new();
    loop {
        let page = store
            .query_spans(&query.clone().limit(PAGE).offset(spans.len() as i64))
            .await?;
        let fetched = page.items.len();
        spans.extend(page.items);
        if fetched == 0 || spans.len() as u64 >= page.total {
            return Ok(spans);
        }
    }
}
