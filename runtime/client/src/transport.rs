//! Sending one request: URL building, the bearer token, JSON bodies, retries with backoff and a
//! health probe on 5xx / 408 / network errors, and 4xx answers turned into `StoreError`s.

use crate::options::ClientOptions;
use agl_store::{StoreError, StoreResult};
use reqwest::{Client, Method, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::time::Duration;

/// A LightningStore reached over HTTP. Cheap to clone (one shared connection pool).
#[derive(Debug, Clone)]
pub struct HttpStoreClient {
    client: Client,
    base: String,
    options: ClientOptions,
}

/// What a 404 means for the call that got it.
pub(crate) type NotFound = Box<dyn FnOnce() -> StoreError + Send>;

/// A request to send: method, path under `/v1/agl`, optional query and body, extra timeout.
pub(crate) struct Call<'a, B: Serialize + ?Sized, Q: Serialize + ?Sized = ()> {
    pub method: Method,
    pub path: String,
    pub body: Option<&'a B>,
    pub query: Option<&'a Q>,
    pub extra_timeout: Duration,
}

impl<'a, B: Serialize + ?Sized> Call<'a, B> {
    pub(crate) fn post(path: String, body: &'a B) -> Self {
        Self {
            method: Method::POST,
            path,
            body: Some(body),
            query: None,
            extra_timeout: Duration::ZERO,
        }
    }
}

impl Call<'static, ()> {
    pub(crate) fn get(path: String) -> Self {
        Self {
            method: Method::GET,
            path,
            body: None,
            query: None,
            extra_timeout: Duration::ZERO,
        }
    }
}

/// Percent-encodes one path segment (ids are plain, but a caller may pass anything).
pub(crate) fn segment(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn is_retryable(status: StatusCode) -> bool {
    status.is_server_error() || status == StatusCode::REQUEST_TIMEOUT
}

/// The `detail` of an error body, else the body text.
fn detail_of(text: &str) -> String {
    serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| v.get("detail").cloned())
        .map(|d| d.as_str().map_or_else(|| d.to_string(), str::to_owned))
        .unwrap_or_else(|| text.chars().take(500).collect())
}

impl HttpStoreClient {
    /// How this client connects, retries and sizes spans.
    pub fn options(&self) -> &ClientOptions {
        &self.options
    }

