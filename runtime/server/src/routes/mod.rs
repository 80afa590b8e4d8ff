//! The route table of the 0.3.0 store API (one module per resource), agl-host's own beside it
//! (`export`, `recordings`), Agent-lightning 1.0's gateway API (`gateway/`) and `POST /v1/traces`, the
//! shared state, the JSON 404 / 405 fallbacks and the static site (when one is served) behind them,
//! and the layers every served router is wrapped in ([`guard`]).

mod attempts;
mod export;
pub(crate) mod gateway;
mod host;
mod metrics;
mod otlp;
pub(crate) mod recordings;
mod resources;
mod rollouts;
mod spans;
mod system;
mod waits;
mod workers;

pub use host::host_routes;

use crate::auth::{self, ExpectedToken};
use crate::edge::{self, Edge};
use crate::error::ApiError;
use crate::metrics::{ServerMetrics, track_requests};
use crate::options::ServerOptions;
use crate::site::{self, Site};
use agl_store::LightningStore;
use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use std::sync::Arc;
use tokio::sync::watch;

/// What every handler sees.
#[derive(Clone)]
pub(crate) struct AppState {
    pub store: Arc<dyn LightningStore>,
    pub max_body_bytes: usize,
    /// How long a request's body may take to arrive.
    pub body_read_timeout: std::time::Duration,
    /// Turns `true` when the server shuts down (long waits then answer at once); `None` when the
    /// router runs outside [`crate::serve`].
    pub shutdown: Option<watch::Receiver<bool>>,
    /// The static site answered where no route matches (see [`fallback`]).
    pub site: Option<Arc<Site>>,
    /// What this server counts for `GET /metrics`.
    pub metrics: Arc<ServerMetrics>,
}

impl AppState {
    /// Resolves once shutdown has begun; never when there is no shutdown signal.
    pub async fn shutting_down(&self) {
        if let Some(mut signal) = self.shutdown.clone()
            && signal.wait_for(|stopping| *stopping).await.is_ok()
        {
            return;
        }
        std::future::pending::<()>().await;
    }
}

/// A `201 Created` JSON answer.
pub(crate) type Created<T> = (StatusCode, crate::json::Json<T>);

pub(crate) fn created<T>(value: T) -> Created<T> {
    (StatusCode::CREATED, crate::json::Json(value))
}

