//! The proxy's routes and the life of one call: let in unless paused, the body read within its
//! bounds, the rollout and attempt looked up (with the model and sampling parameters its
//! resources' `proxy_llm` names, and its mode), the body prepared (model, defaults, token ids),
//! forwarded to the rollout's upstream (the model server registered for it through the 1.0
//! gateway, if any), the answer relayed (a stream event by event) and the
//! call recorded as a span of the attempt.

use crate::ProxyConfig;
use crate::error::ProxyError;
use crate::grants::{AttemptGrant, GrantAnswer, GrantRequest, Grants};
use crate::pause::{InFlight, Pause, PauseRequest};
use crate::record::{CallRecord, Outcome, now, write};
use crate::registered::RegisteredServers;
use crate::stream::{Assembler, ChannelBody, DONE, EventSplitter, MAX_EVENT_BYTES, event_data, events_of};
use crate::upstream::{HttpUpstream, Upstream, read_body};
use agl_llm::openai_json::{chat_request, chat_response, response_body};
use agl_llm::{ChatRequest, ChatResponse, LlmError};
use agl_store::{AttemptQuery, LightningStore, Resource, StoreError, registered_model};
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
    /// The per-attempt capabilities of sandboxed agents.
    pub grants: Grants,
    /// The port of the listener serving [`agent_router`], once bound (told to runners).
    pub agent_port: std::sync::OnceLock<u16>,
    /// The upstreams of model servers registered through the 1.0 gateway.
    pub registered: RegisteredServers,
}

const ATTEMPT: &str = "/rollout/{rollout_id}/attempt/{attempt_id}";
const ATTEMPT_MODE: &str = "/proxy/rollout/{rollout_id}/attempt/{attempt_id}/mode/{mode}/openai";
/// Where a capability's calls go: its secret, then the OpenAI API.
const CAPABILITY: &str = "/agent/{secret}";

/// Calls outside any attempt (`/v1/chat/completions`, `/v1/models`): they spend the host's key
/// and are recorded nowhere, so they are served only to clients that present a token
/// (`enabled`); otherwise they are refused, saying so.
pub(crate) fn unattributed_router(shared: Arc<Shared>, enabled: bool) -> Router {
    if !enabled {
        let refused = || async { ProxyError::Unattributed.into_response() };
        return Router::new()
            .route("/v1/chat/completions", post(refused))
            .route("/v1/models", get(refused));
    }
    Router::new()
        .route("/v1/chat/completions", post(plain))
        .route("/v1/models", get(models))
        .with_state(shared)
}

/// The operator's routes: calls naming an attempt by its ids, the pause switch, grants for
/// runners of other processes. For a trusted client (the store's token, or the proxy's own).
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route(&format!("{ATTEMPT}/v1/chat/completions"), post(attempt))
        .route(&format!("{ATTEMPT}/v1/models"), get(models))
        .route(&format!("{ATTEMPT_MODE}/v1/chat/completions"), post(attempt_in_mode))
        .route(&format!("{ATTEMPT_MODE}/v1/models"), get(models))
        .route("/proxy/pause", post(pause))
        .route("/proxy/resume", post(resume))
        .route("/proxy/state", get(state))
        .route("/proxy/grants", post(issue_grant))
        .route("/proxy/grants/{secret}", axum::routing::delete(revoke_grant))
        .with_state(shared)
}

/// `POST /proxy/grants`: a runner in another process asks for its attempt's capability.
async fn issue_grant(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let request: GrantRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => {
            return ProxyError::BadRequest(format!(
                "a grant is {{\"rollout_id\", \"attempt_id\", \"llm\": {{...the attempt's LLM limits}}}}: {e}"
            ))
            .into_response();
        }
    };
    if let Err(error) = attempt_status(shared.store.as_ref(), &request.rollout_id, &request.attempt_id).await {
        return error.into_response();
    }
    let allowance = Arc::new(agl_trace::LlmAllowance::new(&request.llm.policy()));
    match shared
        .grants
        .issue_detached(&request.rollout_id, &request.attempt_id, allowance)
    {
        Ok(secret) => (
            StatusCode::CREATED,
            axum::Json(GrantAnswer {
                path: format!("/agent/{secret}/v1"),
                capability: secret,
                port: shared.agent_port.get().copied(),
            }),
        )
            .into_response(),
        Err(e) => ProxyError::Store(e.to_string()).into_response(),
    }
}

