//! `agl-host fork RUN ROLLOUT --at-llm-call K`: a recorded attempt replayed up to its K-th LLM
//! call (every host call before it answered from the recording), which gets `--reply TEXT` or a
//! live LLM, and run on live from there — as M new rollouts of the run's own store (the parent's
//! task, split and resources; metadata `agl.fork` names the parent), each one attempt whose spans
//! and recording are kept and which is finalized as a runner finalizes its attempts.

use crate::args::ForkArgs;
use crate::inputs::InputError;
use crate::llm;
use crate::output::{one_line, print, stderr_line};
use crate::replay_run::{self, FromTape, NO_RECORDING, status_word};
use crate::table;
use agl_llm::LlmBackend;
use agl_store::{JsonMap, LightningStore, StoreOptions, SystemClock};
use agl_wasm::SpanRecorder;
use agl_wasm::tape::{ForkPoint, LLM_CHAT, OnDivergence, ReplayPlan, Tape};
use anyhow::Context;
use serde::Serialize;
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// One branch made.
#[derive(Debug, Serialize)]
struct Branch {
    branch: u16,
    rollout_id: String,
    attempt_id: String,
    status: String,
    reward: Option<f64>,
    failure: Option<String>,
}

#[derive(Serialize)]
struct ForkJson<'a> {
    db: &'a str,
    run_id: Option<&'a str>,
    parent_rollout_id: &'a str,
    parent_attempt_id: &'a str,
    at_llm_call: u32,
    branches: &'a [Branch],
}

pub async fn run(args: ForkArgs) -> anyhow::Result<ExitCode> {
    let (opened, url, rollout) = replay_run::open_run(&args.recorded, args.rollout.clone()).await?;
    let prefix =
        rollout.ok_or_else(|| InputError("fork needs a ROLLOUT: the rollout whose attempt is forked".into()))?;
    let (parent, attempt) = replay_run::rollout_attempt(&opened, &prefix, args.attempt).await?;
    let tape = replay_run::tape_of(opened.store.as_ref(), &parent, &attempt)
        .await?
        .ok_or_else(|| InputError(NO_RECORDING.into()))?;
    let k = args.at_llm_call;
    let llm_calls = tape.llm_calls();
    check_fork_point(k, llm_calls, &args)?;
    let llm: Arc<dyn LlmBackend> = if args.llm.is_configured() {
        llm::backend(&args.llm)?
    } else {
        crate::llm::Refusing::record_only()
    };
    let answer = args
        .reply
        .as_deref()
        .map(|text| agl_wasm::scripted_answer(text, &recorded_model(&tape, k)));
    let loaded = replay_run::load_agent(
        opened.record.as_ref(),
        None,
        &args.recorded.agent_env,
        u32::from(args.branches.min(64)) + 4,
    )?;
    loaded.check_against(&tape)?;

    // The run's own store, to write into: no watchdog (the run's other attempts are left as
    // they are).
    let options = StoreOptions {
        watchdog_interval: None,
        clock: Arc::new(SystemClock),
    };
    let store: Arc<dyn LightningStore> = agl_store_db::open(&url, options)?;
    let runner = Arc::new(FromTape {
        recorder: Arc::new(SpanRecorder::new(store.clone(), Duration::from_millis(50))),
        store,
        agent: loaded.agent.clone(),
        llm,
    });
    if !args.json {
        stderr_line(&format!(
            "forking rollout {} (attempt {}) of {} at LLM call {k} of {llm_calls}: {} branch(es) · LLM: {}",
            parent.rollout_id,
            attempt.sequence_id,
            replay_run::run_label(&opened),
            args.branches,
            match &args.reply {
                Some(_) if args.llm.is_configured() => format!("--reply for call {k}, then {}", runner.llm.describe()),
                Some(_) => format!("--reply for call {k}"),
                None => runner.llm.describe(),
            }
        ));
    }

    let parent = Arc::new(parent);
    let tape = Arc::new(tape);
    let mut tasks = tokio::task::JoinSet::new();
    let gate = Arc::new(tokio::sync::Semaphore::new(8));
    // Branches are numbered from 0, as `agl.fork`'s readers (export, the dashboard) take them.
    for branch in 0..args.branches {
        let (runner, parent, tape, gate) = (runner.clone(), parent.clone(), tape.clone(), gate.clone());
        let metadata = fork_metadata(&parent.rollout_id, &attempt.attempt_id, k, branch, args.branches);
        let plan = ReplayPlan {
            tape: Tape::clone(&tape),
            on_divergence: OnDivergence::Stop,
            fork: Some(ForkPoint {
                at_llm_call: k,
                answer: answer.clone(),
            }),
        };
        tasks.spawn(async move {
            let _permit = gate.acquire_owned().await;
            let ran = runner
                .run(&parent, parent.resources_id.clone(), Some(metadata), plan, true)
                .await?;
            anyhow::Ok(Branch {
                branch,
                rollout_id: ran.rollout.rollout_id,
                attempt_id: ran.attempt.attempt_id,
                status: status_word(&ran.outcome).to_owned(),
                reward: ran.outcome.reward,
                failure: ran.outcome.failure,
            })
        });
    }
    let mut branches = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        branches.push(joined.context("a branch stopped")??);
    }
    branches.sort_by_key(|b| b.branch);

    if args.json {
        let report = ForkJson {
            db: &opened.place,
            run_id: opened.record.as_ref().map(|r| r.run_id.as_str()),
            parent_rollout_id: &parent.rollout_id,
            parent_attempt_id: &attempt.attempt_id,
            at_llm_call: k,
            branches: &branches,
        };
        print(&format!("{}\n", serde_json::to_string_pretty(&report)?));
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = String::new();
    for branch in &branches {
        let failure = branch
            .failure
            .as_deref()
            .map_or_else(String::new, |f| format!("  {}", one_line(f)));
        let _ = writeln!(
            out,
            "{}  {:<9}  reward {}{failure}",
            branch.rollout_id,
            branch.status,
            table::score(branch.reward)
        );
    }
    if let Some(first) = branches.first() {
        let _ = writeln!(
            out,
            "one branch's spans: agl-host show {} {}",
            opened.name, first.rollout_id
        );
    }
    print(&out);
    Ok(ExitCode::SUCCESS)
}

