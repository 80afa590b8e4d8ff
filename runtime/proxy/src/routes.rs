//! The proxy's routes and the life of one call: let in unless paused, the body read within its
//! bounds, the rollout and attempt looked up (with the model and sampling parameters its
//! resources' `proxy_llm` names, and its mode), the body prepared (model, defaults, token ids),
//! forwarded to the rollout's upstream, the answer relayed (a stream event by event) and the
//! call recorded as a span of the attempt.

use crate::ProxyConfig;
use crate::error::ProxyError;
use crate::pause::{InFlight, Pause, PauseRequest};
use crate::record::{CallRecord, Outcome, now, write};
use crate::stream::{Assembler, ChannelBody, DONE, EventSplitter, event_data, events_of};
use crate::upstream::{HttpUpstream, Upstream, read_body};
use agl_llm::openai_json::{chat_request, chat_response, response_body};
use agl_llm::{ChatRequest, ChatResponse, LlmError};
use agl_store::{AttemptQuery, LightningStore, Resource, StoreError};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Request, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Events buffered between the upstream and a slow client.
const STREAM_BUFFER: usize = 16;

/// What every route sees.
pub(crate) struct Shared {
    pub store: Arc<dyn LightningStore>,
    pub config: ProxyConfig,
    pub pause: Pause,
}

pub(crate) fn router(shared: Arc<Shared>) -> Router {
    const ATTEMPT: &str = "/rollout/{rollout_id}/attempt/{attempt_id}";
    const ATTEMPT_MODE: &str = "/proxy/rollout/{rollout_id}/attempt/{attempt_id}/mode/{mode}/openai";
    Router::new()
        .route("/v1/chat/completions", post(plain))
        .route("/v1/models", get(models))
        .route(&format!("{ATTEMPT}/v1/chat/completions"), post(attempt))
        .route(&format!("{ATTEMPT}/v1/models"), get(models))
        .route(&format!("{ATTEMPT_MODE}/v1/chat/completions"), post(attempt_in_mode))
        .route(&format!("{ATTEMPT_MODE}/v1/models"), get(models))
        .route("/proxy/pause", post(pause))
        .route("/proxy/resume", post(resume))
        .route("/proxy/state", get(state))
        .with_state(shared)
}

/// The attempt a route names, and the mode when the route says it.
struct Route {
    rollout_id: String,
    attempt_id: String,
    mode: Option<String>,
}

async fn plain(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    answer(shared, None, request)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn attempt(
    State(shared): State<Arc<Shared>>,
    Path((rollout_id, attempt_id)): Path<(String, String)>,
    request: Request,
) -> Response {
    let route = Route {
        rollout_id,
        attempt_id,
        mode: None,
    };
    answer(shared, Some(route), request)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn attempt_in_mode(
    State(shared): State<Arc<Shared>>,
    Path((rollout_id, attempt_id, mode)): Path<(String, String, String)>,
    request: Request,
) -> Response {
    if mode != "train" && mode != "val" {
        return ProxyError::NotFound(format!("unsupported proxy mode `{mode}` (train or val)")).into_response();
    }
    let route = Route {
        rollout_id,
        attempt_id,
        mode: Some(mode),
    };
    answer(shared, Some(route), request)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn models(State(shared): State<Arc<Shared>>) -> Response {
    let mut ids: Vec<&str> = shared
        .config
        .upstreams
        .all()
        .iter()
        .map(Upstream::default_model)
        .collect();
    ids.dedup();
    let data: Vec<Value> = ids
        .into_iter()
        .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "agl-host"}))
        .collect();
    axum::Json(json!({"object": "list", "data": data})).into_response()
}

async fn pause(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let request = if body.iter().all(u8::is_ascii_whitespace) {
        PauseRequest::default()
    } else {
        match serde_json::from_slice(&body) {
            Ok(request) => request,
            Err(e) => {
                return ProxyError::BadRequest(format!(
                    "a pause is {{\"retry_after_seconds\": N, \"reason\": \"...\"}} (both optional): {e}"
                ))
                .into_response();
            }
        }
    };
    axum::Json(shared.pause.pause(request)).into_response()
}

async fn resume(State(shared): State<Arc<Shared>>) -> Response {
    axum::Json(shared.pause.resume()).into_response()
}

async fn state(State(shared): State<Arc<Shared>>) -> Response {
    axum::Json(shared.pause.state()).into_response()
}

/// One call in progress: what its span needs, and its place among the calls in flight.
struct Call {
    shared: Arc<Shared>,
    /// `None` for a call outside any attempt (nothing is recorded).
    record: Option<CallRecord>,
    /// The request as this crate's types read it, or why it could not be read.
    request: Result<ChatRequest, String>,
    _inflight: InFlight,
}

