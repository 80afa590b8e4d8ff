//! The command line: `agl-host run`, `dev`, `store`, `runner`, `build`, `runs` and `show`, their
//! flags and their help text. The subcommands' help is neither reflowed nor wrapped
//! (`verbatim_doc_comment`, `term_width = 0`), so that an example command stays on one line and
//! can be pasted.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

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
printed; a folder is rebuilt only when its sources change; Python and JavaScript toolchains are
installed there on first use). `agl-host build DIR -o agent.wasm` builds one without running it. --algo also takes the
name of a built-in algorithm: baseline or apo (write ./apo for a folder named apo). A sandbox
manifest beside a .wasm (agent.wasm -> agent.toml) sets its limits and grants; the --agent-*
flags add to it.";

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
    /// Serve a LightningStore over HTTP (Agent-lightning 0.3.0's wire API, plus OTLP at /v1/traces).
    ///
    /// Runners (`agl-host runner --store URL`), algorithms (`agl-host run --store URL`) and
    /// Agent-lightning's Python client can use it. Examples:
    ///
    ///   agl-host store --host 0.0.0.0 --port 4747 --token secret
    ///   agl-host store --db sqlite:store.db
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
    /// attempt, why it failed). With ROLLOUT (an id, or a unique start of one): its attempts and
    /// the span tree of its latest attempt (or --attempt N): LLM prompts and answers, rewards,
    /// logs, the agent's operations. Lines are clipped to $COLUMNS (100 when unset). Examples:
    ///
    ///   agl-host show run-20261124-210620-e352
    ///   agl-host show run-20261124-210620-e352 ro-01a2c7747706
    ///   agl-host show run-20261124 ro-01a --attempt 1 --json
    ///   agl-host show --db postgres://agl@db-host/agl ro-01a2c7747706
    #[command(after_long_help = INSPECT_EXIT_CODES, verbatim_doc_comment, term_width = 0)]
    Show(ShowArgs),
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
    #[arg(long, value_name = "DIR", default_value = crate::kept::RUNS_DIR)]
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
    #[arg(long, value_name = "DIR", default_value = crate::kept::RUNS_DIR)]
    pub dir: PathBuf,
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
}

#[derive(Debug, Args)]
pub struct RunnerArgs {
    /// The store's URL, e.g. http://127.0.0.1:4747.
    #[arg(long, value_name = "URL")]
    pub store: String,
    /// The store's bearer token.
    #[arg(long, env = "AGL_STORE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// The agent component (.wasm) or its guest folder (Rust, Python or JavaScript).
    #[arg(long, value_name = "AGENT")]
    pub agent: PathBuf,
    /// Runners in this process.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
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
    #[command(flatten)]
    pub llm: LlmArgs,
    #[command(flatten)]
    pub sandbox: AgentSandboxArgs,
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
    /// Runners executing rollouts in parallel in this process.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub runners: u16,
    /// Write the results (best resources, rewards per split, counts) to this JSON file.
    #[arg(long, short, value_name = "FILE.json")]
    pub output: Option<PathBuf>,
    /// Where the run is kept: sqlite:PATH, postgres://USER@HOST/DB, or memory (kept nowhere).
    /// Default: $AGL_DB if set, else a new SQLite database per run under .agl/runs/ in the
    /// working directory, named by the run id printed at the start (`agl-host runs` lists them,
    /// `agl-host show RUN` opens one). Not with --store, whose store keeps the run.
    #[arg(long, value_name = "URL")]
    pub db: Option<String>,
    /// Go on with a kept run that was stopped (Ctrl-C, a crash, kill -9): RUN is its id, its .db
    /// file or its store URL. Give nothing else: the run's own flags and working directory are
    /// used again. Finished rollouts are kept; attempts left running end as unresponsive and are
    /// retried as their rollout's retry config says; the algorithm starts again and is handed
    /// the rollouts and resources it made before, so it goes on from where it stopped.
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
    /// shared-memory: runners in this process; client-server: runner processes talking HTTP to
    /// the store this process serves on 127.0.0.1.
    #[arg(long, value_enum, default_value = "shared-memory")]
    pub strategy: Strategy,
    /// client-server: the store's port (0: any free port).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Interval of runner heartbeats (worker and running attempt).
    #[arg(long, default_value = "2s", value_name = "DURATION")]
    pub heartbeat: String,
    /// The unresponsive limit the runners give rollouts that set none (see `agl-host runner
    /// --help`), so that a rollout whose runner dies is retried on another. Default: 30s with
    /// --strategy client-server; none with shared-memory, whose runners live and die with the store.
    #[arg(long, value_name = "DURATION")]
    pub unresponsive_after: Option<String>,
    #[command(flatten)]
    pub llm: LlmArgs,
    #[command(flatten)]
    pub sandbox: AgentSandboxArgs,
}

