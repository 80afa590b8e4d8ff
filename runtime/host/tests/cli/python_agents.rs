//! End-to-end for Python agents: the real `agl-host` binary building Python guest folders with
//! componentize-py (installed into the shared test cache on first use) and running them — the
//! math agent in Python under APO against the Rust one, pooled with 8 runners, `agl-host build -o`;
//! the example with a PyPI dependency; the Python probe's hostile actions in one run, and its
//! feedback (`ctx.feedback`) on the final reward span; a module built without the SDK
//! (`[tool.agl] sdk = false`); outgoing HTTP through the SDK's `ctx.http()` (a granted loopback
//! server answers, any other host is refused inside the agent); and the
//! errors a Python author meets (a syntax error, a native dependency, no usable python3, a rollout
//! that raises). Each folder is built and compiled once, then loaded from the cache. Needs
//! python3 >= 3.9 with venv (and PyPI for the first toolchain and dependency installs).

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::Command;

use crate::agents;
use agents::*;

/// A fresh scratch folder under the build's `target/tmp`.
fn temp_dir(name: &str) -> PathBuf {
    scratch("agl-py", name)
}

#[test]
fn the_python_math_agent_matches_the_rust_one_under_apo_pools_and_builds() {
    let dir = temp_dir("math");
    let py_agent = repo().join("examples/math-agent-py");

    // APO, as the README runs it: the Python agent finds the same prompt as the Rust one.
    let py_out = dir.join("py.json");
    let run = agl_host(apo_args(&py_agent, &py_out));
    assert!(run.status.success(), "{}", text(&run));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        (stderr.contains("built agent") || stderr.contains("is up to date ->")) && stderr.contains("math_agent_py-"),
        "{stderr}"
    );
    let py = read_results(&py_out);
    let summary = &py["algorithm_summary"];
    assert_eq!(summary["seed_prompt"]["score"].as_f64(), Some(0.5), "{summary:#}");
    assert_eq!(summary["best"]["score"].as_f64(), Some(1.0), "{summary:#}");
    assert_eq!(py["total"]["failed"], 0, "{py:#}");

    let rust_agent = agl_guest_build::build_guest("examples/math-agent").expect("the Rust math agent builds");
    let rust_out = dir.join("rust.json");
    let run = agl_host(apo_args(&rust_agent, &rust_out));
    assert!(run.status.success(), "{}", text(&run));
    let rust = read_results(&rust_out);
    for key in ["seed_prompt", "best", "history", "candidates", "skipped"] {
        assert_eq!(
            py["algorithm_summary"][key], rust["algorithm_summary"][key],
            "{key} differs between the Python and the Rust agent"
        );
    }
    assert_eq!(py["splits"], rust["splits"]);

    // Eight runners share the pooled instances of the one compiled component.
    let pooled_out = dir.join("pooled.json");
    let args = vec![
        "run".into(),
        "--agent".into(),
        py_agent.clone().into(),
        "--algo".into(),
        "baseline".into(),
        "--runners".into(),
        "8".into(),
        "--output".into(),
        pooled_out.clone().into(),
    ];
    let args = with_files(
        args,
        &repo().join("examples/math-agent"),
        &[
            ("--train", "data/train.jsonl"),
            ("--val", "data/val.jsonl"),
            ("--resources", "initial-resources.json"),
            ("--llm-script", "rules.json"),
        ],
    );
    let run = agl_host(args);
    assert!(run.status.success(), "{}", text(&run));
    let pooled = read_results(&pooled_out);
    assert_eq!(pooled["total"]["succeeded"], 20, "{pooled:#}");
    assert_eq!(pooled["total"]["failed"], 0, "no slot failures: {pooled:#}");

    // `agl-host build -o`: the same component, copied out of the cache without a rebuild.
    let wasm = dir.join("math-agent-py.wasm");
    let build = agl_host([
        OsStr::new("build"),
        py_agent.as_os_str(),
        OsStr::new("-o"),
        wasm.as_os_str(),
    ]);
    assert!(build.status.success(), "{}", text(&build));
    let bytes = std::fs::read(&wasm).expect("component written");
    assert!(
        bytes.starts_with(b"\0asm") && bytes.len() > 1_000_000,
        "{} bytes",
        bytes.len()
    );
    let stderr = String::from_utf8_lossy(&build.stderr);
    assert!(
        stderr.contains("math_agent_py-") && !stderr.contains("installing"),
        "{stderr}"
    );
}

