//! `agl-host run` / `agl-host dev`: read and check the inputs, load both components, run the
//! trainer (shared-memory: runners in this process; client-server: this process serves the store
//! and starts runner processes) with the progress display, handle Ctrl-C, then print the summary
//! and write the results file.

use crate::args::{CommonArgs, Strategy};
use crate::components::{self, file_name};
use crate::fleet::ProcessFleet;
use crate::inputs::{self, InputError};
use crate::llm;
use crate::progress::Progress;
use crate::results::{Results, ResultsInput};
use crate::signals::{self, Interrupts};
use agl_runner::{FitRequest, FitStatus, Hook, RunReport, RunnerOptions, Shutdown, Trainer, TrainerOptions};
use agl_store::{InMemoryLightningStore, LightningStore};
use agl_wasm::LogLevel;
use anyhow::Context;
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

/// Exit code of a run stopped by Ctrl-C.
pub const EXIT_INTERRUPTED: u8 = 130;

fn duration(flag: &str, value: &str) -> Result<std::time::Duration, InputError> {
    agl_wasm::policy::parse_duration(value).map_err(|e| InputError(format!("--{flag}: {e}")))
}

pub async fn run(common: CommonArgs, algo: &Path, verbose: u8) -> anyhow::Result<ExitCode> {
    let train = inputs::read_dataset(&common.train)?;
    let val = match &common.val {
        Some(path) => inputs::read_dataset(path)?,
        None => Vec::new(),
    };
    let initial_resources = common.resources.as_deref().map(inputs::read_resources).transpose()?;
    let config_json = inputs::read_algorithm_config(common.algo_config.as_deref())?;
    let grace = duration("grace", &common.grace)?;
    let heartbeat = duration("heartbeat", &common.heartbeat)?;
    let llm = llm::backend(&common.llm)?;

    let loaded = components::load_agent(&common.agent, &common.sandbox, u32::from(common.runners) + 16)?;
    let (algorithm, algo_path) = components::load_algorithm(&loaded.host, algo, &loaded.overrides)?;
    let (agent_name, algo_name) = (file_name(&loaded.path), file_name(&algo_path));
    let interrupts = Interrupts::register()?;
    eprintln!(
        "agent {agent_name} · algorithm {algo_name} · {} train / {} val tasks · {} runner(s) ({}) · LLM: {}",
        train.len(),
        val.len(),
        common.runners,
        match common.strategy {
            Strategy::SharedMemory => "shared-memory",
            Strategy::ClientServer => "client-server",
        },
        llm.describe()
    );

    let show = !common.no_progress && std::io::stderr().is_terminal();
    let log_level = match verbose {
        0 => LogLevel::Info,
        1 => LogLevel::Debug,
        _ => LogLevel::Trace,
    };
    let progress = Arc::new(Progress::new(show, log_level));
    let store: Arc<dyn LightningStore> = Arc::new(InMemoryLightningStore::new());
    let shutdown = Shutdown::new();
    let (first, second) = (progress.clone(), progress.clone());
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

    // Client-server: serve the store on loopback and start the runner processes.
    let mut server = None;
    let mut remote = None;
    if common.strategy == Strategy::ClientServer {
        let options = agl_server::ServerOptions {
            port: common.port,
            ..agl_server::ServerOptions::default()
        };
        let handle = agl_server::serve(store.clone(), options)
            .await
            .context("starting the store server")?;
        progress.println(&format!("store served at {}", handle.url()));
        let mut args: Vec<std::ffi::OsString> = vec![
            "--store".into(),
            handle.url().into(),
            "--agent".into(),
            loaded.path.clone().into_os_string(),
            "--heartbeat".into(),
            common.heartbeat.clone().into(),
            "--grace".into(),
            common.grace.clone().into(),
        ];
        args.extend(common.llm.to_args());
        args.extend(common.sandbox.to_args());
        let exe = std::env::current_exe().context("finding the agl-host executable")?;
        let fleet = ProcessFleet::spawn(usize::from(common.runners), &exe, &args, &progress)?;
        remote = Some(Arc::new(fleet) as Arc<dyn agl_runner::RemoteRunners>);
        server = Some(handle);
    }

    let hooks: Arc<[Arc<dyn Hook>]> = Arc::new([progress.clone() as Arc<dyn Hook>]);
    let trainer = Trainer::new(
        store.clone(),
        Arc::new(loaded.agent),
        Arc::new(algorithm),
        llm,
        progress.clone(),
        TrainerOptions {
            runners: usize::from(common.runners),
            grace,
            hooks,
            runner: RunnerOptions {
                heartbeat_interval: heartbeat,
                ..RunnerOptions::default()
            },
            remote,
            ..TrainerOptions::default()
        },
    );
    let request = FitRequest {
        config_json,
        train,
        val,
        seed: common.seed,
        initial_resources,
    };
    let fit = trainer.fit(request, &shutdown).await?;
    progress.finish();
    if let Some(server) = server {
        server.shutdown().await;
    }

    let report = RunReport::collect(store.as_ref())
        .await
        .context("reading the results from the store")?;
    let statistics = store.statistics().await?;
    let best = progress.best();
    let best_resources = match best.as_ref().and_then(|b| b.resources_id.as_deref()) {
        Some(id) => store.get_resources_by_id(id).await?.map(|r| r.resources),
        None => None,
    };
    let exit = match &fit.status {
        FitStatus::Completed => ExitCode::SUCCESS,
        FitStatus::AlgorithmFailed(_) => ExitCode::FAILURE,
        FitStatus::Interrupted => ExitCode::from(EXIT_INTERRUPTED),
    };
    if let Some(outcome) = &fit.algorithm
        && outcome.result.is_err()
        && !outcome.stderr.text.is_empty()
    {
        eprintln!("algorithm stderr:\n{}", outcome.stderr.text.trim_end());
    }
    let results = Results::new(ResultsInput {
        agent: agent_name,
        algorithm: algo_name,
        fit,
        report,
        best,
        best_resources,
        runners: common.runners,
        statistics,
    });
    print!("{}", results.summary());
    if let Some(path) = &common.output {
        let json = serde_json::to_string_pretty(&results)?;
        std::fs::write(path, json + "\n").with_context(|| format!("writing the results to {}", path.display()))?;
        println!("  results written to {}", path.display());
    }
    Ok(exit)
}
