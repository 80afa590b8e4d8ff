//! Agent-lightning 1.0's own verl rollout manager (`agentlightning.verl.agl_rollout_manager`,
//! PyPI `agentlightning==1.0.2`) training against `agl-host store` (issue #37, item 1): the
//! manager registers a model server through `/api/models`, enqueues a batch through
//! `/api/rollouts`, and builds its `CompletedRollout`s (token ids, log probs, rewards) from the
//! gateway's events; our runner processes run the rollouts in the sandbox, one with a Rust agent
//! (`tests/guests/proxy-agent`), one with a Python agent (`tests/guests/proxy-agent-py`, built by
//! `agl-host build`), each calling the model over HTTP through the store's LLM proxy
//! (`--llm-proxy --llm-token-ids`) with its attempt's capability, the endpoint of the registered
//! model's `proxy_llm` resource. The model is `agl_testkit::llm_server` answering from rules that
//! give token ids and logprobs. The checks are `tests/python/gateway_rollout_manager.py`'s, run in
//! the venv `target/py/agl-1.0` (`tests/python/prepare_venv.py --set 1.0`, created on the first
//! run: PyPI then).
//!
//! Two model servers with the same rules: the one the manager registers, and the store's own
//! upstream (`--llm-endpoint`), so that the test passes whether the proxy forwards a rollout's
//! calls to its registered model server or to its own upstream; the test prints which served them.
//!
//! Needs `python3` (3.11 or newer, with the venv module), the Python agents' toolchain (the test
//! cache, as `python_agents.rs`) and, the first time, PyPI.

use crate::agents::{agl_host, cache_dir, repo, text};
use crate::support::{self, Scratch, ServerProcess, read_url};

use agl_llm::ScriptedBackend;
use agl_testkit::llm_server::{Faults, ServerHandle};
use serde_json::{Value, json};
use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// The store's token, 1.0's `AGL_KEY`.
const KEY: &str = "gateway-k3y";
/// The whole Python run: importing agentlightning, then the batch.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(240);
/// A runner's start: the first one compiles its component into the test cache.
const RUNNER_START: Duration = Duration::from_secs(300);
/// Each model answer's delay, so that one runner cannot take the whole batch before the other
/// polls (each polls at least every 50 ms).
const ANSWER_DELAY: Duration = Duration::from_millis(300);

/// The batch's samples: the agents' tasks (`question`, `answer`) and the token ids and logprobs
/// the model gives for each question (binary fractions: exact through every JSON hop).
fn samples() -> Value {
    json!([
        {"question": "say 7", "answer": "7", "prompt_token_ids": [101, 7, 102], "response_token_ids": [7, 2],
         "logprobs": [-0.5, -0.25]},
        {"question": "say 9", "answer": "9", "prompt_token_ids": [101, 9, 102], "response_token_ids": [9, 2],
         "logprobs": [-0.125, -0.0625]},
        {"question": "say 42", "answer": "42", "prompt_token_ids": [101, 42, 102], "response_token_ids": [42, 2],
         "logprobs": [-1.0, -0.75]}
    ])
}

/// The model's rules: each sample's question answered with its answer, token ids and logprobs.
fn rules() -> Value {
    let rules: Vec<Value> = samples()
        .as_array()
        .expect("samples")
        .iter()
        .map(|s| {
            let logprobs: Vec<Value> = s["logprobs"]
                .as_array()
                .expect("logprobs")
                .iter()
                .map(|l| json!({"token": "t", "logprob": l}))
                .collect();
            json!({
                "when": [{"role": "user", "matches": format!("^{}$", s["question"].as_str().expect("question"))}],
                "reply": s["answer"],
                "tokens": {"prompt_token_ids": s["prompt_token_ids"], "response_token_ids": s["response_token_ids"],
                           "logprobs": logprobs}
            })
        })
        .collect();
    json!({"model": "m", "rules": rules, "fallback": {"reply": "none of the samples"}})
}

/// A scripted OpenAI-compatible server on loopback, on a runtime of its own.
struct Model {
    runtime: tokio::runtime::Runtime,
    server: Option<ServerHandle>,
}

impl Model {
    fn serve() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let answers = ScriptedBackend::from_json_str(&rules().to_string()).expect("rules");
        let server = runtime
            .block_on(agl_testkit::llm_server::serve_with_faults(
                Arc::new(answers),
                "127.0.0.1:0".parse().expect("address"),
                Faults::default().with_delay(ANSWER_DELAY),
            ))
            .expect("the model serves");
        Self {
            runtime,
            server: Some(server),
        }
    }

    fn handle(&self) -> &ServerHandle {
        self.server.as_ref().expect("serving")
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            self.runtime.block_on(server.shutdown());
        }
    }
}

/// `agl-host runner` against the store, killed on drop; what it wrote to stderr is kept.
struct Runner {
    child: Child,
    log: Arc<Mutex<String>>,
}

