//! `agl-host export`: a real APO run of the math agent (scripted LLM) kept in an SQLite file,
//! exported as triplets, chat transcripts and spans; the values are checked against what
//! `agl-host show --json` reports for the same run (the task in the prompt, the final rewards,
//! the attempts, the spans as stored). The run's two prompt versions (resources v0 and v1) and
//! its rewards (0 and 1) are filtered on with --resources-version and --min/--max-reward, from
//! the file and from a served store. A real run of the tool agent exports the tools it offered
//! the model, in OpenAI's shape, with its tool calls and their results. The same file served by
//! `agl-host store` exports the same lines over HTTP, and a run kept in PostgreSQL exports from
//! its URL. Bad sources and filters exit 2 with one line, and a failed export leaves `--out` as
//! it was. Fork rollouts (`agl.fork` in their metadata, as `agl-host fork` writes it) are left
//! out unless `--include-forks`, their lines then carrying the fork's lineage.

use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use crate::agents;
use crate::support;
use agents::*;
use support::ServerProcess;

/// The kept APO run: its folder of runs (one file, `apo-run.db`), its id, and what `show --json`
/// says of its rollouts.
struct Kept {
    runs: PathBuf,
    run_id: String,
    /// Rollout id -> `show --json`'s row (rollout, latest attempt, final reward).
    rows: HashMap<String, Value>,
}

impl Kept {
    fn db(&self) -> PathBuf {
        self.runs.join("apo-run.db")
    }

    fn db_url(&self) -> String {
        format!("sqlite:{}", self.db().display())
    }

    /// The rows of task rollouts (not the algorithm's own) that `filter` keeps.
    fn tasks(&self, filter: impl Fn(&Value) -> bool) -> Vec<&Value> {
        self.rows
            .values()
            .filter(|row| !row["rollout"]["mode"].is_null() && filter(row))
            .collect()
    }
}

fn kept() -> &'static Kept {
    static KEPT: OnceLock<Kept> = OnceLock::new();
    KEPT.get_or_init(|| {
        let dir = scratch("agl-export", "kept");
        let runs = dir.join("runs");
        std::fs::create_dir_all(&runs).expect("runs folder");
        let out = dir.join("apo.json");
        let mut args = apo_args(&repo().join("examples/math-agent"), &out);
        args.extend([
            "--db".into(),
            format!("sqlite:{}", runs.join("apo-run.db").display()).into(),
        ]);
        let run = agl_host(&args);
        assert!(run.status.success(), "{}", text(&run));
        let run_id = read_results(&out)["run_id"].as_str().expect("run id").to_owned();
        let db = format!("sqlite:{}", runs.join("apo-run.db").display());
        let show = agl_host(["show", "--db", db.as_str(), "--json"]);
        assert!(show.status.success(), "{}", text(&show));
        let record: Value = serde_json::from_slice(&show.stdout).expect("show --json is JSON");
        let rows = record["rollouts"]
            .as_array()
            .expect("rollouts")
            .iter()
            .map(|row| {
                (
                    row["rollout"]["rollout_id"].as_str().expect("id").to_owned(),
                    row.clone(),
                )
            })
            .collect();
        Kept { runs, run_id, rows }
    })
}

/// `agl-host export ARGS`, which must succeed; its lines, parsed, and what it said on stderr.
fn export(args: &[&str]) -> (Vec<Value>, String) {
    let output = agl_host(std::iter::once("export").chain(args.iter().copied()));
    assert!(output.status.success(), "{}", text(&output));
    (lines(&String::from_utf8_lossy(&output.stdout)), stderr(&output))
}

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn runs_dir() -> String {
    kept().runs.display().to_string()
}

/// The text of the last message of `role` in `messages`.
fn last_of<'a>(messages: &'a Value, role: &str) -> &'a str {
    messages
        .as_array()
        .expect("messages")
        .iter()
        .rev()
        .find(|m| m["role"] == role)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no {role} message in {messages}"))
}

