//! `agl-host run` / `agl-host dev`: check every input before anything is built, build and load the
//! components, choose the execution strategy (shared-memory: runners in this process;
//! client-server: this process serves the store and the strategy starts runner processes of this
//! executable; `--store URL`: the algorithm against a remote store whose runners are elsewhere),
//! run the trainer with the progress display, handle Ctrl-C, then write the results file and print
//! the summary.

use crate::args::{CommonArgs, Strategy};
use crate::components::{self, file_name};
use crate::fleet::ProcessLauncher;
use crate::inputs;
use crate::kept::{self, KeptRun};
use crate::llm;
use crate::otlp_export::{self, OtlpExport};
use crate::output::{self, stderr_line};
use crate::progress::Progress;
use crate::remote;
use crate::results::{Results, ResultsInput};
use crate::runner_cmd::{self, DEFAULT_UNRESPONSIVE_AFTER, RunnerTiming};
use crate::signals::{self, Interrupts};
use agl_runner::{
    ExecutionStrategy, FitRequest, Hook, InProcessRunners, RunReport, RunnerProcesses, Shutdown, Trainer,
    TrainerOptions,
};
use agl_store::LightningStore;
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

/// Once asked to stop, how long runner processes get beyond their own grace period (to mark the
/// attempts they abandon) before they are killed.
const RUNNER_PROCESS_STOP_MARGIN: std::time::Duration = std::time::Duration::from_secs(5);