/// `DELETE /proxy/grants/{secret}`: the attempt ended.
async fn revoke_grant(State(shared): State<Arc<Shared>>, Path(secret): Path<String>) -> Response {
    if shared.grants.revoke(&secret) {
        StatusCode::NO_CONTENT.into_response()
    } else {
        ProxyError::NotFound("no such LLM proxy capability".into()).into_response()
    }
}

/// A sandboxed agent's routes: only through a live capability, `{CAPABILITY}/v1/...`, and the
/// same with Agent-lightning's `ProxyLLM.get_base_url` applied to it (the ids must be the
/// capability's own).
pub(crate) fn agent_router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route(&format!("{CAPABILITY}/v1/chat/completions"), post(granted))
        .route(&format!("{CAPABILITY}/v1/models"), get(granted_models))
        .route(
            &format!("{CAPABILITY}{ATTEMPT}/v1/chat/completions"),
            post(granted_attempt),
        )
        .route(&format!("{CAPABILITY}{ATTEMPT}/v1/models"), get(granted_attempt_models))
        .with_state(shared)
}

/// The live grant with `secret`; a revoked or unknown one is a 404 that says no more.
fn grant_of(shared: &Shared, secret: &str) -> Result<Arc<AttemptGrant>, ProxyError> {
    shared
        .grants
        .get(secret)
        .ok_or_else(|| ProxyError::NotFound("no such LLM proxy capability (it ended with its attempt)".into()))
}

/// A capability's route for its own attempt.
fn granted_route(grant: Arc<AttemptGrant>) -> Route {
    Route {
        rollout_id: grant.rollout_id.clone(),
        attempt_id: grant.attempt_id.clone(),
        mode: None,
        grant: Some(grant),
    }
}

async fn granted(State(shared): State<Arc<Shared>>, Path(secret): Path<String>, request: Request) -> Response {
    let route = match grant_of(&shared, &secret) {
        Ok(grant) => granted_route(grant),
        Err(error) => return error.into_response(),
    };
    answer_granted(shared, secret, route, request).await
}

/// A capability's call; a capability whose attempt has ended is revoked on the way.
async fn answer_granted(shared: Arc<Shared>, secret: String, route: Route, request: Request) -> Response {
    match answer(shared.clone(), Some(route), request).await {
        Ok(response) => response,
        Err(error) => {
            if matches!(error, ProxyError::Ended(_)) {
                shared.grants.revoke(&secret);
            }
            error.into_response()
        }
    }
}

async fn granted_attempt(
    State(shared): State<Arc<Shared>>,
    Path((secret, rollout_id, attempt_id)): Path<(String, String, String)>,
    request: Request,
) -> Response {
    let route = match grant_of(&shared, &secret) {
        Ok(grant) if grant.rollout_id == rollout_id && grant.attempt_id == attempt_id => granted_route(grant),
        Ok(_) => {
            return ProxyError::NotFound("this capability is another attempt's".into()).into_response();
        }
        Err(error) => return error.into_response(),
    };
    answer_granted(shared, secret, route, request).await
}

async fn granted_models(State(shared): State<Arc<Shared>>, Path(secret): Path<String>) -> Response {
    match grant_of(&shared, &secret) {
        Ok(_) => models(State(shared)).await,
        Err(error) => error.into_response(),
    }
}

async fn granted_attempt_models(
    State(shared): State<Arc<Shared>>,
    Path((secret, _, _)): Path<(String, String, String)>,
) -> Response {
    granted_models(State(shared), Path(secret)).await
}

/// The attempt a route names, and the mode when the route says it.
struct Route {
    rollout_id: String,
    attempt_id: String,
    mode: Option<String>,
    /// The capability the call came through (an agent's), whose allowance admits it.
    grant: Option<Arc<AttemptGrant>>,
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
        grant: None,
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
        grant: None,
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
    /// The capability it came through: charged the answer's tokens.
    grant: Option<Arc<AttemptGrant>>,
    /// The capability's turn, held until the call has ended.
    _turn: Option<tokio::sync::OwnedSemaphorePermit>,
    _inflight: InFlight,
}

