//! The `agl-host` command's integration tests, one test binary (each binary links wasmtime:
//! one link instead of one per file). Each file is a module; a test's name starts with its
//! module's (`cargo test -p agl-host --test cli run::`, or a name filter such as `python_client`).
//!
//! Shared by the modules: [`support`] (server processes, store backends, the Python venv) and
//! [`agents`] (the test cache, scratch folders, runs of other languages' agents). Tests of
//! different modules run in parallel in one process: scratch folders are named per module and
//! test, and no test changes the process's environment or current folder.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test: a failed step panics and fails it"
)]

mod agents;
mod support;

mod agent_folders;
mod best_and_eval;
mod c_agent;
mod dashboard;
mod dashboard_agl03;
mod deadlines;
mod edge;
mod export;
mod export_tokens;
mod gateway_rollout_manager;
mod gepa;
mod hostile_output;
mod inspect_runs;
mod js_agents;
mod kept_records;
mod kept_runs;
mod llm_faults;
mod llm_proxy;
mod otlp_export;
mod postgres_replicas;
mod python_agents;
mod python_client;
mod replay;
mod run;
mod runner_fault_tolerance;
mod sandbox_refusals;
mod store_durability;
mod store_metrics;
mod tool_agent;
