//! `agl-host run` / `agl-host dev`: read and check the inputs, load both components, run the
//! shared-memory trainer with the progress display, handle Ctrl-C, then print the summary and
//! write the results file.

use crate::args::CommonArgs;
use crate::inputs::{self, InputError};
use crate::progress::Progress;
use crate::results::{Results, ResultsInput};
use crate::{llm, sandbox};
use agl_runner::{FitRequest, FitStatus, Hook, RunReport, Shutdown, Trainer, TrainerOptions};
use agl_store::{InMemoryLightningStore, LightningStore};
use agl_wasm::{EngineOptions, LogLevel, SandboxPolicy, WasmHost};
use anyhow::Context;
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

/// Exit code of a run stopped by Ctrl-C.
pub const EXIT_INTERRUPTED: u8 = 130;

fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// Ctrl-C (SIGINT), registered at once: a signal that arrives before the first poll is not lost.
struct Interrupts {
    #[cfg(unix)]
    signal: tokio::signal::unix::Signal,
}

impl Interrupts {
    fn register() -> anyhow::Result<Self> {
        #[cfg(unix)]
        {
            let kind = tokio::signal::unix::SignalKind::interrupt();
            let signal = tokio::signal::unix::signal(kind).context("listening for Ctrl-C")?;
            Ok(Self { signal })
        }
        #[cfg(not(unix))]
        Ok(Self {})
    }

    /// The next Ctrl-C; `false` when no more can come.
    async fn next(&mut self) -> bool {
        #[cfg(unix)]
        {
            self.signal.recv().await.is_some()
        }
        #[cfg(not(unix))]
        {
            tokio::signal::ctrl_c().await.is_ok()
        }
    }
}

/// First Ctrl-C: graceful stop; second: force.
fn watch_signals(mut interrupts: Interrupts, shutdown: Shutdown, progress: Arc<Progress>, grace: std::time::Duration) {
    tokio::spawn(async move {
        if !interrupts.next().await {
            return;
        }
        progress.println(&format!(
            "interrupted: stopping the algorithm, letting running attempts finish (up to {grace:?}); Ctrl-C again to stop at once"
        ));
        shutdown.stop();
        if interrupts.next().await {
            progress.println("stopping at once");
            shutdown.force();
        }
    });
}

pub async fn run(common: CommonArgs, algo: &Path, verbose: u8) -> anyhow::Result<ExitCode> {
    let train = inputs::read_dataset(&common.train)?;
    let val = match &common.val {
        Some(path) => inputs::read_dataset(path)?,
        None => Vec::new(),
    };
    let initial_resources = common.resources.as_deref().map(inputs::read_resources).transpose()?;
    let config_json = inputs::read_algorithm_config(common.algo_config.as_deref())?;
    let grace = agl_wasm::policy::parse_duration(&common.grace).map_err(|e| InputError(format!("--grace: {e}")))?;
    let overrides = sandbox::overrides(&common.sandbox)?;
    let llm = llm::backend(&common.llm)?;

    let agent_path = inputs::resolve_component(&common.agent, "agent")?;
    let algo_path = inputs::resolve_component(algo, "algorithm")?;
    let mut agent_policy = SandboxPolicy::for_component(&agent_path).map_err(|e| InputError(e.to_string()))?;
    agent_policy.apply_overrides(overrides.clone());
    let mut algo_policy = SandboxPolicy::for_algorithm(&algo_path).map_err(|e| InputError(e.to_string()))?;
    if let Some(timeout) = overrides.llm_timeout {
        algo_policy.llm_timeout = timeout;
    }
    let options = EngineOptions {
        fuel: agent_policy.fuel.is_some(),
        max_concurrent_instances: u32::from(common.runners) + 16,
        ..EngineOptions::default()
    };
    let host = WasmHost::new(options).context("starting the WebAssembly engine")?;
    let agent = host
        .load_agent(&agent_path, agent_policy)
        .map_err(|e| InputError(e.to_string()))?;
    let algorithm = host
        .load_algorithm(&algo_path, algo_policy)
        .map_err(|e| InputError(e.to_string()))?;
    let (agent_name, algo_name) = (file_name(&agent_path), file_name(&algo_path));
    let interrupts = Interrupts::register()?;
    eprintln!(
        "agent {agent_name} · algorithm {algo_name} · {} train / {} val tasks · {} runner(s) · LLM: {}",
        train.len(),
        val.len(),
        common.runners,
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
    watch_signals(interrupts, shutdown.clone(), progress.clone(), grace);
    let hooks: Arc<[Arc<dyn Hook>]> = Arc::new([progress.clone() as Arc<dyn Hook>]);
    let trainer = Trainer::new(
        store.clone(),
        Arc::new(agent),
        Arc::new(algorithm),
        llm,
        progress.clone(),
        TrainerOptions {
            runners: usize::from(common.runners),
            grace,
            hooks,
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
