//! Logging and the guest's own operation spans through the host's `trace` interface, as the
//! [`Trace`] trait: agents have it on [`Ctx`], algorithms (agl-algorithm-sdk) on their `Host`. For
//! an agent the host turns each call into a span or span event of the attempt's trace; for an
//! algorithm it goes to the host's log. Nothing here prints to stdout.

use serde::Serialize;

use crate::bindings::agl::agent::trace;
use crate::{Ctx, Level, Result};

/// Logs, messages, objects and operation spans; every method is provided (in the prelude).
pub trait Trace {
    /// Logs `message` at `level`.
    fn log(&self, level: Level, message: &str) {
        trace::log(level, message);
    }

    /// Logs at trace level.
    fn trace(&self, message: &str) {
        self.log(Level::Trace, message);
    }

    /// Logs at debug level.
    fn debug(&self, message: &str) {
        self.log(Level::Debug, message);
    }

    /// Logs at info level.
    fn info(&self, message: &str) {
        self.log(Level::Info, message);
    }

    /// Logs at warn level.
    fn warn(&self, message: &str) {
        self.log(Level::Warn, message);
    }

    /// Logs at error level (the attempt goes on; return `Err` to fail it).
    fn error(&self, message: &str) {
        self.log(Level::Error, message);
    }

    /// Records a free-form message (an `agentlightning.message` span).
    fn message(&self, text: &str) {
        trace::message(text);
    }

    /// Records `value` as a structured object (its JSON becomes an `agentlightning.object` span's
    /// `agentlightning.object.json`). Fails only when `value` cannot be serialized to JSON (e.g. a
    /// map with non-string keys).
    fn object<T: Serialize + ?Sized>(&self, value: &T) -> Result<()> {
        let json = serde_json::to_string(value)?;
        trace::object(&json);
        Ok(())
    }

    /// Runs `body` inside an operation span called `name`: host calls made in `body` become its
    /// children, and an `Err` from `body` marks the span failed with its message before being
    /// returned. (A panic in `body` traps the instance; the span is then closed by the host.)
    fn operation<T>(&self, name: &str, body: impl FnOnce() -> Result<T>) -> Result<T> {
        let handle = trace::start_operation(name);
        let result = body();
        trace::end_operation(handle, result.as_ref().err().map(|e| e.message()));
        result
    }
}

impl Trace for Ctx {}
