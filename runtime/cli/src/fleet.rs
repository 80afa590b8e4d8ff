//! The client-server strategy's runner processes: `agl-host runner` children of this process,
//! pointed at the store this process serves. Their log lines are relayed with a prefix; when the
//! run ends they get SIGTERM (finish the running attempt, then exit), and SIGKILL after the grace
//! period. A runner that dies mid-rollout only loses its attempt: the store's watchdog marks it
//! unresponsive or timed out, and the rollout's retry policy decides.

use crate::progress::Progress;
use agl_runner::{RemoteRunners, Shutdown};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::ffi::OsString;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::Mutex;

pub struct ProcessFleet {
    children: Mutex<Vec<(usize, Child)>>,
}

impl ProcessFleet {
    /// Starts `count` runner processes: `exe runner <args>`, each with `--runners 1`.
    pub fn spawn(
        count: usize,
        exe: &std::path::Path,
        args: &[OsString],
        progress: &Arc<Progress>,
    ) -> anyhow::Result<Self> {
        let mut children = Vec::with_capacity(count);
        for index in 1..=count {
            let mut child = Command::new(exe)
                .arg("runner")
                .args(args)
                .args([
                    "--runners",
                    "1",
                    "--quiet",
                    "--worker-prefix",
                    &format!("runner-{index}"),
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| anyhow::anyhow!("cannot start runner process {index}: {e}"))?;
            progress.println(&format!(
                "started runner process {index} (pid {})",
                child.id().map_or_else(|| "?".to_owned(), |p| p.to_string())
            ));
            if let Some(stderr) = child.stderr.take() {
                let progress = progress.clone();
                tokio::spawn(async move {
                    let mut lines = BufReader::new(stderr).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        progress.println(&format!("runner {index}: {line}"));
                    }
                });
            }
            children.push((index, child));
        }
        Ok(Self {
            children: Mutex::new(children),
        })
    }
}

fn signal(child: &Child, signal: Signal) {
    if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
        // An error means it has already exited: nothing to do.
        let _ = kill(Pid::from_raw(pid), signal);
    }
}

#[async_trait::async_trait]
impl RemoteRunners for ProcessFleet {
    async fn stop(&self, grace: Duration, forced: &Shutdown) -> bool {
        let mut children = self.children.lock().await;
        for (_, child) in children.iter() {
            signal(child, Signal::SIGTERM);
        }
        let all_exited = async {
            for (_, child) in children.iter_mut() {
                let _ = child.wait().await;
            }
        };
        let exited = tokio::select! {
            _ = all_exited => true,
            _ = tokio::time::sleep(grace) => false,
            _ = forced.forced() => false,
        };
        if !exited {
            for (index, child) in children.iter_mut() {
                if matches!(child.try_wait(), Ok(None)) {
                    tracing::warn!("runner process {index} did not stop within {grace:?}; killing it");
                    let _ = child.start_kill();
                    let _ = child.wait().await;
                }
            }
        }
        !exited
    }
}
