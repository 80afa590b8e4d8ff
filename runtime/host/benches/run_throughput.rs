//! Rollouts per second of `agl-host run` with a trivial agent in each guest language: the real
//! binary, the probe's `noop` (a fresh sandboxed instance, one call, a reward) written in Rust
//! (`tests/guests/probe`), Python (`tests/guests/probe-py`, componentize-py) and JavaScript
//! (`tests/guests/probe-js`, componentize-js), the baseline plugin enqueueing every task, the
//! scripted LLM backend, the in-memory store (`--db memory`: the runtime's own overhead, not the
//! database's); 1 and 2 runners. The figure is the binary's own
//! `rollouts_per_second` (rollouts finished / time from the first enqueue to the end; component
//! loading excluded), median of the repetitions. Beside the Python probe, the ceiling of a Python
//! agent: `tests/guests/noop-py-bindings`, a componentize-py component with no SDK whose rollout
//! returns at once.
//!
//! The anchor, in the same run: Agent-lightning 0.3.0's own unsandboxed Python runner with a
//! trivial agent (`agl_python_runner.py`, in the venv the Python client tests make under
//! `target/py/agl-0.3`) as `Trainer()` runs it by default — the client-server strategy, one
//! runner process; each language's figure is also given as a multiple of it. Its shared-memory
//! strategy (one runner only) is measured too, for reference.
//!
//! Run: `cargo bench -p agl-host --bench run_throughput` (`-- --quick` for a smoke run: the Rust
//! agent only, no anchor; `-- --languages` to leave Rust out; `-- --recording` for recording's
//! cost alone: the Rust agent with and without `--no-record`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a benchmark: a failed step panics and ends it"
)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// A guest of the benchmark: its name and folder.
struct Agent {
    language: &'static str,
    folder: &'static str,
    /// Trivial rollouts per repetition (sized so that one run takes a few seconds).
    tasks: usize,
}

const AGENTS: &[Agent] = &[
    Agent {
        language: "Rust",
        folder: "tests/guests/probe",
        tasks: 50_000,
    },
    Agent {
        language: "Python",
        folder: "tests/guests/probe-py",
        tasks: 3_000,
    },
    Agent {
        language: "Python, no SDK (the ceiling)",
        folder: "tests/guests/noop-py-bindings",
        tasks: 3_000,
    },
    Agent {
        language: "JavaScript",
        folder: "tests/guests/probe-js",
        tasks: 5_000,
    },
];

/// The cache the CLI's tests use too: guest folders and compiled components are shared.
fn cache_dir() -> PathBuf {
    agl_guest_build::repo_root().join("target").join("agl-cache-tests")
}

fn rollouts_per_second(agent: &Path, algo: &Path, train: &Path, rules: &Path, runners: u32, out: &Path) -> f64 {
    rollouts_per_second_with(agent, algo, train, rules, runners, out, &[])
}

