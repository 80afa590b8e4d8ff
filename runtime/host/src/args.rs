//! The command line: `agl-host run`, `dev`, `eval`, `store`, `runner`, `build`, `runs`, `show`,
//! `best`, `export`, `replay` and `fork`, their flags and their help text. The subcommands' help is neither reflowed nor
//! wrapped (`verbatim_doc_comment`, `term_width = 0`), so that an example command stays on one
//! line and can be pasted.

use agl_wasm::SandboxOptions;
use clap::parser::ValueSource;
use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;

/// Most runners one process runs (`run --runners`, `runner --runners`): agents in flight at once.
pub const MAX_RUNNERS: i64 = 16_384;
/// Most runner processes `run --strategy client-server` starts (one per runner).
pub const MAX_RUNNER_PROCESSES: u16 = 1_024;

const EXIT_CODES: &str = "\
Exit codes:
  0    the run completed (agent failures are results, not errors: see the summary)
  1    the algorithm failed, or the run could not finish
  2    bad arguments or input: a missing file, bad JSON, an unknown algorithm, a component that
       does not fit its world, or a run refused before it started (its agent or algorithm uses
       the LLM and none is configured)
  3    the run completed but every rollout failed: nothing was learnt (the summary gives the
       reasons, e.g. the agent's tasks or resources do not fit it)
  130  interrupted (Ctrl-C); partial results were written
  141  stdout was closed (e.g. piped into `head`); the results file, if any, was written first

Components: --agent and --algo take a .wasm component, or a guest folder — Rust (Cargo.toml),
Python (pyproject.toml or app.py), JavaScript (package.json) or C (.c files; agents only) — which is
built into a component in
the cache ($AGL_CACHE_DIR/guests, else ~/.cache/agl-host/guests; the path of the built component is
printed; a folder is rebuilt only when a file its build reads changes, saying why; Python and JavaScript toolchains are
installed there on first use). `agl-host build DIR -o agent.wasm` builds one without running it. --algo also takes the
name of a built-in algorithm: baseline, apo or gepa (write ./apo for a folder named apo). A sandbox
manifest sets its limits and grants: a folder's agent.toml (an algorithm folder's algorithm.toml),
or the file beside a .wasm (agent.wasm -> agent.toml); the --agent-* flags add to it.";

/// The long help's epilogue: the exit codes, then the built-in algorithms.
fn after_long_help() -> String {
    format!(
        "{EXIT_CODES}\n\nBuilt-in algorithms (--algo NAME):\n{}",
        crate::builtin::help_table()
    )
}

