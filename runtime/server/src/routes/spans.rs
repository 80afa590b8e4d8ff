//! Spans: add (201 with the span, or `null` for a duplicate), query (GET query string or POST
//! search body) and the next sequence id.

use super::{AppState, Created, created};
use crate::error::ApiResult;
use crate::extract::JsonBody;
use crate::query_string::{self, QuerySpec};
use agl_store::{NextSequenceIdRequest, NextSequenceIdResponse, Paginated, Span, SpanQuery};
use axum::Json;
use axum::extract::{RawQuery, State};
use std::sync::Arc;

const QUERY: QuerySpec = QuerySpec {
    lists: &[],
    integers: &["limit", "offset"],
};

/// `POST /v1/agl/spans` → 201 with the stored span, or 201 `null` when (rollout, attempt,
/// span_id) is already stored; 404 for an unknown rollout or attempt.
pub(crate) async fn add(
    State(state): State<AppState>,
    JsonBody(span): JsonBody<Span>,
) -> ApiResult<Created<Option<Arc<Span>>>> {
    Ok(created(state.store.add_span(span).await?))
}

/// `GET /v1/agl/spans?rollout_id=..&attempt_id=..&name_contains=..` → a page.
pub(crate) async fn query(
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Paginated<Arc<Span>>>> {
    let query: SpanQuery = query_string::parse(raw.as_deref(), &QUERY)?;
    Ok(Json(state.store.query_spans(&query).await?))
}

/// `POST /v1/agl/spans/search` → a page.
pub(crate) async fn search(
    State(state): State<AppState>,
    JsonBody(query): JsonBody<SpanQuery>,
) -> ApiResult<Json<Paginated<Arc<Span>>>> {
    Ok(Json(state.store.query_spans(&query).await?))
}

/// `POST /v1/agl/spans/next` `{rollout_id, attempt_id}` → `{sequence_id}`.
pub(crate) async fn next_sequence_id(
    State(state): State<AppState>,
    JsonBody(request): JsonBody<NextSequenceIdRequest>,
) -> ApiResult<Json<NextSequenceIdResponse>> {
    let sequence_id = state
        .store
        .get_next_span_sequence_id(&request.rollout_id, &request.attempt_id)
        .await?;
    Ok(Json(NextSequenceIdResponse { sequence_id }))
}
