//! `agl-host export`: a run's attempts as JSON lines of training data, read from a kept run, a
//! store URL or a store served over HTTP. This module opens the source, chooses the rollouts and
//! attempts (statuses, modes, resources, rewards), and writes the lines (to `--out` whole, through
//! `whole_file`, or to stdout); what a line holds is `agl_adapter::export`'s. Fork rollouts
//! (`agl-host fork`'s) are left out unless `--include-forks`: `select` says which are.

use crate::args::{ExportArgs, ExportFormat};
use crate::inputs::InputError;
use crate::output::{EXIT_STDOUT_CLOSED, Lines, stderr_line, terminal_safe};
use crate::remote;
use crate::whole_file::WholeFile;
use agl_adapter::export::{self, Origin, select};
use agl_store::{Attempt, LightningStore, RolloutView};
use anyhow::Context;
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

/// The store to read, the run it keeps, and how to name it to the user.
struct Source {
    store: Arc<dyn LightningStore>,
    run_id: Option<String>,
    place: String,
}

/// Where the lines go.
enum Sink {
    Stdout(io::StdoutLock<'static>),
    File(WholeFile),
}

/// What was exported, for the closing line on stderr.
#[derive(Default)]
struct Counts {
    rollouts: usize,
    attempts: usize,
    lines: usize,
    /// Attempts whose spans hold no LLM call the adapter reads (triplets, messages, tokens).
    without_llm_call: usize,
    /// LLM calls without token ids (tokens: their rows have none).
    missing_token_ids: usize,
    /// Attempts with such a call.
    attempts_missing_token_ids: usize,
    /// Attempts left out because their final reward is outside --min-reward/--max-reward.
    outside_reward: usize,
    /// LLM calls whose recorded tools could not be read (their lines go without).
    unreadable_tools: usize,
}

/// `--min-reward` and `--max-reward`: the final rewards an exported attempt may have, bounds
/// included. With either bound, an attempt without a reward is left out.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RewardRange {
    pub min: Option<f64>,
    pub max: Option<f64>,
}

impl RewardRange {
    /// The range, or an input error (exit 2) when no reward could be in it.
    pub fn new(min: Option<f64>, max: Option<f64>) -> Result<Self, InputError> {
        if let (Some(min), Some(max)) = (min, max)
            && min > max
        {
            return Err(InputError(format!(
                "--min-reward {min} is above --max-reward {max}: no reward is both"
            )));
        }
        Ok(Self { min, max })
    }

    /// Whether an attempt with this final reward is exported.
    fn admits(&self, reward: Option<f64>) -> bool {
        let filter = select::Filter {
            min_reward: self.min,
            max_reward: self.max,
            ..select::Filter::default()
        };
        filter.admits(reward)
    }
}

/// `--min-reward X`, `--max-reward X`: a finite number.
pub fn parse_reward(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(reward) if reward.is_finite() => Ok(reward),
        _ => Err("expected a number, e.g. 0.5 or -1".to_owned()),
    }
}

/// `--resources-version ID`: a resources id, as `agl-host show` prints it (e.g. rs-0123456789ab).
pub fn parse_resources_id(text: &str) -> Result<String, String> {
    let id = text.trim();
    if id.is_empty() {
        return Err("expected a resources id, as `agl-host show` prints it (e.g. rs-0123456789ab)".to_owned());
    }
    Ok(id.to_owned())
}

