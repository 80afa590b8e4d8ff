//! Looking at kept runs in the terminal: `agl-host runs` lists the runs kept under `.agl/runs/`
//! (a file that cannot be read is a row saying why; a run with no end recorded is not called
//! running), `agl-host show RUN` lists a run's rollouts, and `show RUN ROLLOUT` gives a rollout's
//! attempts and span tree; `--json` prints the records; unknown ids exit 2. The runs are real:
//! the README's APO demo and the probe agent failing some of its tasks.

use serde_json::Value;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::agents;
use agents::*;

/// `agl-host ARGS` in `dir`, with no `AGL_DB` from the environment (runs are kept under `.agl/`).
fn agl_host_in(dir: &Path, args: &[impl AsRef<OsStr>]) -> Output {
    command_in(dir, args).output().expect("agl-host runs")
}

fn command_in(dir: &Path, args: &[impl AsRef<OsStr>]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agl-host"));
    command
        .current_dir(dir)
        .env("AGL_CACHE_DIR", cache_dir())
        .env_remove("AGL_DB")
        .env_remove("COLUMNS")
        .args(args);
    command
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The probe's tasks: two that succeed, two that fail.
const PROBE_TASKS: &[&str] = &[
    r#"{"do": "llm_once", "prompt": "What is 2 + 2?"}"#,
    r#"{"do": "panic"}"#,
    r#"{"do": "reward", "value": 0.5}"#,
    r#"{"do": "no_such_action"}"#,
];

/// `dev` arguments running the probe agent on `tasks` (written to `dir/name.jsonl`).
fn probe_args(dir: &Path, name: &str, tasks: &[&str]) -> Vec<std::ffi::OsString> {
    let train = dir.join(format!("{name}.jsonl"));
    std::fs::write(&train, tasks.join("\n") + "\n").expect("tasks");
    vec![
        "dev".into(),
        "--agent".into(),
        repo().join("tests/guests/probe").into(),
        "--train".into(),
        train.into(),
        "--llm-script".into(),
        repo().join("examples/math-agent/rules.json").into(),
        "--output".into(),
        dir.join(format!("{name}.json")).into(),
    ]
}

/// Two runs kept in one folder: APO on the math agent, then the probe failing half its tasks.
struct Kept {
    dir: PathBuf,
    apo: Value,
    probe: Value,
}

impl Kept {
    fn apo_id(&self) -> &str {
        self.apo["run_id"].as_str().expect("run id")
    }
    fn probe_id(&self) -> &str {
        self.probe["run_id"].as_str().expect("run id")
    }
}

fn kept() -> &'static Kept {
    static KEPT: OnceLock<Kept> = OnceLock::new();
    KEPT.get_or_init(|| {
        let dir = scratch("agl-inspect", "kept");
        let out = dir.join("apo.json");
        let apo = agl_host_in(&dir, &apo_args(&repo().join("examples/math-agent"), &out));
        assert!(apo.status.success(), "{}", text(&apo));
        // A second later, so that the probe's run is the newer one to the second.
        std::thread::sleep(Duration::from_millis(1100));
        let probe = agl_host_in(&dir, &probe_args(&dir, "probe", PROBE_TASKS));
        assert!(probe.status.success(), "{}", text(&probe));
        Kept {
            apo: read_results(&out),
            probe: read_results(&dir.join("probe.json")),
            dir,
        }
    })
}

/// `show RUN --json`: the run's rollouts.
fn rollouts_of(run_id: &str) -> Vec<Value> {
    let show = agl_host_in(&kept().dir, &["show", run_id, "--json"]);
    assert!(show.status.success(), "{}", text(&show));
    let record: Value = serde_json::from_slice(&show.stdout).expect("show --json is JSON");
    record["rollouts"].as_array().expect("rollouts").clone()
}

/// The id of the run's first rollout that is a task (not the algorithm's own).
fn first_task(run_id: &str) -> String {
    rollouts_of(run_id)
        .iter()
        .find(|r| !r["rollout"]["mode"].is_null())
        .and_then(|r| r["rollout"]["rollout_id"].as_str())
        .expect("a task rollout")
        .to_owned()
}

