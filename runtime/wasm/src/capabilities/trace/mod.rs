//! The trace capability, `agl:agent/trace`: log lines, messages and objects as spans of an
//! agent's attempt, and the agent's own operation spans (host calls made while one is open nest
//! under it). An algorithm's `trace` is its log instead (`algorithm::host_imports`). No policy
//! slice of its own (its spans count against `spans`) and no per-instance state: the trace is
//! the world's.

use super::tape::Cue;
use super::{Capability, InstanceContext, InstanceState, Link, SandboxError, World};
use crate::bindings::trace::{Host, Level};
use crate::policy::SandboxPolicy;
use crate::state::{HostState, clip};
use crate::v0_1::agent::trace as v0_1_trace;
use crate::v0_2::agent::trace as v0_2_trace;
use agl_trace::names;
use opentelemetry::KeyValue;
use opentelemetry::trace::Status;
use wasmtime::component::{HasSelf, Linker};

/// The trace capability (stateless: what it records goes to the world's trace).
pub struct Trace;

impl Capability for Trace {
    fn prepare(_policy: &SandboxPolicy, _instance: &InstanceContext) -> Result<Self, SandboxError> {
        Ok(Self)
    }
}

/// `agl:agent/trace` at 0.3.0, 0.2.0 and 0.1.0, which each world serves its own way.
impl<W: World> Link<W> for Trace
where
    InstanceState<W>: Host + v0_2_trace::Host + v0_1_trace::Host,
{
    fn link(linker: &mut Linker<InstanceState<W>>) -> wasmtime::Result<()> {
        crate::bindings::trace::add_to_linker::<_, HasSelf<_>>(linker, |state| state)?;
        v0_2_trace::add_to_linker::<_, HasSelf<_>>(linker, |state| state)?;
        v0_1_trace::add_to_linker::<_, HasSelf<_>>(linker, |state| state)
    }
}

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
        self.sandbox.tape.handle.note(
            "trace.log",
            || serde_json::json!({ "level": level_name(level), "message": message }),
        )?;
        let attributes = vec![
            KeyValue::new(names::LOG_LEVEL, level_name(level)),
            KeyValue::new(names::MESSAGE_BODY, message),
        ];
        self.world.trace.instant(names::LOG, attributes, Status::Unset);
        Ok(())
    }

    fn message(&mut self, text: String) -> wasmtime::Result<()> {
        self.sandbox
            .tape
            .handle
            .note("trace.message", || serde_json::json!({ "text": text }))?;
        let attributes = vec![KeyValue::new(names::MESSAGE_BODY, text)];
        self.world.trace.instant(names::MESSAGE, attributes, Status::Unset);
        Ok(())
    }

    fn object(&mut self, json: String) -> wasmtime::Result<()> {
        self.sandbox
            .tape
            .handle
            .note("trace.object", || serde_json::json!({ "json": json }))?;
        let status = match serde_json::from_str::<serde_json::Value>(&json) {
            Ok(_) => Status::Unset,
            Err(e) => Status::error(format!("not JSON: {e}")),
        };
        let attributes = vec![KeyValue::new(names::OBJECT_JSON, json)];
        self.world.trace.instant(names::OBJECT, attributes, status);
        Ok(())
    }

    fn start_operation(&mut self, name: String) -> wasmtime::Result<u64> {
        let cue = self
            .sandbox
            .tape
            .handle
            .call("trace.start-operation", || serde_json::json!({ "name": name }))?;
        let handle = self.world.trace.open_operation(clip(&name, MAX_OPERATION_NAME_BYTES));
        if let Cue::Live(ticket) = cue {
            ticket.answer(|| handle.into());
        }
        Ok(handle)
    }

    fn end_operation(&mut self, handle: u64, error: Option<String>) -> wasmtime::Result<()> {
        self.sandbox.tape.handle.note(
            "trace.end-operation",
            || serde_json::json!({ "handle": handle, "error": error }),
        )?;
        let cap = self.world.trace.budget().max_attribute_bytes;
        self.world.trace.close_operation(handle, error.map(|e| clip(&e, cap)));
        Ok(())
    }
}
