//! A runner process killed mid-rollout (SIGKILL), for real: its attempt goes `unresponsive` when
//! its heartbeats stop, by the limit runners give rollouts that set none (`--unresponsive-after`),
//! and the rollout runs again on another runner and succeeds. Through `agl-host store` with
//! `agl-host runner` processes, and through `agl-host run --strategy client-server`. The agent (the
//! probe's `llm_once`) waits on an LLM served here whose first call never returns: the first
//! attempt is alive and slow until its runner is killed; the retry gets an answer.
//!
//! And the store killed mid-run (SIGKILL) and started again on the same SQLite file and port: the
//! runners and the algorithm's client (`agl-host run --store`) retry, reconnect, and the run
//! completes with every rollout succeeded. (The client gives up on a store that stays away longer
//! than its retries, about 16 s: `agl_client::ClientOptions::retry_delays`.)

use agl_client::{ClientOptions, HttpStoreClient};
use agl_llm::{ChatRequest, ChatResponse, LlmBackend, LlmError, ScriptedBackend};
use agl_store::{AttemptQuery, AttemptStatus, EnqueueRolloutRequest, LightningStore, RolloutQuery, RolloutStatus};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

/// The runners' heartbeat and unresponsive limit in these tests (the defaults are 2 s and 30 s).
const HEARTBEAT: &str = "100ms";
const UNRESPONSIVE_AFTER: &str = "3s";
/// Longer than the limit: a live runner's silent attempt must still be alive after it.
const SILENCE: Duration = Duration::from_secs(4);
/// Generous: builds and a busy machine.
const PATIENCE: Duration = Duration::from_secs(300);

fn component(crate_dir: &str) -> PathBuf {
    agl_guest_build::build_guest(crate_dir).unwrap_or_else(|e| panic!("building {crate_dir}: {e}"))
}

fn agl_host() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agl-host"));
    // Runs are kept in memory here; tests/kept_runs.rs covers keeping them.
    command.env("AGL_DB", "memory");
    command.env(
        "AGL_CACHE_DIR",
        agl_guest_build::repo_root().join("target").join("agl-cache-tests"),
    );
    command
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("agl-cli-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// A child process with its stderr lines on a channel; killed and reaped on drop.
struct Process {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Process {
    fn spawn(command: &mut Command) -> Self {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("agl-host starts");
        let stderr = child.stderr.take().expect("stderr piped");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Self { child, lines }
    }

    /// The first line containing `needle`.
    fn wait_for_line(&self, needle: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return line,
                Ok(_) => {}
                Err(e) => panic!("no line with '{needle}': {e}"),
            }
        }
        panic!("no line with '{needle}' in time");
    }

    /// The lines it wrote since those read so far (all of them, once it has exited and its pipe
    /// is drained).
    fn lines_so_far(&self) -> Vec<String> {
        let mut lines = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(200)) {
            lines.push(line);
        }
        lines
    }

    /// Waits for it to exit (a hang is a failure, not a stuck test).
    fn wait_for_exit(&mut self) -> std::process::ExitStatus {
        let deadline = Instant::now() + PATIENCE;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("agl-host did not exit within {PATIENCE:?}");
    }

    fn signal(&self, signal: &str) {
        let sent = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(sent.success());
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An LLM whose first chat call never returns; the others answer "ok". Says when it stalls.
struct StallsFirst {
    calls: AtomicU64,
    stalled: std::sync::Mutex<mpsc::Sender<()>>,
    answers: ScriptedBackend,
}

#[async_trait::async_trait]
impl LlmBackend for StallsFirst {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
            if let Ok(stalled) = self.stalled.lock() {
                let _ = stalled.send(());
            }
            std::future::pending::<()>().await;
        }
        self.answers.chat(request).await
    }
    fn default_model(&self) -> &str {
        self.answers.default_model()
    }
    fn describe(&self) -> String {
        "an LLM whose first call never returns".into()
    }
}

/// The stalling LLM served over HTTP on a runtime of its own, and its first (stalled) call.
struct Llm {
    runtime: tokio::runtime::Runtime,
    server: Option<agl_testkit::llm_server::ServerHandle>,
    stalled: mpsc::Receiver<()>,
}

impl Llm {
    fn serve() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let (tx, stalled) = mpsc::channel();
        let backend = Arc::new(StallsFirst {
            calls: AtomicU64::new(0),
            stalled: std::sync::Mutex::new(tx),
            answers: ScriptedBackend::from_json_str(r#"{"rules": [], "fallback": {"reply": "ok"}}"#).expect("rules"),
        });
        let server = runtime
            .block_on(agl_testkit::llm_server::serve(
                backend,
                "127.0.0.1:0".parse().expect("address"),
            ))
            .expect("the LLM serves");
        Self {
            runtime,
            server: Some(server),
            stalled,
        }
    }

