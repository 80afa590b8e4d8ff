//! The small imports of the algorithm world: `llm` (through the same gate as agents, recorded as
//! LLM spans of the algorithm's own rollout, see `llm_trace`, and summarised in its log), `trace`
//! (its log, shown by the host) and `progress` (its status line and best result).

use super::bindings::progress;
use super::observer::{BestResult, LogLevel};
use super::state::AlgorithmState;
use crate::bindings::llm::{self as llm_wit};
use crate::bindings::trace::{self as trace_wit, Level};
use crate::capabilities::World;
use crate::capabilities::llm::{error_kind, traced_chat};
use crate::state::{MAX_ATTRIBUTE_BYTES, clip};
use std::time::Instant;

/// Most operations an algorithm may hold open at once (a leak guard).
const MAX_OPEN_OPERATIONS: usize = 10_000;

fn log_level(level: Level) -> LogLevel {
    match level {
        Level::Trace => LogLevel::Trace,
        Level::Debug => LogLevel::Debug,
        Level::Info => LogLevel::Info,
        Level::Warn => LogLevel::Warn,
        Level::Error => LogLevel::Error,
    }
}

impl llm_wit::Host for AlgorithmState {
    async fn chat(
        &mut self,
        request: llm_wit::ChatRequest,
    ) -> wasmtime::Result<Result<llm_wit::ChatResponse, llm_wit::LlmError>> {
        let started = Instant::now();
        let cap = self.world.llm_trace.attribute_cap();
        let trace = self.world.trace().await;
        let outcome = traced_chat(&mut self.sandbox.llm, request, trace, cap).await?;
        let elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
        match outcome {
            Ok(response) => {
                self.world.observer.log(
                    LogLevel::Debug,
                    &format!(
                        "llm call {} ({}): {} + {} tokens in {elapsed_ms:.0} ms",
                        self.sandbox.llm.calls(),
                        response.model,
                        response.usage.input_tokens,
                        response.usage.output_tokens
                    ),
                );
                Ok(Ok(response))
            }
            Err(error) => {
                let (kind, description) = error_kind(&error);
                self.world.observer.log(
                    LogLevel::Warn,
                    &format!("llm call failed ({kind}) after {elapsed_ms:.0} ms: {description}"),
                );
                Ok(Err(error))
            }
        }
    }
}

impl trace_wit::Host for AlgorithmState {
    fn log(&mut self, level: Level, message: String) -> wasmtime::Result<()> {
        self.world
            .observer
            .log(log_level(level), &clip(&message, MAX_ATTRIBUTE_BYTES));
        Ok(())
    }

    fn message(&mut self, text: String) -> wasmtime::Result<()> {
        self.world
            .observer
            .log(LogLevel::Info, &clip(&text, MAX_ATTRIBUTE_BYTES));
        Ok(())
    }

    fn object(&mut self, json: String) -> wasmtime::Result<()> {
        self.world
            .observer
            .log(LogLevel::Debug, &clip(&json, MAX_ATTRIBUTE_BYTES));
        Ok(())
    }

    fn start_operation(&mut self, name: String) -> wasmtime::Result<u64> {
        if self.world.operations.len() >= MAX_OPEN_OPERATIONS {
            return Ok(0);
        }
        let handle = self.world.next_operation;
        self.world.next_operation += 1;
        self.world
            .observer
            .log(LogLevel::Debug, &format!("{} started", clip(&name, 256)));
        self.world.operations.insert(handle, (clip(&name, 256), Instant::now()));
        Ok(handle)
    }

    fn end_operation(&mut self, handle: u64, error: Option<String>) -> wasmtime::Result<()> {
        if let Some((name, started)) = self.world.operations.remove(&handle) {
            let took = started.elapsed().as_secs_f64();
            match error {
                None => self
                    .world
                    .observer
                    .log(LogLevel::Debug, &format!("{name} done in {took:.3} s")),
                Some(e) => self.world.observer.log(
                    LogLevel::Warn,
                    &format!("{name} failed after {took:.3} s: {}", clip(&e, MAX_ATTRIBUTE_BYTES)),
                ),
            }
        }
        Ok(())
    }
}

impl progress::Host for AlgorithmState {
    fn status(&mut self, text: String) {
        self.world.observer.status(&clip(&text, 512));
    }

    fn best(&mut self, score: f64, resources_id: Option<String>, detail_json: String) {
        let detail = serde_json::from_str(&detail_json).unwrap_or(serde_json::Value::Null);
        let best = BestResult {
            score,
            resources_id,
            detail,
        };
        self.world.observer.best(&best);
    }
}
