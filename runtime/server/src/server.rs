//! Binding and running: [`serve`] (the store), [`serve_with`] (the store and more routes) and
//! [`serve_router`] (any other router) start the accept loop ([`crate::connections`]) on a Tokio
//! task and return a [`ServerHandle`] for its address and a graceful shutdown.

use crate::connections::{self, ConnectionLimits};
use crate::error::ServerError;
use crate::options::ServerOptions;
use crate::routes;
use agl_store::LightningStore;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How long [`ServerHandle::shutdown`] waits for in-flight requests.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Binds `options.host:options.port` and serves the store API there until the returned handle
/// is shut down (or dropped). Needs a Tokio runtime.
pub async fn serve(store: Arc<dyn LightningStore>, options: ServerOptions) -> Result<ServerHandle, ServerError> {
    start(store, options, None).await
}

/// [`serve`], with `extra`'s routes served beside the store's (e.g. the LLM proxy): the token
/// check, the body limit and the edge checks cover them too; a path both serve is a programming
/// error (panics).
pub async fn serve_with(
    store: Arc<dyn LightningStore>,
    options: ServerOptions,
    extra: axum::Router,
) -> Result<ServerHandle, ServerError> {
    start(store, options, Some(extra)).await
}

/// Binds `options.host:options.port` and serves `router` there, a router that is not the store's
/// (e.g. the LLM proxy on a listener of its own), until the returned handle is shut down (or
/// dropped): with the same connection limits, body limit, token check (every route, when
/// `options.token` is set), edge checks (path, `Host`, `Origin`, content type: see [`crate`])
/// and request metrics as [`serve`]'s (counted as the store's are; no `/metrics` route is added),
/// the static site when `options.site` gives one, and a JSON 404 / 405 for unknown paths and
/// methods (replacing `router`'s own fallback, if it has one). Needs a Tokio runtime.
pub async fn serve_router(options: ServerOptions, router: axum::Router) -> Result<ServerHandle, ServerError> {
    listen(&options, |_| routes::build_other(router, &options)).await
}

async fn start(
    store: Arc<dyn LightningStore>,
    options: ServerOptions,
    extra: Option<axum::Router>,
) -> Result<ServerHandle, ServerError> {
    listen(&options, |stopped| routes::build(store, &options, Some(stopped), extra)).await
}

/// Binds the options' address and serves the router `app` builds (given the shutdown signal) on
/// a Tokio task, under the options' connection limits.
async fn listen(
    options: &ServerOptions,
    app: impl FnOnce(watch::Receiver<bool>) -> axum::Router,
) -> Result<ServerHandle, ServerError> {
    let addr = SocketAddr::new(options.host, options.port);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServerError::Bind { addr, source })?;
    let local_addr = listener.local_addr().map_err(ServerError::LocalAddr)?;
    let (stop, stopped) = watch::channel(false);
    let app = app(stopped.clone());
    let limits = ConnectionLimits::from_options(options);
    // Accept errors are retried inside; this only ends on shutdown (or when the handle is gone).
    let task = tokio::spawn(connections::serve(listener, app, limits, stopped));
    Ok(ServerHandle {
        local_addr,
        stop,
        task: Some(task),
    })
}

/// A running server. Dropping it starts a graceful shutdown without waiting for it.
pub struct ServerHandle {
    local_addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
}

impl ServerHandle {
    /// The address actually bound (the real port when `port` was 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The base URL clients use, e.g. `http://127.0.0.1:4747` (loopback when bound to the
    /// unspecified address).
    pub fn url(&self) -> String {
        let ip = match self.local_addr.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
            ip => ip,
        };
        format!("http://{}", SocketAddr::new(ip, self.local_addr.port()))
    }

    /// Stops accepting connections, lets in-flight requests finish (pending waits answer at
    /// once), closes idle connections, and returns when the server task has ended — or after
    /// [`SHUTDOWN_GRACE`], when requests still running (a client stalling mid-body) are left to
    /// their connections and the server task is aborted.
    pub async fn shutdown(mut self) {
        self.stop.send_replace(true);
        if let Some(mut task) = self.task.take()
            && tokio::time::timeout(SHUTDOWN_GRACE, &mut task).await.is_err()
        {
            task.abort();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop.send_replace(true);
    }
}

impl std::fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerHandle")
            .field("local_addr", &self.local_addr)
            .finish()
    }
}