    /// A client for the store at `base_url` (e.g. `http://127.0.0.1:4747`).
    pub fn new(base_url: &str, options: ClientOptions) -> StoreResult<Self> {
        let client = Client::builder()
            .pool_idle_timeout(Duration::from_secs(90))
            .tcp_nodelay(true)
            .build()
            .map_err(|e| StoreError::Backend(format!("cannot build the HTTP client: {e}")))?;
        let base = base_url.trim_end_matches('/').to_owned();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(StoreError::InvalidArgument(format!(
                "store URL must start with http:// or https://, got '{base_url}'"
            )));
        }
        Ok(Self { client, base, options })
    }

    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// `GET /v1/agl/health`: whether the server answers.
    pub async fn health(&self) -> bool {
        let url = format!("{}/v1/agl/health", self.base);
        matches!(
            self.client.get(url).timeout(Duration::from_secs(5)).send().await,
            Ok(response) if response.status().is_success()
        )
    }

    /// Sends `call`, retrying transient failures; decodes the JSON answer. A 404 becomes
    /// `not_found()`, other 4xx answers `InvalidArgument` with the server's detail.
    pub(crate) async fn send<B, Q, T>(&self, call: Call<'_, B, Q>, not_found: NotFound) -> StoreResult<T>
    where
        B: Serialize + ?Sized,
        Q: Serialize + ?Sized,
        T: DeserializeOwned,
    {
        let (method, url) = (call.method.clone(), self.url(&call));
        match self.exchange(call).await? {
            Ok(text) => decode(&method, &url, &text),
            Err((StatusCode::NOT_FOUND, _)) => Err(not_found()),
            Err((status, detail)) => Err(final_error(status, detail)),
        }
    }

    /// Like [`Self::send`] for lookups: a 404 or a `null` answer is `None`.
    pub(crate) async fn send_optional<B, Q, T>(&self, call: Call<'_, B, Q>) -> StoreResult<Option<T>>
    where
        B: Serialize + ?Sized,
        Q: Serialize + ?Sized,
        T: DeserializeOwned,
    {
        let (method, url) = (call.method.clone(), self.url(&call));
        match self.exchange(call).await? {
            Ok(text) => decode(&method, &url, &text),
            Err((StatusCode::NOT_FOUND, _)) => Ok(None),
            Err((status, detail)) => Err(final_error(status, detail)),
        }
    }

    /// `path` under `/v1/agl/`, or, starting with `/`, under the server's root (agl-host's own
    /// routes, `/v1/agl-host/...`).
    fn url<B: Serialize + ?Sized, Q: Serialize + ?Sized>(&self, call: &Call<'_, B, Q>) -> String {
        match call.path.strip_prefix('/') {
            Some(path) => format!("{}/{path}", self.base),
            None => format!("{}/v1/agl/{}", self.base, call.path),
        }
    }

    /// `PUT /v1/agl-host/run` (agl-host's own route, not the 0.3.0 API): keeps `record` as the
    /// store's run record. A store keeping another run's record refuses it (`InvalidArgument`
    /// with the server's reason).
    pub async fn save_run_record(&self, record: &agl_store::RunRecord) -> StoreResult<agl_store::RunRecord> {
        let call = Call {
            method: Method::PUT,
            path: "/v1/agl-host/run".into(),
            body: Some(record),
            query: None::<&()>,
            extra_timeout: Duration::ZERO,
        };
        let missing: NotFound = Box::new(|| {
            StoreError::InvalidArgument(
                "the store has no PUT /v1/agl-host/run route (not an `agl-host store` of this version)".into(),
            )
        });
        self.send(call, missing).await
    }

    /// `GET /v1/agl-host/run`: the store's run record; `None` when it keeps none (or has no such
    /// route).
    pub async fn run_record(&self) -> StoreResult<Option<agl_store::RunRecord>> {
        self.send_optional(Call::get("/v1/agl-host/run".into())).await
    }

    /// The answer's text on success, or a final (non-retryable) status with its detail; transient
    /// failures are retried and, when the retries run out, a `Backend` error.
    async fn exchange<B, Q>(&self, call: Call<'_, B, Q>) -> StoreResult<Result<String, (StatusCode, String)>>
    where
        B: Serialize + ?Sized,
        Q: Serialize + ?Sized,
    {
        let url = self.url(&call);
        let mut delays = self.options.retry_delays.iter();
        loop {
            let mut request = self
                .client
                .request(call.method.clone(), &url)
                .timeout(self.options.request_timeout + call.extra_timeout);
            if let Some(token) = &self.options.token {
                request = request.bearer_auth(token);
            }
            if let Some(query) = call.query {
                request = request.query(query);
            }
            if let Some(body) = call.body {
                request = request.json(body);
            }
            let transient = match request.send().await {
                Ok(response) => {
                    let status = response.status();
                    let text = response
                        .text()
                        .await
                        .map_err(|e| StoreError::Backend(format!("{} {url}: reading the answer: {e}", call.method)))?;
                    if status.is_success() {
                        return Ok(Ok(text));
                    }
                    if !is_retryable(status) {
                        return Ok(Err((status, detail_of(&text))));
                    }
                    format!("{status}: {}", detail_of(&text))
                }
                Err(e) => format!("{e}"),
            };
            let Some(delay) = delays.next() else {
                return Err(StoreError::Backend(format!(
                    "{} {url} failed after {} retries: {transient}",
                    call.method,
                    self.options.retry_delays.len()
                )));
            };
            tracing::warn!("{} {url}: {transient}; retrying in {delay:?}", call.method);
            tokio::time::sleep(*delay).await;
            // Wait for the server to come back before resending (at most one more delay).
            if !self.health().await {
                tokio::time::sleep(*delay).await;
            }
        }
    }
}

fn decode<T: DeserializeOwned>(method: &Method, url: &str, text: &str) -> StoreResult<T> {
    serde_json::from_str(text)
        .map_err(|e| StoreError::Backend(format!("{method} {url}: unexpected answer ({e}): {}", detail_of(text))))
}

fn final_error(status: StatusCode, detail: String) -> StoreError {
    match status {
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
            StoreError::Backend(format!("the store refused the request ({status}): {detail}"))
        }
        _ => StoreError::InvalidArgument(detail),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_segments_are_escaped() {
        assert_eq!(segment("ro-1a2b"), "ro-1a2b");
        assert_eq!(segment("a/b c"), "a%2Fb%20c");
    }

    #[test]
    fn error_details_are_read_from_the_body() {
        assert_eq!(detail_of(r#"{"detail": "bad limit"}"#), "bad limit");
        assert_eq!(detail_of(r#"{"detail": [{"loc": 1}]}"#), r#"[{"loc":1}]"#);
        assert_eq!(detail_of("plain"), "plain");
    }

    #[test]
    fn a_url_needs_a_scheme() {
        assert!(HttpStoreClient::new("127.0.0.1:4747", ClientOptions::default()).is_err());
        let client = HttpStoreClient::new("http://127.0.0.1:4747/", ClientOptions::default()).expect("valid");
        assert_eq!(client.base_url(), "http://127.0.0.1:4747");
    }
}
