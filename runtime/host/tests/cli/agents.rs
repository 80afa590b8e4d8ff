//! What the end-to-end tests of agents in other languages (`python_agents.rs`, `js_agents.rs`,
//! `c_agent.rs`) share: the repository, the test cache every `agl-host` they run shares
//! (toolchains, built and compiled components), scratch folders, the README's APO command, and
//! reading what a run printed and wrote, and a loopback server that answers one HTTP request.
//! Included with `mod agents;`; each test binary uses part.
#![allow(dead_code)]

use serde_json::Value;
use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

pub fn repo() -> PathBuf {
    agl_guest_build::repo_root()
}

/// The cache every test shares: toolchains, built and compiled components.
pub fn cache_dir() -> PathBuf {
    repo().join("target").join("agl-cache-tests")
}

/// A fresh scratch folder `<prefix>-<name>` under the build's `target/tmp`.
pub fn scratch(prefix: &str, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{prefix}-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// `agl-host ARGS` with the shared test cache (and the default python3).
pub fn agl_host<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(args: I) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agl-host"))
        .env("AGL_CACHE_DIR", cache_dir())
        // Runs are kept in memory here; tests/kept_runs.rs covers keeping them.
        .env("AGL_DB", "memory")
        .env_remove("AGL_PYTHON")
        .args(args)
        .output()
        .expect("agl-host runs")
}

/// What a command printed, for an assertion's message.
pub fn text(output: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

pub fn read_results(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("results file written");
    serde_json::from_str(&text).expect("results are JSON")
}

/// The arguments of `agl-host run` of `agent` under APO on the math agent's data, seed
/// resources, rules and config (the README's command, seed 42), results into `out`.
pub fn apo_args(agent: &Path, out: &Path) -> Vec<OsString> {
    let math = repo().join("examples/math-agent");
    let mut args: Vec<OsString> = vec![
        "run".into(),
        "--agent".into(),
        agent.into(),
        "--algo".into(),
        "apo".into(),
    ];
    for (flag, file) in [
        ("--train", "data/train.jsonl"),
        ("--val", "data/val.jsonl"),
        ("--resources", "apo/seed-resources.json"),
        ("--llm-script", "apo/rules.json"),
        ("--algo-config", "apo/config.json"),
    ] {
        args.push(flag.into());
        args.push(math.join(file).into());
    }
    args.extend(["--output".into(), out.into()]);
    args
}

/// `agl-host run` of `agent` under the baseline algorithm on the tasks in `train`, with the math
/// agent's scripted LLM, no progress display, results into `out`, then `extra`.
pub fn baseline_run_args(agent: &Path, train: &Path, out: &Path, extra: &[&str]) -> Vec<String> {
    let rules = repo().join("examples/math-agent/rules.json");
    let mut args: Vec<String> = ["run", "--agent"].map(str::to_owned).to_vec();
    args.push(agent.display().to_string());
    args.extend(["--algo", "baseline", "--no-progress", "--train"].map(str::to_owned));
    args.push(train.display().to_string());
    args.push("--llm-script".to_owned());
    args.push(rules.display().to_string());
    args.push("--output".to_owned());
    args.push(out.display().to_string());
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    args
}

/// The failure reasons of a results file.
pub fn reasons(results: &Value) -> Vec<String> {
    results["failures"]
        .as_array()
        .expect("failures")
        .iter()
        .map(|f| f["reason"].as_str().expect("reason").to_owned())
        .collect()
}

/// Every one of `expected` is part of some failure reason of `results`, and the reason of the
/// huge error (`EEEE...`) is bounded by the host to fewer than `huge_below` bytes.
pub fn assert_failures_say(results: &Value, expected: &[&str], huge_below: usize) {
    let reasons = reasons(results);
    for needle in expected {
        assert!(
            reasons.iter().any(|r| r.contains(needle)),
            "no failure says {needle:?}: {reasons:#?}"
        );
    }
    let huge = reasons.iter().find(|r| r.contains("EEEE")).expect("huge error");
    assert!(
        huge.len() < huge_below,
        "the host bounds a huge reason: {} bytes",
        huge.len()
    );
}

/// `flag file` pairs, each file under `base`, appended to `args`.
pub fn with_files(mut args: Vec<OsString>, base: &Path, files: &[(&str, &str)]) -> Vec<OsString> {
    for (flag, file) in files {
        args.push((*flag).into());
        args.push(base.join(file).into());
    }
    args
}

/// `agl-host dev` of the agent folder `agent` on `tasks` (one JSON task each) with the math
/// agent's scripted LLM and a 3 s deadline, in `dir`: the run must complete; returns its results.
pub fn dev_on_tasks(agent: &Path, tasks: &[&str], dir: &Path) -> Value {
    let train = dir.join("train.jsonl");
    std::fs::write(&train, tasks.join("\n") + "\n").expect("tasks");
    let out = dir.join("results.json");
    let rules = repo().join("examples/math-agent/rules.json");
    let run = agl_host([
        OsStr::new("dev"),
        OsStr::new("--agent"),
        agent.as_os_str(),
        OsStr::new("--train"),
        train.as_os_str(),
        OsStr::new("--llm-script"),
        rules.as_os_str(),
        OsStr::new("--agent-timeout"),
        OsStr::new("3s"),
        OsStr::new("--output"),
        out.as_os_str(),
    ]);
    assert!(run.status.success(), "{}", text(&run));
    read_results(&out)
}

/// A server on a free loopback port that accepts one connection, reads its request (its first
/// 4 KiB) and writes `answer` (a whole HTTP/1.1 response); joined, it gives the request's text.
pub fn answer_once(answer: &'static [u8]) -> (SocketAddr, JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("the granted request connects");
        let mut request = [0u8; 4096];
        let read = stream.read(&mut request).expect("request");
        stream.write_all(answer).expect("answer");
        String::from_utf8_lossy(&request[..read]).into_owned()
    });
    (addr, server)
}

