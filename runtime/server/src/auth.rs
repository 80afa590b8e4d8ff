//! Bearer-token check: with a token configured, every request but `GET /v1/agl/health` and
//! `GET /healthz` (and, when a static site is served, the site's `GET`s: its files hold no data)
//! must carry `Authorization: Bearer <token>` (on Agent-lightning 1.0's gateway paths,
//! `x-api-key: <token>` too, as its server accepts), else it gets a JSON 401.

use crate::error::ApiError;
use axum::extract::{Request, State};
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The only route that answers without the token (0.3.0's client probes it between retries).
pub(crate) const HEALTH_PATH: &str = "/v1/agl/health";

/// The token the requests must present.
#[derive(Clone)]
pub(crate) struct ExpectedToken {
    pub token: Arc<str>,
    /// A static site is served: its requests need no token.
    pub public_site: bool,
}

/// Middleware: lets the request through when it is the health probe, a static site's file, or
/// carries the token.
pub(crate) async fn require_bearer(State(expected): State<ExpectedToken>, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let is_health = matches!(*request.method(), Method::GET | Method::HEAD)
        && (path == HEALTH_PATH || path == crate::routes::gateway::HEALTHZ_PATH);
    let is_site = expected.public_site && crate::site::serves(request.method(), request.uri().path());
    if is_health || is_site || presents(&request, &expected.token) {
        next.run(request).await
    } else {
        ApiError::unauthorized().into_response()
    }
}

/// `router` with every route requiring `Authorization: Bearer <token>` (JSON 401 otherwise), for
/// a part of a server whose other routes have a key of their own (the LLM proxy's operator routes
/// beside its agents' capabilities). An empty token matches nothing.
pub fn require_token(router: axum::Router, token: &str) -> axum::Router {
    router.route_layer(axum::middleware::from_fn_with_state(
        ExpectedToken {
            token: Arc::from(token),
            public_site: false,
        },
        require_bearer,
    ))
}

/// True when the request's `Authorization` header is `Bearer <expected>` (scheme in any case).
fn presents(request: &Request, expected: &str) -> bool {
    if crate::routes::gateway::is_gateway_path(request.uri().path())
        && let Some(key) = request.headers().get("x-api-key")
    {
        return !expected.is_empty() && constant_time_eq(key.as_bytes().trim_ascii(), expected.as_bytes());
    }
    let Some(value) = request.headers().get(header::AUTHORIZATION) else {
        return false;
    };
    let token = value
        .as_bytes()
        .split_at_checked(6)
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case(b"bearer"))
        .and_then(|(_, rest)| rest.strip_prefix(b" "));
    match token {
        Some(token) => !expected.is_empty() && constant_time_eq(token.trim_ascii(), expected.as_bytes()),
        None => false,
    }
}

/// Compares without an early exit on the first differing byte.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(authorization: Option<&str>) -> Request {
        let mut builder = Request::builder().uri("/v1/agl/statistics");
        if let Some(value) = authorization {
            builder = builder.header(header::AUTHORIZATION, value);
        }
        builder.body(axum::body::Body::empty()).expect("valid request")
    }

    #[test]
    fn accepts_only_the_exact_bearer_token() {
        assert!(presents(&request(Some("Bearer t0k")), "t0k"));
        assert!(presents(&request(Some("bearer t0k")), "t0k"));
        assert!(!presents(&request(Some("Bearer t0")), "t0k"));
        assert!(!presents(&request(Some("Bearer t0kk")), "t0k"));
        assert!(!presents(&request(Some("Basic t0k")), "t0k"));
        assert!(!presents(&request(Some("Bearert0k")), "t0k"));
        assert!(!presents(&request(Some("Bearer")), "t0k"));
        assert!(!presents(&request(None), "t0k"));
    }

    #[test]
    fn an_empty_token_matches_nothing() {
        assert!(!presents(&request(Some("Bearer ")), ""));
        assert!(!presents(&request(Some("Bearer  ")), ""));
    }
}
