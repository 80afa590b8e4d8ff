//! The web dashboard (`agl_dashboard`'s embedded files) served with a store: `agl-host dashboard
//! RUN` for a kept run, and what `agl-host store` and `agl-host run --dashboard` use to serve it
//! beside their store — the site, agl-host's own read-only routes (`agl_server::host_routes`),
//! the port to fall back on, and the URL to print (with the token in its fragment).

use crate::args::DashboardArgs;
use crate::output::stderr_line;
use agl_server::{ServerHandle, ServerOptions};
use agl_store::{LightningStore, StoreBackend};
use anyhow::Context;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

/// Where the dashboard is served unless told otherwise (the store's 4747, plus one); when it is
/// taken, any free port.
pub const DEFAULT_PORT: u16 = 4748;

/// The address to open: the server's, with `#token=...` when the store needs one (the page takes
/// it from there, so the token is never sent in a request line or a Referer).
pub fn url(handle: &ServerHandle, token: Option<&str>) -> String {
    match token {
        Some(token) => format!("{}/#token={}", handle.url(), fragment_encoded(token)),
        None => format!("{}/", handle.url()),
    }
}

/// `text` percent-encoded for a URL fragment (what JavaScript's `decodeURIComponent` reads back).
fn fragment_encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => char::from(b).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

/// Serves `backend` over HTTP with the dashboard at `/` (the options' own site, else the
/// embedded one), agl-host's routes the dashboard reads (`agl_server::host_routes`: the run
/// record, rollout outcomes) and the LLM proxy's when given. When `fallback_to_free_port` and
/// the port is taken, any free port is used instead.
pub async fn serve(
    backend: Arc<dyn StoreBackend>,
    options: ServerOptions,
    proxy: Option<&agl_proxy::Proxy>,
    fallback_to_free_port: bool,
) -> anyhow::Result<ServerHandle> {
    let routes = match proxy {
        // Calls outside any attempt only under the store's token.
        Some(proxy) => agl_server::host_routes(backend.clone())
            .merge(proxy.router())
            .merge(proxy.unattributed_router(options.token.is_some())),
        None => agl_server::host_routes(backend.clone()),
    };
    serve_routes(backend, options, routes, fallback_to_free_port).await
}

/// Serves `backend` over HTTP with `routes` beside its store API and the dashboard at `/` (the
/// options' own site, else the embedded one); the port falls back as [`serve`]'s does.
pub async fn serve_routes(
    backend: Arc<dyn StoreBackend>,
    mut options: ServerOptions,
    routes: axum::Router,
    fallback_to_free_port: bool,
) -> anyhow::Result<ServerHandle> {
    options.site.get_or_insert_with(agl_dashboard::site);
    let store: Arc<dyn LightningStore> = backend;
    let handle = match agl_server::serve_with(store.clone(), options.clone(), routes.clone()).await {
        Err(agl_server::ServerError::Bind { source, .. })
            if fallback_to_free_port && source.kind() == std::io::ErrorKind::AddrInUse =>
        {
            options.port = 0;
            agl_server::serve_with(store, options, routes).await?
        }
        served => served?,
    };
    Ok(handle)
}

/// `agl-host run --dashboard [ADDR]`: the run's store and the dashboard on `addr` (the default
/// address falls back to a free port when taken), answering `edge`'s hosts and origins too.
pub async fn serve_run(
    backend: Arc<dyn StoreBackend>,
    addr: SocketAddr,
    edge: &crate::args::EdgeArgs,
) -> anyhow::Result<ServerHandle> {
    if !addr.ip().is_loopback() {
        stderr_line(&format!(
            "warning: --dashboard on {addr}: anyone who can reach it can read and change the run (it has no token)"
        ));
    }
    let options = edge.allow(ServerOptions {
        host: addr.ip(),
        port: addr.port(),
        ..ServerOptions::default()
    });
    serve(backend, options, None, addr.port() == DEFAULT_PORT)
        .await
        .context("starting the dashboard")
}

/// `agl-host dashboard`: opens the kept run (or the store --db names), serves it with the
/// dashboard, prints the URL, and serves until Ctrl-C or SIGTERM; with neither, every kept run
/// of --dir (`dashboard_runs`).
pub async fn run(args: DashboardArgs) -> anyhow::Result<ExitCode> {
    if args.run.is_none() && args.db.is_none() {
        return crate::dashboard_runs::run(args).await;
    }
    let (db, _) = agl_runs::find::resolve(args.db.as_deref(), args.run.as_deref(), &args.dir)?;
    let agl_runs::open::OpenedKept {
        store: backend,
        record,
        place,
    } = agl_runs::open::open_kept(&db).await?;
    let mut interrupts = crate::signals::Interrupts::register()?;
    warn_if_open(args.host, args.token.is_some(), "the run");
    let options = args.edge.allow(ServerOptions {
        host: args.host,
        port: args.port,
        token: args.token.clone(),
        ..ServerOptions::default()
    });
    let handle = serve(backend, options, None, args.port == DEFAULT_PORT)
        .await
        .context("starting the dashboard")?;
    let what = record.map_or_else(
        || "a store with no run record".to_owned(),
        |r| format!("run {}", r.run_id),
    );
    stderr_line(&format!(
        "agl-host dashboard: listening on {} ({what} from {}; Ctrl-C to stop)",
        url(&handle, args.token.as_deref()),
        place
    ));
    interrupts.wait().await;
    handle.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

/// Warns when the dashboard is served beyond this machine with no token (`what`: what it serves).
pub fn warn_if_open(host: std::net::IpAddr, has_token: bool, what: &str) {
    if !host.is_loopback() && !has_token {
        stderr_line(&format!(
            "warning: serving on {host} without --token: anyone who can reach it can read and change {what}"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_percent_encoded_into_the_fragment() {
        assert_eq!(fragment_encoded("s3cret-_.~"), "s3cret-_.~");
        assert_eq!(fragment_encoded("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
    }
}
