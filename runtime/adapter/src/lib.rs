//! Adapters: a rollout attempt's spans turned into what learning algorithms need, so that no
//! algorithm re-parses spans — Agent-lightning's adapter idea (`TracerTraceToTriplet`,
//! `TraceToMessages`, `find_final_reward`), for the spans agl-host records and for those of
//! OpenTelemetry GenAI instrumentation (OpenLLMetry / AgentOps) that Agent-lightning agents emit.
//!
//! - [`triplets`]: one (prompt, response, reward) [`Triplet`] per LLM call, the attempt's final
//!   reward on the last one;
//! - [`messages`]: per LLM call, the prompt followed by the assistant's answer;
//! - [`transcript`]: the attempt's calls joined into one chat transcript (for fine-tuning);
//! - [`token_rows`]: the attempt's calls as token ids with a loss mask and logprobs, calls that
//!   continue each other merged (for RL trainers; never re-tokenised);
//! - [`final_reward`]: the primary reward of the last span that carries one;
//! - [`counted_reward`]: a rollout's reward as a run's mean reward counts it (0 unless it
//!   succeeded);
//! - [`rewards`]: every named reward, in order;
//! - [`task_view`]: one attempt of a task for algorithms that learn from text (GEPA): its output,
//!   reward, [`feedback`] and transcript;
//! - [`llm_call_usage`]: the tokens one LLM call span reports, without reading its messages;
//! - [`events`]: the spans as Agent-lightning 1.0's events (`model_request`, `reward`, posted
//!   ones) and its `format=triplet` view, for the 1.0 gateway routes;
//! - [`export`]: the JSON lines of training-data export (triplets, transcripts, token rows,
//!   spans), and [`export::select`]: which rollouts and attempts an export takes;
//! - [`conventions`]: the span names and attribute keys all this reads: `agl_store::semconv`,
//!   the one definition the host's tracer and the OTLP ingest use too.
//!
//! Every function takes one attempt's spans as `&[Span]` or `&[Arc<Span>]` (anything that
//! borrows as a [`Span`]). Malformed attributes never panic: they are skipped or defaulted as
//! each module documents.

pub use agl_store::semconv as conventions;

mod attrs;
pub mod events;
pub mod export;
mod llm;
mod model;
mod reward;
mod task;
mod tokens;
mod transcript;
mod triplet;

#[cfg(test)]
mod tests;

pub use agl_store::Span;
pub use llm::llm_call_usage;
pub use llm::looks_like_llm_call as is_llm_call;
pub use model::{Message, ToolCall, Triplet, Usage};
pub use reward::{counted_reward, final_reward, rewards};
pub use task::{TaskView, feedback, task_view};
pub use tokens::{TokenRow, response_logprobs, token_rows};
pub use transcript::transcript;
pub use triplet::{messages, triplets};
