//! What a kept run's record holds, and what reading it does: the secrets of its command line
//! (a URL's password, a token, an environment value) are hidden wherever the record is read
//! (`show --json`, `runs --json`, the dashboard's `/v1/agl-host/run`); a rollout that failed
//! after emitting a reward counts 0 in the mean reward of the results, of `show` and of the
//! dashboard's outcomes alike; and the reading commands open stores read-only: a 0-byte file is
//! one clear error and stays 0 bytes, a kept run's file is left as it was.

use crate::agents;
use crate::support;

use agents::{cache_dir, read_results, repo, scratch, text};
use serde_json::Value;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use support::ServerProcess;

/// What the command line gives and the record must not keep.
const SECRETS: [&str; 3] = ["LLMKEY-s3cret", "TOKEN-s3cret", "ENV-s3cret"];

/// The probe's tasks: two fail after emitting a reward, one succeeds with 0.5, one with 1.0.
const TASKS: [&str; 4] = [
    r#"{"do": "error_text", "text": "failed after its reward", "reward": 1.0}"#,
    r#"{"do": "reward", "value": 0.5}"#,
    r#"{"do": "error_text", "text": "failed after its reward", "reward": 0.75}"#,
    r#"{"do": "reward", "value": 1.0}"#,
];

/// `agl-host ARGS` in `dir`, with the shared test cache and no store from the environment.
fn agl_host_in(dir: &Path, args: &[OsString]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agl-host"))
        .current_dir(dir)
        .env("AGL_CACHE_DIR", cache_dir())
        .env_remove("AGL_DB")
        .env_remove("COLUMNS")
        .args(args)
        .output()
        .expect("agl-host runs")
}

fn words(words: &[&str]) -> Vec<OsString> {
    words.iter().map(OsString::from).collect()
}

/// One run of the probe kept in SQLite, started with secrets on its command line.
struct Kept {
    dir: PathBuf,
    db: PathBuf,
    results: Value,
}

fn kept() -> &'static Kept {
    static KEPT: OnceLock<Kept> = OnceLock::new();
    KEPT.get_or_init(|| {
        let dir = scratch("agl-records", "kept");
        let train = dir.join("train.jsonl");
        std::fs::write(&train, TASKS.join("\n") + "\n").expect("tasks");
        let (db, out) = (dir.join("probe.db"), dir.join("results.json"));
        let mut args: Vec<OsString> = words(&["run", "--algo", "baseline", "--agent"]);
        args.push(repo().join("tests/guests/probe").into());
        args.extend(["--train".into(), train.into()]);
        args.extend(["--db".into(), format!("sqlite:{}", db.display()).into()]);
        args.extend(["--output".into(), out.clone().into()]);
        // Never called (the probe imports the LLM, but these tasks make no call), never reached.
        args.extend(words(&[
            "--llm-endpoint",
            "http://user:LLMKEY-s3cret@127.0.0.1:9/v1?api_key=LLMKEY-s3cret",
            "--llm-model",
            "m",
            "--token=TOKEN-s3cret",
            "--agent-env",
            "API_KEY=ENV-s3cret",
        ]));
        let run = agl_host_in(&dir, &args);
        assert!(run.status.success(), "{}", text(&run));
        Kept {
            dir,
            db,
            results: read_results(&out),
        }
    })
}

/// No secret, and the redaction marks where they were.
fn assert_hidden(what: &str, said: &str) {
    for secret in SECRETS {
        assert!(!said.contains(secret), "{what} shows {secret}:\n{said}");
    }
    for shown in [
        "http://user:***@127.0.0.1:9/v1?api_key=***",
        "--token=***",
        "API_KEY=***",
    ] {
        assert!(said.contains(shown), "{what} lacks {shown}:\n{said}");
    }
}

