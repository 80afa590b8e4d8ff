//! The command line: `agl-host run` and `agl-host dev`, their flags and their help text.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

const EXIT_CODES: &str = "\
Exit codes:
  0    the run completed (agent failures are results, not errors)
  1    the algorithm failed, or the run could not finish
  2    bad arguments or input: a missing file, bad JSON, a component that does not fit its world
  130  interrupted (Ctrl-C); partial results were written

Components: --agent and --algo take a .wasm component, or a guest crate directory (a folder with
Cargo.toml, e.g. examples/math-agent or plugins/baseline) which is built for wasm32-wasip2 first.
A sandbox manifest beside a .wasm (agent.wasm -> agent.toml) sets its limits and grants; the
--agent-* flags add to it.";

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
    /// Optimise: run an algorithm component against an agent component over a dataset.
    ///
    /// Example (offline, with the scripted LLM):
    ///   agl-host run --agent examples/math-agent --algo plugins/baseline \
    ///     --train examples/math-agent/data/train.jsonl --val examples/math-agent/data/val.jsonl \
    ///     --resources examples/math-agent/initial-resources.json \
    ///     --llm-script examples/math-agent/rules.json --output results.json
    #[command(after_long_help = EXIT_CODES)]
    Run(RunArgs),
    /// Try an agent: run every task once with the baseline algorithm and report mean rewards.
    ///
    /// Example:
    ///   agl-host dev --agent examples/math-agent --train examples/math-agent/data/val.jsonl \
    ///     --resources examples/math-agent/initial-resources.json --llm-script examples/math-agent/rules.json
    #[command(after_long_help = EXIT_CODES)]
    Dev(DevArgs),
    /// Serve a LightningStore over HTTP (Agent-lightning 0.3.0's wire API, plus OTLP at /v1/traces).
    ///
    /// Runners (`agl-host runner --store URL`) and Agent-lightning's Python client can use it.
    /// Example:
    ///   agl-host store --port 4747 --token secret
    Store(StoreArgs),
    /// Run rollouts from a remote store with an agent component, until stopped (Ctrl-C or SIGTERM).
    ///
    /// Example:
    ///   agl-host runner --store http://10.0.0.5:4747 --agent agent.wasm --runners 4 --llm-script rules.json
    #[command(after_long_help = EXIT_CODES)]
    Runner(RunnerArgs),
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
    /// Largest request body, e.g. 16MiB.
    #[arg(long, default_value = "16MiB", value_name = "SIZE")]
    pub max_body: String,
    /// Threads serving requests (default: one per CPU). With 1, everything runs on one thread
    /// with no work-stealing scheduler: the leanest where clients and the store share a small
    /// machine.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
}

#[derive(Debug, Args)]
pub struct RunnerArgs {
    /// The store's URL, e.g. http://127.0.0.1:4747.
    #[arg(long, value_name = "URL")]
    pub store: String,
    /// The store's bearer token.
    #[arg(long, env = "AGL_STORE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// The agent component (.wasm) or its guest crate directory.
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
    #[command(flatten)]
    pub llm: LlmArgs,
    #[command(flatten)]
    pub sandbox: AgentSandboxArgs,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The algorithm component (.wasm exporting agl:agent/algorithm) or its guest crate directory.
    #[arg(long, value_name = "ALGO")]
    pub algo: PathBuf,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args)]
pub struct DevArgs {
    /// The algorithm (default: the baseline plugin, built from plugins/baseline when needed).
    #[arg(long, value_name = "ALGO")]
    pub algo: Option<PathBuf>,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args)]
pub struct CommonArgs {
    /// The agent component (.wasm exporting agl:agent/agent) or its guest crate directory.
    #[arg(long, value_name = "AGENT")]
    pub agent: PathBuf,
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
    #[command(flatten)]
    pub llm: LlmArgs,
    #[command(flatten)]
    pub sandbox: AgentSandboxArgs,
}

/// Where LLM calls go (agents' and the algorithm's). Without either flag, LLM calls fail.
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
    /// Give the agent the real clocks instead of virtual, per-attempt ones.
    #[arg(long)]
    pub agent_real_clock: bool,
}

impl LlmArgs {
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
}
