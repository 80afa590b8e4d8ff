//! End-to-end: the real `agl-host` binary with real components (example agents, the probe guest,
//! the built-in algorithms and the baseline plugin built from source), the scripted LLM, the
//! in-memory store and the store over HTTP; and the binary installed with `cargo install`, run
//! from an empty directory without a toolchain.

use serde_json::{Value, json};
use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    agl_guest_build::repo_root()
}

fn component(crate_dir: &str) -> PathBuf {
    agl_guest_build::build_guest(crate_dir).unwrap_or_else(|e| panic!("building {crate_dir}: {e}"))
}

/// A fresh scratch folder under the build's own `target/tmp` (not the system's `/tmp`, which a
/// test run would otherwise litter), emptied of whatever an earlier run left there.
fn temp_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("agl-cli-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn write_jsonl(path: &Path, lines: &[Value]) {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, text).expect("write dataset");
}

fn agl_host() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agl-host"));
    // Runs are kept in memory here; tests/kept_runs.rs covers keeping them.
    command.env("AGL_DB", "memory");
    command.env("AGL_CACHE_DIR", repo().join("target").join("agl-cache-tests"));
    command
}

/// An `agl-host` command line under construction; paths go in as they are.
struct Cli {
    args: Vec<OsString>,
}

impl Cli {
    /// `agl-host <subcommand>`.
    fn new(subcommand: &str) -> Self {
        Self {
            args: vec![subcommand.into()],
        }
    }

    /// One more argument.
    fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// `<name> <value>`, e.g. `.flag("--runners", "2")`.
    fn flag(self, name: &str, value: impl AsRef<OsStr>) -> Self {
        self.arg(name).arg(value)
    }

    /// The command, not started (to choose where its output goes).
    fn command(&self) -> Command {
        let mut command = agl_host();
        command.args(&self.args);
        command
    }

    /// Starts it with stdout and stderr piped.
    fn spawn(&self) -> Child {
        self.command()
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("agl-host starts")
    }

    /// Runs it to the end.
    fn output(&self) -> Output {
        self.command().output().expect("agl-host runs")
    }
}

/// Scripted-LLM rules for runs whose agent does not care what the LLM says (the probe).
fn any_rules() -> PathBuf {
    repo().join("examples/math-agent/rules.json")
}

/// `agl-host run` of the probe guest under the `algo` algorithm (a built-in name or a path) on
/// the `train` set, with a scripted LLM (the probe imports the LLM interface).
fn probe_run(algo: impl AsRef<OsStr>, train: &Path) -> Cli {
    Cli::new("run")
        .flag("--agent", component("tests/guests/probe"))
        .flag("--algo", algo)
        .flag("--train", train)
        .flag("--llm-script", any_rules())
}

/// `agl-host run` of `agent` under the `algo` algorithm on the math agent's train and val sets,
/// with its `resources` and scripted-LLM `rules` (files under examples/math-agent).
fn math_run(agent: PathBuf, algo: impl AsRef<OsStr>, resources: &str, rules: &str) -> Cli {
    let math = repo().join("examples/math-agent");
    Cli::new("run")
        .flag("--agent", agent)
        .flag("--algo", algo)
        .flag("--train", math.join("data/train.jsonl"))
        .flag("--val", math.join("data/val.jsonl"))
        .flag("--resources", math.join(resources))
        .flag("--llm-script", math.join(rules))
}

fn read_results(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("results file written");
    serde_json::from_str(&text).expect("results are JSON")
}

