//! Attempts of one rollout: start (201), query (GET query string or POST search body), the
//! latest (`null` when none), update by id or `latest`.

use super::{AppState, Created, created};
use crate::error::ApiResult;
use crate::extract::{JsonBody, OptionalJsonBody, PathParams};
use crate::json::Json;
use crate::query_string::{self, QuerySpec};
use agl_store::{Attempt, AttemptQuery, AttemptRef, AttemptUpdate, AttemptedRollout, Paginated, StartAttemptRequest};
use axum::extract::{RawQuery, State};

const QUERY: QuerySpec = QuerySpec {
    lists: &[],
    integers: &["limit", "offset"],
};

/// `POST /v1/agl/rollouts/{rollout_id}/attempts` `{worker_id?}` (body optional) → 201.
pub(crate) async fn start(
    State(state): State<AppState>,
    PathParams(rollout_id): PathParams<String>,
    OptionalJsonBody(request): OptionalJsonBody<StartAttemptRequest>,
) -> ApiResult<Created<AttemptedRollout>> {
    let worker_id = request.and_then(|r| r.worker_id);
    Ok(created(
        state.store.start_attempt(&rollout_id, worker_id.as_deref()).await?,
    ))
}

/// `GET /v1/agl/rollouts/{rollout_id}/attempts?limit=..&sort_by=..` → a page.
pub(crate) async fn query(
    State(state): State<AppState>,
    PathParams(rollout_id): PathParams<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Paginated<Attempt>>> {
    let query: AttemptQuery = query_string::parse(raw.as_deref(), &QUERY)?;
    Ok(Json(state.store.query_attempts(&rollout_id, &query).await?))
}

/// `POST /v1/agl/rollouts/{rollout_id}/attempts/search` → a page.
pub(crate) async fn search(
    State(state): State<AppState>,
    PathParams(rollout_id): PathParams<String>,
    JsonBody(query): JsonBody<AttemptQuery>,
) -> ApiResult<Json<Paginated<Attempt>>> {
    Ok(Json(state.store.query_attempts(&rollout_id, &query).await?))
}

/// `GET /v1/agl/rollouts/{rollout_id}/attempts/latest` → the attempt, or `null`.
pub(crate) async fn latest(
    State(state): State<AppState>,
    PathParams(rollout_id): PathParams<String>,
) -> ApiResult<Json<Option<Attempt>>> {
    Ok(Json(state.store.get_latest_attempt(&rollout_id).await?))
}

/// `POST /v1/agl/rollouts/{rollout_id}/attempts/{attempt_id}` → the attempt; 404 if unknown.
pub(crate) async fn update(
    State(state): State<AppState>,
    PathParams((rollout_id, attempt_id)): PathParams<(String, String)>,
    JsonBody(update): JsonBody<AttemptUpdate>,
) -> ApiResult<Json<Attempt>> {
    let attempt = AttemptRef::from(attempt_id.as_str());
    Ok(Json(state.store.update_attempt(&rollout_id, attempt, update).await?))
}

/// `POST /v1/agl/rollouts/{rollout_id}/attempts/latest`: the same on the latest attempt.
pub(crate) async fn update_latest(
    State(state): State<AppState>,
    PathParams(rollout_id): PathParams<String>,
    JsonBody(update): JsonBody<AttemptUpdate>,
) -> ApiResult<Json<Attempt>> {
    Ok(Json(
        state
            .store
            .update_attempt(&rollout_id, AttemptRef::Latest, update)
            .await?,
    ))
}