    fn url(&self) -> String {
        self.server.as_ref().map(|s| s.base_url()).unwrap_or_default()
    }

    /// Waits for the first LLM call: an attempt is running, its agent waiting.
    fn wait_for_the_stalled_call(&self) {
        self.stalled.recv_timeout(PATIENCE).expect("the agent calls the LLM");
    }
}

impl Drop for Llm {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            self.runtime.block_on(server.shutdown());
        }
    }
}

/// `agl-host runner` flags: the probe, the LLM at `llm_url`, and this test's timing.
fn runner_flags(llm_url: &str) -> Vec<String> {
    let probe = component("tests/guests/probe");
    [
        "--agent",
        probe.to_str().expect("utf-8 path"),
        "--llm-endpoint",
        llm_url,
        "--llm-model",
        "m",
        "--heartbeat",
        HEARTBEAT,
        "--unresponsive-after",
        UNRESPONSIVE_AFTER,
    ]
    .map(str::to_owned)
    .to_vec()
}

/// The task: one LLM call, then reward 1.
fn task() -> Value {
    json!({"do": "llm_once", "prompt": "hello"})
}

fn client(url: &str) -> HttpStoreClient {
    HttpStoreClient::new(url, ClientOptions::default()).expect("client")
}

/// The rollout that is running now in the store at `url`, and its worker (`preparing` until the
/// first span, which the stalled LLM call has not made).
async fn running_attempt(store: &HttpStoreClient) -> (String, String) {
    let rollouts = store
        .query_rollouts(&RolloutQuery::default().status_in([RolloutStatus::Preparing, RolloutStatus::Running]))
        .await
        .expect("query");
    let [view] = rollouts.items.as_slice() else {
        panic!("one rollout runs: {:?}", rollouts.items);
    };
    let attempt = view.attempt.as_ref().expect("its attempt");
    let worker = attempt.worker_id.clone().expect("its worker");
    (view.rollout.rollout_id.clone(), worker)
}

