//! Request extractors whose every rejection is a JSON [`ApiError`]: JSON bodies (required or
//! optional), raw bodies, path parameters. Bodies are read under the configured size limit (413)
//! and time limit (408).

use crate::error::ApiError;
use crate::routes::AppState;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use serde::de::DeserializeOwned;

/// The request body, read whole (at most `max_body_bytes`, within `body_read_timeout`).
pub(crate) struct RawBody(pub Bytes);

impl FromRequest<AppState> for RawBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        read_body(request, state, state.max_body_bytes).await.map(Self)
    }
}

/// The request body, read whole: at most `limit` bytes (413), within `body_read_timeout` (408).
/// A route with a limit above `max_body_bytes` raises axum's own ([`axum::extract::DefaultBodyLimit`])
/// to it as well.
pub(crate) async fn read_body(request: Request, state: &AppState, limit: usize) -> Result<Bytes, ApiError> {
    let too_large = || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("request body is larger than the limit of {limit} bytes"),
        )
    };
    // A declared length over the limit is refused before waiting for any of the body.
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit as u64) {
        return Err(too_large());
    }
    let read = tokio::time::timeout(state.body_read_timeout, Bytes::from_request(request, state));
    let Ok(read) = read.await else {
        return Err(ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the request body did not arrive within {:.3} s",
                state.body_read_timeout.as_secs_f64()
            ),
        ));
    };
    match read {
        Ok(bytes) => Ok(bytes),
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => Err(too_large()),
        Err(rejection) => Err(ApiError::bad_request(format!(
            "cannot read the request body: {}",
            rejection.body_text()
        ))),
    }
}

/// A required JSON body. Like FastAPI, the content type is not checked; a missing, malformed or
/// mis-shaped body is a 422.
pub(crate) struct JsonBody<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        json_body(request, state, state.max_body_bytes).await.map(Self)
    }
}

/// A required JSON body of at most `limit` bytes (see [`read_body`]); a missing, malformed or
/// mis-shaped one is a 422.
pub(crate) async fn json_body<T: DeserializeOwned>(
    request: Request,
    state: &AppState,
    limit: usize,
) -> Result<T, ApiError> {
    let bytes = read_body(request, state, limit).await?;
    if is_blank(&bytes) {
        return Err(ApiError::unprocessable("a JSON request body is required"));
    }
    parse_json(&bytes)
}

/// An optional JSON body: absent, empty or `null` gives `None` (0.3.0's `Body(None)` routes).
pub(crate) struct OptionalJsonBody<T>(pub Option<T>);

impl<T: DeserializeOwned> FromRequest<AppState> for OptionalJsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        let RawBody(bytes) = RawBody::from_request(request, state).await?;
        if is_blank(&bytes) {
            return Ok(Self(None));
        }
        parse_json::<Option<T>>(&bytes).map(Self)
    }
}

fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
}

pub(crate) fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(bytes).map_err(|error| {
        let what = match error.classify() {
            serde_json::error::Category::Data => "request body does not match the expected shape",
            _ => "request body is not valid JSON",
        };
        ApiError::unprocessable(format!("{what}: {error}"))
    })
}

/// Path parameters; a segment that cannot be decoded is a 400.
pub(crate) struct PathParams<T>(pub T);

impl<T, S> FromRequestParts<S> for PathParams<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(Self(value)),
            Err(rejection) => Err(ApiError::bad_request(format!(
                "bad path parameter: {}",
                rejection.body_text()
            ))),
        }
    }
}