/// Run agent-optimisation loops with sandboxed WebAssembly agents and algorithms.
///
/// An agent component runs one task per rollout; an algorithm component (baseline, APO, ...)
/// decides which rollouts to run and updates the resources (e.g. the prompt) between them. Every
/// LLM call, reward and log line of the agent is traced into the store automatically.
#[derive(Debug, Parser)]
#[command(name = "agl-host", version, after_long_help = EXIT_CODES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// More log output (-v: info, -vv: debug); also AGL_LOG=<filter>.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Optimise: run an algorithm (apo, baseline, or a component) against an agent over a dataset.
    ///
    /// Examples (offline, with the scripted LLM; from the agl-host repository):
    ///
    ///   agl-host run --agent examples/math-agent --algo apo --train examples/math-agent/data/train.jsonl --val examples/math-agent/data/val.jsonl --resources examples/math-agent/apo/seed-resources.json --llm-script examples/math-agent/apo/rules.json --algo-config examples/math-agent/apo/config.json --output results.json
    ///
    ///   agl-host run --agent examples/math-agent --algo baseline --train examples/math-agent/data/train.jsonl --resources examples/math-agent/initial-resources.json --llm-script examples/math-agent/rules.json
    ///
    /// Against a store served elsewhere (`agl-host store`), whose runners (`agl-host runner`) run
    /// the agent:
    ///
    ///   agl-host run --store http://10.0.0.5:4747 --algo apo --train train.jsonl --val val.jsonl --resources seed.json --llm-endpoint http://127.0.0.1:8000/v1 --llm-model my-model
    #[command(after_long_help = after_long_help(), verbatim_doc_comment, term_width = 0)]
    Run(RunArgs),
    /// Try an agent: run every task once with the baseline algorithm and report mean rewards.
    ///
    /// Example (from the agl-host repository):
    ///
    ///   agl-host dev --agent examples/math-agent --train examples/math-agent/data/val.jsonl --resources examples/math-agent/initial-resources.json --llm-script examples/math-agent/rules.json
    #[command(after_long_help = after_long_help(), verbatim_doc_comment, term_width = 0)]
    Dev(DevArgs),
    /// Evaluate resources on a split: run its every task once (the baseline) and report the mean reward.
    ///
    /// The resources are --resources FILE.json, or a kept run's (--run RUN: its best resources, or
    /// --version's). The split's rollouts are test rollouts (mode `test` in the store), and the
    /// summary, the results file and the run record name them by --split (default: the file's
    /// name without its extension, e.g. `test` for data/test.jsonl). The run is kept as `run` and
    /// `dev` keep theirs. Examples (from the agl-host repository):
    ///
    ///   agl-host eval --agent examples/math-agent --resources examples/math-agent/initial-resources.json --data examples/math-agent/data/val.jsonl --split holdout --llm-script examples/math-agent/rules.json
    ///
    ///   agl-host eval --agent examples/math-agent --run run-20261124-210620-e352 --data test.jsonl --llm-script examples/math-agent/rules.json --output eval.json
    #[command(after_long_help = after_long_help(), verbatim_doc_comment, term_width = 0)]
    Eval(EvalArgs),
    /// Serve a LightningStore over HTTP (Agent-lightning 0.3.0's wire API, plus OTLP at /v1/traces).
    ///
    /// Runners (`agl-host runner --store URL`), algorithms (`agl-host run --store URL`) and
    /// Agent-lightning's Python client can use it. Examples:
    ///
    ///   agl-host store --host 0.0.0.0 --port 4747 --token secret
    ///   agl-host store --db sqlite:store.db
    ///
    /// Any web dashboard that speaks the same API can be served beside it (same origin), e.g.
    /// Agent-lightning 0.3.0's own, from its Python package (`pip install agentlightning==0.3.0`):
    ///
    ///   agl-host store --db sqlite:store.db --dashboard-dir "$(python -c "import agentlightning, os; print(os.path.join(os.path.dirname(agentlightning.__file__), 'dashboard'))")"
    ///
    /// Prometheus metrics (rollouts, attempts and workers by status, queue depth, spans, LLM calls,
    /// tokens and latency, heartbeats, HTTP requests) are at GET /metrics, behind --token like the
    /// API (give Prometheus the token as `authorization` in its scrape config):
    ///
    ///   curl -H "Authorization: Bearer secret" http://127.0.0.1:4747/metrics
    #[command(verbatim_doc_comment, term_width = 0)]
    Store(StoreArgs),
    /// Run rollouts from a remote store with an agent component, until stopped (Ctrl-C or SIGTERM).
    ///
    /// One line per finished rollout is printed. Example:
    ///
    ///   agl-host runner --store http://10.0.0.5:4747 --token secret --agent agent.wasm --runners 4 --llm-script rules.json
    #[command(after_long_help = EXIT_CODES, verbatim_doc_comment, term_width = 0)]
    Runner(RunnerArgs),
    /// Build a guest folder (an agent or an algorithm: Rust, Python, JavaScript, C) into a component.
    ///
    /// The language is told by the folder: Cargo.toml (Rust, needs the wasm32-wasip2 target),
    /// pyproject.toml or app.py (Python: componentize-py is installed into the cache on first use;
    /// needs python3), package.json (JavaScript: componentize-js is installed likewise; needs node
    /// and npm), .c files (a C agent: needs clang and Debian's wasi-libc, see sdk/README.md).
    /// The component is built in the cache and rebuilt only when the sources change; its path is
    /// printed, and -o copies it. Examples:
    ///
    ///   agl-host build examples/math-agent-py -o math-agent.wasm
    ///
    ///   agl-host build examples/math-agent-js && agl-host dev --agent examples/math-agent-js --train examples/math-agent/data/val.jsonl --resources examples/math-agent/initial-resources.json --llm-script examples/math-agent/rules.json
    #[command(after_long_help = BUILD_EXIT_CODES, verbatim_doc_comment, term_width = 0)]
    Build(BuildArgs),
    /// List the kept runs: every run `agl-host run`/`dev` kept under .agl/runs/, newest first.
    ///
    /// One line per run from its run record: id, start (UTC), status, rollouts, mean reward,
    /// best score, agent and algorithm. `running?` is a run with no end recorded: still running,
    /// or killed before it could record one. A file that cannot be read is one line saying why.
    /// Examples:
    ///
    ///   agl-host runs
    ///   agl-host runs --dir ../other-project/.agl/runs --json
    #[command(after_long_help = RUNS_EXIT_CODES, verbatim_doc_comment, term_width = 0)]
    Runs(RunsArgs),
    /// Look into a kept run: its rollouts, or one rollout's attempts and spans.
    ///
    /// RUN is a run id (as `agl-host runs` lists them; a unique start of one will do), kept in
    /// .agl/runs/RUN.db, or the path of a .db file. --db URL opens any store a run was kept in
    /// instead (sqlite:PATH, postgres://...), and RUN may then be left out.
    ///
    /// Without ROLLOUT: the run (status, agent, algorithm, start, duration, best score) and a
    /// table of its rollouts (split, status, attempts, final reward, duration of the latest
    /// attempt, why it failed). With ROLLOUT (an id, or a unique part of one: rollouts made together
    /// share the start of their ids, so give its last digits): its attempts and
    /// the span tree of its latest attempt (or --attempt N): LLM prompts and answers, rewards,
    /// logs, the agent's operations. Lines are clipped to $COLUMNS (100 when unset). Examples:
    ///
    ///   agl-host show run-20261124-210620-e352
    ///   agl-host show run-20261124-210620-e352 ro-01a2c7747706
    ///   agl-host show run-20261124 ro-01a --attempt 1 --json
    ///   agl-host show --db postgres://agl@db-host/agl ro-01a2c7747706
    #[command(after_long_help = INSPECT_EXIT_CODES, verbatim_doc_comment, term_width = 0)]
    Show(ShowArgs),
    /// Print a kept run's best resources as JSON, ready for another run's --resources.
    ///
    /// RUN is a run id (as `agl-host runs` lists them; a unique start of one will do), a run's
    /// --name, or the path of a .db file; --db URL opens any store a run was kept in. The best
    /// resources are the version the run's results name as best (the algorithm's best score);
    /// --version picks another version of the run (`agl-host show RUN` and the dashboard list
    /// them). API keys are never printed: an `llm` resource's key comes from the environment
    /// again. Examples:
    ///
    ///   agl-host best run-20261124-210620-e352 > best.json && agl-host dev --agent examples/math-agent --train examples/math-agent/data/val.jsonl --resources best.json --llm-script examples/math-agent/rules.json
    ///   agl-host best --db postgres://agl@db-host/agl --version rs-1a2b3c4d5e6f
    #[command(after_long_help = BEST_EXIT_CODES, verbatim_doc_comment, term_width = 0)]
    Best(BestArgs),
    /// Open kept runs in the web dashboard: one run's store with the dashboard at /, or every run.
    ///
    /// The dashboard (built into agl-host; no network needed) shows the run's summary and charts,
    /// its rollouts (filters, sort by reward), one rollout's attempts, span tree, LLM calls as
    /// chats, rewards and logs, the resources versions with a diff of their prompts, two versions
    /// compared task by task, and the workers. RUN is a run id (as `agl-host runs` lists them; a
    /// unique start of one will do) or a .db file; --db URL opens any store a run was kept in.
    /// The URL is printed (on 127.0.0.1:4748 by default, or a free port when that one is taken);
    /// serves until Ctrl-C. `agl-host store` serves the same dashboard at /, and `agl-host run
    /// --dashboard` while the run goes.
    ///
    /// With no RUN and no --db: every run kept in --dir, listed on a Runs page (status, rollouts,
    /// mean reward per split, best score); click one to open its views, or compare two runs side
    /// by side (mean reward per split, per-task rewards and which tasks flipped, tokens, LLM
    /// time). Each run is served under /runs/ID/ (ID: its file's name without .db). Examples:
    ///
    ///   agl-host dashboard
    ///   agl-host dashboard run-20261124-210620-e352
    ///   agl-host dashboard --dir experiments/runs --port 8080
    ///   agl-host dashboard --db postgres://agl@db-host/agl --port 8080
    #[command(after_long_help = DASHBOARD_EXIT_CODES, verbatim_doc_comment, term_width = 0)]
    Dashboard(DashboardArgs),
    /// Export a run as training data: JSON lines of LLM-call triplets, chat transcripts, token rows or
    /// spans.
    ///
    /// From a kept run (--run RUN: its id as `agl-host runs` lists them, a unique start of one, or
    /// its .db file), a store a run was kept in (--db sqlite:PATH|postgres://...), or a store
    /// served over HTTP (--store URL: `agl-host store` or Agent-lightning's, with --token).
    ///
    /// Which attempts: the latest attempt of every finished rollout (succeeded, failed or
    /// cancelled), rollouts by start time; --status, --mode and --all-attempts choose others. The
    /// algorithm's own rollouts (APO's LLM calls) are not tasks and are left out. Filters, in every
    /// format: --resources-version ID keeps the rollouts that ran with those resources (the id
    /// `agl-host show` prints, each line's resources_id: APO's prompt versions v0, v1, ...);
    /// --min-reward X and --max-reward X keep the attempts whose final reward is in range, bounds
    /// included (an attempt with no reward is then left out).
    ///
    /// Formats (one JSON object per line; every field is in the book, docs/src/reference/export-formats.md):
    ///   triplets  one line per LLM call: prompt (chat messages), response, tool calls, the tools
    ///             the call was offered, reward (the attempt's final reward on its last call),
    ///             final_reward, usage, token ids where recorded, and the rollout, attempt, mode,
    ///             resources and task input
    ///   messages  one line per attempt with an LLM call: {"messages": [...], "tools": [...]}
    ///             (OpenAI's fine-tuning shape, tool calls and results included; "tools" absent
    ///             when no call was offered any), its final reward (and every reward it recorded)
    ///             and the same identifying fields
    ///   tokens    token-exact rows for RL trainers: per attempt, its LLM calls as prompt and
    ///             response token ids (as the backend returned them, never re-tokenised), a loss
    ///             mask (1 on the model's tokens, 0 on the prompt and on tool observations),
    ///             logprobs, the rewards and the model; calls whose prompt continues the previous
    ///             call's tokens exactly are merged into one row, as Agent-lightning's trace
    ///             aggregator does; a call without token ids gets a row with missing_token_ids
    ///             true (counted on stderr). Also served by `agl-host store` as
    ///             GET /v1/agl/export/tokens
    ///   spans     one line per span, as the store's wire JSON
    ///
    /// The lines go to --out FILE (written whole or not at all) or stdout; a count goes to stderr.
    /// Examples:
    ///
    ///   agl-host export --run run-20261124-210620-e352 --format triplets --out triplets.jsonl
    ///   agl-host export --run run-20261124 --format messages --mode train --status succeeded > sft.jsonl
    ///   agl-host export --run run-20261124 --format messages --resources-version v1 --min-reward 1 > best.jsonl
    ///   agl-host export --run run-20261124 --format tokens --mode train --out rl.jsonl
    ///   agl-host export --store http://10.0.0.5:4747 --token secret --format spans --all-attempts
    #[command(after_long_help = EXPORT_EXIT_CODES, verbatim_doc_comment, term_width = 0)]
    Export(ExportArgs),
    /// Replay recorded attempts offline: check that an attempt replays the same, or a new build against the record.
    ///
    /// Every attempt a run makes is recorded (unless it ran with --no-record): what entered its
    /// agent — the task, the resources, the LLM's answers, HTTP responses, the seed and the clock
    /// start. A replay runs the agent again with every host call answered from that record: no LLM
    /// is called, nothing reaches the network, nothing is written to the run's store.
    ///
    /// With ROLLOUT (an id, or a unique part of one): its latest attempt (or --attempt N) is
    /// replayed with the run's own agent, loaded as the run loaded it (from the command line its
    /// record keeps); the replay's span tree is printed, then the verdict: identical (same status,
    /// reward and spans), or where it differs — the first host call that is not the recorded one,
    /// with a diff of the recorded and the replayed request.
    ///
    /// Without ROLLOUT: every recorded attempt of the run (the latest of each rollout; --status
    /// keeps those that ended so), --jobs at a time, one line each — identical, same-reward (the
    /// spans differ), reward-changed (status or reward) or diverged — then the counts. --agent PATH
    /// replays against another build (a .wasm or a guest folder): a regression check for CI. While
    /// it makes the recorded calls it gets the recorded answers; at the first call that differs it
    /// stops (diverged), or with --live goes on live, with the LLM of the --llm-* flags. Examples:
    ///
    ///   agl-host replay run-20261124-210620-e352 ro-01a2c7747706
    ///   agl-host replay run-20261124 --agent examples/math-agent --json
    ///   agl-host replay run-20261124 --agent ./new-agent --status succeeded --live --llm-script rules.json
    #[command(after_long_help = REPLAY_EXIT_CODES, verbatim_doc_comment, term_width = 0)]
    Replay(ReplayArgs),
    /// Fork a recorded attempt at one of its LLM calls: replay it up to there, then run it on live.
    ///
    /// The host calls before the K-th LLM call (--at-llm-call K, 1 for the first) are answered
    /// from the attempt's recording; call K gets --reply TEXT, or goes to the LLM of the --llm-*
    /// flags; every later call is live. Each of the --branches M new rollouts (in the run's own
    /// store; the parent's task, split and resources; metadata "agl.fork" names the parent
    /// rollout and attempt, K and the branch) runs as one attempt, its spans and recording kept;
    /// their ids, status and reward are printed (`agl-host show RUN ID` shows one). --reply with
    /// --branches above 1 needs an LLM too (then only the later, live calls tell the branches
    /// apart; without one they would be identical, and are refused). Examples:
    ///
    ///   agl-host fork run-20261124-210620-e352 ro-01a2c7747706 --at-llm-call 2 --reply "The answer is 42"
    ///   agl-host fork run-20261124 ro-01a --at-llm-call 1 --branches 4 --llm-endpoint http://127.0.0.1:8000/v1 --llm-model m
    #[command(after_long_help = FORK_EXIT_CODES, verbatim_doc_comment, term_width = 0)]
    Fork(ForkArgs),
}