/// A child process killed when dropped, so that a failing test leaves nothing spinning.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn runs_lists_each_kept_run_newest_first_with_its_counts_and_scores() {
    let kept = kept();
    let runs = command_in(&kept.dir, &["runs"])
        .env("COLUMNS", "200")
        .output()
        .expect("runs");
    assert!(runs.status.success(), "{}", text(&runs));
    let listed = stdout(&runs);
    let lines: Vec<&str> = listed.lines().collect();
    assert!(lines[0].starts_with("run ") && lines[0].contains("mean"), "{listed}");
    assert!(lines[1].starts_with(kept.probe_id()), "newest first:\n{listed}");
    assert!(lines[2].starts_with(kept.apo_id()), "{listed}");
    let apo: Vec<&str> = lines[2].split_whitespace().collect();
    // id, month, day, time, status, rollouts, mean, best, algo, agent
    assert_eq!(
        apo[4..],
        ["completed", "256", "0.6758", "1.0000", "apo", "math_agent"],
        "{listed}"
    );
    assert_eq!(
        format!("{:.4}", kept.apo["total"]["mean_reward"].as_f64().expect("mean")),
        "0.6758"
    );
    let probe: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(probe[4..6], ["completed", "4"], "{listed}");
    assert_eq!(probe[8..], ["baseline", "probe"], "{listed}");

    let json = agl_host_in(&kept.dir, &["runs", "--json"]);
    assert!(json.status.success(), "{}", text(&json));
    let records: Value = serde_json::from_slice(&json.stdout).expect("runs --json is JSON");
    let records = records.as_array().expect("an array");
    assert_eq!(records.len(), 2, "{records:#?}");
    assert_eq!(records[0]["run"]["run_id"], kept.probe_id());
    assert_eq!(records[1]["run"]["run_id"], kept.apo_id());
    assert_eq!(records[1]["run"]["status"], "completed");
    assert_eq!(records[1]["run"]["results"]["total"]["rollouts"], 256);
    assert!(records[1]["run"]["finished_at"].is_f64());
}

#[test]
fn runs_in_an_empty_folder_says_how_runs_get_kept() {
    let dir = scratch("agl-inspect", "empty");
    let runs = agl_host_in(&dir, &["runs"]);
    assert!(runs.status.success(), "{}", text(&runs));
    let said = stdout(&runs);
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(
        said.starts_with("no kept runs in .agl/runs") && said.contains("agl-host run"),
        "{said}"
    );
    let json = agl_host_in(&dir, &["runs", "--dir", "elsewhere", "--json"]);
    assert_eq!(stdout(&json).trim(), "[]", "{}", text(&json));
}

#[test]
fn a_file_that_is_not_a_database_is_a_row_saying_why() {
    let dir = scratch("agl-inspect", "corrupt");
    let runs_dir = dir.join(".agl/runs");
    std::fs::create_dir_all(&runs_dir).expect("runs dir");
    let apo_db = kept().dir.join(".agl/runs").join(format!("{}.db", kept().apo_id()));
    std::fs::copy(&apo_db, runs_dir.join(format!("{}.db", kept().apo_id()))).expect("copy a kept run");
    std::fs::write(
        runs_dir.join("junk.db"),
        "not a database, only text long enough to be read",
    )
    .expect("junk");
    std::fs::write(runs_dir.join("empty.db"), "").expect("empty");
    let runs = agl_host_in(&dir, &["runs"]);
    assert!(runs.status.success(), "{}", text(&runs));
    let listed = stdout(&runs);
    assert!(
        !String::from_utf8_lossy(&runs.stderr).contains("panicked"),
        "{}",
        text(&runs)
    );
    let row = |name: &str| {
        listed
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no row for {name}:\n{listed}"))
            .to_owned()
    };
    assert!(
        row("junk.db").contains("cannot be read: file is not a database"),
        "{listed}"
    );
    assert!(row("empty.db").contains("cannot be read: an empty file"), "{listed}");
    assert!(row(kept().apo_id()).contains("completed"), "{listed}");
    assert_eq!(
        std::fs::metadata(runs_dir.join("empty.db")).expect("kept").len(),
        0,
        "left as it was"
    );

    let json = agl_host_in(&dir, &["runs", "--json"]);
    let records: Value = serde_json::from_slice(&json.stdout).expect("JSON");
    let junk = records
        .as_array()
        .expect("array")
        .iter()
        .find(|r| r["file"].as_str().is_some_and(|f| f.ends_with("junk.db")))
        .expect("junk.db listed");
    assert!(
        junk["error"].as_str().expect("why").contains("not a database"),
        "{junk}"
    );

    let show = agl_host_in(&dir, &["show", "junk"]);
    assert_eq!(show.status.code(), Some(2), "{}", text(&show));
    assert!(
        String::from_utf8_lossy(&show.stderr).contains("not a database"),
        "{}",
        text(&show)
    );
}

