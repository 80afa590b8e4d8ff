//! Agent-lightning 0.3.0's own Python `LightningStoreClient` (and the Python OTLP/HTTP exporter)
//! against `agl-host store`: `tests/python/agl_client_compat.py` run in a venv with
//! `agentlightning==0.3.0`, which `tests/python/prepare_venv.py` creates under
//! `target/py/agl-0.3` on the first run (a few minutes of pip) and reuses afterwards. The same
//! script runs against each backend `--db` opens (memory, SQLite, PostgreSQL), each a fresh store.
//!
//! Needs `python3` (3.10 or newer, with the venv module) and, the first time, PyPI.

use crate::support;

use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};
use support::{Backend, BackendDb as _, ServerProcess, prepare_venv, workspace_root};

/// The whole Python run (the import of agentlightning alone takes ~15 s on a busy 2-core box).
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(150);

/// Runs `command`, killing it after `limit`; returns its output and whether it was killed.
fn output_within(mut command: Command, limit: Duration) -> (Output, bool) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the venv's python starts");
    let stdout = drain(child.stdout.take().expect("piped stdout"));
    let stderr = drain(child.stderr.take().expect("piped stderr"));
    let started = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll python") {
            break status;
        }
        if started.elapsed() > limit {
            timed_out = true;
            let _ = child.kill();
            break child.wait().expect("wait for python");
        }
        thread::sleep(Duration::from_millis(50));
    };
    let stdout = stdout.join().expect("stdout reader");
    let stderr = stderr.join().expect("stderr reader");
    (Output { status, stdout, stderr }, timed_out)
}

fn drain(mut pipe: impl Read + Send + 'static) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        bytes
    })
}

/// Every check of `agl_client_compat.py` against `agl-host store` on a fresh `backend` store:
/// `agentlightning_client_drives_our_store::memory`, `::sqlite`, `::postgres`.
#[agl_testkit::each_backend]
fn agentlightning_client_drives_our_store(backend: Backend) {
    let db = backend.fresh_db();
    let server = ServerProcess::agl_host_store(&["--db", &db.url]);
    let python = prepare_venv();
    let mut command = Command::new(&python);
    command
        .arg(workspace_root().join("tests/python/agl_client_compat.py"))
        .args(["--url", &server.url])
        // litellm (imported by agentlightning) otherwise fetches its model cost map from GitHub.
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let (output, timed_out) = output_within(command, SCRIPT_TIMEOUT);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && !timed_out,
        "agl_client_compat.py {} against {} ({backend:?}):\n--- script output\n{stdout}\n--- script stderr\n{stderr}\n--- agl-host store stderr\n{}",
        if timed_out {
            format!("timed out after {SCRIPT_TIMEOUT:?}")
        } else {
            format!("failed ({})", output.status)
        },
        server.url,
        server.log()
    );
    println!("{stdout}");
}
