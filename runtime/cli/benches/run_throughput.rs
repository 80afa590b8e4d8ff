//! Rollouts per second of `agl-host run`: the real binary, a trivial Rust agent (the probe's
//! `noop`: an instance, one call, a reward), the baseline plugin enqueueing every task, the
//! scripted LLM backend, the in-memory store; 1 and 2 runners. The figure is the binary's own
//! `rollouts_per_second` (rollouts finished / time from the first enqueue to the end; component
//! loading excluded), median of the repetitions.
//!
//! Run: `cargo bench -p agl-host --bench run_throughput` (`-- --quick` for a smoke run).

use std::path::{Path, PathBuf};
use std::process::Command;

fn rollouts_per_second(agent: &Path, algo: &Path, train: &Path, rules: &Path, runners: u32, out: &Path) -> f64 {
    let output = Command::new(env!("CARGO_BIN_EXE_agl-host"))
        .args(["run", "--no-progress", "--runners", &runners.to_string()])
        .arg("--agent")
        .arg(agent)
        .arg("--algo")
        .arg(algo)
        .arg("--train")
        .arg(train)
        .arg("--llm-script")
        .arg(rules)
        .arg("--output")
        .arg(out)
        .output()
        .expect("agl-host runs");
    assert!(
        output.status.success(),
        "agl-host failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out).expect("results")).expect("results JSON");
    assert_eq!(results["total"]["failed"], 0, "{results:#}");
    results["rollouts_per_second"].as_f64().expect("a number")
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (tasks, repetitions) = if quick { (2_000, 1) } else { (50_000, 3) };
    let agent = agl_guest_build::build_guest("tests/guests/probe").expect("probe builds");
    let algo = agl_guest_build::build_guest("plugins/baseline").expect("baseline builds");
    let dir: PathBuf = std::env::temp_dir().join(format!("agl-run-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let train = dir.join("train.jsonl");
    std::fs::write(&train, "{\"do\":\"noop\"}\n".repeat(tasks)).expect("dataset");
    let rules = agl_guest_build::repo_root().join("examples/math-agent/rules.json");
    let out = dir.join("results.json");
    println!(
        "agl-host run: {tasks} trivial rollouts (probe noop, baseline plugin, scripted LLM), median of {repetitions}"
    );
    for runners in [1, 2] {
        let mut rates: Vec<f64> = (0..repetitions)
            .map(|_| rollouts_per_second(&agent, &algo, &train, &rules, runners, &out))
            .collect();
        rates.sort_by(f64::total_cmp);
        let median = rates[rates.len() / 2];
        println!("  {runners} runner(s): {median:>9.0} rollouts/s   (runs: {rates:.0?})");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
