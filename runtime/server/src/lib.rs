//! Agent-lightning 0.3.0's LightningStore HTTP API, served by axum over any
//! `Arc<dyn LightningStore>`.
//!
//! Routes, JSON shapes and status codes follow 0.3.0's server (`/v1/agl/...`; the exchanges
//! captured from it are in the repository's `tests/fixtures/agentlightning-0.3/`, replayed by
//! this crate's `tests/golden.rs`), so 0.3.0's Python `LightningStoreClient` can drive our store.
//! Where 0.3.0 answered an unknown id with a 500 (which its client retries), we answer a 4xx or
//! `null`. The server binds loopback by default, can require a bearer token, bounds request
//! bodies (gzip ones after inflating too), gives clients a bounded time to send headers and body,
//! caps concurrent connections, and answers every bad request with a JSON `{"detail": "..."}`. `POST /v1/traces`
//! (OTLP/HTTP) is served too, by `agl_otlp`, and `GET /metrics` (Prometheus' text format: rollouts,
//! attempts and workers by status, spans, LLM calls and tokens, heartbeats, HTTP requests).
//! Agent-lightning 1.0's gateway API (`/healthz`, `/api/rollouts...`, `/api/models`) is served
//! beside the 0.3.0 routes over the same store (`routes/gateway/`).
//!
//! [`router`] gives the bare `axum::Router` (to embed or test in-process); [`serve`] binds a port
//! and runs it until [`ServerHandle::shutdown`]; [`serve_with`] serves more routes beside the
//! store's on the same port, under the same token and body limit (the LLM proxy's);
//! [`serve_router`] serves another router (the LLM proxy's alone) under the same limits and checks.
//! Every router served is guarded against use by web pages of other sites: paths starting with
//! `//` are 404, a loopback-bound server answers only loopback `Host` names (DNS rebinding), an
//! `Origin` other than the server's own is refused, and request bodies must be JSON
//! ([`ServerOptions::allowed_hosts`], [`ServerOptions::allowed_origins`]).
//! [`ServerOptions::site`] adds a static web app (a dashboard, [`Site`]) at `/`, public, served
//! for every `GET` that is not the API's.

mod auth;
mod connections;
mod edge;
mod error;
mod extract;
mod json;
mod metrics;
mod options;
mod query_string;
mod routes;
mod server;
mod site;
mod stall;

pub use auth::require_token;
pub use error::ServerError;
pub use options::{
    DEFAULT_BODY_READ_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_PORT, DEFAULT_WRITE_STALL_TIMEOUT, ServerOptions,
};
pub use routes::host_routes;
pub use routes::recordings::MAX_RECORDING_BODY_BYTES;
pub use server::{SHUTDOWN_GRACE, ServerHandle, serve, serve_router, serve_with};
pub use site::{Site, is_api_path};

use agl_store::LightningStore;
use std::sync::Arc;

/// The whole HTTP API over `store`, with the options' token check, body limit and edge checks
/// (path, `Host`, `Origin`, content type) applied. Nothing is bound (see [`serve`]): `port` is not
/// used, and `host` only says which `Host` names are answered (a loopback one: loopback names).
pub fn router(store: Arc<dyn LightningStore>, options: &ServerOptions) -> axum::Router {
    routes::build(store, options, None, None)
}