fn text(output: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn run_with_the_baseline_scores_every_task_of_the_math_agent() {
    let dir = temp_dir("math");
    let out = dir.join("results.json");
    let math = repo().join("examples/math-agent");
    let output = math_run(math, "baseline", "initial-resources.json", "rules.json")
        .flag("--runners", "2")
        .flag("--output", &out)
        .output();
    assert!(output.status.success(), "{}", text(&output));
    let results = read_results(&out);
    assert_eq!(results["status"], "completed");
    assert_eq!(results["splits"]["train"]["rollouts"], 12);
    assert_eq!(results["splits"]["val"]["rollouts"], 8);
    assert_eq!(results["total"]["succeeded"], 20, "{results:#}");
    assert_eq!(results["total"]["failed"], 0);
    // The scripted LLM answers every val question right (see examples/math-agent/rules.json).
    let val_mean = results["splits"]["val"]["mean_reward"].as_f64().expect("number");
    assert!(val_mean > 0.0 && val_mean <= 1.0, "{results:#}");
    // The baseline reports the val mean as its best score, with the initial resources.
    assert_eq!(results["best"]["score"].as_f64(), Some(val_mean));
    assert!(
        results["best"]["resources"]["prompt"]["template"].is_string(),
        "{results:#}"
    );
    // Root, LLM and reward spans at least, for every rollout.
    assert!(results["spans"].as_u64().expect("number") >= 60, "{results:#}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("completed in"), "{stdout}");
    assert!(stdout.contains("val"), "{stdout}");
}

#[test]
fn components_built_against_wit_0_1_0_run_unchanged_and_score_as_today() {
    old_components_score_as_today("0.1.0");
}

#[test]
fn components_built_against_wit_0_2_0_run_unchanged_and_score_as_today() {
    old_components_score_as_today("0.2.0");
}

#[test]
fn an_algorithm_reads_each_tasks_input_output_reward_feedback_and_transcript() {
    // The baseline's `task_views` puts what `adapter.task` returns per rollout into its summary.
    let dir = temp_dir("task-views");
    let (train, config, out) = (
        dir.join("train.jsonl"),
        dir.join("config.json"),
        dir.join("results.json"),
    );
    let ask = "Tom has 12 apples and buys 7 more. How many?";
    let tasks = [
        json!({"do": "feedback", "ask": ask, "texts": ["expected 27, got 19: wrong numbers", "\u{1b}[31mred\u{1b}[0m"], "reward": 0.0}),
        json!({"do": "feedback", "texts": ["error[E0308]: mismatched types"], "fail": true}),
    ];
    write_jsonl(&train, &tasks);
    std::fs::write(&config, r#"{"task_views": true}"#).expect("config");
    let output = probe_run("baseline", &train)
        .flag("--algo-config", &config)
        .flag("--output", &out)
        .output();
    assert!(output.status.success(), "{}", text(&output));
    let results = read_results(&out);
    let views = results["algorithm_summary"]["tasks"].as_array().expect("tasks").clone();
    assert_eq!(views.len(), 2, "{results:#}");
    let answered = views
        .iter()
        .find(|v| v["input"] == tasks[0])
        .expect("the first task's view");
    assert_eq!(answered["split"], "train");
    assert_eq!(answered["output"], "12 + 7 = 19. Tom has 19");
    assert_eq!(answered["reward"], 0.0);
    assert_eq!(
        answered["feedback"],
        json!(["expected 27, got 19: wrong numbers", "\u{1b}[31mred\u{1b}[0m"])
    );
    assert_eq!(
        answered["transcript"],
        json!([{"role": "user", "content": ask}, {"role": "assistant", "content": "12 + 7 = 19. Tom has 19"}])
    );
    assert_eq!(answered["failure"], Value::Null);
    let failed = views
        .iter()
        .find(|v| v["input"] == tasks[1])
        .expect("the second task's view");
    assert_eq!(failed["feedback"], json!(["error[E0308]: mismatched types"]));
    assert_eq!((&failed["reward"], &failed["output"]), (&Value::Null, &Value::Null));
    assert!(
        failed["failure"]
            .as_str()
            .is_some_and(|f| f.contains("failed on purpose")),
        "{failed:#}"
    );
}

/// The math agent and the baseline built against WIT `version` (`tests/fixtures/agl-agent-*`)
/// score as the current ones do.
fn old_components_score_as_today(version: &str) {
    let dir = temp_dir(&format!("wit-{version}"));
    let fixtures = repo().join(format!("tests/fixtures/agl-agent-{version}"));
    let (old_out, new_out) = (dir.join("old.json"), dir.join("new.json"));
    let old = math_run(
        fixtures.join("math_agent.wasm"),
        fixtures.join("agl_baseline.wasm"),
        "initial-resources.json",
        "rules.json",
    )
    .flag("--output", &old_out)
    .output();
    assert!(old.status.success(), "{}", text(&old));
    let new = math_run(
        repo().join("examples/math-agent"),
        "baseline",
        "initial-resources.json",
        "rules.json",
    )
    .flag("--output", &new_out)
    .output();
    assert!(new.status.success(), "{}", text(&new));
    let (old, new) = (read_results(&old_out), read_results(&new_out));
    assert_eq!(old["total"]["succeeded"], 20, "{old:#}");
    for key in ["succeeded", "failed", "mean_reward"] {
        assert_eq!(old["total"][key], new["total"][key], "{key}: {old:#} vs {new:#}");
    }
    assert_eq!(old["best"]["score"], new["best"]["score"]);
}

#[test]
fn a_trapping_agent_is_retried_once_and_final_statuses_are_right() {
    let dir = temp_dir("retry");
    let (train, config, out) = (
        dir.join("train.jsonl"),
        dir.join("config.json"),
        dir.join("results.json"),
    );
    write_jsonl(
        &train,
        &[
            serde_json::json!({"do": "noop"}),
            serde_json::json!({"do": "flaky"}),
            serde_json::json!({"do": "flaky"}),
            serde_json::json!({"do": "panic"}),
            serde_json::json!({"do": "reward", "value": 0.5}),
        ],
    );
    let rollout_config = serde_json::json!({"rollout_config": {"max_attempts": 2, "retry_condition": ["failed"]}});
    std::fs::write(&config, rollout_config.to_string()).expect("config");
    let output = probe_run(component("plugins/baseline"), &train)
        .flag("--algo-config", &config)
        .flag("--output", &out)
        .output();
    assert!(output.status.success(), "{}", text(&output));
    let results = read_results(&out);
    let train = &results["splits"]["train"];
    assert_eq!(train["rollouts"], 5, "{results:#}");
    // noop, both flaky (second attempt) and reward succeed; panic fails after its two attempts.
    assert_eq!(train["succeeded"], 4, "{results:#}");
    assert_eq!(train["failed"], 1, "{results:#}");
    assert_eq!(train["retried"], 3, "{results:#}");
    // Attempts: 5 first ones + 3 retries; failed: the flaky firsts and both panics.
    assert_eq!(results["attempts"]["succeeded"], 4, "{results:#}");
    assert_eq!(results["attempts"]["failed"], 4, "{results:#}");
    // (1 + 1 + 1 + 0 + 0.5) / 5
    assert_eq!(train["mean_reward"].as_f64(), Some(0.7), "{results:#}");
}

/// Starts `agl-host run` on 40 spinning tasks (each runs until `agent_timeout`) and returns once
/// the run has started, with the child and where its results go.
fn start_spinning_run(name: &str, agent_timeout: &str, grace: &str) -> (Child, PathBuf) {
    let dir = temp_dir(name);
    let (train, out) = (dir.join("train.jsonl"), dir.join("results.json"));
    write_jsonl(&train, &vec![serde_json::json!({"do": "spin"}); 40]);
    let mut child = probe_run("baseline", &train)
        .flag("--agent-timeout", agent_timeout)
        .flag("--grace", grace)
        .flag("--output", &out)
        .command()
        // The runner's debug events say when an attempt starts.
        .env("AGL_LOG", "warn,agl_runner=debug")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("agl-host starts");
    // Wait until an attempt is running (however long start-up takes on a busy machine).
    let stderr = child.stderr.take().expect("stderr piped");
    let mut lines = BufReader::new(stderr).lines();
    loop {
        let line = lines.next().expect("agl-host logs an attempt start").expect("utf-8");
        if line.contains("attempt started") {
            break;
        }
    }
    std::thread::spawn(move || lines.for_each(drop));
    (child, out)
}

fn interrupt(child: &Child) {
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
}

/// Waits for the interrupted `child` to exit with code 130, within `limit` from now.
fn assert_interrupted_exit(child: Child, limit: Duration) {
    let stopped = Instant::now();
    let output = child.wait_with_output().expect("agl-host exits");
    assert_eq!(output.status.code(), Some(130), "{}", text(&output));
    assert!(stopped.elapsed() < limit, "took {:?}", stopped.elapsed());
}

#[test]
fn sigint_stops_gracefully_and_writes_partial_results() {
    // Each task spins until the agent's 300 ms deadline: 40 of them take 12 s on one runner.
    let (child, out) = start_spinning_run("sigint", "300ms", "10s");
    interrupt(&child);
    // The running attempt finishes within its deadline; nothing waits for the other 30-odd tasks.
    assert_interrupted_exit(child, Duration::from_secs(8));
    let results = read_results(&out);
    assert_eq!(results["status"], "interrupted");
    let train = &results["splits"]["train"];
    assert_eq!(train["rollouts"], 40, "{results:#}");
    let failed = train["failed"].as_u64().expect("number");
    assert!((1..40).contains(&failed), "{results:#}");
    assert_eq!(train["unfinished"].as_u64(), Some(40 - failed), "{results:#}");
    assert_eq!(results["forced_stop"], false);
}

#[test]
fn a_second_sigint_or_the_end_of_the_grace_period_abandons_running_attempts() {
    // The running attempt would spin for 60 s; the grace period (300 ms) ends it.
    let (child, out) = start_spinning_run("grace", "60s", "300ms");
    interrupt(&child);
    assert_interrupted_exit(child, Duration::from_secs(10));
    let results = read_results(&out);
    assert_eq!(results["forced_stop"], true, "{results:#}");
    assert_eq!(results["splits"]["train"]["failed"], 1, "{results:#}");

    // Without a grace limit, the second Ctrl-C does it.
    let (child, out) = start_spinning_run("second-sigint", "60s", "60s");
    interrupt(&child);
    std::thread::sleep(Duration::from_millis(500));
    interrupt(&child);
    assert_interrupted_exit(child, Duration::from_secs(10));
    let results = read_results(&out);
    assert_eq!(results["forced_stop"], true, "{results:#}");
    assert_eq!(results["attempts"]["failed"], 1, "{results:#}");
}

#[test]
fn bad_inputs_give_one_clear_line_and_exit_code_2() {
    let dir = temp_dir("bad");
    let train = dir.join("train.jsonl");
    std::fs::write(&train, "{\"do\": \"noop\"}\n{broken\n").expect("dataset");
    let probe = component("tests/guests/probe");
    let baseline = component("plugins/baseline");
    let val = repo().join("examples/math-agent/data/val.jsonl");
    let cases = [
        (
            Cli::new("run")
                .flag("--agent", "/no/such.wasm")
                .flag("--algo", &baseline)
                .flag("--train", &train),
            "train.jsonl:2: not a JSON value",
        ),
        (
            Cli::new("dev").flag("--agent", "/no/such.wasm").flag("--train", &val),
            "agent /no/such.wasm: no such file or directory",
        ),
        (
            // The algorithm given as the agent: it does not implement the agent world.
            Cli::new("dev")
                .flag("--agent", &baseline)
                .flag("--algo", &baseline)
                .flag("--train", &val),
            "does not implement the agl:agent/agent world",
        ),
        (
            Cli::new("dev")
                .flag("--agent", &probe)
                .flag("--algo", &probe)
                .flag("--train", &val),
            "does not implement the agl:agent/algorithm world",
        ),
        (
            Cli::new("dev")
                .flag("--agent", &probe)
                .flag("--train", &val)
                .flag("--agent-memory", "lots"),
            "invalid value 'lots' for '--agent-memory <SIZE>': invalid size 'lots'",
        ),
    ];
    for (cli, expected) in cases {
        let output = cli.output();
        let args = &cli.args;
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", text(&output));
        assert!(
            stderr.contains(expected),
            "{args:?}: expected '{expected}' in:\n{stderr}"
        );
        assert!(
            !stderr.contains("panicked") && !stderr.contains("backtrace"),
            "{stderr}"
        );
    }
    let usage = Cli::new("run").flag("--agent", "a.wasm").output();
    assert_eq!(usage.status.code(), Some(2), "{}", text(&usage));
}

#[test]
fn help_teaches_the_flags_and_exit_codes() {
    let output = Cli::new("run").arg("--help").output();
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    for needle in [
        "--agent",
        "--algo",
        "--store",
        "--llm-script",
        "--llm-endpoint",
        "--runners",
        "--agent-dir",
        "Exit codes",
        "130",
        "141",
        "every rollout failed",
        "baseline, apo or gepa",
    ] {
        assert!(help.contains(needle), "--help lacks {needle}:\n{help}");
    }
    // The examples can be pasted: each command is one line, as written.
    let example = "  agl-host run --agent examples/math-agent --algo apo --train examples/math-agent/data/train.jsonl \
                   --val examples/math-agent/data/val.jsonl --resources examples/math-agent/apo/seed-resources.json \
                   --llm-script examples/math-agent/apo/rules.json --algo-config examples/math-agent/apo/config.json \
                   --output results.json\n";
    assert!(help.contains(example), "--help rewrapped its example:\n{help}");
    assert!(!help.contains(" \\\n"), "no line continuations to paste:\n{help}");
}

#[test]
fn an_agent_fuel_budget_leaves_the_algorithm_unmetered() {
    // --agent-fuel builds the engine with fuel metering; the algorithm, which has no budget,
    // once started with none and failed at its first instruction ("fuel budget of 0 exhausted").
    let math = repo().join("examples/math-agent");
    let output = Cli::new("dev")
        .flag("--agent", &math)
        .flag("--train", math.join("data/val.jsonl"))
        .flag("--resources", math.join("initial-resources.json"))
        .flag("--llm-script", math.join("rules.json"))
        .flag("--agent-fuel", "100000000")
        .output();
    assert!(output.status.success(), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("train          8          8"), "{stdout}");
}

#[test]
fn dev_runs_the_baseline_by_default_on_an_agent_crate() {
    let classifier = repo().join("examples/classifier-agent");
    let output = Cli::new("dev")
        .flag("--agent", &classifier)
        .flag("--train", classifier.join("data/val.jsonl"))
        .flag("--resources", classifier.join("initial-resources.json"))
        .flag("--llm-script", classifier.join("rules.json"))
        .output();
    assert!(output.status.success(), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("algorithm baseline"), "{stdout}");
    assert!(stdout.contains("train          8          8"), "{stdout}");
}

/// `agl-host run` with APO on the math agent, the APO scripted world and `seed`.
fn run_apo(name: &str, seed: u64) -> Value {
    let dir = temp_dir(name);
    let (config, out) = (dir.join("config.json"), dir.join("results.json"));
    std::fs::write(&config, serde_json::json!({"seed": seed}).to_string()).expect("config");
    let agent = component("examples/math-agent");
    let output = math_run(agent, "apo", "apo/seed-resources.json", "apo/rules.json")
        .flag("--algo-config", &config)
        .flag("--runners", "2")
        .flag("--output", &out)
        .output();
    assert!(output.status.success(), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("APO: best prompt"), "the report is printed: {stdout}");
    read_results(&out)
}

#[test]
fn apo_finds_the_instruction_that_raises_val_accuracy_deterministically() {
    // Under the scripted LLM of examples/math-agent/apo, answers end with a stray number on
    // half the questions unless the prompt asks for the final answer on the last line.
    let first = run_apo("apo-a", 42);
    let summary = &first["algorithm_summary"];
    let seed_score = summary["seed_prompt"]["score"].as_f64().expect("seed scored");
    let best_score = summary["best"]["score"].as_f64().expect("best scored");
    assert_eq!(seed_score, 0.5, "{summary:#}");
    assert!(best_score > seed_score, "{summary:#}");
    let template = summary["best"]["template"].as_str().expect("template");
    assert!(
        template.contains("final answer as a number on the last line"),
        "{template}"
    );
    assert!(template.contains("{question}"), "placeholders kept: {template}");
    // The host's best is APO's, with its resources version.
    assert_eq!(first["best"]["resources_id"], summary["best"]["resources_id"]);
    assert_eq!(first["best"]["resources"]["prompt"]["template"], template);
    // Edits that dropped {question} were rejected, not fatal.
    assert!(summary["skipped"]["edits"].as_u64().expect("count") > 0, "{summary:#}");

    // The same seed, the same search.
    let second = run_apo("apo-b", 42);
    for key in ["best", "history", "candidates", "skipped"] {
        assert_eq!(
            first["algorithm_summary"][key], second["algorithm_summary"][key],
            "{key} differs"
        );
    }
}

#[test]
fn apo_survives_llm_errors_and_rollouts_that_time_out() {
    // A scripted LLM with no rule and no fallback: every critique fails. Every rollout spins
    // past its deadline, and APO stops waiting for a batch after 0.1 s. The run still completes,
    // keeping the seed.
    let dir = temp_dir("apo-robust");
    let (train, val, resources, config, out, rules) = (
        dir.join("train.jsonl"),
        dir.join("val.jsonl"),
        dir.join("resources.json"),
        dir.join("config.json"),
        dir.join("results.json"),
        dir.join("no-rules.json"),
    );
    std::fs::write(&rules, r#"{"rules": []}"#).expect("rules");
    write_jsonl(&train, &vec![serde_json::json!({"do": "spin"}); 2]);
    write_jsonl(&val, &vec![serde_json::json!({"do": "spin"}); 2]);
    let prompt =
        serde_json::json!({"prompt": {"resource_type": "prompt_template", "template": "Do {x}", "engine": "f-string"}});
    std::fs::write(&resources, prompt.to_string()).expect("resources");
    let settings = serde_json::json!({"beam_rounds": 1, "beam_width": 1, "branch_factor": 1, "rollout_batch_timeout": 0.1, "seed": 1});
    std::fs::write(&config, settings.to_string()).expect("config");
    let output = Cli::new("run")
        .flag("--agent", component("tests/guests/probe"))
        .flag("--algo", "apo")
        .flag("--train", &train)
        .flag("--llm-script", &rules)
        .flag("--val", &val)
        .flag("--resources", &resources)
        .flag("--algo-config", &config)
        .flag("--agent-timeout", "300ms")
        .flag("--output", &out)
        .output();
    assert!(output.status.success(), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("critique skipped"), "{stderr}");
    assert!(stderr.contains("did not finish within"), "{stderr}");
    let results = read_results(&out);
    assert_eq!(results["status"], "completed");
    let summary = &results["algorithm_summary"];
    assert_eq!(summary["best"]["resources_id"], "v0", "{summary:#}");
    assert_eq!(summary["skipped"]["critiques"], 1, "{summary:#}");
}

/// Reads `child`'s stderr on a thread; returns a receiver of its lines.
fn stderr_lines(child: &mut Child) -> std::sync::mpsc::Receiver<String> {
    let stderr = child.stderr.take().expect("stderr piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// The first line of `lines` containing `needle` (within 5 minutes: builds may be slow).
fn wait_for_line(lines: &std::sync::mpsc::Receiver<String>, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(300);
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) if line.contains(needle) => return line,
            Ok(_) => {}
            Err(e) => panic!("no line with '{needle}': {e}"),
        }
    }
    panic!("no line with '{needle}' in time");
}

/// Reads lines until each needle has been in one of them, in any order.
fn wait_for_all_lines(lines: &std::sync::mpsc::Receiver<String>, needles: &[&str]) {
    let mut missing: Vec<&str> = needles.to_vec();
    let deadline = Instant::now() + Duration::from_secs(300);
    while !missing.is_empty() {
        let left = deadline
            .checked_duration_since(Instant::now())
            .unwrap_or_else(|| panic!("no lines with {missing:?} in time"));
        match lines.recv_timeout(left) {
            Ok(line) => missing.retain(|needle| !line.contains(needle)),
            Err(e) => panic!("no lines with {missing:?}: {e}"),
        }
    }
}

#[test]
fn client_server_survives_a_runner_killed_mid_rollout() {
    // Every task spins until its 1 s deadline (failed, not retried); a rollout whose runner dies
    // goes unresponsive (no heartbeat for 0.8 s) and is retried on the other runner.
    let dir = temp_dir("client-server");
    let (train, config, out) = (
        dir.join("train.jsonl"),
        dir.join("config.json"),
        dir.join("results.json"),
    );
    write_jsonl(&train, &vec![serde_json::json!({"do": "spin"}); 4]);
    let rollout_config = serde_json::json!({"rollout_config": {
        "max_attempts": 2, "retry_condition": ["unresponsive"], "unresponsive_seconds": 0.8}});
    std::fs::write(&config, rollout_config.to_string()).expect("config");
    let mut child = Cli::new("run")
        .flag("--strategy", "client-server")
        .flag("--runners", "2")
        .flag("--heartbeat", "200ms")
        .flag("--agent-timeout", "1s")
        .flag("--agent", component("tests/guests/probe"))
        .flag("--algo", "baseline")
        .flag("--llm-script", any_rules())
        .flag("--train", &train)
        .flag("--algo-config", &config)
        .flag("--output", &out)
        .spawn();
    let lines = stderr_lines(&mut child);
    let first = wait_for_line(&lines, "started runner process 1 (pid ");
    let pid: String = first
        .rsplit("(pid ")
        .next()
        .expect("pid")
        .trim_end_matches(')')
        .to_owned();
    // The two runner processes print in either order.
    wait_for_all_lines(&lines, &["runner 1: runner-1:", "runner 2: runner-2:"]);
    // Both runners are now inside an attempt (each spins for 1 s).
    std::thread::sleep(Duration::from_millis(500));
    let killed = Command::new("kill").args(["-KILL", &pid]).status().expect("kill runs");
    assert!(killed.success());
    std::thread::spawn(move || lines.iter().for_each(drop));
    let output = child.wait_with_output().expect("agl-host exits");
    assert_eq!(output.status.code(), Some(3), "every rollout failed: {}", text(&output));
    let results = read_results(&out);
    let train = &results["splits"]["train"];
    assert_eq!(train["rollouts"], 4, "{results:#}");
    assert_eq!(train["failed"], 4, "every spin ends at its deadline: {results:#}");
    assert_eq!(
        train["retried"], 1,
        "the killed runner's rollout ran again: {results:#}"
    );
    assert_eq!(train["unfinished"], 0, "{results:#}");
}

/// `agl-host store` on a free port (one serving thread), and its URL once it listens.
fn start_store(token: Option<&str>) -> (Child, String) {
    start_store_on(token, None)
}

/// [`start_store`] keeping its store in `db` (`--db`) when given.
fn start_store_on(token: Option<&str>, db: Option<&str>) -> (Child, String) {
    let mut cli = Cli::new("store").flag("--port", "0").flag("--threads", "1");
    if let Some(db) = db {
        cli = cli.flag("--db", db);
    }
    if let Some(token) = token {
        cli = cli.flag("--token", token);
    }
    let mut store = cli
        .command()
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("agl-host store starts");
    let store_lines = stderr_lines(&mut store);
    let listening = wait_for_line(&store_lines, "listening on ");
    let url = listening
        .split("listening on ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("a URL")
        .to_owned();
    (store, url)
}

/// `agl-host runner` of the probe against the store at `url` (with `extra` flags), and its stderr
/// lines once it has started.
fn start_probe_runner(url: &str, extra: &[&str]) -> (Child, std::sync::mpsc::Receiver<String>) {
    let mut cli = Cli::new("runner")
        .flag("--store", url)
        .flag("--agent", component("tests/guests/probe"))
        .flag("--llm-script", any_rules());
    for arg in extra {
        cli = cli.arg(arg);
    }
    let mut runner = cli
        .command()
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("agl-host runner starts");
    let lines = stderr_lines(&mut runner);
    wait_for_line(&lines, "runner(s) of probe.wasm");
    (runner, lines)
}

#[test]
fn a_remote_runner_serves_a_store_started_by_agl_host_store() {
    // One serving thread (the single-threaded runtime) with two remote runners on it.
    let (mut store, url) = start_store(Some("s3cret"));

    // A wrong token is refused at once, with one line.
    let refused = Cli::new("runner")
        .flag("--store", &url)
        .flag("--token", "wrong")
        .flag("--agent", "/no/such.wasm")
        .output();
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));

    let (mut runner, runner_lines) = start_probe_runner(&url, &["--token", "s3cret", "--runners", "2"]);

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        use agl_store::{EnqueueRolloutRequest, LightningStore, RolloutStatus};
        let options = agl_client::ClientOptions {
            token: Some("s3cret".into()),
            ..agl_client::ClientOptions::default()
        };
        let client = agl_client::HttpStoreClient::new(&url, options).expect("client");
        let requests = (0..10)
            .map(|i| EnqueueRolloutRequest::new(serde_json::json!({"do": "reward", "value": f64::from(i) / 10.0})))
            .collect();
        let enqueued = client.enqueue_rollouts(requests).await.expect("enqueue");
        let ids: Vec<String> = enqueued.iter().map(|r| r.rollout_id.clone()).collect();
        let finished = client
            .wait_for_rollouts(&ids, Some(Duration::from_secs(60)))
            .await
            .expect("wait");
        assert_eq!(finished.len(), 10);
        assert!(
            finished.iter().all(|r| r.status == RolloutStatus::Succeeded),
            "{finished:?}"
        );
        let spans = client
            .query_spans(&agl_store::SpanQuery::for_rollout(ids[3].clone()))
            .await
            .expect("spans");
        assert_eq!(agl_adapter_reward(&spans.items), Some(0.3));
    });

    // The runner said a line per rollout.
    let line = wait_for_line(&runner_lines, "succeeded, reward 0.3000");
    assert!(line.contains("rollout ro-") && line.contains("(attempt 1)"), "{line}");

    // An algorithm run against the same store, from the command line: the built-in baseline
    // enqueues there and the remote runner runs its rollouts.
    let dir = temp_dir("remote-run");
    let (train, out) = (dir.join("train.jsonl"), dir.join("results.json"));
    write_jsonl(&train, &vec![serde_json::json!({"do": "reward", "value": 1.0}); 4]);
    let run = Cli::new("run")
        .flag("--store", &url)
        .flag("--token", "s3cret")
        .flag("--algo", "baseline")
        .flag("--train", &train)
        .flag("--output", &out)
        .output();
    assert!(run.status.success(), "{}", text(&run));
    let results = read_results(&out);
    assert_eq!(results["runners"], 0, "{results:#}");
    assert_eq!(
        results["best"]["score"], 1.0,
        "no val split: the train mean: {results:#}"
    );
    // The store's 10 rollouts of the client above and the run's 4.
    assert_eq!(results["total"]["succeeded"], 14, "{results:#}");
    assert_eq!(results["algorithm_summary"]["train"]["mean_reward"], 1.0, "{results:#}");

    let stop = Command::new("kill")
        .args(["-TERM", &runner.id().to_string()])
        .status()
        .expect("kill");
    assert!(stop.success());
    let exited = runner.wait().expect("runner exits");
    assert!(exited.success(), "{exited:?}");
    assert!(wait_for_line(&runner_lines, "stopped after").contains("14 succeeded"));
    let stop = Command::new("kill")
        .args(["-INT", &store.id().to_string()])
        .status()
        .expect("kill");
    assert!(stop.success());
    assert!(store.wait().expect("store exits").success());
}

