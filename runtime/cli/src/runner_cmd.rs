//! `agl-host runner`: N runners in this process against a remote store (HTTP), until Ctrl-C or
//! SIGTERM (finish the running attempts, then exit; a second signal abandons them).

use crate::args::RunnerArgs;
use crate::components::{self, file_name};
use crate::inputs::InputError;
use crate::llm;
use crate::signals::{self, Interrupts};
use agl_client::{ClientOptions, HttpStoreClient};
use agl_runner::{Runner, RunnerOptions, Shutdown};
use agl_store::LightningStore;
use agl_wasm::SpanRecorder;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

pub async fn run(args: RunnerArgs) -> anyhow::Result<ExitCode> {
    let heartbeat =
        agl_wasm::policy::parse_duration(&args.heartbeat).map_err(|e| InputError(format!("--heartbeat: {e}")))?;
    let grace = agl_wasm::policy::parse_duration(&args.grace).map_err(|e| InputError(format!("--grace: {e}")))?;
    let llm = llm::backend(&args.llm)?;
    let options = ClientOptions {
        token: args.token.clone(),
        ..ClientOptions::default()
    };
    let client = HttpStoreClient::new(&args.store, options).map_err(|e| InputError(format!("--store: {e}")))?;
    if !client.health().await {
        return Err(InputError(format!(
            "cannot reach the store at {} (is `agl-host store` running?)",
            args.store
        ))
        .into());
    }
    let loaded = components::load_agent(&args.agent, &args.sandbox, u32::from(args.runners) + 4)?;
    let interrupts = Interrupts::register()?;
    let store: Arc<dyn LightningStore> = Arc::new(client);
    let recorder = Arc::new(SpanRecorder::new(store.clone(), Duration::from_millis(100)));
    let agent = Arc::new(loaded.agent);
    let prefix = args
        .worker_prefix
        .clone()
        .unwrap_or_else(|| format!("runner-{}", std::process::id()));
    eprintln!(
        "{prefix}: {} runner(s) of {} on {} · LLM: {}",
        args.runners,
        file_name(&loaded.path),
        args.store,
        llm.describe()
    );

    let shutdown = Shutdown::new();
    let name = prefix.clone();
    signals::watch(
        interrupts,
        shutdown.clone(),
        move || eprintln!("{name}: stopping after the running attempts (up to {grace:?})"),
        || eprintln!("stopping at once"),
    );
    let force_after_grace = {
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            shutdown.stopping().await;
            tokio::time::sleep(grace).await;
            shutdown.force();
        })
    };
    let mut tasks = tokio::task::JoinSet::new();
    let mut counters = Vec::new();
    for index in 1..=args.runners {
        let worker_id = if args.runners == 1 {
            prefix.clone()
        } else {
            format!("{prefix}-{index}")
        };
        let runner = Runner::new(worker_id, store.clone(), agent.clone(), llm.clone(), recorder.clone()).with_options(
            RunnerOptions {
                heartbeat_interval: heartbeat,
                ..RunnerOptions::default()
            },
        );
        counters.push(runner.counters());
        let stop = shutdown.clone();
        tasks.spawn(async move { runner.run(&stop).await });
    }
    while let Some(joined) = tasks.join_next().await {
        if let Err(e) = joined {
            tracing::error!("a runner task ended abnormally: {e}");
        }
    }
    force_after_grace.abort();
    if let Err(e) = recorder.flush().await {
        tracing::warn!("final span flush failed: {e}");
    }
    let succeeded: u64 = counters.iter().map(|c| c.succeeded()).sum();
    let failed: u64 = counters.iter().map(|c| c.failed()).sum();
    eprintln!("{prefix}: stopped after {succeeded} succeeded and {failed} failed attempts");
    Ok(ExitCode::SUCCESS)
}
