//! Agents in flight under LLM latency: rollouts per second and peak memory of `agl-host run` when
//! every LLM call takes 1 s, the regime real agents live in. The real binary (release), the math
//! agent in Rust (`examples/math-agent`), Python (`examples/math-agent-py`) and JavaScript
//! (`examples/math-agent-js`), the baseline plugin enqueueing every task, the in-memory store
//! (`--db memory`), `--runners N` (N agents in flight), each agent's one LLM call going over HTTP
//! to a mock OpenAI server in this process (the math example's scripted rules behind
//! `agl_testkit::llm_server::serve_with_faults`, every answer 1 s late). The ideal rate is N / 1 s.
//!
//! Per configuration and repetition, two runs: R rounds (R × N tasks) and 3R. From each, the
//! binary's own `rollouts_per_second` (finished rollouts / time from the first enqueue to the
//! end; loading excluded) and the peak memory of its whole process tree: RSS (the sum of VmRSS
//! over the process and its descendants, sampled every 20 ms), which counts a page of a
//! component's heap image once per instance mapping it, and PSS (the sum of `smaps_rollup`'s
//! Pss, every 0.5 s), which divides each shared page among its mappings: what the machine pays.
//! The steady rate is the rate of the 2R rounds the long run adds: (3R − R) × N rollouts over the
//! difference of the two runs' times, which leaves out what only the first rollouts pay (each of
//! the N pooled instance slots is cold once). Medians of the repetitions.
//!
//! The anchor, in the same run when its venv exists (`target/py/agl-0.3`, made by `cargo test -p
//! agl-host --test cli python_client`): Agent-lightning 0.3.0's `Trainer(n_runners=N)` with a Python
//! agent calling the same mock server through the `openai` client
//! (`agl_python_runner.py --llm URL`), 10 and 50 runners.
//!
//! Run: `cargo bench -p agl-host --bench in_flight` (`-- --quick`: a smoke run, 64 Rust agents
//! in flight, no anchor; `-- --only rust|python|js` and `-- --in-flight N` for one configuration;
//! `-- --rounds R`, 4 by default; `-- --repeat N` repetitions, 3 by default; `-- --no-anchor`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a benchmark: a failed step panics and ends it"
)]

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Every LLM answer's latency.
const LLM_LATENCY: Duration = Duration::from_secs(1);
/// How often the process tree's memory is sampled.
const SAMPLE_EVERY: Duration = Duration::from_millis(20);
/// The long run of a repetition has this many times the short run's rounds.
const LONG_RUN: u32 = 3;

/// One repetition of a configuration: (rollouts/s, peak memory) of the short run and, but in a
/// quick run, of the long one.
struct Repetition {
    short: (f64, Peak),
    long: Option<(f64, Peak)>,
}

impl Repetition {
    /// The rate of the rollouts the long run adds to the short one (the short run's rate when
    /// there is no long run). Both runs' rollouts are rounds × N, so the rates' ratio says it.
    fn steady_rate(&self) -> f64 {
        let (short, _) = self.short;
        match self.long {
            None => short,
            Some((long, _)) => {
                let extra = f64::from(LONG_RUN - 1);
                extra / (f64::from(LONG_RUN) / long - 1.0 / short)
            }
        }
    }
}

/// One configuration of the benchmark.
struct Setup {
    language: &'static str,
    /// The agent's folder (built into the shared cache by the binary).
    folder: &'static str,
    in_flight: u32,
    /// The goal for this configuration: rollouts/s and peak GB.
    goal: (f64, f64),
}

const SETUPS: &[Setup] = &[
    Setup {
        language: "rust",
        folder: "examples/math-agent",
        in_flight: 1_000,
        goal: (800.0, 1.0),
    },
    Setup {
        language: "rust",
        folder: "examples/math-agent",
        in_flight: 4_096,
        goal: (3_200.0, 1.0),
    },
    Setup {
        language: "js",
        folder: "examples/math-agent-js",
        in_flight: 1_000,
        goal: (900.0, 1.5),
    },
    Setup {
        language: "python",
        folder: "examples/math-agent-py",
        in_flight: 100,
        goal: (80.0, 2.5),
    },
    Setup {
        language: "python",
        folder: "examples/math-agent-py",
        in_flight: 1_000,
        goal: (800.0, 2.5),
    },
];

/// The cache the CLI's tests use too: guest folders and compiled components are shared.
fn cache_dir() -> PathBuf {
    agl_guest_build::repo_root().join("target").join("agl-cache-tests")
}

/// The mock OpenAI server: the math example's rules, every answer [`LLM_LATENCY`] late, on a
/// thread of its own with a multi-threaded runtime. Its address; it lives as long as the process.
fn start_mock_llm(rules: &Path) -> SocketAddr {
    let backend = agl_llm::ScriptedBackend::from_file(rules).expect("the math example's rules");
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        runtime.block_on(async move {
            let faults = agl_testkit::llm_server::Faults::default().with_delay(LLM_LATENCY);
            let server = agl_testkit::llm_server::serve_with_faults(
                Arc::new(backend),
                "127.0.0.1:0".parse().expect("addr"),
                faults,
            )
            .await
            .expect("the mock LLM binds");
            sender.send(server.local_addr()).expect("the bench waits");
            std::future::pending::<()>().await;
            drop(server);
        });
    });
    receiver.recv().expect("the mock LLM starts")
}

