//! `agl-host export`: a run's attempts as JSON lines of training data, read from a kept run, a
//! store URL or a store served over HTTP. This module opens the source, chooses the rollouts and
//! attempts, and writes the lines (to `--out` whole, through `whole_file`, or to stdout); what a
//! line holds is `export_lines`'.

use crate::args::{ExportArgs, ExportFormat};
use crate::export_lines::{self, Origin};
use crate::inputs::InputError;
use crate::output::{EXIT_STDOUT_CLOSED, Lines, stderr_line, terminal_safe};
use crate::show_cmd::{self, PAGE};
use crate::whole_file::WholeFile;
use crate::{kept, remote};
use agl_store::{Attempt, AttemptQuery, LightningStore, RolloutQuery, RolloutStatus, RolloutView, SortOrder};
use anyhow::Context;
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

/// The rollout statuses exported when `--status` is not given: the finished ones.
const FINISHED: [RolloutStatus; 3] = [
    RolloutStatus::Succeeded,
    RolloutStatus::Failed,
    RolloutStatus::Cancelled,
];

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
    /// Attempts whose spans hold no LLM call the adapter reads (triplets, messages).
    without_llm_call: usize,
}

pub async fn run(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let source = open(&args).await?;
    // The file is created before anything is read, so that a bad --out fails at once.
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
        counts.rollouts += usize::from(!attempts.is_empty());
        for attempt in &attempts {
            let spans = show_cmd::spans_of(store, &view.rollout, Some(&attempt.attempt_id)).await?;
            let origin = Origin::new(source.run_id.as_deref(), &view.rollout, attempt);
            lines.clear();
            let written = match args.format {
                ExportFormat::Triplets => export_lines::triplets(&origin, &spans, &mut lines),
                ExportFormat::Messages => export_lines::transcript(&origin, &spans, &mut lines),
                ExportFormat::Spans => export_lines::spans(&spans, &mut lines),
            }
            .with_context(|| format!("writing attempt {} as JSON", attempt.attempt_id))?;
            counts.attempts += 1;
            counts.lines += written;
            if written == 0 && args.format != ExportFormat::Spans {
                counts.without_llm_call += 1;
            }
            if let Err(error) = sink.write(&lines) {
                return sink_failed(&args.out, &error);
            }
        }
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
    let (url, _) = kept::resolve(source.db.as_deref(), source.run.as_deref(), &args.dir)?;
    let kept::OpenedKept { store, record, place } = kept::open_kept(&url).await?;
    Ok(Source {
        store,
        run_id: record.map(|record| record.run_id),
        place,
    })
}

/// The rollouts to export: of the statuses and modes asked for, not the algorithm's own, by start
/// time (then id).
async fn chosen_rollouts(store: &dyn LightningStore, args: &ExportArgs) -> anyhow::Result<Vec<RolloutView>> {
    let statuses = if args.status.is_empty() {
        FINISHED.to_vec()
    } else {
        args.status.clone()
    };
    let mut views: Vec<RolloutView> = Vec::new();
    loop {
        // Pages in id order, so that no rollout is seen twice or missed between pages.
        let query = RolloutQuery::default()
            .status_in(statuses.iter().copied())
            .sort_by("rollout_id", SortOrder::Asc)
            .limit(PAGE)
            .offset(views.len() as i64);
        let page = store.query_rollouts(&query).await.context("reading the rollouts")?;
        let fetched = page.items.len();
        views.extend(page.items);
        if fetched == 0 || views.len() as u64 >= page.total {
            break;
        }
    }
    views.retain(|view| {
        !show_cmd::is_algorithm_rollout(&view.rollout)
            && (args.mode.is_empty() || view.rollout.mode.is_some_and(|mode| args.mode.contains(&mode)))
    });
    views.sort_by(|a, b| {
        a.rollout
            .start_time
            .total_cmp(&b.rollout.start_time)
            .then_with(|| a.rollout.rollout_id.cmp(&b.rollout.rollout_id))
    });
    Ok(views)
}

/// The rollout's latest attempt, or all of them in order; none when it never ran.
async fn chosen_attempts(store: &dyn LightningStore, view: &RolloutView, all: bool) -> anyhow::Result<Vec<Attempt>> {
    if !all {
        return Ok(view.attempt.clone().into_iter().collect());
    }
    let rollout_id = &view.rollout.rollout_id;
    let mut attempts = store
        .query_attempts(rollout_id, &AttemptQuery::default())
        .await
        .with_context(|| format!("reading the attempts of rollout {rollout_id}"))?
        .items;
    attempts.sort_by_key(|attempt| attempt.sequence_id);
    Ok(attempts)
}

/// The closing line on stderr: what was written where, and from what.
fn summary(args: &ExportArgs, source: &Source, counts: &Counts) -> String {
    let what = match args.format {
        ExportFormat::Triplets => "triplets (one per LLM call)",
        ExportFormat::Messages => "transcripts (one per attempt)",
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
    if counts.attempts == 0 {
        line.push_str(" (no rollout matched: --status and --mode choose which)");
    }
    line
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