#[test]
fn a_runner_process_killed_mid_rollout_loses_its_attempt_and_another_runner_completes_the_rollout() {
    let llm = Llm::serve();
    let store = Process::spawn(agl_host().args(["store", "--port", "0", "--threads", "1"]));
    let url = store
        .wait_for_line("listening on ")
        .split("listening on ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("a URL")
        .to_owned();
    let runner = |name: &str| {
        let process = Process::spawn(
            agl_host()
                .args(["runner", "--store", &url, "--worker-prefix", name])
                .args(runner_flags(&llm.url())),
        );
        process.wait_for_line("runner(s) of probe.wasm");
        process
    };
    let mut runners = [("a", runner("a")), ("b", runner("b"))];

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let store_client = client(&url);
    // The algorithm's part: one rollout, with no unresponsive limit and no retries of its own.
    let id = runtime
        .block_on(store_client.enqueue_rollout(EnqueueRolloutRequest::new(task())))
        .expect("enqueue")
        .rollout_id;
    llm.wait_for_the_stalled_call();
    let (running, holder) = runtime.block_on(running_attempt(&store_client));
    assert_eq!(running, id);

    // The runner gave it the default limit, and one retry for an unresponsive attempt.
    let config = runtime
        .block_on(store_client.get_rollout_by_id(&id))
        .expect("query")
        .expect("rollout")
        .rollout
        .config;
    assert_eq!(config.unresponsive_seconds, Some(3.0), "{config:?}");
    assert_eq!(config.max_attempts, 2, "{config:?}");
    assert_eq!(config.retry_condition, [AttemptStatus::Unresponsive], "{config:?}");
    // Silent for longer than the limit, the agent is alive: its runner's heartbeats say so.
    std::thread::sleep(SILENCE);
    let attempt = runtime
        .block_on(store_client.get_latest_attempt(&id))
        .expect("query")
        .expect("attempt");
    assert!(
        matches!(attempt.status, AttemptStatus::Preparing | AttemptStatus::Running),
        "a live runner's attempt: {attempt:?}"
    );

    // kill -9 the runner that holds it.
    let (killed, other) = if holder == "a" { ("a", "b") } else { ("b", "a") };
    let index = usize::from(killed == "b");
    runners[index].1.signal("-KILL");
    runners[index].1.wait_for_exit();

    let finished = runtime
        .block_on(store_client.wait_for_rollouts(std::slice::from_ref(&id), Some(PATIENCE)))
        .expect("wait");
    assert_eq!(finished.len(), 1, "the rollout finished");
    assert_eq!(finished[0].status, RolloutStatus::Succeeded, "{finished:?}");
    let attempts = runtime
        .block_on(store_client.query_attempts(&id, &AttemptQuery::default()))
        .expect("attempts")
        .items;
    let seen: Vec<(AttemptStatus, Option<&str>)> =
        attempts.iter().map(|a| (a.status, a.worker_id.as_deref())).collect();
    assert_eq!(
        seen,
        [
            (AttemptStatus::Unresponsive, Some(killed)),
            (AttemptStatus::Succeeded, Some(other))
        ],
        "{attempts:#?}"
    );

    // The survivor stops cleanly and says what it did.
    let survivor = &mut runners[1 - index].1;
    survivor.signal("-TERM");
    assert!(survivor.wait_for_exit().success());
    assert!(survivor.wait_for_line("stopped after").contains("1 succeeded"));
}

#[test]
fn a_client_server_run_retries_the_rollout_of_a_killed_runner_process_and_completes() {
    let llm = Llm::serve();
    let dir = temp_dir("runner-killed");
    let (train, out) = (dir.join("train.jsonl"), dir.join("results.json"));
    std::fs::write(&train, format!("{}\n", task())).expect("dataset");
    let run = Process::spawn(
        agl_host()
            .args([
                "run",
                "--strategy",
                "client-server",
                "--runners",
                "2",
                "--algo",
                "baseline",
            ])
            .arg("--train")
            .arg(&train)
            .arg("--output")
            .arg(&out)
            .args(runner_flags(&llm.url())),
    );
    let url = run
        .wait_for_line("store served at ")
        .split("store served at ")
        .nth(1)
        .expect("a URL")
        .trim()
        .to_owned();
    let mut pids = Vec::new();
    for index in 1..=2 {
        let line = run.wait_for_line(&format!("started runner process {index} (pid "));
        let pid = line
            .rsplit("(pid ")
            .next()
            .expect("pid")
            .trim_end_matches(')')
            .to_owned();
        pids.push(pid);
    }
    llm.wait_for_the_stalled_call();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (_, holder) = runtime.block_on(running_attempt(&client(&url)));
    let index = match holder.as_str() {
        "runner-1" => 0,
        "runner-2" => 1,
        other => panic!("a worker of this run: {other}"),
    };
    let killed = Command::new("kill")
        .args(["-KILL", &pids[index]])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    run.wait_for_line(&format!("runner process {} exited before it was asked to", index + 1));

    let mut run = run;
    let status = run.wait_for_exit();
    assert!(status.success(), "{status}");
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("results written")).expect("results are JSON");
    let split = &results["splits"]["train"];
    assert_eq!(
        (&split["rollouts"], &split["succeeded"], &split["retried"]),
        (&json!(1), &json!(1), &json!(1)),
        "{results:#}"
    );
}

// ---- the store killed and restarted mid-run --------------------------------------------------

/// Tasks of the restart run: long enough a run (with [`SLOW_LLM`]) that the kill lands mid-run.
const RESTART_TASKS: usize = 24;
/// Every LLM answer of the restart run comes this late.
const SLOW_LLM: Duration = Duration::from_millis(250);

/// An LLM that answers "ok" to every call, each [`SLOW_LLM`] late, on a runtime of its own.
struct SlowLlm {
    runtime: tokio::runtime::Runtime,
    server: Option<agl_testkit::llm_server::ServerHandle>,
}

impl SlowLlm {
    fn serve() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let answers = ScriptedBackend::from_json_str(r#"{"rules": [], "fallback": {"reply": "ok"}}"#).expect("rules");
        let server = runtime
            .block_on(agl_testkit::llm_server::serve_with_faults(
                Arc::new(answers),
                "127.0.0.1:0".parse().expect("address"),
                agl_testkit::llm_server::Faults::default().with_delay(SLOW_LLM),
            ))
            .expect("the LLM serves");
        Self {
            runtime,
            server: Some(server),
        }
    }

    fn url(&self) -> String {
        self.server.as_ref().map(|s| s.base_url()).unwrap_or_default()
    }
}

impl Drop for SlowLlm {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            self.runtime.block_on(server.shutdown());
        }
    }
}