pub async fn run(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let rewards = RewardRange::new(args.min_reward, args.max_reward)?;
    let source = open(&args).await?;
    known_resources(source.store.as_ref(), &source.place, &args.resources).await?;
    // The file is created before the rollouts are read, so that a bad --out fails at once.
    let mut sink = match &args.out {
        Some(path) => Sink::File(
            WholeFile::create(path)
                .map_err(|e| InputError(format!("--out {}: cannot write there: {e}", path.display())))?,
        ),
        None => Sink::Stdout(io::stdout().lock()),
    };
    let store = source.store.as_ref();
    let rollouts = chosen_rollouts(store, &args).await?;
    let mut counts = Counts::default();
    let mut lines = String::new();
    for view in &rollouts {
        let attempts = chosen_attempts(store, view, args.all_attempts).await?;
        let mut exported = false;
        for attempt in &attempts {
            let rollout_id = &view.rollout.rollout_id;
            let spans = select::spans(store, rollout_id, &attempt.attempt_id)
                .await
                .with_context(|| format!("reading the spans of rollout {rollout_id}"))?;
            if !rewards.admits(agl_adapter::final_reward(&spans)) {
                counts.outside_reward += 1;
                continue;
            }
            exported = true;
            let origin = Origin::new(source.run_id.as_deref(), &view.rollout, attempt);
            lines.clear();
            let written = match args.format {
                ExportFormat::Triplets => export::triplets(&origin, &spans, &mut lines),
                ExportFormat::Messages => export::transcript(&origin, &spans, &mut lines),
                ExportFormat::Tokens => export::tokens(&origin, &spans, &mut lines),
                ExportFormat::Spans => export::spans(&spans, &mut lines),
            }
            .with_context(|| format!("writing attempt {} as JSON", attempt.attempt_id))?;
            counts.attempts += 1;
            counts.lines += written.lines;
            counts.unreadable_tools += written.unreadable_tools;
            counts.missing_token_ids += written.missing_token_ids;
            counts.attempts_missing_token_ids += usize::from(written.missing_token_ids > 0);
            if written.lines == 0 && args.format != ExportFormat::Spans {
                counts.without_llm_call += 1;
            }
            if let Err(error) = sink.write(&lines) {
                return sink_failed(&args.out, &error);
            }
        }
        counts.rollouts += usize::from(exported);
    }
    match sink {
        Sink::Stdout(mut stdout) => {
            if let Err(error) = stdout.flush() {
                return sink_failed(&None, &error);
            }
        }
        Sink::File(file) => {
            if let Err(error) = file.finish() {
                return sink_failed(&args.out, &error);
            }
        }
    }
    stderr_line(&summary(&args, &source, &counts));
    Ok(ExitCode::SUCCESS)
}

impl Sink {
    /// Writes `lines`; to stdout, a terminal perhaps, with no control character raw (the JSON
    /// escape of each instead: the same JSON, see `output::terminal_safe`).
    fn write(&mut self, lines: &str) -> io::Result<()> {
        match self {
            Sink::Stdout(stdout) => stdout.write_all(terminal_safe(lines, Lines::Many).as_bytes()),
            Sink::File(file) => file.write_all(lines.as_bytes()),
        }
    }
}

/// A write that failed: stdout closed by its reader ends quietly (141, as `output::print`);
/// anything else is an error, and a `--out` file is left as it was.
fn sink_failed(out: &Option<std::path::PathBuf>, error: &io::Error) -> anyhow::Result<ExitCode> {
    match out {
        None if error.kind() == io::ErrorKind::BrokenPipe => Ok(ExitCode::from(EXIT_STDOUT_CLOSED)),
        None => Err(anyhow::anyhow!("cannot write to stdout: {error}")),
        Some(path) => Err(anyhow::anyhow!(
            "cannot write {}: {error} (nothing was written there)",
            path.display()
        )),
    }
}

/// Opens the one source the arguments name (clap has checked there is exactly one).
async fn open(args: &ExportArgs) -> anyhow::Result<Source> {
    let source = &args.source;
    if let Some(url) = &source.store {
        let client = remote::connect(url, args.token.clone()).await?;
        return Ok(Source {
            store: Arc::new(client),
            run_id: None,
            place: url.clone(),
        });
    }
    let (url, _) = agl_runs::find::resolve(source.db.as_deref(), source.run.as_deref(), &args.dir)?;
    let agl_runs::open::OpenedKept { store, record, place } = agl_runs::open::open_kept(&url).await?;
    Ok(Source {
        store,
        run_id: record.map(|record| record.run_id),
        place,
    })
}