impl Call {
    async fn answered(&self, response: &ChatResponse, retries: u32) {
        if let Some(record) = &self.record {
            let outcome = Outcome::Answered { response, retries };
            let span = record.span(self.request.as_ref().ok(), outcome, self.shared.config.attribute_cap);
            let export = self.shared.config.span_export.as_ref();
            write(self.shared.store.as_ref(), export, span).await;
        }
    }

    async fn failed(&self, why: String, status: u16, partial: Option<&ChatResponse>) {
        if let Some(record) = &self.record {
            let span = record.span(
                self.request.as_ref().ok(),
                Outcome::Failed { why, status, partial },
                self.shared.config.attribute_cap,
            );
            let export = self.shared.config.span_export.as_ref();
            write(self.shared.store.as_ref(), export, span).await;
        }
    }
}

/// What a call under an attempt learns from the store before it is forwarded.
struct Target {
    sequence_id: u64,
    mode: Option<String>,
    /// The model of the rollout's `proxy_llm` resource, if it has one.
    model: Option<String>,
    /// That resource's `sampling_parameters`: defaults for what the request leaves unset.
    sampling: agl_store::JsonMap,
}

fn store_error(error: StoreError) -> ProxyError {
    if error.is_not_found() {
        ProxyError::NotFound(error.to_string())
    } else {
        ProxyError::Store(error.to_string())
    }
}

/// The rollout and attempt of `route` (404 when the store has neither), their mode, the model
/// their resources name, and the span's sequence id.
async fn resolve(store: &dyn LightningStore, route: &Route) -> Result<Target, ProxyError> {
    let (rollout_id, attempt_id) = (route.rollout_id.as_str(), route.attempt_id.as_str());
    let view = store
        .get_rollout_by_id(rollout_id)
        .await
        .map_err(store_error)?
        .ok_or_else(|| ProxyError::NotFound(format!("rollout {rollout_id} is not in the store")))?;
    let latest = view.attempt.as_ref().is_some_and(|a| a.attempt_id == attempt_id);
    if !latest {
        let attempts = store
            .query_attempts(rollout_id, &AttemptQuery::default())
            .await
            .map_err(store_error)?;
        if !attempts.items.iter().any(|a| a.attempt_id == attempt_id) {
            return Err(ProxyError::NotFound(format!(
                "attempt {attempt_id} is not an attempt of rollout {rollout_id}"
            )));
        }
    }
    let resources = match &view.rollout.resources_id {
        Some(id) => store.get_resources_by_id(id).await,
        None => store.get_latest_resources().await,
    }
    .map_err(store_error)?;
    let proxy_llm = resources.and_then(|update| {
        update.resources.into_values().find_map(|resource| match resource {
            Resource::ProxyLlm(llm) => Some(llm),
            _ => None,
        })
    });
    let (model, sampling) = match proxy_llm {
        Some(llm) => (
            Some(llm.model).filter(|m| !m.trim().is_empty()),
            llm.sampling_parameters,
        ),
        None => (None, agl_store::JsonMap::new()),
    };
    let sequence_id = store
        .get_next_span_sequence_id(rollout_id, attempt_id)
        .await
        .map_err(store_error)?;
    Ok(Target {
        sequence_id,
        mode: route
            .mode
            .clone()
            .or_else(|| view.rollout.mode.map(|m| m.as_str().to_owned())),
        model,
        sampling,
    })
}

/// The request's body, within the size and time bounds.
async fn read_request(request: Request, config: &ProxyConfig) -> Result<Bytes, ProxyError> {
    let limit = config.max_body_bytes;
    let declared = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(ProxyError::TooLarge(limit));
    }
    match tokio::time::timeout(
        config.body_read_timeout,
        axum::body::to_bytes(request.into_body(), limit),
    )
    .await
    {
        Err(_) => Err(ProxyError::BodyTimeout(config.body_read_timeout)),
        Ok(Err(error)) if error.to_string().contains("length limit") => Err(ProxyError::TooLarge(limit)),
        Ok(Err(error)) => Err(ProxyError::BadRequest(format!("reading the body failed: {error}"))),
        Ok(Ok(body)) => Ok(body),
    }
}

/// A fresh completion id, for backends that give none (Agent-lightning tells calls apart by it).
fn completion_id() -> String {
    format!("chatcmpl-agl{:016x}", fastrand::u64(..))
}

fn unix_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Whether `body` asks for `stream_options.include_usage`.
fn asks_usage(body: &Value) -> bool {
    body.pointer("/stream_options/include_usage") == Some(&Value::Bool(true))
}

