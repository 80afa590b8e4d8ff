//! `agl-host runner`: N runners in this process against a remote store (HTTP), until Ctrl-C or
//! SIGTERM (finish the running attempts, then exit; a second signal abandons them).

use crate::args::RunnerArgs;
use crate::components::{self, file_name};
use crate::inputs::{self, InputError};
use crate::llm;
use crate::output::stderr_line;
use crate::remote;
use crate::sandbox;
use crate::signals::{self, Interrupts};
use agl_runner::{Hook, HookContext, Runner, RunnerOptions, Shutdown};
use agl_store::AttemptStatus;
use agl_store::LightningStore;
use agl_wasm::{AttemptOutcome, SpanRecorder};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

pub async fn run(args: RunnerArgs) -> anyhow::Result<ExitCode> {
    let heartbeat =
        agl_wasm::policy::parse_duration(&args.heartbeat).map_err(|e| InputError(format!("--heartbeat: {e}")))?;
    let grace = agl_wasm::policy::parse_duration(&args.grace).map_err(|e| InputError(format!("--grace: {e}")))?;
    let llm = llm::backend(&args.llm)?;
    let source = inputs::agent_source(&args.agent)?;
    let client = remote::connect(&args.store, args.token.clone()).await?;
    let plan = components::plan_agent(&source, &sandbox::overrides(&args.sandbox)?)?;
    let host = components::engine(plan.policy.fuel.is_some(), u32::from(args.runners) + 4, plan.shape)?;
    let agent = components::load_agent(&host, &plan)?;
    components::require_llm(&agent, "agent", &args.llm)?;
    let interrupts = Interrupts::register()?;
    let store: Arc<dyn LightningStore> = Arc::new(client);
    let recorder = Arc::new(SpanRecorder::new(store.clone(), Duration::from_millis(100)));
    let agent = Arc::new(agent);
    let prefix = args
        .worker_prefix
        .clone()
        .unwrap_or_else(|| format!("runner-{}", std::process::id()));
    stderr_line(&format!(
        "{prefix}: {} runner(s) of {} on {} · LLM: {} · waiting for rollouts",
        args.runners,
        file_name(&plan.path),
        args.store,
        llm.describe()
    ));

    let shutdown = Shutdown::new();
    let name = prefix.clone();
    signals::watch(
        interrupts,
        shutdown.clone(),
        move || {
            stderr_line(&format!(
                "{name}: stopping after the running attempts (up to {grace:?})"
            ))
        },
        || stderr_line("stopping at once"),
    );
    let force_after_grace = {
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            shutdown.stopping().await;
            tokio::time::sleep(grace).await;
            shutdown.force();
        })
    };
    let hooks: Arc<[Arc<dyn Hook>]> = if args.quiet {
        Arc::new([])
    } else {
        Arc::new([Arc::new(RolloutLog) as Arc<dyn Hook>])
    };
    let mut tasks = tokio::task::JoinSet::new();
    let mut counters = Vec::new();
    for index in 1..=args.runners {
        let worker_id = if args.runners == 1 {
            prefix.clone()
        } else {
            format!("{prefix}-{index}")
        };
        let runner = Runner::new(worker_id, store.clone(), agent.clone(), llm.clone(), recorder.clone())
            .with_hooks(hooks.clone())
            .with_options(RunnerOptions {
                heartbeat_interval: heartbeat,
                ..RunnerOptions::default()
            });
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
    stderr_line(&format!(
        "{prefix}: stopped after {succeeded} succeeded and {failed} failed attempts"
    ));
    Ok(ExitCode::SUCCESS)
}

/// One line per finished rollout: who ran it, how it ended, its reward or why it failed.
struct RolloutLog;

impl Hook for RolloutLog {
    fn on_rollout_end(&self, ctx: &HookContext<'_>, outcome: &AttemptOutcome) {
        stderr_line(&rollout_line(ctx, outcome));
    }
}

fn rollout_line(ctx: &HookContext<'_>, outcome: &AttemptOutcome) -> String {
    let verdict = match (&outcome.status, &outcome.failure) {
        (AttemptStatus::Succeeded, _) => match outcome.reward {
            Some(reward) => format!("succeeded, reward {reward:.4}"),
            None => "succeeded, no reward".to_owned(),
        },
        (_, Some(reason)) => format!("failed: {}", reason.lines().next().unwrap_or_default()),
        (status, None) => format!("{status:?}").to_lowercase(),
    };
    format!(
        "{}: rollout {} (attempt {}) {verdict} in {} ms",
        ctx.worker_id,
        ctx.rollout.rollout_id,
        ctx.attempt.sequence_id,
        outcome.elapsed.as_millis()
    )
}
