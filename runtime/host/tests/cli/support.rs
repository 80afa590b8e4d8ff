//! What the store's process tests (the Python compatibility test, the durability test) and the
//! store load bench share: the workspace root, the venv with Agent-lightning 0.3.0 (created by
//! `tests/python/prepare_venv.py` under `target/py/agl-0.3`), server child processes (`agl-host
//! store --port 0` and others) that are killed on drop, and the store backends a test runs on
//! ([`Backend`], the workspace's one list, `agl_testkit::Backend`). A module of the `cli` test
//! binary (`tests/cli/main.rs`), included with `#[path]` by benches.

// Each test or bench uses a part of this.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

const LISTENING: &str = "agl-host store: listening on ";

pub fn workspace_root() -> PathBuf {
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

/// Creates or reuses the venv with `agentlightning==0.3.0`; returns its python.
pub fn prepare_venv() -> PathBuf {
    let helper = workspace_root().join("tests/python/prepare_venv.py");
    let output = match Command::new("python3").arg(&helper).arg(venv_dir()).output() {
        Ok(output) => output,
        Err(err) => panic!(
            "cannot run python3 ({err}). This needs Python 3.10 or newer with venv and pip, e.g. \
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

/// A server child process, killed and reaped on drop.
pub struct ServerProcess {
    child: Child,
    /// `http://127.0.0.1:PORT`
    pub url: String,
    /// What the server wrote to stderr so far (for failure messages); empty when not captured.
    log: Arc<Mutex<String>>,
}

impl ServerProcess {
    /// `agl-host store --port 0 ARGS...` (this package's binary); returns once it printed its URL.
    pub fn agl_host_store(args: &[&str]) -> ServerProcess {
        Self::store_of(std::path::Path::new(env!("CARGO_BIN_EXE_agl-host")), args)
    }

    /// `BINARY store --port 0 ARGS...` (another build of agl-host); returns once it printed its
    /// URL.
    pub fn store_of(binary: &std::path::Path, args: &[&str]) -> ServerProcess {
        Self::store_with_env(binary, args, &[])
    }

    /// `agl-host store --port 0 ARGS...` with the variables `env` set for it.
    pub fn agl_host_store_with_env(args: &[&str], env: &[(&str, &str)]) -> ServerProcess {
        Self::store_with_env(std::path::Path::new(env!("CARGO_BIN_EXE_agl-host")), args, env)
    }

    fn store_with_env(binary: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> ServerProcess {
        let mut command = Command::new(binary);
        command
            .args(["store", "--port", "0"])
            .args(args)
            .envs(env.iter().copied());
        Self::spawn_printing(command, LISTENING)
    }

    /// `agl-host ARGS` (this package's binary), a server that prints `prefix URL` on stderr (e.g.
    /// `agl-host dashboard RUN --port 0`); returns once it did.
    pub fn agl_host_printing(args: &[&str], prefix: &str) -> ServerProcess {
        let mut command = Command::new(env!("CARGO_BIN_EXE_agl-host"));
        command.args(args);
        Self::spawn_printing(command, prefix)
    }

    /// Starts `command` and reads its stderr until the line `prefix URL`.
    fn spawn_printing(mut command: Command, prefix: &str) -> ServerProcess {
        let binary = command.get_program().to_owned();
        let binary = Path::new(&binary);
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{} does not start: {e}", binary.display()));
        let stderr = child.stderr.take().expect("piped stderr");
        let log = Arc::new(Mutex::new(String::new()));
        // From here on the child is killed and reaped on drop, whatever happens.
        let mut server = ServerProcess {
            child,
            url: String::new(),
            log: Arc::clone(&log),
        };
        match read_url(stderr, log, prefix) {
            Some(url) => server.url = url,
            None => {
                let status = server.child.wait().expect("wait for agl-host");
                panic!(
                    "{} exited ({status}) before printing its URL:\n{}",
                    binary.display(),
                    server.log()
                );
            }
        }
        server
    }

    /// Another server already started at `url`, to be killed on drop like ours.
    pub fn adopt(child: Child, url: String) -> ServerProcess {
        ServerProcess {
            child,
            url,
            log: Arc::default(),
        }
    }

    /// `127.0.0.1:PORT`: the URL without its scheme.
    pub fn host(&self) -> &str {
        self.url.strip_prefix("http://").unwrap_or(&self.url)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn log(&self) -> String {
        self.log.lock().map(|log| log.clone()).unwrap_or_default()
    }

    /// Kills the server with SIGKILL (no shutdown of any kind) and reaps it.
    pub fn kill(&mut self) -> ExitStatus {
        self.child.kill().expect("SIGKILL the server");
        self.child.wait().expect("reap the server")
    }
}

/// A store `agl-host store --db` opens, for tests that run once per backend
/// (`#[agl_testkit::each_backend]`): memory; a new file under the build's `target/tmp`; a new
/// database on the test process's throwaway PostgreSQL server (`agl_testkit::postgres`).
pub use agl_testkit::Backend;

/// What `agl-host store --db` needs of a [`Backend`].
pub trait BackendDb {
    /// A `--db` naming a fresh, empty store of this backend. PostgreSQL's panics, saying what is
    /// missing, on a machine without it (its tests carry `#[agl_testkit::needs(postgres)]`).
    fn fresh_db(self) -> FreshDb;
}

impl BackendDb for Backend {
    fn fresh_db(self) -> FreshDb {
        match self {
            Backend::Memory => FreshDb {
                url: "memory".to_owned(),
                scratch: None,
            },
            Backend::Sqlite => {
                let scratch = Scratch::new("sqlite");
                FreshDb {
                    url: format!("sqlite:{}", scratch.path("store.db").display()),
                    scratch: Some(scratch),
                }
            }
            Backend::Postgres => FreshDb {
                url: agl_testkit::postgres::server().fresh_database(),
                scratch: None,
            },
        }
    }
}

/// A `--db` for one test, and the folder its SQLite file lives in (removed on drop).
pub struct FreshDb {
    pub url: String,
    scratch: Option<Scratch>,
}

/// A new, empty folder under the build's `target/tmp` (`agl-cli-<what>-<pid>-<n>`), removed
/// with everything in it on drop.
pub struct Scratch(PathBuf);

impl Scratch {
    pub fn new(what: &str) -> Scratch {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "agl-cli-{what}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a scratch folder under target/tmp");
        Scratch(dir)
    }

    /// `name` inside the folder.
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads stderr until the line `prefix URL` ("agl-host store: listening on URL"...), then keeps
/// draining it into `log` on a thread (so the process never blocks on a full pipe). None when
/// stderr ends first.
pub fn read_url(stderr: ChildStderr, log: Arc<Mutex<String>>, prefix: &str) -> Option<String> {
    let mut reader = BufReader::new(stderr);
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return None;
        }
        if let Ok(mut log) = log.lock() {
            log.push_str(&line);
        }
        if let Some(rest) = line.trim().strip_prefix(prefix) {
            let url = rest.split_whitespace().next()?.to_string();
            thread::spawn(move || {
                let mut rest = String::new();
                let _ = reader.read_to_string(&mut rest);
                if let Ok(mut log) = log.lock() {
                    log.push_str(&rest);
                }
            });
            return Some(url);
        }
    }
}
