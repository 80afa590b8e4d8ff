//! `agl-host replay` and `agl-host fork` on runs of the real binary with the scripted LLM: the
//! math agent in Rust, Python, JavaScript and C replays identically from its recording; a changed
//! build of the JavaScript one is refused as the run's agent and, checked with `--agent`, reported
//! diverged at its LLM call with a diff that shows the change; a fork at the LLM call makes a new
//! rollout of the run that names its parent and whose spans before the fork are the parent's; a run
//! made with `--no-record` has nothing to replay. Runs are kept in SQLite files in scratch folders.

use crate::agents::{agl_host, repo, scratch, text};
use agl_store::{Rollout, RolloutQuery, Span};
use agl_store_db::DbUrl;
use serde_json::Value;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;

/// Runs `future` to its end on a runtime of its own.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(future)
}

/// The store of the run kept in `db`, opened to read.
fn open(db: &Path) -> Arc<dyn agl_store::StoreBackend> {
    agl_runs::open::open_to_read(&DbUrl::Sqlite(db.to_owned())).expect("the run's store opens")
}

/// `agl-host dev` of `agent` on two of the math agent's tasks with its scripted LLM, kept in
/// `dir/run.db` (then `extra`); returns the database's path.
fn kept_run(agent: &Path, dir: &Path, extra: &[&str]) -> PathBuf {
    let val = std::fs::read_to_string(repo().join("examples/math-agent/data/val.jsonl")).expect("tasks");
    let train = dir.join("train.jsonl");
    let tasks: Vec<&str> = val.lines().take(2).collect();
    std::fs::write(&train, tasks.join("\n") + "\n").expect("tasks written");
    let db = dir.join("run.db");
    let mut args: Vec<String> = vec!["dev".into(), "--agent".into(), agent.display().to_string()];
    args.extend(["--train".into(), train.display().to_string(), "--llm-script".into()]);
    args.push(repo().join("examples/math-agent/rules.json").display().to_string());
    args.extend([
        "--db".into(),
        format!("sqlite:{}", db.display()),
        "--no-progress".into(),
    ]);
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    let run = agl_host(&args);
    assert!(run.status.success(), "{}", text(&run));
    db
}

/// The rollouts of the run kept in `db`.
fn rollouts(db: &Path) -> Vec<Rollout> {
    let store = open(db);
    let page = block_on(store.query_rollouts(&RolloutQuery::default())).expect("rollouts");
    page.items.into_iter().map(|view| view.rollout).collect()
}

/// The spans of the latest attempt of `rollout_id` in `db`.
fn spans(db: &Path, rollout_id: &str) -> Vec<Arc<Span>> {
    let store = open(db);
    let view = block_on(store.get_rollout_by_id(rollout_id))
        .expect("read")
        .expect("the rollout is there");
    let attempt = view.attempt.expect("an attempt").attempt_id;
    block_on(agl_runs::read::spans_of(store.as_ref(), &view.rollout, Some(&attempt))).expect("spans")
}

fn replay(args: &[&str]) -> Output {
    let mut all = vec!["replay"];
    all.extend_from_slice(args);
    agl_host(&all)
}

/// Every rollout of the run kept in `db` replays identically (exit 0), one by one.
fn assert_replays_identically(db: &Path) {
    let db_arg = db.display().to_string();
    let kept = rollouts(db);
    assert_eq!(kept.len(), 2, "{kept:#?}");
    for rollout in &kept {
        let replayed = replay(&[&db_arg, &rollout.rollout_id]);
        assert_eq!(replayed.status.code(), Some(0), "{}", text(&replayed));
        let said = String::from_utf8_lossy(&replayed.stdout);
        assert!(said.contains("\nidentical: succeeded, reward 1.0000"), "{said}");
        assert!(
            said.contains("openai.chat.completion"),
            "the span tree is printed: {said}"
        );
    }
}