/// A loopback port that is listened on but never accepted from: `refused.accept().is_err()`
/// after a run says nothing connected to it.
pub fn never_accepted() -> (SocketAddr, TcpListener) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    (listener.local_addr().expect("addr"), listener)
}

/// The results of a run of two rollouts, one request to a granted host (reward 1) and one to a
/// host not granted (reward 0): both attempts succeeded, mean reward 0.5.
pub fn granted_one_refused_one(run: &Output, out: &Path) -> Value {
    assert!(run.status.success(), "{}", text(run));
    let results = read_results(out);
    let train = &results["splits"]["train"];
    assert_eq!(train["succeeded"].as_u64(), Some(2), "{results:#}");
    assert_eq!(
        train["mean_reward"].as_f64(),
        Some(0.5),
        "granted 1, refused 0: {results:#}"
    );
    results
}

/// A server on a free loopback port that answers every connection with `answer` (a whole
/// HTTP/1.1 response) and keeps the text of each request (its first 4 KiB), in order.
pub fn answer_all(answer: &'static [u8]) -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = [0u8; 4096];
            let read = stream.read(&mut request).unwrap_or(0);
            let text = String::from_utf8_lossy(&request[..read]).into_owned();
            log.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(text);
            let _ = stream.write_all(answer);
        }
    });
    (addr, seen)
}

/// The spans of the rollout whose task has `"url": url`, in the run `results` kept in `db`
/// (`agl-host show --json`).
pub fn spans_of_url(db: &str, results: &Value, url: &str) -> Vec<Value> {
    spans_of_task(db, results, url, |input| input["url"] == url)
}