impl Call {
    async fn answered(&self, response: &ChatResponse, retries: u32) {
        if let Some(grant) = &self.grant {
            grant.allowance.charge(&response.usage);
        }
        if let Some(record) = &self.record {
            let outcome = Outcome::Answered { response, retries };
            let span = record.span(self.request.as_ref().ok(), outcome, self.shared.config.attribute_cap);
            let export = self.shared.config.span_export.as_ref();
            write(self.shared.store.as_ref(), export, span).await;
        }
    }

    /// A capability's call its attempt's LLM policy refused: recorded as the host records the
    /// same refusal of its `llm` import, with what was refused and the flag that allows it.
    async fn refused(&self, error: &ProxyError, refused: Option<agl_trace::Refused>) {
        if let Some(record) = &self.record {
            let outcome = Outcome::Failed {
                why: error.describe(),
                status: error.status().as_u16(),
                partial: None,
            };
            let mut span = record.span(self.request.as_ref().ok(), outcome, self.shared.config.attribute_cap);
            if let Some(refused) = refused {
                span.attributes
                    .insert(agl_store::semconv::SANDBOX_REFUSED.to_owned(), refused.what.into());
                span.attributes
                    .insert(agl_store::semconv::SANDBOX_GRANT.to_owned(), refused.grant.into());
            }
            let export = self.shared.config.span_export.as_ref();
            write(self.shared.store.as_ref(), export, span).await;
        }
    }

