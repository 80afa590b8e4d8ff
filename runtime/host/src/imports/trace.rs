//! `agl:agent/trace`: log lines, messages and objects as spans, and the agent's own operation
//! spans (host calls made while one is open nest under it).

use crate::bindings::trace::{Host, Level};
use crate::spans::names;
use crate::state::{HostState, MAX_ATTRIBUTE_BYTES, clip, clip_owned};
use opentelemetry::KeyValue;
use opentelemetry::trace::Status;

fn level_name(level: Level) -> &'static str {
    match level {
        Level::Trace => "trace",
        Level::Debug => "debug",
        Level::Info => "info",
        Level::Warn => "warn",
        Level::Error => "error",
    }
}

impl Host for HostState {
    fn log(&mut self, level: Level, message: String) -> wasmtime::Result<()> {
        if self.take_span_allowance() {
            let attributes = vec![
                KeyValue::new("agl.log.level", level_name(level)),
                KeyValue::new("agl.log.message", clip_owned(message, MAX_ATTRIBUTE_BYTES)),
            ];
            self.trace.instant(names::LOG, attributes, Status::Unset);
        }
        Ok(())
    }

    fn message(&mut self, text: String) -> wasmtime::Result<()> {
        if self.take_span_allowance() {
            let attributes = vec![KeyValue::new("agl.message", clip_owned(text, MAX_ATTRIBUTE_BYTES))];
            self.trace.instant(names::MESSAGE, attributes, Status::Unset);
        }
        Ok(())
    }

    fn object(&mut self, json: String) -> wasmtime::Result<()> {
        if self.take_span_allowance() {
            let status = match serde_json::from_str::<serde_json::Value>(&json) {
                Ok(_) => Status::Unset,
                Err(e) => Status::error(format!("not JSON: {e}")),
            };
            let attributes = vec![KeyValue::new("agl.object", clip(&json, MAX_ATTRIBUTE_BYTES))];
            self.trace.instant(names::OBJECT, attributes, status);
        }
        Ok(())
    }

    fn start_operation(&mut self, name: String) -> wasmtime::Result<u64> {
        if !self.take_span_allowance() {
            return Ok(0);
        }
        Ok(self.trace.open_operation(clip(&name, 256)))
    }

    fn end_operation(&mut self, handle: u64, error: Option<String>) -> wasmtime::Result<()> {
        self.trace
            .close_operation(handle, error.map(|e| clip(&e, MAX_ATTRIBUTE_BYTES)));
        Ok(())
    }
}
