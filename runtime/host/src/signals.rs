//! Ctrl-C (SIGINT) and SIGTERM, registered at once (a signal that arrives before the first poll
//! is not lost). The first asks for a graceful stop, the second forces it.

use agl_runner::Shutdown;
use anyhow::Context;

pub struct Interrupts {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl Interrupts {
    pub fn register() -> anyhow::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let interrupt = signal(SignalKind::interrupt()).context("listening for Ctrl-C")?;
            let terminate = signal(SignalKind::terminate()).context("listening for SIGTERM")?;
            Ok(Self { interrupt, terminate })
        }
        #[cfg(not(unix))]
        Ok(Self {})
    }

    /// Waits for the next Ctrl-C or SIGTERM (or for ever, when no more can come).
    pub async fn wait(&mut self) {
        if !self.next().await {
            std::future::pending::<()>().await;
        }
    }

    /// The next Ctrl-C or SIGTERM; `false` when no more can come.
    async fn next(&mut self) -> bool {
        #[cfg(unix)]
        {
            tokio::select! {
                got = self.interrupt.recv() => got.is_some(),
                got = self.terminate.recv() => got.is_some(),
            }
        }
        #[cfg(not(unix))]
        {
            tokio::signal::ctrl_c().await.is_ok()
        }
    }
}

/// First signal: `shutdown.stop()` after `first` (e.g. a message); second: `shutdown.force()`.
pub fn watch(
    mut interrupts: Interrupts,
    shutdown: Shutdown,
    first: impl Fn() + Send + 'static,
    second: impl Fn() + Send + 'static,
) {
    tokio::spawn(async move {
        if !interrupts.next().await {
            return;
        }
        first();
        shutdown.stop();
        if interrupts.next().await {
            second();
            shutdown.force();
        }
    });
}
