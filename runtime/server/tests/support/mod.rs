//! Shared by the integration tests: a real server on 127.0.0.1:0 over a fresh in-memory store
//! (or over a store the test opened, e.g. a database backend), and a small JSON-over-HTTP client.

#![allow(dead_code)]

use agl_server::{ServerHandle, ServerOptions, serve};
use agl_store::{InMemoryLightningStore, LightningStore, StoreBackend};
use serde_json::Value;
use std::sync::Arc;

/// A running server, the store it serves, and a client for it.
pub struct TestServer<S = InMemoryLightningStore> {
    pub handle: ServerHandle,
    pub store: S,
    pub client: reqwest::Client,
    pub base: String,
}

/// An answer: the status and the body (parsed as JSON when it is JSON).
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub text: String,
    pub content_type: Option<String>,
    pub headers: reqwest::header::HeaderMap,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("answer {} is not JSON ({e}): {}", self.status, self.text))
    }

    /// Asserts a JSON error answer `{"detail": "<string>"}` with this status; returns the detail.
    pub fn error(&self, status: u16) -> String {
        assert_eq!(self.status, status, "body: {}", self.text);
        assert_eq!(self.content_type.as_deref(), Some("application/json"), "{}", self.text);
        let body = self.json();
        let object = body.as_object().unwrap_or_else(|| panic!("not an object: {body}"));
        assert_eq!(object.len(), 1, "only `detail`: {body}");
        body["detail"]
            .as_str()
            .unwrap_or_else(|| panic!("detail is not a string: {body}"))
            .to_owned()
    }
}

impl TestServer {
    pub async fn start() -> Self {
        Self::with_options(ServerOptions::default()).await
    }

    /// Starts on 127.0.0.1:0 whatever `options.host`/`port` say.
    pub async fn with_options(options: ServerOptions) -> Self {
        let store = InMemoryLightningStore::new();
        let shared: Arc<dyn LightningStore> = Arc::new(store.clone());
        TestServer::serving(store, shared, options).await
    }
}

impl TestServer<Arc<dyn StoreBackend>> {
    /// Serves `store` (any backend: memory, SQLite, PostgreSQL) with the default options.
    pub async fn on(store: Arc<dyn StoreBackend>) -> Self {
        let shared: Arc<dyn LightningStore> = store.clone();
        TestServer::serving(store, shared, ServerOptions::default()).await
    }
}

impl<S> TestServer<S> {
    /// Serves `shared` (`store` is the same store, as the test wants to reach it) on
    /// 127.0.0.1:0 whatever `options.host`/`port` say.
    async fn serving(store: S, shared: Arc<dyn LightningStore>, options: ServerOptions) -> Self {
        let options = ServerOptions { port: 0, ..options };
        let handle = serve(shared, options).await.expect("server starts");
        let base = handle.url();
        Self {
            handle,
            store,
            // A hung server fails the test instead of hanging it.
            client: reqwest::Client::builder()
                .timeout(std::time::Duration::from_secs(60))
                .build()
                .expect("HTTP client"),
            base,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Sends `method path` with an optional raw body and extra headers.
    pub async fn send(&self, method: &str, path: &str, body: Option<Vec<u8>>, headers: &[(&str, &str)]) -> Answer {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut request = self.client.request(method, self.url(path));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if let Some(body) = body {
            request = request.body(body);
        }
        let response = request.send().await.expect("request is answered");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let content_type = headers
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let text = response.text().await.expect("body");
        Answer {
            status,
            text,
            content_type,
            headers,
        }
    }

    pub async fn get(&self, path: &str) -> Answer {
        self.send("GET", path, None, &[]).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> Answer {
        self.send(
            "POST",
            path,
            Some(body.to_string().into_bytes()),
            &[("content-type", "application/json")],
        )
        .await
    }

    pub async fn post_raw(&self, path: &str, body: &str) -> Answer {
        self.send(
            "POST",
            path,
            Some(body.as_bytes().to_vec()),
            &[("content-type", "application/json")],
        )
        .await
    }

    /// POST that must answer `status`; returns the JSON body.
    pub async fn post_ok(&self, path: &str, body: &Value, status: u16) -> Value {
        let answer = self.post(path, body).await;
        assert_eq!(answer.status, status, "POST {path} {body}: {}", answer.text);
        answer.json()
    }

    /// GET that must answer 200; returns the JSON body.
    pub async fn get_ok(&self, path: &str) -> Value {
        let answer = self.get(path).await;
        assert_eq!(answer.status, 200, "GET {path}: {}", answer.text);
        answer.json()
    }
}
