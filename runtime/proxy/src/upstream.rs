//! Where the proxy sends a call: an OpenAI-compatible server, to which the client's body is
//! forwarded as sent (but for what the proxy sets: model, defaults, RL fields) with retries on
//! 408/409/429/5xx and network errors, or any other `agl-llm` backend (the scripted one), asked
//! through `LlmBackend::chat`. Several upstreams share the load by rollout: a rollout's calls all
//! go to the one its id picks ([`Upstreams::pick`]), so a server's prefix cache serves its whole
//! conversation; calls of no rollout take them in turn.

use crate::error::ProxyError;
use agl_llm::openai_json::{backoff, parse_retry_after};
use agl_llm::{LlmBackend, OpenAiConfig};
use bytes::Bytes;
use reqwest::header::{CONTENT_TYPE, RETRY_AFTER};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// One place calls go.
#[derive(Clone)]
pub enum Upstream {
    /// An OpenAI-compatible server (vLLM, llama.cpp, Ollama, OpenAI...).
    Http(Arc<HttpUpstream>),
    /// Any backend of `agl-llm` (the scripted one, a test double): requests are parsed into
    /// its `ChatRequest` and its answers written as completions.
    Backend(Arc<dyn LlmBackend>),
}

/// An OpenAI-compatible server and the client that talks to it.
pub struct HttpUpstream {
    config: OpenAiConfig,
    endpoint: reqwest::Url,
    client: reqwest::Client,
}

/// A bad upstream configuration.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("bad LLM endpoint `{0}`: {1}")]
    BadUrl(String, String),
    #[error("no model configured for {0}")]
    NoModel(String),
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

impl Upstream {
    /// An OpenAI-compatible server (`config.base_url` is its API root, `.../v1`). The key, the
    /// timeout of one exchange and the retries come from `config`.
    pub fn openai(config: OpenAiConfig) -> Result<Self, UpstreamError> {
        if config.model.trim().is_empty() {
            return Err(UpstreamError::NoModel(config.base_url));
        }
        let url = format!("{}/chat/completions", config.base_url.trim_end_matches('/'));
        let endpoint =
            reqwest::Url::parse(&url).map_err(|e| UpstreamError::BadUrl(config.base_url.clone(), e.to_string()))?;
        if !matches!(endpoint.scheme(), "http" | "https") {
            return Err(UpstreamError::BadUrl(config.base_url, "not http(s)".into()));
        }
        let client = reqwest::Client::builder()
            .build()
            .map_err(|e| UpstreamError::Client(e.to_string()))?;
        Ok(Upstream::Http(Arc::new(HttpUpstream {
            config,
            endpoint,
            client,
        })))
    }

    /// Any `agl-llm` backend.
    pub fn backend(backend: Arc<dyn LlmBackend>) -> Self {
        Upstream::Backend(backend)
    }

    /// The configuration of an OpenAI-compatible server (none for another backend).
    pub(crate) fn openai_config(&self) -> Option<&OpenAiConfig> {
        match self {
            Upstream::Http(http) => Some(&http.config),
            Upstream::Backend(_) => None,
        }
    }

    /// The model used when neither the resources nor the request name one.
    pub fn default_model(&self) -> &str {
        match self {
            Upstream::Http(http) => &http.config.model,
            Upstream::Backend(backend) => backend.default_model(),
        }
    }

    /// For logs and spans: the server's API root or the backend's name (never a key).
    pub fn describe(&self) -> String {
        match self {
            Upstream::Http(http) => format!("openai-compatible {}", agl_llm::shown_url(&http.config.base_url)),
            Upstream::Backend(backend) => backend.describe(),
        }
    }
}

/// The upstreams of one proxy (at least one).
#[derive(Clone)]
pub struct Upstreams {
    all: Vec<Upstream>,
    /// Calls of no rollout so far: they take the upstreams in turn.
    unattributed: Arc<AtomicUsize>,
}

impl Upstreams {
    /// `None` when `upstreams` is empty.
    pub fn new(upstreams: Vec<Upstream>) -> Option<Self> {
        (!upstreams.is_empty()).then(|| Upstreams {
            all: upstreams,
            unattributed: Arc::default(),
        })
    }

    /// The upstream of `rollout_id`'s calls: the same one for every call of a rollout (FNV-1a of
    /// the id, stable across processes and builds). Calls of no rollout take them in turn.
    pub fn pick(&self, rollout_id: Option<&str>) -> &Upstream {
        let count = self.all.len();
        let index = match rollout_id {
            Some(id) => {
                let hash = id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                    (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
                });
                // FNV-1a's low bits are only the parity of the bytes' (two upstreams: ids made
                // together, which share most digits, often went to one): mixed as MurmurHash3's
                // finaliser does.
                let hash = (hash ^ (hash >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
                let hash = hash ^ (hash >> 33);
                // The remainder is below `count`, a usize.
                usize::try_from(hash % count as u64).unwrap_or(0)
            }
            None => self.unattributed.fetch_add(1, Ordering::Relaxed) % count,
        };
        &self.all[index]
    }

    pub fn all(&self) -> &[Upstream] {
        &self.all
    }
}

/// 408, 409, 429 and every 5xx are tried again (Agent-lightning 1.0's proxy set).
pub(crate) fn is_retryable(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || (500..600).contains(&status)
}

/// What one failed try says about the next.
enum Try {
    Again {
        why: ProxyError,
        retry_after: Option<Duration>,
    },
    GiveUp(ProxyError),
}

impl HttpUpstream {
    pub fn timeout(&self) -> Duration {
        self.config.request_timeout
    }

