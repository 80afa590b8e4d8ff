//! `agl-host runner`: N runners in this process against a remote store (HTTP), until Ctrl-C or
//! SIGTERM (finish the running attempts, then exit; a second signal or the end of the grace
//! period abandons them). Starting and stopping them is agl_runner::ExecutionStrategy's; this
//! command wires the flags, and owns the runner timing flags that `run` passes on to its runner
//! processes ([`RunnerTiming`]).

use crate::args::RunnerArgs;
use crate::components::{self, file_name};
use crate::inputs::{self, InputError};
use crate::llm;
use crate::otlp_export::{self, OtlpExport};
use crate::output::{one_line, reason_line, stderr_line};
use crate::remote;
use crate::signals::{self, Interrupts};
use agl_runner::{ExecutionStrategy, Hook, HookContext, InProcessRunners, RunnerOptions, Shutdown};
use agl_store::AttemptStatus;
use agl_store::LightningStore;
use agl_wasm::AttemptOutcome;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// The unresponsive limit runners in their own processes give rollouts that set none.
pub const DEFAULT_UNRESPONSIVE_AFTER: &str = "30s";

/// How runners heartbeat, and the unresponsive limit they give rollouts that set none.
#[derive(Debug, Clone, Copy)]
pub struct RunnerTiming {
    pub heartbeat: Duration,
    pub unresponsive_after: Option<Duration>,
}

impl RunnerTiming {
    /// From `--heartbeat` and `--unresponsive-after` (`0`: none); the limit must leave room for a
    /// few heartbeats, so that one late heartbeat does not cost an attempt.
    pub fn parse(heartbeat: &str, unresponsive_after: Option<&str>) -> Result<Self, InputError> {
        let heartbeat = duration("heartbeat", heartbeat)?;
        let unresponsive_after = unresponsive_after
            .map(|value| duration("unresponsive-after", value))
            .transpose()?
            .filter(|limit| !limit.is_zero());
        if let Some(limit) = unresponsive_after
            && limit < heartbeat * 3
        {
            return Err(InputError(format!(
                "--unresponsive-after {limit:?} is less than 3 × --heartbeat ({heartbeat:?}): a live runner's \
                 attempts would be taken for unresponsive; raise it, or lower --heartbeat"
            )));
        }
        Ok(Self {
            heartbeat,
            unresponsive_after,
        })
    }

    pub fn runner_options(&self) -> RunnerOptions {
        RunnerOptions {
            heartbeat_interval: self.heartbeat,
            default_unresponsive: self.unresponsive_after,
            ..RunnerOptions::default()
        }
    }
}

pub fn duration(flag: &str, value: &str) -> Result<Duration, InputError> {
    agl_wasm::policy::parse_duration(value).map_err(|e| InputError(format!("--{flag}: {e}")))
}

pub async fn run(args: RunnerArgs) -> anyhow::Result<ExitCode> {
    let timing = RunnerTiming::parse(&args.heartbeat, Some(&args.unresponsive_after))?;
    let grace = duration("grace", &args.grace)?;
    let llm = llm::backend(&args.llm)?;
    let otlp = OtlpExport::from_flags(&args.otlp)?;
    let source = inputs::agent_source(&args.agent)?;
    let client = remote::connect(&args.store, args.token.clone()).await?;
    let plan = components::plan_agent(&source, &args.sandbox)?;
    let host = components::engine(
        plan.policy.limits.fuel.is_some(),
        u32::from(args.runners) + 4,
        plan.shape,
    )?;
    let agent = components::load_agent(&host, &plan)?;
    components::require_llm(&agent, "agent", &args.llm)?;
    let interrupts = Interrupts::register()?;
    let store: Arc<dyn LightningStore> = Arc::new(client);
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
    let hooks: Arc<[Arc<dyn Hook>]> = if args.quiet {
        Arc::new([])
    } else {
        Arc::new([Arc::new(RolloutLog) as Arc<dyn Hook>])
    };
    let strategy = ExecutionStrategy::InProcess(InProcessRunners {
        worker_prefix: prefix.clone(),
        options: RunnerOptions {
            record: !args.no_record,
            ..timing.runner_options()
        },
        hooks,
        span_export: otlp.as_ref().map(OtlpExport::span_export),
        proxy: Some(Arc::new(crate::proxy_capabilities::RemoteCapabilities::new(
            args.llm_proxy_url.as_deref().unwrap_or(&args.store),
            args.llm_proxy_token.clone().or_else(|| args.token.clone()),
        )?)),
        ..InProcessRunners::new(Arc::new(agent), llm, usize::from(args.runners))
    });
    let fleet = strategy.start(&store, &shutdown)?;
    shutdown.stopping().await;
    let drained = fleet.drain(Some(grace), &shutdown).await;
    otlp_export::finish(otlp).await;
    let (succeeded, failed) = drained.attempts.unwrap_or_default();
    stderr_line(&format!(
        "{prefix}: stopped after {succeeded} succeeded and {failed} failed attempts"
    ));
    Ok(ExitCode::SUCCESS)
}

/// One line per finished rollout: who ran it, how it ended, its reward or why it failed (on one
/// line, whatever the agent put in it).
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
        (_, Some(reason)) => format!("failed: {}", reason_line(reason)),
        (status, None) => format!("{status:?}").to_lowercase(),
    };
    one_line(&format!(
        "{}: rollout {} (attempt {}) {verdict} in {} ms",
        ctx.worker_id,
        ctx.rollout.rollout_id,
        ctx.attempt.sequence_id,
        outcome.elapsed.as_millis()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unresponsive_limit_is_optional_and_leaves_room_for_heartbeats() {
        let timing = RunnerTiming::parse("2s", Some(DEFAULT_UNRESPONSIVE_AFTER)).expect("the defaults fit");
        assert_eq!(timing.unresponsive_after, Some(Duration::from_secs(30)));
        assert_eq!(
            timing.runner_options().default_unresponsive,
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            RunnerTiming::parse("2s", Some("0"))
                .expect("0: none")
                .unresponsive_after,
            None
        );
        assert_eq!(RunnerTiming::parse("2s", None).expect("none").unresponsive_after, None);
        let error = RunnerTiming::parse("2s", Some("5s")).expect_err("two heartbeats are not enough");
        assert!(error.0.contains("less than 3 × --heartbeat"), "{}", error.0);
        let error = RunnerTiming::parse("2s", Some("soon")).expect_err("not a duration");
        assert!(error.0.starts_with("--unresponsive-after: "), "{}", error.0);
    }
}