#[test]
fn replay_of_the_rust_math_agent_is_identical_and_a_fork_keeps_the_parents_prefix() {
    let dir = scratch("agl-replay", "rust");
    let agent = agl_guest_build::build_guest("examples/math-agent").expect("the Rust math agent builds");
    let db = kept_run(&agent, &dir, &[]);
    assert_replays_identically(&db);
    let db_arg = db.display().to_string();

    // The whole run at once, as a regression check: every attempt identical.
    let all = replay(&[&db_arg, "--json"]);
    assert_eq!(all.status.code(), Some(0), "{}", text(&all));
    let report: Value = serde_json::from_slice(&all.stdout).expect("JSON");
    assert_eq!(report["counts"]["identical"], 2, "{report:#}");
    assert_eq!(report["ok"], true, "{report:#}");

    // A fork at the (only) LLM call, answered "no idea": a new rollout of the run.
    let parent = rollouts(&db).remove(0);
    let forked = agl_host([
        "fork",
        &db_arg,
        &parent.rollout_id,
        "--at-llm-call",
        "1",
        "--reply",
        "no idea",
        "--branches",
        "1",
        "--json",
    ]);
    assert_eq!(forked.status.code(), Some(0), "{}", text(&forked));
    let report: Value = serde_json::from_slice(&forked.stdout).expect("JSON");
    let branch = &report["branches"][0];
    assert_eq!(branch["status"], "succeeded", "{report:#}");
    assert_eq!(branch["reward"], 0.0, "no number in the reply: {report:#}");
    let child_id = branch["rollout_id"].as_str().expect("the new rollout's id");

    let store = open(&db);
    let child = block_on(store.get_rollout_by_id(child_id))
        .expect("read")
        .expect("the fork is in the run's store")
        .rollout;
    assert_eq!(child.input, parent.input);
    assert_eq!(child.mode, parent.mode);
    let fork = &child.metadata.as_ref().expect("metadata")["agl.fork"];
    assert_eq!(fork["parent_rollout_id"], parent.rollout_id.as_str(), "{fork:#}");
    let lineage = (
        fork["at_llm_call"].as_u64(),
        fork["branch"].as_u64(),
        fork["branches"].as_u64(),
    );
    assert_eq!(lineage, (Some(1), Some(0), Some(1)), "{fork:#}");
    assert!(
        fork["parent_attempt_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("at-"))
    );

    // Its spans before the LLM call are the parent's; the LLM call's answer is the reply.
    let (parent_spans, child_spans) = (spans(&db, &parent.rollout_id), spans(&db, child_id));
    let before_llm = agl_trace::compare::comparable(&parent_spans)
        .iter()
        .position(|span| span.name == "openai.chat.completion")
        .expect("the parent's LLM span");
    assert!(before_llm >= 1, "a prefix to compare");
    assert_eq!(
        agl_trace::compare::first_difference(&parent_spans, &child_spans, Some(before_llm)),
        None
    );
    assert!(agl_trace::compare::first_difference(&parent_spans, &child_spans, Some(before_llm + 1)).is_some());

    // The fork was recorded whole: it replays identically too; the whole run's replay leaves
    // it out (it is not one of the run's tasks).
    let again = replay(&[&db_arg, child_id]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    let all = replay(&[&db_arg, "--json"]);
    let report: Value = serde_json::from_slice(&all.stdout).expect("JSON");
    assert_eq!(report["counts"]["identical"], 2, "{report:#}");

    // `show` lists the fork apart from the run's tasks, which it still counts as 2.
    let shown = agl_host(["show", &db_arg]);
    let said = text(&shown);
    assert!(said.contains("\n2 rollouts: 2 succeeded"), "{said}");
    let fork_line = format!(
        "+ {child_id}  a fork of {} at LLM call 1 (branch 0 of 1)",
        parent.rollout_id
    );
    assert!(said.contains(&fork_line), "{said}");

    // A fork point the attempt does not have, and a live call with no LLM, are refused.
    for (k, said) in [("0", "give 1 (the first) to 1"), ("2", "made 1 LLM call(s)")] {
        let refused = agl_host(["fork", &db_arg, &parent.rollout_id, "--at-llm-call", k, "--reply", "x"]);
        assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
        assert!(
            String::from_utf8_lossy(&refused.stderr).contains(said),
            "{}",
            text(&refused)
        );
    }
    let no_llm = agl_host(["fork", &db_arg, &parent.rollout_id, "--at-llm-call", "1"]);
    assert_eq!(no_llm.status.code(), Some(2), "{}", text(&no_llm));
    assert!(
        String::from_utf8_lossy(&no_llm.stderr).contains("give --reply TEXT"),
        "{}",
        text(&no_llm)
    );
}

#[test]
fn an_attempt_made_with_no_record_has_nothing_to_replay() {
    let dir = scratch("agl-replay", "no-record");
    let agent = agl_guest_build::build_guest("examples/math-agent").expect("the Rust math agent builds");
    let db = kept_run(&agent, &dir, &["--no-record"]);
    let rollout = rollouts(&db).remove(0);
    let replayed = replay(&[&db.display().to_string(), &rollout.rollout_id]);
    assert_eq!(replayed.status.code(), Some(2), "{}", text(&replayed));
    assert!(
        String::from_utf8_lossy(&replayed.stderr)
            .contains("this attempt has no recording (the run was made with --no-record or before recordings existed)"),
        "{}",
        text(&replayed)
    );
}

#[test]
fn replay_of_the_python_math_agent_is_identical() {
    let dir = scratch("agl-replay", "python");
    let db = kept_run(&repo().join("examples/math-agent-py"), &dir, &[]);
    assert_replays_identically(&db);
}

#[agl_testkit::needs(c_toolchain)]
#[test]
fn replay_of_the_c_agent_is_identical() {
    let dir = scratch("agl-replay", "c");
    let db = kept_run(crate::c_agent::c_agent(), &dir, &[]);
    assert_replays_identically(&db);
}

/// Copies the JavaScript math agent's sources into `to`.
fn copy_js_agent(to: &Path) {
    std::fs::create_dir_all(to).expect("agent folder");
    for file in ["agent.js", "grading.js", "package.json"] {
        std::fs::copy(repo().join("examples/math-agent-js").join(file), to.join(file)).expect("copied");
    }
}

#[test]
fn replay_of_the_js_math_agent_is_identical_and_a_changed_build_diverges_at_its_llm_call() {
    let dir = scratch("agl-replay", "js");
    let agent = dir.join("math-agent-js");
    copy_js_agent(&agent);
    let db = kept_run(&agent, &dir, &[]);
    assert_replays_identically(&db);
    let db_arg = db.display().to_string();

    // The prompt changed, and the build with it.
    let source = agent.join("agent.js");
    let code = std::fs::read_to_string(&source).expect("agent.js");
    let changed = code.replace(
        "ctx.llm.ask(prompt)",
        "ctx.llm.ask(prompt + '\\nThink it over carefully.')",
    );
    assert_ne!(changed, code, "the agent asks its LLM as expected");
    std::fs::write(&source, changed).expect("changed");
    let built = agl_host([OsStr::new("build"), agent.as_os_str()]);
    assert!(built.status.success(), "{}", text(&built));

    // The run's own agent (the folder, rebuilt) is no longer the one recorded.
    let rollout = rollouts(&db).remove(0);
    let refused = replay(&[&db_arg, &rollout.rollout_id]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr)
            .contains("the agent changed since the run: pass --agent PATH to check a new build against the record"),
        "{}",
        text(&refused)
    );

    // Checked against the record: each attempt diverges at its LLM call, the diff shows why.
    let store = open(&db);
    let recording = block_on(
        store.get_recording(
            &rollout.rollout_id,
            &block_on(store.get_rollout_by_id(&rollout.rollout_id))
                .expect("read")
                .expect("rollout")
                .attempt
                .expect("attempt")
                .attempt_id,
        ),
    )
    .expect("read")
    .expect("recorded");
    let tape = agl_wasm::tape::Tape::from_recording(&recording).expect("a tape");
    let first_llm_call = tape
        .calls
        .iter()
        .position(|call| call.call == "llm.chat")
        .expect("an LLM call")
        + 1;
    let checked = replay(&[&db_arg, "--agent", &agent.display().to_string(), "--json"]);
    assert_eq!(checked.status.code(), Some(1), "{}", text(&checked));
    let report: Value = serde_json::from_slice(&checked.stdout).expect("JSON");
    assert_eq!(report["counts"]["diverged"], 2, "{report:#}");
    assert_eq!(report["ok"], false);
    for attempt in report["attempts"].as_array().expect("attempts") {
        assert_eq!(attempt["class"], "diverged", "{attempt:#}");
        let divergence = &attempt["divergence"];
        assert_eq!(divergence["call"], "llm.chat", "{divergence:#}");
        assert_eq!(
            divergence["call_number"].as_u64(),
            Some(first_llm_call as u64),
            "{divergence:#}"
        );
        let diff = divergence["diff"].as_str().expect("a diff");
        assert!(
            diff.lines()
                .any(|l| l.starts_with('+') && l.contains("Think it over carefully.")),
            "{diff}"
        );
        assert!(
            diff.lines().any(|l| l.starts_with('-') && !l.contains("Think it over")),
            "{diff}"
        );
    }
    // As text: the same verdict, and the diff.
    let said = replay(&[&db_arg, "--agent", &agent.display().to_string()]);
    assert_eq!(said.status.code(), Some(1), "{}", text(&said));
    let out = String::from_utf8_lossy(&said.stdout);
    assert!(
        out.contains(&format!("diverged at host call #{first_llm_call} (llm.chat)")),
        "{out}"
    );
    assert!(
        out.contains("2 attempt(s) replayed: 0 identical, 0 same-reward, 0 reward-changed, 2 diverged"),
        "{out}"
    );

    // Going on live with the run's LLM: the changed prompt still gets the right answers.
    let rules = repo().join("examples/math-agent/rules.json").display().to_string();
    let live = replay(&[
        &db_arg,
        "--agent",
        &agent.display().to_string(),
        "--live",
        "--llm-script",
        &rules,
        "--json",
    ]);
    let report: Value = serde_json::from_slice(&live.stdout).expect("JSON");
    assert_eq!(live.status.code(), Some(0), "{}\n{report:#}", text(&live));
    assert_eq!(report["counts"]["same-reward"], 2, "{report:#}");
}