#[test]
fn a_run_against_a_remote_store_keeps_its_run_record_in_that_store() {
    let dir = temp_dir("remote-record");
    let file = dir.join("store.db");
    let db = format!("sqlite:{}", file.display());
    let (mut store, url) = start_store_on(Some("s3cret"), Some(&db));
    let (mut runner, _runner_lines) = start_probe_runner(&url, &["--token", "s3cret"]);
    let (train, out) = (dir.join("train.jsonl"), dir.join("results.json"));
    write_jsonl(&train, &vec![serde_json::json!({"do": "reward", "value": 1.0}); 3]);
    let remote_run = || {
        Cli::new("run")
            .flag("--store", &url)
            .flag("--token", "s3cret")
            .flag("--algo", "baseline")
            .flag("--train", &train)
            .flag("--output", &out)
            .output()
    };
    let run = remote_run();
    assert!(run.status.success(), "{}", text(&run));
    let results = read_results(&out);
    let run_id = results["run_id"].as_str().expect("the results name the run").to_owned();
    assert!(
        text(&run).contains(&format!("run {run_id} kept in the store at {url}")),
        "{}",
        text(&run)
    );

    // The store's own route answers the record, ended, with the results; the token hidden.
    let http = reqwest::blocking::Client::new();
    let record: Value = http
        .get(format!("{url}/v1/agl-host/run"))
        .bearer_auth("s3cret")
        .send()
        .and_then(reqwest::blocking::Response::json)
        .expect("the run record");
    assert_eq!(record["run_id"], run_id.as_str(), "{record:#}");
    assert_eq!(record["status"], "completed", "{record:#}");
    assert!(record["finished_at"].is_f64(), "{record:#}");
    assert_eq!(record["results"]["splits"]["train"]["succeeded"], 3, "{record:#}");
    let command = record["command"].to_string();
    assert!(command.contains("--store") && !command.contains("s3cret"), "{command}");

    // Writing a record takes the store's token and a JSON body.
    let put = |token: &str, content_type: &str, body: String| {
        http.put(format!("{url}/v1/agl-host/run"))
            .bearer_auth(token)
            .header("content-type", content_type)
            .body(body)
            .send()
            .expect("an answer")
            .status()
            .as_u16()
    };
    let mut other = record.clone();
    other["run_id"] = "run-other".into();
    assert_eq!(put("wrong", "application/json", record.to_string()), 401);
    assert_eq!(put("s3cret", "text/plain", record.to_string()), 415);
    assert_eq!(put("s3cret", "application/json", "{\"run_id\": 1}".into()), 422);
    // A store keeps one run: another run's record is refused, and a second run does not start.
    assert_eq!(put("s3cret", "application/json", other.to_string()), 409);
    let again = remote_run();
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    assert!(
        text(&again).contains(&format!("already keeps run {run_id} (completed")),
        "{}",
        text(&again)
    );

    // `show --db` and `runs` over the store's file read it as they read a run kept here.
    let show = Cli::new("show").flag("--db", &db).output();
    assert!(show.status.success(), "{}", text(&show));
    assert!(
        text(&show).contains(&run_id) && text(&show).contains("completed"),
        "{}",
        text(&show)
    );
    for child in [&mut runner, &mut store] {
        let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
        let _ = child.wait();
    }
    let runs = Cli::new("runs").flag("--dir", &dir).output();
    assert!(runs.status.success(), "{}", text(&runs));
    assert!(text(&runs).contains(&run_id), "{}", text(&runs));
}

