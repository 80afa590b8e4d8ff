//! Rollouts and the queue: enqueue (201), dequeue, start_rollout (201), query (GET query string
//! or POST search body), get by id (`null` when unknown) and update.

use super::{AppState, Created, created};
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, OptionalJsonBody, PathParams};
use crate::json::Json;
use crate::query_string::{self, QuerySpec};
use agl_store::{
    AttemptedRollout, DequeueRequest, EnqueueManyRequest, Paginated, Rollout, RolloutQuery, RolloutUpdate, RolloutView,
    StartRolloutRequest,
};
use axum::extract::{RawQuery, State};

pub(crate) const QUERY: QuerySpec = QuerySpec {
    lists: &["status_in", "rollout_id_in"],
    integers: &["limit", "offset"],
};

/// `POST /v1/agl/queues/rollouts/enqueue` `{rollouts: [...]}` → 201 with the queued rollouts.
pub(crate) async fn enqueue(
    State(state): State<AppState>,
    JsonBody(request): JsonBody<EnqueueManyRequest>,
) -> ApiResult<Created<Vec<Rollout>>> {
    Ok(created(state.store.enqueue_rollouts(request.rollouts).await?))
}

/// `POST /v1/agl/queues/rollouts/dequeue` `{limit, worker_id?}` (body optional) → a list, empty
/// when nothing is queued.
pub(crate) async fn dequeue(
    State(state): State<AppState>,
    OptionalJsonBody(request): OptionalJsonBody<DequeueRequest>,
) -> ApiResult<Json<Vec<AttemptedRollout>>> {
    let (limit, worker_id) = match request {
        Some(DequeueRequest { limit, worker_id }) => (limit, worker_id),
        None => (1, None),
    };
    if limit < 0 {
        return Err(ApiError::bad_request(format!("limit must be ≥ 0, got {limit}")));
    }
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    if limit == 0 {
        return Ok(Json(Vec::new()));
    }
    Ok(Json(state.store.dequeue_rollouts(limit, worker_id.as_deref()).await?))
}

/// `POST /v1/agl/rollouts` (start_rollout) → 201 with the rollout and its first attempt.
pub(crate) async fn start(
    State(state): State<AppState>,
    JsonBody(request): JsonBody<StartRolloutRequest>,
) -> ApiResult<Created<AttemptedRollout>> {
    Ok(created(state.store.start_rollout(request).await?))
}

/// `GET /v1/agl/rollouts?status_in=..&rollout_id_in=..&limit=..` → a page.
pub(crate) async fn query(
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Paginated<RolloutView>>> {
    let query: RolloutQuery = query_string::parse(raw.as_deref(), &QUERY)?;
    Ok(Json(state.store.query_rollouts(&query).await?))
}

/// `POST /v1/agl/rollouts/search` with the query as a JSON body → a page.
pub(crate) async fn search(
    State(state): State<AppState>,
    JsonBody(query): JsonBody<RolloutQuery>,
) -> ApiResult<Json<Paginated<RolloutView>>> {
    Ok(Json(state.store.query_rollouts(&query).await?))
}

/// `GET /v1/agl/rollouts/{rollout_id}` → the rollout (with its latest attempt), or `null`.
pub(crate) async fn get(
    State(state): State<AppState>,
    PathParams(rollout_id): PathParams<String>,
) -> ApiResult<Json<Option<RolloutView>>> {
    Ok(Json(state.store.get_rollout_by_id(&rollout_id).await?))
}

/// `GET /v1/agl/rollouts/search`: the rollout whose id is literally `search`.
pub(crate) async fn get_named_search(State(state): State<AppState>) -> ApiResult<Json<Option<RolloutView>>> {
    Ok(Json(state.store.get_rollout_by_id("search").await?))
}

/// `POST /v1/agl/rollouts/{rollout_id}`: changes the keys present → the rollout; 404 if unknown.
pub(crate) async fn update(
    State(state): State<AppState>,
    PathParams(rollout_id): PathParams<String>,
    JsonBody(update): JsonBody<RolloutUpdate>,
) -> ApiResult<Json<Rollout>> {
    Ok(Json(state.store.update_rollout(&rollout_id, update).await?))
}
