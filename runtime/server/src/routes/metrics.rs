//! `GET /metrics`: Prometheus' text exposition format (0.0.4) — this server's counters and the
//! store's state read now (`crate::metrics`). Behind the token like every route but health.

use super::AppState;
use crate::metrics::StoreState;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

pub(crate) async fn scrape(State(state): State<AppState>) -> Response {
    let store = match StoreState::read(state.store.as_ref()).await {
        Ok(read) => read,
        Err(error) => {
            // The counters are still worth a scrape; `agl_store_up 0` says the rest is missing.
            tracing::warn!(%error, "/metrics could not read the store");
            StoreState::unread()
        }
    };
    match state.metrics.encode(&store) {
        Ok(text) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response(),
        Err(_) => {
            crate::error::ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "cannot encode the metrics").into_response()
        }
    }
}
