//! 1.0's events over our spans (read by `agl_adapter::events`): a rollout's events (its latest
//! attempt's, optionally of one type, optionally in 1.0's `format=triplet`), one attempt's, and
//! posting an event to an attempt (kept as a span of that attempt).

use super::shapes::EventCreate;
use super::{models, visible};
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, PathParams};
use crate::json::Json;
use crate::routes::AppState;
use agl_adapter::events::{self, Event};
use agl_store::{AttemptQuery, RolloutView, SpanQuery};
use axum::extract::{RawQuery, State};

/// Longest `event_type` a posted event may have.
const MAX_EVENT_TYPE_BYTES: usize = 256;

/// The query of the event routes: `event_type`, `format` (`triplet`; anything else: none) and
/// 1.0.2's `include_routed_experts` (default true).
#[derive(serde::Deserialize, Default)]
struct Query {
    #[serde(default)]
    event_type: Option<String>,
    #[serde(default)]
    format: Option<String>,
    #[serde(default)]
    include_routed_experts: Option<String>,
}

fn read_query(raw: Option<&str>) -> ApiResult<Query> {
    let spec = crate::query_string::QuerySpec {
        lists: &[],
        integers: &[],
    };
    let query: Query = crate::query_string::parse(raw, &spec)?;
    if let Some(flag) = &query.include_routed_experts
        && flag_value(flag).is_none()
    {
        return Err(ApiError::unprocessable(format!(
            "include_routed_experts must be a boolean, got `{flag}`"
        )));
    }
    Ok(query)
}

/// A boolean query value as FastAPI reads one.
fn flag_value(text: &str) -> Option<bool> {
    match text.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// `GET /api/rollouts/{rollout_id}/events?event_type=..&format=triplet` → the events of the
/// rollout's latest attempt (none before its first attempt).
pub(crate) async fn query(
    State(state): State<AppState>,
    PathParams(rollout_id): PathParams<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Vec<Event>>> {
    let query = read_query(raw.as_deref())?;
    let view = visible(&state, &rollout_id).await?;
    let Some(attempt_id) = view.attempt.as_ref().map(|a| a.attempt_id.clone()) else {
        return Ok(Json(Vec::new()));
    };
    answer(&state, &view, &attempt_id, query).await.map(Json)
}

/// `GET /api/rollouts/{rollout_id}/attempt/{attempt_id}/events` (agl-host's; 1.0 reads only the
/// latest attempt's) → that attempt's events, with the same query.
pub(crate) async fn query_attempt(
    State(state): State<AppState>,
    PathParams((rollout_id, attempt_id)): PathParams<(String, String)>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Vec<Event>>> {
    let query = read_query(raw.as_deref())?;
    let view = visible(&state, &rollout_id).await?;
    require_attempt(&state, &view, &attempt_id).await?;
    answer(&state, &view, &attempt_id, query).await.map(Json)
}

async fn answer(state: &AppState, view: &RolloutView, attempt_id: &str, query: Query) -> ApiResult<Vec<Event>> {
    let spans = state
        .store
        .query_spans(&SpanQuery::for_rollout(view.rollout.rollout_id.clone()).attempt(attempt_id))
        .await?;
    let serving = models::serving(state, view).await?;
    let mut found = events::events(&spans.items, &serving);
    if let Some(kind) = &query.event_type {
        found.retain(|e| &e.event_type == kind);
    }
    if query.format.as_deref() == Some("triplet") {
        found = events::triplet_format(found);
    }
    if query.include_routed_experts.as_deref().and_then(flag_value) == Some(false) {
        found = events::without_routed_experts(found);
    }
    Ok(found)
}

/// 404 unless `attempt_id` is an attempt of the rollout.
async fn require_attempt(state: &AppState, view: &RolloutView, attempt_id: &str) -> ApiResult<()> {
    if view.attempt.as_ref().is_some_and(|a| a.attempt_id == attempt_id) {
        return Ok(());
    }
    let attempts = state
        .store
        .query_attempts(&view.rollout.rollout_id, &AttemptQuery::default())
        .await?;
    if attempts.items.iter().any(|a| a.attempt_id == attempt_id) {
        Ok(())
    } else {
        Err(ApiError::not_found(format!(
            "Attempt not found: {attempt_id} of rollout {}",
            view.rollout.rollout_id
        )))
    }
}

/// `POST /api/rollouts/{rollout_id}/attempt/{attempt_id}/events` `{event_type, data}` → the
/// event, kept as a span of that attempt (a `reward` with a numeric `value` as a reward span).
pub(crate) async fn post(
    State(state): State<AppState>,
    PathParams((rollout_id, attempt_id)): PathParams<(String, String)>,
    JsonBody(body): JsonBody<EventCreate>,
) -> ApiResult<Json<Event>> {
    if body.event_type.is_empty() || body.event_type.len() > MAX_EVENT_TYPE_BYTES {
        return Err(ApiError::unprocessable(format!(
            "event_type must be 1 to {MAX_EVENT_TYPE_BYTES} bytes"
        )));
    }
    let view = visible(&state, &rollout_id).await?;
    require_attempt(&state, &view, &attempt_id).await?;
    let sequence_id = state.store.get_next_span_sequence_id(&rollout_id, &attempt_id).await?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let span = events::event_span(&rollout_id, &attempt_id, sequence_id, &body.event_type, &body.data, now);
    state.store.add_span(span).await?;
    Ok(Json(Event {
        event_type: body.event_type,
        rollout_id,
        attempt_id,
        timestamp: now,
        data: body.data,
    }))
}