/// `--resources-version`'s ids, each of which the store must hold: a typo is an input error (exit
/// 2), not an empty export.
async fn known_resources(store: &dyn LightningStore, place: &str, ids: &[String]) -> anyhow::Result<()> {
    for id in ids {
        let found = store
            .get_resources_by_id(id)
            .await
            .with_context(|| format!("reading resources {id}"))?;
        if found.is_none() {
            return Err(InputError(format!(
                "--resources-version {id}: no such resources in {place} (`agl-host show` prints the \
                 resources each rollout ran with)"
            ))
            .into());
        }
    }
    Ok(())
}

/// The rollouts to export: of the statuses, modes and resources asked for, not the algorithm's
/// own, by start time (then id); `agl_adapter::export::select` decides, as it does for the store
/// server's export route.
async fn chosen_rollouts(store: &dyn LightningStore, args: &ExportArgs) -> anyhow::Result<Vec<RolloutView>> {
    select::rollouts(store, &filter(args))
        .await
        .context("reading the rollouts")
}

/// The selection the arguments ask for.
fn filter(args: &ExportArgs) -> select::Filter {
    select::Filter {
        statuses: args.status.clone(),
        modes: args.mode.clone(),
        resources: args.resources.clone(),
        all_attempts: args.all_attempts,
        min_reward: args.min_reward,
        max_reward: args.max_reward,
        include_forks: args.include_forks,
    }
}

/// The rollout's latest attempt, or all of them in order; none when it never ran.
async fn chosen_attempts(store: &dyn LightningStore, view: &RolloutView, all: bool) -> anyhow::Result<Vec<Attempt>> {
    let rollout_id = &view.rollout.rollout_id;
    select::attempts(store, view, all)
        .await
        .with_context(|| format!("reading the attempts of rollout {rollout_id}"))
}

