//! An LLM endpoint that misbehaves, end to end through `agl-host run --llm-endpoint`: HTTP 500s
//! are retried by the LLM client (4 retries) and, past them, fail the attempt naming the status
//! and the server's message; a call slower than `--llm-timeout` fails its attempt as a timeout,
//! and the rollout runs again as its config says; a 200 whose body is not a completion fails the
//! attempt at once (not retried), quoting the body. The reasons are read from the results file
//! (`failure_reasons`). The agent is the probe's `llm_once` (one chat; its error fails the
//! attempt), run by one runner, so the rollouts call the LLM one after the other.

use agl_llm::ScriptedBackend;
use agl_testkit::llm_server::{Fault, Faults, ServerHandle};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

fn component(crate_dir: &str) -> PathBuf {
    agl_guest_build::build_guest(crate_dir).unwrap_or_else(|e| panic!("building {crate_dir}: {e}"))
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("agl-cli-llm-faults-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// An LLM answering "ok", misbehaving as `faults` says, served on a runtime of its own.
struct Llm {
    runtime: tokio::runtime::Runtime,
    server: Option<ServerHandle>,
}

impl Llm {
    fn serve(faults: Faults) -> Self {
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
                faults,
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

    /// Chat requests it was sent (faulty answers included).
    fn requests(&self) -> u64 {
        self.server.as_ref().map_or(0, |s| s.chat_requests())
    }
}

impl Drop for Llm {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            self.runtime.block_on(server.shutdown());
        }
    }
}

/// `agl-host run` of the probe with the baseline on `tasks` `llm_once` tasks, against `llm`, with
/// `extra` flags; its output and results.
fn run(name: &str, llm: &Llm, tasks: usize, extra: &[&str]) -> (Output, Value) {
    let dir = temp_dir(name);
    let (train, out) = (dir.join("train.jsonl"), dir.join("results.json"));
    let lines: String = (0..tasks)
        .map(|i| format!("{}\n", json!({"do": "llm_once", "prompt": format!("task {i}")})))
        .collect();
    std::fs::write(&train, lines).expect("dataset");
    let output = Command::new(env!("CARGO_BIN_EXE_agl-host"))
        // Runs are kept in memory here; tests/kept_runs.rs covers keeping them.
        .env("AGL_DB", "memory")
        .env(
            "AGL_CACHE_DIR",
            agl_guest_build::repo_root().join("target").join("agl-cache-tests"),
        )
        .args(["run", "--algo", "baseline", "--no-progress"])
        .arg("--agent")
        .arg(component("tests/guests/probe"))
        .args(["--llm-endpoint", &llm.url(), "--llm-model", "m"])
        .arg("--train")
        .arg(&train)
        .arg("--output")
        .arg(&out)
        .args(extra)
        .output()
        .expect("agl-host runs");
    let results = std::fs::read_to_string(&out)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_else(|| panic!("no results file: {}", text(&output)));
    (output, results)
}

fn text(output: &Output) -> String {
    format!(
        "{}\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The train split's (succeeded, failed) counts.
fn outcomes(results: &Value) -> (u64, u64) {
    let train = &results["splits"]["train"];
    (
        train["succeeded"].as_u64().unwrap_or(u64::MAX),
        train["failed"].as_u64().unwrap_or(u64::MAX),
    )
}

/// The one failure reason of the run, and how many rollouts failed for it.
fn the_failure_reason(results: &Value) -> (String, u64) {
    let reasons = results["failure_reasons"].as_array().expect("failure_reasons");
    let [reason] = reasons.as_slice() else {
        panic!("one reason: {results:#}");
    };
    println!("failure reason: {reason}");
    (
        reason["reason"].as_str().expect("a reason").to_owned(),
        reason["count"].as_u64().expect("a count"),
    )
}

#[test]
fn http_500s_past_the_llm_clients_retries_fail_the_attempt_naming_the_status_and_message() {
    // The first call gets five 500s: the first answer and its 4 retries. The second call gets
    // two, and its third try the answer.
    let llm = Llm::serve(
        Faults::default()
            .then_times(5, Fault::status(500).with_message("database on fire"))
            .then_times(2, Fault::status(500).with_message("database on fire")),
    );
    let (output, results) = run("500", &llm, 2, &[]);
    assert!(output.status.success(), "one rollout succeeded: {}", text(&output));
    assert_eq!(outcomes(&results), (1, 1), "{results:#}");
    let (reason, count) = the_failure_reason(&results);
    assert_eq!(count, 1);
    assert!(
        reason.contains("500") && reason.contains("database on fire"),
        "the status and the server's message: {reason}"
    );
    assert_eq!(llm.requests(), 5 + 3, "4 retries for the first call, 2 for the second");
}

#[test]
fn a_call_slower_than_the_llm_timeout_fails_the_attempt_as_a_timeout_and_the_rollout_retries_per_config() {
    let llm = Llm::serve(Faults::default().with_delay(Duration::from_secs(5)));
    let config_dir = temp_dir("timeout-config");
    let config = config_dir.join("config.json");
    let settings = json!({"rollout_config": {"max_attempts": 2, "retry_condition": ["failed"]}});
    std::fs::write(&config, settings.to_string()).expect("algorithm config");
    let config = config.to_str().expect("utf-8 path");
    let (output, results) = run("timeout", &llm, 1, &["--llm-timeout", "300ms", "--algo-config", config]);
    assert_eq!(output.status.code(), Some(3), "every rollout failed: {}", text(&output));
    assert_eq!(outcomes(&results), (0, 1), "{results:#}");
    assert_eq!(results["splits"]["train"]["retried"], 1, "{results:#}");
    assert_eq!(results["failures"][0]["attempts"], 2, "{results:#}");
    let (reason, _) = the_failure_reason(&results);
    assert!(reason.contains("LLM call timed out"), "{reason}");
    assert_eq!(
        llm.requests(),
        2,
        "one call per attempt, none retried by the LLM client"
    );
}

#[test]
fn a_200_whose_body_is_not_a_completion_fails_the_attempt_at_once_quoting_the_body() {
    let llm = Llm::serve(Faults::default().then(Fault::status(200).with_body("<html>upstream garbage</html>")));
    let (output, results) = run("garbage", &llm, 2, &[]);
    assert!(output.status.success(), "one rollout succeeded: {}", text(&output));
    assert_eq!(outcomes(&results), (1, 1), "{results:#}");
    let (reason, count) = the_failure_reason(&results);
    assert_eq!(count, 1);
    assert!(
        reason.contains("unparsable response") && reason.contains("upstream garbage"),
        "says the answer could not be read, and what it was: {reason}"
    );
    assert_eq!(llm.requests(), 2, "the garbage was not retried");
}
