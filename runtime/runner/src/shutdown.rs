//! Stopping runners and trainers: a graceful stop (take no new work, finish what is running)
//! and a forced one (abandon running attempts, marking them failed). Cheap to clone.

use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Default)]
pub struct Shutdown {
    graceful: CancellationToken,
    force: CancellationToken,
}

impl Shutdown {
    pub fn new() -> Self {
        Self::default()
    }

    /// Take no new work; finish what is running.
    pub fn stop(&self) {
        self.graceful.cancel();
    }

    /// Abandon running work now (implies [`Self::stop`]).
    pub fn force(&self) {
        self.graceful.cancel();
        self.force.cancel();
    }

    pub fn is_stopping(&self) -> bool {
        self.graceful.is_cancelled()
    }

    pub fn is_forced(&self) -> bool {
        self.force.is_cancelled()
    }

    /// Resolves when a graceful (or forced) stop is asked for.
    pub async fn stopping(&self) {
        self.graceful.cancelled().await;
    }

    /// Resolves when a forced stop is asked for.
    pub async fn forced(&self) {
        self.force.cancelled().await;
    }

    /// A shutdown that stops when this one does, but can also be stopped on its own (e.g. the
    /// runners of a trainer, which drain when the algorithm ends).
    pub fn child(&self) -> Self {
        Self {
            graceful: self.graceful.child_token(),
            force: self.force.child_token(),
        }
    }
}
