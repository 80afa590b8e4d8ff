//! The WASM host: runs untrusted agent components in a sandbox and traces everything they do.
//!
//! - [`WasmHost`] owns the one wasmtime engine (pooling, epoch deadlines, compile cache) and
//!   loads components once ([`AgentComponent`], an `InstancePre`).
//! - [`SandboxPolicy`] says what an agent may do; deny by default. Each capability (WASI,
//!   limits, LLM) prepares its per-instance state from its slice of it, and one store builder
//!   makes every agent's and algorithm's `Store` (`sandbox/`).
//! - [`AgentComponent::run_attempt`] runs one attempt in a fresh instance; every host call
//!   becomes a span that [`SpanRecorder`] writes into the LightningStore.
//! - [`AlgorithmComponent::run`] runs an algorithm component, which drives the store, reads
//!   spans through the adapter and reports progress to an [`AlgorithmObserver`].
//!
//! - [`v0_1`] serves components built against `agl:agent@0.1.0` beside 0.2.0 ones.
//!
//! This crate knows the store trait and the LLM backend trait; it knows nothing of HTTP servers
//! or the command line.

mod agent;
pub mod algorithm;
pub mod bindings;
pub mod cache;
mod clocks;
mod deadline;
mod engine;
mod error;
pub mod failure;
mod imports;
mod llm_allowance;
mod loaded;
mod memory;
pub mod pool;
/// The sandbox policy (its own crate, `agl-policy`, so that parsing it needs no wasmtime).
pub use agl_policy as policy;
pub mod output;
mod sandbox;
pub mod spans;
mod state;
pub mod v0_1;

pub use agent::{AgentComponent, AttemptOutcome, AttemptRequest, TraceObserver};
pub use algorithm::{
    AlgorithmComponent, AlgorithmObserver, AlgorithmOutcome, AlgorithmRequest, BestResult, LogLevel, RecordingObserver,
};
pub use cache::{Compiled, ComponentCache};
pub use clocks::{VIRTUAL_TICK, attempt_seed};
pub use engine::{EngineOptions, WasmHost};
pub use error::HostError;
pub use llm_allowance::{LlmAllowance, LlmRefusal, Refused};
pub use loaded::Loaded;
pub use policy::{DirAccess, DirGrant, EnvGrant, LlmBudget, PolicyError, SandboxOptions, SandboxPolicy};
pub use sandbox::http_span_keys;
pub use spans::{SpanExport, SpanRecorder};
pub use state::MAX_ATTRIBUTE_BYTES;