/// The spans of the rollout whose task `matches` (`what` names it in a failure), in the run
/// `results` kept in `db` (`agl-host show --json`).
pub fn spans_of_task(db: &str, results: &Value, what: &str, matches: impl Fn(&Value) -> bool) -> Vec<Value> {
    let show = |args: &[&str]| -> Value {
        let mut all = vec!["show", "--db", db];
        all.extend_from_slice(args);
        all.push("--json");
        let shown = agl_host(&all);
        assert!(shown.status.success(), "{}", text(&shown));
        serde_json::from_slice(&shown.stdout).expect("show --json prints JSON")
    };
    let run_id = results["run_id"].as_str().expect("run id");
    let rollouts = show(&[run_id]);
    let rollout_id = rollouts["rollouts"]
        .as_array()
        .expect("rollouts")
        .iter()
        .map(|r| &r["rollout"])
        .find(|r| matches(&r["input"]))
        .and_then(|r| r["rollout_id"].as_str())
        .unwrap_or_else(|| panic!("no rollout for {what}: {rollouts:#}"))
        .to_owned();
    show(&[run_id, &rollout_id])["spans"].as_array().expect("spans").clone()
}

/// The `agl.http.request` spans among `spans`.
pub fn http_request_spans(spans: &[Value]) -> Vec<Value> {
    spans
        .iter()
        .filter(|s| s["name"] == "agl.http.request")
        .cloned()
        .collect()
}

/// The run `results` (kept in `db`) of a probe whose `http_get` of `dotted`
/// (`http://LOCALHOST.:PORT/...`) is the only request the loopback server on `port` saw (`seen`):
/// it was sent as `localhost:PORT`, answered `ok`, and its span names `localhost`.
pub fn assert_the_dotted_name_went_as_localhost(
    seen: &Mutex<Vec<String>>,
    db: &str,
    results: &Value,
    dotted: &str,
    port: u16,
) {
    let requests = seen.lock().expect("seen").clone();
    assert_eq!(requests.len(), 1, "only the dotted name was sent: {requests:#?}");
    let request = requests[0].to_ascii_lowercase();
    assert!(request.starts_with("get /dotted http/1.1"), "{request}");
    assert!(
        request.contains(&format!("\r\nhost: localhost:{port}\r\n")),
        "{request}"
    );
    let spans = spans_of_url(db, results, dotted);
    let said = serde_json::to_string(&spans).expect("JSON");
    assert!(said.contains("http_get: allowed: status 200, 2 bytes: ok"), "{said}");
    let sent = http_request_spans(&spans);
    assert_eq!(sent.len(), 1, "{spans:#?}");
    assert_eq!(sent[0]["attributes"]["server.address"], "localhost", "{sent:#?}");
    assert_eq!(sent[0]["attributes"]["http.response.status_code"], 200, "{sent:#?}");
}

/// The `http_get` of `url` (with user info `user:secret@`) reached the host, which refused it
/// (`HTTP-request-denied`), its span saying why without repeating the secret.
pub fn assert_the_user_info_was_refused_by_the_host(db: &str, results: &Value, url: &str, denied: &str) {
    let spans = spans_of_url(db, results, url);
    let said = serde_json::to_string(&spans).expect("JSON");
    assert!(said.contains(denied), "{said}");
    let refused = http_request_spans(&spans);
    assert_eq!(refused.len(), 1, "{spans:#?}");
    assert_eq!(
        refused[0]["attributes"]["error.type"], "HTTP-request-denied",
        "{refused:#?}"
    );
    let span = serde_json::to_string(&refused[0]).expect("JSON");
    assert!(span.contains("user info") && !span.contains("secret"), "{span}");
}

