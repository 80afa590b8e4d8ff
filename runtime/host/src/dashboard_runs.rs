//! `agl-host dashboard` with no RUN: every run kept in a folder behind one dashboard, served
//! until Ctrl-C or SIGTERM. The routes are `agl_dashboard::runs`'; serving one run alone is
//! `dashboard_cmd`'s.

use crate::dashboard_cmd;
use crate::inputs::InputError;
use agl_server::ServerOptions;
use agl_store_db::DbUrl;

/// `agl-host dashboard` with no RUN: serves every run kept in `dir` until Ctrl-C or SIGTERM.
pub async fn run(args: crate::args::DashboardArgs) -> anyhow::Result<std::process::ExitCode> {
    use anyhow::Context;
    let count = agl_runs::find::run_files(&args.dir)
        .map_err(|e| InputError(format!("cannot list the runs in {}: {e}", args.dir.display())))?
        .len();
    let mut interrupts = crate::signals::Interrupts::register()?;
    dashboard_cmd::warn_if_open(args.host, args.token.is_some(), "the runs");
    let options = args.edge.allow(ServerOptions {
        host: args.host,
        port: args.port,
        token: args.token.clone(),
        ..ServerOptions::default()
    });
    // The root serves no run of its own: its store API is an empty store's, kept in memory.
    let root = agl_runs::open::open_to_read(&DbUrl::Memory)?;
    let routes = agl_dashboard::runs::routes(args.dir.clone(), &options);
    let handle = dashboard_cmd::serve_routes(root, options, routes, args.port == dashboard_cmd::DEFAULT_PORT)
        .await
        .context("starting the dashboard")?;
    crate::output::stderr_line(&format!(
        "agl-host dashboard: listening on {} ({count} kept run(s) in {}; Ctrl-C to stop)",
        dashboard_cmd::url(&handle, args.token.as_deref()),
        args.dir.display()
    ));
    interrupts.wait().await;
    handle.shutdown().await;
    Ok(std::process::ExitCode::SUCCESS)
}