#[test]
fn a_pure_python_dependency_from_pypi_is_bundled_into_the_component() {
    let dir = temp_dir("calc");
    let calc = repo().join("examples/calc-agent-py");
    let out = dir.join("calc.json");
    let db = format!("sqlite:{}", dir.join("run.db").display());
    let args = vec![
        "dev".into(),
        "--agent".into(),
        calc.clone().into(),
        "--output".into(),
        out.clone().into(),
        "--db".into(),
        db.clone().into(),
    ];
    let args = with_files(
        args,
        &calc,
        &[
            ("--train", "data/train.jsonl"),
            ("--resources", "initial-resources.json"),
            ("--llm-script", "rules.json"),
        ],
    );
    let run = agl_host(args);
    assert!(run.status.success(), "{}", text(&run));
    let results = read_results(&out);
    let train = &results["splits"]["train"];
    // Three tool calls compute the right answer; one computes the wrong sum, and pyparsing cannot
    // read the last one (`8 x 11`), which the agent answers with the parse error.
    assert_eq!(
        (train["succeeded"].as_u64(), train["failed"].as_u64()),
        (Some(5), Some(0)),
        "{results:#}"
    );
    assert_eq!(train["mean_reward"].as_f64(), Some(0.6), "{results:#}");
    assert_every_attempt_replays_identically(&db, 5);
}

/// `agl-host replay --db DB`: each of the run's `attempts` recorded attempts replays identically.
pub(crate) fn assert_every_attempt_replays_identically(db: &str, attempts: usize) {
    let replayed = agl_host(["replay", "--db", db]);
    let said = text(&replayed);
    assert_eq!(replayed.status.code(), Some(0), "{said}");
    let summary = format!("{attempts} attempt(s) replayed: {attempts} identical");
    assert!(said.contains(&summary), "{said}");
}

/// One task per hostile action of the Python probe, then tasks that must still work.
const HOSTILE: &[&str] = &[
    r#"{"do": "spin"}"#,
    r#"{"do": "memory_bomb"}"#,
    r#"{"do": "deep_recursion"}"#,
    r#"{"do": "huge_error", "bytes": 1000000}"#,
    r#"{"do": "panic"}"#,
    r#"{"do": "no_such_action"}"#,
    r#"{"do": "open_socket", "addr": "127.0.0.1:9"}"#,
    r#"{"do": "read_file", "path": "/etc/passwd"}"#,
    r#"{"do": "list_dir", "path": "/"}"#,
    r#"{"do": "read_env"}"#,
    r#"{"do": "stdout_flood", "bytes": 4194304}"#,
    r#"{"do": "noop"}"#,
    r#"{"do": "reward", "value": 0.5}"#,
    // Host calls through the SDK: a refused model (the typed LLM error's message), rewards
    // emitted without a returned one, an operation that fails inside a rollout that does not.
    r#"{"do": "llm_once", "model": "not-allowed-model"}"#,
    r#"{"do": "emit_rewards"}"#,
    r#"{"do": "operation"}"#,
    r#"{"do": "llm_once"}"#,
];

#[test]
fn hostile_python_actions_end_as_failed_or_denied_attempts_and_the_host_keeps_serving() {
    let dir = temp_dir("hostile");
    let results = dev_on_tasks(&repo().join("tests/guests/probe-py"), HOSTILE, &dir);
    let train = &results["splits"]["train"];
    // Failed: spin, memory_bomb, deep_recursion, huge_error, panic, no_such_action, the refused
    // model. Succeeded: the four denied "may it?" (0), stdout_flood (1), noop (1), reward (0.5),
    // emit_rewards (its last primary reward, 0.25), operation (1), llm_once (1).
    assert_eq!(
        (train["failed"].as_u64(), train["succeeded"].as_u64()),
        (Some(7), Some(10)),
        "{results:#}"
    );
    assert_eq!(
        train["mean_reward_succeeded"].as_f64(),
        Some(4.75 / 10.0),
        "{results:#}"
    );
    assert_failures_say(
        &results,
        &[
            "deadline of 3s exceeded",
            "memory limit of",
            // Python's own recursion limit: an exception, reported like any other.
            "agent error: RecursionError: maximum recursion depth exceeded",
            // A raised exception fails the attempt with its type and message.
            "agent error: RuntimeError: probe: panic on purpose",
            "agent error: task does not match probe-py's actions",
            "agent error: EEEE",
            "agent error: LLM call refused: model `not-allowed-model` is not allowed for this agent",
        ],
        100_000,
    );
}

#[test]
fn python_feedback_lands_in_order_on_the_final_reward_span() {
    let dir = temp_dir("feedback");
    assert_probe_feedback_lands_on_the_final_reward_span(&repo().join("tests/guests/probe-py"), &dir);
}

