//! `agl-host show RUN [ROLLOUT]`: one kept run read back from its store — the run and its
//! rollouts, or one rollout's attempts and the span tree of an attempt (LLM calls, rewards,
//! logs, operations: `span_tree`). Reading only: the store is opened without a watchdog
//! (`agl_runs::open::open_to_read`); listing runs is `runs_cmd`.

use crate::args::ShowArgs;
use crate::inputs::InputError;
use crate::output::print;
use crate::table::{self, Align, Table, clip_line, one_line};
use agl_runs::list::status_label;
use agl_runs::open::{OpenedKept, open_kept};
use agl_runs::read::{every_rollout, spans_of};
use agl_runs::span_tree;
use agl_store::{
    Attempt, AttemptQuery, AttemptStatus, Rollout, RolloutQuery, RolloutStatus, RunRecord, Span, StoreBackend,
};
use anyhow::Context;
use serde::Serialize;
use serde_json::Value;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

/// The store opened, and how to name the run to the user (`replay` and `fork` find their rollout
/// in it as `show` does).
pub(crate) struct Opened {
    pub store: Arc<dyn StoreBackend>,
    pub record: Option<RunRecord>,
    /// The database file or URL.
    pub place: String,
    /// How to name the run in a suggested command (`agl-host show NAME ...`).
    pub name: String,
}

pub async fn run(args: ShowArgs) -> anyhow::Result<ExitCode> {
    let (opened, rollout) = open(&args).await?;
    let width = table::terminal_width();
    match rollout {
        None => {
            if args.attempt.is_some() {
                return Err(InputError("--attempt N needs a ROLLOUT".into()).into());
            }
            show_run(&opened, args.json, width).await?;
        }
        Some(prefix) => show_rollout(&opened, &prefix, args.attempt, args.json, width).await?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Opens the store RUN or --db names; returns it and the rollout asked for, if any.
async fn open(args: &ShowArgs) -> anyhow::Result<(Opened, Option<String>)> {
    let (url, name) = agl_runs::find::resolve(args.db.as_deref(), args.run.as_deref(), &args.dir)?;
    let kept = open_kept(&url).await?;
    name_run(kept, name, args.run.as_deref(), args.rollout.clone())
}

/// The store `kept` (found by RUN, named `name`, or by --db: `name` is `None`) and the rollout
/// asked for: with --db, RUN, if given, is the run id the store keeps, or else the rollout.
pub(crate) fn name_run(
    kept: OpenedKept,
    name: Option<String>,
    run: Option<&str>,
    rollout: Option<String>,
) -> anyhow::Result<(Opened, Option<String>)> {
    let OpenedKept { store, record, place } = kept;
    let mut rollout = rollout;
    let name = match name {
        Some(name) => name,
        // --db: RUN, if given, is the run id the store keeps, or else the rollout.
        None => {
            let kept_id = record.as_ref().map(|r| r.run_id.as_str());
            match (run, rollout.is_some()) {
                (Some(run), _) if Some(run) == kept_id => {}
                (Some(run), true) => {
                    return Err(InputError(format!(
                        "{place} keeps {}, not run {run}",
                        kept_id.map_or("no run record".to_owned(), |id| format!("run {id}"))
                    ))
                    .into());
                }
                (Some(run), false) => rollout = Some(run.to_owned()),
                (None, _) => {}
            }
            format!("--db {place}")
        }
    };
    Ok((
        Opened {
            store,
            record,
            place,
            name,
        },
        rollout,
    ))
}

// ---- the run ------------------------------------------------------------------------------------

/// One rollout as the run's table shows it.
#[derive(Serialize)]
struct RolloutRow {
    rollout: Rollout,
    /// Its latest attempt.
    attempt: Option<Attempt>,
    /// The final reward of its latest attempt (from the spans, through the adapter).
    final_reward: Option<f64>,
}

#[derive(Serialize)]
struct RunJson<'a> {
    db: &'a str,
    run: Option<&'a RunRecord>,
    rollouts: &'a [RolloutRow],
}

async fn rollout_rows(store: &dyn StoreBackend) -> anyhow::Result<Vec<RolloutRow>> {
    let mut rows = Vec::new();
    for view in every_rollout(store).await? {
        let final_reward = match &view.attempt {
            Some(attempt) => {
                agl_adapter::final_reward(&spans_of(store, &view.rollout, Some(&attempt.attempt_id)).await?)
            }
            None => None,
        };
        rows.push(RolloutRow {
            rollout: view.rollout,
            attempt: view.attempt,
            final_reward,
        });
    }
    Ok(rows)
}

/// Why an attempt failed: its runner's reason, else what its status says.
pub(crate) fn failure_reason(attempt: &Attempt) -> Option<String> {
    if let Some(reason) = agl_wasm::algorithm::attempt_failure(attempt) {
        return Some(reason);
    }
    match attempt.status {
        AttemptStatus::Failed => Some("failed with no reason recorded".into()),
        AttemptStatus::Timeout => Some("timed out (the store's watchdog: timeout_seconds)".into()),
        AttemptStatus::Unresponsive => {
            Some("the runner stopped sending heartbeats (the store's watchdog: unresponsive_seconds)".into())
        }
        _ => None,
    }
}

fn attempt_duration(attempt: &Attempt) -> String {
    attempt
        .end_time
        .map_or_else(|| "-".to_owned(), |end| table::duration(end - attempt.start_time))
}

fn split(rollout: &Rollout) -> &'static str {
    rollout.mode.map_or("-", |mode| mode.as_str())
}

