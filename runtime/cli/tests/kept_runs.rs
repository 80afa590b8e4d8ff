//! Runs that are kept: `agl-host run` keeps each run in an SQLite database of its own under
//! `.agl/runs/` of the working directory (the run id printed at the start and written in the
//! results), `--db` names another store, and a store that keeps a run refuses a second one.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};

mod agents;
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