pub async fn run(mut common: CommonArgs, target: Target<'_>, algo: &Path, verbose: u8) -> anyhow::Result<ExitCode> {
    // Every input is checked before anything is built or started.
    let train = inputs::read_dataset(&common.train)?;
    let val = match &common.val {
        Some(path) => inputs::read_dataset(path)?,
        None => Vec::new(),
    };
    // `agl-host eval`: the resources may come from a kept run, and the baseline runs the tasks as test.
    let mut initial_resources = match common.eval.as_mut().and_then(|eval| eval.resources.take()) {
        Some(resources) => Some(resources),
        None => common.resources.as_deref().map(inputs::read_resources).transpose()?,
    };
    let config_json = match &common.eval {
        Some(_) => crate::eval_cmd::ALGO_CONFIG.to_owned(),
        None => inputs::read_algorithm_config(common.algo_config.as_deref())?,
    };
    let grace = runner_cmd::duration("grace", &common.grace)?;
    let remote = matches!(target, Target::RemoteStore { .. });
    if common.strategy == Strategy::ClientServer && common.runners > crate::args::MAX_RUNNER_PROCESSES {
        return Err(crate::inputs::InputError(format!(
            "--strategy client-server starts one runner process per runner, at most {}; for {} agents in \
             flight use the default shared-memory strategy, or start `agl-host runner --runners N` processes \
             against `agl-host store`",
            crate::args::MAX_RUNNER_PROCESSES,
            common.runners
        ))
        .into());
    }
    if remote && common.db.is_some() {
        return Err(crate::inputs::InputError(
            "--db keeps a run in the store this process serves; with --store the remote store keeps it \
             (start it with `agl-host store --db ...`)"
                .into(),
        )
        .into());
    }
    if remote && common.dashboard.is_some() {
        return Err(crate::inputs::InputError(
            "--dashboard serves the store this run keeps; with --store, open the remote store's own URL in a \
             browser (`agl-host store` serves the dashboard at /)"
                .into(),
        )
        .into());
    }
    // $AGL_DB is the default store of runs that keep their own (not of --store runs).
    let db = match (&common.db, remote) {
        (Some(text), _) => Some(text.parse::<agl_store_db::DbUrl>()?),
        (None, false) => std::env::var("AGL_DB")
            .ok()
            .filter(|v| !v.trim().is_empty())
            .map(|text| text.parse::<agl_store_db::DbUrl>())
            .transpose()?,
        (None, true) => None,
    };
    // Runner processes give rollouts a default unresponsive limit, and so do runners in this
    // process when the run is kept: a rollout whose attempt a dead process left behind is retried
    // (by another runner, or on resume). Runners of a run kept in memory share the store's fate,
    // so they give none unless asked.
    let kept_in_memory = remote || matches!(db, Some(agl_store_db::DbUrl::Memory));
    let unresponsive_after = match (&common.unresponsive_after, common.strategy) {
        (Some(value), _) => Some(value.as_str()),
        (None, Strategy::ClientServer) => Some(DEFAULT_UNRESPONSIVE_AFTER),
        (None, Strategy::SharedMemory) if !kept_in_memory => Some(DEFAULT_UNRESPONSIVE_AFTER),
        (None, Strategy::SharedMemory) => None,
    };
    let timing = RunnerTiming::parse(&common.heartbeat, unresponsive_after)?;
    let llm = llm::backend(&common.llm)?;
    let otlp = OtlpExport::from_flags(&common.otlp)?;
    let proxy_upstreams = match (common.llm_proxy, remote) {
        (false, _) => None,
        (true, true) => {
            return Err(crate::inputs::InputError(
                "--llm-proxy serves the proxy beside the store this run keeps; with --store, start it with the \
                 store: `agl-host store --llm-proxy ...`"
                    .into(),
            )
            .into());
        }
        (true, false) => Some(llm::proxy_upstreams(&common.llm, &common.proxy)?),
    };
    let algo_source = inputs::algorithm_source(algo)?;
    let (agent_source, remote_store) = match &target {
        Target::Agent(path) => (Some(inputs::agent_source(path)?), None),
        Target::RemoteStore { url, token } => (None, Some(remote::connect(url, token.clone()).await?)),
    };

    // Build (guest folders) and load the components.
    let agent_plan = agent_source
        .as_ref()
        .map(|source| components::plan_agent(source, &common.sandbox))
        .transpose()?;
    let algorithm_plan = components::plan_algorithm(&algo_source, &common.sandbox)?;
    let fuel = agent_plan
        .as_ref()
        .is_some_and(|plan| plan.policy.limits.fuel.is_some());
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
    let tasks = match &common.eval {
        Some(eval) => format!("{} {} tasks", train.len(), output::one_line(&eval.split)),
        None => format!("{} train / {} val tasks", train.len(), val.len()),
    };
    stderr_line(&format!(
        "agent {} · algorithm {} · {tasks} · {where_runners} · LLM: {}",
        output::one_line(&agent_name),
        output::one_line(&algo_name),
        llm.describe()
    ));

    let show = !common.no_progress && std::io::stderr().is_terminal();
    let log_level = match verbose {
        0 => LogLevel::Info,
        1 => LogLevel::Debug,
        _ => LogLevel::Trace,
    };
    let progress = Arc::new(Progress::new(show, log_level));
    let mut replay = None;
    let (store, mut kept): (Arc<dyn LightningStore>, Option<KeptRun>) = match remote_store {
        // The remote store keeps the run record too (`agl-host show --db`, its dashboard, `runs`).
        Some(client) => {
            let kept = kept::open_remote(client.clone(), common.name.as_deref(), &agent_name, &algo_name).await?;
            stderr_line(&format!(
                "run {} · kept in the store at {}",
                kept.run_id,
                client.base_url()
            ));
            (Arc::new(client), Some(kept))
        }
        None if common.resume.is_some() => {
            let url = db.ok_or_else(|| crate::inputs::InputError("--resume needs the run's store".into()))?;
            let (kept, replaying) = crate::resume::reopen(url).await?;
            replay = Some(replaying.clone());
            (replaying, Some(kept))
        }
        None => {
            let kept = kept::open(db, common.name.as_deref(), &agent_name, &algo_name).await?;
            stderr_line(&match kept.place() {
                Some(place) => format!("run {} · kept in {place}", kept.run_id),
                None => format!("run {} · kept in memory only (--db memory)", kept.run_id),
            });
            let store: Arc<dyn LightningStore> = kept
                .local_store()
                .context("a run kept by this process has its store here")?
                .clone();
            (store, Some(kept))
        }
    };
    // The progress line's ETA: the store's rollouts finished and still to go.
    progress.watch_store(store.clone());
    // The web dashboard on its own address: the run's store, as kept, with the page at /.
    let dashboard = match (common.dashboard, kept.as_ref().and_then(KeptRun::local_store)) {
        (Some(addr), Some(kept_store)) => {
            let handle = crate::dashboard_cmd::serve_run(kept_store.clone(), addr, &common.edge).await?;
            stderr_line(&format!("dashboard at {}", crate::dashboard_cmd::url(&handle, None)));
            Some(handle)
        }
        _ => None,
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

    // The LLM proxy on a loopback listener of its own: the run's proxy_llm resources point at
    // it, and each attempt's agent reaches it only through a capability of its own attempt.
    let mut proxy_server = None;
    let mut capabilities: Option<Arc<dyn agl_runner::ProxyCapabilities>> = None;
    // The proxy's URL and operator token, for runner processes.
    let mut proxy_for_processes: Option<(String, String)> = None;
    if let Some(upstreams) = proxy_upstreams {
        let default_model = upstreams.all()[0].default_model().to_owned();
        let mut config = agl_proxy::ProxyConfig::new(upstreams);
        config.token_ids = common.proxy.llm_token_ids;
        config.train_temperature = common.proxy.llm_train_temperature;
        config.val_temperature = common.proxy.llm_val_temperature;
        config.span_export = otlp.as_ref().map(OtlpExport::span_export);
        let proxy = agl_proxy::Proxy::new(store.clone(), config);
        let options = common.edge.allow(agl_server::ServerOptions {
            port: common.port,
            ..agl_server::ServerOptions::default()
        });
        // Runner processes ask the proxy for their attempts' capabilities with the operator's
        // token: the one given, else one made for them.
        let operator_token = match (&common.llm_proxy_token, common.strategy) {
            (Some(token), _) => Some(token.clone()),
            (None, Strategy::ClientServer) => Some(crate::proxy_capabilities::fresh_token()?),
            (None, Strategy::SharedMemory) => None,
        };
        let handle = crate::proxy_capabilities::serve(&proxy, options, operator_token.as_deref()).await?;
        let endpoint = format!("{}/v1", handle.url());
        let (resources, said) = llm::with_proxy_resource(initial_resources.take(), &endpoint, &default_model);
        initial_resources = Some(resources);
        let operator = match &common.llm_proxy_token {
            Some(_) => format!(
                "; with --llm-proxy-token: {}/v1/chat/completions and {}/rollout/ROLLOUT_ID/attempt/ATTEMPT_ID/v1",
                handle.url(),
                handle.url()
            ),
            None => String::new(),
        };
        progress.println(&format!(
            "LLM proxy at {endpoint} (-> {}): each attempt's agent gets {}/agent/CAPABILITY/v1 in its proxy_llm \
             resources{operator}; {said}",
            proxy.describe(),
            handle.url(),
        ));
        capabilities = Some(Arc::new(crate::proxy_capabilities::LocalCapabilities {
            proxy,
            base_url: handle.url(),
        }));
        proxy_for_processes = operator_token.map(|token| (handle.url(), token));
        proxy_server = Some(handle);
    }
    let mut server = None;

    // Who runs the rollouts: runners in this process, runner processes of a store served here, or
    // the remote store's own.
    let hooks: Arc<[Arc<dyn Hook>]> = Arc::new([progress.clone() as Arc<dyn Hook>]);
    let strategy = match (agent, &agent_plan) {
        (Some(agent), Some(plan)) if common.strategy == Strategy::ClientServer => {
            drop(agent); // the runner processes load it themselves
            // With the LLM proxy on --port, the store goes on any free one.
            let port = if proxy_server.is_some() { 0 } else { common.port };
            let handle = serve_store(port, &store, &progress, &common.edge).await?;
            let mut args = runner_process_args(&common, &plan.path, unresponsive_after.unwrap_or("0"));
            let mut env = Vec::new();
            if let Some((url, token)) = proxy_for_processes.take() {
                args.extend(["--llm-proxy-url".into(), url.into()]);
                env.push(("AGL_LLM_PROXY_TOKEN".to_owned(), token));
            }
            let strategy = ExecutionStrategy::Processes(RunnerProcesses {
                store_url: handle.url().to_owned(),
                count: usize::from(common.runners),
                launcher: Arc::new(ProcessLauncher {
                    exe: std::env::current_exe().context("finding the agl-host executable")?,
                    args,
                    env,
                    progress: progress.clone(),
                }),
                stop_timeout: grace + RUNNER_PROCESS_STOP_MARGIN,
            });
            server = Some(handle);
            strategy
        }
        (Some(agent), _) => ExecutionStrategy::InProcess(InProcessRunners {
            options: timing.runner_options(),
            hooks,
            span_export: otlp.as_ref().map(OtlpExport::span_export),
            proxy: capabilities.clone(),
            ..InProcessRunners::new(Arc::new(agent), llm.clone(), usize::from(common.runners))
        }),
        (None, _) => {
            progress.println("the algorithm enqueues into the remote store; its runners run the rollouts");
            ExecutionStrategy::External
        }
    };

    let trainer = Trainer::new(
        store.clone(),
        strategy,
        Arc::new(algorithm),
        llm,
        progress.clone(),
        TrainerOptions {
            grace,
            span_export: otlp.as_ref().map(OtlpExport::span_export),
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
    if let Some(server) = proxy_server {
        server.shutdown().await;
    }
    let otlp_report = otlp_export::finish(otlp).await;

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
    let mut results = Results::new(ResultsInput {
        agent: agent_name,
        algorithm: algo_name,
        fit,
        report,
        best,
        best_resources,
        runners: if agent_plan.is_some() { common.runners } else { 0 },
        statistics,
    });
    results.otlp_export = otlp_report;
    results.name = common.name.clone();
    if let Some(eval) = &common.eval {
        results.label_split(crate::eval_cmd::MODE, &eval.split);
    }
    if let Some(kept) = &mut kept {
        results.run_id = Some(kept.run_id.clone());
        results.db = kept.place();
        let value = serde_json::to_value(&results)?;
        kept.finish(results.status, value).await?;
    }
    // The file first: a reader that closes stdout early (`| head`) must not cost the results.
    if let Some(path) = &common.output {
        let json = serde_json::to_string_pretty(&results)?;
        std::fs::write(path, json + "\n").with_context(|| format!("writing the results to {}", path.display()))?;
    }
    output::print(&results.summary());
    if let Some(path) = &common.output {
        output::print(&format!("  results written to {}\n", path.display()));
    }
    if let Some(counts) = replay.as_ref().map(|r| r.counts()) {
        output::print(&format!(
            "  resumed: {} rollout(s) and {} resources version(s) of the earlier run handed to the algorithm again\n",
            counts.rollouts, counts.resources
        ));
    }
    if let Some(kept) = kept.as_ref().filter(|k| k.place().is_some()) {
        output::print(&format!(
            "  run {id} kept: agl-host show {id} (or in a browser: agl-host dashboard {id})\n",
            id = kept.run_id
        ));
    }
    if let Some((kept, url)) = kept.as_ref().and_then(|k| Some((k, k.remote_url()?))) {
        output::print(&format!(
            "  run {} kept in the store at {url}: agl-host show --db <that store's --db> (or in a browser: {url}/)\n",
            kept.run_id
        ));
    }
    // Served until the run record says how the run ended (a kept run opens again with
    // `agl-host dashboard RUN`, as the line above says).
    if let Some(dashboard) = dashboard {
        output::print("  dashboard stopped: the run has ended\n");
        dashboard.shutdown().await;
    }
    let exit = match results.status {
        "completed" if results.every_rollout_failed() => ExitCode::from(EXIT_ALL_FAILED),
        "completed" => ExitCode::SUCCESS,
        "interrupted" => ExitCode::from(EXIT_INTERRUPTED),
        _ => ExitCode::FAILURE,
    };
    Ok(exit)
}

/// Client-server: serves `store` on loopback (`port` 0: any free port) for the runner processes.
async fn serve_store(
    port: u16,
    store: &Arc<dyn LightningStore>,
    progress: &Arc<Progress>,
    edge: &crate::args::EdgeArgs,
) -> anyhow::Result<agl_server::ServerHandle> {
    let options = edge.allow(agl_server::ServerOptions {
        port,
        ..agl_server::ServerOptions::default()
    });
    let handle = agl_server::serve(store.clone(), options)
        .await
        .context("starting the store server")?;
    progress.println(&format!("store served at {}", handle.url()));
    Ok(handle)
}

/// Client-server: the flags of each runner process but `--store` (the agent at `agent_path`, and
/// this run's heartbeat, unresponsive limit, grace, LLM and sandbox flags).
fn runner_process_args(common: &CommonArgs, agent_path: &Path, unresponsive_after: &str) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = vec![
        "--agent".into(),
        agent_path.as_os_str().to_owned(),
        "--heartbeat".into(),
        common.heartbeat.clone().into(),
        "--grace".into(),
        common.grace.clone().into(),
        "--unresponsive-after".into(),
        unresponsive_after.into(),
    ];
    args.extend(common.passed_on.iter().cloned());
    args
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{Cli, Command};
    use clap::Parser;

    #[test]
    fn runner_processes_get_the_runs_timing_flags() {
        let cli = Cli::try_parse_from([
            "agl-host",
            "run",
            "--agent",
            "a.wasm",
            "--algo",
            "baseline",
            "--train",
            "t.jsonl",
            "--strategy",
            "client-server",
            "--heartbeat",
            "100ms",
            "--grace",
            "5s",
        ])
        .expect("parses");
        let Command::Run(run) = cli.command else {
            panic!("expected run");
        };
        let mut args: Vec<std::ffi::OsString> =
            vec!["agl-host".into(), "runner".into(), "--store".into(), "http://x".into()];
        args.extend(runner_process_args(&run.common, Path::new("a.wasm"), "3s"));
        let Command::Runner(runner) = Cli::try_parse_from(args).expect("the runner accepts them").command else {
            panic!("expected runner");
        };
        let timing = (
            runner.heartbeat.as_str(),
            runner.grace.as_str(),
            runner.unresponsive_after.as_str(),
        );
        assert_eq!(timing, ("100ms", "5s", "3s"));
    }
}