const REPLAY_EXIT_CODES: &str = "\
Exit codes:
  0    every attempt replayed as recorded: identical (with --agent or --live: identical or
       same-reward)
  1    an attempt replayed otherwise (diverged, reward-changed; with the run's own agent and no
       --live, spans that differ), or the store could not be read
  2    bad arguments, an unknown run or rollout (or one named ambiguously), an attempt with no
       recording, an agent that changed since the run (without --agent), no LLM for --live";

const FORK_EXIT_CODES: &str = "\
Exit codes:
  0    every branch ran (an agent's failure is a result: see the branch's status)
  1    a branch could not be made or run (the store failed)
  2    bad arguments, an unknown run or rollout, an attempt with no recording, --at-llm-call out
       of range, no LLM where the fork needs one, an agent that changed since the run";

/// A kept run, as `best`, `replay` and `fork` name it.
#[derive(Debug, Args)]
pub struct KeptRunArgs {
    /// The run: its id (or a unique start of it) under --dir, its name (`run --name`), or a .db file.
    #[arg(value_name = "RUN", required_unless_present = "db")]
    pub run: Option<String>,
    /// Open this store instead of a kept run's file: sqlite:PATH, postgres://USER@HOST/DB.
    #[arg(long, value_name = "URL")]
    pub db: Option<String>,
    /// Where run ids and names are looked up.
    #[arg(long, value_name = "DIR", default_value = agl_runs::RUNS_DIR)]
    pub dir: PathBuf,
}

/// The run and the attempt `replay` and `fork` read, and the values the run's record hides.
#[derive(Debug, Args)]
pub struct RecordedAttemptArgs {
    #[command(flatten)]
    pub kept: KeptRunArgs,
    /// A value the run's record hides (it was given to the run as --agent-env NAME=VALUE): the
    /// replay must grant the agent the same environment.
    #[arg(long = "agent-env", value_name = "NAME=VALUE")]
    pub agent_env: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub recorded: RecordedAttemptArgs,
    /// A rollout of the run (its id, or a unique part of it): replay its latest attempt (or
    /// --attempt N's). None: every recorded attempt of the run.
    #[arg(value_name = "ROLLOUT")]
    pub rollout: Option<String>,
    /// With ROLLOUT: replay this attempt (1, 2, ...) rather than the latest.
    #[arg(long, value_name = "N", requires = "rollout")]
    pub attempt: Option<u32>,
    /// Replay against this agent (a .wasm or a guest folder) rather than the run's own.
    #[arg(long, value_name = "AGENT")]
    pub agent: Option<PathBuf>,
    /// Without ROLLOUT: only the attempts that ended so in the run (repeat, or separate with
    /// commas): succeeded, failed, timeout, unresponsive.
    #[arg(long, value_name = "STATUS", value_delimiter = ',', value_parser = parse_attempt_status, conflicts_with = "rollout")]
    pub status: Vec<agl_store::AttemptStatus>,
    /// At the first call that differs from the record, go on live (with the --llm-* flags)
    /// rather than stop.
    #[arg(long)]
    pub live: bool,
    /// Attempts replayed at once.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub jobs: u16,
    /// Print a JSON report instead (each attempt's class, divergence and diff, and the counts).
    #[arg(long)]
    pub json: bool,
    /// With --live: where the calls past a divergence go.
    #[command(flatten)]
    pub llm: LlmArgs,
}

#[derive(Debug, Args)]
pub struct ForkArgs {
    #[command(flatten)]
    pub recorded: RecordedAttemptArgs,
    /// The rollout: its id, or a unique part of it (required; with --db, RUN may be left out).
    #[arg(value_name = "ROLLOUT")]
    pub rollout: Option<String>,
    /// Fork this attempt (1, 2, ...) rather than the latest.
    #[arg(long, value_name = "N")]
    pub attempt: Option<u32>,
    /// The LLM call (1 for the first) from which the fork runs live.
    #[arg(long, value_name = "K")]
    pub at_llm_call: u32,
    /// Answer LLM call K with TEXT (the calls after it are live).
    #[arg(long, value_name = "TEXT")]
    pub reply: Option<String>,
    /// How many forks (new rollouts) to make.
    #[arg(long, value_name = "M", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub branches: u16,
    /// Print the new rollouts as JSON.
    #[arg(long)]
    pub json: bool,
    /// Where LLM call K (without --reply) and the later ones go.
    #[command(flatten)]
    pub llm: LlmArgs,
}

fn parse_attempt_status(text: &str) -> Result<agl_store::AttemptStatus, String> {
    use agl_store::AttemptStatus;
    AttemptStatus::ALL
        .into_iter()
        .find(|status| status.as_str() == text)
        .ok_or_else(|| {
            let names: Vec<&str> = AttemptStatus::ALL.iter().map(|s| s.as_str()).collect();
            format!("expected one of {}", names.join(", "))
        })
}

const DASHBOARD_EXIT_CODES: &str = "\
Exit codes:
  0    served until Ctrl-C or SIGTERM
  1    the store could not be read, or the address could not be bound
  2    an unknown run (or one named ambiguously), a missing file, a bad --db URL, a file that is
       not a database, a --dir that cannot be listed";

#[derive(Debug, Args)]
pub struct DashboardArgs {
    /// The run: its id (or a unique start of it) under --dir, or a .db file. None (and no --db):
    /// every run kept in --dir.
    #[arg(value_name = "RUN")]
    pub run: Option<String>,
    /// Open this store instead of a kept run's file: sqlite:PATH, postgres://USER@HOST/DB.
    #[arg(long, value_name = "URL")]
    pub db: Option<String>,
    /// Where run ids are looked up (and, with no RUN, the runs that are served).
    #[arg(long, value_name = "DIR", default_value = agl_runs::RUNS_DIR)]
    pub dir: PathBuf,
    /// Address to bind (127.0.0.1: this machine only; another: use --token).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: std::net::IpAddr,
    /// Port to serve on (the default falls back to a free port when taken; 0: any free port).
    #[arg(long, default_value_t = crate::dashboard_cmd::DEFAULT_PORT)]
    pub port: u16,
    /// Require `Authorization: Bearer TOKEN` on the API (the page asks for it once, or takes it
    /// from the printed URL's #token=...).
    #[arg(long, env = "AGL_STORE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    #[command(flatten)]
    pub edge: EdgeArgs,
}

