//! `POST /v1/traces`: OTLP/HTTP trace export (protobuf or JSON, gzip allowed and inflated no
//! further than the body limit), decoded and stored by `agl_otlp`; answers and error bodies
//! (`google.rpc.Status`) are that crate's, in the request's format. What is stored is counted for
//! `/metrics`.

use super::AppState;
use crate::extract::RawBody;
use crate::metrics::LlmCall;
use agl_otlp::{IngestReport, OtlpError};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

pub(crate) async fn traces(State(state): State<AppState>, headers: HeaderMap, RawBody(body): RawBody) -> Response {
    let text = |name| headers.get(name).and_then(|value| value.to_str().ok());
    let content_type = text(header::CONTENT_TYPE);
    let content_encoding = text(header::CONTENT_ENCODING);
    match ingest(&state, content_type, content_encoding, &body).await {
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

/// Decodes (a gzip body inflating to no more than a plain body may be long) and stores the
/// request's spans, then counts them and the LLM calls among them for `/metrics`.
async fn ingest(
    state: &AppState,
    content_type: Option<&str>,
    content_encoding: Option<&str>,
    body: &[u8],
) -> Result<IngestReport, OtlpError> {
    let decoded = agl_otlp::decode_within(content_type, content_encoding, body, state.max_body_bytes)?;
    let calls: Vec<LlmCall> = decoded.spans.iter().filter_map(|d| LlmCall::of(&d.span)).collect();
    let report = agl_otlp::store_decoded(state.store.as_ref(), decoded).await?;
    state.metrics.otlp_stored(report.accepted, report.dropped, &calls);
    Ok(report)
}