/// Builds the router: routes (the store's, and `extra`'s beside them) and fallbacks, under
/// [`guard`] (body limit, token check, edge, request metrics), which covers `extra` too.
pub(crate) fn build(
    store: Arc<dyn LightningStore>,
    options: &ServerOptions,
    shutdown: Option<watch::Receiver<bool>>,
    extra: Option<Router>,
) -> Router {
    let state = AppState {
        store,
        max_body_bytes: options.max_body_bytes,
        body_read_timeout: options.body_read_timeout,
        shutdown,
        site: options.site.clone().map(Arc::new),
        metrics: Arc::new(ServerMetrics::new()),
    };
    let metrics = Arc::clone(&state.metrics);
    // Where a fixed segment (`search`, `latest`) shadows a `{param}` route, the fixed route also
    // takes the param route's other method with the literal as the id, so nothing becomes a 405.
    let router = Router::new()
        .route(auth::HEALTH_PATH, get(system::health))
        .route("/v1/agl/statistics", get(system::statistics))
        .route("/v1/agl/queues/rollouts/enqueue", post(rollouts::enqueue))
        .route("/v1/agl/queues/rollouts/dequeue", post(rollouts::dequeue))
        .route("/v1/agl/rollouts", post(rollouts::start).get(rollouts::query))
        .route(
            "/v1/agl/rollouts/search",
            post(rollouts::search).get(rollouts::get_named_search),
        )
        .route(
            "/v1/agl/rollouts/{rollout_id}",
            get(rollouts::get).post(rollouts::update),
        )
        .route(
            "/v1/agl/rollouts/{rollout_id}/attempts",
            post(attempts::start).get(attempts::query),
        )
        .route("/v1/agl/rollouts/{rollout_id}/attempts/search", post(attempts::search))
        .route(
            "/v1/agl/rollouts/{rollout_id}/attempts/latest",
            get(attempts::latest).post(attempts::update_latest),
        )
        .route(
            "/v1/agl/rollouts/{rollout_id}/attempts/{attempt_id}",
            post(attempts::update),
        )
        .route("/v1/agl/workers", get(workers::query))
        .route(
            "/v1/agl/workers/search",
            post(workers::search).get(workers::get_named_search),
        )
        .route("/v1/agl/workers/{worker_id}", get(workers::get).post(workers::update))
        .route("/v1/agl/resources", get(resources::query).post(resources::add))
        .route(
            "/v1/agl/resources/latest",
            get(resources::latest).post(resources::update_named_latest),
        )
        .route(
            "/v1/agl/resources/{resources_id}",
            get(resources::get).post(resources::update),
        )
        .route("/v1/agl/spans", post(spans::add).get(spans::query))
        .route("/v1/agl/spans/search", post(spans::search))
        .route("/v1/agl/spans/next", post(spans::next_sequence_id))
        .route("/v1/agl/waits/rollouts", post(waits::wait_for_rollouts))
        .route("/v1/agl/export/tokens", get(export::tokens))
        .route(
            "/v1/agl/recordings",
            post(recordings::add).layer(DefaultBodyLimit::max(recordings::body_limit(options.max_body_bytes))),
        )
        .route("/v1/agl/recordings/{rollout_id}/{attempt_id}", get(recordings::get))
        .route("/v1/traces", post(otlp::traces))
        .route("/metrics", get(metrics::scrape))
        // Agent-lightning 1.0's gateway API, beside 0.3.0's.
        .merge(gateway::routes())
        .fallback(fallback)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state);
    let router = match extra {
        Some(extra) => router.merge(extra),
        None => router,
    };
    guard(router, options, metrics)
}

/// What every router this crate serves is wrapped in, innermost first: the body limit, the
/// token check (when `options.token` is set; it covers every route merged in), the edge's checks
/// of path, `Host`, `Origin` and content type ([`crate::edge`]), then (outermost, so that refused
/// requests are counted too) the request metrics.
pub(crate) fn guard(router: Router, options: &ServerOptions, metrics: Arc<ServerMetrics>) -> Router {
    let router = router.layer(DefaultBodyLimit::max(options.max_body_bytes));
    let router = match &options.token {
        Some(token) => router.layer(axum::middleware::from_fn_with_state(
            ExpectedToken {
                token: Arc::from(token.as_str()),
                public_site: options.site.is_some(),
            },
            auth::require_bearer,
        )),
        None => router,
    };
    let edge = Arc::new(Edge::from_options(options));
    router
        .layer(axum::middleware::from_fn_with_state(edge, edge::check))
        .layer(axum::middleware::from_fn_with_state(metrics, track_requests))
}

/// A router that is not the store's ([`crate::serve_router`]): its routes, the static site (when
/// the options give one) or a JSON 404 for the rest, under [`guard`].
pub(crate) fn build_other(router: Router, options: &ServerOptions) -> Router {
    let site = options.site.clone().map(Arc::new);
    let router = router
        .fallback(move |request: Request| {
            let site = site.clone();
            async move { site_or_not_found(site.as_deref(), request).await }
        })
        .method_not_allowed_fallback(method_not_allowed);
    guard(router, options, Arc::new(ServerMetrics::new()))
}

/// No route matched: the static site's file (or its `index.html`) for a `GET`/`HEAD` outside the
/// API when there is a site, else a JSON 404.
async fn fallback(State(state): State<AppState>, request: Request) -> Response {
    site_or_not_found(state.site.as_deref(), request).await
}

/// The site's answer to a `GET`/`HEAD` outside the API when there is a site, else a JSON 404.
async fn site_or_not_found(site: Option<&Site>, request: Request) -> Response {
    match site {
        Some(site) if site::serves(request.method(), request.uri().path()) => {
            site::answer(site, request.uri().path(), request.headers()).await
        }
        _ => ApiError::not_found("Not Found").into_response(),
    }
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed")
}
