//! Runs that are kept: `agl-host run` keeps each run in an SQLite database of its own under
//! `.agl/runs/` of the working directory (the run id printed at the start and written in the
//! results), `--db` names another store, and a store that keeps a run refuses a second one.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use crate::agents;
use agents::*;

/// `agl-host ARGS` in `dir`, with no `AGL_DB` from the environment.
fn agl_host_in(dir: &Path, args: &[impl AsRef<OsStr>]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agl-host"))
        .current_dir(dir)
        .env("AGL_CACHE_DIR", cache_dir())
        .env_remove("AGL_DB")
        .args(args)
        .output()
        .expect("agl-host runs")
}

fn rust_math_agent() -> std::path::PathBuf {
    repo().join("examples/math-agent")
}

#[test]
fn a_run_is_kept_in_its_own_sqlite_database_under_dot_agl_by_default() {
    let dir = scratch("agl-kept", "default");
    let out = dir.join("results.json");
    let run = agl_host_in(&dir, &apo_args(&rust_math_agent(), &out));
    assert!(run.status.success(), "{}", text(&run));
    let results = read_results(&out);
    let run_id = results["run_id"].as_str().expect("a run id").to_owned();
    assert!(run_id.starts_with("run-"), "{run_id}");
    let db = dir.join(".agl/runs").join(format!("{run_id}.db"));
    assert!(db.is_file(), "{} is missing", db.display());
    assert_eq!(results["db"], format!(".agl/runs/{run_id}.db"));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains(&format!("run {run_id} · kept in .agl/runs/{run_id}.db")),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains(&format!("agl-host show {run_id}")), "{stdout}");
    // The same result as in memory: APO finds the prompt that scores 1.0 on val.
    assert_eq!(results["best"]["score"], 1.0, "{results:#}");
    assert_eq!(results["total"]["rollouts"], 256, "{results:#}");
    // The write-ahead log was folded into the database at the end.
    let wal = dir.join(".agl/runs").join(format!("{run_id}.db-wal"));
    assert!(std::fs::metadata(&wal).map_or(0, |m| m.len()) == 0, "{}", wal.display());
}

#[test]
fn db_names_the_store_and_a_store_keeps_one_run() {
    let dir = scratch("agl-kept", "named");
    let out = dir.join("results.json");
    let mut args = apo_args(&rust_math_agent(), &out);
    args.extend(["--db".into(), "sqlite:named/run.db".into()]);
    let first = agl_host_in(&dir, &args);
    assert!(first.status.success(), "{}", text(&first));
    assert!(dir.join("named/run.db").is_file());
    assert!(!dir.join(".agl").exists(), "--db: nothing under .agl");
    let run_id = read_results(&out)["run_id"].as_str().expect("run id").to_owned();

    let second = agl_host_in(&dir, &args);
    assert_eq!(second.status.code(), Some(2), "{}", text(&second));
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(
        stderr.contains(&format!("sqlite:named/run.db already keeps run {run_id} (completed")),
        "{stderr}"
    );

    // AGL_DB=memory keeps nothing.
    let memory = Command::new(env!("CARGO_BIN_EXE_agl-host"))
        .current_dir(&dir)
        .env("AGL_CACHE_DIR", cache_dir())
        .env("AGL_DB", "memory")
        .args(apo_args(&rust_math_agent(), &dir.join("memory.json")))
        .output()
        .expect("runs");
    assert!(memory.status.success(), "{}", text(&memory));
    assert!(String::from_utf8_lossy(&memory.stderr).contains("kept in memory only"));
    assert!(read_results(&dir.join("memory.json"))["db"].is_null());
    assert!(!dir.join(".agl").exists());
}

