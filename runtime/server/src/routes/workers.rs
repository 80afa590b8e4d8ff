//! Workers: query (GET query string or POST search body), get by id (`null` when unknown) and
//! the heartbeat (`POST /v1/agl/workers/{worker_id}`).

use super::AppState;
use crate::error::ApiResult;
use crate::extract::{JsonBody, OptionalJsonBody, PathParams};
use crate::json::Json;
use crate::query_string::{self, QuerySpec};
use agl_store::{Paginated, Worker, WorkerQuery, WorkerUpdate};
use axum::extract::{RawQuery, State};

const QUERY: QuerySpec = QuerySpec {
    lists: &["status_in"],
    integers: &["limit", "offset"],
};

/// `GET /v1/agl/workers?status_in=..&worker_id_contains=..` → a page.
pub(crate) async fn query(
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Paginated<Worker>>> {
    let query: WorkerQuery = query_string::parse(raw.as_deref(), &QUERY)?;
    Ok(Json(state.store.query_workers(&query).await?))
}

/// `POST /v1/agl/workers/search` → a page.
pub(crate) async fn search(
    State(state): State<AppState>,
    JsonBody(query): JsonBody<WorkerQuery>,
) -> ApiResult<Json<Paginated<Worker>>> {
    Ok(Json(state.store.query_workers(&query).await?))
}

/// `GET /v1/agl/workers/{worker_id}` → the worker, or `null`.
pub(crate) async fn get(
    State(state): State<AppState>,
    PathParams(worker_id): PathParams<String>,
) -> ApiResult<Json<Option<Worker>>> {
    Ok(Json(state.store.get_worker_by_id(&worker_id).await?))
}

/// `GET /v1/agl/workers/search`: the worker whose id is literally `search`.
pub(crate) async fn get_named_search(State(state): State<AppState>) -> ApiResult<Json<Option<Worker>>> {
    Ok(Json(state.store.get_worker_by_id("search").await?))
}

/// `POST /v1/agl/workers/{worker_id}` `{heartbeat_stats?}` (body optional): a heartbeat.
pub(crate) async fn update(
    State(state): State<AppState>,
    PathParams(worker_id): PathParams<String>,
    OptionalJsonBody(update): OptionalJsonBody<WorkerUpdate>,
) -> ApiResult<Json<Worker>> {
    let worker = state
        .store
        .update_worker(&worker_id, update.unwrap_or_default())
        .await?;
    state.metrics.worker_heartbeat();
    Ok(Json(worker))
}
