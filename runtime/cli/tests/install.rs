//! The installed binary stands alone: `cargo install --path runtime/cli` (into a temporary root;
//! as a debug build in this build's own target directory, so that it reuses what the tests
//! compiled), then `agl-host run --algo apo` and `agl-host dev` on a `.wasm` agent from an empty
//! directory, with no Rust toolchain on PATH, a fresh HOME and nothing else in the environment.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    agl_guest_build::repo_root()
}

fn text(output: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// `cargo install --path runtime/cli --root ROOT`, reusing `<target>` (the one holding
/// CARGO_TARGET_TMPDIR); returns the installed binary.
fn install(root: &Path) -> PathBuf {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is <target>/tmp");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args(["install", "--locked", "--offline", "--debug", "--path"])
        .arg(repo().join("runtime/cli"))
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
    let base = std::env::temp_dir().join(format!("agl-install-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
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