async fn show_run(opened: &Opened, json: bool, width: usize) -> anyhow::Result<()> {
    let rows = rollout_rows(opened.store.as_ref()).await?;
    if json {
        let record = RunJson {
            db: &opened.place,
            run: opened.record.as_ref(),
            rollouts: &rows,
        };
        print(&format!("{}\n", serde_json::to_string_pretty(&record)?));
        return Ok(());
    }
    let mut out = String::new();
    write_run_header(&mut out, opened, width);
    let (tasks, own): (Vec<&RolloutRow>, Vec<&RolloutRow>) =
        rows.iter().partition(|row| !row.rollout.is_algorithm_rollout());
    // Forks (`agl-host fork`) were made after the run from its rollouts: listed apart, not counted.
    let (forks, tasks): (Vec<&RolloutRow>, Vec<&RolloutRow>) =
        tasks.into_iter().partition(|row| row.rollout.fork_lineage().is_some());
    let count = |status: RolloutStatus| tasks.iter().filter(|r| r.rollout.status == status).count();
    let succeeded = count(RolloutStatus::Succeeded);
    let failed = count(RolloutStatus::Failed);
    let cancelled = count(RolloutStatus::Cancelled);
    let unfinished = tasks.len() - succeeded - failed - cancelled;
    // As the run's summary counts it (`agl_adapter::counted_reward`): failed or missing
    // rewards count 0.
    let reward_sum: f64 = tasks
        .iter()
        .map(|r| agl_adapter::counted_reward(r.rollout.status, r.final_reward))
        .sum();
    let mean = (!tasks.is_empty()).then(|| reward_sum / tasks.len() as f64);
    let _ = writeln!(
        out,
        "\n{} rollouts: {succeeded} succeeded, {failed} failed, {cancelled} cancelled, {unfinished} unfinished; mean reward {}",
        tasks.len(),
        table::score(mean)
    );
    if !tasks.is_empty() {
        let mut rollouts = Table::new(&[
            ("rollout", Align::Left),
            ("split", Align::Left),
            ("status", Align::Left),
            ("resources", Align::Left),
            ("attempts", Align::Right),
            ("reward", Align::Right),
            ("duration", Align::Right),
            ("failure", Align::Left),
        ]);
        for row in &tasks {
            let attempt = row.attempt.as_ref();
            let failure = match row.rollout.status {
                RolloutStatus::Succeeded => None,
                _ => attempt.and_then(failure_reason),
            };
            rollouts.row(vec![
                row.rollout.rollout_id.clone(),
                split(&row.rollout).to_owned(),
                row.rollout.status.to_string(),
                // The resources version it ran with (the store gives a rollout the latest
                // version when it is enqueued without one).
                row.rollout
                    .resources_id
                    .as_deref()
                    .map_or_else(|| "-".to_owned(), one_line),
                attempt.map_or(0, |a| a.sequence_id).to_string(),
                table::score(row.final_reward),
                attempt.map_or_else(|| "-".to_owned(), attempt_duration),
                failure.map(|f| one_line(&f)).unwrap_or_default(),
            ]);
        }
        out.push_str(&rollouts.render("  ", width));
    }
    let reasons = failure_counts(
        tasks
            .iter()
            .filter(|r| r.rollout.status == RolloutStatus::Failed)
            .map(|r| {
                r.attempt
                    .as_ref()
                    .and_then(failure_reason)
                    .unwrap_or_else(|| "failed before any attempt ran".to_owned())
            }),
    );
    if !reasons.is_empty() {
        out.push_str("  why rollouts failed (most frequent first):\n");
        for (reason, count) in reasons {
            let _ = writeln!(
                out,
                "{}",
                clip_line(&format!("  {count:>6}×  {}", one_line(&reason)), width)
            );
        }
    }
    for row in own {
        let line = format!(
            "  + {}  the algorithm's own rollout ({}): its LLM calls",
            row.rollout.rollout_id, row.rollout.status
        );
        let _ = writeln!(out, "{}", clip_line(&line, width));
    }
    for row in forks {
        let lineage = row.rollout.fork_lineage();
        let field = |key: &str| {
            lineage.and_then(|l| l.get(key)).map_or_else(
                || "?".to_owned(),
                |value| match value.as_str() {
                    Some(text) => one_line(text),
                    None => one_line(&value.to_string()),
                },
            )
        };
        let line = format!(
            "  + {}  a fork of {} at LLM call {} ({}): {}, reward {}",
            row.rollout.rollout_id,
            field("parent_rollout_id"),
            field("at_llm_call"),
            format_args!("branch {} of {}", field("branch"), field("branches")),
            row.rollout.status,
            table::score(row.final_reward)
        );
        let _ = writeln!(out, "{}", clip_line(&line, width));
    }
    if !rows.is_empty() {
        let line = format!(
            "one rollout's attempts and spans: agl-host show {} ROLLOUT",
            opened.name
        );
        let _ = writeln!(out, "{}", clip_line(&line, width));
    }
    print(&out);
    Ok(())
}