#[test]
fn secrets_on_the_command_line_are_hidden_wherever_the_run_record_is_read() {
    let kept = kept();
    let db = kept.db.display().to_string();
    let show = agl_host_in(&kept.dir, &words(&["show", &db, "--json"]));
    assert!(show.status.success(), "{}", text(&show));
    let record: Value = serde_json::from_slice(&show.stdout).expect("JSON");
    assert_hidden("show --json", &record["run"]["command"].to_string());
    // The text (its command line clipped to the width) and the whole JSON alike.
    let text_show = agl_host_in(&kept.dir, &words(&["show", &db]));
    for said in [&show.stdout, &text_show.stdout] {
        let said = String::from_utf8_lossy(said);
        for secret in SECRETS {
            assert!(!said.contains(secret), "show shows {secret}:\n{said}");
        }
    }

    let runs_dir = kept.dir.join("runs");
    std::fs::create_dir_all(&runs_dir).expect("runs folder");
    std::fs::copy(&kept.db, runs_dir.join("probe.db")).expect("copy");
    let runs = agl_host_in(&kept.dir, &words(&["runs", "--dir", "runs", "--json"]));
    assert!(runs.status.success(), "{}", text(&runs));
    let listed: Value = serde_json::from_slice(&runs.stdout).expect("JSON");
    assert_hidden("runs --json", &listed[0]["run"]["command"].to_string());
    for secret in SECRETS {
        assert!(!String::from_utf8_lossy(&runs.stdout).contains(secret));
    }

    let server =
        ServerProcess::agl_host_printing(&["dashboard", &db, "--port", "0"], "agl-host dashboard: listening on ");
    let body = reqwest::blocking::get(format!("{}/v1/agl-host/run", server.url.trim_end_matches('/')))
        .expect("the dashboard answers")
        .text()
        .expect("body");
    let record: Value = serde_json::from_str(&body).expect("JSON");
    assert_hidden("/v1/agl-host/run", &record["command"].to_string());
    for secret in SECRETS {
        assert!(!body.contains(secret), "/v1/agl-host/run shows {secret}: {body}");
    }
}

#[test]
fn a_rollout_that_failed_after_emitting_a_reward_counts_0_in_every_mean() {
    let kept = kept();
    // (0 + 0.5 + 0 + 1.0) / 4: the rewards the failed rollouts emitted (1.0, 0.75) count 0.
    let mean = kept.results["total"]["mean_reward"].as_f64().expect("mean");
    assert!((mean - 0.375).abs() < 1e-9, "{}", kept.results);

    let db = kept.db.display().to_string();
    let show = agl_host_in(&kept.dir, &words(&["show", &db]));
    let said = String::from_utf8_lossy(&show.stdout);
    assert!(said.contains("mean reward 0.3750"), "{said}");

    let server =
        ServerProcess::agl_host_printing(&["dashboard", &db, "--port", "0"], "agl-host dashboard: listening on ");
    let page: Value = reqwest::blocking::get(format!(
        "{}/v1/agl-host/outcomes?limit=-1",
        server.url.trim_end_matches('/')
    ))
    .expect("the dashboard answers")
    .json()
    .expect("JSON");
    let outcomes = page["items"].as_array().expect("items");
    assert_eq!(outcomes.len(), TASKS.len(), "{page}");
    let emitted: f64 = outcomes.iter().filter_map(|o| o["final_reward"].as_f64()).sum();
    assert!(
        (emitted - 3.25).abs() < 1e-9,
        "the failed rollouts' rewards are kept: {page}"
    );
    let counted: f64 = outcomes
        .iter()
        .map(|o| o["counted_reward"].as_f64().expect("counted_reward"))
        .sum();
    assert!(
        (counted / outcomes.len() as f64 - mean).abs() < 1e-9,
        "the dashboard's mean is the results': {page}"
    );
}

#[test]
fn reading_commands_leave_an_empty_file_empty_and_a_kept_run_as_it_was() {
    let kept = kept();
    let dir = scratch("agl-records", "empty");
    let empty = dir.join("empty.db");
    std::fs::write(&empty, b"").expect("empty file");
    let url = format!("sqlite:{}", empty.display());
    for args in [
        vec!["show", "--db", &url],
        vec!["show", "--db", &url, "--json"],
        vec!["export", "--db", &url, "--format", "spans"],
        vec!["dashboard", "--db", &url, "--port", "0"],
    ] {
        let output = agl_host_in(&dir, &words(&args));
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", text(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: one line: {stderr}");
        assert!(stderr.contains("holds no agl-host store"), "{args:?}: {stderr}");
        assert_eq!(std::fs::metadata(&empty).expect("still there").len(), 0, "{args:?}");
    }

    let before = std::fs::read(&kept.db).expect("the kept run");
    let db = kept.db.display().to_string();
    for args in [vec!["show", &db], vec!["export", "--run", &db, "--format", "spans"]] {
        let output = agl_host_in(&kept.dir, &words(&args));
        assert!(output.status.success(), "{args:?}: {}", text(&output));
    }
    assert!(
        std::fs::read(&kept.db).expect("the kept run") == before,
        "reading wrote to the file"
    );
}