#[test]
fn triplets_are_one_per_llm_call_with_the_task_and_the_reward_show_reports() {
    let kept = kept();
    // A unique start of the file's name under --dir names the run, as with `agl-host show`.
    let (triplets, said) = export(&["--run", "apo", "--dir", &runs_dir(), "--format", "triplets"]);
    let finished = kept.tasks(|row| {
        ["succeeded", "failed", "cancelled"].contains(&row["rollout"]["status"].as_str().unwrap_or_default())
    });
    assert_eq!(finished.len(), 256, "APO's 256 task rollouts");
    // The math agent makes one LLM call per attempt: one triplet per rollout.
    assert_eq!(triplets.len(), finished.len(), "{said}");
    assert!(
        said.contains("256 triplets (one per LLM call) from 256 attempts of 256 rollouts")
            && said.contains(&kept.run_id),
        "{said}"
    );
    let mut seen = HashSet::new();
    let mut last_start = f64::NEG_INFINITY;
    let mut rewards = HashSet::new();
    for line in &triplets {
        let rollout_id = line["rollout_id"].as_str().expect("rollout id");
        assert!(seen.insert(rollout_id.to_owned()), "{rollout_id} twice");
        let row = &kept.rows[rollout_id];
        let rollout = &row["rollout"];
        assert_eq!(line["run_id"], kept.run_id.as_str());
        assert_eq!(line["attempt_id"], row["attempt"]["attempt_id"], "{line}");
        assert_eq!(line["attempt"], row["attempt"]["sequence_id"], "{line}");
        assert_eq!(line["attempt_status"], row["attempt"]["status"], "{line}");
        assert_eq!(line["mode"], rollout["mode"], "{line}");
        assert_eq!(line["resources_id"], rollout["resources_id"], "{line}");
        assert_eq!(line["input"], rollout["input"], "{line}");
        assert_eq!(line["index"], 0, "{line}");
        let question = rollout["input"]["question"].as_str().expect("question");
        assert!(last_of(&line["prompt"], "user").contains(question), "{line}");
        assert!(!line["response"].as_str().expect("response").is_empty(), "{line}");
        assert_eq!(line["reward"], row["final_reward"], "{line}");
        assert_eq!(line["final_reward"], row["final_reward"], "{line}");
        assert_eq!(line["model"], "scripted", "{line}");
        assert!(line["usage"]["input_tokens"].as_u64().is_some_and(|n| n > 0), "{line}");
        assert!(line["span_id"].as_str().is_some_and(|id| !id.is_empty()), "{line}");
        rewards.insert(line["reward"].to_string());
        // Rollouts by start time.
        let start = rollout["start_time"].as_f64().expect("start");
        assert!(start >= last_start, "not in start order: {rollout_id}");
        last_start = start;
    }
    assert!(rewards.len() > 1, "APO's rollouts score differently: {rewards:?}");

    // Every attempt: each rollout ran once, so the same lines.
    let (every, _) = export(&["--db", &kept.db_url(), "--format", "triplets", "--all-attempts"]);
    let attempts: u64 = finished
        .iter()
        .map(|row| row["attempt"]["sequence_id"].as_u64().expect("attempt"))
        .sum();
    assert_eq!(every.len() as u64, attempts);
    assert_eq!(every, triplets);
}