/// A port nothing listens on now (bound, then let go), for a store restarted on the same port.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// The URL an `agl-host store` process says it listens on.
fn listening_url(store: &Process) -> String {
    store
        .wait_for_line("listening on ")
        .split("listening on ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("a URL")
        .to_owned()
}

/// Rollouts of the store at `url` that succeeded, asked without retrying (the store may be down).
async fn succeeded_so_far(url: &str) -> u64 {
    let options = ClientOptions {
        retry_delays: Vec::new(),
        ..ClientOptions::default()
    };
    let Ok(store) = HttpStoreClient::new(url, options) else {
        return 0;
    };
    store
        .query_rollouts(&RolloutQuery::default().status_in([RolloutStatus::Succeeded]))
        .await
        .map_or(0, |found| found.total)
}

#[test]
fn a_store_killed_and_restarted_on_the_same_file_and_port_mid_run_loses_no_rollout() {
    let llm = SlowLlm::serve();
    let dir = temp_dir("store-restarted");
    let (train, config, out) = (
        dir.join("train.jsonl"),
        dir.join("config.json"),
        dir.join("results.json"),
    );
    let tasks: String = (0..RESTART_TASKS)
        .map(|i| format!("{}\n", json!({"do": "llm_once", "prompt": format!("task {i}")})))
        .collect();
    std::fs::write(&train, tasks).expect("dataset");
    // A dequeue the store committed but died before answering leaves an attempt no runner
    // holds: its silence since its start makes it unresponsive, and the rollout runs again.
    let settings = json!({"rollout_config": {
        "unresponsive_seconds": 10.0, "max_attempts": 3, "retry_condition": ["unresponsive"]
    }});
    std::fs::write(&config, settings.to_string()).expect("algorithm config");

    let db = format!("sqlite:{}", dir.join("store.db").display());
    let port = free_port().to_string();
    let start_store = || {
        let store = Process::spawn(agl_host().args(["store", "--port", &port, "--threads", "1", "--db", &db]));
        let url = listening_url(&store);
        (store, url)
    };
    let (mut store, url) = start_store();
    let runner = |name: &str| {
        let process = Process::spawn(
            agl_host()
                .args(["runner", "--store", &url, "--worker-prefix", name])
                .args(runner_flags(&llm.url())),
        );
        process.wait_for_line("runner(s) of probe.wasm");
        process
    };
    let runners = [runner("a"), runner("b")];
    let mut run = Process::spawn(
        agl_host()
            .args(["run", "--store", &url, "--algo", "baseline"])
            .arg("--train")
            .arg(&train)
            .arg("--algo-config")
            .arg(&config)
            .arg("--output")
            .arg(&out),
    );

    // Kill -9 the store once a third of the rollouts succeeded, and start it again at once.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let deadline = Instant::now() + PATIENCE;
    let before = loop {
        let succeeded = runtime.block_on(succeeded_so_far(&url));
        if succeeded >= (RESTART_TASKS / 3) as u64 {
            break succeeded;
        }
        assert!(
            Instant::now() < deadline,
            "{succeeded} rollouts succeeded in {PATIENCE:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    store.signal("-KILL");
    assert!(!store.wait_for_exit().success());
    let down = Instant::now();
    let (_store, again) = start_store();
    let outage = down.elapsed();
    assert_eq!(again, url, "the same port");

    let status = run.wait_for_exit();
    let run_lines = run.lines_so_far();
    assert!(status.success(), "{status}:\n{}", run_lines.join("\n"));
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("results written")).expect("results are JSON");
    let split = &results["splits"]["train"];
    let tasks = json!(RESTART_TASKS);
    assert_eq!(results["status"], "completed", "{results:#}");
    assert_eq!(
        (&split["rollouts"], &split["succeeded"], &split["unfinished"]),
        (&tasks, &tasks, &json!(0)),
        "every task's rollout, succeeded: {results:#}"
    );
    assert_eq!(split["mean_reward"], 1.0, "every reward kept: {results:#}");
    assert_eq!(results["failure_reasons"], json!([]), "{results:#}");
    // The store holds those rollouts and no others (no enqueue made twice).
    let store_client = client(&url);
    let rollouts = runtime
        .block_on(store_client.query_rollouts(&RolloutQuery::default()))
        .expect("rollouts");
    assert_eq!(rollouts.total, RESTART_TASKS as u64);
    assert!(
        rollouts
            .items
            .iter()
            .all(|r| r.rollout.status == RolloutStatus::Succeeded),
        "{:#?}",
        rollouts.items
    );
    // The algorithm's wait was held by the killed store: its client saw it die and retried.
    let retried: Vec<&String> = run_lines.iter().filter(|line| line.contains("retrying in")).collect();
    assert!(
        !retried.is_empty(),
        "the run's client retried:\n{}",
        run_lines.join("\n")
    );
    let runner_retries: usize = runners
        .iter()
        .map(|r| {
            r.lines_so_far()
                .iter()
                .filter(|line| line.contains("retrying in"))
                .count()
        })
        .sum();
    println!(
        "store killed after {before} of {RESTART_TASKS} rollouts succeeded, serving again {outage:.2?} later; \
         {} rollouts retried; requests retried: {} by the run, {runner_retries} by the runners",
        split["retried"],
        retried.len(),
    );
}
