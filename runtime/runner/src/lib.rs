//! The runner side and the shared-memory trainer.
//!
//! - [`Runner`]: dequeue → resources → fresh agent instance → run → finalize the attempt, with
//!   [`Hook`]s around each rollout, worker heartbeats, and [`Runner::step`] for online learning.
//! - [`Trainer`]: the shared-memory strategy — the algorithm component on one task and N runners
//!   in the same process on one store; when the algorithm ends the runners drain and stop;
//!   [`Shutdown`] gives a graceful stop and a forced one.
//! - [`RunReport`]: what a run did, per split, read back from the store.

mod hooks;
mod report;
mod runner;
mod shutdown;
mod trainer;

pub use hooks::{Hook, HookContext};
pub use report::{FailedRollout, FailureReason, RunReport, SplitReport};
pub use runner::{Runner, RunnerCounters, RunnerError, RunnerOptions};
pub use shutdown::Shutdown;
pub use trainer::{FitReport, FitRequest, FitStatus, RemoteRunners, Runners, Trainer, TrainerError, TrainerOptions};
