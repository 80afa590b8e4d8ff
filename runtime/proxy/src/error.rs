//! Why a proxied call failed, and the answer a client gets for it: OpenAI's error JSON
//! (`{"error": {"message", "type", "code"}}`) with the status that says what went wrong. An
//! upstream's own error answer is relayed with its status; its body too when it is already JSON.

use axum::http::header::{CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::json;

/// How much of an upstream's non-JSON error body is quoted.
const EXCERPT_CHARS: usize = 300;

/// One failed call of the proxy.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProxyError {
    /// The client's request is wrong (not JSON, not a chat request...).
    #[error("{0}")]
    BadRequest(String),
    /// The route names a rollout the store does not hold.
    #[error("{0}")]
    NotFound(String),
    /// The body is longer than the proxy accepts.
    #[error("request body larger than {0} bytes")]
    TooLarge(usize),
    /// The body did not arrive in time.
    #[error("request body not received within {0:?}")]
    BodyTimeout(std::time::Duration),
    /// The proxy is paused (by the algorithm): come back after `retry_after_seconds`.
    #[error("the LLM proxy is paused{}", reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default())]
    Paused {
        retry_after_seconds: u64,
        reason: Option<String>,
    },
    /// The upstream answered an error (after the retries, for a retryable one): relayed.
    #[error("upstream answered HTTP {status}")]
    Upstream { status: u16, body: Bytes },
    /// The upstream could not be reached, or answered something that is not a completion.
    #[error("{0}")]
    BadGateway(String),
    /// The upstream took longer than the timeout (what it was doing, the limit).
    #[error("{0}")]
    GatewayTimeout(String),
    /// The store failed (recording, or looking the rollout up).
    #[error("store: {0}")]
    Store(String),
    /// The attempt the call names has ended: its spans are final.
    #[error("{0}")]
    Ended(String),
    /// A call outside any attempt where only token holders may make one.
    #[error(
        "calls outside any attempt spend the host's LLM key and are recorded nowhere: they are served only under a \
         token (agl-host store --token, agl-host run --llm-proxy-token); name an attempt \
         (/rollout/ROLLOUT_ID/attempt/ATTEMPT_ID/v1/...)"
    )]
    Unattributed,
    /// An agent's call its LLM policy does not allow (model, budget, size).
    #[error("refused by the attempt's LLM policy: {0}")]
    Refused(agl_trace::LlmRefusal),
}

impl ProxyError {
    /// The HTTP status of the answer.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::BodyTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            Self::Paused { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Upstream { status, .. } => StatusCode::from_u16(*status).unwrap_or(StatusCode::BAD_GATEWAY),
            Self::BadGateway(_) => StatusCode::BAD_GATEWAY,
            Self::GatewayTimeout(_) => StatusCode::GATEWAY_TIMEOUT,
            Self::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Ended(_) => StatusCode::CONFLICT,
            Self::Unattributed => StatusCode::FORBIDDEN,
            Self::Refused(agl_trace::LlmRefusal::InvalidRequest(_)) => StatusCode::BAD_REQUEST,
            Self::Refused(_) => StatusCode::FORBIDDEN,
        }
    }

    /// OpenAI's `error.type` for it (what the `openai` client shows beside the message).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::BadRequest(_) | Self::TooLarge(_) | Self::BodyTimeout(_) => "invalid_request_error",
            Self::NotFound(_) => "not_found_error",
            Self::Paused { .. } => "proxy_paused",
            Self::Upstream { .. } | Self::BadGateway(_) => "upstream_error",
            Self::GatewayTimeout(_) => "timeout",
            Self::Store(_) => "server_error",
            Self::Ended(_) => "invalid_request_error",
            Self::Unattributed => "permission_error",
            Self::Refused(agl_trace::LlmRefusal::ModelNotAllowed(_)) => "model_not_allowed",
            Self::Refused(agl_trace::LlmRefusal::BudgetExceeded(_)) => "budget_exceeded",
            Self::Refused(agl_trace::LlmRefusal::InvalidRequest(_)) => "invalid_request_error",
        }
    }

    /// The failure as one line for the LLM span's `error.type` / status description.
    pub fn describe(&self) -> String {
        match self {
            Self::Upstream { status, body } => {
                let message = agl_llm::openai_json::error_message(body)
                    .unwrap_or_else(|| excerpt(&String::from_utf8_lossy(body)));
                format!("upstream answered HTTP {status}: {message}")
            }
            other => other.to_string(),
        }
    }
}

/// At most [`EXCERPT_CHARS`] characters of `text`, whitespace collapsed.
fn excerpt(text: &str) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match collapsed.char_indices().nth(EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}...", &collapsed[..cut]),
        None => collapsed,
    }
}

/// An OpenAI-shaped error answer.
pub(crate) fn error_json(status: StatusCode, kind: &str, message: &str) -> Response {
    let body = json!({"error": {"message": message, "type": kind, "code": status.as_u16()}});
    (status, axum::Json(body)).into_response()
}

impl IntoResponse for ProxyError {
    fn into_response(self) -> Response {
        let status = self.status();
        match self {
            // An upstream's JSON error goes back as it was; anything else is wrapped.
            Self::Upstream { body, .. } if serde_json::from_slice::<serde_json::Value>(&body).is_ok() => (
                status,
                [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
                body,
            )
                .into_response(),
            Self::Paused {
                retry_after_seconds, ..
            } => {
                let mut response = error_json(status, self.kind(), &self.to_string());
                response
                    .headers_mut()
                    .insert(RETRY_AFTER, HeaderValue::from(retry_after_seconds));
                response
                    .headers_mut()
                    .insert("x-agl-paused", HeaderValue::from_static("true"));
                response
            }
            other => error_json(status, other.kind(), &other.describe()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_failure_has_its_status_and_openai_type() {
        let cases = [
            (ProxyError::BadRequest("x".into()), 400, "invalid_request_error"),
            (ProxyError::NotFound("x".into()), 404, "not_found_error"),
            (ProxyError::TooLarge(1), 413, "invalid_request_error"),
            (
                ProxyError::Paused {
                    retry_after_seconds: 3,
                    reason: None,
                },
                429,
                "proxy_paused",
            ),
            (ProxyError::BadGateway("x".into()), 502, "upstream_error"),
            (ProxyError::GatewayTimeout("slow".into()), 504, "timeout"),
            (
                ProxyError::Upstream {
                    status: 503,
                    body: Bytes::from_static(b"<html>down</html>"),
                },
                503,
                "upstream_error",
            ),
        ];
        for (error, status, kind) in cases {
            assert_eq!((error.status().as_u16(), error.kind()), (status, kind), "{error:?}");
        }
    }

    #[test]
    fn an_upstream_error_is_described_by_its_message() {
        let error = ProxyError::Upstream {
            status: 400,
            body: Bytes::from_static(br#"{"error": {"message": "bad model", "type": "x"}}"#),
        };
        assert_eq!(error.describe(), "upstream answered HTTP 400: bad model");
    }
}