/// The final reward among spans, read the way the runner's reward spans are written.
fn agl_adapter_reward(spans: &[std::sync::Arc<agl_store::Span>]) -> Option<f64> {
    spans
        .iter()
        .rev()
        .filter(|s| s.name == "agentlightning.annotation")
        .find_map(|s| {
            s.attributes
                .get("agentlightning.reward.0.value")
                .and_then(Value::as_f64)
        })
}

/// The math agent's component, and the `dev` command line that runs it on the val set with the
/// scripted LLM.
fn math_dev() -> Cli {
    let math = repo().join("examples/math-agent");
    Cli::new("dev")
        .flag("--agent", component("examples/math-agent"))
        .flag("--train", math.join("data/val.jsonl"))
        .flag("--resources", math.join("initial-resources.json"))
        .flag("--llm-script", math.join("rules.json"))
}

#[test]
fn a_run_in_which_every_rollout_fails_says_why_and_exits_3() {
    // The classifier's tasks given to the math agent: tasks of the wrong shape, every one fails.
    let dir = temp_dir("all-failed");
    let out = dir.join("results.json");
    let (math, classifier) = (
        repo().join("examples/math-agent"),
        repo().join("examples/classifier-agent"),
    );
    let output = Cli::new("run")
        .flag("--agent", component("examples/math-agent"))
        .flag("--algo", "baseline")
        .flag("--train", classifier.join("data/train.jsonl"))
        .flag("--val", classifier.join("data/val.jsonl"))
        .flag("--resources", math.join("initial-resources.json"))
        .flag("--llm-script", math.join("rules.json"))
        .flag("--output", &out)
        .output();
    assert_eq!(output.status.code(), Some(3), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("EVERY ROLLOUT FAILED (20 of 20)"), "{stdout}");
    let results = read_results(&out);
    // serde's message names the missing field and where the task's JSON lacks it, so tasks of
    // different lengths give different reasons: counted apart, most frequent first.
    let reasons = results["failure_reasons"].as_array().expect("failure_reasons");
    let counts: Vec<u64> = reasons.iter().map(|r| r["count"].as_u64().expect("a count")).collect();
    assert_eq!(counts.iter().sum::<u64>(), 20, "{results:#}");
    assert!(counts.windows(2).all(|pair| pair[0] >= pair[1]), "{counts:?}");
    for reason in reasons {
        let text = reason["reason"].as_str().expect("a reason");
        assert!(text.contains("missing field `question`"), "{text}");
    }
    let top = &reasons[0];
    let line = format!("{:>6}×  {}", counts[0], top["reason"].as_str().expect("a reason"));
    assert!(
        stdout.contains(&line),
        "the summary shows the reason with its count:\n{stdout}"
    );
    let failures = results["failures"].as_array().expect("failures");
    assert_eq!(failures.len(), 20, "{results:#}");
    assert!(
        failures
            .iter()
            .all(|f| f["reason"].as_str().is_some_and(|r| r.contains("`question`")) && f["rollout_id"].is_string())
    );
    assert_eq!(failures.iter().filter(|f| f["mode"] == "val").count(), 8);
}