    async fn failed(&self, why: String, status: u16, partial: Option<&ChatResponse>) {
        if let (Some(grant), Some(partial)) = (&self.grant, partial) {
            grant.allowance.charge(&partial.usage);
        }
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
    /// The API root of the model server registered for the rollout through the 1.0 gateway,
    /// which then answers its calls instead of the proxy's upstreams.
    server: Option<String>,
}

fn store_error(error: StoreError) -> ProxyError {
    if error.is_not_found() {
        ProxyError::NotFound(error.to_string())
    } else {
        ProxyError::Store(error.to_string())
    }
}

/// The attempt's status, found in the rollout `view` (its latest attempt) or among its attempts;
/// an error when there is no such attempt or it has ended (its spans and triplets are final).
async fn running(
    view: &agl_store::RolloutView,
    store: &dyn LightningStore,
    attempt_id: &str,
) -> Result<(), ProxyError> {
    let rollout_id = view.rollout.rollout_id.as_str();
    let status = match view.attempt.as_ref().filter(|a| a.attempt_id == attempt_id) {
        Some(latest) => latest.status,
        None => store
            .query_attempts(rollout_id, &AttemptQuery::default())
            .await
            .map_err(store_error)?
            .items
            .iter()
            .find(|a| a.attempt_id == attempt_id)
            .map(|a| a.status)
            .ok_or_else(|| {
                ProxyError::NotFound(format!(
                    "attempt {attempt_id} is not an attempt of rollout {rollout_id}"
                ))
            })?,
    };
    if status.has_ended() {
        return Err(ProxyError::Ended(format!(
            "attempt {attempt_id} of rollout {rollout_id} has ended ({})",
            status.as_str()
        )));
    }
    Ok(())
}

/// [`running`] by ids.
async fn attempt_status(store: &dyn LightningStore, rollout_id: &str, attempt_id: &str) -> Result<(), ProxyError> {
    let view = store
        .get_rollout_by_id(rollout_id)
        .await
        .map_err(store_error)?
        .ok_or_else(|| ProxyError::NotFound(format!("rollout {rollout_id} is not in the store")))?;
    running(&view, store, attempt_id).await
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
    running(&view, store, attempt_id).await?;
    let resources = match &view.rollout.resources_id {
        Some(id) => store.get_resources_by_id(id).await,
        None => store.get_latest_resources().await,
    }
    .map_err(store_error)?;
    let registered = resources
        .as_ref()
        .and_then(|update| registered_model::first(&update.resources))
        .map(|(_, llm)| llm.clone());
    let server = registered.as_ref().map(|llm| llm.endpoint.clone());
    let proxy_llm = registered.or_else(|| {
        resources.and_then(|update| {
            update.resources.into_values().find_map(|resource| match resource {
                Resource::ProxyLlm(llm) => Some(llm),
                _ => None,
            })
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
        server,
    })
}

/// The request's body, within `limit` bytes and `timeout`.
async fn read_request(request: Request, limit: usize, timeout: Duration) -> Result<Bytes, ProxyError> {
    let declared = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(ProxyError::TooLarge(limit));
    }
    match tokio::time::timeout(timeout, axum::body::to_bytes(request.into_body(), limit)).await {
        Err(_) => Err(ProxyError::BodyTimeout(timeout)),
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
    let grant = route.as_ref().and_then(|r| r.grant.clone());
    let turn = match &grant {
        Some(grant) => grant.turn().await,
        None => None,
    };
    let limit = match &grant {
        Some(grant) => usize::try_from(grant.allowance.max_body_bytes())
            .unwrap_or(usize::MAX)
            .min(shared.config.max_body_bytes),
        None => shared.config.max_body_bytes,
    };
    let raw = read_request(request, limit, shared.config.body_read_timeout).await?;
    let mut body: Value =
        serde_json::from_slice(&raw).map_err(|e| ProxyError::BadRequest(format!("the body is not JSON: {e}")))?;
    drop(raw);
    if !body.is_object() {
        return Err(ProxyError::BadRequest("the body is not a JSON object".into()));
    }
    if grant.is_some() && body.get("n").is_some_and(|n| n.as_u64() != Some(1)) {
        return Err(ProxyError::BadRequest(
            "`n` other than 1 is not allowed through an agent's capability (one choice per call)".into(),
        ));
    }
    let target = match &route {
        Some(route) => Some(resolve(shared.store.as_ref(), route).await?),
        None => None,
    };
    let upstream = match target
        .as_ref()
        .and_then(|t| Some((t.server.as_deref()?, t.model.as_deref()?)))
    {
        Some((server, model)) => {
            let first = shared.config.upstreams.all().first();
            let template = first.and_then(Upstream::openai_config).cloned().unwrap_or_default();
            shared.registered.upstream(server, model, &template).map_err(|e| {
                ProxyError::BadGateway(format!("the model server registered for this rollout is unusable: {e}"))
            })?
        }
        None => shared
            .config
            .upstreams
            .pick(route.as_ref().map(|r| r.rollout_id.as_str()))
            .clone(),
    };
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
    let mut call = Call {
        request: chat_request(&body),
        shared,
        record,
        grant,
        _turn: turn,
        _inflight: inflight,
    };
    if let Some(grant) = call.grant.clone() {
        // The attempt's own LLM policy, as its `llm` import applies it: the default model is
        // the one the operator's resources name, else the upstream's.
        let default_model = target
            .as_ref()
            .and_then(|t| t.model.as_deref())
            .unwrap_or_else(|| upstream.default_model());
        let admitted = match &call.request {
            Ok(request) => {
                let mut request = request.clone();
                request.model = Some(model.clone());
                grant
                    .allowance
                    .admit_explained(&request, default_model)
                    .map_err(|(refusal, refused)| (ProxyError::Refused(refusal), refused))
            }
            Err(why) => Err((ProxyError::BadRequest(format!("not a chat request: {why}")), None)),
        };
        if let Err((error, refused)) = admitted {
            if !grant.record_refusal() {
                call.record = None;
            }
            call.refused(&error, refused).await;
            return Err(error);
        }
    }
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
        let mut assembler = Assembler::new(call.shared.config.attribute_cap);
        let mut done: Option<Vec<u8>> = None;
        let failure = 'read: loop {
            let chunk = match tokio::time::timeout(self.timeout, self.response.chunk()).await {
                Err(_) => break 'read Some(format!("the upstream's stream stalled for {:?}", self.timeout)),
                Ok(Err(error)) => break 'read Some(format!("reading the upstream's stream failed: {error}")),
                Ok(Ok(None)) => break 'read None,
                Ok(Ok(Some(chunk))) => chunk,
            };
            let Ok(events) = splitter.push(&chunk) else {
                break 'read Some(format!(
                    "the upstream's stream sent an event longer than {MAX_EVENT_BYTES} bytes"
                ));
            };
            for event in events {
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