#[test]
fn show_lists_the_rollouts_of_a_run_with_their_statuses() {
    let kept = kept();
    let show = agl_host_in(&kept.dir, &["show", kept.apo_id()]);
    assert!(show.status.success(), "{}", text(&show));
    let said = stdout(&show);
    assert!(
        said.starts_with(&format!("run {} · completed", kept.apo_id())),
        "{said}"
    );
    assert!(said.contains("  best       1.0000 with resources v1"), "{said}");
    assert!(
        said.contains("256 rollouts: 256 succeeded, 0 failed, 0 cancelled, 0 unfinished; mean reward 0.6758"),
        "{said}"
    );
    let rows: Vec<&str> = said.lines().filter(|l| l.starts_with("  ro-")).collect();
    assert_eq!(rows.len(), 256, "{said}");
    assert!(rows.iter().all(|r| r.contains(" succeeded ")), "{said}");
    assert_eq!(rows.iter().filter(|r| r.contains(" val ")).count(), 64, "{said}");
    assert!(said.contains("the algorithm's own rollout (succeeded)"), "{said}");
    // Each rollout's resources version, as the store keeps it; APO's rounds ran several.
    let header = said
        .lines()
        .find(|l| l.trim_start().starts_with("rollout "))
        .unwrap_or_else(|| panic!("no table header:\n{said}"));
    assert!(
        header
            .split_whitespace()
            .take(4)
            .eq(["rollout", "split", "status", "resources"]),
        "{header}"
    );
    let records = rollouts_of(kept.apo_id());
    let mut versions: Vec<&str> = Vec::new();
    for rollout in records.iter().map(|r| &r["rollout"]) {
        let id = rollout["rollout_id"].as_str().expect("rollout id");
        let Some(row) = rows.iter().find(|r| r.trim_start().starts_with(id)) else {
            continue; // the algorithm's own rollout
        };
        let version = rollout["resources_id"].as_str().expect("a resources version");
        assert_eq!(row.split_whitespace().nth(3), Some(version), "{row}");
        if !versions.contains(&version) {
            versions.push(version);
        }
    }
    assert!(
        versions.len() > 1,
        "APO ran its rollouts with several versions: {versions:?}"
    );

    // A unique start of the id will do; the probe run has failures, with their reasons.
    let show = agl_host_in(&kept.dir, &["show", &kept.probe_id()[..22]]);
    assert!(show.status.success(), "{}", text(&show));
    let said = stdout(&show);
    assert!(said.contains("4 rollouts: 2 succeeded, 2 failed"), "{said}");
    let failed: Vec<&str> = said
        .lines()
        .filter(|l| l.contains(" failed ") && l.starts_with("  ro-"))
        .collect();
    assert_eq!(failed.len(), 2, "{said}");
    assert!(said.contains("1×  the agent panicked"), "{said}");
    assert!(
        said.contains("1×  agent error: task does not match probe::Task"),
        "{said}"
    );
    let rewards: Vec<Option<f64>> = rollouts_of(kept.probe_id())
        .iter()
        .map(|r| r["final_reward"].as_f64())
        .collect();
    assert_eq!(
        rewards,
        [Some(1.0), None, Some(0.5), None],
        "in the order they were enqueued"
    );
}