/// Each distinct reason with how many gave it, most frequent first (ties: first seen first).
fn failure_counts(reasons: impl Iterator<Item = String>) -> Vec<(String, usize)> {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for reason in reasons {
        match counts.iter_mut().find(|(seen, _)| *seen == reason) {
            Some((_, count)) => *count += 1,
            None => counts.push((reason, 1)),
        }
    }
    counts.sort_by_key(|(_, count)| std::cmp::Reverse(*count));
    counts
}

fn write_run_header(out: &mut String, opened: &Opened, width: usize) {
    if let Some(run) = &opened.record {
        let status = match status_label(run) {
            "running?" => "running? (no end recorded: still running, or killed before it could record one)",
            other => other,
        };
        let _ = writeln!(out, "{}", clip_line(&format!("run {} · {status}", run.run_id), width));
    }
    let mut line = |label: &str, value: String| {
        let _ = writeln!(out, "{}", clip_line(&format!("  {label:<10} {value}"), width));
    };
    let Some(run) = &opened.record else {
        line("store", opened.place.clone());
        line(
            "run",
            "no run record: a store that `agl-host run` did not keep".to_owned(),
        );
        return;
    };
    let results = run.results.as_ref();
    if let Some(failure) = results.and_then(|r| r.get("failure")).and_then(Value::as_str) {
        line("failure", one_line(failure));
    }
    line("agent", run.agent.clone());
    line("algorithm", run.algorithm.clone());
    let took = match run.finished_at {
        Some(end) => format!("took {}", table::duration(end - run.started_at)),
        None => "no end recorded".to_owned(),
    };
    line("started", format!("{} · {took}", table::utc(run.started_at)));
    if let Some(best) = results.and_then(|r| r.get("best")).filter(|b| !b.is_null()) {
        let resources = best
            .get("resources_id")
            .and_then(Value::as_str)
            .map_or_else(String::new, |id| format!(" with resources {id}"));
        line(
            "best",
            format!("{}{resources}", table::score(best.get("score").and_then(Value::as_f64))),
        );
    }
    if !run.resumed_at.is_empty() {
        let times: Vec<String> = run.resumed_at.iter().map(|at| table::utc(*at)).collect();
        line("resumed", times.join(", "));
    }
    line("kept in", opened.place.clone());
    line("command", format!("agl-host {}", run.command.join(" ")));
    if let Some(directory) = &run.directory {
        line("in", directory.clone());
    }
}

