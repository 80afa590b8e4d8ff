//! Agent-lightning 1.0's gateway API (`agentlightning/server/`), served over the same store as the
//! 0.3.0 routes, beside them: `/healthz` (public), `/api/rollouts...` (rollouts and their events),
//! `/api/models` (model servers, kept as `proxy_llm` resources versions). Its LLM proxy routes
//! (`/proxy/rollout/{rid}/attempt/{aid}/mode/{train|val}/openai/v1/...` and `/proxy/pause`,
//! `resume`, `state`) are `agl-proxy`'s, mounted beside these when the server runs one. Its key
//! is the server's token (`Authorization: Bearer` or, on these paths, `x-api-key`).
//! Differences from 1.0 are listed in the book's `reference/gateway-api.md`.

mod events;
mod health;
mod models;
mod rollouts;
mod shapes;

use super::AppState;
use crate::error::{ApiError, ApiResult};
use agl_store::RolloutView;
use axum::Router;
use axum::routing::{get, post};

/// Where the gateway's health check is (no token needed).
pub(crate) const HEALTHZ_PATH: &str = "/healthz";

/// Whether `path` is one of 1.0's (where its `x-api-key` header is accepted as the key).
pub(crate) fn is_gateway_path(path: &str) -> bool {
    path == HEALTHZ_PATH || path.starts_with("/api/") || path == "/api" || path.starts_with("/proxy/")
}

/// The gateway's routes, to merge into the store's router.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route(HEALTHZ_PATH, get(health::healthz))
        .route("/api/rollouts", post(rollouts::create).get(rollouts::list))
        .route("/api/rollouts/terminal", get(rollouts::terminal))
        .route(
            "/api/rollouts/{rollout_id}",
            get(rollouts::get).patch(rollouts::patch).delete(rollouts::delete),
        )
        .route("/api/rollouts/{rollout_id}/events", get(events::query))
        .route(
            "/api/rollouts/{rollout_id}/attempt/{attempt_id}/events",
            post(events::post).get(events::query_attempt),
        )
        .route(
            "/api/models",
            post(models::register).get(models::list).delete(models::delete_all),
        )
}

/// 1.0's 404 for an unknown rollout.
fn not_found(rollout_id: &str) -> ApiError {
    ApiError::not_found(format!("Rollout not found: {rollout_id}"))
}

/// The rollout, unless it is unknown or the gateway deleted it (a 404).
async fn visible(state: &AppState, rollout_id: &str) -> ApiResult<RolloutView> {
    match state.store.get_rollout_by_id(rollout_id).await? {
        Some(view) if !shapes::is_deleted(&view) => Ok(view),
        _ => Err(not_found(rollout_id)),
    }
}