/// The probe of one language (`tests/guests/probe-py`, `probe-js`) gives feedback through its
/// SDK's `ctx.feedback` (the `feedback` action) in a kept run: the texts land in order, as data,
/// on each attempt's final reward span (`agl.reward.feedback` on the last
/// `agentlightning.annotation` span, beside the reward the rollout returned), bounded to 64 texts;
/// a failed attempt keeps its feedback on an annotation span that holds no reward.
pub fn assert_probe_feedback_lands_on_the_final_reward_span(probe: &Path, dir: &Path) {
    let ask = "Tom has 12 apples and buys 7 more. How many?";
    let texts = [
        "expected 27, got 19: wrong numbers",
        "\u{1b}[31mred\u{1b}[0m\r\0 kept as data",
    ];
    let tasks = [
        serde_json::json!({"do": "feedback", "ask": ask, "texts": texts, "reward": 0.25}),
        serde_json::json!({"do": "feedback", "texts": ["ab"], "repeat": 99, "reward": 1.0}),
        serde_json::json!({"do": "feedback", "texts": ["error[E0308]: mismatched types"], "fail": true}),
    ];
    let train = dir.join("train.jsonl");
    let lines: Vec<String> = tasks.iter().map(Value::to_string).collect();
    std::fs::write(&train, lines.join("\n") + "\n").expect("tasks");
    let out = dir.join("results.json");
    let db = format!("sqlite:{}", dir.join("run.db").display());
    let run = agl_host([
        OsStr::new("dev"),
        OsStr::new("--agent"),
        probe.as_os_str(),
        OsStr::new("--train"),
        train.as_os_str(),
        OsStr::new("--llm-script"),
        repo().join("examples/math-agent/rules.json").as_os_str(),
        OsStr::new("--agent-timeout"),
        OsStr::new("20s"),
        OsStr::new("--db"),
        OsStr::new(&db),
        OsStr::new("--output"),
        out.as_os_str(),
    ]);
    assert!(run.status.success(), "{}", text(&run));
    let results = read_results(&out);
    let train = &results["splits"]["train"];
    assert_eq!(
        (train["succeeded"].as_u64(), train["failed"].as_u64()),
        (Some(2), Some(1)),
        "{results:#}"
    );
    assert!(
        reasons(&results).iter().any(|r| r.contains("failed on purpose")),
        "{results:#}"
    );

    // The attempt's last annotation span: the final reward span (or, failed, feedback's own).
    let last_annotation = |task: &Value| -> serde_json::Map<String, Value> {
        let spans = spans_of_task(&db, &results, &task.to_string(), |input| input == task);
        let last = spans
            .iter()
            .filter(|s| s["name"] == "agentlightning.annotation")
            .max_by_key(|s| s["sequence_id"].as_u64())
            .unwrap_or_else(|| panic!("no annotation span for {task}: {spans:#?}"));
        last["attributes"].as_object().expect("attributes").clone()
    };
    let answered = last_annotation(&tasks[0]);
    assert_eq!(answered["agentlightning.reward.0.name"], "primary", "{answered:#?}");
    assert_eq!(answered["agentlightning.reward.0.value"], 0.25, "{answered:#?}");
    assert_eq!(
        answered["agl.reward.feedback"],
        serde_json::json!(texts),
        "{answered:#?}"
    );
    assert!(
        !answered.contains_key("agl.reward.feedback.dropped_bytes"),
        "{answered:#?}"
    );

    let flooded = last_annotation(&tasks[1]);
    assert_eq!(flooded["agentlightning.reward.0.value"], 1.0, "{flooded:#?}");
    let kept = flooded["agl.reward.feedback"].as_array().expect("a list");
    assert_eq!(kept.len(), 64, "{flooded:#?}");
    assert!(kept.iter().all(|t| t == "ab"), "{flooded:#?}");
    assert_eq!(flooded["agl.reward.feedback.dropped_bytes"], 36 * 2, "{flooded:#?}");

    let failed = last_annotation(&tasks[2]);
    assert_eq!(
        failed["agl.reward.feedback"],
        serde_json::json!(["error[E0308]: mismatched types"]),
        "{failed:#?}"
    );
    assert!(!failed.contains_key("agentlightning.reward.0.value"), "{failed:#?}");
}
