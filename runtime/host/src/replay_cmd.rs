//! `agl-host replay RUN [ROLLOUT]`: recorded attempts run again offline, every host call answered
//! from the attempt's recording (no LLM, no network), into a scratch in-memory store — nothing is
//! written to the run. One attempt (ROLLOUT) prints its replayed span tree and a verdict; the whole
//! run (a regression check of `--agent NEW`) one line per attempt and the counts. Each attempt is
//! classed: identical (no divergence, same status, reward and spans), same-reward (spans differ, or
//! it went live with `--live`), reward-changed (status or reward), diverged (stopped at a call
//! that is not the recorded one; shown as a line diff of the two requests).

use crate::args::ReplayArgs;
use crate::inputs::InputError;
use crate::llm;
use crate::output::{one_line, print, stderr_line};
use crate::replay_run::{self, FromTape, NO_RECORDING, status_word};
use crate::show_cmd::Opened;
use crate::table::{self, clip_line};
use agl_runs::read::{every_rollout, spans_of};
use agl_store::{Attempt, AttemptStatus, InMemoryLightningStore, LightningStore, Rollout, Span};
use agl_wasm::SpanRecorder;
use agl_wasm::tape::{Call, OnDivergence, ReplayPlan, Tape};
use anyhow::Context;
use serde::Serialize;
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// Lines of a request diff printed per attempt (the JSON report keeps it whole).
const SHOWN_DIFF_LINES: usize = 60;

/// How a replayed attempt compares with its recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    /// No divergence; the same status, reward and spans.
    Identical,
    /// The same status and reward; the spans differ, or it went live past a divergence.
    SameReward,
    /// The status or the reward differ.
    RewardChanged,
    /// It made a call the record does not hold, and stopped there.
    Diverged,
}

impl Class {
    const ALL: [Class; 4] = [Self::Identical, Self::SameReward, Self::RewardChanged, Self::Diverged];

    fn as_str(self) -> &'static str {
        match self {
            Self::Identical => "identical",
            Self::SameReward => "same-reward",
            Self::RewardChanged => "reward-changed",
            Self::Diverged => "diverged",
        }
    }
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct Ending {
    status: String,
    reward: Option<f64>,
    failure: Option<String>,
}

/// Where a replay left the record.
#[derive(Debug, Clone, Serialize)]
struct DivergenceReport {
    /// The host call (1 for the first).
    call_number: usize,
    /// Its name (the replayed call's, else the recorded one's).
    call: String,
    why: String,
    recorded: Option<Call>,
    actual: Option<Call>,
    /// A unified line diff of the recorded call and the replayed one (pretty JSON).
    diff: String,
}

/// One attempt replayed.
#[derive(Debug, Serialize)]
struct Verdict {
    rollout_id: String,
    attempt_id: String,
    attempt: u32,
    class: Class,
    recorded: Ending,
    replayed: Ending,
    /// Host calls answered from the record.
    replayed_calls: usize,
    /// Whether it went on live past a divergence (`--live`).
    went_live: bool,
    divergence: Option<DivergenceReport>,
    /// Where the replay's spans first differ from the recorded attempt's.
    spans_difference: Option<String>,
    #[serde(skip)]
    spans: Vec<Arc<Span>>,
}

/// An attempt to replay.
struct Target {
    rollout: Rollout,
    attempt: Attempt,
    tape: Tape,
}

#[derive(Serialize)]
struct Report<'a> {
    db: &'a str,
    run_id: Option<&'a str>,
    agent: String,
    agent_sha256: String,
    live: bool,
    attempts: &'a [Verdict],
    /// Attempts left out: they have no recording.
    not_recorded: usize,
    counts: serde_json::Map<String, Value>,
    /// Whether the exit code is 0.
    ok: bool,
}