/// [`rollouts_per_second`] with `extra` flags for `run` (e.g. `--no-record`).
fn rollouts_per_second_with(
    agent: &Path,
    algo: &Path,
    train: &Path,
    rules: &Path,
    runners: u32,
    out: &Path,
    extra: &[&str],
) -> f64 {
    let output = Command::new(env!("CARGO_BIN_EXE_agl-host"))
        .args([
            "run",
            "--no-progress",
            "--db",
            "memory",
            "--runners",
            &runners.to_string(),
        ])
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
        .args(extra)
        .env("AGL_CACHE_DIR", cache_dir())
        .env_remove("RUST_BACKTRACE")
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

/// Agent-lightning 0.3.0's runner with a trivial agent under `strategy` (`cs`: client-server,
/// `Trainer()`'s default; `shm`: shared memory): its median rollouts/s, when its venv exists.
fn anchor(strategy: &str, repetitions: usize) -> Option<f64> {
    let root = agl_guest_build::repo_root();
    let python = common::anchor_python()?;
    let output = Command::new(&python)
        .arg(root.join("runtime/host/benches/agl_python_runner.py"))
        .args(["--repeat", &repetitions.to_string(), "--strategy", strategy])
        // AgentOps writes agentops.log into the current directory.
        .current_dir(std::env::temp_dir())
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        println!(
            "anchor ({strategy}): failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        return None;
    }
    for line in stdout.lines() {
        println!("  anchor ({strategy}): {line}");
    }
    stdout
        .lines()
        .rev()
        .find_map(|line| line.strip_prefix("anchor_rollouts_per_second "))
        .and_then(|value| value.trim().parse().ok())
}

fn median(mut rates: Vec<f64>) -> f64 {
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

/// What recording costs `agl-host run`: the Rust probe's trivial rollouts with recording (the
/// default) and with `--no-record`, in alternating runs; the medians and the median of the
/// per-pair ratios.
fn recording_cost(quick: bool, algo: &Path, rules: &Path, dir: &Path) {
    let (tasks, pairs) = if quick { (2_000, 1) } else { (20_000, 7) };
    let train = dir.join("train-recording.jsonl");
    std::fs::write(&train, "{\"do\":\"noop\"}\n".repeat(tasks)).expect("dataset");
    let probe = agl_guest_build::build_guest("tests/guests/probe").expect("probe builds");
    let out = dir.join("results-recording.json");
    rollouts_per_second(&probe, algo, &train, rules, 1, &out); // fills the compile cache
    let (mut on, mut off, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..pairs {
        let without = rollouts_per_second_with(&probe, algo, &train, rules, 1, &out, &["--no-record"]);
        let with = rollouts_per_second(&probe, algo, &train, rules, 1, &out);
        ratios.push(with / without);
        on.push(with);
        off.push(without);
    }
    println!("recording's cost: the Rust probe's noop, {tasks} tasks, 1 runner, {pairs} alternating pairs");
    println!("| recording | rollouts/s (median) | runs |");
    println!("|---|---:|---|");
    println!("| off (`--no-record`) | {:.0} | {off:.0?} |", median(off.clone()));
    println!("| on (the default) | {:.0} | {on:.0?} |", median(on.clone()));
    println!(
        "on ÷ off, median of the pairs: {:.3} ({ratios:.3?})",
        median(ratios.clone())
    );
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let languages_only = std::env::args().any(|a| a == "--languages");
    if std::env::args().any(|a| a == "--recording") || quick {
        let algo = agl_guest_build::build_guest("plugins/baseline").expect("baseline builds");
        let dir = std::env::temp_dir().join(format!("agl-run-bench-rec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        recording_cost(
            quick,
            &algo,
            &agl_guest_build::repo_root().join("examples/math-agent/rules.json"),
            &dir,
        );
        let _ = std::fs::remove_dir_all(&dir);
        if !quick {
            return;
        }
    }
    let repetitions = if quick { 1 } else { 3 };
    let algo = agl_guest_build::build_guest("plugins/baseline").expect("baseline builds");
    let root = agl_guest_build::repo_root();
    let dir: PathBuf = std::env::temp_dir().join(format!("agl-run-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let rules = root.join("examples/math-agent/rules.json");
    let out = dir.join("results.json");
    let (anchor, shared_memory) = if quick {
        (None, None)
    } else {
        (anchor("cs", repetitions), anchor("shm", repetitions))
    };
    println!("agl-host run: trivial rollouts (probe noop, baseline plugin, scripted LLM), median of {repetitions}");
    println!("| agent | runners | rollouts/s | runs | × anchor |");
    println!("|---|---:|---:|---|---:|");
    for agent in AGENTS {
        if (quick && agent.language != "Rust") || (languages_only && agent.language == "Rust") {
            continue;
        }
        let tasks = if quick { 2_000 } else { agent.tasks };
        let train = dir.join("train.jsonl");
        std::fs::write(&train, "{\"do\":\"noop\"}\n".repeat(tasks)).expect("dataset");
        // The Rust probe is built like every repository guest; the others from their folders
        // (into the shared cache, by the binary itself).
        let component = if agent.language == "Rust" {
            agl_guest_build::build_guest(agent.folder).expect("probe builds")
        } else {
            root.join(agent.folder)
        };
        // One untimed run: builds the folder and fills the compile cache.
        rollouts_per_second(&component, &algo, &train, &rules, 1, &out);
        for runners in [1, 2] {
            let rates: Vec<f64> = (0..repetitions)
                .map(|_| rollouts_per_second(&component, &algo, &train, &rules, runners, &out))
                .collect();
            let rate = median(rates.clone());
            let times = anchor.map_or_else(|| "–".to_owned(), |a| format!("{:.0}×", rate / a));
            println!(
                "| {} ({tasks} tasks) | {runners} | {rate:.0} | {rates:.0?} | {times} |",
                agent.language
            );
        }
    }
    if let Some(anchor) = anchor {
        println!(
            "| Agent-lightning 0.3.0, `Trainer()` default (client-server), unsandboxed | 1 | {anchor:.0} | | 1× |"
        );
    }
    if let (Some(anchor), Some(shm)) = (anchor, shared_memory) {
        println!(
            "| Agent-lightning 0.3.0, shared memory, unsandboxed | 1 | {shm:.0} | | {:.1}× |",
            shm / anchor
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