/// Refuses a fork point the tape does not hold, and a fork that would need an LLM it was not
/// given, or whose branches would all be the same.
fn check_fork_point(k: u32, llm_calls: usize, args: &ForkArgs) -> Result<(), InputError> {
    if llm_calls == 0 {
        return Err(InputError(
            "the recorded attempt made no LLM call: there is nothing to fork at".into(),
        ));
    }
    if k == 0 || k as usize > llm_calls {
        return Err(InputError(format!(
            "--at-llm-call {k}: the recorded attempt made {llm_calls} LLM call(s); give 1 (the first) to {llm_calls}"
        )));
    }
    let has_llm = args.llm.is_configured();
    let later = llm_calls - k as usize;
    match (&args.reply, has_llm) {
        (None, false) => Err(InputError(format!(
            "LLM call {k} of the fork is live: give --reply TEXT to answer it, or an LLM (--llm-script RULES.json, \
             or --llm-endpoint URL --llm-model MODEL)"
        ))),
        (Some(_), false) if later > 0 => Err(InputError(format!(
            "the recorded attempt made {later} LLM call(s) after call {k}, which the fork makes live: give an LLM \
             too (--llm-script RULES.json, or --llm-endpoint URL --llm-model MODEL)"
        ))),
        (Some(_), false) if args.branches > 1 => Err(InputError(format!(
            "--branches {} with --reply and no LLM would make {} identical branches: give an LLM for the later \
             calls, or one branch",
            args.branches, args.branches
        ))),
        _ => Ok(()),
    }
}

/// The model the K-th LLM call of the tape asked for (what a `--reply` says it came from).
fn recorded_model(tape: &Tape, k: u32) -> String {
    tape.calls
        .iter()
        .filter(|call| call.call == LLM_CHAT)
        .nth(k.saturating_sub(1) as usize)
        .and_then(|call| call.request.get("model"))
        .and_then(Value::as_str)
        .unwrap_or("reply")
        .to_owned()
}

/// `{"agl.fork": {...}}`: the parent, the fork point and the branch.
fn fork_metadata(parent_rollout_id: &str, parent_attempt_id: &str, k: u32, branch: u16, branches: u16) -> JsonMap {
    let mut metadata = JsonMap::new();
    metadata.insert(
        agl_store::semconv::FORK.to_owned(),
        json!({
            "parent_rollout_id": parent_rollout_id,
            "parent_attempt_id": parent_attempt_id,
            "at_llm_call": k,
            "branch": branch,
            "branches": branches,
        }),
    );
    metadata
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{Cli, Command};
    use clap::Parser;

    fn fork_args(extra: &[&str]) -> ForkArgs {
        let mut argv = vec!["agl-host", "fork", "run-1", "ro-1", "--at-llm-call", "1"];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::Fork(args) => args,
            other => panic!("expected fork: {other:?}"),
        }
    }

    #[test]
    fn a_fork_point_must_be_on_the_tape_and_have_its_llm() {
        let reply = fork_args(&["--reply", "X"]);
        assert!(check_fork_point(1, 1, &reply).is_ok());
        let error = check_fork_point(0, 2, &reply).unwrap_err().0;
        assert!(error.contains("give 1 (the first) to 2"), "{error}");
        assert!(check_fork_point(3, 2, &reply).is_err());
        assert!(check_fork_point(1, 0, &reply).unwrap_err().0.contains("no LLM call"));
        let error = check_fork_point(1, 2, &reply).unwrap_err().0;
        assert!(error.contains("1 LLM call(s) after call 1"), "{error}");
        let error = check_fork_point(1, 1, &fork_args(&[])).unwrap_err().0;
        assert!(error.contains("--reply TEXT"), "{error}");
        let error = check_fork_point(1, 1, &fork_args(&["--reply", "X", "--branches", "3"]))
            .unwrap_err()
            .0;
        assert!(error.contains("3 identical branches"), "{error}");
        let sampled = fork_args(&["--reply", "X", "--branches", "3", "--llm-script", "r.json"]);
        assert!(check_fork_point(1, 2, &sampled).is_ok());
    }

    #[test]
    fn the_metadata_names_the_parent_and_the_branch() {
        let metadata = fork_metadata("ro-1", "at-1", 2, 0, 3);
        assert_eq!(
            Value::Object(metadata),
            json!({"agl.fork": {"parent_rollout_id": "ro-1", "parent_attempt_id": "at-1", "at_llm_call": 2, "branch": 0, "branches": 3}})
        );
    }
}
