//! `GET /v1/agl/health` and `GET /v1/agl/statistics`.

use super::AppState;
use crate::error::ApiResult;
use crate::json::Json;
use agl_store::{HealthResponse, Statistics};
use axum::extract::State;

pub(crate) async fn health() -> Json<HealthResponse> {
    Json(HealthResponse { status: "ok".into() })
}

pub(crate) async fn statistics(State(state): State<AppState>) -> ApiResult<Json<Statistics>> {
    Ok(Json(state.store.statistics().await?))
}
