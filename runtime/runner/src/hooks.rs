//! Runner hooks: user callbacks at four points of a rollout's life, called in the order of
//! Agent-lightning's hooks diagram — `on_rollout_start` (after dequeue and resources), then
//! `on_trace_start` (trace opened, agent about to run), `on_trace_end` (agent returned, trace not
//! yet written), then `on_rollout_end` (spans written, attempt finalized in the store).

use agl_store::{Attempt, Rollout};
use agl_wasm::{AttemptOutcome, TraceObserver};
use std::sync::Arc;

/// Who and what a hook is called about.
#[derive(Debug, Clone, Copy)]
pub struct HookContext<'a> {
    /// The runner's worker id.
    pub worker_id: &'a str,
    /// The agent component's name.
    pub agent: &'a str,
    pub rollout: &'a Rollout,
    pub attempt: &'a Attempt,
}

/// Callbacks around each rollout a runner executes. All methods default to doing nothing; they
/// run on the runner's task, so keep them quick (hand heavy work to another task).
pub trait Hook: Send + Sync {
    fn on_rollout_start(&self, _ctx: &HookContext<'_>) {}
    fn on_trace_start(&self, _ctx: &HookContext<'_>) {}
    fn on_trace_end(&self, _ctx: &HookContext<'_>) {}
    /// `outcome.status` is the attempt's final status as the runner reported it.
    fn on_rollout_end(&self, _ctx: &HookContext<'_>, _outcome: &AttemptOutcome) {}
}

/// A runner's hooks, bound to its worker id and agent.
#[derive(Clone)]
pub(crate) struct Hooks {
    hooks: Arc<[Arc<dyn Hook>]>,
    worker_id: Arc<str>,
    agent: Arc<str>,
}

impl Hooks {
    pub(crate) fn new(hooks: Arc<[Arc<dyn Hook>]>, worker_id: Arc<str>, agent: Arc<str>) -> Self {
        Self {
            hooks,
            worker_id,
            agent,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    fn each(&self, rollout: &Rollout, attempt: &Attempt, call: impl Fn(&dyn Hook, &HookContext<'_>)) {
        let ctx = HookContext {
            worker_id: &self.worker_id,
            agent: &self.agent,
            rollout,
            attempt,
        };
        for hook in self.hooks.iter() {
            call(hook.as_ref(), &ctx);
        }
    }

    pub(crate) fn rollout_start(&self, rollout: &Rollout, attempt: &Attempt) {
        self.each(rollout, attempt, |hook, ctx| hook.on_rollout_start(ctx));
    }

    pub(crate) fn rollout_end(&self, rollout: &Rollout, attempt: &Attempt, outcome: &AttemptOutcome) {
        self.each(rollout, attempt, |hook, ctx| hook.on_rollout_end(ctx, outcome));
    }
}

impl TraceObserver for Hooks {
    fn trace_started(&self, rollout: &Rollout, attempt: &Attempt) {
        self.each(rollout, attempt, |hook, ctx| hook.on_trace_start(ctx));
    }

    fn trace_ending(&self, rollout: &Rollout, attempt: &Attempt) {
        self.each(rollout, attempt, |hook, ctx| hook.on_trace_end(ctx));
    }
}