pub async fn run(args: ReplayArgs) -> anyhow::Result<ExitCode> {
    let live = args.live;
    if live && !args.llm.is_configured() {
        return Err(InputError(
            "--live goes on past a divergence with a live LLM: give --llm-script RULES.json or --llm-endpoint URL \
             --llm-model MODEL"
                .into(),
        )
        .into());
    }
    if !live && args.llm.is_configured() {
        return Err(InputError(
            "a replay answers every LLM call from the record: the --llm-* flags are for --live".into(),
        )
        .into());
    }
    let llm = if live {
        llm::backend(&args.llm)?
    } else {
        crate::llm::Refusing::record_only()
    };
    let (opened, _, rollout) = replay_run::open_run(&args.recorded, args.rollout.clone()).await?;
    let one = rollout.is_some();
    let (targets, not_recorded) = match &rollout {
        Some(prefix) => {
            let (rollout, attempt) = replay_run::rollout_attempt(&opened, prefix, args.attempt).await?;
            let tape = replay_run::tape_of(opened.store.as_ref(), &rollout, &attempt)
                .await?
                .ok_or_else(|| InputError(NO_RECORDING.into()))?;
            (vec![Target { rollout, attempt, tape }], 0)
        }
        None => every_recorded_attempt(&opened, &args.status).await?,
    };
    if targets.is_empty() {
        let which = if args.status.is_empty() {
            ""
        } else {
            " with that --status"
        };
        return Err(InputError(format!(
            "{} has no recorded attempt{which} to replay ({not_recorded} attempt(s) without a recording: \
             made with --no-record or before recordings existed)",
            replay_run::run_label(&opened)
        ))
        .into());
    }
    let loaded = replay_run::load_agent(
        opened.record.as_ref(),
        args.agent.as_deref(),
        &args.recorded.agent_env,
        u32::from(args.jobs) + 4,
    )?;
    for target in &targets {
        loaded.check_against(&target.tape)?;
    }
    if !args.json {
        stderr_line(&format!(
            "replaying {} attempt(s) of {} with {} (sha256 {}) · LLM: {}",
            targets.len(),
            replay_run::run_label(&opened),
            one_line(&crate::components::file_name(&loaded.path)),
            &loaded.agent.digest().chars().take(12).collect::<String>(),
            llm.describe()
        ));
    }

    let scratch: Arc<dyn LightningStore> = Arc::new(InMemoryLightningStore::new());
    let runner = Arc::new(FromTape {
        recorder: Arc::new(SpanRecorder::new(scratch.clone(), Duration::from_millis(50))),
        store: scratch,
        agent: loaded.agent.clone(),
        llm,
    });
    let on_divergence = if live { OnDivergence::GoLive } else { OnDivergence::Stop };
    let verdicts = replay_all(&opened, &runner, targets, on_divergence, usize::from(args.jobs)).await?;

    // Same-reward passes when a changed build is checked (its spans may differ); the run's own
    // agent must replay identically.
    let checking_a_build = args.agent.is_some() || live;
    let passes = |class: Class| class == Class::Identical || (checking_a_build && class == Class::SameReward);
    let ok = verdicts.iter().all(|v| passes(v.class));
    if args.json {
        let mut counts = serde_json::Map::new();
        for class in Class::ALL {
            counts.insert(
                class.as_str().to_owned(),
                verdicts.iter().filter(|v| v.class == class).count().into(),
            );
        }
        let report = Report {
            db: &opened.place,
            run_id: opened.record.as_ref().map(|r| r.run_id.as_str()),
            agent: loaded.path.display().to_string(),
            agent_sha256: loaded.agent.digest().to_owned(),
            live,
            attempts: &verdicts,
            not_recorded,
            counts,
            ok,
        };
        print(&format!("{}\n", serde_json::to_string_pretty(&report)?));
    } else if one {
        print(&one_attempt(&verdicts[0], &opened));
    } else {
        print(&summary(&verdicts, not_recorded));
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// The latest attempt of every task rollout of the run (not the algorithm's own, not a fork) that
/// has a recording (and ended as `statuses` say, when given), and how many had none.
async fn every_recorded_attempt(opened: &Opened, statuses: &[AttemptStatus]) -> anyhow::Result<(Vec<Target>, usize)> {
    let store = opened.store.as_ref();
    let (mut targets, mut not_recorded) = (Vec::new(), 0);
    for view in every_rollout(store).await? {
        let Some(attempt) = view.attempt else { continue };
        // Forks (`agl-host fork`) are not the run's tasks: replayed only by name.
        if view.rollout.is_algorithm_rollout()
            || view.rollout.fork_lineage().is_some()
            || (!statuses.is_empty() && !statuses.contains(&attempt.status))
        {
            continue;
        }
        match replay_run::tape_of(store, &view.rollout, &attempt).await? {
            Some(tape) => targets.push(Target {
                rollout: view.rollout,
                attempt,
                tape,
            }),
            None => not_recorded += 1,
        }
    }
    Ok((targets, not_recorded))
}

/// Replays `targets`, `jobs` at a time; the verdicts in the targets' order.
async fn replay_all(
    opened: &Opened,
    runner: &Arc<FromTape>,
    targets: Vec<Target>,
    on_divergence: OnDivergence,
    jobs: usize,
) -> anyhow::Result<Vec<Verdict>> {
    let gate = Arc::new(tokio::sync::Semaphore::new(jobs.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    let count = targets.len();
    for (index, target) in targets.into_iter().enumerate() {
        let (gate, runner, store) = (gate.clone(), runner.clone(), opened.store.clone());
        tasks.spawn(async move {
            let _permit = gate.acquire_owned().await;
            let verdict = replay_one(store.as_ref(), &runner, target, on_divergence).await;
            (index, verdict)
        });
    }
    let mut verdicts: Vec<Option<Verdict>> = (0..count).map(|_| None).collect();
    while let Some(joined) = tasks.join_next().await {
        let (index, verdict) = joined.context("a replay stopped")?;
        if let Some(slot) = verdicts.get_mut(index) {
            *slot = Some(verdict?);
        }
    }
    Ok(verdicts.into_iter().flatten().collect())
}

/// Replays one attempt and compares it with its recording.
async fn replay_one(
    store: &dyn LightningStore,
    runner: &FromTape,
    target: Target,
    on_divergence: OnDivergence,
) -> anyhow::Result<Verdict> {
    let Target { rollout, attempt, tape } = target;
    let recorded_spans = spans_of(store, &rollout, Some(&attempt.attempt_id)).await?;
    let recorded = match &tape.outcome {
        Some(outcome) => Ending {
            status: outcome.status.clone(),
            reward: outcome.reward,
            failure: outcome.failure.clone(),
        },
        None => Ending {
            status: attempt.status.as_str().to_owned(),
            reward: agl_adapter::final_reward(&recorded_spans),
            failure: crate::show_cmd::failure_reason(&attempt),
        },
    };
    let recorded_calls = tape.calls.clone();
    let plan = ReplayPlan {
        tape,
        on_divergence,
        fork: None,
    };
    let ran = runner.run(&rollout, None, None, plan, false).await?;
    let report = ran.outcome.replay.clone().unwrap_or_default();
    let replayed = Ending {
        status: status_word(&ran.outcome).to_owned(),
        reward: ran.outcome.reward,
        failure: ran.outcome.failure.clone(),
    };
    let mut spans_difference = agl_trace::compare::first_difference(&recorded_spans, &ran.spans, None);
    if let Some(error) = &ran.outcome.trace_error {
        spans_difference = Some(format!("the replay's spans could not be kept: {error}"));
    }
    let divergence = report.divergence.map(|d| {
        let recorded = d.recorded.or_else(|| recorded_calls.get(d.index).cloned());
        describe_divergence(d.index, recorded, d.actual)
    });
    let went_live = divergence.is_some() && on_divergence == OnDivergence::GoLive;
    let same_ending = recorded.status == replayed.status && same_reward(recorded.reward, replayed.reward);
    let class = match (&divergence, went_live, same_ending) {
        (Some(_), false, _) => Class::Diverged,
        (_, _, false) => Class::RewardChanged,
        (Some(_), true, true) => Class::SameReward,
        (None, _, true) if spans_difference.is_some() => Class::SameReward,
        (None, _, true) => Class::Identical,
    };
    Ok(Verdict {
        rollout_id: rollout.rollout_id,
        attempt_id: attempt.attempt_id,
        attempt: attempt.sequence_id,
        class,
        recorded,
        replayed,
        replayed_calls: report.replayed,
        went_live,
        divergence,
        spans_difference,
        spans: ran.spans,
    })
}

fn same_reward(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a == b || (a - b).abs() <= 1e-12,
        (None, None) => true,
        _ => false,
    }
}

/// A divergence at call `index` in words, with the line diff of the two calls.
fn describe_divergence(index: usize, recorded: Option<Call>, actual: Option<Call>) -> DivergenceReport {
    let why = match (&recorded, &actual) {
        (None, _) => "the recording has no more calls".to_owned(),
        (Some(recorded), None) => format!("the replay ended where the recording has {}", recorded.call),
        (Some(recorded), Some(actual)) if recorded.call != actual.call => {
            format!("the recording has {} here", recorded.call)
        }
        (Some(_), Some(_)) => "its request differs from the recorded one".to_owned(),
    };
    let call = actual
        .as_ref()
        .or(recorded.as_ref())
        .map_or_else(String::new, |c| c.call.clone());
    DivergenceReport {
        call_number: index + 1,
        call,
        why,
        diff: request_diff(recorded.as_ref(), actual.as_ref()),
        recorded,
        actual,
    }
}

/// A unified diff of the two calls (name and request) as pretty JSON, line by line.
fn request_diff(recorded: Option<&Call>, actual: Option<&Call>) -> String {
    let pretty = |call: Option<&Call>| -> String {
        call.map_or_else(String::new, |call| {
            let shown = json!({"call": call.call, "request": call.request});
            serde_json::to_string_pretty(&shown).unwrap_or_default() + "\n"
        })
    };
    let (before, after) = (pretty(recorded), pretty(actual));
    similar::TextDiff::from_lines(&before, &after)
        .unified_diff()
        .context_radius(3)
        .header("recorded", "replayed")
        .to_string()
}

fn ending_text(ending: &Ending) -> String {
    let reward = table::score(ending.reward);
    match &ending.failure {
        Some(failure) => format!("{}, reward {reward} ({})", ending.status, one_line(failure)),
        None => format!("{}, reward {reward}", ending.status),
    }
}

/// What the verdict says in words (one line).
fn verdict_line(verdict: &Verdict) -> String {
    match verdict.class {
        Class::Identical => format!(
            "identical: {}; the same spans; {} host call(s) answered from the record",
            ending_text(&verdict.replayed),
            verdict.replayed_calls
        ),
        Class::Diverged => {
            let at = verdict.divergence.as_ref().map_or_else(String::new, |d| {
                format!(
                    " at host call #{} ({}): {}",
                    d.call_number,
                    one_line(&d.call),
                    one_line(&d.why)
                )
            });
            format!("diverged{at}")
        }
        Class::SameReward => {
            let why = match (&verdict.divergence, &verdict.spans_difference) {
                (Some(d), _) => format!(
                    "went live at host call #{} ({}): {}",
                    d.call_number,
                    one_line(&d.call),
                    one_line(&d.why)
                ),
                (None, Some(difference)) => format!("the spans differ: {}", one_line(difference)),
                (None, None) => String::new(),
            };
            format!("same-reward: {}; {why}", ending_text(&verdict.replayed))
        }
        Class::RewardChanged => format!(
            "reward-changed: recorded {}, replayed {}",
            ending_text(&verdict.recorded),
            ending_text(&verdict.replayed)
        ),
    }
}

/// The diff of a divergence, indented, at most [`SHOWN_DIFF_LINES`] lines.
fn diff_lines(out: &mut String, verdict: &Verdict, indent: &str) {
    let Some(divergence) = &verdict.divergence else { return };
    let lines: Vec<&str> = divergence.diff.lines().collect();
    for line in lines.iter().take(SHOWN_DIFF_LINES) {
        let _ = writeln!(out, "{indent}{}", one_line(line));
    }
    if lines.len() > SHOWN_DIFF_LINES {
        let _ = writeln!(
            out,
            "{indent}... {} more line(s) (--json has the whole diff)",
            lines.len() - SHOWN_DIFF_LINES
        );
    }
}

/// One attempt: the replay's span tree, then the verdict.
fn one_attempt(verdict: &Verdict, opened: &Opened) -> String {
    let width = table::terminal_width();
    let mut out = String::new();
    let head = format!(
        "replay of rollout {} attempt {} ({}) · {}",
        verdict.rollout_id,
        verdict.attempt,
        verdict.attempt_id,
        replay_run::run_label(opened)
    );
    let _ = writeln!(out, "{}", clip_line(&one_line(&head), width));
    let _ = writeln!(
        out,
        "  recorded   {}",
        clip_line(&ending_text(&verdict.recorded), width)
    );
    let _ = writeln!(
        out,
        "  replayed   {}",
        clip_line(&ending_text(&verdict.replayed), width)
    );
    let _ = writeln!(out, "\nspans of the replay: {}", verdict.spans.len());
    for text in agl_runs::span_tree::lines(&verdict.spans) {
        let _ = writeln!(out, "{}", clip_line(&format!("  {text}"), width));
    }
    let _ = writeln!(out, "\n{}", verdict_line(verdict));
    if let (Class::RewardChanged, Some(divergence)) = (verdict.class, &verdict.divergence) {
        let _ = writeln!(
            out,
            "  went live at host call #{} ({}): {}",
            divergence.call_number,
            one_line(&divergence.call),
            one_line(&divergence.why)
        );
    }
    diff_lines(&mut out, verdict, "  ");
    if verdict.divergence.is_none()
        && verdict.class != Class::Identical
        && let Some(difference) = &verdict.spans_difference
    {
        let _ = writeln!(out, "  spans: {}", one_line(difference));
    }
    out
}

/// Every attempt: one line each (and a diverged one's diff), then the counts.
fn summary(verdicts: &[Verdict], not_recorded: usize) -> String {
    let mut out = String::new();
    for verdict in verdicts {
        let _ = writeln!(
            out,
            "{}  attempt {}  {}",
            verdict.rollout_id,
            verdict.attempt,
            verdict_line(verdict)
        );
        if verdict.class == Class::Diverged {
            diff_lines(&mut out, verdict, "    ");
        }
    }
    let counts: Vec<String> = Class::ALL
        .iter()
        .map(|class| {
            format!(
                "{} {}",
                verdicts.iter().filter(|v| v.class == *class).count(),
                class.as_str()
            )
        })
        .collect();
    let skipped = match not_recorded {
        0 => String::new(),
        n => format!(" ({n} attempt(s) without a recording left out)"),
    };
    let _ = writeln!(
        out,
        "\n{} attempt(s) replayed: {}{skipped}",
        verdicts.len(),
        counts.join(", ")
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(text: &str) -> Call {
        Call {
            call: "llm.chat".into(),
            request: json!({"messages": [{"role": "user", "content": text}], "model": "m"}),
            answer: None,
        }
    }

    #[test]
    fn a_divergence_shows_the_changed_line_of_the_request() {
        let divergence = describe_divergence(1, Some(call("Solve it.")), Some(call("Solve it. Think carefully.")));
        assert_eq!((divergence.call_number, divergence.call.as_str()), (2, "llm.chat"));
        assert_eq!(divergence.why, "its request differs from the recorded one");
        assert!(divergence.diff.contains("--- recorded"), "{}", divergence.diff);
        assert!(
            divergence
                .diff
                .contains("+        \"content\": \"Solve it. Think carefully.\""),
            "{}",
            divergence.diff
        );
        assert!(
            divergence.diff.contains("-        \"content\": \"Solve it.\""),
            "{}",
            divergence.diff
        );
        let ended = describe_divergence(3, Some(call("a")), None);
        assert_eq!(ended.why, "the replay ended where the recording has llm.chat");
    }

    #[test]
    fn rewards_compare_exactly_and_none_only_with_none() {
        assert!(same_reward(Some(1.0), Some(1.0)));
        assert!(same_reward(None, None));
        assert!(!same_reward(Some(1.0), None));
        assert!(!same_reward(Some(1.0), Some(0.5)));
    }
}
