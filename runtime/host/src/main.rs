//! The `agl-host` binary: parses the command line and runs the command; turns errors into one
//! clear line and an exit code (2 for bad input, 1 otherwise; the others are in args.rs). Wiring
//! only: the work is in the runtime crates.

mod args;
mod best_cmd;
mod build_cmd;
mod builtin;
mod c_folder;
mod components;
mod dashboard_cmd;
mod dashboard_runs;
mod eval_cmd;
mod export_cmd;
mod fleet;
mod fork_cmd;
mod inputs;
mod llm;
mod otlp_export;
mod output;
mod process_memory;
mod progress;
mod proxy_capabilities;
mod redact;
mod remote;
mod replay_cmd;
mod replay_run;
mod results;
mod resume;
mod run;
mod runner_cmd;
mod runs_cmd;
mod show_cmd;
mod signals;
mod store_cmd;
mod table;
mod whole_file;

use args::{Cli, Command, StoreArgs};
use inputs::InputError;
use output::stderr_line;
use run::Target;
use std::process::ExitCode;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("AGL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

async fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run(args) => {
            let target = match (&args.store, &args.agent) {
                (Some(url), _) => Target::RemoteStore {
                    url,
                    token: args.token.clone(),
                },
                (None, Some(agent)) => Target::Agent(agent),
                (None, None) => return Err(InputError("--agent AGENT or --store URL is required".into()).into()),
            };
            run::run(args.common, target, &args.algo, cli.verbose).await
        }
        Command::Dev(args) => run::run(args.common, Target::Agent(&args.agent), &args.algo, cli.verbose).await,
        Command::Eval(args) => eval_cmd::run(args, cli.verbose).await,
        Command::Best(args) => best_cmd::run(args).await,
        Command::Store(args) => store_cmd::run(args).await,
        Command::Runner(args) => runner_cmd::run(args).await,
        Command::Build(args) => build_cmd::run(&args),
        Command::Runs(args) => runs_cmd::run(args).await,
        Command::Show(args) => show_cmd::run(args).await,
        Command::Dashboard(args) => dashboard_cmd::run(args).await,
        Command::Export(args) => export_cmd::run(args).await,
        Command::Replay(args) => replay_cmd::run(args).await,
        Command::Fork(args) => fork_cmd::run(args).await,
    }
}

/// The exit code of a command that failed with `error`: 2 for bad input (the user's to fix: an
/// argument, a file, a store that cannot be opened), 1 otherwise.
fn exit_code(error: &anyhow::Error) -> ExitCode {
    let bad_input = error.downcast_ref::<InputError>().is_some()
        || error.downcast_ref::<agl_store_db::DbError>().is_some()
        || error
            .downcast_ref::<agl_runs::RunsError>()
            .is_some_and(agl_runs::RunsError::is_input);
    if bad_input {
        ExitCode::from(2)
    } else {
        ExitCode::FAILURE
    }
}

fn main() -> ExitCode {
    process_memory::configure();
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match resume::rewrite_command_line(&argv) {
        Ok(Some(rewritten)) => Cli::try_parse_keeping_flags(rewritten).unwrap_or_else(|e| e.exit()),
        Ok(None) => Cli::try_parse_keeping_flags(argv).unwrap_or_else(|e| e.exit()),
        Err(error) => {
            stderr_line(&format!("agl-host: {error:#}"));
            return exit_code(&error);
        }
    };
    init_logging(cli.verbose);
    let threads = match &cli.command {
        Command::Store(StoreArgs { threads, .. }) => *threads,
        _ => None,
    };
    // `store --threads 1` serves from this thread alone (no work-stealing scheduler to pay for).
    let mut builder = match threads {
        Some(1) => tokio::runtime::Builder::new_current_thread(),
        Some(threads) => {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.worker_threads(usize::from(threads));
            builder
        }
        None => tokio::runtime::Builder::new_multi_thread(),
    };
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            stderr_line(&format!("agl-host: cannot start the async runtime: {e}"));
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(dispatch(cli)) {
        Ok(code) => code,
        Err(error) => {
            stderr_line(&format!("agl-host: {error:#}"));
            exit_code(&error)
        }
    }
}