// ---- one rollout --------------------------------------------------------------------------------

#[derive(Serialize)]
struct RolloutJson<'a> {
    db: &'a str,
    run_id: Option<&'a str>,
    rollout: &'a Rollout,
    attempts: &'a [Attempt],
    /// The final reward of the latest attempt (or of --attempt N).
    final_reward: Option<f64>,
    /// Every attempt's spans (or --attempt N's), in sequence order.
    spans: &'a [Arc<Span>],
}

/// The rollout whose id is `prefix`, or the one whose id contains it (rollouts made together
/// share the start of their ids, so the last digits are what tell them apart); where several
/// contain it, the one whose id starts or ends with it, if only one does.
pub(crate) async fn find_rollout(opened: &Opened, prefix: &str) -> anyhow::Result<Rollout> {
    let store = opened.store.as_ref();
    if let Some(view) = store.get_rollout_by_id(prefix).await.context("reading the rollout")? {
        return Ok(view.rollout);
    }
    let query = RolloutQuery {
        rollout_id_contains: Some(prefix.to_owned()),
        ..RolloutQuery::default()
    };
    let mut matching: Vec<Rollout> = store
        .query_rollouts(&query)
        .await
        .context("reading the rollouts")?
        .items
        .into_iter()
        .map(|view| view.rollout)
        .filter(|rollout| rollout.rollout_id.contains(prefix))
        .collect();
    if matching.len() > 1 {
        let at_an_end = |id: &str| id.starts_with(prefix) || id.ends_with(prefix);
        if matching.iter().filter(|rollout| at_an_end(&rollout.rollout_id)).count() == 1 {
            matching.retain(|rollout| at_an_end(&rollout.rollout_id));
        }
    }
    let run = opened
        .record
        .as_ref()
        .map_or_else(|| opened.place.clone(), |r| format!("run {}", r.run_id));
    match matching.len() {
        1 => Ok(matching.remove(0)),
        0 => Err(InputError(format!(
            "no rollout {prefix} in {run} (`agl-host show {}` lists its rollouts)",
            opened.name
        ))
        .into()),
        n => {
            let ids: Vec<&str> = matching.iter().take(5).map(|r| r.rollout_id.as_str()).collect();
            Err(InputError(format!(
                "{prefix} could be any of {n} rollouts of {run} ({}{}): give more of its id",
                ids.join(", "),
                if n > ids.len() { ", ..." } else { "" }
            ))
            .into())
        }
    }
}

/// Attempt `number` (1, 2, ...) of `attempts` (a rollout's, in order), or the latest.
pub(crate) fn pick_attempt<'a>(
    rollout_id: &str,
    attempts: &'a [Attempt],
    number: Option<u32>,
) -> Result<Option<&'a Attempt>, InputError> {
    match number {
        Some(n) => Ok(Some(attempts.iter().find(|a| a.sequence_id == n).ok_or_else(|| {
            InputError(format!(
                "rollout {rollout_id} has no attempt {n} (it has {})",
                match attempts.len() {
                    0 => "none".to_owned(),
                    1 => "attempt 1".to_owned(),
                    k => format!("attempts 1 to {k}"),
                }
            ))
        })?)),
        None => Ok(attempts.last()),
    }
}