#[test]
fn bad_store_urls_and_files_are_one_clear_error() {
    let dir = scratch("agl-kept", "bad");
    let out = dir.join("results.json");
    let mut args = apo_args(&rust_math_agent(), &out);
    args.extend(["--db".into(), "mysql://root:hunter2@db/agl".into()]);
    let run = agl_host_in(&dir, &args);
    assert_eq!(run.status.code(), Some(2), "{}", text(&run));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("sqlite:PATH") && !stderr.contains("hunter2"),
        "{stderr}"
    );

    std::fs::write(dir.join("junk.db"), "not a database, only text long enough to be read").unwrap();
    let mut args = apo_args(&rust_math_agent(), &out);
    args.extend(["--db".into(), "sqlite:junk.db".into()]);
    let run = agl_host_in(&dir, &args);
    assert_eq!(run.status.code(), Some(2), "{}", text(&run));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("junk.db") && stderr.contains("not a database"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// The README's APO run of the math agent against an LLM served here (the APO rules, each answer
/// `delay` late, so that a run can be stopped half-way), results into `out`.
fn apo_over_http(llm_url: &str, out: &Path) -> Vec<std::ffi::OsString> {
    let mut args = apo_args(&rust_math_agent(), out);
    // The scripted LLM's rules are served over HTTP instead of read by agl-host.
    let at = args
        .iter()
        .position(|a| a == "--llm-script")
        .expect("apo_args has --llm-script");
    args.drain(at..at + 2);
    args.extend([
        "--llm-endpoint".into(),
        llm_url.into(),
        "--llm-model".into(),
        "scripted".into(),
    ]);
    args
}

/// The answers a run's results must agree on: what APO found and how every split scored.
fn outcome(results: &serde_json::Value) -> serde_json::Value {
    let splits: serde_json::Map<String, serde_json::Value> = results["splits"]
        .as_object()
        .expect("splits")
        .iter()
        .map(|(name, split)| {
            (
                name.clone(),
                serde_json::json!([split["rollouts"], split["succeeded"], split["mean_reward"]]),
            )
        })
        .collect();
    serde_json::json!({
        "best_score": results["best"]["score"],
        "best_resources": results["best"]["resources"],
        "splits": splits,
    })
}

#[test]
fn a_run_killed_half_way_resumes_to_the_result_of_an_uninterrupted_run() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let rules = agl_llm::ScriptedBackend::from_file(repo().join("examples/math-agent/apo/rules.json")).expect("rules");
    let server = runtime
        .block_on(agl_testkit::llm_server::serve_with_faults(
            std::sync::Arc::new(rules),
            "127.0.0.1:0".parse().expect("address"),
            agl_testkit::llm_server::Faults::default().with_delay(std::time::Duration::from_millis(15)),
        ))
        .expect("the LLM serves");
    let llm = server.base_url();

    // The run as it goes when nothing stops it.
    let whole = scratch("agl-kept", "resume-whole");
    let run = agl_host_in(&whole, &apo_over_http(&llm, &whole.join("results.json")));
    assert!(run.status.success(), "{}", text(&run));
    let expected = outcome(&read_results(&whole.join("results.json")));

    // The same run, killed (SIGKILL) while it validates the seed prompt.
    let dir = scratch("agl-kept", "resume-killed");
    let out = dir.join("results.json");
    // A little into the seed prompt's validation: rollouts are running (each waits on the LLM).
    let (run_id, seen) = kill_at(
        &dir,
        &apo_over_http(&llm, &out),
        "apo: optimising",
        Duration::from_millis(400),
    );
    assert!(!out.exists(), "killed before the end: {seen}");

    // Resumed from elsewhere, with nothing but the run: its own flags and directory are used.
    let elsewhere = scratch("agl-kept", "resume-elsewhere");
    let db = dir.join(".agl/runs").join(format!("{run_id}.db"));
    let (stderr, stdout) = resume(&elsewhere, &db, &run_id);
    eprintln!("killed after:\n{seen}\nresumed:\n{stderr}\n{stdout}");
    let results = read_results(&out);
    assert_eq!(results["run_id"], run_id.as_str());
    assert_eq!(outcome(&results), expected, "resumed: {results:#}");

    // A finished run is not resumed again.
    let again = agl_host_in(&elsewhere, &["run".as_ref(), "--resume".as_ref(), db.as_os_str()]);
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    assert!(String::from_utf8_lossy(&again.stderr).contains("has status completed"));
    drop(server);
}

/// What a GEPA run's results must agree on: the host's best and splits, and GEPA's whole summary
/// but its report (candidates, lineage, front, budget, skips).
fn gepa_outcome(results: &serde_json::Value) -> serde_json::Value {
    let mut summary = results["algorithm_summary"].clone();
    if let Some(summary) = summary.as_object_mut() {
        summary.remove("report");
    }
    serde_json::json!({"outcome": outcome(results), "summary": summary})
}

