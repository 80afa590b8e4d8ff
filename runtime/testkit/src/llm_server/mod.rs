//! A mock OpenAI endpoint for tests and benches: an OpenAI-compatible HTTP front (axum on tokio)
//! for any [`LlmBackend`] (a `ScriptedBackend`, mostly): `POST /v1/chat/completions` (streamed as
//! server-sent events when asked) and `GET /v1/models`, with [`Faults`] to script failing
//! statuses and delays, so that clients' retries and timeouts can be tested for real over
//! loopback. The JSON is agl-llm's own (`agl_llm::openai_json`).

mod faults;
mod sse;

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use agl_llm::{ChatRequest, LlmBackend, LlmError, openai_json};
pub use faults::{Fault, Faults};

/// Request bodies up to this size are accepted (long prompts).
const MAX_BODY_BYTES: usize = 32 << 20;
/// How long [`ServerHandle::shutdown`] waits for open connections before cutting them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// What the server has seen, for tests.
#[derive(Debug, Default)]
struct Seen {
    chat_requests: AtomicU64,
    last_request: Mutex<Option<ChatRequest>>,
    last_authorization: Mutex<Option<String>>,
    last_body: Mutex<Option<serde_json::Value>>,
}

struct AppState {
    backend: Arc<dyn LlmBackend>,
    faults: Faults,
    seen: Arc<Seen>,
    shutdown: watch::Receiver<bool>,
}

/// A running server; dropping it stops the server too (without waiting).
#[derive(Debug)]
pub struct ServerHandle {
    addr: SocketAddr,
    seen: Arc<Seen>,
    shutdown: watch::Sender<bool>,
    task: JoinHandle<io::Result<()>>,
}

impl ServerHandle {
    /// The OpenAI base URL, `http://IP:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The bound address (the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Chat-completion requests received so far, faulted ones included.
    pub fn chat_requests(&self) -> u64 {
        self.seen.chat_requests.load(Ordering::SeqCst)
    }

    /// The latest chat request that reached the backend, as the server parsed it.
    pub fn last_request(&self) -> Option<ChatRequest> {
        self.seen
            .last_request
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The `Authorization` header of the latest chat request (`None` when it had none).
    pub fn last_authorization(&self) -> Option<String> {
        self.seen
            .last_authorization
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The JSON body of the latest chat request, as sent (fields this crate does not read
    /// included, e.g. `return_token_ids`); `None` before any, or when it was not JSON.
    pub fn last_body(&self) -> Option<serde_json::Value> {
        self.seen
            .last_body
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Stops accepting, lets open exchanges finish (at most 2 s) and waits for the server to end.
    pub async fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        if tokio::time::timeout(SHUTDOWN_GRACE, &mut self.task).await.is_err() {
            self.task.abort();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
    }
}

/// Serves `backend` on `addr` (port 0 picks a free port) until the handle is shut down or dropped.
pub async fn serve(backend: Arc<dyn LlmBackend>, addr: SocketAddr) -> io::Result<ServerHandle> {
    serve_with_faults(backend, addr, Faults::default()).await
}

/// [`serve`], misbehaving as `faults` says (test hook).
pub async fn serve_with_faults(
    backend: Arc<dyn LlmBackend>,
    addr: SocketAddr,
    faults: Faults,
) -> io::Result<ServerHandle> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let (shutdown, shutdown_rx) = watch::channel(false);
    let seen = Arc::new(Seen::default());
    let state = Arc::new(AppState {
        backend,
        faults,
        seen: seen.clone(),
        shutdown: shutdown_rx.clone(),
    });
    let app = Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/models", get(models))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state);
    let mut stop = shutdown_rx;
    let task = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                // Also ends when the handle (the sender) is gone.
                let _ = stop.wait_for(|stop| *stop).await;
            })
            .await
    });
    Ok(ServerHandle {
        addr,
        seen,
        shutdown,
        task,
    })
}