/// Where LLM calls go (agents' and the algorithm's). Without either flag, a component that uses
/// the LLM is refused.
#[derive(Debug, Args)]
pub struct LlmArgs {
    /// An OpenAI-compatible API root, e.g. http://127.0.0.1:8000/v1 (vLLM, llama.cpp, Ollama, OpenAI).
    #[arg(long, value_name = "URL", conflicts_with = "llm_script", requires = "llm_model")]
    pub llm_endpoint: Option<String>,
    /// The model used when a request names none.
    #[arg(long, value_name = "MODEL")]
    pub llm_model: Option<String>,
    /// The environment variable holding the endpoint's API key.
    #[arg(long, value_name = "NAME", default_value = "OPENAI_API_KEY")]
    pub llm_api_key_env: String,
    /// Offline: answer LLM calls from a rules file (match on the messages -> response).
    #[arg(long, value_name = "RULES.json")]
    pub llm_script: Option<PathBuf>,
}

/// The agent's sandbox, on top of its manifest (grants add up, limits replace).
#[derive(Debug, Args)]
pub struct AgentSandboxArgs {
    /// Memory limit per agent instance, e.g. 256MiB.
    #[arg(long, value_name = "SIZE")]
    pub agent_memory: Option<String>,
    /// Wall-clock deadline per attempt, e.g. 300s, 2m.
    #[arg(long, value_name = "DURATION")]
    pub agent_timeout: Option<String>,
    /// Instruction budget per attempt (fuel).
    #[arg(long, value_name = "N")]
    pub agent_fuel: Option<u64>,
    /// Grant a directory: HOST[::GUEST][:ro|:rw] (read-only unless :rw). Repeatable.
    #[arg(long, value_name = "DIR")]
    pub agent_dir: Vec<String>,
    /// Grant an environment variable: NAME=VALUE, or NAME to pass the host's. Repeatable.
    #[arg(long, value_name = "NAME[=VALUE]")]
    pub agent_env: Vec<String>,
    /// Allow a model besides the default one. Repeatable.
    #[arg(long, value_name = "MODEL")]
    pub agent_model: Vec<String>,
    /// LLM calls allowed per attempt.
    #[arg(long, value_name = "N")]
    pub agent_llm_calls: Option<u32>,
    /// LLM tokens (input + output) allowed per attempt.
    #[arg(long, value_name = "N")]
    pub agent_llm_tokens: Option<u64>,
    /// Timeout of one LLM call, e.g. 120s.
    #[arg(long, value_name = "DURATION")]
    pub llm_timeout: Option<String>,
    /// Largest LLM request (bytes of its messages), e.g. 4MiB; a larger one is refused, not sent.
    #[arg(long, value_name = "SIZE")]
    pub agent_llm_max_request: Option<String>,
    /// Largest `max_tokens` one LLM request may ask for.
    #[arg(long, value_name = "N")]
    pub agent_llm_max_output_tokens: Option<u32>,
    /// Most tools one LLM request may offer.
    #[arg(long, value_name = "N")]
    pub agent_llm_max_tools: Option<u32>,
    /// Largest tool list of one LLM request (bytes of names, descriptions and schemas), e.g. 1MiB.
    #[arg(long, value_name = "SIZE")]
    pub agent_llm_max_tools_size: Option<String>,
    /// Spans one attempt may record (host calls: logs, messages, LLM calls...); past it they are
    /// counted and summarised by one `agl.spans.dropped` span. The final reward is always kept.
    #[arg(long, value_name = "N")]
    pub agent_max_spans: Option<u32>,
    /// Bytes of span content one attempt may make the host hold, e.g. 32MiB.
    #[arg(long, value_name = "SIZE")]
    pub agent_max_span_bytes: Option<String>,
    /// Longest text kept in one span attribute (a log line, a message, a prompt), e.g. 64KiB.
    #[arg(long, value_name = "SIZE")]
    pub agent_max_attribute_bytes: Option<String>,
    /// Give the agent the real clocks instead of virtual, per-attempt ones.
    #[arg(long)]
    pub agent_real_clock: bool,
}

impl LlmArgs {
    /// Whether an LLM (scripted or an endpoint) was given.
    pub fn is_configured(&self) -> bool {
        self.llm_script.is_some() || self.llm_endpoint.is_some()
    }