#[test]
fn messages_are_one_transcript_per_attempt_of_the_modes_and_statuses_asked_for() {
    let kept = kept();
    let dir = scratch("agl-export", "messages");
    let out = dir.join("sft.jsonl");
    let db = kept.db_url();
    let filter = ["--mode", "val", "--status", "succeeded"];
    let mut args = vec!["--db", db.as_str(), "--format", "messages", "--out"];
    let out_text = out.display().to_string();
    args.push(&out_text);
    args.extend(filter);
    let (printed, said) = export(&args);
    assert!(printed.is_empty(), "--out: nothing on stdout");
    let transcripts = lines(&std::fs::read_to_string(&out).expect("--out written"));
    let expected = kept.tasks(|row| row["rollout"]["mode"] == "val" && row["rollout"]["status"] == "succeeded");
    assert!(!expected.is_empty());
    assert_eq!(transcripts.len(), expected.len(), "{said}");
    assert!(said.contains(&format!("to {out_text}")), "{said}");

    let triplet_args: Vec<&str> = ["--db", db.as_str(), "--format", "triplets"]
        .into_iter()
        .chain(filter)
        .collect();
    let (triplets, _) = export(&triplet_args);
    let answers: HashMap<&str, &str> = triplets
        .iter()
        .map(|t| {
            (
                t["attempt_id"].as_str().expect("id"),
                t["response"].as_str().expect("text"),
            )
        })
        .collect();
    for line in &transcripts {
        let row = &kept.rows[line["rollout_id"].as_str().expect("rollout id")];
        assert_eq!(line["mode"], "val");
        assert_eq!(row["rollout"]["status"], "succeeded");
        assert_eq!(line["attempt_id"], row["attempt"]["attempt_id"]);
        assert_eq!(line["reward"], row["final_reward"], "{line}");
        assert_eq!(
            line["rewards"],
            serde_json::json!([{"name": "primary", "value": row["final_reward"]}]),
            "the math agent records one reward: {line}"
        );
        assert_eq!(line["llm_calls"], 1, "{line}");
        let messages = line["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 2, "the prompt and the answer: {line}");
        let question = row["rollout"]["input"]["question"].as_str().expect("question");
        assert_eq!(messages[0]["role"], "user");
        assert!(
            messages[0]["content"].as_str().expect("text").contains(question),
            "{line}"
        );
        assert_eq!(messages[1]["role"], "assistant");
        let attempt_id = line["attempt_id"].as_str().expect("attempt id");
        assert_eq!(messages[1]["content"], answers[attempt_id], "{line}");
    }
}

#[test]
fn spans_are_the_stores_wire_json() {
    let kept = kept();
    let (spans, _) = export(&["--db", &kept.db_url(), "--format", "spans", "--mode", "train"]);
    let train = kept.tasks(|row| row["rollout"]["mode"] == "train");
    let latest: HashSet<&str> = train
        .iter()
        .map(|row| row["attempt"]["attempt_id"].as_str().expect("attempt id"))
        .collect();
    assert!(spans.len() > train.len(), "several spans per attempt");
    assert!(
        spans
            .iter()
            .all(|span| latest.contains(span["attempt_id"].as_str().expect("attempt id"))),
        "only the latest attempts of train rollouts"
    );
    let first = spans[0]["rollout_id"].as_str().expect("rollout id");
    let show = agl_host(["show", "--db", kept.db_url().as_str(), first, "--json"]);
    assert!(show.status.success(), "{}", text(&show));
    let record: Value = serde_json::from_slice(&show.stdout).expect("JSON");
    let of_first: Vec<&Value> = spans.iter().filter(|s| s["rollout_id"] == first).collect();
    let stored: Vec<&Value> = record["spans"].as_array().expect("spans").iter().collect();
    assert_eq!(of_first, stored, "the spans of {first}, as the store keeps them");
}

#[test]
fn a_served_store_exports_the_same_lines_over_http() {
    let kept = kept();
    let dir = scratch("agl-export", "served");
    // A copy of the run's file: a store serves its SQLite file to itself alone, and the other
    // tests read the original meanwhile.
    let copy = dir.join("served.db");
    std::fs::copy(kept.db(), &copy).expect("a copy of the kept run");
    let db = format!("sqlite:{}", copy.display());
    let store = ServerProcess::agl_host_store(&["--db", &db, "--token", "secret"]);
    let (over_http, said) = export(&["--store", &store.url, "--token", "secret", "--format", "triplets"]);
    assert!(said.contains(&store.url), "{said}");
    let (from_file, _) = export(&["--db", &db, "--format", "triplets"]);
    assert_eq!(over_http.len(), 256);
    for (http, file) in over_http.iter().zip(&from_file) {
        assert_eq!(
            http["run_id"],
            Value::Null,
            "a served store does not say which run it keeps"
        );
        let mut http = http.clone();
        http["run_id"] = file["run_id"].clone();
        assert_eq!(&http, file);
    }

    // Without the token the store refuses to be read: an error, and --out is left as it was.
    let out = dir.join("out.jsonl");
    std::fs::write(&out, "kept\n").expect("an earlier export");
    let refused = agl_host([
        "export",
        "--store",
        store.url.as_str(),
        "--format",
        "messages",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    let said = stderr(&refused);
    assert!(said.contains("401") && said.contains("bearer token"), "{said}");
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    assert_eq!(std::fs::read_to_string(&out).expect("read"), "kept\n");
    let left: Vec<String> = std::fs::read_dir(&dir)
        .expect("listed")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("out.jsonl"))
        .collect();
    assert_eq!(left, ["out.jsonl"], "no temporary file left");
}

/// `agl-host export ARGS`, which must exit 2 with one line on stderr containing `expected`.
fn refused(args: &[&str], expected: &str) {
    let output = agl_host(std::iter::once("export").chain(args.iter().copied()));
    assert_eq!(output.status.code(), Some(2), "{args:?}: {}", text(&output));
    let said = stderr(&output);
    assert!(said.contains(expected), "{args:?}: {said}");
    if !said.contains("For more information, try '--help'") {
        // Ours, not the argument parser's: one line.
        assert_eq!(said.trim().lines().count(), 1, "{args:?}: {said}");
    }
    assert!(output.stdout.is_empty(), "{args:?}: {}", text(&output));
}

#[test]
fn a_missing_or_unknown_source_exits_2_with_one_line() {
    let kept = kept();
    let dir = scratch("agl-export", "refused");
    let missing = dir.join("missing.db").display().to_string();
    let runs = runs_dir();
    refused(&["--format", "triplets"], "required arguments were not provided");
    refused(
        &["--run", "apo", "--db", &kept.db_url(), "--format", "triplets"],
        "cannot be used with",
    );
    refused(
        &["--run", "run-19990101", "--dir", &runs, "--format", "triplets"],
        "no kept run run-19990101 in",
    );
    refused(&["--db", &missing, "--format", "spans"], "missing.db: no such file");
    refused(
        &["--db", "memory", "--format", "spans"],
        "--db memory is a new, empty store",
    );
    refused(&["--db", "nonsense", "--format", "spans"], "not a store URL");
    refused(&["--db", &kept.db_url(), "--format", "csv"], "invalid value 'csv'");
    refused(
        &["--db", &kept.db_url(), "--format", "spans", "--mode", "dev"],
        "expected train, val or test",
    );
    refused(
        &["--db", &kept.db_url(), "--format", "spans", "--min-reward", "high"],
        "invalid value 'high' for '--min-reward <X>': expected a number",
    );
    refused(
        &["--db", &kept.db_url(), "--format", "spans", "--max-reward", "NaN"],
        "expected a number",
    );
    refused(
        &[
            "--db",
            &kept.db_url(),
            "--format",
            "spans",
            "--min-reward",
            "1",
            "--max-reward",
            "0",
        ],
        "--min-reward 1 is above --max-reward 0",
    );
    refused(
        &["--db", &kept.db_url(), "--format", "spans", "--resources-version", "v7"],
        "--resources-version v7: no such resources in",
    );
    // A port nothing listens on any more.
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    refused(
        &["--store", &format!("http://127.0.0.1:{port}"), "--format", "triplets"],
        "cannot reach the store",
    );
    let nowhere = dir.join("no/such/folder/out.jsonl").display().to_string();
    refused(
        &["--db", &kept.db_url(), "--format", "triplets", "--out", &nowhere],
        "cannot write there",
    );
    assert!(!Path::new(&nowhere).exists());
}

#[test]
fn no_matching_rollout_is_an_empty_export_that_says_so() {
    let kept = kept();
    let dir = scratch("agl-export", "empty");
    let out = dir.join("none.jsonl");
    let out_text = out.display().to_string();
    let (printed, said) = export(&[
        "--db",
        &kept.db_url(),
        "--format",
        "triplets",
        "--status",
        "running,queuing",
        "--out",
        &out_text,
    ]);
    assert!(printed.is_empty());
    assert_eq!(std::fs::read_to_string(&out).expect("--out written"), "");
    assert!(
        said.contains("0 triplets (one per LLM call) from 0 attempts of 0 rollouts")
            && said.contains("no rollout matched: --status, --mode, --resources-version, --min-reward"),
        "{said}"
    );
}

#[agl_testkit::needs(postgres)]
#[test]
fn a_run_kept_in_postgres_exports_from_its_url() {
    use support::BackendDb as _;
    let db = support::Backend::Postgres.fresh_db();
    let math = repo().join("examples/math-agent");
    let run = agl_host(with_files(
        vec![
            "dev".into(),
            "--agent".into(),
            math.clone().into(),
            "--db".into(),
            db.url.clone().into(),
        ],
        &math,
        &[
            ("--train", "data/val.jsonl"),
            ("--resources", "initial-resources.json"),
            ("--llm-script", "rules.json"),
        ],
    ));
    assert!(run.status.success(), "{}", text(&run));
    let show = agl_host(["show", "--db", db.url.as_str(), "--json"]);
    assert!(show.status.success(), "{}", text(&show));
    let record: Value = serde_json::from_slice(&show.stdout).expect("JSON");
    let (triplets, said) = export(&["--db", &db.url, "--format", "triplets"]);
    assert_eq!(triplets.len(), 8, "one per task of val.jsonl: {said}");
    for line in &triplets {
        assert_eq!(line["run_id"], record["run"]["run_id"]);
        let row = record["rollouts"]
            .as_array()
            .expect("rollouts")
            .iter()
            .find(|row| row["rollout"]["rollout_id"] == line["rollout_id"])
            .unwrap_or_else(|| panic!("{line} is not a rollout of the run"));
        assert_eq!(line["reward"], row["final_reward"], "{line}");
        let question = row["rollout"]["input"]["question"].as_str().expect("question");
        assert!(last_of(&line["prompt"], "user").contains(question), "{line}");
    }
}

/// The rollout ids of `lines`, each once.
fn rollout_ids(lines: &[Value]) -> HashSet<String> {
    lines
        .iter()
        .map(|line| line["rollout_id"].as_str().expect("rollout id").to_owned())
        .collect()
}

/// The ids of the finished task rollouts `filter` keeps.
fn expected_ids(kept: &Kept, filter: impl Fn(&Value) -> bool) -> HashSet<String> {
    kept.tasks(filter)
        .iter()
        .map(|row| row["rollout"]["rollout_id"].as_str().expect("id").to_owned())
        .collect()
}

fn reward_of(row: &Value) -> Option<f64> {
    row["final_reward"].as_f64()
}

#[test]
fn resources_and_reward_filters_keep_exactly_the_rollouts_that_match() {
    let kept = kept();
    let db = kept.db_url();
    let versions: HashSet<&str> = kept
        .tasks(|_| true)
        .iter()
        .filter_map(|row| row["rollout"]["resources_id"].as_str())
        .collect();
    assert_eq!(
        versions,
        HashSet::from(["v0", "v1"]),
        "APO's seed prompt and its candidate"
    );
    let run_with = |version: &'static str| move |row: &Value| row["rollout"]["resources_id"] == version;

    // One version, in every format; the alias; both versions.
    let (triplets, said) = export(&["--db", &db, "--format", "triplets", "--resources-version", "v1"]);
    let v1 = expected_ids(kept, run_with("v1"));
    assert!(!v1.is_empty() && v1.len() < 256);
    assert_eq!(triplets.len(), v1.len(), "{said}");
    assert_eq!(rollout_ids(&triplets), v1);
    assert!(triplets.iter().all(|line| line["resources_id"] == "v1"));
    let (messages, _) = export(&[
        "--run",
        "apo",
        "--dir",
        &runs_dir(),
        "--format",
        "messages",
        "--resources-id",
        "v0",
    ]);
    assert_eq!(rollout_ids(&messages), expected_ids(kept, run_with("v0")));
    assert_eq!(messages.len(), expected_ids(kept, run_with("v0")).len());
    let (spans, _) = export(&["--db", &db, "--format", "spans", "--resources-version", "v1"]);
    assert_eq!(rollout_ids(&spans), v1, "spans too");
    let (both, _) = export(&["--db", &db, "--format", "triplets", "--resources-version", "v0,v1"]);
    assert_eq!(both.len(), 256);

    // Rewards, bounds included: 1 and 0 are the run's rewards.
    let rewards: HashSet<String> = kept
        .tasks(|_| true)
        .iter()
        .map(|row| row["final_reward"].to_string())
        .collect();
    assert_eq!(rewards, HashSet::from(["1.0".to_owned(), "0.0".to_owned()]));
    for (flags, keep) in [
        (vec!["--min-reward", "1"], (|r: f64| r >= 1.0) as fn(f64) -> bool),
        (vec!["--max-reward", "0"], |r| r <= 0.0),
        (vec!["--min-reward", "0.5"], |r| r >= 0.5),
        (vec!["--min-reward", "0", "--max-reward", "0"], |r| r == 0.0),
        (vec!["--min-reward", "-1", "--max-reward", "2"], |_| true),
        (vec!["--min-reward", "0.2", "--max-reward", "0.8"], |_| false),
    ] {
        let mut args = vec!["--db", db.as_str(), "--format", "messages"];
        args.extend(&flags);
        let (lines, said) = export(&args);
        let expected = expected_ids(kept, |row| reward_of(row).is_some_and(keep));
        assert_eq!(rollout_ids(&lines), expected, "{flags:?}: {said}");
        assert_eq!(lines.len(), expected.len(), "{flags:?}");
        assert!(
            lines.iter().all(|line| line["reward"].as_f64().is_some_and(keep)),
            "{flags:?}"
        );
        let left_out = 256 - expected.len();
        if left_out > 0 {
            assert!(
                said.contains(&format!("; {left_out} attempt"))
                    && said.contains("left out by --min-reward/--max-reward"),
                "{flags:?}: {said}"
            );
        }
    }

    // Both filters together, with the others.
    let (lines, said) = export(&[
        "--db",
        &db,
        "--format",
        "triplets",
        "--resources-version",
        "v1",
        "--min-reward",
        "1",
        "--mode",
        "val",
    ]);
    let expected = expected_ids(kept, |row| {
        row["rollout"]["resources_id"] == "v1" && row["rollout"]["mode"] == "val" && reward_of(row) == Some(1.0)
    });
    assert!(!expected.is_empty());
    assert_eq!(rollout_ids(&lines), expected, "{said}");
    assert_eq!(lines.len(), expected.len());
    assert!(
        said.contains(&format!("from {n} attempts of {n} rollouts", n = expected.len())),
        "only the exported ones are counted: {said}"
    );
}

#[test]
fn a_served_store_filters_as_the_file_does() {
    let kept = kept();
    let dir = scratch("agl-export", "served-filters");
    let copy = dir.join("served.db");
    std::fs::copy(kept.db(), &copy).expect("a copy of the kept run");
    let db = format!("sqlite:{}", copy.display());
    let store = ServerProcess::agl_host_store(&["--db", &db]);
    let filters = ["--resources-version", "v0", "--min-reward", "1"];
    let over_http: Vec<&str> = ["--store", store.url.as_str(), "--format", "messages"]
        .into_iter()
        .chain(filters)
        .collect();
    let (served, said) = export(&over_http);
    let expected = expected_ids(kept, |row| {
        row["rollout"]["resources_id"] == "v0" && reward_of(row).is_some_and(|r| r >= 1.0)
    });
    assert!(!expected.is_empty());
    assert_eq!(rollout_ids(&served), expected, "{said}");
    let unknown = agl_host([
        "export",
        "--store",
        store.url.as_str(),
        "--format",
        "messages",
        "--resources-version",
        "v9",
    ]);
    assert_eq!(unknown.status.code(), Some(2), "{}", text(&unknown));
    assert!(stderr(&unknown).contains("--resources-version v9: no such resources in"));
}

/// The tool agent's one tool, as `examples/tool-agent/src/lib.rs` offers it, in OpenAI's shape.
fn lookup_capital() -> Value {
    serde_json::json!({"type": "function", "function": {
        "name": "lookup_capital",
        "description": "The capital city of a country.",
        "parameters": {"type": "object", "properties": {"country": {"type": "string"}}, "required": ["country"]}
    }})
}

#[test]
fn a_tool_using_run_exports_the_tools_offered_with_the_calls_and_results() {
    // Not granted its lookup service, the agent still offers the tool, the (scripted) model still
    // calls it, and the failed lookup goes back as the tool's result: two LLM calls per attempt.
    let dir = scratch("agl-export", "tools");
    let example = repo().join("examples/tool-agent");
    let db = format!("sqlite:{}", dir.join("run.db").display());
    let run = agl_host(with_files(
        vec![
            "dev".into(),
            "--agent".into(),
            example.clone().into(),
            "--db".into(),
            db.clone().into(),
        ],
        &example,
        &[
            ("--train", "data/train.jsonl"),
            ("--resources", "initial-resources.json"),
            ("--llm-script", "rules.json"),
        ],
    ));
    assert!(run.status.success(), "{}", text(&run));

    let (triplets, said) = export(&["--db", &db, "--format", "triplets"]);
    assert_eq!(triplets.len(), 10, "two calls for each of 5 tasks: {said}");
    // What the spans recorded, by span id: the tools of each LLM call.
    let mut recorded: HashMap<String, Value> = HashMap::new();
    for rollout_id in rollout_ids(&triplets) {
        let show = agl_host(["show", "--db", db.as_str(), rollout_id.as_str(), "--json"]);
        assert!(show.status.success(), "{}", text(&show));
        let record: Value = serde_json::from_slice(&show.stdout).expect("JSON");
        for span in record["spans"].as_array().expect("spans") {
            if let Some(tools) = span["attributes"]["gen_ai.request.tools"].as_str() {
                let tools: Value = serde_json::from_str(tools).expect("recorded whole");
                recorded.insert(span["span_id"].as_str().expect("id").to_owned(), tools);
            }
        }
    }
    for line in &triplets {
        let offered = &recorded[line["span_id"].as_str().expect("span id")];
        assert_eq!(offered[0]["name"], "lookup_capital");
        let openai: Vec<Value> = offered
            .as_array()
            .expect("a list")
            .iter()
            .map(|tool| serde_json::json!({"type": "function", "function": tool}))
            .collect();
        assert_eq!(line["tools"], Value::Array(openai), "as recorded: {line}");
        assert_eq!(
            line["tools"],
            serde_json::json!([lookup_capital()]),
            "as offered: {line}"
        );
    }
    let first = triplets.iter().find(|line| line["index"] == 0).expect("a first call");
    let call = &first["tool_calls"][0];
    assert_eq!(call["type"], "function", "{first}");
    assert_eq!(call["function"]["name"], "lookup_capital", "{first}");
    let arguments: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().expect("arguments as JSON text")).expect("JSON");
    assert!(arguments["country"].is_string(), "{first}");

    let (transcripts, _) = export(&["--db", &db, "--format", "messages"]);
    assert_eq!(transcripts.len(), 5);
    for line in &transcripts {
        assert_eq!(line["tools"], serde_json::json!([lookup_capital()]), "once: {line}");
        let messages = line["messages"].as_array().expect("messages");
        let roles: Vec<&str> = messages.iter().filter_map(|m| m["role"].as_str()).collect();
        assert_eq!(roles, ["user", "assistant", "tool", "assistant"], "{line}");
        let asked = &messages[1];
        assert_eq!(asked["content"], "", "{line}");
        let call = &asked["tool_calls"][0];
        assert!(call["id"].as_str().is_some_and(|id| !id.is_empty()), "{line}");
        assert_eq!(
            (&call["type"], &call["function"]["name"]),
            (&"function".into(), &"lookup_capital".into())
        );
        assert!(call["function"]["arguments"].is_string(), "{line}");
        let answered = &messages[2];
        assert_eq!(answered["tool_call_id"], call["id"], "{line}");
        assert!(
            answered["content"].as_str().is_some_and(|c| c.starts_with("error: ")),
            "{line}"
        );
        assert!(answered.get("tool_calls").is_none(), "{line}");
    }

    // The math agent offers no tool: no "tools" field.
    let (plain, _) = export(&["--db", &kept().db_url(), "--format", "messages", "--mode", "val"]);
    assert!(!plain.is_empty());
    assert!(plain.iter().all(|line| line.get("tools").is_none()));
}

/// Writes to the store at `url` through its HTTP API, as a runner would: a finished rollout
/// (`train`) with `metadata`, whose one attempt made one LLM call (`answer`, with token ids) and
/// recorded `reward`. Its rollout and attempt ids.
pub(crate) fn finished_rollout(url: &str, metadata: &Value, answer: &str, reward: f64) -> (String, String) {
    let client = reqwest::blocking::Client::new();
    let post = |path: &str, body: &Value| -> Value {
        client
            .post(format!("{url}{path}"))
            .json(body)
            .send()
            .and_then(|r| r.error_for_status())
            .and_then(|r| r.json())
            .unwrap_or_else(|e| panic!("POST {path}: {e}"))
    };
    let started = post(
        "/v1/agl/rollouts",
        &serde_json::json!({"input": {"question": "2+2?"}, "mode": "train", "metadata": metadata}),
    );
    let rollout = started["rollout_id"].as_str().expect("rollout id").to_owned();
    let attempt = started["attempt"]["attempt_id"]
        .as_str()
        .expect("attempt id")
        .to_owned();
    let span = |id: &str, sequence: u64, name: &str, attributes: Value| {
        serde_json::json!({
            "rollout_id": rollout, "attempt_id": attempt, "sequence_id": sequence,
            "trace_id": "ab".repeat(16), "span_id": id, "parent_id": null, "name": name,
            "status": {"status_code": "OK", "description": null}, "attributes": attributes,
            "events": [], "links": [], "start_time": sequence as f64, "end_time": sequence as f64 + 0.5,
            "context": null, "parent": null, "resource": {"attributes": {}, "schema_url": ""},
        })
    };
    let call = serde_json::json!({
        "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "2+2?",
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": answer,
        "prompt_token_ids": [1, 2], "response_token_ids": [3],
    });
    let rewarded =
        serde_json::json!({"agentlightning.reward.0.name": "primary", "agentlightning.reward.0.value": reward});
    post(
        "/v1/agl/spans",
        &span("0000000000000001", 1, "openai.chat.completion", call),
    );
    post(
        "/v1/agl/spans",
        &span("0000000000000002", 2, "agentlightning.annotation", rewarded),
    );
    post(
        &format!("/v1/agl/rollouts/{rollout}/attempts/{attempt}"),
        &serde_json::json!({"status": "succeeded"}),
    );
    (rollout, attempt)
}

/// A fork's `agl.fork` metadata, as `agl-host fork` writes it.
pub(crate) fn fork_lineage(parent: &str, parent_attempt: &str, at_llm_call: u64, branch: u64, branches: u64) -> Value {
    serde_json::json!({"parent_rollout_id": parent, "parent_attempt_id": parent_attempt,
                       "at_llm_call": at_llm_call, "branch": branch, "branches": branches})
}

#[test]
fn fork_rollouts_are_left_out_unless_asked_for_and_then_carry_their_lineage() {
    let store = ServerProcess::agl_host_store(&[]);
    let (parent, parent_attempt) = finished_rollout(&store.url, &serde_json::json!({}), "5", 0.0);
    let lineage = fork_lineage(&parent, &parent_attempt, 1, 1, 1);
    let (fork, _) = finished_rollout(&store.url, &serde_json::json!({"agl.fork": lineage}), "4", 1.0);

    for format in ["triplets", "messages", "tokens"] {
        let (plain, said) = export(&["--store", &store.url, "--format", format]);
        assert_eq!(rollout_ids(&plain), HashSet::from([parent.clone()]), "{format}: {said}");
        assert!(
            plain.iter().all(|line| line.get("fork").is_none()),
            "{format}: {plain:#?}"
        );

        let (both, said) = export(&["--store", &store.url, "--format", format, "--include-forks"]);
        assert_eq!(
            rollout_ids(&both),
            HashSet::from([parent.clone(), fork.clone()]),
            "{format}: {said}"
        );
        for line in &both {
            if line["rollout_id"] == fork.as_str() {
                assert_eq!(line["fork"], lineage, "{format}: {line}");
            } else {
                assert!(line.get("fork").is_none(), "{format}: {line}");
            }
        }
    }
    let (triplets, _) = export(&["--store", &store.url, "--format", "triplets", "--include-forks"]);
    let forked = triplets
        .iter()
        .find(|l| l["rollout_id"] == fork.as_str())
        .expect("the fork's line");
    assert_eq!(
        (&forked["response"], &forked["final_reward"]),
        (&Value::from("4"), &Value::from(1.0))
    );
    let (tokens, _) = export(&[
        "--store",
        &store.url,
        "--format",
        "tokens",
        "--include-forks",
        "--min-reward",
        "1",
    ]);
    assert_eq!(
        rollout_ids(&tokens),
        HashSet::from([fork.clone()]),
        "the other filters apply to forks"
    );
    assert_eq!(tokens[0]["prompt_token_ids"], serde_json::json!([1, 2]));
    // Spans have no room for the lineage: the fork's are among the lines as they are.
    let (spans, _) = export(&["--store", &store.url, "--format", "spans", "--include-forks"]);
    assert_eq!(spans.iter().filter(|s| s["rollout_id"] == fork.as_str()).count(), 2);

    // The store's route, the same rows.
    let http = |query: &str| {
        let body = reqwest::blocking::get(format!("{}/v1/agl/export/tokens{query}", store.url))
            .and_then(|r| r.error_for_status())
            .and_then(|r| r.text())
            .expect("the export route answers");
        lines(&body)
    };
    assert_eq!(rollout_ids(&http("")), HashSet::from([parent.clone()]));
    let served = http("?include_forks=true");
    let (exported, _) = export(&["--store", &store.url, "--format", "tokens", "--include-forks"]);
    assert_eq!(served, exported);
}
