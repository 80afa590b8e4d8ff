//! Spans: add (201 with the span, or `null` for a duplicate), query (GET query string or POST
//! search body) and the next sequence id. A span is answered through its kept encoding
//! ([`Span::encoded_json`]): stored spans never change, so each is encoded once, however many
//! queries return it.

use super::{AppState, Created, created};
use crate::error::ApiResult;
use crate::extract::JsonBody;
use crate::json::Json;
use crate::query_string::{self, QuerySpec};
use agl_store::{NextSequenceIdRequest, NextSequenceIdResponse, Paginated, Span, SpanQuery};
use axum::extract::{RawQuery, State};
use serde::{Serialize, Serializer};
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
) -> ApiResult<Created<Option<EncodedSpan>>> {
    let stored = state.store.add_span(span).await?;
    if let Some(span) = &stored {
        state.metrics.span_stored(span);
    }
    Ok(created(stored.map(EncodedSpan)))
}

/// `GET /v1/agl/spans?rollout_id=..&attempt_id=..&name_contains=..` → a page.
pub(crate) async fn query(
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Paginated<EncodedSpan>>> {
    let query: SpanQuery = query_string::parse(raw.as_deref(), &QUERY)?;
    Ok(Json(encoded_page(state.store.query_spans(&query).await?)))
}

/// `POST /v1/agl/spans/search` → a page.
pub(crate) async fn search(
    State(state): State<AppState>,
    JsonBody(query): JsonBody<SpanQuery>,
) -> ApiResult<Json<Paginated<EncodedSpan>>> {
    Ok(Json(encoded_page(state.store.query_spans(&query).await?)))
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

/// A stored span, serialised from its kept encoding (made now if this is its first answer).
pub(crate) struct EncodedSpan(Arc<Span>);

impl Serialize for EncodedSpan {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0.encoded_json() {
            Ok(encoded) => encoded.serialize(serializer),
            // Encoding on its own failed: serialising in place reports the same error.
            Err(_) => self.0.serialize(serializer),
        }
    }
}

fn encoded_page(page: Paginated<Arc<Span>>) -> Paginated<EncodedSpan> {
    Paginated {
        items: page.items.into_iter().map(EncodedSpan).collect(),
        limit: page.limit,
        offset: page.offset,
        total: page.total,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_encoded_span_serialises_as_the_span_does_and_is_encoded_once() {
        let mut span = Span::new("ro-1", "at-1", 3, "ab".repeat(16), "cd".repeat(8), "llm \"call\"");
        span.attributes.insert("gen_ai.usage.input_tokens".into(), 12.into());
        span.start_time = Some(1.5);
        let span = Arc::new(span);
        let plain = serde_json::to_string(&*span).unwrap();
        let page = encoded_page(Paginated {
            items: vec![Arc::clone(&span), Arc::clone(&span)],
            limit: -1,
            offset: 0,
            total: 2,
        });
        let answered = serde_json::to_string(&page).unwrap();
        assert_eq!(
            answered,
            format!(r#"{{"items":[{plain},{plain}],"limit":-1,"offset":0,"total":2}}"#)
        );
        // The second answer came from the kept encoding: the very same allocation.
        let first: *const _ = span.encoded_json().unwrap();
        let second: *const _ = span.encoded_json().unwrap();
        assert_eq!(first, second);
    }
}