const RUNS_EXIT_CODES: &str = "\
Exit codes:
  0    listed (a file that cannot be read is a row saying why)
  2    the folder cannot be listed";

const INSPECT_EXIT_CODES: &str = "\
Exit codes:
  0    printed
  1    the store could not be read
  2    an unknown run or rollout (or one named ambiguously), a missing file, a bad --db URL, a
       file that is not a database";

#[derive(Debug, Args)]
pub struct RunsArgs {
    /// The folder of kept runs.
    #[arg(long, value_name = "DIR", default_value = agl_runs::RUNS_DIR)]
    pub dir: PathBuf,
    /// Print the run records as JSON (an array, newest first: `file`, and `run` or `error`).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The run: its id (or a unique start of it) under --dir, or a .db file.
    #[arg(value_name = "RUN", required_unless_present = "db")]
    pub run: Option<String>,
    /// A rollout of the run: its id, or a unique start of it.
    #[arg(value_name = "ROLLOUT")]
    pub rollout: Option<String>,
    /// With ROLLOUT: show the spans of this attempt (1, 2, ...) rather than the latest.
    #[arg(long, value_name = "N")]
    pub attempt: Option<u32>,
    /// Print the record as JSON: the run and its rollouts; with ROLLOUT, the rollout, its
    /// attempts and their spans (every attempt's, or --attempt N's).
    #[arg(long)]
    pub json: bool,
    /// Open this store instead of a kept run's file: sqlite:PATH, postgres://USER@HOST/DB.
    #[arg(long, value_name = "URL")]
    pub db: Option<String>,
    /// Where run ids are looked up.
    #[arg(long, value_name = "DIR", default_value = agl_runs::RUNS_DIR)]
    pub dir: PathBuf,
}

const BEST_EXIT_CODES: &str = "\
Exit codes:
  0    printed
  1    the store could not be read
  2    an unknown run (or one named ambiguously), a run with no best resources yet (still running,
       or no score reported), an unknown --version, a missing file, a bad --db URL";

#[derive(Debug, Args)]
pub struct BestArgs {
    #[command(flatten)]
    pub kept: KeptRunArgs,
    /// This resources version of the run (its id, e.g. rs-1a2b3c4d5e6f) rather than the best.
    #[arg(long, value_name = "VERSION")]
    pub version: Option<String>,
}

const EXPORT_EXIT_CODES: &str = "\
Exit codes:
  0    exported (possibly nothing: the count on stderr says)
  1    the store failed while being read, or --out could not be written (no file is left)
  2    no source or more than one, an unknown run (or one named ambiguously), a missing file, a bad
       --db URL, a file that is not a database, a store that does not answer, a --resources-version
       the store does not hold, --min-reward above --max-reward";

/// What `agl-host export` writes, one JSON object per line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// One line per LLM call: (prompt, response, reward) with its attempt's identity.
    Triplets,
    /// One line per attempt: its chat transcript and final reward.
    Messages,
    /// Token-exact rows: token ids, loss mask, logprobs, rewards; continuing calls merged.
    Tokens,
    /// One line per span, as the store's wire JSON.
    Spans,
}

/// Where `agl-host export` reads from: exactly one of these.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct ExportSource {
    /// A kept run: its id (or a unique start of it) under --dir, or its .db file.
    #[arg(long, value_name = "RUN")]
    pub run: Option<String>,
    /// A store a run was kept in: sqlite:PATH (or a .db path), postgres://USER@HOST/DB.
    #[arg(long, value_name = "URL")]
    pub db: Option<String>,
    /// A store served over HTTP (`agl-host store`, or Agent-lightning's), e.g. http://127.0.0.1:4747.
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub source: ExportSource,
    /// With --store: the store's bearer token.
    #[arg(long, env = "AGL_STORE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Where run ids (--run) are looked up.
    #[arg(long, value_name = "DIR", default_value = agl_runs::RUNS_DIR)]
    pub dir: PathBuf,
    /// What each line holds.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: ExportFormat,
    /// Write the lines to this file (replaced whole once everything is written) rather than stdout.
    #[arg(long, short, value_name = "FILE.jsonl")]
    pub out: Option<PathBuf>,
    /// Only rollouts of these splits: train, val, test (repeat, or separate with commas).
    #[arg(long, value_name = "MODE", value_delimiter = ',', value_parser = parse_mode)]
    pub mode: Vec<agl_store::Mode>,
    /// Only rollouts with these statuses (repeat, or separate with commas): succeeded, failed,
    /// cancelled, or queuing, preparing, running, requeuing for unfinished ones. Default: the three
    /// finished ones.
    #[arg(long, value_name = "STATUS", value_delimiter = ',', value_parser = parse_rollout_status)]
    pub status: Vec<agl_store::RolloutStatus>,
    /// Every attempt of each rollout (retries included), in order, rather than its latest.
    #[arg(long)]
    pub all_attempts: bool,
    /// Only rollouts that ran with these resources (repeat, or separate with commas): their id, as
    /// `agl-host show` prints it and each line's resources_id holds, e.g. v1 (APO) or rs-3f09c2a1b7d4.
    #[arg(
        long = "resources-version",
        visible_alias = "resources-id",
        value_name = "ID",
        value_delimiter = ',',
        value_parser = crate::export_cmd::parse_resources_id
    )]
    pub resources: Vec<String>,
    /// Only attempts whose final reward is at least X (inclusive); an attempt without a reward is
    /// left out.
    #[arg(long, value_name = "X", allow_negative_numbers = true, value_parser = crate::export_cmd::parse_reward)]
    pub min_reward: Option<f64>,
    /// Only attempts whose final reward is at most X (inclusive); an attempt without a reward is
    /// left out.
    #[arg(long, value_name = "X", allow_negative_numbers = true, value_parser = crate::export_cmd::parse_reward)]
    pub max_reward: Option<f64>,
    /// Also the fork rollouts `agl-host fork` made (left out by default: the run's own training
    /// data); each of their lines carries its lineage in `fork` (not with --format spans).
    #[arg(long)]
    pub include_forks: bool,
}

fn parse_mode(text: &str) -> Result<agl_store::Mode, String> {
    use agl_store::Mode;
    [Mode::Train, Mode::Val, Mode::Test]
        .into_iter()
        .find(|mode| mode.as_str() == text)
        .ok_or_else(|| "expected train, val or test".to_owned())
}

fn parse_rollout_status(text: &str) -> Result<agl_store::RolloutStatus, String> {
    use agl_store::RolloutStatus;
    RolloutStatus::ALL
        .into_iter()
        .find(|status| status.as_str() == text)
        .ok_or_else(|| {
            let names: Vec<&str> = RolloutStatus::ALL.iter().map(|s| s.as_str()).collect();
            format!("expected one of {}", names.join(", "))
        })
}

