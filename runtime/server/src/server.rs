//! Binding and running: [`serve`] starts the accept loop ([`crate::connections`]) on a Tokio
//! task and returns a [`ServerHandle`] for its address and a graceful shutdown.

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
/// check and the body limit cover them too; a path both serve is a programming error (panics).
pub async fn serve_with(
    store: Arc<dyn LightningStore>,
    options: ServerOptions,
    extra: axum::Router,
) -> Result<ServerHandle, ServerError> {
    start(store, options, Some(extra)).await
}

async fn start(
    store: Arc<dyn LightningStore>,
    options: ServerOptions,
    extra: Option<axum::Router>,
) -> Result<ServerHandle, ServerError> {
    let addr = SocketAddr::new(options.host, options.port);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServerError::Bind { addr, source })?;
    let local_addr = listener.local_addr().map_err(ServerError::LocalAddr)?;
    let (stop, stopped) = watch::channel(false);
    let app = routes::build(store, &options, Some(stopped.clone()), extra);
    let limits = ConnectionLimits::from_options(&options);
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
