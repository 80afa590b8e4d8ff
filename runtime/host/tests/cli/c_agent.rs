//! End to end: the C agent of `examples/c-agent`, built with `agl-c-guest` (wit-bindgen-c
//! bindings, clang for WASI preview 1, the reactor adapter), run by the real `agl-host` binary
//! with the scripted LLM: it scores exactly like the Rust math agent under APO, and its task,
//! resource and LLM errors fail attempts with its own messages. Its C unit tests run natively.
//!
//! Needs clang, lld and Debian's wasi-libc (`apt-get install clang lld wasi-libc
//! libclang-rt-14-dev-wasm32`), found by `agl-test-tools`. Without them each test is ignored,
//! with the reason, except under `CI=true`, where a missing toolchain fails the test.

use agl_c_guest::Toolchain;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::agents;
use agents::{read_results, repo, text};

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("agl-c-agent-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// The C toolchain (`agl_testkit::c_tools`), checked once per test process. The tests that use
/// it carry `#[agl_testkit::needs(c_toolchain)]`: ignored where the build found none.
///
/// # Panics
/// When it is missing (under `CI=true`, or with `--include-ignored`) or does not build.
fn toolchain() -> &'static Toolchain {
    static CHECKED: OnceLock<Result<Toolchain, String>> = OnceLock::new();
    let checked = CHECKED.get_or_init(|| {
        let found = agl_testkit::c_tools();
        let toolchain = Toolchain {
            clang: found.clang,
            sysroot: found.sysroot,
            ..Toolchain::default()
        };
        toolchain
            .check(&scratch("probe"))
            .map(|()| toolchain)
            .map_err(|e| e.to_string())
    });
    match checked {
        Ok(toolchain) => toolchain,
        Err(reason) => panic!("the C toolchain does not build a WASI component: {reason}"),
    }
}

/// `examples/c-agent`, built once per test process. The example must compile without a warning
/// under `-Wall -Wextra`. (Also `replay.rs`'s.)
pub(crate) fn c_agent() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let toolchain = toolchain();
    BUILT.get_or_init(|| {
        let out = scratch("build").join("c_agent.wasm");
        let built = agl_c_guest::build_agent(&repo().join("examples/c-agent"), &out, toolchain)
            .unwrap_or_else(|e| panic!("building examples/c-agent: {e}"));
        assert!(built.warnings.is_empty(), "clang warned:\n{}", built.warnings);
        built.component
    })
}

fn agl_host(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    agents::agl_host(args.iter().map(|a| a.as_ref()))
}

/// The README's APO demo (examples/math-agent/apo) with `agent`; returns the results.
fn apo_run(agent: &Path, out: &Path) -> Value {
    let output = agents::agl_host(agents::apo_args(agent, out));
    assert!(output.status.success(), "{}", text(&output));
    read_results(out)
}

#[agl_testkit::needs(c_toolchain)]
#[test]
fn the_c_agent_scores_like_the_rust_math_agent_under_apo() {
    let c_agent = c_agent();
    let dir = scratch("apo");
    let c = apo_run(c_agent, &dir.join("c.json"));
    let rust_agent = agl_guest_build::build_guest("examples/math-agent").expect("building examples/math-agent");
    let rust = apo_run(&rust_agent, &dir.join("rust.json"));

    assert_eq!(c["status"], "completed", "{c:#}");
    assert_eq!(c["total"]["failed"], 0, "{c:#}");
    // The scripted model appends a stray number to half the answers unless the prompt asks for
    // the answer on the last line: the seed prompt scores 0.5 and APO finds one scoring 1.0, which
    // only happens if the C agent fills the template and grades the replies as the Rust one does.
    assert_eq!(c["best"]["score"].as_f64(), Some(1.0), "{c:#}");
    let template = c["best"]["resources"]["prompt"]["template"]
        .as_str()
        .expect("a template");
    assert!(template.contains("last line"), "{template}");
    // Same rollouts, same rewards, split by split, as the Rust agent.
    assert_eq!(c["splits"], rust["splits"], "C:\n{c:#}\nRust:\n{rust:#}");
    assert_eq!(c["best"]["resources"], rust["best"]["resources"]);
}

