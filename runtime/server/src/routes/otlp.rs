//! `POST /v1/traces`: OTLP/HTTP trace export (protobuf or JSON, gzip allowed and inflated no
//! further than the body limit), decoded and stored by `agl_otlp`; answers and error bodies
//! (`google.rpc.Status`) are that crate's, in the request's format.

use super::AppState;
use crate::extract::RawBody;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

pub(crate) async fn traces(State(state): State<AppState>, headers: HeaderMap, RawBody(body): RawBody) -> Response {
    let text = |name| headers.get(name).and_then(|value| value.to_str().ok());
    let content_type = text(header::CONTENT_TYPE);
    let content_encoding = text(header::CONTENT_ENCODING);
    // A gzip body may inflate to no more than a plain body may be long.
    let ingest = agl_otlp::ingest_within(
        state.store.as_ref(),
        content_type,
        content_encoding,
        &body,
        state.max_body_bytes,
    );
    match ingest.await {
        Ok(report) => {
            // With dropped spans (no rollout/attempt ids) the answer says so (OTLP partial success).
            let (answer_type, answer) = report.response(content_type);
            (StatusCode::OK, [(header::CONTENT_TYPE, answer_type)], answer).into_response()
        }
        Err(error) => {
            let status = StatusCode::from_u16(error.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let (answer_type, answer) = error.response(content_type);
            (status, [(header::CONTENT_TYPE, answer_type)], answer).into_response()
        }
    }
}