/// The closing line on stderr: what was written where, and from what.
fn summary(args: &ExportArgs, source: &Source, counts: &Counts) -> String {
    let what = match args.format {
        ExportFormat::Triplets => "triplets (one per LLM call)",
        ExportFormat::Messages => "transcripts (one per attempt)",
        ExportFormat::Tokens => "token rows (LLM calls that continue each other merged)",
        ExportFormat::Spans => "spans",
    };
    let to = args
        .out
        .as_deref()
        .map_or_else(|| "stdout".to_owned(), |path: &Path| path.display().to_string());
    let run = source
        .run_id
        .as_deref()
        .map_or_else(|| source.place.clone(), |id| format!("run {id}"));
    let mut line = format!(
        "agl-host export: {} {what} from {} attempt{} of {} rollout{} of {run} to {to}",
        counts.lines,
        counts.attempts,
        plural(counts.attempts),
        counts.rollouts,
        plural(counts.rollouts),
    );
    if counts.without_llm_call > 0 {
        line.push_str(&format!(
            "; {} attempt{} made no LLM call and gave no line",
            counts.without_llm_call,
            plural(counts.without_llm_call)
        ));
    }
    if counts.missing_token_ids > 0 {
        line.push_str(&format!(
            "; warning: {} LLM call{} of {} attempt{} recorded no token ids (the backend returned none; \
             vLLM through --llm-token-ids does): {} missing_token_ids and no tokens",
            counts.missing_token_ids,
            plural(counts.missing_token_ids),
            counts.attempts_missing_token_ids,
            plural(counts.attempts_missing_token_ids),
            if counts.missing_token_ids == 1 {
                "its row says"
            } else {
                "their rows say"
            },
        ));
    }
    if counts.outside_reward > 0 {
        line.push_str(&format!(
            "; {} attempt{} left out by --min-reward/--max-reward",
            counts.outside_reward,
            plural(counts.outside_reward)
        ));
    }
    if counts.unreadable_tools > 0 {
        line.push_str(&format!(
            "; {} LLM call{} recorded tools that could not be read (clipped at the span attribute \
             cap?): their lines have no tools",
            counts.unreadable_tools,
            plural(counts.unreadable_tools)
        ));
    }
    if counts.attempts == 0 {
        line.push_str(
            " (no rollout matched: --status, --mode, --resources-version, --min-reward, --max-reward and \
             --include-forks choose which)",
        );
    }
    line
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{Cli, Command};
    use clap::Parser;

    fn range(min: Option<f64>, max: Option<f64>) -> RewardRange {
        RewardRange::new(min, max).expect("a range")
    }

    #[test]
    fn a_reward_range_includes_its_bounds_and_leaves_out_attempts_without_a_reward() {
        let both = range(Some(0.5), Some(1.0));
        assert!(both.admits(Some(0.5)) && both.admits(Some(0.75)) && both.admits(Some(1.0)));
        assert!(!both.admits(Some(0.49)) && !both.admits(Some(1.01)));
        assert!(!both.admits(None));
        let at_least = range(Some(0.0), None);
        assert!(at_least.admits(Some(0.0)) && at_least.admits(Some(7.0)) && !at_least.admits(Some(-0.1)));
        assert!(!at_least.admits(None));
        let at_most = range(None, Some(-1.0));
        assert!(at_most.admits(Some(-1.0)) && !at_most.admits(Some(0.0)) && !at_most.admits(None));
        let exact = range(Some(1.0), Some(1.0));
        assert!(exact.admits(Some(1.0)) && !exact.admits(Some(0.0)));
        // No bound: every attempt, with a reward or not.
        let none = range(None, None);
        assert!(none.admits(None) && none.admits(Some(-5.0)));
    }

    #[test]
    fn a_minimum_above_the_maximum_is_an_input_error() {
        let error = RewardRange::new(Some(0.8), Some(0.2)).expect_err("empty range");
        assert_eq!(error.0, "--min-reward 0.8 is above --max-reward 0.2: no reward is both");
    }

    #[test]
    fn rewards_and_resources_ids_are_parsed_or_refused() {
        assert_eq!(parse_reward("0.5"), Ok(0.5));
        assert_eq!(parse_reward("-1"), Ok(-1.0));
        assert_eq!(parse_reward("1e-3"), Ok(0.001));
        for bad in ["", "high", "NaN", "inf", "-inf", "0.5.1"] {
            assert_eq!(
                parse_reward(bad),
                Err("expected a number, e.g. 0.5 or -1".to_owned()),
                "{bad:?}"
            );
        }
        assert_eq!(parse_resources_id("rs-0123456789ab"), Ok("rs-0123456789ab".to_owned()));
        assert_eq!(parse_resources_id(" rs-1 "), Ok("rs-1".to_owned()));
        assert!(parse_resources_id(" ").is_err());
    }

    fn export_args(extra: &[&str]) -> Result<ExportArgs, clap::Error> {
        let argv = ["agl-host", "export", "--db", "sqlite:run.db", "--format", "messages"];
        match Cli::try_parse_from(argv.iter().chain(extra))?.command {
            Command::Export(args) => Ok(args),
            other => panic!("not export: {other:?}"),
        }
    }

    #[test]
    fn the_filters_parse_from_the_command_line() {
        let args = export_args(&[
            "--resources-version",
            "rs-a,rs-b",
            "--resources-id",
            "rs-c",
            "--min-reward",
            "-0.5",
            "--max-reward",
            "1",
        ])
        .expect("parsed");
        assert_eq!(args.resources, ["rs-a", "rs-b", "rs-c"]);
        assert_eq!((args.min_reward, args.max_reward), (Some(-0.5), Some(1.0)));
        let plain = export_args(&[]).expect("parsed");
        assert!(plain.resources.is_empty() && plain.min_reward.is_none() && plain.max_reward.is_none());
        assert!(
            !plain.include_forks && !filter(&plain).include_forks,
            "forks are left out by default"
        );
        let forks = export_args(&["--include-forks"]).expect("parsed");
        assert!(forks.include_forks && filter(&forks).include_forks);

        let refused = export_args(&["--min-reward", "lots"]).expect_err("not a number");
        assert_eq!(refused.kind(), clap::error::ErrorKind::ValueValidation);
        assert!(refused.to_string().contains("expected a number"), "{refused}");
        let refused = export_args(&["--resources-version", ""]).expect_err("no id");
        assert!(refused.to_string().contains("expected a resources id"), "{refused}");
    }
}