const BUILD_EXIT_CODES: &str = "\
Exit codes:
  0    built (the component's path is printed on stdout)
  2    not a guest folder, a missing toolchain (python3, node, the wasm32-wasip2 target), a
       toolchain that could not be installed, or the guest's own build failed (its output is shown)";

#[derive(Debug, Args)]
pub struct BuildArgs {
    /// The guest folder: Cargo.toml (Rust), pyproject.toml or app.py (Python), package.json
    /// (JavaScript), or .c files (C).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Also copy the component to this file.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Where the runners of `run` / `dev` live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Strategy {
    /// Runners are tasks of this process, on an in-memory store.
    SharedMemory,
    /// This process serves the store over HTTP on 127.0.0.1 and starts `--runners` runner processes.
    ClientServer,
}

#[derive(Debug, Args)]
pub struct StoreArgs {
    /// Address to bind (127.0.0.1: this machine only; 0.0.0.0: every interface — use --token).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: std::net::IpAddr,
    #[arg(long, default_value_t = 4747)]
    pub port: u16,
    /// Require `Authorization: Bearer TOKEN` on every route but health.
    #[arg(long, env = "AGL_STORE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Largest request body, e.g. 16MiB (a gzip body sent to /v1/traces may inflate to this much).
    #[arg(long, default_value = "16MiB", value_name = "SIZE")]
    pub max_body: String,
    /// Time a client has to send a request's headers, e.g. 30s; a connection that sends none for
    /// this long (slow, or kept alive and idle) is closed.
    #[arg(long, default_value = "30s", value_name = "DURATION")]
    pub header_timeout: String,
    /// Time a client has to send a request's body once its headers are in, e.g. 60s (then 408).
    #[arg(long, default_value = "60s", value_name = "DURATION")]
    pub body_timeout: String,
    /// Connections served at once; more clients wait until one closes. Keep it below the open
    /// file limit (`ulimit -n`).
    #[arg(long, default_value_t = 512, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// Threads serving requests (default: one per CPU). With 1, everything runs on one thread
    /// with no work-stealing scheduler: the leanest where clients and the store share a small
    /// machine.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
    /// Where the store keeps its records: memory (gone when it stops), sqlite:PATH (one file,
    /// this process only), or postgres://USER@HOST/DB (several `agl-host store` processes may
    /// share it).
    #[arg(long, value_name = "URL", env = "AGL_DB", default_value = "memory")]
    pub db: String,
    /// Serve Agent-lightning's LLM proxy on this port too (under --token), for clients with the
    /// store's access: OpenAI's /v1/chat/completions and /v1/models, forwarded to --llm-endpoint
    /// (or answered from --llm-script), and the same under /rollout/ROLLOUT_ID/attempt/ATTEMPT_ID/v1/
    /// (and /proxy/rollout/ROLLOUT_ID/attempt/ATTEMPT_ID/mode/train|val/openai/v1/), where every
    /// call is recorded as an LLM span of that attempt; and, for sandboxed agents, a listener of
    /// its own (--llm-proxy-port) that serves only per-attempt capabilities.
    #[arg(long)]
    pub llm_proxy: bool,
    /// With --llm-proxy: the port (on --host) where sandboxed agents reach the proxy, each only
    /// through its own attempt's capability, which `agl-host runner` asks this store for and
    /// hands the agent as its proxy_llm resource's endpoint (0: any free port). Grant agents this
    /// port (`--agent-http http://HOST:PORT`), never the store's. Default: 4749 (any free port
    /// when that one is taken, or when --port is 0).
    #[arg(long, value_name = "PORT", requires = "llm_proxy")]
    pub llm_proxy_port: Option<u16>,
    /// Serve the web app in DIR (a built dashboard: index.html and its assets) at /, beside the
    /// API and without the token (its files hold no data; the API keeps requiring it). Every
    /// path that is not the API's and names no file gets DIR/index.html, as single-page apps
    /// expect. Files are read at each request: a rebuilt app shows up without a restart.
    #[arg(long, value_name = "DIR")]
    pub dashboard_dir: Option<PathBuf>,
    #[command(flatten)]
    pub edge: EdgeArgs,
    #[command(flatten)]
    pub llm: LlmArgs,
    #[command(flatten)]
    pub proxy: ProxyArgs,
    #[command(flatten)]
    pub otlp: crate::otlp_export::OtlpArgs,
}

/// Who, besides this machine's own clients, a server that a command starts answers. Every such
/// server refuses what a web page of another site could make a browser send: a `Host` name a
/// loopback-bound server does not answer (DNS rebinding), an `Origin` that is not the server's
/// own, and request bodies that are not JSON.
#[derive(Debug, Clone, Default, Args)]
pub struct EdgeArgs {
    /// Also answer requests that name this server HOST (NAME, or NAME:PORT for that port only;
    /// repeatable), e.g. a name of this machine its clients use. A server bound to 127.0.0.1
    /// answers only loopback names (localhost, *.localhost, 127.0.0.1, [::1]), so that a web
    /// page whose name is re-pointed at this machine (DNS rebinding) cannot use it; one bound to
    /// another address checks names only when this is given.
    #[arg(long = "allowed-host", value_name = "HOST", value_parser = allowed_host)]
    pub allowed_hosts: Vec<String>,
    /// Also answer requests from web pages served at ORIGIN (scheme://host[:port] as a browser
    /// sends it; repeatable), e.g. https://dash.example.com for a dashboard served elsewhere.
    /// Requests that browsers mark with another origin than this server's own are refused (403),
    /// so that a page of another site cannot use the API through your browser.
    #[arg(long = "allowed-origin", value_name = "ORIGIN", value_parser = allowed_origin)]
    pub allowed_origins: Vec<String>,
}

impl EdgeArgs {
    /// `options` with these hosts and origins allowed.
    pub fn allow(&self, options: agl_server::ServerOptions) -> agl_server::ServerOptions {
        agl_server::ServerOptions {
            allowed_hosts: self.allowed_hosts.clone(),
            allowed_origins: self.allowed_origins.clone(),
            ..options
        }
    }
}

/// An `--allowed-host`: a host name or address, with or without a port; no scheme nor path.
fn allowed_host(value: &str) -> Result<String, String> {
    let value = value.trim();
    let bad = value.is_empty() || value.contains(['/', '@', '?', '#', ' ']);
    if bad {
        Err(
            "expected a host name as clients write it, NAME or NAME:PORT (e.g. dash.example.com, 10.0.0.5:4747), \
             without a scheme or path"
                .to_owned(),
        )
    } else {
        Ok(value.to_owned())
    }
}

/// An `--allowed-origin`: `http://` or `https://`, a host and an optional port; no path.
fn allowed_origin(value: &str) -> Result<String, String> {
    let value = value.trim().trim_end_matches('/');
    let authority = value.strip_prefix("http://").or_else(|| value.strip_prefix("https://"));
    match authority {
        Some(authority) if !authority.is_empty() && !authority.contains(['/', '@', '?', '#', ' ']) => {
            Ok(value.to_owned())
        }
        _ => Err(
            "expected an origin as a browser sends it, scheme://host[:port] (e.g. https://dash.example.com, \
             http://localhost:3000)"
                .to_owned(),
        ),
    }
}

/// How the LLM proxy forwards (with `--llm-proxy`).
#[derive(Debug, Args)]
pub struct ProxyArgs {
    /// Another OpenAI-compatible API root serving --llm-model (same key): each rollout's calls
    /// all go to one of --llm-endpoint and these, picked by its rollout id. Repeat for more.
    #[arg(long = "llm-replica", value_name = "URL", requires = "llm_endpoint")]
    pub llm_replicas: Vec<String>,
    /// Ask the upstream for token ids (vLLM's return_token_ids) on every call under an attempt,
    /// and for logprobs in train mode; they are recorded on the span (for RL). vLLM only: other
    /// servers refuse the field.
    #[arg(long)]
    pub llm_token_ids: bool,
    /// The temperature of every call under an attempt of a train rollout (or the train mode
    /// route), whatever the request asks, as Agent-lightning 1.0's proxy sets it.
    #[arg(long, value_name = "T")]
    pub llm_train_temperature: Option<f64>,
    /// The same for val.
    #[arg(long, value_name = "T")]
    pub llm_val_temperature: Option<f64>,
    /// Retries of a call the upstream answered 408, 409, 429 or 5xx, or did not answer (with
    /// exponential backoff, honouring Retry-After).
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub llm_retries: u32,
    /// The limit on one exchange with the upstream (for a stream: on each wait for its next event).
    #[arg(long, default_value = "120s", value_name = "DURATION")]
    pub llm_proxy_timeout: String,
}

#[derive(Debug, Args)]
pub struct RunnerArgs {
    /// The store's URL, e.g. http://127.0.0.1:4747.
    #[arg(long, value_name = "URL")]
    pub store: String,
    /// The store's bearer token.
    #[arg(long, env = "AGL_STORE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Where the LLM proxy gives out per-attempt capabilities (`POST /proxy/grants`): the store's
    /// URL by default (`agl-host store --llm-proxy`). Each attempt whose resources have a
    /// `proxy_llm` resource gets one; its agent sees it as that resource's endpoint. A store
    /// without a proxy: resources are left as they are.
    #[arg(long, value_name = "URL")]
    pub llm_proxy_url: Option<String>,
    /// The proxy's operator token for those grants; the store's --token by default.
    #[arg(long, value_name = "TOKEN", env = "AGL_LLM_PROXY_TOKEN", hide_env_values = true)]
    pub llm_proxy_token: Option<String>,
    /// The agent component (.wasm) or its guest folder (Rust, Python or JavaScript).
    #[arg(long, value_name = "AGENT")]
    pub agent: PathBuf,
    /// Runners in this process: agents in flight at once, each a fresh sandboxed instance per
    /// attempt (thousands are fine for agents that mostly wait on their LLM).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=MAX_RUNNERS))]
    pub runners: u16,
    /// Worker ids are PREFIX-1, PREFIX-2, ... (default: runner-<pid>).
    #[arg(long, value_name = "PREFIX")]
    pub worker_prefix: Option<String>,
    /// Interval of worker and attempt heartbeats.
    #[arg(long, default_value = "2s", value_name = "DURATION")]
    pub heartbeat: String,
    /// After Ctrl-C / SIGTERM, how long the running attempts may take to finish.
    #[arg(long, default_value = "10s", value_name = "DURATION")]
    pub grace: String,
    /// The unresponsive limit of rollouts that set none (no unresponsive_seconds), given when a
    /// runner here takes one: if its attempt's heartbeats stop for this long (the runner died or
    /// hangs), the store marks it unresponsive and the rollout is retried on another runner (once,
    /// unless its own retries allow more). At least 3 × --heartbeat; 0: leave such rollouts
    /// without a limit.
    #[arg(long, default_value = "30s", value_name = "DURATION")]
    pub unresponsive_after: String,
    /// No line per finished rollout (`run --strategy client-server` starts its runners so).
    #[arg(long)]
    pub quiet: bool,
    /// Do not record the attempts. A recording keeps what entered each agent (task, resources,
    /// LLM answers, HTTP responses, seed, clock start) so that `agl-host replay` and `agl-host
    /// fork` can run an attempt again offline.
    #[arg(long)]
    pub no_record: bool,
    #[command(flatten)]
    pub llm: LlmArgs,
    #[command(flatten)]
    pub sandbox: SandboxOptions,
    #[command(flatten)]
    pub otlp: crate::otlp_export::OtlpArgs,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The algorithm: a built-in one (apo, baseline), or a component (.wasm exporting
    /// agl:agent/algorithm) or its guest folder (Rust, Python or JavaScript).
    #[arg(long, value_name = "ALGO")]
    pub algo: PathBuf,
    /// The agent component (.wasm exporting agl:agent/agent) or its guest folder (Rust, Python or JavaScript).
    #[arg(long, value_name = "AGENT", required_unless_present = "store")]
    pub agent: Option<PathBuf>,
    /// Run the algorithm against this remote store (`agl-host store`), e.g. http://10.0.0.5:4747:
    /// its runners (`agl-host runner --store URL --agent ...`) run the agent, so no --agent here.
    #[arg(long, value_name = "URL", conflicts_with_all = ["agent", "strategy", "runners", "port", "unresponsive_after"])]
    pub store: Option<String>,
    /// The remote store's bearer token (with --store).
    #[arg(long, env = "AGL_STORE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args)]
pub struct DevArgs {
    /// The agent component (.wasm exporting agl:agent/agent) or its guest folder (Rust, Python or JavaScript).
    #[arg(long, value_name = "AGENT")]
    pub agent: PathBuf,
    /// The algorithm (default: the built-in baseline).
    #[arg(long, value_name = "ALGO", default_value = "baseline")]
    pub algo: PathBuf,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// `agl-host eval`: the run's flags, with `--train` read as `--data` and the flags of an
/// optimising run (--val, --algo-config, --resume) hidden (`eval_cmd` refuses them).
#[derive(Debug, Args)]
#[command(
    mut_arg("train", |arg| arg
        .long("data")
        .help("The split's tasks, one JSON value per line (e.g. data/test.jsonl).")),
    mut_arg("val", |arg| arg.hide(true)),
    mut_arg("algo_config", |arg| arg.hide(true)),
    mut_arg("resume", |arg| arg.hide(true)),
    mut_arg("resources", |arg| arg
        .help("The resources to evaluate (Agent-lightning's NamedResources JSON, e.g. from `agl-host best RUN`).")
        .required_unless_present("run")),
)]
pub struct EvalArgs {
    /// The agent component (.wasm exporting agl:agent/agent) or its guest folder (Rust, Python or JavaScript).
    #[arg(long, value_name = "AGENT")]
    pub agent: PathBuf,
    /// Evaluate a kept run's resources rather than --resources: its best (`agl-host best RUN`),
    /// or --version's. RUN: its id (or a unique start of it) under --dir, its name, or its .db file.
    #[arg(long, value_name = "RUN", conflicts_with = "resources")]
    pub run: Option<String>,
    /// With --run: this resources version of the run (e.g. rs-1a2b3c4d5e6f) rather than its best.
    #[arg(long, value_name = "VERSION", requires = "run")]
    pub version: Option<String>,
    /// With --run: where run ids and names are looked up.
    #[arg(long = "dir", value_name = "DIR", default_value = agl_runs::RUNS_DIR)]
    pub runs_dir: PathBuf,
    /// The split's name in the summary, the results and the run record (default: the --data
    /// file's name without its extension).
    #[arg(long, value_name = "NAME", value_parser = agl_runs::record::run_name)]
    pub split: Option<String>,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args)]
pub struct CommonArgs {
    /// Training tasks, one JSON value per line.
    #[arg(long, value_name = "FILE.jsonl")]
    pub train: PathBuf,
    /// Validation tasks, one JSON value per line.
    #[arg(long, value_name = "FILE.jsonl")]
    pub val: Option<PathBuf>,
    /// Initial resources (e.g. the prompt template), Agent-lightning's NamedResources JSON.
    #[arg(long, value_name = "FILE.json")]
    pub resources: Option<PathBuf>,
    /// The algorithm's configuration (a JSON object).
    #[arg(long, value_name = "FILE.json")]
    pub algo_config: Option<PathBuf>,
    /// Runners executing rollouts in parallel: agents in flight at once (thousands are fine for
    /// agents that mostly wait on their LLM). With --strategy client-server, one process each (at
    /// most 1,024 there).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=MAX_RUNNERS))]
    pub runners: u16,
    /// Write the results (best resources, rewards per split, counts) to this JSON file.
    #[arg(long, short, value_name = "FILE.json")]
    pub output: Option<PathBuf>,
    /// A name for the run (at most 64 printable characters), kept in its record: `agl-host runs`
    /// and the dashboard show it, and `agl-host best` and `eval --run` take it for the run id.
    #[arg(long, value_name = "NAME", value_parser = agl_runs::record::run_name)]
    pub name: Option<String>,
    /// Where the run is kept: sqlite:PATH, postgres://USER@HOST/DB, or memory (kept nowhere).
    /// Default: $AGL_DB if set, else a new SQLite database per run under .agl/runs/ in the
    /// working directory, named by the run id printed at the start (`agl-host runs` lists them,
    /// `agl-host show RUN` opens one). Not with --store, whose store keeps the run.
    #[arg(long, value_name = "URL")]
    pub db: Option<String>,
    /// Go on with a kept run that was stopped (Ctrl-C, a crash, kill -9): RUN is its id, its .db
    /// file or its store URL. Give nothing else (but the secret values its record hides, which it
    /// asks for): the run's own flags and working directory are used again. Finished rollouts are
    /// kept; attempts left running end as unresponsive and are retried as their rollout's retry
    /// config says; the algorithm starts again and is handed the rollouts and resources it made
    /// before, so it goes on from where it stopped.
    #[arg(long, value_name = "RUN")]
    pub resume: Option<String>,
    /// Seed of the algorithm's random source.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// After Ctrl-C, how long running attempts may take to finish (a second Ctrl-C: at once).
    #[arg(long, default_value = "10s", value_name = "DURATION")]
    pub grace: String,
    /// No progress bar (it is also hidden when stderr is not a terminal).
    #[arg(long)]
    pub no_progress: bool,
    /// Do not record the attempts. A recording keeps what entered each agent (task, resources,
    /// LLM answers, HTTP responses, seed, clock start) so that `agl-host replay` and `agl-host
    /// fork` can run an attempt again offline.
    #[arg(long)]
    pub no_record: bool,
    /// shared-memory: runners in this process; client-server: runner processes talking HTTP to
    /// the store this process serves on 127.0.0.1.
    #[arg(long, value_enum, default_value = "shared-memory")]
    pub strategy: Strategy,
    /// The port of the LLM proxy with --llm-proxy, else (client-server) of the store the runner
    /// processes use; 0: any free port.
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Interval of runner heartbeats (worker and running attempt).
    #[arg(long, default_value = "2s", value_name = "DURATION")]
    pub heartbeat: String,
    /// The unresponsive limit the runners give rollouts that set none (see `agl-host runner
    /// --help`), so that a rollout whose runner dies is retried on another. Default: 30s with
    /// --strategy client-server, and with shared-memory when the run is kept in a file or a
    /// database (a rollout a dead process left behind is retried on resume); none for a run kept
    /// in memory (--db memory), whose runners live and die with the store.
    #[arg(long, value_name = "DURATION")]
    pub unresponsive_after: Option<String>,
    #[command(flatten)]
    pub llm: LlmArgs,
    /// Serve the LLM proxy on 127.0.0.1 (--port; 0: any free port), forwarding to the run's LLM,
    /// and point the run's `proxy_llm` resources at it (one named `llm` is added when there is
    /// none). Each attempt's agent sees in them an endpoint of its own,
    /// http://127.0.0.1:PORT/agent/CAPABILITY/v1, valid while the attempt runs: its calls there
    /// are recorded as LLM spans of that attempt and spend its LLM budget (--agent-llm-calls,
    /// --agent-llm-tokens, --agent-model, --agent-llm-max-request...), as its own `llm` import
    /// does. Grant agents the port with --agent-http http://127.0.0.1:PORT; that port serves
    /// nothing else (no store API) unless --llm-proxy-token.
    #[arg(long)]
    pub llm_proxy: bool,
    /// With --llm-proxy: also serve the proxy's operator routes on its port, to clients that
    /// present `Authorization: Bearer TOKEN` (never agents): calls outside any attempt
    /// (/v1/chat/completions), calls naming an attempt by its ids
    /// (/rollout/ROLLOUT_ID/attempt/ATTEMPT_ID/v1/...) and /proxy/pause, /proxy/resume,
    /// /proxy/state. Without it they are 404.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "AGL_LLM_PROXY_TOKEN",
        hide_env_values = true,
        requires = "llm_proxy"
    )]
    pub llm_proxy_token: Option<String>,
    #[command(flatten)]
    pub proxy: ProxyArgs,
    /// Serve the run's store with the web dashboard on ADDR while the run goes (default
    /// 127.0.0.1:4748, or a free port when that one is taken); the URL is printed. See
    /// `agl-host dashboard --help` for what it shows.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:4748")]
    pub dashboard: Option<std::net::SocketAddr>,
    // The hosts and origins the servers this run starts (--dashboard, --llm-proxy, client-server)
    // answer besides their own.
    #[command(flatten)]
    pub edge: EdgeArgs,
    /// The agent's sandbox, on top of its manifest (limits replace, grants add up).
    #[command(flatten)]
    pub sandbox: SandboxOptions,
    #[command(flatten)]
    pub otlp: crate::otlp_export::OtlpArgs,
    /// The LLM, sandbox and OTLP flags as given, for runner processes (`Cli::try_parse_keeping_flags`).
    #[arg(skip)]
    pub passed_on: Vec<OsString>,
    /// `agl-host eval`: the split evaluated (set by `eval_cmd`, never by a flag).
    #[arg(skip)]
    pub eval: Option<crate::eval_cmd::EvalSplit>,
}

