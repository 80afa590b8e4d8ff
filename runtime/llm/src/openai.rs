//! [`OpenAiBackend`]: an [`LlmBackend`] that talks to any OpenAI-compatible HTTP server
//! (`POST {base_url}/chat/completions`), with keep-alive, a per-attempt timeout and retries with
//! exponential backoff on 408/429/5xx and network errors.

use crate::error::error_chain;
use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, RETRY_AFTER};

use crate::error::excerpt;
use crate::retry::{backoff, is_retryable_status, parse_retry_after};
use crate::wire::{WireRequest, WireResponse, error_message};
use crate::{ChatRequest, ChatResponse, LlmBackend, LlmError};

/// How much of a server's body goes into an error message.
const BODY_EXCERPT_CHARS: usize = 200;

/// Where and how to reach an OpenAI-compatible server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAiConfig {
    /// The API root, e.g. `http://127.0.0.1:8000/v1`; `/chat/completions` is appended.
    pub base_url: String,
    /// Sent as `Authorization: Bearer <key>` when set.
    pub api_key: Option<String>,
    /// The model used when a request names none.
    pub model: String,
    /// The limit on one attempt (sending the request and reading the whole answer).
    pub request_timeout: Duration,
    /// Retries after the first attempt on 408/429/5xx and network errors.
    pub max_retries: u32,
    /// The wait before the first retry; it doubles at each further retry (with jitter).
    pub initial_backoff: Duration,
}

impl OpenAiConfig {
    /// OpenAI's own endpoint, the default base URL.
    pub const DEFAULT_BASE_URL: &'static str = "https://api.openai.com/v1";

    /// A config for `model` at `base_url`, every other field at its default.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAiConfig {
            base_url: base_url.into(),
            model: model.into(),
            ..OpenAiConfig::default()
        }
    }
}

impl Default for OpenAiConfig {
    /// OpenAI's endpoint, no key, **no model** (set one: [`OpenAiBackend::new`] refuses an empty
    /// model), 120 s per attempt, 4 retries starting at 500 ms.
    fn default() -> Self {
        OpenAiConfig {
            base_url: Self::DEFAULT_BASE_URL.to_owned(),
            api_key: None,
            model: String::new(),
            request_timeout: Duration::from_secs(120),
            max_retries: 4,
            initial_backoff: Duration::from_millis(500),
        }
    }
}

/// An OpenAI-compatible HTTP backend. Cheap to share (`Arc`); one connection pool per backend.
#[derive(Debug, Clone)]
pub struct OpenAiBackend {
    config: OpenAiConfig,
    endpoint: reqwest::Url,
    client: reqwest::Client,
}

/// How one attempt failed.
enum Failure {
    /// Give up now with this error.
    Fatal(LlmError),
    /// Worth another try (after `retry_after` when the server said so).
    Retry {
        reason: String,
        retry_after: Option<Duration>,
    },
}

impl OpenAiBackend {
    /// Checks the config (an http(s) base URL, a model) and builds the HTTP client.
    pub fn new(config: OpenAiConfig) -> Result<Self, LlmError> {
        if config.model.trim().is_empty() {
            return Err(LlmError::InvalidRequest(
                "OpenAI backend: no model configured".to_owned(),
            ));
        }
        let url = format!("{}/chat/completions", config.base_url.trim_end_matches('/'));
        let endpoint = reqwest::Url::parse(&url).map_err(|e| {
            LlmError::InvalidRequest(format!(
                "OpenAI backend: bad base URL `{}`: {e}",
                shown_url(&config.base_url)
            ))
        })?;
        if !matches!(endpoint.scheme(), "http" | "https") {
            return Err(LlmError::InvalidRequest(format!(
                "OpenAI backend: base URL `{}` is not http(s)",
                shown_url(&config.base_url)
            )));
        }
        let client = reqwest::Client::builder()
            .build()
            .map_err(|e| LlmError::Backend(format!("cannot build the HTTP client: {}", error_chain(&e))))?;
        Ok(OpenAiBackend {
            config,
            endpoint,
            client,
        })
    }

    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// One POST, bounded by `request_timeout`, its outcome classified.
    async fn attempt(&self, body: &[u8], model: &str) -> Result<ChatResponse, Failure> {
        let mut request = self
            .client
            .post(self.endpoint.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_vec());
        if let Some(key) = &self.config.api_key {
            request = request.bearer_auth(key);
        }
        let exchange = async {
            let response = request.send().await.map_err(send_failure)?;
            let status = response.status();
            let retry_after = response
                .headers()
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(parse_retry_after);
            let bytes = response.bytes().await.map_err(|e| Failure::Retry {
                reason: format!("reading the response failed: {}", error_chain(&e)),
                retry_after: None,
            })?;
            Ok((status, retry_after, bytes))
        };
        let (status, retry_after, bytes) = match tokio::time::timeout(self.config.request_timeout, exchange).await {
            Ok(outcome) => outcome?,
            Err(_) => return Err(Failure::Fatal(LlmError::Timeout)),
        };

        let code = status.as_u16();
        if status.is_success() {
            let wire: WireResponse = serde_json::from_slice(&bytes).map_err(|e| {
                Failure::Fatal(LlmError::Backend(format!(
                    "unparsable response: {e}; body: {}",
                    excerpt(&String::from_utf8_lossy(&bytes), BODY_EXCERPT_CHARS)
                )))
            })?;
            return wire
                .into_chat(model)
                .map_err(|e| Failure::Fatal(LlmError::Backend(format!("unparsable response: {e}"))));
        }
        let body_text = || excerpt(&String::from_utf8_lossy(&bytes), BODY_EXCERPT_CHARS);
        if is_retryable_status(code) {
            return Err(Failure::Retry {
                reason: format!("HTTP {status}: {}", body_text()),
                retry_after,
            });
        }
        if status.is_client_error() {
            let message = error_message(&bytes)
                .map(|m| excerpt(&m, 500))
                .unwrap_or_else(body_text);
            return Err(Failure::Fatal(LlmError::InvalidRequest(format!(
                "HTTP {status}: {message}"
            ))));
        }
        Err(Failure::Fatal(LlmError::Backend(format!(
            "unexpected HTTP {status}: {}",
            body_text()
        ))))
    }
}

