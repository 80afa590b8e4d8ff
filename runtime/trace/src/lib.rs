//! What the WASM host (`agl-wasm`) and the LLM proxy (`agl-proxy`) share about spans and LLM
//! calls, without wasmtime.
//!
//! - Automatic tracing: every host call of an attempt becomes an OpenTelemetry span (via
//!   `opentelemetry_sdk`), and a span processor hands finished spans to the LightningStore in
//!   batches with sequence ids ([`SpanRecorder`]). One root span per attempt ([`AttemptTrace`]);
//!   host-call spans are its children, within the attempt's span budget ([`SpanAccount`]).
//! - The span contract: [`names`] (span names and attribute keys) and the LLM span's attributes
//!   ([`llm`]), built by the same code for the host's own LLM calls and the proxy's.
//! - [`SpanExport`]: a second destination for every span (an OTLP exporter), the proxy's too.
//! - [`LlmAllowance`]: what one attempt may spend on LLM calls, admitted and charged through one
//!   allowance whichever way it calls (the host's `llm` import, the proxy); its refusals are what
//!   a refused call's span records (`agl.sandbox.refused`, `agl.sandbox.grant`).
//! - [`compare`]: whether two attempts' spans are the same up to ids and times (a replay's check).

mod allowance;
mod attempt;
mod budget;
pub mod compare;
mod convert;
mod export;
pub mod llm;
pub mod names;
mod recorder;
mod stored;

pub use allowance::{LlmAllowance, LlmRefusal, Refused};
pub use attempt::{AttemptTrace, LiveSpan};
pub use budget::{DroppedSpans, SPAN_OVERHEAD_BYTES, SpanAccount};
pub use convert::to_store_span;
pub use export::SpanExport;
pub use recorder::SpanRecorder;
pub use stored::from_store_span;
