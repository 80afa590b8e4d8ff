//! How an [`HttpStoreClient`](crate::HttpStoreClient) connects and retries.

use std::time::Duration;

/// Largest span JSON sent in one request: under the store server's default 16 MiB body limit.
pub const DEFAULT_MAX_SPAN_BYTES: usize = 15 << 20;

#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Sent as `Authorization: Bearer <token>`.
    pub token: Option<String>,
    /// Limit of one request (a `wait_for_rollouts` gets its own wait on top).
    pub request_timeout: Duration,
    /// Waits before each retry of a request that failed with 5xx, 408 or a network error; its
    /// length is the number of retries (Agent-lightning's client: 1 s, 2 s, 5 s).
    pub retry_delays: Vec<Duration>,
    /// Largest span JSON sent; a larger span is clipped to fit (see `fit.rs`).
    pub max_span_bytes: usize,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            token: None,
            request_timeout: Duration::from_secs(30),
            retry_delays: vec![Duration::from_secs(1), Duration::from_secs(2), Duration::from_secs(5)],
            max_span_bytes: DEFAULT_MAX_SPAN_BYTES,
        }
    }
}