#[test]
fn a_python_module_without_the_sdk_builds_against_the_bindings_and_runs() {
    // `[tool.agl] sdk = false`: the module defines componentize-py's WitWorld itself.
    let dir = temp_dir("bindings");
    let results = dev_on_tasks(
        &repo().join("tests/guests/noop-py-bindings"),
        &[r#"{"any": "task"}"#, "[1, 2]"],
        &dir,
    );
    let train = &results["splits"]["train"];
    assert_eq!(train["succeeded"].as_u64(), Some(2), "{results:#}");
    assert_eq!(train["mean_reward_succeeded"].as_f64(), Some(1.0), "{results:#}");
}

#[test]
fn python_code_that_does_not_build_fails_with_the_python_error() {
    let dir = temp_dir("broken");
    // A syntax error: componentize-py imports the module while building; its traceback is shown.
    let syntax = dir.join("syntax");
    std::fs::create_dir_all(&syntax).expect("dir");
    std::fs::write(
        syntax.join("app.py"),
        "import agl\n\n@agl.rollout\ndef rollout(task, ctx)\n    return 1.0\n",
    )
    .expect("app.py");
    let build = agl_host([OsStr::new("build"), syntax.as_os_str()]);
    assert!(!build.status.success(), "{}", text(&build));
    let stderr = String::from_utf8_lossy(&build.stderr);
    assert!(
        stderr.contains("componentize-py") && stderr.contains("SyntaxError") && stderr.contains("app.py"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("Stack backtrace"),
        "no Rust backtrace for a Python author: {stderr}"
    );

    // A dependency with native code (markupsafe's wheel carries a C extension): refused by name.
    let native = dir.join("native");
    std::fs::create_dir_all(&native).expect("dir");
    std::fs::write(
        native.join("pyproject.toml"),
        "[project]\nname = \"native\"\ndependencies = [\"markupsafe==3.0.2\"]\n",
    )
    .expect("pyproject.toml");
    std::fs::write(native.join("app.py"), "import agl\nimport markupsafe\n").expect("app.py");
    let build = agl_host([OsStr::new("build"), native.as_os_str()]);
    assert!(!build.status.success(), "{}", text(&build));
    let stderr = String::from_utf8_lossy(&build.stderr);
    assert!(
        stderr.contains("native code found (markupsafe/_speedups") && stderr.contains("pure-Python packages only"),
        "{stderr}"
    );

    // No usable python3 in an empty cache: a clear error before anything is installed.
    let empty_cache = dir.join("cache");
    let build = Command::new(env!("CARGO_BIN_EXE_agl-host"))
        .env("AGL_CACHE_DIR", &empty_cache)
        .env("AGL_PYTHON", dir.join("no-python3"))
        .args([OsStr::new("build"), syntax.as_os_str()])
        .output()
        .expect("agl-host runs");
    assert!(!build.status.success(), "{}", text(&build));
    let stderr = String::from_utf8_lossy(&build.stderr);
    assert!(
        stderr.contains("is needed to build this guest") && stderr.contains("AGL_PYTHON"),
        "{stderr}"
    );
}

#[test]
fn python_http_reaches_a_granted_host_and_only_that_one() {
    let (granted_addr, server) =
        answer_once(b"HTTP/1.1 200 OK\r\ncontent-length: 15\r\nconnection: close\r\n\r\n{\"answer\": 42}\n");
    let (other_addr, other) = never_accepted();

    let dir = temp_dir("http");
    let train = dir.join("train.jsonl");
    let (granted_url, other_url) = (
        format!("http://{granted_addr}/lookup?q=capital"),
        format!("http://{other_addr}/lookup?q=capital"),
    );
    let tasks = [
        format!(r#"{{"do": "http_get", "url": "{granted_url}", "timeout": 10}}"#),
        format!(r#"{{"do": "http_get", "url": "{other_url}"}}"#),
    ];
    std::fs::write(&train, tasks.join("\n") + "\n").expect("tasks");
    let out = dir.join("results.json");
    let db = format!("sqlite:{}", dir.join("run.db").display());
    let run = agl_host([
        OsStr::new("dev"),
        OsStr::new("--agent"),
        repo().join("tests/guests/probe-py").as_os_str(),
        OsStr::new("--train"),
        train.as_os_str(),
        OsStr::new("--llm-script"),
        repo().join("examples/math-agent/rules.json").as_os_str(),
        OsStr::new("--agent-http"),
        OsStr::new(&format!("http://{granted_addr}")),
        OsStr::new("--agent-timeout"),
        OsStr::new("20s"),
        OsStr::new("--db"),
        OsStr::new(&db),
        OsStr::new("--output"),
        out.as_os_str(),
    ]);
    let results = granted_one_refused_one(&run, &out);
    let request = server.join().expect("server");
    assert!(request.starts_with("GET /lookup?q=capital HTTP/1.1"), "{request}");
    assert!(request.to_ascii_lowercase().contains("x-probe: probe-py"), "{request}");
    assert!(other.accept().is_err(), "the refused request never connected");

    // The run's record: each request is an `agl.http.request` span; the agent logged what it got.
    let spans_of = |url: &str| spans_of_url(&db, &results, url);
    let http = |spans: &[serde_json::Value]| -> serde_json::Value {
        let found: Vec<&serde_json::Value> = spans.iter().filter(|s| s["name"] == "agl.http.request").collect();
        assert_eq!(found.len(), 1, "one request: {spans:#?}");
        found[0].clone()
    };
    let spans = spans_of(&granted_url);
    let sent = http(&spans);
    let attributes = &sent["attributes"];
    assert_eq!(attributes["http.request.method"], "GET", "{sent:#}");
    assert_eq!(attributes["server.address"], "127.0.0.1", "{sent:#}");
    assert_eq!(attributes["server.port"], granted_addr.port(), "{sent:#}");
    assert_eq!(attributes["url.path"], "/lookup", "{sent:#}");
    assert_eq!(attributes["http.response.status_code"], 200, "{sent:#}");
    assert_eq!(attributes["http.response.body.size"], 15, "{sent:#}");
    let said = serde_json::to_string(&spans).expect("JSON");
    assert!(
        said.contains(r#"http_get: allowed: status 200, 15 bytes: {\"answer\": 42}"#),
        "{said}"
    );

    let spans = spans_of(&other_url);
    let refused = http(&spans);
    assert_eq!(
        refused["attributes"]["error.type"], "HTTP-request-denied",
        "{refused:#}"
    );
    let said = serde_json::to_string(&spans).expect("JSON");
    let origin = format!("http://{other_addr}");
    for words in [
        format!("http_get: denied: HttpDenied: GET {other_url} failed: denied by the sandbox: {origin} is not granted"),
        format!("--agent-http {origin}"),
    ] {
        assert!(said.contains(&words), "the agent logged {words:?}: {said}");
    }
}

/// Host names as a hostile Python guest may write them, against a loopback server granted as
/// `http://localhost:PORT`: `LOCALHOST.` is that very name (resolved as `localhost`, sent as it
/// in `Host`); user info is refused by the SDK and, sent past it (`raw`), by the host before
/// anything is resolved, its span saying why.
#[test]
fn python_http_refuses_user_info_and_normalises_a_trailing_dot() {
    let (addr, seen) = answer_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
    let port = addr.port();
    let dir = temp_dir("http-host-names");
    let dotted = format!("http://LOCALHOST.:{port}/dotted");
    let via_sdk = format!("http://user:secret@localhost:{port}/sdk");
    let raw = format!("http://user:secret@localhost:{port}/raw");
    let tasks = [
        format!(r#"{{"do": "http_get", "url": "{dotted}", "timeout": 10}}"#),
        format!(r#"{{"do": "http_get", "url": "{via_sdk}"}}"#),
        format!(r#"{{"do": "http_get", "url": "{raw}", "raw": true}}"#),
    ];
    let train = dir.join("train.jsonl");
    std::fs::write(&train, tasks.join("\n") + "\n").expect("tasks");
    let out = dir.join("results.json");
    let db = format!("sqlite:{}", dir.join("run.db").display());
    let run = agl_host([
        OsStr::new("dev"),
        OsStr::new("--agent"),
        repo().join("tests/guests/probe-py").as_os_str(),
        OsStr::new("--train"),
        train.as_os_str(),
        OsStr::new("--llm-script"),
        repo().join("examples/math-agent/rules.json").as_os_str(),
        OsStr::new("--agent-http"),
        OsStr::new(&format!("http://localhost:{port}")),
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
    assert_eq!(train["succeeded"].as_u64(), Some(3), "{results:#}");
    assert_the_dotted_name_went_as_localhost(&seen, &db, &results, &dotted, port);

    let spans = spans_of_url(&db, &results, &via_sdk);
    let said = serde_json::to_string(&spans).expect("JSON");
    assert!(
        said.contains("http_get: denied: HttpError: GET") && said.contains("credentials in the URL are not supported"),
        "the SDK refuses it: {said}"
    );
    assert!(http_request_spans(&spans).is_empty(), "{spans:#?}");

    assert_the_user_info_was_refused_by_the_host(&db, &results, &raw, "http_get: denied: HttpDenied");
}