/// Sets in `body` what the proxy decides: the model (the rollout's `proxy_llm` resource's, else
/// the request's, else the upstream's default), that resource's sampling parameters where the
/// request sets none, the mode's temperature, and the token-id fields. Returns the model.
fn prepare(body: &mut Value, target: Option<&Target>, config: &ProxyConfig, upstream: &Upstream) -> String {
    let asked = body
        .get("model")
        .and_then(Value::as_str)
        .filter(|m| !m.trim().is_empty());
    let model = target
        .and_then(|t| t.model.clone())
        .or_else(|| asked.map(str::to_owned))
        .unwrap_or_else(|| upstream.default_model().to_owned());
    let (Some(target), Some(fields)) = (target, body.as_object_mut()) else {
        body["model"] = Value::String(model.clone());
        return model;
    };
    fields.insert("model".into(), Value::String(model.clone()));
    for (key, value) in &target.sampling {
        fields.entry(key.clone()).or_insert_with(|| value.clone());
    }
    let temperature = match target.mode.as_deref() {
        Some("train") => config.train_temperature,
        Some("val") => config.val_temperature,
        _ => None,
    };
    if let Some(temperature) = temperature {
        fields.insert("temperature".into(), json!(temperature));
    }
    if config.token_ids {
        fields.entry("return_token_ids").or_insert(Value::Bool(true));
        if target.mode.as_deref() == Some("train") {
            fields.entry("logprobs").or_insert(Value::Bool(true));
        }
    }
    model
}

async fn answer(shared: Arc<Shared>, route: Option<Route>, request: Request) -> Result<Response, ProxyError> {
    let inflight = shared.pause.enter()?;
    let started = now();
    let raw = read_request(request, &shared.config).await?;
    let mut body: Value =
        serde_json::from_slice(&raw).map_err(|e| ProxyError::BadRequest(format!("the body is not JSON: {e}")))?;
    if !body.is_object() {
        return Err(ProxyError::BadRequest("the body is not a JSON object".into()));
    }
    let target = match &route {
        Some(route) => Some(resolve(shared.store.as_ref(), route).await?),
        None => None,
    };
    let upstream = shared
        .config
        .upstreams
        .pick(route.as_ref().map(|r| r.rollout_id.as_str()))
        .clone();
    let model = prepare(&mut body, target.as_ref(), &shared.config, &upstream);
    let stream = body.get("stream") == Some(&Value::Bool(true));
    let record = match (route, &target) {
        (Some(route), Some(target)) => Some(CallRecord {
            rollout_id: route.rollout_id,
            attempt_id: route.attempt_id,
            sequence_id: target.sequence_id,
            mode: target.mode.clone(),
            started,
            model: model.clone(),
            upstream: upstream.describe(),
            stream,
        }),
        _ => None,
    };
    let call = Call {
        request: chat_request(&body),
        shared,
        record,
        _inflight: inflight,
    };
    let result = match &upstream {
        Upstream::Http(http) => forward(&call, http, body, stream, &model).await,
        Upstream::Backend(backend) => ask_backend(&call, backend.as_ref(), stream, asks_usage(&body), &model).await,
    };
    match result {
        Ok(Answer::Done(response)) => Ok(response),
        Ok(Answer::Streaming(pump)) => Ok(pump.start(call)),
        Err(error) => {
            call.failed(error.describe(), error.status().as_u16(), None).await;
            Err(error)
        }
    }
}

/// How a call is answered.
enum Answer {
    /// Answered (and recorded) already.
    Done(Response),
    /// An upstream stream to pass on (recorded when it ends).
    Streaming(Pump),
}