#[test]
fn show_a_rollout_gives_its_attempts_and_the_span_tree_with_the_prompt_and_the_reward() {
    let kept = kept();
    let first = first_task(kept.apo_id());
    let show = agl_host_in(&kept.dir, &["show", kept.apo_id(), &first]);
    assert!(show.status.success(), "{}", text(&show));
    let said = stdout(&show);
    assert!(said.starts_with(&format!("rollout {first} · succeeded · ")), "{said}");
    let attempt = said
        .lines()
        .find(|l| l.trim_start().starts_with("1  at-"))
        .unwrap_or_else(|| panic!("no attempt row:\n{said}"));
    assert!(attempt.contains("succeeded  runner"), "{said}");
    let tree: Vec<&str> = said
        .lines()
        .skip_while(|l| !l.starts_with("spans of attempt 1"))
        .collect();
    assert!(tree[1].starts_with("  agentlightning.rollout"), "{said}");
    let llm = tree
        .iter()
        .position(|l| l.starts_with("    openai.chat.completion  scripted"))
        .unwrap_or_else(|| panic!("no LLM call:\n{said}"));
    assert!(
        tree[llm + 1].starts_with("        user: Solve this problem.⏎Problem: "),
        "{said}"
    );
    assert!(tree[llm + 2].starts_with("        → assistant: "), "{said}");
    assert!(
        tree.iter()
            .any(|l| l.starts_with("    agentlightning.annotation  reward primary = ")),
        "{said}"
    );
    assert!(tree.iter().any(|l| l.contains("log info: extracted answer")), "{said}");

    // A failed rollout of the probe: its reason, and the root span's.
    let probe = rollouts_of(kept.probe_id());
    let panicked = probe[1]["rollout"]["rollout_id"].as_str().expect("id");
    // Its last digits are enough (rollouts made together share the start of their ids).
    let show = agl_host_in(&kept.dir, &["show", kept.probe_id(), &panicked[panicked.len() - 5..]]);
    assert!(show.status.success(), "{}", text(&show));
    let said = stdout(&show);
    assert!(said.contains("  failure    the agent panicked"), "{said}");
    assert!(said.contains("panic on purpose"), "{said}");
}

#[test]
fn show_json_holds_the_rollout_its_attempts_and_spans() {
    let kept = kept();
    let first = first_task(kept.apo_id());
    let show = agl_host_in(&kept.dir, &["show", kept.apo_id(), &first, "--json"]);
    assert!(show.status.success(), "{}", text(&show));
    let record: Value = serde_json::from_slice(&show.stdout).expect("JSON");
    assert_eq!(record["run_id"], kept.apo_id());
    assert_eq!(record["rollout"]["rollout_id"], first.as_str());
    assert_eq!(record["attempts"].as_array().map(Vec::len), Some(1), "{record:#}");
    let spans = record["spans"].as_array().expect("spans");
    let llm = spans
        .iter()
        .find(|s| s["name"] == "openai.chat.completion")
        .unwrap_or_else(|| panic!("no LLM span: {record:#}"));
    assert!(
        llm["attributes"]["gen_ai.prompt.0.content"]
            .as_str()
            .is_some_and(|p| p.starts_with("Solve this problem.")),
        "{llm:#}"
    );
    assert!(
        spans.iter().any(|s| s["name"] == "agentlightning.annotation"),
        "{record:#}"
    );
    assert!(record["final_reward"].is_f64(), "{record:#}");
}

#[test]
fn unknown_runs_rollouts_and_attempts_exit_2_with_one_line() {
    let kept = kept();
    let cases: [(&[&str], &str); 5] = [
        (&["show", "run-19990101"], "no kept run run-19990101 in .agl/runs"),
        (&["show", kept.apo_id(), "ro-nope"], "no rollout ro-nope in run"),
        (&["show", kept.apo_id(), "ro-"], "could be any of 257 rollouts"),
        (&["show", "missing.db"], "missing.db: no such file"),
        (&["show", "run-"], "could be any of 2 runs"),
    ];
    for (args, says) in cases {
        let show = agl_host_in(&kept.dir, args);
        assert_eq!(show.status.code(), Some(2), "{args:?}: {}", text(&show));
        let stderr = String::from_utf8_lossy(&show.stderr);
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(show.stdout.is_empty(), "{args:?}: {}", text(&show));
    }
    assert!(!kept.dir.join("missing.db").exists(), "a missing file is not created");
    let first = first_task(kept.apo_id());
    let show = agl_host_in(&kept.dir, &["show", kept.apo_id(), &first, "--attempt", "2"]);
    assert_eq!(show.status.code(), Some(2), "{}", text(&show));
    assert!(
        String::from_utf8_lossy(&show.stderr).contains(&format!("rollout {first} has no attempt 2 (it has attempt 1)")),
        "{}",
        text(&show)
    );
}