    /// These flags again, for a runner process.
    pub fn to_args(&self) -> Vec<std::ffi::OsString> {
        let mut args: Vec<std::ffi::OsString> = Vec::new();
        if let Some(script) = &self.llm_script {
            args.extend(["--llm-script".into(), script.clone().into_os_string()]);
        }
        if let Some(endpoint) = &self.llm_endpoint {
            args.extend(["--llm-endpoint".into(), endpoint.into()]);
        }
        if let Some(model) = &self.llm_model {
            args.extend(["--llm-model".into(), model.into()]);
        }
        args.extend(["--llm-api-key-env".into(), self.llm_api_key_env.clone().into()]);
        args
    }
}

impl AgentSandboxArgs {
    /// These flags again, for a runner process.
    pub fn to_args(&self) -> Vec<std::ffi::OsString> {
        let mut args: Vec<std::ffi::OsString> = Vec::new();
        let mut push = |flag: &str, value: String| args.extend([flag.into(), value.into()]);
        let optional = [
            ("--agent-memory", self.agent_memory.clone()),
            ("--agent-timeout", self.agent_timeout.clone()),
            ("--agent-fuel", self.agent_fuel.map(|f| f.to_string())),
            ("--agent-llm-calls", self.agent_llm_calls.map(|c| c.to_string())),
            ("--agent-llm-tokens", self.agent_llm_tokens.map(|t| t.to_string())),
            ("--llm-timeout", self.llm_timeout.clone()),
            ("--agent-llm-max-request", self.agent_llm_max_request.clone()),
            (
                "--agent-llm-max-output-tokens",
                self.agent_llm_max_output_tokens.map(|t| t.to_string()),
            ),
            ("--agent-llm-max-tools", self.agent_llm_max_tools.map(|t| t.to_string())),
            ("--agent-llm-max-tools-size", self.agent_llm_max_tools_size.clone()),
            ("--agent-max-spans", self.agent_max_spans.map(|n| n.to_string())),
            ("--agent-max-span-bytes", self.agent_max_span_bytes.clone()),
            ("--agent-max-attribute-bytes", self.agent_max_attribute_bytes.clone()),
        ];
        for (flag, value) in optional {
            if let Some(value) = value {
                push(flag, value);
            }
        }
        for dir in &self.agent_dir {
            push("--agent-dir", dir.clone());
        }
        for env in &self.agent_env {
            push("--agent-env", env.clone());
        }
        for model in &self.agent_model {
            push("--agent-model", model.clone());
        }
        if self.agent_real_clock {
            args.push("--agent-real-clock".into());
        }
        args
    }
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
        assert_eq!(run.common.sandbox.agent_dir, ["/tmp"]);
    }

    #[test]
    fn runner_processes_get_the_same_llm_and_sandbox_flags() {
        let cli = Cli::try_parse_from([
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
            "--agent-dir",
            "/tmp::/data:rw",
            "--agent-env",
            "A=1",
            "--agent-real-clock",
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
        ])
        .expect("parses");
        let Command::Run(run) = cli.command else {
            panic!("expected run");
        };
        let mut args = vec![
            "agl-host".into(),
            "runner".into(),
            "--store".into(),
            "http://x".into(),
            "--agent".into(),
            "a.wasm".into(),
        ];
        args.extend(run.common.llm.to_args());
        args.extend(run.common.sandbox.to_args());
        let parsed = Cli::try_parse_from(args).expect("the runner accepts them");
        let Command::Runner(runner) = parsed.command else {
            panic!("expected runner");
        };
        assert_eq!(runner.llm.llm_script, run.common.llm.llm_script);
        assert_eq!(runner.sandbox.agent_timeout.as_deref(), Some("5s"));
        assert_eq!(runner.sandbox.agent_dir, ["/tmp::/data:rw"]);
        assert_eq!(runner.sandbox.agent_env, ["A=1"]);
        assert!(runner.sandbox.agent_real_clock);
        let limits = (
            runner.sandbox.agent_llm_max_request.as_deref(),
            runner.sandbox.agent_llm_max_output_tokens,
            runner.sandbox.agent_llm_max_tools,
            runner.sandbox.agent_llm_max_tools_size.as_deref(),
        );
        assert_eq!(limits, (Some("8MiB"), Some(4096), Some(16), Some("64KiB")));
        let spans = (
            runner.sandbox.agent_max_spans,
            runner.sandbox.agent_max_span_bytes.as_deref(),
            runner.sandbox.agent_max_attribute_bytes.as_deref(),
        );
        assert_eq!(
            spans,
            (Some(500), Some("4MiB"), Some("8KiB")),
            "span budgets reach the runners"
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
    fn dev_runs_the_builtin_baseline_by_default() {
        let cli = Cli::try_parse_from(["agl-host", "dev", "--agent", "a.wasm", "--train", "t.jsonl"]).expect("parses");
        let Command::Dev(dev) = cli.command else {
            panic!("expected dev");
        };
        assert_eq!(dev.algo, std::path::Path::new("baseline"));
    }
}
