//! What the sandbox refused an agent reaches the user even when the agent caught the refusal and
//! its rollouts succeeded: the results file's `sandbox_refusals` and the summary name what was
//! refused, in how many rollouts, and the flag that grants it.

use crate::agents;

use agents::{agl_host, baseline_run_args, never_accepted, read_results, scratch, text};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Output;

/// `agl-host run` of `agent` under the baseline algorithm on `tasks` (one rollout each), with the
/// math agent's scripted LLM and `extra` flags; returns the process's output and the results.
fn run(name: &str, agent: &Path, tasks: &[Value], extra: &[&str]) -> (Output, Value) {
    let dir = scratch("refusals", name);
    let train = dir.join("train.jsonl");
    let lines: Vec<String> = tasks.iter().map(Value::to_string).collect();
    std::fs::write(&train, lines.join("\n") + "\n").expect("tasks");
    let out = dir.join("results.json");
    let args = baseline_run_args(agent, &train, &out, extra);
    let output = agl_host(&args);
    let results = read_results(&out);
    (output, results)
}

/// The results' refusals as (refused, grant, count, rollouts).
fn refusals(results: &Value) -> Vec<(String, String, u64, u64)> {
    results["sandbox_refusals"]
        .as_array()
        .unwrap_or_else(|| panic!("sandbox_refusals: {results:#}"))
        .iter()
        .map(|r| {
            (
                r["refused"].as_str().expect("refused").to_owned(),
                r["grant"].as_str().expect("grant").to_owned(),
                r["count"].as_u64().expect("count"),
                r["rollouts"].as_u64().expect("rollouts"),
            )
        })
        .collect()
}

#[test]
fn a_caught_http_refusal_is_named_with_its_grant_though_every_rollout_succeeded() {
    let (addr, listener) = never_accepted();
    let probe = agl_guest_build::build_guest("tests/guests/http-probe").expect("the HTTP probe builds");
    let url = format!("http://{addr}/data?key=secret");
    let tasks = vec![json!({"requests": [{"url": url}]}); 3];
    let (output, results) = run("http", &probe, &tasks, &[]);
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(results["total"]["succeeded"].as_u64(), Some(3), "{results:#}");
    assert_eq!(results["total"]["failed"].as_u64(), Some(0), "{results:#}");
    assert!(listener.accept().is_err(), "nothing may connect to a host not granted");
    let origin = format!("http://{addr}");
    assert_eq!(
        refusals(&results),
        [(format!("HTTP to {origin}"), format!("--agent-http {origin}"), 3, 3)],
        "{results:#}"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = format!("sandbox refused: HTTP to {origin} in 3 rollouts (3×) — grant: --agent-http {origin}");
    assert!(stdout.contains(&line), "{line}\n{}", text(&output));
    assert!(!stdout.contains("secret"), "no query in the summary: {stdout}");
}

#[test]
fn a_model_not_allowed_is_named_with_the_flag_that_allows_it() {
    let probe = agl_guest_build::build_guest("tests/guests/probe").expect("the probe builds");
    let task = json!({"do": "llm_once", "prompt": "hi", "model": "gpt-4o"});
    let (output, results) = run("model", &probe, &[task], &[]);
    // The probe's `llm_once` fails its attempt on the error: every rollout failed (exit code 3).
    assert_eq!(output.status.code(), Some(3), "{}", text(&output));
    assert_eq!(
        refusals(&results),
        [("LLM model gpt-4o".to_owned(), "--agent-model gpt-4o".to_owned(), 1, 1)],
        "{results:#}"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = "sandbox refused: LLM model gpt-4o in 1 rollout (1×) — grant: --agent-model gpt-4o";
    assert!(stdout.contains(line), "{line}\n{}", text(&output));
}
