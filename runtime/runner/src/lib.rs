//! The runner side and the trainer.
//!
//! - [`Runner`]: dequeue → resources → fresh agent instance → run → finalize the attempt, with
//!   [`Hook`]s around each rollout, worker and attempt heartbeats, and [`Runner::step`] for
//!   online learning.
//! - [`ExecutionStrategy`]: who runs the rollouts — N runners in this process on a store, N
//!   runner processes against a store's URL, or runners owned elsewhere — and the one loop that
//!   starts them and stops them ([`Fleet::drain`]); [`Shutdown`] gives a graceful stop and a
//!   forced one.
//! - [`Trainer`]: the algorithm component on one task and the runners of a strategy on one store;
//!   when the algorithm ends the runners drain and stop.
//! - [`RunReport`]: what a run did, per split, read back from the store.
//! - [`ReplayStore`], [`abandon_running_attempts`]: resuming a kept run.

mod hooks;
mod llm_capability;
mod replay;
mod report;
mod runner;
mod shutdown;
mod strategy;
mod trainer;

pub use hooks::{Hook, HookContext};
pub use llm_capability::{IssuedCapability, ProxyCapabilities};
pub use replay::{ReplayCounts, ReplayStore, abandon_running_attempts};
pub use report::{FailedRollout, FailureReason, RunReport, SandboxRefusal, SplitReport};
pub use runner::{Runner, RunnerCounters, RunnerError, RunnerOptions};
pub use shutdown::Shutdown;
pub use strategy::{
    Drained, ExecutionStrategy, Fleet, InProcessRunners, RunnerLauncher, RunnerProcess, RunnerProcesses, StrategyError,
};
pub use trainer::{FitReport, FitRequest, FitStatus, Trainer, TrainerError, TrainerOptions};
