//! `agl-host run` / `agl-host dev`: check every input before anything is built, build and load the
//! components, run the trainer (shared-memory: runners in this process; client-server: this process
//! serves the store and starts runner processes; `--store URL`: the algorithm against a remote
//! store whose runners are elsewhere) with the progress display, handle Ctrl-C, then write the
//! results file and print the summary.

use crate::args::{CommonArgs, Strategy};
use crate::components::{self, file_name};
use crate::fleet::ProcessFleet;
use crate::inputs::{self, InputError};
use crate::llm;
use crate::output::{self, stderr_line};
use crate::progress::Progress;
use crate::remote;
use crate::results::{Results, ResultsInput};
use crate::signals::{self, Interrupts};
use agl_runner::{FitRequest, Hook, RunReport, RunnerOptions, Runners, Shutdown, Trainer, TrainerOptions};
use agl_store::{InMemoryLightningStore, LightningStore};
use agl_wasm::LogLevel;
use anyhow::Context;
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

fn duration(flag: &str, value: &str) -> Result<std::time::Duration, InputError> {
    agl_wasm::policy::parse_duration(value).map_err(|e| InputError(format!("--{flag}: {e}")))
}

pub async fn run(common: CommonArgs, target: Target<'_>, algo: &Path, verbose: u8) -> anyhow::Result<ExitCode> {
    // Every input is checked before anything is built or started.
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
    let algo_source = inputs::algorithm_source(algo)?;
    let (agent_source, remote_store) = match &target {
        Target::Agent(path) => (Some(inputs::agent_source(path)?), None),
        Target::RemoteStore { url, token } => (None, Some(remote::connect(url, token.clone()).await?)),
    };

    // Build (guest folders) and load the components.
    let overrides = crate::sandbox::overrides(&common.sandbox)?;
    let agent_plan = agent_source
        .as_ref()
        .map(|source| components::plan_agent(source, &overrides))
        .transpose()?;
    let algorithm_plan = components::plan_algorithm(&algo_source, &overrides)?;
    let fuel = agent_plan.as_ref().is_some_and(|plan| plan.policy.fuel.is_some());
    // The pool is sized for the larger of the two components, per instance.
    let shape = agent_plan
        .as_ref()
        .map_or(algorithm_plan.shape, |plan| plan.shape.max(algorithm_plan.shape));
    let host = components::engine(fuel, u32::from(common.runners) + 16, shape)?;
    let agent = agent_plan
        .as_ref()
        .map(|plan| components::load_agent(&host, plan))
        .transpose()?;
    let algorithm = components::load_algorithm(&host, &algorithm_plan)?;
    // Both fit their worlds; now, can they run?
    if let Some(agent) = &agent {
        components::require_llm(agent, "agent", &common.llm)?;
    }
    components::require_llm(&algorithm, "algorithm", &common.llm)?;
    let agent_name = match (&agent_plan, &target) {
        (Some(plan), _) => file_name(&plan.path),
        (None, Target::RemoteStore { url, .. }) => format!("the runners of {url}"),
        (None, Target::Agent(path)) => file_name(path),
    };
    let algo_name = algorithm.name().to_owned();
    let interrupts = Interrupts::register()?;
    let where_runners = match (&remote_store, common.strategy) {
        (Some(_), _) => "remote".to_owned(),
        (None, Strategy::SharedMemory) => format!("{} runner(s), shared-memory", common.runners),
        (None, Strategy::ClientServer) => format!("{} runner process(es), client-server", common.runners),
    };
    stderr_line(&format!(
        "agent {agent_name} · algorithm {algo_name} · {} train / {} val tasks · {where_runners} · LLM: {}",
        train.len(),
        val.len(),
        llm.describe()
    ));

    let show = !common.no_progress && std::io::stderr().is_terminal();
    let log_level = match verbose {
        0 => LogLevel::Info,
        1 => LogLevel::Debug,
        _ => LogLevel::Trace,
    };
    let progress = Arc::new(Progress::new(show, log_level));
    let store: Arc<dyn LightningStore> = match remote_store {
        Some(client) => Arc::new(client),
        None => Arc::new(InMemoryLightningStore::new()),
    };
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

    // Who runs the rollouts: local runners, runner processes of a store served here, or remote ones.
    let mut server = None;
    let runners = match (agent, &agent_plan) {
        (Some(agent), Some(plan)) if common.strategy == Strategy::ClientServer => {
            drop(agent); // the runner processes load it themselves
            let (handle, fleet) = serve_to_runner_processes(&common, &store, &plan.path, &progress).await?;
            server = Some(handle);
            Runners::Remote(Arc::new(fleet))
        }
        (Some(agent), _) => Runners::Local {
            agent: Arc::new(agent),
            count: usize::from(common.runners),
        },
        (None, _) => {
            progress.println("the algorithm enqueues into the remote store; its runners run the rollouts");
            Runners::Remote(Arc::new(remote::TheirRunners))
        }
    };

    let hooks: Arc<[Arc<dyn Hook>]> = Arc::new([progress.clone() as Arc<dyn Hook>]);
    let trainer = Trainer::new(
        store.clone(),
        runners,
        Arc::new(algorithm),
        llm,
        progress.clone(),
        TrainerOptions {
            grace,
            hooks,
            runner: RunnerOptions {
                heartbeat_interval: heartbeat,
                ..RunnerOptions::default()
            },
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
    if let Some(outcome) = &fit.algorithm
        && outcome.result.is_err()
        && !outcome.stderr.text.is_empty()
    {
        stderr_line(&format!("algorithm stderr:\n{}", outcome.stderr.text.trim_end()));
    }
    let results = Results::new(ResultsInput {
        agent: agent_name,
        algorithm: algo_name,
        fit,
        report,
        best,
        best_resources,
        runners: if agent_plan.is_some() { common.runners } else { 0 },
        statistics,
    });
    // The file first: a reader that closes stdout early (`| head`) must not cost the results.
    if let Some(path) = &common.output {
        let json = serde_json::to_string_pretty(&results)?;
        std::fs::write(path, json + "\n").with_context(|| format!("writing the results to {}", path.display()))?;
    }
    output::print(&results.summary());
    if let Some(path) = &common.output {
        output::print(&format!("  results written to {}\n", path.display()));
    }
    let exit = match results.status {
        "completed" if results.every_rollout_failed() => ExitCode::from(EXIT_ALL_FAILED),
        "completed" => ExitCode::SUCCESS,
        "interrupted" => ExitCode::from(EXIT_INTERRUPTED),
        _ => ExitCode::FAILURE,
    };
    Ok(exit)
}

/// Client-server: serves `store` on loopback and starts the runner processes of the agent at
/// `agent_path` against it.
async fn serve_to_runner_processes(
    common: &CommonArgs,
    store: &Arc<dyn LightningStore>,
    agent_path: &Path,
    progress: &Arc<Progress>,
) -> anyhow::Result<(agl_server::ServerHandle, ProcessFleet)> {
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
        agent_path.as_os_str().to_owned(),
        "--heartbeat".into(),
        common.heartbeat.clone().into(),
        "--grace".into(),
        common.grace.clone().into(),
    ];
    args.extend(common.llm.to_args());
    args.extend(common.sandbox.to_args());
    let exe = std::env::current_exe().context("finding the agl-host executable")?;
    let fleet = ProcessFleet::spawn(usize::from(common.runners), &exe, &args, progress)?;
    Ok((handle, fleet))
}