fn json_response(body: impl Into<Body>) -> Response {
    (
        [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        body.into(),
    )
        .into_response()
}

fn events_response(body: Body) -> Response {
    (
        [
            (CONTENT_TYPE, HeaderValue::from_static("text/event-stream")),
            (CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        body,
    )
        .into_response()
}

/// The call through an OpenAI-compatible server: the body forwarded, the answer relayed.
async fn forward(
    call: &Call,
    http: &HttpUpstream,
    mut body: Value,
    stream: bool,
    model: &str,
) -> Result<Answer, ProxyError> {
    let client_asks_usage = asks_usage(&body);
    if stream && !client_asks_usage {
        // The span needs the usage: asked for here, its chunk kept from the client.
        body["stream_options"] = match body.get("stream_options") {
            Some(Value::Object(options)) => {
                let mut options = options.clone();
                options.insert("include_usage".into(), Value::Bool(true));
                Value::Object(options)
            }
            _ => json!({"include_usage": true}),
        };
    }
    let bytes = serde_json::to_vec(&body).map_err(|e| ProxyError::BadRequest(e.to_string()))?;
    let (response, retries) = http.send(bytes.into()).await?;
    let is_stream = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if stream && is_stream {
        return Ok(Answer::Streaming(Pump {
            response,
            retries,
            drop_usage: !client_asks_usage,
            timeout: http.timeout(),
            model: model.to_owned(),
        }));
    }
    let raw = read_body(response, http.timeout()).await?;
    let value: Value = serde_json::from_slice(&raw).map_err(|e| {
        ProxyError::BadGateway(format!(
            "the upstream's answer is not JSON ({e}): {}",
            String::from_utf8_lossy(&raw).chars().take(200).collect::<String>()
        ))
    })?;
    let response = chat_response(&value, model)
        .map_err(|e| ProxyError::BadGateway(format!("the upstream's answer is not a chat completion: {e}")))?;
    call.answered(&response, retries).await;
    if stream {
        // Asked for a stream, answered whole: the client still gets the events it expects.
        let id = response.id.clone().unwrap_or_else(completion_id);
        let events = events_of(&response, &id, unix_seconds(), client_asks_usage);
        return Ok(Answer::Done(events_response(Body::from(events.concat()))));
    }
    Ok(Answer::Done(json_response(raw)))
}

fn llm_error(error: LlmError) -> ProxyError {
    match error {
        LlmError::InvalidRequest(message) => ProxyError::BadRequest(message),
        LlmError::Backend(message) => ProxyError::BadGateway(message),
        LlmError::Timeout => ProxyError::GatewayTimeout(LlmError::Timeout.to_string()),
    }
}

/// The call through an `agl-llm` backend: the request parsed, the answer written as OpenAI's.
async fn ask_backend(
    call: &Call,
    backend: &dyn agl_llm::LlmBackend,
    stream: bool,
    include_usage: bool,
    model: &str,
) -> Result<Answer, ProxyError> {
    let mut request = call.request.clone().map_err(ProxyError::BadRequest)?;
    request.model = Some(model.to_owned());
    let mut response = backend.chat(&request).await.map_err(llm_error)?;
    let id = response.id.get_or_insert_with(completion_id).clone();
    call.answered(&response, 0).await;
    let created = unix_seconds();
    if stream {
        let events = events_of(&response, &id, created, include_usage);
        return Ok(Answer::Done(events_response(Body::from(events.concat()))));
    }
    let body = response_body(&response, id, created);
    Ok(Answer::Done(json_response(body.to_string())))
}

/// An upstream stream being passed on to the client.
struct Pump {
    response: reqwest::Response,
    retries: u32,
    /// The client did not ask for usage: the usage-only chunk asked on its behalf is dropped.
    drop_usage: bool,
    /// The longest wait for the next chunk.
    timeout: Duration,
    model: String,
}

impl Pump {
    /// Passes the events on from a task; the client's body is the other end of a channel.
    fn start(self, call: Call) -> Response {
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        tokio::spawn(self.run(call, tx));
        events_response(Body::new(ChannelBody(rx)))
    }

    async fn run(mut self, call: Call, tx: mpsc::Sender<Bytes>) {
        let mut splitter = EventSplitter::default();
        let mut assembler = Assembler::default();
        let mut done: Option<Vec<u8>> = None;
        let failure = 'read: loop {
            let chunk = match tokio::time::timeout(self.timeout, self.response.chunk()).await {
                Err(_) => break 'read Some(format!("the upstream's stream stalled for {:?}", self.timeout)),
                Ok(Err(error)) => break 'read Some(format!("reading the upstream's stream failed: {error}")),
                Ok(Ok(None)) => break 'read None,
                Ok(Ok(Some(chunk))) => chunk,
            };
            for event in splitter.push(&chunk) {
                let pass = match event_data(&event).as_deref() {
                    Some(DONE) => {
                        // Held back until the span is written: a client that has read the whole
                        // stream finds the call recorded.
                        done = Some(event);
                        continue;
                    }
                    Some(data) => !(assembler.feed(data) && self.drop_usage),
                    None => true,
                };
                if pass && tx.send(Bytes::from(event)).await.is_err() {
                    break 'read Some("the client closed the stream".to_owned());
                }
            }
        };
        if let Some(rest) = splitter.rest()
            && let Some(data) = event_data(&rest)
            && data != DONE
        {
            assembler.feed(&data);
            let _ = tx.send(Bytes::from(rest)).await;
        }
        // A stream that broke off is recorded with what it had brought (the client got a 200).
        let response = assembler.finish(&self.model);
        match failure {
            None => call.answered(&response, self.retries).await,
            Some(why) => call.failed(why, StatusCode::OK.as_u16(), Some(&response)).await,
        }
        if let Some(done) = done {
            let _ = tx.send(Bytes::from(done)).await;
        }
    }
}