/// An OpenAI-shaped error answer.
fn error_response(status: StatusCode, kind: &str, message: impl Into<String>) -> Response {
    (status, axum::Json(openai_json::error_body(kind, message.into()))).into_response()
}

fn llm_error_response(error: LlmError) -> Response {
    match error {
        LlmError::InvalidRequest(message) => error_response(StatusCode::BAD_REQUEST, "invalid_request_error", message),
        LlmError::Backend(message) => error_response(StatusCode::BAD_GATEWAY, "backend_error", message),
        LlmError::Timeout => error_response(StatusCode::GATEWAY_TIMEOUT, "timeout", LlmError::Timeout.to_string()),
    }
}

fn fault_response(fault: &Fault) -> Response {
    let status = StatusCode::from_u16(fault.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = match &fault.body {
        Some(body) => (
            status,
            [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
            body.clone(),
        )
            .into_response(),
        None => {
            let kind = if status.is_client_error() {
                "invalid_request_error"
            } else {
                "server_error"
            };
            error_response(status, kind, fault.message.clone())
        }
    };
    if let Some(value) = fault.retry_after.as_deref().and_then(|v| HeaderValue::from_str(v).ok()) {
        response.headers_mut().insert(RETRY_AFTER, value);
    }
    response
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

async fn chat_completions(State(state): State<Arc<AppState>>, headers: HeaderMap, body: Bytes) -> Response {
    let index = state.seen.chat_requests.fetch_add(1, Ordering::SeqCst);
    let authorization = headers
        .get(AUTHORIZATION)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    *state
        .seen
        .last_authorization
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = authorization;
    let raw: Option<serde_json::Value> = serde_json::from_slice(&body).ok();
    let stream = raw.as_ref().and_then(|b| b.get("stream")) == Some(&serde_json::Value::Bool(true));
    let include_usage =
        raw.as_ref().and_then(|b| b.pointer("/stream_options/include_usage")) == Some(&serde_json::Value::Bool(true));
    *state.seen.last_body.lock().unwrap_or_else(PoisonError::into_inner) = raw;

    if !state.faults.delay.is_zero() {
        let mut shutdown = state.shutdown.clone();
        tokio::select! {
            () = tokio::time::sleep(state.faults.delay) => {}
            _ = shutdown.wait_for(|stop| *stop) => {
                return error_response(StatusCode::SERVICE_UNAVAILABLE, "server_error", "server shutting down");
            }
        }
    }
    if let Some(fault) = usize::try_from(index).ok().and_then(|i| state.faults.leading.get(i)) {
        return fault_response(fault);
    }

    let json: serde_json::Value = match serde_json::from_slice(&body) {
        Ok(json) => json,
        Err(e) => {
            return error_response(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                format!("invalid body: {e}"),
            );
        }
    };
    let request = match openai_json::chat_request(&json) {
        Ok(request) => request,
        Err(message) => return error_response(StatusCode::BAD_REQUEST, "invalid_request_error", message),
    };
    *state.seen.last_request.lock().unwrap_or_else(PoisonError::into_inner) = Some(request.clone());

    match state.backend.chat(&request).await {
        Ok(response) => {
            let id = format!("chatcmpl-{}", index + 1);
            if stream {
                let events = sse::events(&response, &id, unix_now(), include_usage);
                let body = sse::body(events, state.faults.stream_gap);
                return ([(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"))], body).into_response();
            }
            axum::Json(openai_json::response_body(&response, id, unix_now())).into_response()
        }
        Err(error) => llm_error_response(error),
    }
}

async fn models(State(state): State<Arc<AppState>>) -> Response {
    let model = json!({"id": state.backend.default_model(), "object": "model", "created": 0, "owned_by": "agl-llm"});
    axum::Json(json!({"object": "list", "data": [model]})).into_response()
}

async fn not_found(method: Method, uri: Uri) -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        "invalid_request_error",
        format!("no route for {method} {}", uri.path()),
    )
}