#[agl_testkit::needs(c_toolchain)]
#[test]
fn the_c_agent_reports_its_task_resource_and_llm_errors() {
    let c_agent = c_agent();
    let dir = scratch("errors");
    let math = repo().join("examples/math-agent");
    let train = dir.join("train.jsonl");
    // A \u escape decoded into the question the rules match, a numeric answer, a wrong answer,
    // a task without a question, a question that is not text.
    let tasks = [
        r#"{"question": "Tom has 12 apples\u0020and buys 7 more. How many apples does he have now?", "answer": 19}"#,
        r#"{"question": "A box holds 6 eggs. How many eggs are in 8 boxes?", "answer": "49"}"#,
        r#"{"answer": "19"}"#,
        r#"{"question": ["x"], "answer": "1"}"#,
    ];
    std::fs::write(&train, tasks.join("\n") + "\n").expect("tasks");
    let out = dir.join("results.json");
    // No --resources: the agent's fallback prompt.
    let output = agl_host(&[
        &"dev",
        &"--agent",
        &c_agent,
        &"--train",
        &train,
        &"--llm-script",
        &math.join("rules.json"),
        &"--output",
        &out,
    ]);
    assert!(output.status.success(), "{}", text(&output));
    let results = read_results(&out);
    let split = &results["splits"]["train"];
    assert_eq!(split["succeeded"], 2, "{results:#}");
    assert_eq!(split["failed"], 2, "{results:#}");
    assert_eq!(split["mean_reward_succeeded"].as_f64(), Some(0.5), "{results:#}");
    let reasons = results["failure_reasons"].to_string();
    assert!(reasons.contains("task member `question`: no such member"), "{reasons}");
    assert!(
        reasons.contains("task member `question`: not a string or number"),
        "{reasons}"
    );

    // A `prompt` resource that is not a template, and an LLM budget of zero calls.
    let resources = dir.join("resources.json");
    let llm = r#"{"prompt": {"resource_type": "llm", "endpoint": "http://127.0.0.1:9/v1", "model": "m", "sampling_parameters": {}}}"#;
    std::fs::write(&resources, llm).expect("resources");
    let one_task = dir.join("one.jsonl");
    std::fs::write(&one_task, format!("{}\n", tasks[1])).expect("task");
    for (extra, reason) in [
        (
            ["--resources", resources.to_str().expect("utf-8 path")],
            "resource `prompt` is an LLM endpoint, not a prompt template",
        ),
        (["--agent-llm-calls", "0"], "LLM budget exceeded: calls"),
    ] {
        let output = agl_host(&[
            &"dev",
            &"--agent",
            &c_agent,
            &"--train",
            &one_task,
            &"--llm-script",
            &math.join("rules.json"),
            &"--output",
            &out,
            &extra[0],
            &extra[1],
        ]);
        // Every rollout failed: exit 3.
        assert_eq!(output.status.code(), Some(3), "{}", text(&output));
        let results = read_results(&out);
        assert_eq!(results["total"]["failed"], 1, "{results:#}");
        let reasons = results["failure_reasons"].to_string();
        assert!(reasons.contains(reason), "{reasons}");
    }
}

#[agl_testkit::needs(c_toolchain)]
#[test]
fn the_c_agent_unit_tests_pass_natively() {
    let toolchain = toolchain();
    let example = repo().join("examples/c-agent");
    let binary = scratch("unit").join("unit");
    let compile = Command::new(&toolchain.clang)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(&example)
        .args(["tests/unit.c", "json.c", "grading.c"].map(|f| example.join(f)))
        .args(["-lm", "-o"])
        .arg(&binary)
        .output()
        .expect("clang runs");
    assert!(compile.status.success(), "{}", text(&compile));
    let run = Command::new(&binary).output().expect("unit tests run");
    assert!(run.status.success(), "{}", text(&run));
    assert!(
        String::from_utf8_lossy(&run.stdout).contains("all checks passed"),
        "{}",
        text(&run)
    );
}

#[agl_testkit::needs(c_toolchain)]
#[test]
fn a_c_folder_is_an_agent_for_run_and_build() {
    toolchain();
    let folder = repo().join("examples/c-agent");
    let out = scratch("folder").join("agent.wasm");
    let output = agl_host(&[&"build", &folder, &"-o", &out]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("(C)"),
        "{}",
        text(&output)
    );
    assert_eq!(&std::fs::read(&out).expect("copied")[..4], b"\0asm");
    let math = repo().join("examples/math-agent");
    let output = agl_host(&[
        &"dev",
        &"--agent",
        &folder,
        &"--train",
        &math.join("data/val.jsonl"),
        &"--resources",
        &math.join("initial-resources.json"),
        &"--llm-script",
        &math.join("rules.json"),
    ]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("1.0000"),
        "{}",
        text(&output)
    );
}