impl Runner {
    /// Starts a runner of `agent` whose worker ids start with `prefix`; returns once its agent is
    /// loaded and it waits for rollouts.
    fn start(store: &ServerProcess, agent: &Path, agents_port: u16, llm: &str, prefix: &str) -> Runner {
        let mut child = Command::new(env!("CARGO_BIN_EXE_agl-host"))
            .env("AGL_CACHE_DIR", cache_dir())
            .args(["runner", "--store", &store.url, "--token", KEY, "--agent"])
            .arg(agent)
            .args(["--agent-http", &format!("http://127.0.0.1:{agents_port}")])
            // For the agents' `llm` interface, which these two do not use.
            .args(["--llm-endpoint", llm, "--llm-model", "m"])
            .args(["--worker-prefix", prefix])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the runner starts");
        let stderr = child.stderr.take().expect("piped stderr");
        let log = Arc::new(Mutex::new(String::new()));
        // "PREFIX: 1 runner(s) of AGENT on STORE · LLM: ... · waiting for rollouts", once loaded.
        let (ready, reader_log, ready_prefix) = (Arc::new(Mutex::new(None)), Arc::clone(&log), format!("{prefix}: "));
        let found = Arc::clone(&ready);
        thread::spawn(move || {
            let seen = read_url(stderr, reader_log, &ready_prefix).is_some();
            *found.lock().expect("lock") = Some(seen);
        });
        let mut runner = Runner { child, log };
        let started = Instant::now();
        loop {
            match *ready.lock().expect("lock") {
                Some(true) => return runner,
                Some(false) => break,
                None => {}
            }
            if started.elapsed() > RUNNER_START || runner.child.try_wait().expect("poll the runner").is_some() {
                break;
            }
            thread::sleep(Duration::from_millis(100));
        }
        let _ = runner.child.kill();
        thread::sleep(Duration::from_millis(200));
        panic!("the {prefix} runner did not get ready:\n{}", runner.log());
    }

    fn log(&self) -> String {
        self.log.lock().map(|log| log.clone()).unwrap_or_default()
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Creates or reuses `target/py/agl-1.0` (`prepare_venv.py --set 1.0`); returns its python.
fn prepare_venv() -> PathBuf {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR has a parent")
        .join("py/agl-1.0");
    let output = Command::new("python3")
        .arg(support::workspace_root().join("tests/python/prepare_venv.py"))
        .arg(&venv)
        .args(["--set", "1.0"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 ({e}): this needs Python 3.11 or newer with venv and pip"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "preparing the venv {} failed ({}): {stdout}\n{}\nneeds python3 >= 3.11 with `python3-venv` and \
         `python3-pip`, and PyPI for the first install",
        venv.display(),
        output.status,
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

/// Runs `command`, killing it after `limit`; returns its output and whether it was killed.
fn output_within(mut command: Command, limit: Duration) -> (Output, bool) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the venv's python starts");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped stderr")));
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
        thread::sleep(Duration::from_millis(100));
    };
    let stdout = stdout.join().expect("stdout reader");
    let stderr = stderr.join().expect("stderr reader");
    (Output { status, stdout, stderr }, timed_out)
}

/// A port free now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// The manager's batch (3 samples, 2 rollouts each) run by a Rust and a Python runner through the
/// proxy: every completed rollout has the model's token ids and log probs and the agent's reward.
#[test]
fn agentlightning_rollout_manager_trains_on_our_runners() {
    let venv = thread::spawn(prepare_venv);
    let (registered, upstream) = (Model::serve(), Model::serve());
    let upstream_url = upstream.handle().base_url();
    let agents_port = free_port();
    let store = ServerProcess::agl_host_store(&[
        "--token",
        KEY,
        "--llm-proxy",
        "--llm-token-ids",
        "--llm-endpoint",
        &upstream_url,
        "--llm-model",
        "m",
        "--llm-proxy-port",
        &agents_port.to_string(),
    ]);

    let rust_agent = agl_guest_build::build_guest("tests/guests/proxy-agent").expect("the proxy agent builds");
    let scratch = Scratch::new("gateway-manager");
    let python_agent = scratch.path("proxy-agent-py.wasm");
    let folder = repo().join("tests/guests/proxy-agent-py");
    let build = agl_host([
        OsStr::new("build"),
        folder.as_os_str(),
        OsStr::new("-o"),
        python_agent.as_os_str(),
    ]);
    assert!(
        build.status.success(),
        "agl-host build proxy-agent-py: {}",
        text(&build)
    );
    let rust = Runner::start(&store, &rust_agent, agents_port, &upstream_url, "rust");
    let python = Runner::start(&store, &python_agent, agents_port, &upstream_url, "py");

    let python_exe = venv.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    let mut command = Command::new(&python_exe);
    command
        .arg(repo().join("tests/python/gateway_rollout_manager.py"))
        .args(["--url", &store.url, "--key", KEY])
        .args(["--model-server", &registered.handle().local_addr().to_string()])
        .args(["--samples", &samples().to_string()])
        .args(["--workers", "rust,py"])
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let (output, timed_out) = output_within(command, SCRIPT_TIMEOUT);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let served = (registered.handle().chat_requests(), upstream.handle().chat_requests());
    assert!(
        output.status.success() && !timed_out,
        "gateway_rollout_manager.py {}:\n--- script output\n{stdout}\n--- script stderr\n{stderr}\n\
         --- calls to the registered model server, to the store's upstream: {served:?}\n\
         --- agl-host store stderr\n{}\n--- rust runner stderr\n{}\n--- py runner stderr\n{}",
        if timed_out {
            format!("timed out after {SCRIPT_TIMEOUT:?}")
        } else {
            format!("failed ({})", output.status)
        },
        store.log(),
        rust.log(),
        python.log()
    );
    let rollouts = 2 * samples().as_array().map_or(0, Vec::len) as u64;
    assert_eq!(
        served.0 + served.1,
        rollouts,
        "one model call per rollout (registered, upstream): {served:?}"
    );
    println!("{stdout}");
    println!(
        "the proxy forwarded {} calls to the registered model server, {} to its own upstream",
        served.0, served.1
    );
}
