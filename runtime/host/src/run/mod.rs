//! `agl-host run` / `agl-host dev`, in phases, each a module of its own: [`plan`] checks every
//! input before anything is built; [`load`] builds and loads the components; [`keep`] opens the
//! run's store and its record; [`strategy`] chooses who runs the rollouts (shared-memory: runners
//! in this process; client-server: this process serves the store and starts runner processes of
//! this executable; `--store URL`: the algorithm against a remote store whose runners are
//! elsewhere) and serves the LLM proxy; [`train`] runs the trainer with the progress display and
//! Ctrl-C handling; [`report`] writes the results file and prints the summary.

mod keep;
mod load;
mod plan;
mod report;
mod strategy;

use crate::args::{CommonArgs, Strategy};
use crate::otlp_export::{self, OtlpExport};
use crate::output::{self, stderr_line};
use crate::progress::Progress;
use crate::signals::{self, Interrupts};
use agl_runner::{ExecutionStrategy, FitRequest, Shutdown, Trainer, TrainerOptions};
use agl_store::LightningStore;
use agl_wasm::{AlgorithmComponent, LogLevel};
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

/// Exit code of a run stopped by Ctrl-C.
pub const EXIT_INTERRUPTED: u8 = 130;
/// Exit code of a run that completed with every rollout failed.
pub const EXIT_ALL_FAILED: u8 = 3;

/// What runs the agent: this command (with the agent given), or a remote store's runners.
pub enum Target<'a> {
    Agent(&'a Path),
    RemoteStore { url: &'a str, token: Option<String> },
}

pub async fn run(mut common: CommonArgs, target: Target<'_>, algo: &Path, verbose: u8) -> anyhow::Result<ExitCode> {
    let mut plan = plan::plan(&mut common, &target, algo).await?;
    let loaded = load::load(&plan, &common, &target)?;
    let interrupts = Interrupts::register()?;
    announce(&common, &plan, &loaded);

    let progress = Arc::new(Progress::new(
        !common.no_progress && std::io::stderr().is_terminal(),
        log_level(verbose),
    ));
    let keep::Kept {
        store,
        mut kept,
        replay,
    } = keep::open(
        &common,
        plan.db.take(),
        plan.remote_store.take(),
        &loaded.agent_name,
        &loaded.algo_name,
    )
    .await?;
    // The progress line's ETA: the store's rollouts finished and still to go.
    progress.watch_store(store.clone());
    let dashboard = keep::serve_dashboard(&common, &kept).await?;
    let shutdown = Shutdown::new();
    let (first, second) = (progress.clone(), progress.clone());
    let grace = plan.grace;
    signals::watch(
        interrupts,
        shutdown.clone(),
        move || {
            first.println(&format!(
                "interrupted: stopping the algorithm, letting running attempts finish (up to {grace:?}); Ctrl-C again to stop at once"
            ))
        },
        move || second.println("stopping at once"),
    );

    let proxy = match plan.proxy_upstreams.take() {
        Some(upstreams) => Some(
            strategy::serve_proxy(
                &common,
                upstreams,
                plan.otlp.as_ref(),
                &store,
                &progress,
                &mut plan.initial_resources,
            )
            .await?,
        ),
        None => None,
    };
    let load::Loaded {
        agent_plan,
        agent,
        algorithm,
        agent_name,
        algo_name,
    } = loaded;
    let (execution, store_server) = strategy::choose(
        &common,
        strategy::StrategyInputs {
            agent,
            agent_path: agent_plan.as_ref().map(|plan| plan.path.as_path()),
            store: &store,
            progress: &progress,
            llm: plan.llm.clone(),
            timing: &plan.timing,
            unresponsive_after: plan.unresponsive_after.as_deref(),
            grace: plan.grace,
            otlp: plan.otlp.as_ref(),
            proxy: proxy.as_ref(),
        },
    )
    .await?;

    let fit = train(
        &store,
        execution,
        algorithm,
        &mut plan,
        &progress,
        &shutdown,
        common.seed,
    )
    .await?;
    progress.finish();
    if let Some(server) = store_server {
        server.shutdown().await;
    }
    if let Some(proxy) = proxy {
        proxy.server.shutdown().await;
    }
    let otlp_report = otlp_export::finish(plan.otlp.take()).await;

    let ended = report::Ended {
        fit,
        otlp_report,
        agent_name,
        algo_name,
        runners: if agent_plan.is_some() { common.runners } else { 0 },
    };
    let mut results = report::results(&common, store.as_ref(), &progress, ended).await?;
    report::report(&common, &mut results, &mut kept, replay.as_ref()).await?;
    // Served until the run record says how the run ended (a kept run opens again with
    // `agl-host dashboard RUN`, as the summary says).
    if let Some(dashboard) = dashboard {
        output::print("  dashboard stopped: the run has ended\n");
        dashboard.shutdown().await;
    }
    Ok(report::exit_code(&results))
}

/// The line saying what runs: the agent, the algorithm, the tasks, the runners and the LLM.
fn announce(common: &CommonArgs, plan: &plan::Plan, loaded: &load::Loaded) {
    let where_runners = match (&plan.remote_store, common.strategy) {
        (Some(_), _) => "remote".to_owned(),
        (None, Strategy::SharedMemory) => format!("{} runner(s), shared-memory", common.runners),
        (None, Strategy::ClientServer) => format!("{} runner process(es), client-server", common.runners),
    };
    let tasks = match &common.eval {
        Some(eval) => format!("{} {} tasks", plan.train.len(), output::one_line(&eval.split)),
        None => format!("{} train / {} val tasks", plan.train.len(), plan.val.len()),
    };
    stderr_line(&format!(
        "agent {} · algorithm {} · {tasks} · {where_runners} · LLM: {}",
        output::one_line(&loaded.agent_name),
        output::one_line(&loaded.algo_name),
        plan.llm.describe()
    ));
}

/// The guests' log level: info, then debug and trace with each `-v`.
fn log_level(verbose: u8) -> LogLevel {
    match verbose {
        0 => LogLevel::Info,
        1 => LogLevel::Debug,
        _ => LogLevel::Trace,
    }
}

/// Runs the trainer over `store` until the algorithm ends or the run is stopped.
async fn train(
    store: &Arc<dyn LightningStore>,
    execution: ExecutionStrategy,
    algorithm: AlgorithmComponent,
    plan: &mut plan::Plan,
    progress: &Arc<Progress>,
    shutdown: &Shutdown,
    seed: u64,
) -> anyhow::Result<agl_runner::FitReport> {
    let trainer = Trainer::new(
        store.clone(),
        execution,
        Arc::new(algorithm),
        plan.llm.clone(),
        progress.clone(),
        TrainerOptions {
            grace: plan.grace,
            span_export: plan.otlp.as_ref().map(OtlpExport::span_export),
        },
    );
    let request = FitRequest {
        config_json: std::mem::take(&mut plan.config_json),
        train: std::mem::take(&mut plan.train),
        val: std::mem::take(&mut plan.val),
        seed,
        initial_resources: plan.initial_resources.take(),
    };
    Ok(trainer.fit(request, shutdown).await?)
}
