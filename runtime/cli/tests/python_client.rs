//! Agent-lightning 0.3.0's own Python `LightningStoreClient` (and the Python OTLP/HTTP exporter)
//! against `agl-host store`: `tests/python/agl_client_compat.py` run in a venv with
//! `agentlightning==0.3.0`, which `tests/python/prepare_venv.py` creates under
//! `target/py/agl-0.3` on the first run (a few minutes of pip) and reuses afterwards.
//!
//! Needs `python3` (3.10 or newer, with the venv module) and, the first time, PyPI.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// The whole Python run (the import of agentlightning alone takes ~15 s on a busy 2-core box).
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(150);
const LISTENING: &str = "agl-host store: listening on ";

fn workspace_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

/// `target/py/agl-0.3` (`CARGO_TARGET_TMPDIR` is `<target>/tmp`).
fn venv_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR has a parent")
        .join("py/agl-0.3")
}

/// Creates or reuses the venv; returns its python.
fn prepare_venv() -> PathBuf {
    let helper = workspace_root().join("tests/python/prepare_venv.py");
    let output = match Command::new("python3").arg(&helper).arg(venv_dir()).output() {
        Ok(output) => output,
        Err(err) => panic!(
            "cannot run python3 ({err}). This test needs Python 3.10 or newer with venv and pip, e.g. \
             `apt-get install python3 python3-venv python3-pip` (Debian/Ubuntu) or `dnf install python3 python3-pip`; \
             the first run also needs PyPI to install agentlightning==0.3.0"
        ),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "preparing the Python venv failed ({}): {}\n{}\nneeds python3 >= 3.10 with `python3-venv` and \
         `python3-pip`, and PyPI for the first install",
        output.status,
        stdout,
        String::from_utf8_lossy(&output.stderr)
    );
    PathBuf::from(
        stdout
            .lines()
            .last()
            .expect("prepare_venv prints the venv's python")
            .trim(),
    )
}

/// `agl-host store --port 0`, killed on drop; its stderr is kept for failure messages.
struct StoreServer {
    child: Child,
    url: String,
    log: Arc<Mutex<String>>,
}

impl StoreServer {
    fn start() -> StoreServer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_agl-host"))
            .args(["store", "--port", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("agl-host store starts");
        let stderr = child.stderr.take().expect("piped stderr");
        let log = Arc::new(Mutex::new(String::new()));
        let url = read_url(stderr, Arc::clone(&log));
        match url {
            Some(url) => StoreServer { child, url, log },
            None => {
                let _ = child.kill();
                let status = child.wait().expect("wait for agl-host");
                panic!(
                    "agl-host store exited ({status}) before printing its URL:\n{}",
                    log.lock().unwrap()
                );
            }
        }
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for StoreServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads stderr until the "listening on URL" line, then keeps draining it into `log` on a thread
/// (so the server never blocks on a full pipe). None when stderr ends first.
fn read_url(stderr: ChildStderr, log: Arc<Mutex<String>>) -> Option<String> {
    let mut reader = BufReader::new(stderr);
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return None;
        }
        log.lock().unwrap().push_str(&line);
        if let Some(rest) = line.trim().strip_prefix(LISTENING) {
            let url = rest
                .split_whitespace()
                .next()
                .expect("a URL after 'listening on'")
                .to_string();
            thread::spawn(move || {
                let mut rest = String::new();
                let _ = reader.read_to_string(&mut rest);
                log.lock().unwrap().push_str(&rest);
            });
            return Some(url);
        }
    }
}

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

#[test]
fn agentlightning_client_drives_our_store() {
    let python = prepare_venv();
    let server = StoreServer::start();
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
        "agl_client_compat.py {} against {}:\n--- script output\n{stdout}\n--- script stderr\n{stderr}\n--- agl-host store stderr\n{}",
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