/// Where LLM calls go (agents' and the algorithm's). Without either flag, a component that uses
/// the LLM is refused.
#[derive(Debug, Args)]
pub struct LlmArgs {
    /// An OpenAI-compatible API root, e.g. http://127.0.0.1:8000/v1 (vLLM, llama.cpp, Ollama, OpenAI).
    #[arg(long, value_name = "URL", conflicts_with_all = ["llm_script", "llm_simulate"], requires = "llm_model")]
    pub llm_endpoint: Option<String>,
    /// The model used when a request names none.
    #[arg(long, value_name = "MODEL")]
    pub llm_model: Option<String>,
    /// The environment variable holding the endpoint's API key.
    #[arg(long, value_name = "NAME", default_value = "OPENAI_API_KEY")]
    pub llm_api_key_env: String,
    /// Offline: answer LLM calls from a rules file (match on the messages -> response).
    #[arg(long, value_name = "RULES.json", conflicts_with = "llm_simulate")]
    pub llm_script: Option<PathBuf>,
    /// Offline: a simulated task and reflection model, for benchmarking prompt optimisers (the
    /// book's "The simulated LLM").
    #[arg(long, value_name = "SPEC.json")]
    pub llm_simulate: Option<PathBuf>,
}

impl LlmArgs {
    /// Whether an LLM (scripted or an endpoint) was given.
    pub fn is_configured(&self) -> bool {
        self.llm_script.is_some() || self.llm_simulate.is_some() || self.llm_endpoint.is_some()
    }
}