#[test]
fn show_opens_a_db_file_or_a_store_url_and_clips_lines_to_columns() {
    let kept = kept();
    let file = kept.dir.join(".agl/runs").join(format!("{}.db", kept.apo_id()));
    let by_path = agl_host_in(&repo(), &[OsStr::new("show"), file.as_os_str()]);
    assert!(by_path.status.success(), "{}", text(&by_path));
    assert!(stdout(&by_path).contains("256 rollouts"), "{}", text(&by_path));

    let first = first_task(kept.apo_id());
    let url = format!("sqlite:{}", file.display());
    let by_url = agl_host_in(&repo(), &["show", "--db", &url, &first]);
    assert!(by_url.status.success(), "{}", text(&by_url));
    assert!(
        stdout(&by_url).starts_with(&format!("rollout {first}")),
        "{}",
        text(&by_url)
    );

    let narrow = command_in(&kept.dir, &["show", kept.apo_id(), &first])
        .env("COLUMNS", "60")
        .output()
        .expect("runs");
    assert!(narrow.status.success(), "{}", text(&narrow));
    let said = stdout(&narrow);
    assert!(said.lines().all(|l| l.chars().count() <= 60), "{said}");
    assert!(
        said.lines().any(|l| l.chars().count() == 60 && l.ends_with('…')),
        "{said}"
    );
}

#[test]
fn a_killed_run_reads_as_running_or_killed_and_reading_it_changes_nothing() {
    let dir = scratch("agl-inspect", "killed");
    let tasks = [r#"{"do": "noop"}"#, r#"{"do": "spin"}"#];
    let mut args = probe_args(&dir, "spin", &tasks);
    // Heartbeats stop at the kill: a store's watchdog would call the attempt unresponsive a
    // second later and requeue its rollout. Reading must not.
    for (flag, value) in [
        ("--agent-timeout", "120s"),
        ("--heartbeat", "200ms"),
        ("--unresponsive-after", "1s"),
    ] {
        args.extend([flag.into(), value.into()]);
    }
    let mut child = KillOnDrop(
        command_in(&dir, &args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starts"),
    );
    // Until the spinning rollout has an attempt (preparing: it records no span before it ends).
    let started = Instant::now();
    let (running, status) = loop {
        let show = agl_host_in(&dir, &["show", "run-", "--json"]);
        if show.status.success() {
            let record: Value = serde_json::from_slice(&show.stdout).expect("JSON");
            let rollouts = record["rollouts"].as_array().cloned().unwrap_or_default();
            if let Some(spinning) = rollouts.iter().find(|r| {
                r["rollout"]["input"]["do"] == "spin"
                    && ["preparing", "running"].contains(&r["rollout"]["status"].as_str().unwrap_or(""))
            }) {
                let id = spinning["rollout"]["rollout_id"].as_str().expect("id").to_owned();
                let status = spinning["rollout"]["status"].as_str().expect("status").to_owned();
                break (id, status);
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the spin rollout never ran"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    child.0.kill().expect("killed");
    child.0.wait().expect("reaped");
    std::thread::sleep(Duration::from_millis(1500));

    let runs = agl_host_in(&dir, &["runs"]);
    let listed = stdout(&runs);
    assert!(
        listed.lines().nth(1).is_some_and(|l| l.contains(" running? ")),
        "{listed}"
    );
    assert!(listed.contains("still running, or killed"), "{listed}");
    for _ in 0..2 {
        let show = agl_host_in(&dir, &["show", "run-"]);
        let said = stdout(&show);
        assert!(said.contains("· running? (no end recorded"), "{said}");
        assert!(said.contains("no end recorded"), "{said}");
        let row = said
            .lines()
            .find(|l| l.starts_with(&format!("  {running}")))
            .unwrap_or_else(|| panic!("no row for {running}:\n{said}"));
        assert!(
            row.contains(&format!(" {status} ")),
            "still {status} as the store kept it: {said}"
        );
        assert!(said.contains("1 unfinished"), "{said}");
    }
}
