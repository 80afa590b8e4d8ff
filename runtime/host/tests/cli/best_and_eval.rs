//! A kept run's best resources (`agl-host best RUN`), named runs (`run --name`), and evaluating
//! resources on a split (`agl-host eval`): offline, with the math agent and its scripted LLM.

use serde_json::Value;
use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};

use crate::agents;
use agents::*;

/// `agl-host ARGS` in `dir`, keeping runs under `dir/.agl/runs` (no `AGL_DB`).
fn agl_host_in(dir: &Path, args: &[impl AsRef<OsStr>]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agl-host"))
        .current_dir(dir)
        .env("AGL_CACHE_DIR", cache_dir())
        .env_remove("AGL_DB")
        .env_remove("AGL_PYTHON")
        .args(args)
        .output()
        .expect("agl-host runs")
}

fn math(file: &str) -> String {
    repo().join("examples/math-agent").join(file).display().to_string()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The store modes of the task rollouts of the kept run `run` (`agl-host show RUN --json`).
fn rollout_modes(dir: &Path, run: &str) -> Vec<String> {
    let show = agl_host_in(dir, &["show", run, "--json"]);
    assert!(show.status.success(), "{}", text(&show));
    let json: Value = serde_json::from_slice(&show.stdout).expect("show --json is JSON");
    json["rollouts"]
        .as_array()
        .expect("rollouts")
        .iter()
        .filter_map(|row| row.pointer("/rollout/mode").or_else(|| row.get("mode")))
        .filter_map(|mode| mode.as_str().map(str::to_owned))
        .collect()
}

#[test]
fn the_best_of_a_named_run_is_evaluated_on_a_split_of_its_own() {
    let dir = scratch("agl-best", "apo");
    let out = dir.join("results.json");
    let mut args = apo_args(&repo().join("examples/math-agent"), &out);
    args.extend(["--name".into(), "apo seed 42".into(), "--no-progress".into()]);
    let run = agl_host_in(&dir, &args);
    assert!(run.status.success(), "{}", text(&run));
    let results = read_results(&out);
    let run_id = results["run_id"].as_str().expect("a run id").to_owned();
    assert_eq!(results["name"], "apo seed 42", "the results name the run");
    assert_eq!(results["best"]["score"], 1.0, "{results:#}");
    assert!(stdout(&run).contains("run name apo seed 42"), "{}", text(&run));

    // `best RUN`: the resources the results name as best, as JSON, by id and by name alike.
    let best = agl_host_in(&dir, &["best", &run_id]);
    assert!(best.status.success(), "{}", text(&best));
    let printed: Value = serde_json::from_slice(&best.stdout).expect("best prints JSON");
    assert_eq!(printed, results["best"]["resources"], "the best version's resources");
    let seed: Value =
        serde_json::from_str(&std::fs::read_to_string(math("apo/seed-resources.json")).expect("seed")).expect("json");
    assert_ne!(printed, seed, "APO improved on the seed prompt");
    let by_name = agl_host_in(&dir, &["best", "apo seed 42"]);
    assert!(by_name.status.success(), "{}", text(&by_name));
    assert_eq!(by_name.stdout, best.stdout, "a run's name stands for its id");
    let best_json = dir.join("best.json");
    std::fs::write(&best_json, &best.stdout).expect("best.json");

    // `runs` has a name column.
    let runs = agl_host_in(&dir, &["runs"]);
    assert!(runs.status.success(), "{}", text(&runs));
    let header = stdout(&runs).lines().next().unwrap_or_default().to_owned();
    assert!(header.contains("name"), "{}", stdout(&runs));
    assert!(stdout(&runs).contains("apo seed 42"), "{}", stdout(&runs));

    // `eval --resources best.json` on a split file of its own: the split is named after the file,
    // its rollouts are test rollouts, and the best prompt scores what it scored in the run.
    let holdout = dir.join("holdout.jsonl");
    std::fs::copy(math("data/val.jsonl"), &holdout).expect("holdout split");
    let eval_out = dir.join("eval.json");
    let eval = agl_host_in(
        &dir,
        &[
            "eval",
            "--agent",
            &math(""),
            "--resources",
            &best_json.display().to_string(),
            "--data",
            &holdout.display().to_string(),
            "--llm-script",
            &math("apo/rules.json"),
            "--no-progress",
            "--output",
            &eval_out.display().to_string(),
        ],
    );
    assert!(eval.status.success(), "{}", text(&eval));
    let evaluated = read_results(&eval_out);
    let splits = evaluated["splits"].as_object().expect("splits");
    assert_eq!(splits.keys().collect::<Vec<_>>(), ["holdout"], "{evaluated:#}");
    assert_eq!(evaluated["splits"]["holdout"]["rollouts"], 8, "{evaluated:#}");
    assert_eq!(evaluated["splits"]["holdout"]["mean_reward"], 1.0, "{evaluated:#}");
    assert_eq!(evaluated["algorithm"], "baseline");
    let summary = stdout(&eval);
    assert!(summary.contains("holdout") && !summary.contains("train"), "{summary}");
    assert!(stderr(&eval).contains("8 holdout tasks"), "{}", text(&eval));
    let eval_id = evaluated["run_id"].as_str().expect("the eval is kept").to_owned();
    let modes = rollout_modes(&dir, &eval_id);
    assert_eq!(modes.len(), 8, "{modes:?}");
    assert!(modes.iter().all(|mode| mode == "test"), "{modes:?}");

    // `eval --run NAME --split NAME`: the same resources, taken from the kept run.
    let from_run_out = dir.join("eval-run.json");
    let from_run = agl_host_in(
        &dir,
        &[
            "eval",
            "--agent",
            &math(""),
            "--run",
            "apo seed 42",
            "--data",
            &math("data/val.jsonl"),
            "--split",
            "val again",
            "--llm-script",
            &math("apo/rules.json"),
            "--no-progress",
            "--output",
            &from_run_out.display().to_string(),
        ],
    );
    assert!(from_run.status.success(), "{}", text(&from_run));
    let from_run = read_results(&from_run_out);
    assert_eq!(from_run["splits"]["val again"]["mean_reward"], 1.0, "{from_run:#}");
}

#[test]
fn best_says_why_there_is_none() {
    let dir = scratch("agl-best", "none");
    let unknown = agl_host_in(&dir, &["best", "run-19990101"]);
    assert_eq!(unknown.status.code(), Some(2), "{}", text(&unknown));
    assert!(
        stderr(&unknown).contains("no kept run run-19990101"),
        "{}",
        text(&unknown)
    );

    // A baseline run with no resources: its best score names no resources version.
    let out = dir.join("results.json");
    let run = agl_host_in(
        &dir,
        &baseline_run_args(
            &repo().join("examples/math-agent"),
            Path::new(&math("data/val.jsonl")),
            &out,
            &[],
        ),
    );
    let run_id = read_results(&out)["run_id"].as_str().expect("a run id").to_owned();
    let best = agl_host_in(&dir, &["best", &run_id]);
    assert_eq!(best.status.code(), Some(2), "{}\n{}", text(&run), text(&best));
    assert!(
        stderr(&best).contains(&format!("run {run_id} has no best resources yet")),
        "{}",
        text(&best)
    );
    assert!(best.stdout.is_empty(), "nothing on stdout: {}", text(&best));
    let version = agl_host_in(&dir, &["best", &run_id, "--version", "rs-nope"]);
    assert_eq!(version.status.code(), Some(2), "{}", text(&version));
    assert!(
        stderr(&version).contains("has no resources version rs-nope"),
        "{}",
        text(&version)
    );
}

#[test]
fn a_run_name_must_be_printable_and_short() {
    let dir = scratch("agl-best", "names");
    for bad in ["evil\u{1b}]0;pwned\u{7}", "two\nlines", &"n".repeat(65)] {
        let mut args = baseline_run_args(
            &repo().join("examples/math-agent"),
            Path::new(&math("data/val.jsonl")),
            &dir.join("r.json"),
            &[],
        );
        args.extend(["--name".to_owned(), bad.to_owned()]);
        let run = agl_host_in(&dir, &args);
        assert_eq!(run.status.code(), Some(2), "{bad:?}: {}", text(&run));
        assert!(stderr(&run).contains("--name"), "{}", text(&run));
        assert!(!dir.join(".agl").exists(), "a refused run keeps nothing");
    }
}