/// `pid` and all its descendants.
fn process_tree(pid: u32) -> Vec<u32> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    for entry in entries.flatten() {
        let Some(id) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`: the command may hold spaces and parentheses.
        let parent = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u32>().ok());
        if let Some(parent) = parent {
            parents.push((id, parent));
        }
    }
    let mut tree = vec![pid];
    let mut grew = true;
    while grew {
        grew = false;
        for (id, parent) in &parents {
            if tree.contains(parent) && !tree.contains(id) {
                tree.push(*id);
                grew = true;
            }
        }
    }
    tree
}

/// The sum over `pids` of a `Name:   N kB` field of `/proc/PID/<file>`, in bytes.
fn sum_field(pids: &[u32], file: &str, name: &str) -> u64 {
    pids.iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/{file}")).ok())
        .filter_map(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse::<u64>().ok())
        })
        .sum::<u64>()
        * 1024
}

/// Peak memory of a process tree, in bytes.
#[derive(Debug, Clone, Copy, Default)]
struct Peak {
    /// Resident set: every mapping's resident pages, so a page of the component's heap image
    /// that N instances map is counted N times.
    rss: u64,
    /// Proportional set: each resident page divided among the mappings that share it — what the
    /// tree costs the machine.
    pss: u64,
}

/// Waits for `child` while sampling its tree's memory: RSS every [`SAMPLE_EVERY`], PSS (which
/// makes the kernel walk every mapping) every 25th sample.
fn peak_until_exit(child: &mut Child) -> Peak {
    let pid = child.id();
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut peak = Peak::default();
            let mut tree = vec![pid];
            let mut sample = 0u64;
            while !done.load(Ordering::Relaxed) {
                if sample.is_multiple_of(25) {
                    tree = process_tree(pid);
                    peak.pss = peak.pss.max(sum_field(&tree, "smaps_rollup", "Pss:"));
                }
                peak.rss = peak.rss.max(sum_field(&tree, "status", "VmRSS:"));
                sample += 1;
                std::thread::sleep(SAMPLE_EVERY);
            }
            peak
        })
    };
    let status = child.wait().expect("the child runs");
    done.store(true, Ordering::Relaxed);
    let peak = sampler.join().expect("the sampler");
    assert!(status.success(), "the measured process failed: {status}");
    peak
}

/// One measured run: rollouts/s and the peak memory.
fn measure(agent: &Path, setup: &Setup, rounds: u32, llm: SocketAddr, dir: &Path) -> (f64, Peak) {
    let root = agl_guest_build::repo_root();
    let tasks = std::fs::read_to_string(root.join("examples/math-agent/data/train.jsonl")).expect("the math tasks");
    let tasks: Vec<&str> = tasks.lines().filter(|l| !l.trim().is_empty()).collect();
    let wanted = usize::try_from(setup.in_flight * rounds).expect("fits");
    let train = dir.join("train.jsonl");
    let lines: Vec<&str> = tasks.iter().copied().cycle().take(wanted).collect();
    std::fs::write(&train, lines.join("\n") + "\n").expect("the dataset");
    let out = dir.join("results.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_agl-host"))
        .args(["run", "--no-progress", "--db", "memory", "--algo", "baseline"])
        .args(["--runners", &setup.in_flight.to_string()])
        .arg("--agent")
        .arg(agent)
        .arg("--train")
        .arg(&train)
        .arg("--resources")
        .arg(root.join("examples/math-agent/initial-resources.json"))
        .args(["--llm-endpoint", &format!("http://{llm}/v1"), "--llm-model", "scripted"])
        .arg("--output")
        .arg(&out)
        .env("AGL_CACHE_DIR", cache_dir())
        .env_remove("RUST_BACKTRACE")
        .stdout(Stdio::null())
        .spawn()
        .expect("agl-host starts");
    let peak = peak_until_exit(&mut child);
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("results")).expect("results JSON");
    assert_eq!(results["total"]["failed"], 0, "failed rollouts: {results:#}");
    (results["rollouts_per_second"].as_f64().expect("a number"), peak)
}

/// Agent-lightning 0.3.0's `Trainer(n_runners=runners)` against the mock: rollouts/s and peak memory.
fn anchor(runners: u32, rounds: u32, llm: SocketAddr) -> Option<(f64, Peak)> {
    let root = agl_guest_build::repo_root();
    let python = common::anchor_python()?;
    let out = std::env::temp_dir().join(format!("agl-in-flight-anchor-{}.txt", std::process::id()));
    let mut child = Command::new(&python)
        .arg(root.join("runtime/host/benches/agl_python_runner.py"))
        .args(["--strategy", "cs", "--repeat", "1", "--tracer", "otel"])
        .args(["--runners", &runners.to_string()])
        .args(["--rollouts", &(runners * rounds).to_string()])
        .args(["--llm", &format!("http://{llm}/v1")])
        .arg("--result-file")
        .arg(&out)
        .current_dir(std::env::temp_dir())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("python starts");
    let peak = peak_until_exit(&mut child);
    let text = std::fs::read_to_string(&out).ok()?;
    let _ = std::fs::remove_file(&out);
    let rate = text
        .lines()
        .find_map(|line| line.strip_prefix("anchor_rollouts_per_second "))
        .and_then(|value| value.trim().parse().ok())?;
    Some((rate, peak))
}

fn median<T: Copy + PartialOrd>(mut values: Vec<T>) -> T {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    values[values.len() / 2]
}

fn gb(bytes: u64) -> f64 {
    bytes as f64 / 1e9
}

fn flag_value(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let only = flag_value("--only");
    let in_flight: Option<u32> = flag_value("--in-flight").map(|v| v.parse().expect("--in-flight N"));
    let rounds: u32 = flag_value("--rounds").map_or(if quick { 3 } else { 4 }, |v| v.parse().expect("--rounds R"));
    let repetitions: usize =
        flag_value("--repeat").map_or(if quick { 1 } else { 3 }, |v| v.parse().expect("--repeat N"));
    let root = agl_guest_build::repo_root();
    let llm = start_mock_llm(&root.join("examples/math-agent/rules.json"));
    let dir = std::env::temp_dir().join(format!("agl-in-flight-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    println!(
        "agl-host run, agents in flight against a mock LLM answering after {} s; median of {repetitions}",
        LLM_LATENCY.as_secs_f64()
    );
    println!(
        "| system | in flight | steady rollouts/s | % of ideal | whole run ({}R) rollouts/s | peak RSS, PSS (GB), {rounds} rounds | peak RSS, PSS (GB), {} rounds | runs (steady rollouts/s) | goal |",
        LONG_RUN,
        LONG_RUN * rounds
    );
    println!("|---|---:|---:|---:|---:|---|---|---|---|");
    let quick_setup = Setup {
        language: "rust",
        folder: "examples/math-agent",
        in_flight: 64,
        goal: (0.0, 0.0),
    };
    let setups: Vec<&Setup> = if quick {
        vec![&quick_setup]
    } else {
        SETUPS
            .iter()
            .filter(|s| only.as_deref().is_none_or(|o| o == s.language))
            .filter(|s| in_flight.is_none_or(|n| n == s.in_flight))
            .collect()
    };
    let mut built = std::collections::HashMap::new();
    for setup in setups {
        let agent = built
            .entry(setup.folder)
            .or_insert_with(|| {
                if setup.language == "rust" {
                    agl_guest_build::build_guest(setup.folder).expect("the Rust math agent builds")
                } else {
                    root.join(setup.folder)
                }
            })
            .clone();
        let runs: Vec<Repetition> = (0..repetitions)
            .map(|_| {
                let short = measure(&agent, setup, rounds, llm, &dir);
                let long = (!quick).then(|| measure(&agent, setup, LONG_RUN * rounds, llm, &dir));
                Repetition { short, long }
            })
            .collect();
        let steady = median(runs.iter().map(Repetition::steady_rate).collect());
        let whole = median(runs.iter().map(|r| r.long.map_or(r.short.0, |l| l.0)).collect());
        let peak = |of: fn(&Repetition) -> Option<Peak>| {
            let peaks: Vec<Peak> = runs.iter().filter_map(of).collect();
            if peaks.is_empty() {
                return "–".to_owned();
            }
            let rss = median(peaks.iter().map(|p| p.rss).collect());
            let pss = median(peaks.iter().map(|p| p.pss).collect());
            format!("{:.2}, {:.2}", gb(rss), gb(pss))
        };
        let shown: Vec<String> = runs.iter().map(|r| format!("{:.0}", r.steady_rate())).collect();
        let (goal_rate, goal_memory) = setup.goal;
        let goal = if goal_rate > 0.0 {
            format!("≥ {goal_rate:.0}/s, ≤ {goal_memory} GB")
        } else {
            "a smoke run".to_owned()
        };
        println!(
            "| agl-host, {} agent | {} | {steady:.0} | {:.0} % | {whole:.0} | {} | {} | {} | {goal} |",
            setup.language,
            setup.in_flight,
            100.0 * steady / f64::from(setup.in_flight),
            peak(|r| Some(r.short.1)),
            peak(|r| r.long.map(|l| l.1)),
            shown.join(", "),
        );
    }
    if !quick && only.is_none() && !std::env::args().any(|a| a == "--no-anchor") {
        for runners in [10, 50] {
            if let Some((rate, peak)) = anchor(runners, 3, llm) {
                println!(
                    "| Agent-lightning 0.3.0, `Trainer(n_runners={runners})`, Python agent with the openai client | {runners} | | | {rate:.1} ({:.0} %) | {:.2}, {:.2} (3 rounds) | | | the anchor |",
                    100.0 * rate / f64::from(runners),
                    gb(peak.rss),
                    gb(peak.pss)
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
