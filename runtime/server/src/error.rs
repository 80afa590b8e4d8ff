//! Errors: [`ServerError`] (starting the server) and [`ApiError`] (one HTTP error answer, always
//! a JSON `{"detail": "..."}`), with the mapping from the store's errors to status codes.

use agl_store::StoreError;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::net::SocketAddr;

/// Why [`crate::serve`] could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot bind the store server to {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the address the store server is bound to: {0}")]
    LocalAddr(#[source] std::io::Error),
    /// A static site's folder cannot be served ([`crate::Site::dir`]).
    #[error("{}: {reason}", dir.display())]
    Site {
        dir: std::path::PathBuf,
        reason: &'static str,
    },
}

/// An error answer: a 4xx (or 503 for a failing backend) with `{"detail": "..."}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiError {
    pub status: StatusCode,
    pub detail: String,
}

impl ApiError {
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        Self {
            status,
            detail: detail.into(),
        }
    }

    /// A value the request carried is not acceptable (0.3.0 answers these with 400).
    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, detail)
    }

    /// The request body or query string does not have the expected shape (FastAPI's 422).
    pub fn unprocessable(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, detail)
    }

    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, detail)
    }

    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "missing or invalid bearer token (send `Authorization: Bearer <token>`)",
        )
    }
}

impl From<StoreError> for ApiError {
    /// Unknown ids → 404, bad arguments → 400, a failing backend → 503 (worth a retry).
    fn from(error: StoreError) -> Self {
        let status = match &error {
            StoreError::RolloutNotFound(_)
            | StoreError::AttemptNotFound { .. }
            | StoreError::NoAttempts(_)
            | StoreError::ResourcesNotFound(_) => StatusCode::NOT_FOUND,
            StoreError::InvalidArgument(_) => StatusCode::BAD_REQUEST,
            StoreError::Backend(_) => StatusCode::SERVICE_UNAVAILABLE,
        };
        Self::new(status, error.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "detail": self.detail });
        let mut response = (self.status, crate::json::Json(body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// What a handler returns: a JSON answer or an [`ApiError`].
pub(crate) type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_errors_map_to_4xx_except_backend_failures() {
        let cases = [
            (StoreError::RolloutNotFound("ro-x".into()), 404),
            (
                StoreError::AttemptNotFound {
                    rollout_id: "ro-x".into(),
                    attempt_id: "at-y".into(),
                },
                404,
            ),
            (StoreError::NoAttempts("ro-x".into()), 404),
            (StoreError::ResourcesNotFound("rs-x".into()), 404),
            (StoreError::InvalidArgument("limit must be ...".into()), 400),
            (StoreError::Backend("disk full".into()), 503),
        ];
        for (error, status) in cases {
            let message = error.to_string();
            let api = ApiError::from(error);
            assert_eq!(api.status.as_u16(), status, "{message}");
            assert_eq!(api.detail, message);
        }
    }
}