/// A failure to send at all: a timeout, a request that cannot be built, else a network error.
fn send_failure(error: reqwest::Error) -> Failure {
    if error.is_timeout() {
        Failure::Fatal(LlmError::Timeout)
    } else if error.is_builder() {
        Failure::Fatal(LlmError::InvalidRequest(error_chain(&error)))
    } else {
        Failure::Retry {
            reason: format!("network error: {}", error_chain(&error)),
            retry_after: None,
        }
    }
}

#[async_trait::async_trait]
impl LlmBackend for OpenAiBackend {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let model = request.model.as_deref().unwrap_or(&self.config.model);
        let body = serde_json::to_vec(&WireRequest::from_chat(request, model))
            .map_err(|e| LlmError::InvalidRequest(format!("cannot encode the request: {e}")))?;
        let mut retry = 0;
        loop {
            match self.attempt(&body, model).await {
                Ok(response) => return Ok(response),
                Err(Failure::Fatal(error)) => return Err(error),
                Err(Failure::Retry { reason, retry_after }) => {
                    if retry >= self.config.max_retries {
                        return Err(LlmError::Backend(format!(
                            "{reason} (gave up after {} attempts)",
                            retry + 1
                        )));
                    }
                    let wait = retry_after.unwrap_or_else(|| backoff(self.config.initial_backoff, retry));
                    tokio::time::sleep(wait).await;
                    retry += 1;
                }
            }
        }
    }

    fn default_model(&self) -> &str {
        &self.config.model
    }

    fn describe(&self) -> String {
        format!("openai-compatible {}", shown_url(&self.config.base_url))
    }
}

/// `url` as it may be shown (terminals, spans, records): any user info (`user:key@`) in its
/// authority replaced by `***`.
pub fn shown_url(url: &str) -> String {
    crate::error::without_user_info(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_its_user_info() {
        assert_eq!(shown_url("http://user:KEY@host:8000/v1"), "http://***@host:8000/v1");
        assert_eq!(shown_url("https://host/v1?x=a@b"), "https://host/v1?x=a@b");
        assert_eq!(shown_url("http://host:1/v1"), "http://host:1/v1");
        assert_eq!(shown_url("http://a@b@host"), "http://***@host");
    }
    #[test]
    fn new_checks_the_config() {
        let backend = OpenAiBackend::new(OpenAiConfig::new("http://127.0.0.1:9/v1/", "m")).unwrap();
        assert_eq!(backend.endpoint.as_str(), "http://127.0.0.1:9/v1/chat/completions");
        assert_eq!(backend.default_model(), "m");
        assert_eq!(backend.describe(), "openai-compatible http://127.0.0.1:9/v1/");

        for (url, model, needle) in [
            ("http://x/v1", "", "no model"),
            ("not a url", "m", "bad base URL"),
            ("ftp://x/v1", "m", "not http"),
        ] {
            match OpenAiBackend::new(OpenAiConfig::new(url, model)) {
                Err(LlmError::InvalidRequest(message)) => assert!(message.contains(needle), "{message}"),
                other => panic!("{url} {model}: {other:?}"),
            }
        }
    }
}
