//! How the client-server strategy launches a runner process: `agl-host runner` (this same
//! executable) with the run's agent, heartbeat, grace, liveness, LLM and sandbox flags, pointed at
//! the store this process serves; its log lines relayed with a `runner N:` prefix. Supervising and
//! stopping the processes is the strategy's (agl_runner::ExecutionStrategy); a runner that dies
//! mid-rollout only loses its attempt, which the store's watchdog takes back (unresponsive).

use crate::progress::Progress;
use agl_runner::{RunnerLauncher, RunnerProcess};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Starts `exe runner --store URL <args> --runners 1 --quiet --worker-prefix runner-N`.
pub struct ProcessLauncher {
    pub exe: PathBuf,
    /// The runner's flags but `--store` and those above.
    pub args: Vec<OsString>,
    /// Environment variables of the runner (secrets that must not show in a process list, e.g.
    /// the LLM proxy's operator token).
    pub env: Vec<(String, String)>,
    pub progress: Arc<Progress>,
}

impl RunnerLauncher for ProcessLauncher {
    fn launch(&self, index: usize, store_url: &str) -> Result<Box<dyn RunnerProcess>, String> {
        let mut child = Command::new(&self.exe)
            .arg("runner")
            .args(["--store", store_url])
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
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
            .map_err(|e| e.to_string())?;
        self.progress.println(&format!(
            "started runner process {index} (pid {})",
            child.id().map_or_else(|| "?".to_owned(), |p| p.to_string())
        ));
        if let Some(stderr) = child.stderr.take() {
            let progress = self.progress.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    progress.println(&format!("runner {index}: {line}"));
                }
            });
        }
        Ok(Box::new(RunnerChild(child)))
    }
}

/// A runner process: stopped with SIGTERM, killed with SIGKILL (and when dropped).
struct RunnerChild(Child);

#[async_trait::async_trait]
impl RunnerProcess for RunnerChild {
    fn stop(&mut self) {
        if let Some(pid) = self.0.id().and_then(|p| i32::try_from(p).ok()) {
            // An error means it has already exited: nothing to do.
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
    }

    fn kill(&mut self) {
        let _ = self.0.start_kill();
    }

    async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.0.wait().await
    }
}
