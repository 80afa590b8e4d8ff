//! `agl:agent/trace`: log lines, messages and objects as spans, and the agent's own operation
//! spans (host calls made while one is open nest under it).

use crate::bindings::trace::{Host, Level};
use crate::spans::names;
use crate::state::{HostState, clip};
use opentelemetry::KeyValue;
use opentelemetry::trace::Status;

/// Longest operation name kept (it becomes a span name).
const MAX_OPERATION_NAME_BYTES: usize = 256;

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
        let attributes = vec![
            KeyValue::new(names::LOG_LEVEL, level_name(level)),
            KeyValue::new(names::MESSAGE_BODY, message),
        ];
        self.world.trace.instant(names::LOG, attributes, Status::Unset);
        Ok(())
    }

    fn message(&mut self, text: String) -> wasmtime::Result<()> {
        let attributes = vec![KeyValue::new(names::MESSAGE_BODY, text)];
        self.world.trace.instant(names::MESSAGE, attributes, Status::Unset);
        Ok(())
    }

    fn object(&mut self, json: String) -> wasmtime::Result<()> {
        let status = match serde_json::from_str::<serde_json::Value>(&json) {
            Ok(_) => Status::Unset,
            Err(e) => Status::error(format!("not JSON: {e}")),
        };
        let attributes = vec![KeyValue::new(names::OBJECT_JSON, json)];
        self.world.trace.instant(names::OBJECT, attributes, status);
        Ok(())
    }

    fn start_operation(&mut self, name: String) -> wasmtime::Result<u64> {
        Ok(self.world.trace.open_operation(clip(&name, MAX_OPERATION_NAME_BYTES)))
    }

    fn end_operation(&mut self, handle: u64, error: Option<String>) -> wasmtime::Result<()> {
        let cap = self.world.trace.budget().max_attribute_bytes;
        self.world.trace.close_operation(handle, error.map(|e| clip(&e, cap)));
        Ok(())
    }
}
