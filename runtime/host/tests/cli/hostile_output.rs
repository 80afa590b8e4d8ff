//! What an agent writes reaches the terminal harmless: a failure reason carrying escape
//! sequences (window title, clear screen), a carriage return and a line break followed by a fake
//! summary line, from the probe agents in Rust, Python and JavaScript, is printed by `dev`'s
//! summary, by `run --store`'s and by `runner`'s line per rollout with no raw control character
//! and no extra line; the results file keeps the reason as the agent gave it (the host folds its
//! line breaks).

use serde_json::Value;
use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::agents;
use crate::support;
use agents::*;

/// The scripted LLM the probe needs configured (it imports the LLM; these tasks make no call).
fn rules() -> std::path::PathBuf {
    repo().join("examples/math-agent/rules.json")
}

/// The line the agent tries to add to the summary.
const FAKE: &str = "completed in 0.01 s — 1 rollouts, 1 rollouts/s, 1 runner(s) [fake]";

/// The failure reason: set the window title, clear the screen, return to the line's start, then
/// a line of its own.
fn hostile_reason() -> String {
    format!("boom \u{1b}]0;pwned\u{7}\u{1b}[2J\rhidden\u{9b}31m\n{FAKE}")
}

/// Tasks: the hostile failure, and one that succeeds (so the run completes with exit 0).
fn tasks() -> String {
    let hostile = serde_json::json!({"do": "error_text", "text": hostile_reason()});
    format!("{hostile}\n{{\"do\": \"noop\"}}\n")
}

/// No raw control character but line breaks, and no line of the agent's own.
fn assert_harmless(what: &str, printed: &[u8]) {
    let printed = String::from_utf8_lossy(printed);
    for c in printed.chars() {
        assert!(
            c == '\n' || !c.is_control(),
            "{what}: a raw {:?} reached the terminal:\n{printed}",
            c
        );
    }
    assert!(
        !printed.lines().any(|line| line.trim_start().starts_with(FAKE)),
        "{what}: the agent's line stands on its own:\n{printed}"
    );
}

fn assert_run_harmless(run: &Output, results: &Value) {
    assert!(run.status.success(), "{}", text(run));
    assert_harmless("stdout", &run.stdout);
    assert_harmless("stderr", &run.stderr);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        // Blanks (the CR; the line break, which the host already turns into ` | `) as one space,
        // every other control character escaped.
        stdout.contains("boom \\u001b]0;pwned\\u0007\\u001b[2J hidden\\u009b31m | completed in"),
        "the reason is shown, escaped, on its line:\n{stdout}"
    );
    let kept = "boom \u{1b}]0;pwned\u{7}\u{1b}[2J\rhidden\u{9b}31m";
    assert_eq!(
        reasons(results).iter().filter(|r| r.contains(kept)).count(),
        1,
        "the results file keeps the reason as the agent gave it: {results}"
    );
}

fn dev_hostile(agent: &Path, name: &str) {
    let dir = scratch("agl-hostile", name);
    let train = dir.join("train.jsonl");
    std::fs::write(&train, tasks()).expect("tasks");
    let out = dir.join("results.json");
    let args: Vec<OsString> = vec![
        "dev".into(),
        "--agent".into(),
        agent.into(),
        "--train".into(),
        train.into(),
        "--llm-script".into(),
        rules().into(),
        "--output".into(),
        out.clone().into(),
    ];
    let run = agl_host(args);
    assert_run_harmless(&run, &read_results(&out));
}

#[test]
fn a_rust_agents_hostile_failure_reason_is_printed_escaped_on_one_line() {
    dev_hostile(&repo().join("tests/guests/probe"), "rust");
}

#[test]
fn a_python_agents_hostile_failure_reason_is_printed_escaped_on_one_line() {
    dev_hostile(&repo().join("tests/guests/probe-py"), "python");
}

#[test]
fn a_js_agents_hostile_failure_reason_is_printed_escaped_on_one_line() {
    dev_hostile(&repo().join("tests/guests/probe-js"), "js");
}

/// A child process killed when dropped, so that a failing test leaves nothing running.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn run_store_and_runner_lines_print_a_hostile_failure_reason_escaped_on_one_line() {
    let dir = scratch("agl-hostile", "remote");
    let store = support::ServerProcess::agl_host_store(&[]);
    let runner_log = dir.join("runner.log");
    let mut runner = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_agl-host"))
            .env("AGL_CACHE_DIR", cache_dir())
            .args(["runner", "--store", &store.url, "--agent"])
            .arg(repo().join("tests/guests/probe"))
            .arg("--llm-script")
            .arg(rules())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&runner_log).expect("runner log"))
            .spawn()
            .expect("the runner starts"),
    );
    // Until the runner waits for rollouts (it builds the probe first).
    let deadline = Instant::now() + Duration::from_secs(600);
    while !std::fs::read_to_string(&runner_log).is_ok_and(|log| log.contains("waiting for rollouts")) {
        if let Ok(Some(status)) = runner.0.try_wait() {
            panic!(
                "the runner exited ({status}):\n{}",
                std::fs::read_to_string(&runner_log).unwrap_or_default()
            );
        }
        assert!(Instant::now() < deadline, "the runner never started");
        std::thread::sleep(Duration::from_millis(100));
    }
    let train = dir.join("train.jsonl");
    std::fs::write(&train, tasks()).expect("tasks");
    let out = dir.join("results.json");
    let args: Vec<OsString> = vec![
        "run".into(),
        "--store".into(),
        store.url.clone().into(),
        "--algo".into(),
        "baseline".into(),
        "--train".into(),
        train.into(),
        "--output".into(),
        out.clone().into(),
    ];
    let run = agl_host(args);
    assert_run_harmless(&run, &read_results(&out));

    runner.0.kill().expect("stop the runner");
    runner.0.wait().expect("reap the runner");
    let log = std::fs::read(&runner_log).expect("the runner's lines");
    assert_harmless("runner", &log);
    let log = String::from_utf8_lossy(&log);
    let failed: Vec<&str> = log.lines().filter(|l| l.contains(" failed: ")).collect();
    assert_eq!(failed.len(), 1, "one line for the failed rollout:\n{log}");
    assert!(
        failed[0].contains("boom \\u001b]0;pwned") && failed[0].contains(FAKE),
        "the whole reason, escaped, on the rollout's line:\n{log}"
    );
}
