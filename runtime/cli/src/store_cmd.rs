//! `agl-host store`: an in-memory LightningStore served over HTTP until Ctrl-C or SIGTERM.

use crate::args::StoreArgs;
use crate::inputs::InputError;
use crate::output::stderr_line;
use agl_server::{ServerOptions, serve};
use agl_store::{InMemoryLightningStore, LightningStore};
use anyhow::Context;
use std::process::ExitCode;
use std::sync::Arc;

pub async fn run(args: StoreArgs) -> anyhow::Result<ExitCode> {
    let max_body = agl_wasm::policy::parse_size(&args.max_body).map_err(|e| InputError(format!("--max-body: {e}")))?;
    if !args.host.is_loopback() && args.token.is_none() {
        stderr_line(&format!(
            "warning: serving on {} without --token: anyone who can reach it can use the store",
            args.host
        ));
    }
    let mut interrupts = crate::signals::Interrupts::register()?;
    let store: Arc<dyn LightningStore> = Arc::new(InMemoryLightningStore::new());
    let options = ServerOptions {
        host: args.host,
        port: args.port,
        token: args.token,
        max_body_bytes: usize::try_from(max_body).unwrap_or(usize::MAX),
    };
    let handle = serve(store, options).await.context("starting the store server")?;
    stderr_line(&format!(
        "agl-host store: listening on {} (Ctrl-C to stop)",
        handle.url()
    ));
    interrupts.wait().await;
    stderr_line("agl-host store: stopping");
    handle.shutdown().await;
    Ok(ExitCode::SUCCESS)
}
