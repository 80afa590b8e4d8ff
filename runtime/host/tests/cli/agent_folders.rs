//! An agent given as a folder, end to end with the real binary: the folder's own `agent.toml` is
//! its sandbox manifest (its HTTP grant takes effect; a malformed one is refused naming the
//! file), and the folder is rebuilt only when a file its build reads changes — data, results
//! and notes written into it are not — saying why when it is (`rebuilding agent: src/lib.rs
//! changed`).

use crate::agents;

use agents::{agl_host, answer_once, read_results, repo, scratch, text};
use serde_json::json;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A copy of the HTTP probe guest crate in `dir/agent`, its SDK path made absolute.
fn probe_folder(dir: &Path) -> PathBuf {
    let source = repo().join("tests/guests/http-probe");
    let agent = dir.join("agent");
    std::fs::create_dir_all(agent.join("src")).expect("agent dir");
    let manifest = std::fs::read_to_string(source.join("Cargo.toml")).expect("Cargo.toml");
    let sdk = repo().join("sdk/rust");
    let manifest = manifest.replace("\"../../../sdk/rust\"", &format!("{:?}", sdk.display().to_string()));
    assert!(
        manifest.contains(&sdk.display().to_string()),
        "the SDK path is rewritten"
    );
    std::fs::write(agent.join("Cargo.toml"), manifest).expect("write");
    std::fs::copy(source.join("Cargo.lock"), agent.join("Cargo.lock")).expect("copy");
    std::fs::copy(source.join("src/lib.rs"), agent.join("src/lib.rs")).expect("copy");
    agent
}

/// `agl-host run` of the agent folder on `tasks` (written into the folder, as a user keeps
/// them), results into the folder too.
fn run(agent: &Path, tasks: &[serde_json::Value]) -> Output {
    let train = agent.join("train.jsonl");
    let lines: Vec<String> = tasks.iter().map(ToString::to_string).collect();
    std::fs::write(&train, lines.join("\n") + "\n").expect("tasks");
    let rules = repo().join("examples/math-agent/rules.json");
    let args: Vec<OsString> = vec![
        "run".into(),
        "--agent".into(),
        agent.into(),
        "--algo".into(),
        "baseline".into(),
        "--no-progress".into(),
        "--train".into(),
        train.into(),
        "--llm-script".into(),
        rules.into(),
        "--output".into(),
        agent.join("results.json").into(),
    ];
    agl_host(args)
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_folder_agents_manifest_is_read_from_the_folder_and_only_sources_rebuild_it() {
    let dir = scratch("agent-folders", "probe");
    let agent = probe_folder(&dir);
    // A source unlike any earlier run's: the cache is shared across test runs.
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_nanos();
    let lib = agent.join("src/lib.rs");
    let mut source = std::fs::read_to_string(&lib).expect("lib.rs");
    source.push_str(&format!("\n// run {nonce}\n"));
    std::fs::write(&lib, &source).expect("write");

    // The folder's agent.toml grants the loopback server: the request reaches it.
    let (addr, server) = answer_once(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nhi");
    std::fs::write(
        agent.join("agent.toml"),
        format!("[http]\nallowed-outbound-hosts = [\"http://{addr}\"]\n"),
    )
    .expect("manifest");
    let first = run(
        &agent,
        &[json!({"requests": [{"url": format!("http://{addr}/hello")}]})],
    );
    assert!(first.status.success(), "{}", text(&first));
    let results = read_results(&agent.join("results.json"));
    assert_eq!(
        results["total"]["mean_reward"].as_f64(),
        Some(1.0),
        "the folder's agent.toml grants the host: {results:#}\n{}",
        text(&first)
    );
    assert!(
        server.join().expect("server").starts_with("GET /hello"),
        "the granted request arrives"
    );
    let said = stderr(&first);
    assert!(
        said.contains("building agent: first build") || said.contains("rebuilding agent: src/lib.rs changed"),
        "a build says why: {said}"
    );

    // Data, results (written by the run above) and notes are not sources: no rebuild.
    std::fs::write(agent.join("NOTES.md"), "try a larger budget").expect("notes");
    std::fs::create_dir_all(agent.join("data")).expect("data dir");
    std::fs::write(agent.join("data/extra.jsonl"), "{}\n").expect("data");
    let second = run(&agent, &[json!({"requests": []})]);
    assert!(second.status.success(), "{}", text(&second));
    let said = stderr(&second);
    assert!(!said.contains("building agent:"), "no rebuild for data: {said}");
    assert!(
        !said.contains("building the agent") && said.contains("is up to date ->"),
        "the cached build is said to be current: {said}"
    );

    // A source edit is rebuilt, and the line says which file.
    source.push_str("// edited\n");
    std::fs::write(&lib, &source).expect("write");
    let third = run(&agent, &[json!({"requests": []})]);
    assert!(third.status.success(), "{}", text(&third));
    let said = stderr(&third);
    assert!(said.contains("rebuilding agent: src/lib.rs changed"), "{said}");

    // `agl-host build -o` puts the folder's manifest beside the copy, where a `.wasm`'s is read.
    let out = dir.join("probe.wasm");
    let build =
        agl_host(["build".as_ref(), agent.as_os_str(), "-o".as_ref(), out.as_os_str()] as [&std::ffi::OsStr; 4]);
    assert!(build.status.success(), "{}", text(&build));
    assert!(out.is_file(), "{}", text(&build));
    assert_eq!(
        std::fs::read_to_string(dir.join("probe.toml")).expect("the manifest is copied"),
        std::fs::read_to_string(agent.join("agent.toml")).expect("manifest")
    );

    // A malformed manifest is refused, naming the file.
    std::fs::write(agent.join("agent.toml"), "timeout = 5\n").expect("manifest");
    let fourth = run(&agent, &[json!({"requests": []})]);
    assert_eq!(fourth.status.code(), Some(2), "{}", text(&fourth));
    let said = stderr(&fourth);
    let named = format!("sandbox manifest {} is invalid", agent.join("agent.toml").display());
    assert!(said.contains(&named), "{named}\n{said}");
    let _ = std::fs::remove_dir_all(&dir);
}