#[test]
fn a_gepa_run_killed_half_way_resumes_to_the_result_of_an_uninterrupted_run() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let rules =
        agl_llm::ScriptedBackend::from_file(repo().join("examples/gepa-two-prompts/rules.json")).expect("rules");
    let server = runtime
        .block_on(agl_testkit::llm_server::serve_with_faults(
            std::sync::Arc::new(rules),
            "127.0.0.1:0".parse().expect("address"),
            agl_testkit::llm_server::Faults::default().with_delay(std::time::Duration::from_millis(30)),
        ))
        .expect("the LLM serves");
    let llm: Vec<std::ffi::OsString> = vec![
        "--llm-endpoint".into(),
        server.base_url().into(),
        "--llm-model".into(),
        "scripted".into(),
    ];

    // The run as it goes when nothing stops it: two mutations from the seed, then their merge.
    let whole = scratch("agl-kept", "gepa-whole");
    let run = agl_host_in(
        &whole,
        &crate::gepa::two_prompts_args(&whole.join("results.json"), &llm),
    );
    assert!(run.status.success(), "{}", text(&run));
    let expected = gepa_outcome(&read_results(&whole.join("results.json")));
    assert_eq!(expected["summary"]["best"]["score"], 1.0, "{expected:#}");

    // The same run, killed (SIGKILL) once the first mutation was accepted: its val run, the
    // second mutation and the merge are still to come.
    let dir = scratch("agl-kept", "gepa-killed");
    let out = dir.join("results.json");
    let (run_id, seen) = kill_at(
        &dir,
        &crate::gepa::two_prompts_args(&out, &llm),
        "gepa: iteration 1:",
        Duration::ZERO,
    );
    assert!(!out.exists(), "killed before the end: {seen}");
    assert!(
        seen.contains("iteration 1: v1"),
        "killed after the first mutation: {seen}"
    );
    assert!(!seen.contains("merge"), "killed before the merge: {seen}");

    // Resumed from elsewhere, with nothing but the run.
    let elsewhere = scratch("agl-kept", "gepa-elsewhere");
    let db = dir.join(".agl/runs").join(format!("{run_id}.db"));
    resume(&elsewhere, &db, &run_id);
    let results = read_results(&out);
    assert_eq!(results["run_id"], run_id.as_str());
    assert_eq!(gepa_outcome(&results), expected, "resumed: {results:#}");
    drop(server);
}

/// Starts `agl-host ARGS` in `dir`, reads its stderr until a line holds `marker`, waits `settle`,
/// then kills it (SIGKILL): the run's id and the stderr seen.
fn kill_at(dir: &Path, args: &[std::ffi::OsString], marker: &str, settle: Duration) -> (String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agl-host"))
        .current_dir(dir)
        .env("AGL_CACHE_DIR", cache_dir())
        .env_remove("AGL_DB")
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("agl-host starts");
    let stderr = child.stderr.take().expect("piped stderr");
    let mut seen = String::new();
    let mut run_id = None;
    for line in std::io::BufRead::lines(std::io::BufReader::new(stderr)) {
        let line = line.expect("stderr line");
        seen.push_str(&line);
        seen.push('\n');
        if let Some(rest) = line.strip_prefix("run ") {
            run_id = rest.split(' ').next().map(str::to_owned);
        }
        if line.contains(marker) {
            break;
        }
    }
    std::thread::sleep(settle);
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    let run_id = run_id.unwrap_or_else(|| panic!("no run id printed:\n{seen}"));
    (run_id, seen)
}

/// `agl-host run --resume DB` from `elsewhere`, which must resume `run_id` with rollouts still to
/// run: its stderr and stdout.
fn resume(elsewhere: &Path, db: &Path, run_id: &str) -> (String, String) {
    let resumed = agl_host_in(elsewhere, &["run".as_ref(), "--resume".as_ref(), db.as_os_str()]);
    assert!(resumed.status.success(), "{}", text(&resumed));
    let stderr = String::from_utf8_lossy(&resumed.stderr).into_owned();
    assert!(stderr.contains(&format!("resuming run {run_id}:")), "{stderr}");
    let stdout = String::from_utf8_lossy(&resumed.stdout).into_owned();
    assert!(
        stdout.contains("resumed: ") && !stdout.contains("resumed: 0 rollout"),
        "{stdout}"
    );
    (stderr, stdout)
}