#[test]
fn a_component_that_uses_the_llm_is_refused_when_none_is_configured() {
    let math = repo().join("examples/math-agent");
    let started = Instant::now();
    let output = Cli::new("dev")
        .flag("--agent", component("examples/math-agent"))
        .flag("--train", math.join("data/val.jsonl"))
        .flag("--resources", math.join("initial-resources.json"))
        .output();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("the agent math_agent.wasm uses the LLM") && stderr.contains("--llm-script"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty(), "no run started: {}", text(&output));
    // APO critiques with the LLM: refused as well, even with an agent that needs none.
    let apo = Cli::new("run")
        .flag("--agent", component("tests/guests/wrong-world"))
        .flag("--algo", "apo")
        .flag("--train", math.join("data/val.jsonl"))
        .output();
    assert_eq!(apo.status.code(), Some(2), "{}", text(&apo));
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
fn every_input_is_checked_before_anything_is_built() {
    // The agent is a crate folder: had it been built (or taken from the cache), a line would say so.
    let math = repo().join("examples/math-agent");
    let cases = [
        (
            Cli::new("run").flag("--algo", "apoo"),
            "algorithm apoo: no such file or directory (the built-in algorithms are baseline, apo, gepa)",
        ),
        (
            Cli::new("run")
                .flag("--algo", "apo")
                .flag("--algo-config", "/no/such/config.json"),
            "cannot read algorithm config /no/such/config.json",
        ),
        (
            Cli::new("run")
                .flag("--algo", "apo")
                .flag("--llm-script", "/no/rules.json"),
            "LLM script /no/rules.json",
        ),
    ];
    for (cli, expected) in cases {
        let cli = cli
            .flag("--agent", &math)
            .flag("--train", math.join("data/train.jsonl"));
        let output = cli.output();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{:?}: {}", cli.args, text(&output));
        assert!(stderr.contains(expected), "expected '{expected}' in:\n{stderr}");
        assert!(
            !stderr.contains("building the agent") && !stderr.contains("is up to date"),
            "{stderr}"
        );
    }
}

#[test]
fn a_closed_stdout_ends_the_run_quietly_with_141_after_the_results_file() {
    let dir = temp_dir("closed-stdout");
    let out = dir.join("results.json");
    let mut child = math_dev().flag("--output", &out).spawn();
    // The reader goes away before anything is printed, as `| head -1` does after its line.
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("agl-host exits");
    assert_eq!(output.status.code(), Some(141), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(read_results(&out)["status"], "completed");
    // And through a real pipe into `head -1`: one line out, no panic, pipefail sees 141.
    let pipeline = format!(
        "set -o pipefail; {} 2>&1 | head -1",
        std::iter::once(env!("CARGO_BIN_EXE_agl-host").to_owned())
            .chain(math_dev().args.iter().map(|a| format!("'{}'", a.to_string_lossy())))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let piped = Command::new("bash")
        .args(["-c", &pipeline])
        .env("AGL_DB", "memory")
        .env("AGL_CACHE_DIR", repo().join("target").join("agl-cache-tests"))
        .output()
        .expect("bash runs");
    assert_eq!(piped.status.code(), Some(141), "{}", text(&piped));
    assert_eq!(
        String::from_utf8_lossy(&piped.stdout).lines().count(),
        1,
        "{}",
        text(&piped)
    );
}

/// A copy of the math agent's crate at `dir` (its SDK dependency pointing into this repository),
/// as a user's own agent outside the repository would be.
fn math_agent_copy(dir: &Path) {
    let source = repo().join("examples/math-agent");
    std::fs::create_dir_all(dir.join("src")).expect("crate dir");
    for file in ["src/lib.rs", "src/grading.rs", "Cargo.lock"] {
        std::fs::copy(source.join(file), dir.join(file)).expect("copy");
    }
    let manifest = std::fs::read_to_string(source.join("Cargo.toml")).expect("manifest");
    let sdk = repo().join("sdk/rust");
    let manifest = manifest.replace("../../sdk/rust", &sdk.to_string_lossy());
    std::fs::write(dir.join("Cargo.toml"), manifest).expect("manifest");
}

#[test]
fn a_crate_folder_agent_is_built_into_the_cache_and_its_path_printed() {
    let dir = temp_dir("user-crates");
    let cache = dir.join("cache");
    let math = repo().join("examples/math-agent");
    let mut built = Vec::new();
    // Two crates with one name, in two folders: two components, neither overwriting the other.
    for folder in ["one/agent", "two/agent"] {
        let crate_dir = dir.join(folder);
        math_agent_copy(&crate_dir);
        let output = Cli::new("dev")
            .flag("--agent", &crate_dir)
            .flag("--train", math.join("data/val.jsonl"))
            .flag("--resources", math.join("initial-resources.json"))
            .flag("--llm-script", math.join("rules.json"))
            .command()
            .env("AGL_CACHE_DIR", &cache)
            .output()
            .expect("agl-host runs");
        assert!(output.status.success(), "{}", text(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        let line = stderr
            .lines()
            .find(|line| line.starts_with("built agent "))
            .unwrap_or_else(|| panic!("no 'built agent' line in:\n{stderr}"));
        let shown = line.rsplit(" -> ").next().expect("a path");
        let path = PathBuf::from(shown.rsplit_once(" (").map_or(shown, |(path, _size)| path));
        assert!(path.starts_with(cache.join("guests")), "{line}");
        assert!(path.is_file(), "{line}");
        assert!(
            !crate_dir.join("target").exists(),
            "nothing written into the source folder"
        );
        built.push(path);
    }
    assert_ne!(built[0], built[1]);
    // The printed path is a component the other commands take as it is.
    let output = Cli::new("dev")
        .flag("--agent", &built[0])
        .flag("--train", math.join("data/val.jsonl"))
        .flag("--resources", math.join("initial-resources.json"))
        .flag("--llm-script", math.join("rules.json"))
        .output();
    assert!(output.status.success(), "{}", text(&output));
}

#[test]
fn build_makes_a_component_of_a_guest_folder_and_refuses_other_folders() {
    let dir = temp_dir("build-cmd");
    let out = dir.join("agent.wasm");
    let output = Cli::new("build")
        .arg(repo().join("examples/math-agent"))
        .flag("-o", &out)
        .output();
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        out.display().to_string()
    );
    let bytes = std::fs::read(&out).expect("the component was copied");
    assert_eq!(&bytes[..4], b"\0asm", "a wasm binary");
    // The copy runs as it is.
    let math = repo().join("examples/math-agent");
    let output = Cli::new("dev")
        .flag("--agent", &out)
        .flag("--train", math.join("data/val.jsonl"))
        .flag("--resources", math.join("initial-resources.json"))
        .flag("--llm-script", math.join("rules.json"))
        .output();
    assert!(output.status.success(), "{}", text(&output));

    let output = Cli::new("build").arg(&dir).output();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("is not a guest folder"), "{stderr}");
    let output = Cli::new("build").arg(dir.join("missing")).output();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
}

#[test]
fn client_server_refuses_more_runner_processes_than_it_may_start() {
    let output = math_run(
        component("examples/math-agent"),
        "baseline",
        "initial-resources.json",
        "rules.json",
    )
    .flag("--strategy", "client-server")
    .flag("--runners", "1025")
    .output();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("one runner process per runner, at most 1024") && stderr.contains("shared-memory"),
        "names the limit and the way around it:\n{stderr}"
    );
}

#[test]
fn a_client_server_run_shuts_down_without_a_warning() {
    let output = math_run(
        component("examples/math-agent"),
        "baseline",
        "initial-resources.json",
        "rules.json",
    )
    .flag("--strategy", "client-server")
    .flag("--runners", "2")
    .output();
    assert!(output.status.success(), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("WARN") && !stderr.contains("retrying"),
        "a clean shutdown logs no warning:\n{stderr}"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("train         12         12"), "{stdout}");
}

// The installed binary stands alone: `cargo install --path runtime/host` (into a temporary root; as
// a debug build in this build's own target directory, so that it reuses what the tests compiled),
// then `agl-host run --algo apo` and `agl-host dev` on a `.wasm` agent from an empty directory,
// with no Rust toolchain on PATH, a fresh HOME and nothing else in the environment.

/// `cargo install --path runtime/host --root ROOT`, reusing `<target>` (the one holding
/// CARGO_TARGET_TMPDIR); returns the installed binary.
fn install(root: &Path) -> PathBuf {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is <target>/tmp");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        // CI's test runner unlocks libtest's per-test times with it; a build that saw it would
        // rebuild every dependency (their build scripts would see another compiler).
        .env_remove("RUSTC_BOOTSTRAP")
        .args(["install", "--locked", "--offline", "--debug", "--path"])
        .arg(repo().join("runtime/host"))
        .arg("--root")
        .arg(root)
        .arg("--target-dir")
        .arg(target)
        .output()
        .expect("cargo runs");
    assert!(output.status.success(), "cargo install failed: {}", text(&output));
    let binary = root.join("bin").join("agl-host");
    assert!(binary.is_file(), "{}", binary.display());
    binary
}

/// Copies `from` (relative to examples/math-agent) into `dir` as `name`.
fn copy_example(from: &str, dir: &Path, name: &str) {
    let source = repo().join("examples/math-agent").join(from);
    std::fs::copy(&source, dir.join(name)).unwrap_or_else(|e| panic!("{}: {e}", source.display()));
}

#[test]
fn the_installed_binary_runs_the_builtin_algorithms_from_an_empty_directory_without_a_toolchain() {
    let base = temp_dir("install");
    let (root, home, empty_path, work) = (
        base.join("root"),
        base.join("home"),
        base.join("path"),
        base.join("work"),
    );
    for dir in [&home, &empty_path, &work] {
        std::fs::create_dir_all(dir).expect("dir");
    }
    let agl_host = install(&root);

    // The user's own files: a component and its data; nothing of the repository.
    let component = agl_guest_build::build_guest("examples/math-agent").expect("the math agent builds");
    std::fs::copy(component, work.join("agent.wasm")).expect("copy the agent");
    for (from, name) in [
        ("data/train.jsonl", "train.jsonl"),
        ("data/val.jsonl", "val.jsonl"),
        ("apo/seed-resources.json", "seed.json"),
        ("apo/rules.json", "apo-rules.json"),
        ("apo/config.json", "apo-config.json"),
        ("initial-resources.json", "resources.json"),
        ("rules.json", "rules.json"),
    ] {
        copy_example(from, &work, name);
    }
    let run = |args: &[&str]| -> Output {
        Command::new(&agl_host)
            .args(args)
            .current_dir(&work)
            .env_clear()
            .env("PATH", &empty_path)
            .env("HOME", &home)
            .output()
            .expect("the installed agl-host runs")
    };

    let apo = run(&[
        "run",
        "--agent",
        "agent.wasm",
        "--algo",
        "apo",
        "--train",
        "train.jsonl",
        "--val",
        "val.jsonl",
        "--resources",
        "seed.json",
        "--llm-script",
        "apo-rules.json",
        "--algo-config",
        "apo-config.json",
        "--output",
        "results.json",
    ]);
    assert!(apo.status.success(), "{}", text(&apo));
    assert!(
        String::from_utf8_lossy(&apo.stdout).contains("APO: best prompt"),
        "{}",
        text(&apo)
    );
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(work.join("results.json")).expect("results")).expect("JSON");
    let summary = &results["algorithm_summary"];
    assert!(
        summary["best"]["score"].as_f64() > summary["seed_prompt"]["score"].as_f64(),
        "{summary:#}"
    );
    assert_eq!(results["algorithm"], "apo");

    let dev = run(&[
        "dev",
        "--agent",
        "agent.wasm",
        "--train",
        "val.jsonl",
        "--resources",
        "resources.json",
        "--llm-script",
        "rules.json",
    ]);
    assert!(dev.status.success(), "{}", text(&dev));
    assert!(
        String::from_utf8_lossy(&dev.stdout).contains("algorithm baseline"),
        "{}",
        text(&dev)
    );
    assert!(home.join(".cache/agl-host").is_dir(), "the compile cache is the user's");

    // A crate folder needs the toolchain: without one, one clear line, exit code 2.
    std::fs::create_dir_all(work.join("my-agent")).expect("dir");
    std::fs::write(work.join("my-agent/Cargo.toml"), "[package]\nname = \"my-agent\"\n").expect("manifest");
    let no_toolchain = run(&[
        "dev",
        "--agent",
        "my-agent",
        "--train",
        "val.jsonl",
        "--llm-script",
        "rules.json",
    ]);
    assert_eq!(no_toolchain.status.code(), Some(2), "{}", text(&no_toolchain));
    assert!(
        String::from_utf8_lossy(&no_toolchain.stderr).contains("is the Rust toolchain on PATH?"),
        "{}",
        text(&no_toolchain)
    );
    let _ = std::fs::remove_dir_all(&base);
}

/// The hostile cases every path must bound the same way: a trace flood far past the span budget
/// that then returns 0.5 (kept), and a NaN reward (the attempt fails, saying so).
fn hostile_tasks(dir: &Path) -> PathBuf {
    let train = dir.join("train.jsonl");
    write_jsonl(
        &train,
        &[
            serde_json::json!({"do": "trace_flood", "kind": "log", "count": 3000, "bytes": 65536, "then": 0.5}),
            serde_json::json!({"do": "emit_reward", "value": "nan"}),
        ],
    );
    train
}

/// What every strategy must report for [`hostile_tasks`]: one success with its reward, one
/// failure with the host's reason.
fn assert_hostile_results(results: &Value, how: &str) {
    let train = &results["splits"]["train"];
    assert_eq!(
        (train["succeeded"].as_u64(), train["failed"].as_u64()),
        (Some(1), Some(1)),
        "{how}: {results:#}"
    );
    assert_eq!(
        train["mean_reward_succeeded"], 0.5,
        "{how}: the flood's returned reward is kept: {results:#}"
    );
    let reasons = results["failure_reasons"].to_string();
    assert!(
        reasons.contains("a host call refused: reward.emit: NaN is not a reward"),
        "{how}: {reasons}"
    );
}

#[test]
fn hostile_agents_are_bounded_the_same_way_on_every_path() {
    let dir = temp_dir("hostile");
    let train = hostile_tasks(&dir);
    let budget = ["--agent-max-span-bytes", "1MiB"];
    for strategy in ["shared-memory", "client-server"] {
        let out = dir.join(format!("{strategy}.json"));
        let run = probe_run("baseline", &train)
            .flag("--strategy", strategy)
            .flag(budget[0], budget[1])
            .flag("--output", &out)
            .output();
        assert!(run.status.success(), "{strategy}: {}", text(&run));
        assert_hostile_results(&read_results(&out), strategy);
    }

    // A store, a runner elsewhere with the same limits, and the algorithm from the command line.
    let (mut store, url) = start_store(None);
    let (mut runner, _runner_lines) = start_probe_runner(&url, &budget);
    let out = dir.join("remote.json");
    let run = Cli::new("run")
        .flag("--store", &url)
        .flag("--algo", "baseline")
        .flag("--train", &train)
        .flag("--output", &out)
        .output();
    assert!(run.status.success(), "remote runner: {}", text(&run));
    assert_hostile_results(&read_results(&out), "remote runner");
    for child in [&mut runner, &mut store] {
        let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
        let _ = child.wait();
    }
}
