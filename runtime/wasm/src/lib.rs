//! The WASM host: runs untrusted agent components in a sandbox and traces everything they do.
//!
//! - [`WasmHost`] owns the one wasmtime engine (pooling, epoch deadlines, compile cache) and
//!   loads components once ([`AgentComponent`], an `InstancePre`).
//! - [`SandboxPolicy`] says what an agent may do; deny by default. Each host capability (WASI,
//!   limits, LLM, HTTP, trace, reward, resources) is one folder of `capabilities/`: how it links,
//!   its per-instance state from its slice of the policy, its spans. One list composes them, and
//!   one store builder makes every agent's and algorithm's `Store`.
//! - [`AgentComponent::run_attempt`] runs one attempt in a fresh instance; every host call
//!   becomes a span that [`SpanRecorder`] (`agl-trace`) writes into the LightningStore.
//! - [`AlgorithmComponent::run`] runs an algorithm component, which drives the store, reads
//!   spans through the adapter and reports progress to an [`AlgorithmObserver`].
//!
//! - [`v0_1`] and [`v0_2`] serve components built against `agl:agent@0.1.0` and `@0.2.0` beside
//!   0.3.0 ones.
//!
//! This crate knows the store trait and the LLM backend trait; it knows nothing of HTTP servers
//! or the command line.

mod agent;
pub mod algorithm;
pub mod bindings;
pub mod cache;
mod capabilities;
mod engine;
mod error;
pub mod failure;
mod loaded;
mod older;
pub mod pool;
/// The sandbox policy (its own crate, `agl-policy`, so that parsing it needs no wasmtime).
pub use agl_policy as policy;
pub use capabilities::wasi::output;
mod state;
pub mod v0_1;
pub mod v0_2;

pub use agent::{AgentComponent, AttemptOutcome, AttemptRequest, TraceObserver};
/// The span pipeline and the LLM allowance are `agl-trace`'s (shared with the LLM proxy, no
/// wasmtime); re-exported for the runners, which hand them to this crate's components.
pub use agl_trace::{LlmAllowance, SpanExport, SpanRecorder};
pub use algorithm::{
    AlgorithmComponent, AlgorithmObserver, AlgorithmOutcome, AlgorithmRequest, BestResult, LogLevel, RecordingObserver,
};
pub use cache::{Compiled, ComponentCache, component_digest};
pub use capabilities::llm::scripted_answer;
pub use capabilities::tape;
pub use capabilities::wasi::clocks::{VIRTUAL_TICK, attempt_seed};
pub use engine::{EngineOptions, WasmHost};
pub use error::HostError;
pub use loaded::Loaded;
pub use policy::{DirAccess, DirGrant, EnvGrant, LlmBudget, PolicyError, SandboxOptions, SandboxPolicy};
pub use state::MAX_ATTRIBUTE_BYTES;
