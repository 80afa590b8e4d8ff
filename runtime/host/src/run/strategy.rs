//! Who runs the rollouts: runners in this process (shared-memory), runner processes of this
//! executable against a store served here (client-server), or a remote store's own runners;
//! and the LLM proxy the run's agents reach (`--llm-proxy`), on a loopback listener of its own.

use crate::args::{CommonArgs, EdgeArgs, Strategy};
use crate::fleet::ProcessLauncher;
use crate::llm;
use crate::otlp_export::OtlpExport;
use crate::progress::Progress;
use crate::runner_cmd::RunnerTiming;
use agl_llm::LlmBackend;
use agl_runner::{ExecutionStrategy, Hook, InProcessRunners, ProxyCapabilities, RunnerProcesses};
use agl_server::ServerHandle;
use agl_store::{LightningStore, NamedResources};
use agl_wasm::AgentComponent;
use anyhow::Context;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Once asked to stop, how long runner processes get beyond their own grace period (to mark the
/// attempts they abandon) before they are killed.
const RUNNER_PROCESS_STOP_MARGIN: Duration = Duration::from_secs(5);

/// The LLM proxy, served.
pub(super) struct ServedProxy {
    pub server: ServerHandle,
    /// What runners in this process ask for their attempts' capabilities.
    pub capabilities: Arc<dyn ProxyCapabilities>,
    /// The proxy's URL and operator token, for runner processes.
    pub for_processes: Option<(String, String)>,
}

/// Serves the LLM proxy over `store` and points the run's `proxy_llm` resources at it: each
/// attempt's agent reaches it only through a capability of its own attempt.
pub(super) async fn serve_proxy(
    common: &CommonArgs,
    upstreams: agl_proxy::Upstreams,
    otlp: Option<&OtlpExport>,
    store: &Arc<dyn LightningStore>,
    progress: &Progress,
    initial_resources: &mut Option<NamedResources>,
) -> anyhow::Result<ServedProxy> {
    let default_model = upstreams.all()[0].default_model().to_owned();
    let mut config = agl_proxy::ProxyConfig::new(upstreams);
    config.token_ids = common.proxy.llm_token_ids;
    config.train_temperature = common.proxy.llm_train_temperature;
    config.val_temperature = common.proxy.llm_val_temperature;
    config.span_export = otlp.map(OtlpExport::span_export);
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
    *initial_resources = Some(resources);
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
    Ok(ServedProxy {
        capabilities: Arc::new(crate::proxy_capabilities::LocalCapabilities {
            proxy,
            base_url: handle.url(),
        }),
        for_processes: operator_token.map(|token| (handle.url(), token)),
        server: handle,
    })
}

/// What the strategy needs besides the flags.
pub(super) struct StrategyInputs<'a> {
    pub agent: Option<AgentComponent>,
    /// Where the agent was loaded from (runner processes load it themselves).
    pub agent_path: Option<&'a Path>,
    pub store: &'a Arc<dyn LightningStore>,
    pub progress: &'a Arc<Progress>,
    pub llm: Arc<dyn LlmBackend>,
    pub timing: &'a RunnerTiming,
    pub unresponsive_after: Option<&'a str>,
    pub grace: Duration,
    pub otlp: Option<&'a OtlpExport>,
    pub proxy: Option<&'a ServedProxy>,
}

/// The execution strategy, and the store server started for runner processes (client-server).
pub(super) async fn choose(
    common: &CommonArgs,
    inputs: StrategyInputs<'_>,
) -> anyhow::Result<(ExecutionStrategy, Option<ServerHandle>)> {
    let StrategyInputs {
        agent,
        agent_path,
        store,
        progress,
        llm,
        timing,
        unresponsive_after,
        grace,
        otlp,
        proxy,
    } = inputs;
    let hooks: Arc<[Arc<dyn Hook>]> = Arc::new([progress.clone() as Arc<dyn Hook>]);
    Ok(match (agent, agent_path) {
        (Some(agent), Some(agent_path)) if common.strategy == Strategy::ClientServer => {
            drop(agent); // the runner processes load it themselves
            // With the LLM proxy on --port, the store goes on any free one.
            let port = if proxy.is_some() { 0 } else { common.port };
            let handle = serve_store(port, store, progress, &common.edge).await?;
            let mut args = runner_process_args(common, agent_path, unresponsive_after.unwrap_or("0"));
            let mut env = Vec::new();
            if let Some((url, token)) = proxy.and_then(|proxy| proxy.for_processes.clone()) {
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
            (strategy, Some(handle))
        }
        (Some(agent), _) => (
            ExecutionStrategy::InProcess(InProcessRunners {
                options: agl_runner::RunnerOptions {
                    record: !common.no_record,
                    ..timing.runner_options()
                },
                hooks,
                span_export: otlp.map(OtlpExport::span_export),
                proxy: proxy.map(|proxy| proxy.capabilities.clone()),
                ..InProcessRunners::new(Arc::new(agent), llm, usize::from(common.runners))
            }),
            None,
        ),
        (None, _) => {
            progress.println("the algorithm enqueues into the remote store; its runners run the rollouts");
            (ExecutionStrategy::External, None)
        }
    })
}

/// Client-server: serves `store` on loopback (`port` 0: any free port) for the runner processes.
async fn serve_store(
    port: u16,
    store: &Arc<dyn LightningStore>,
    progress: &Arc<Progress>,
    edge: &EdgeArgs,
) -> anyhow::Result<ServerHandle> {
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
    if common.no_record {
        args.push("--no-record".into());
    }
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
            "--no-record",
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
        assert!(runner.no_record, "they record what the run records");
    }
}