impl Cli {
    /// Parses a command line as `Cli::try_parse_from` does, and keeps the LLM and sandbox flags
    /// of `run` and `dev` as given ([`CommonArgs::passed_on`]) for their runner processes.
    pub fn try_parse_keeping_flags<I, T>(argv: I) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let matches = Self::command().try_get_matches_from(argv)?;
        let mut cli = Self::from_arg_matches(&matches).map_err(|e| e.format(&mut Self::command()))?;
        if let (
            Command::Run(RunArgs { common, .. })
            | Command::Dev(DevArgs { common, .. })
            | Command::Eval(EvalArgs { common, .. }),
            Some((_, given)),
        ) = (&mut cli.command, matches.subcommand())
        {
            common.passed_on = flags_given::<LlmArgs>(given);
            common.passed_on.extend(flags_given::<SandboxOptions>(given));
            common
                .passed_on
                .extend(flags_given::<crate::otlp_export::OtlpArgs>(given));
        }
        Ok(cli)
    }
}

/// The flags of the group `A` that `matches` got from the command line, again, as they were
/// written (`--agent-env NAME` stays a name: the runner reads its own environment). Generic over
/// the group's declaration, so a flag added there is passed on with no code here.
fn flags_given<A: Args>(matches: &ArgMatches) -> Vec<OsString> {
    let mut group = A::augment_args(clap::Command::new("group"));
    group.build();
    let mut flags = Vec::new();
    for arg in group.get_arguments() {
        let (id, Some(long)) = (arg.get_id().as_str(), arg.get_long()) else {
            continue;
        };
        if matches.value_source(id) != Some(ValueSource::CommandLine) {
            continue;
        }
        if arg.get_num_args().is_some_and(|n| !n.takes_values()) {
            flags.push(format!("--{long}").into());
            continue;
        }
        for value in matches.get_raw(id).into_iter().flatten() {
            flags.extend([format!("--{long}").into(), value.to_owned()]);
        }
    }
    flags
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn run_parses_a_full_command_line() {
        let cli = Cli::try_parse_from([
            "agl-host",
            "run",
            "--agent",
            "a.wasm",
            "--algo",
            "b.wasm",
            "--train",
            "t.jsonl",
            "--runners",
            "2",
            "--llm-script",
            "r.json",
            "--agent-dir",
            "/tmp",
            "--agent-env",
            "A=1",
        ])
        .expect("parses");
        let Command::Run(run) = cli.command else {
            panic!("expected run");
        };
        assert_eq!(run.agent.as_deref(), Some(std::path::Path::new("a.wasm")));
        assert_eq!(run.common.runners, 2);
        assert_eq!(run.common.sandbox.grants.dir.len(), 1);
    }

    #[test]
    fn runners_go_up_to_the_in_flight_limit_and_no_further() {
        let with_runners = |command: &str, runners: &str| {
            let mut argv = vec!["agl-host", command, "--agent", "a.wasm", "--runners", runners];
            if command == "run" {
                argv.extend(["--algo", "b.wasm", "--train", "t.jsonl"]);
            } else {
                argv.extend(["--store", "http://h:4747"]);
            }
            Cli::try_parse_from(argv)
        };
        for command in ["run", "runner"] {
            assert!(
                with_runners(command, "4096").is_ok(),
                "{command}: 4,096 agents in flight"
            );
            assert!(
                with_runners(command, &MAX_RUNNERS.to_string()).is_ok(),
                "{command}: the limit"
            );
            let error = with_runners(command, &(MAX_RUNNERS + 1).to_string()).expect_err("past the limit");
            assert!(error.to_string().contains("16384"), "{command}: {error}");
            assert!(with_runners(command, "0").is_err(), "{command}: none");
        }
    }

    #[test]
    fn runner_processes_get_the_same_llm_and_sandbox_flags() {
        let tmp = std::env::temp_dir();
        let dir = format!("{}::/data:rw", tmp.display());
        let cli = Cli::try_parse_keeping_flags([
            "agl-host",
            "run",
            "--agent",
            "a.wasm",
            "--algo",
            "b.wasm",
            "--train",
            "t.jsonl",
            "--llm-script",
            "r.json",
            "--agent-timeout",
            "5s",
            "--agent-memory",
            "64MiB",
            "--agent-output-capture",
            "1KiB",
            "--agent-dir",
            &dir,
            "--agent-env",
            "A=1",
            "--agent-env",
            "B=2",
            "--agent-real-clock",
            "--agent-model",
            "m",
            "--llm-timeout",
            "30s",
            "--agent-llm-max-request",
            "8MiB",
            "--agent-llm-max-output-tokens",
            "4096",
            "--agent-llm-max-tools",
            "16",
            "--agent-llm-max-tools-size",
            "64KiB",
            "--agent-max-spans",
            "500",
            "--agent-max-span-bytes",
            "4MiB",
            "--agent-max-attribute-bytes",
            "8KiB",
            "--otlp-endpoint",
            "http://collector:4318",
        ])
        .expect("parses");
        let Command::Run(run) = cli.command else {
            panic!("expected run");
        };
        let mut args: Vec<OsString> = ["agl-host", "runner", "--store", "http://x", "--agent", "a.wasm"]
            .map(OsString::from)
            .to_vec();
        args.extend(run.common.passed_on.iter().cloned());
        let parsed = Cli::try_parse_from(&args).expect("the runner accepts them");
        let Command::Runner(runner) = parsed.command else {
            panic!("expected runner");
        };
        assert_eq!(runner.llm.llm_script, run.common.llm.llm_script);
        assert_eq!(
            runner.sandbox, run.common.sandbox,
            "every sandbox flag reaches the runners"
        );
        assert_eq!(runner.sandbox.grants.env.len(), 2);
        assert_eq!(runner.otlp, run.common.otlp, "they export where the run does");
        assert_eq!(runner.otlp.otlp_endpoint.as_deref(), Some("http://collector:4318"));
        assert_eq!(runner.sandbox.clock.real_clock, Some(true));
    }

    #[test]
    fn unset_flags_are_not_passed_on() {
        let cli = Cli::try_parse_keeping_flags(["agl-host", "dev", "--agent", "a.wasm", "--train", "t.jsonl"])
            .expect("parses");
        let Command::Dev(dev) = cli.command else {
            panic!("expected dev");
        };
        assert!(dev.common.passed_on.is_empty(), "{:?}", dev.common.passed_on);
        assert_eq!(dev.common.sandbox, SandboxOptions::default());
    }

    #[test]
    fn a_bad_sandbox_value_names_its_flag() {
        let bad = [
            "agl-host",
            "dev",
            "--agent",
            "a.wasm",
            "--train",
            "t.jsonl",
            "--agent-memory",
            "lots",
        ];
        let error = Cli::try_parse_keeping_flags(bad).expect_err("refused").to_string();
        assert!(
            error.contains("--agent-memory") && error.contains("invalid size 'lots'"),
            "{error}"
        );
    }

    #[test]
    fn an_endpoint_needs_a_model_and_excludes_a_script() {
        let base = ["agl-host", "dev", "--agent", "a.wasm", "--train", "t.jsonl"];
        let no_model = [&base[..], &["--llm-endpoint", "http://x/v1"]].concat();
        assert!(Cli::try_parse_from(no_model).is_err());
        let both = [
            &base[..],
            &[
                "--llm-endpoint",
                "http://x/v1",
                "--llm-model",
                "m",
                "--llm-script",
                "r.json",
            ],
        ]
        .concat();
        assert!(Cli::try_parse_from(both).is_err());
        assert!(Cli::try_parse_from(["agl-host", "run", "--agent", "a.wasm", "--train", "t.jsonl"]).is_err());
    }

    #[test]
    fn run_needs_an_agent_or_a_store_and_not_both() {
        let base = ["agl-host", "run", "--algo", "apo", "--train", "t.jsonl"];
        assert!(Cli::try_parse_from(base).is_err(), "neither");
        let remote = Cli::try_parse_from([&base[..], &["--store", "http://h:4747", "--token", "t"]].concat())
            .expect("a remote store");
        let Command::Run(run) = remote.command else {
            panic!("expected run");
        };
        assert_eq!(run.store.as_deref(), Some("http://h:4747"));
        assert!(run.agent.is_none());
        let both = [&base[..], &["--store", "http://h:4747", "--agent", "a.wasm"]].concat();
        assert!(Cli::try_parse_from(both).is_err(), "both");
        let runners = [&base[..], &["--store", "http://h:4747", "--runners", "4"]].concat();
        assert!(
            Cli::try_parse_from(runners).is_err(),
            "local runners with a remote store"
        );
    }

    #[test]
    fn eval_reads_its_split_from_data_and_needs_resources_or_a_run() {
        let base = ["agl-host", "eval", "--agent", "a.wasm", "--data", "test.jsonl"];
        let cli =
            Cli::try_parse_keeping_flags([&base[..], &["--resources", "r.json", "--llm-script", "x.json"]].concat())
                .expect("parses");
        let Command::Eval(eval) = cli.command else {
            panic!("expected eval");
        };
        assert_eq!(eval.common.train, std::path::Path::new("test.jsonl"));
        assert_eq!(
            eval.common.passed_on,
            ["--llm-script", "x.json"],
            "runner processes get the LLM flags"
        );
        assert!(Cli::try_parse_from(base).is_err(), "no resources and no run");
        let from_run = Cli::try_parse_from([&base[..], &["--run", "my run", "--version", "rs-1"]].concat());
        assert!(from_run.is_ok(), "{from_run:?}");
        assert!(
            Cli::try_parse_from([&base[..], &["--run", "r", "--resources", "r.json"]].concat()).is_err(),
            "both"
        );
        let train = [
            "agl-host",
            "eval",
            "--agent",
            "a.wasm",
            "--train",
            "t.jsonl",
            "--resources",
            "r.json",
        ];
        assert!(Cli::try_parse_from(train).is_err(), "eval takes --data");
    }

    #[test]
    fn a_run_name_is_checked_on_the_command_line() {
        let base = ["agl-host", "dev", "--agent", "a.wasm", "--train", "t.jsonl", "--name"];
        let Command::Dev(dev) = Cli::try_parse_from([&base[..], &["seed 2"]].concat())
            .expect("parses")
            .command
        else {
            panic!("expected dev");
        };
        assert_eq!(dev.common.name.as_deref(), Some("seed 2"));
        assert!(Cli::try_parse_from([&base[..], &["a\u{1b}[2Jb"]].concat()).is_err());
    }

    #[test]
    fn dev_runs_the_builtin_baseline_by_default() {
        let cli = Cli::try_parse_from(["agl-host", "dev", "--agent", "a.wasm", "--train", "t.jsonl"]).expect("parses");
        let Command::Dev(dev) = cli.command else {
            panic!("expected dev");
        };
        assert_eq!(dev.algo, std::path::Path::new("baseline"));
    }
}