async fn show_rollout(
    opened: &Opened,
    prefix: &str,
    attempt_number: Option<u32>,
    json: bool,
    width: usize,
) -> anyhow::Result<()> {
    let store = opened.store.as_ref();
    let rollout = find_rollout(opened, prefix).await?;
    let attempts = store
        .query_attempts(&rollout.rollout_id, &AttemptQuery::default())
        .await
        .with_context(|| format!("reading the attempts of rollout {}", rollout.rollout_id))?
        .items;
    let chosen = pick_attempt(&rollout.rollout_id, &attempts, attempt_number)?;
    let spans = match chosen {
        Some(attempt) => spans_of(store, &rollout, Some(&attempt.attempt_id)).await?,
        None => Vec::new(),
    };
    let final_reward = agl_adapter::final_reward(&spans);
    if json {
        // Every attempt's spans unless one was asked for.
        let all = match (attempt_number, attempts.len()) {
            (None, n) if n > 1 => spans_of(store, &rollout, None).await?,
            _ => spans.clone(),
        };
        let record = RolloutJson {
            db: &opened.place,
            run_id: opened.record.as_ref().map(|r| r.run_id.as_str()),
            rollout: &rollout,
            attempts: &attempts,
            final_reward,
            spans: &all,
        };
        print(&format!("{}\n", serde_json::to_string_pretty(&record)?));
        return Ok(());
    }
    let mut out = String::new();
    let mut line = |text: String| {
        let _ = writeln!(out, "{}", clip_line(&text, width));
    };
    let run = opened
        .record
        .as_ref()
        .map_or_else(|| opened.place.clone(), |r| format!("run {}", r.run_id));
    line(format!(
        "rollout {} · {} · {} · {run}",
        rollout.rollout_id,
        rollout.status,
        rollout.mode.map_or("no split", |m| m.as_str())
    ));
    line(format!("  input      {}", one_line(&rollout.input.to_string())));
    if let Some(resources) = &rollout.resources_id {
        line(format!("  resources  {resources}"));
    }
    line(format!("  reward     {}", table::score(final_reward)));
    if let Some(failure) = chosen.and_then(failure_reason) {
        line(format!("  failure    {}", one_line(&failure)));
    }
    let mut table = Table::new(&[
        ("attempt", Align::Right),
        ("id", Align::Left),
        ("status", Align::Left),
        ("worker", Align::Left),
        ("started (UTC)", Align::Left),
        ("duration", Align::Right),
        ("failure", Align::Left),
    ]);
    for attempt in &attempts {
        table.row(vec![
            attempt.sequence_id.to_string(),
            attempt.attempt_id.clone(),
            attempt.status.to_string(),
            attempt.worker_id.clone().unwrap_or_else(|| "-".to_owned()),
            table::utc(attempt.start_time),
            attempt_duration(attempt),
            failure_reason(attempt).map(|f| one_line(&f)).unwrap_or_default(),
        ]);
    }
    out.push('\n');
    if attempts.is_empty() {
        out.push_str("  no attempt has run\n");
    } else {
        out.push_str(&table.render("  ", width));
    }
    if let Some(attempt) = chosen {
        let _ = writeln!(
            out,
            "\n{}",
            clip_line(
                &format!(
                    "spans of attempt {} ({}): {}",
                    attempt.sequence_id,
                    attempt.attempt_id,
                    spans.len()
                ),
                width
            )
        );
        for text in span_tree::lines(&spans) {
            let _ = writeln!(out, "{}", clip_line(&format!("  {text}"), width));
        }
    }
    print(&out);
    Ok(())
}
