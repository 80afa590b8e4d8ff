//! End-to-end for JavaScript agents: the real `agl-host` binary building JS guest folders with
//! componentize-js (installed into the shared test cache on first use) and running them — the
//! math agent in JS under APO against the Rust one, the JS probe's hostile actions and its
//! feedback (`ctx.feedback`) on the final reward span, a pooled run with 8 runners, `agl-host
//! build -o`, and the errors a JS author meets (a syntax error, a throwing rollout). Each
//! component is built and compiled once (the math agent's tests run in one function, in order),
//! then loaded from the cache. Needs Node 18+ and npm (and the npm registry for the first
//! toolchain install).

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::process::Command;

use crate::agents;
use agents::*;

/// A fresh scratch folder under the build's `target/tmp`.
fn temp_dir(name: &str) -> PathBuf {
    scratch("agl-js", name)
}

#[test]
fn the_js_math_agent_matches_the_rust_one_under_apo_pools_and_builds() {
    let dir = temp_dir("math");
    let js_agent = repo().join("examples/math-agent-js");

    // APO, as the README runs it: the JS agent finds the same prompt as the Rust one.
    let js_out = dir.join("js.json");
    let run = agl_host(apo_args(&js_agent, &js_out));
    assert!(run.status.success(), "{}", text(&run));
    let js = read_results(&js_out);
    let summary = &js["algorithm_summary"];
    assert_eq!(summary["seed_prompt"]["score"].as_f64(), Some(0.5), "{summary:#}");
    assert_eq!(summary["best"]["score"].as_f64(), Some(1.0), "{summary:#}");
    let template = summary["best"]["template"].as_str().expect("template");
    assert!(
        template.contains("final answer as a number on the last line"),
        "{template}"
    );
    assert_eq!(js["total"]["failed"], 0, "{js:#}");

    let rust_agent = agl_guest_build::build_guest("examples/math-agent").expect("the Rust math agent builds");
    let rust_out = dir.join("rust.json");
    let run = agl_host(apo_args(&rust_agent, &rust_out));
    assert!(run.status.success(), "{}", text(&run));
    let rust = read_results(&rust_out);
    for key in ["seed_prompt", "best", "history", "candidates", "skipped"] {
        assert_eq!(
            js["algorithm_summary"][key], rust["algorithm_summary"][key],
            "{key} differs between the JS and the Rust agent"
        );
    }
    assert_eq!(js["splits"], rust["splits"]);

    // Eight runners share the pooled instances of the one compiled component.
    let math = repo().join("examples/math-agent");
    let pooled_out = dir.join("pooled.json");
    let mut args: Vec<OsString> = vec!["run".into(), "--agent".into(), js_agent.clone().into()];
    args.extend(["--algo".into(), "baseline".into(), "--runners".into(), "8".into()]);
    for (flag, file) in [
        ("--train", "data/train.jsonl"),
        ("--val", "data/val.jsonl"),
        ("--resources", "initial-resources.json"),
        ("--llm-script", "rules.json"),
    ] {
        args.push(flag.into());
        args.push(math.join(file).into());
    }
    args.extend(["--output".into(), pooled_out.clone().into()]);
    let run = agl_host(args);
    assert!(run.status.success(), "{}", text(&run));
    let pooled = read_results(&pooled_out);
    assert_eq!(pooled["total"]["succeeded"], 20, "{pooled:#}");
    assert_eq!(pooled["total"]["failed"], 0, "no slot failures: {pooled:#}");

    // `agl-host build -o`: the same component, copied out; the second build is the cache's.
    let wasm = dir.join("math-agent-js.wasm");
    let build = agl_host([
        OsStr::new("build"),
        js_agent.as_os_str(),
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
        stderr.contains("math_agent_js-") && !stderr.contains("installing"),
        "{stderr}"
    );
}

/// One task per hostile action of the JS probe, then two that must still work.
const HOSTILE: &[&str] = &[
    r#"{"do": "spin"}"#,
    r#"{"do": "memory_bomb"}"#,
    r#"{"do": "deep_recursion"}"#,
    r#"{"do": "huge_error", "bytes": 1000000}"#,
    r#"{"do": "panic"}"#,
    r#"{"do": "throw_value"}"#,
    r#"{"do": "open_socket", "addr": "127.0.0.1:9"}"#,
    r#"{"do": "read_file", "path": "/etc/passwd"}"#,
    r#"{"do": "list_dir", "path": "/"}"#,
    r#"{"do": "read_env"}"#,
    r#"{"do": "stdout_flood", "bytes": 4194304}"#,
    r#"{"do": "noop"}"#,
    r#"{"do": "reward", "value": 0.5}"#,
];

#[test]
fn hostile_js_actions_end_as_failed_or_denied_attempts_and_the_host_keeps_serving() {
    let dir = temp_dir("hostile");
    let results = dev_on_tasks(&repo().join("tests/guests/probe-js"), HOSTILE, &dir);
    let train = &results["splits"]["train"];
    // Failed: spin, memory_bomb, deep_recursion, huge_error, panic, throw_value.
    // Succeeded: the five denied "may it?" (0: open_socket's fetch is refused, no host granted),
    // stdout_flood (1), noop (1), reward (0.5).
    assert_eq!(
        (train["failed"].as_u64(), train["succeeded"].as_u64()),
        (Some(6), Some(7)),
        "{results:#}"
    );
    assert_eq!(train["mean_reward_succeeded"].as_f64(), Some(2.5 / 7.0), "{results:#}");
    assert_failures_say(
        &results,
        &[
            "deadline of 3s exceeded",
            "memory limit of",
            // The engine's stack guard is a JS exception: the SDK reports it like any other.
            "agent error: too much recursion",
            // A thrown Error fails the attempt with its message, a thrown value with its JSON.
            "agent error: probe: panic on purpose",
            "agent error: {\"code\":42}",
            "agent error: EEEE",
        ],
        1_000_000,
    );
}

#[test]
fn js_feedback_lands_in_order_on_the_final_reward_span() {
    let dir = temp_dir("feedback");
    assert_probe_feedback_lands_on_the_final_reward_span(&repo().join("tests/guests/probe-js"), &dir);
}

#[test]
fn js_that_does_not_bundle_is_a_build_error_naming_file_and_line() {
    let dir = temp_dir("syntax");
    std::fs::write(dir.join("package.json"), r#"{"name": "broken", "main": "agent.js"}"#).expect("package.json");
    std::fs::write(
        dir.join("agent.js"),
        "import * as agl from 'agl';\nexport const rollout = agl.rollout(async (task, ctx) => {\n  return 1 +;\n});\n",
    )
    .expect("agent.js");
    let build = agl_host([OsStr::new("build"), dir.as_os_str()]);
    assert!(!build.status.success(), "{}", text(&build));
    let stderr = String::from_utf8_lossy(&build.stderr);
    assert!(stderr.contains("bundling agent.js (esbuild) failed"), "{stderr}");
    assert!(stderr.contains("agent.js:3:"), "the file and line: {stderr}");
    assert!(!stderr.contains("build.mjs"), "no stack of the build script: {stderr}");
}

#[test]
fn the_sdk_and_example_unit_tests_pass_under_node() {
    let root = repo();
    let output = Command::new("node")
        .current_dir(&root)
        .args(["--import", "./sdk/js/testing/register.js", "--test"])
        .args(["sdk/js/test/", "examples/math-agent-js/test/"])
        .output()
        .expect("node runs (Node 18.19+ is needed for JS agents)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", text(&output));
    assert!(stdout.contains("# fail 0") && !stdout.contains("# pass 0"), "{stdout}");
}

/// `fetch` in a JS agent goes out over wasi:http to a host the sandbox grants: the probe's
/// `open_socket` fetches a loopback server granted by `--agent-http` (reward 1), and the same
/// fetch to a port not granted is refused inside the guest (reward 0) without reaching it.
#[test]
fn js_fetch_reaches_a_granted_host_and_only_that_one() {
    let (granted_addr, server) = answer_once(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
    let (other_addr, other) = never_accepted();

    let dir = temp_dir("fetch");
    let train = dir.join("train.jsonl");
    let tasks = [
        format!(r#"{{"do": "open_socket", "addr": "{granted_addr}"}}"#),
        format!(r#"{{"do": "open_socket", "addr": "{other_addr}"}}"#),
    ];
    std::fs::write(&train, tasks.join("\n") + "\n").expect("tasks");
    let out = dir.join("results.json");
    let run = agl_host([
        OsString::from("dev"),
        "--agent".into(),
        repo().join("tests/guests/probe-js").into(),
        "--train".into(),
        train.into(),
        "--llm-script".into(),
        repo().join("examples/math-agent/rules.json").into(),
        "--agent-http".into(),
        format!("http://{granted_addr}").into(),
        "--agent-timeout".into(),
        "20s".into(),
        "--output".into(),
        out.clone().into(),
    ]);
    granted_one_refused_one(&run, &out);
    let request = server.join().expect("server");
    assert!(request.starts_with("GET / HTTP/1.1"), "{request}");
    assert!(other.accept().is_err(), "the refused fetch never connected");
}

/// Host names as a hostile JS guest may write them to `fetch`, against a loopback server granted
/// as `http://localhost:PORT`: `LOCALHOST.` is that very name (resolved as `localhost`, sent as it
/// in `Host`, its span naming `localhost`); a URL with user info is refused and never sent.
#[test]
fn js_fetch_refuses_user_info_and_normalises_a_trailing_dot() {
    let (addr, seen) = answer_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
    let port = addr.port();
    let dir = temp_dir("fetch-host-names");
    let dotted = format!("http://LOCALHOST.:{port}/dotted");
    let userinfo = format!("http://user:secret@localhost:{port}/userinfo");
    let tasks = [
        format!(r#"{{"do": "http_get", "url": "{dotted}"}}"#),
        format!(r#"{{"do": "http_get", "url": "{userinfo}"}}"#),
    ];
    let train = dir.join("train.jsonl");
    std::fs::write(&train, tasks.join("\n") + "\n").expect("tasks");
    let out = dir.join("results.json");
    let db = format!("sqlite:{}", dir.join("run.db").display());
    let run = agl_host([
        OsString::from("dev"),
        "--agent".into(),
        repo().join("tests/guests/probe-js").into(),
        "--train".into(),
        train.into(),
        "--llm-script".into(),
        repo().join("examples/math-agent/rules.json").into(),
        "--agent-http".into(),
        format!("http://localhost:{port}").into(),
        "--agent-timeout".into(),
        "20s".into(),
        "--db".into(),
        db.clone().into(),
        "--output".into(),
        out.clone().into(),
    ]);
    let results = granted_one_refused_one(&run, &out);
    assert_the_dotted_name_went_as_localhost(&seen, &db, &results, &dotted, port);
    // StarlingMonkey's fetch hands the user info to wasi:http: the host refuses it.
    assert_the_user_info_was_refused_by_the_host(&db, &results, &userinfo, "http_get: denied:");
}
