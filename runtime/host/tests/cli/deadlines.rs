//! `--agent-timeout` holds whatever the agent waits on: an attempt whose guest is blocked in a
//! host call — a sleep (Rust's `std::thread::sleep`, Python's `time.sleep`), an HTTP response
//! whose head never comes (Rust's `wasi:http`, JavaScript's `fetch`) — ends within its deadline
//! plus one second, failed with a reason that says so, the call cancelled. Measured on the
//! attempt's own start and end times in the store, not on the process (which also compiles).

use crate::agents;

use agents::{agl_host, baseline_run_args, repo, scratch, text};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::time::Duration;

/// The deadline every attempt here runs under.
const DEADLINE_SECS: f64 = 2.0;

/// A loopback server that reads each request, then waits `delay` before it answers (longer than
/// any deadline here).
fn slow_head(delay: Duration) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut request = [0u8; 4096];
                let _ = stream.read(&mut request);
                std::thread::sleep(delay);
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
            });
        }
    });
    addr
}

/// Runs `agent` on `task` (one rollout) under a 2 s deadline with `extra` flags, kept in a
/// SQLite file; returns the rollout's record (`show --json RUN ROLLOUT`).
fn run_one(name: &str, agent: &Path, task: &Value, extra: &[&str]) -> Value {
    let dir = scratch("deadline", name);
    let train = dir.join("train.jsonl");
    std::fs::write(&train, format!("{task}\n")).expect("task");
    let db = format!("sqlite:{}", dir.join("run.db").display());
    let out = dir.join("results.json");
    let deadline = format!("{DEADLINE_SECS}s");
    let mut flags = vec!["--db", db.as_str(), "--agent-timeout", deadline.as_str()];
    flags.extend_from_slice(extra);
    let args = baseline_run_args(agent, &train, &out, &flags);
    let run = agl_host(&args);
    // Every rollout failed: exit code 3.
    assert_eq!(run.status.code(), Some(3), "{}", text(&run));
    let results = agents::read_results(&out);
    let run_id = results["run_id"].as_str().expect("a run id").to_owned();
    let show = |more: &[&str]| -> Value {
        let mut all = vec!["show", "--db", &db, "--json", &run_id];
        all.extend_from_slice(more);
        let shown = agl_host(&all);
        assert!(shown.status.success(), "{}", text(&shown));
        serde_json::from_slice(&shown.stdout).expect("JSON")
    };
    let rollouts = show(&[]);
    let rollout_id = rollouts["rollouts"][0]["rollout"]["rollout_id"]
        .as_str()
        .expect("a rollout")
        .to_owned();
    show(&[&rollout_id])
}

/// The attempt ended within its deadline plus one second, failed for its deadline.
fn assert_cut_at_the_deadline(record: &Value) {
    let attempt = &record["attempts"][0];
    assert_eq!(attempt["status"], "failed", "{record:#}");
    let reason = attempt["metadata"]["failure"].as_str().unwrap_or_default().to_owned();
    let reason = if reason.is_empty() { record.to_string() } else { reason };
    assert!(
        reason.contains(&format!("deadline of {DEADLINE_SECS:.0}s exceeded")),
        "{reason}"
    );
    let lasted = attempt["end_time"].as_f64().expect("an end") - attempt["start_time"].as_f64().expect("a start");
    assert!(
        lasted < DEADLINE_SECS + 1.0,
        "the attempt lasted {lasted:.2}s under a {DEADLINE_SECS}s deadline: {record:#}"
    );
}

#[test]
fn a_rust_agent_asleep_in_a_host_call_ends_at_its_deadline() {
    let probe = agl_guest_build::build_guest("tests/guests/probe").expect("the probe builds");
    let record = run_one("rust-sleep", &probe, &json!({"do": "sleep", "secs": 3600}), &[]);
    assert_cut_at_the_deadline(&record);
}

#[test]
fn a_rust_agent_waiting_for_a_response_head_ends_at_its_deadline() {
    let server = slow_head(Duration::from_secs(30));
    let probe = agl_guest_build::build_guest("tests/guests/http-probe").expect("the HTTP probe builds");
    let task = json!({"requests": [{"url": format!("http://{server}/slow")}]});
    let grant = format!("http://{server}");
    let record = run_one("rust-http", &probe, &task, &["--agent-http", &grant]);
    assert_cut_at_the_deadline(&record);
}

#[test]
fn a_python_agent_in_time_sleep_ends_at_its_deadline() {
    let agent = repo().join("tests/guests/probe-py");
    let record = run_one("python-sleep", &agent, &json!({"do": "sleep", "secs": 3600}), &[]);
    assert_cut_at_the_deadline(&record);
}

#[test]
fn a_javascript_agent_awaiting_fetch_ends_at_its_deadline() {
    let server = slow_head(Duration::from_secs(30));
    let agent = repo().join("tests/guests/probe-js");
    let task = json!({"do": "http_get", "url": format!("http://{server}/slow")});
    let grant = format!("http://{server}");
    let record = run_one("js-fetch", &agent, &task, &["--agent-http", &grant]);
    assert_cut_at_the_deadline(&record);
}