    /// POSTs `body` until an answer is a success (its headers read; the body is the caller's),
    /// retrying as the config says. Returns the answer and how many retries it took.
    pub(crate) async fn send(&self, body: Bytes) -> Result<(reqwest::Response, u32), ProxyError> {
        let mut retries = 0;
        loop {
            let outcome = match self.try_once(body.clone()).await {
                Ok(response) => return Ok((response, retries)),
                Err(outcome) => outcome,
            };
            match outcome {
                Try::GiveUp(error) => return Err(error),
                Try::Again { why, .. } if retries >= self.config.max_retries => return Err(why),
                Try::Again { why, retry_after } => {
                    let wait = retry_after.unwrap_or_else(|| backoff(self.config.initial_backoff, retries));
                    tracing::debug!(upstream = %self.config.base_url, retry = retries + 1, ?wait, reason = %why.describe(), "LLM proxy: trying the upstream again");
                    tokio::time::sleep(wait).await;
                    retries += 1;
                }
            }
        }
    }

    async fn try_once(&self, body: Bytes) -> Result<reqwest::Response, Try> {
        let mut request = self
            .client
            .post(self.endpoint.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(body);
        if let Some(key) = &self.config.api_key {
            request = request.bearer_auth(key);
        }
        let timeout = self.config.request_timeout;
        let response = match tokio::time::timeout(timeout, request.send()).await {
            Err(_) => {
                return Err(Try::Again {
                    why: ProxyError::GatewayTimeout(format!(
                        "the upstream {} did not answer within {timeout:?}",
                        self.config.base_url
                    )),
                    retry_after: None,
                });
            }
            Ok(Err(error)) if error.is_builder() => return Err(Try::GiveUp(ProxyError::BadGateway(error.to_string()))),
            Ok(Err(error)) => {
                return Err(Try::Again {
                    why: ProxyError::BadGateway(format!(
                        "the upstream {} cannot be reached: {}",
                        self.config.base_url,
                        agl_llm::openai_json::error_chain(&error)
                    )),
                    retry_after: None,
                });
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status().as_u16();
        if response.status().is_success() {
            return Ok(response);
        }
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let body = read_body(response, timeout).await.unwrap_or_default();
        let error = ProxyError::Upstream { status, body };
        if is_retryable(status) {
            Err(Try::Again {
                why: error,
                retry_after,
            })
        } else {
            Err(Try::GiveUp(error))
        }
    }
}

/// The whole body of `response`, within `timeout`.
pub(crate) async fn read_body(response: reqwest::Response, timeout: Duration) -> Result<Bytes, ProxyError> {
    match tokio::time::timeout(timeout, read_bounded(response)).await {
        Err(_) => Err(ProxyError::GatewayTimeout(format!(
            "the upstream's answer did not arrive within {timeout:?}"
        ))),
        Ok(Err(error)) => Err(ProxyError::BadGateway(format!(
            "reading the upstream's answer failed: {}",
            agl_llm::openai_json::error_chain(&error)
        ))),
        Ok(Ok(None)) => Err(ProxyError::BadGateway(format!(
            "the upstream's answer is longer than {MAX_ANSWER_BYTES} bytes"
        ))),
        Ok(Ok(Some(bytes))) => Ok(bytes),
    }
}

/// The longest whole (not streamed) answer read from an upstream.
const MAX_ANSWER_BYTES: usize = 64 << 20;

/// The answer's body, or `None` once it passes [`MAX_ANSWER_BYTES`].
async fn read_bounded(mut response: reqwest::Response) -> Result<Option<Bytes>, reqwest::Error> {
    if response.content_length().is_some_and(|n| n > MAX_ANSWER_BYTES as u64) {
        return Ok(None);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(Bytes::from(body)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rollout_always_gets_the_same_upstream_and_rollouts_spread() {
        let upstreams: Vec<Upstream> = (0..3)
            .map(|i| Upstream::openai(OpenAiConfig::new(format!("http://127.0.0.1:{}/v1", 9000 + i), "m")).unwrap())
            .collect();
        let upstreams = Upstreams::new(upstreams).unwrap();
        let name = |u: &Upstream| u.describe();
        assert_eq!(name(upstreams.pick(Some("ro-1"))), name(upstreams.pick(Some("ro-1"))));
        let used: std::collections::HashSet<String> = (0..30)
            .map(|i| name(upstreams.pick(Some(&format!("ro-{i}")))))
            .collect();
        assert_eq!(used.len(), 3, "30 rollouts use every upstream");
        let turns: Vec<String> = (0..3).map(|_| name(upstreams.pick(None))).collect();
        assert_eq!(
            turns.iter().collect::<std::collections::HashSet<_>>().len(),
            3,
            "{turns:?}"
        );
        assert!(Upstreams::new(Vec::new()).is_none());
    }

    #[test]
    fn retryable_statuses_are_agent_lightning_1_0s() {
        for status in [408, 409, 429, 500, 503] {
            assert!(is_retryable(status), "{status}");
        }
        for status in [400, 401, 404, 422] {
            assert!(!is_retryable(status), "{status}");
        }
    }

    #[test]
    fn a_bad_config_is_refused() {
        assert!(matches!(
            Upstream::openai(OpenAiConfig::new("http://x/v1", "")),
            Err(UpstreamError::NoModel(_))
        ));
        assert!(matches!(
            Upstream::openai(OpenAiConfig::new("ftp://x/v1", "m")),
            Err(UpstreamError::BadUrl(..))
        ));
    }
}
