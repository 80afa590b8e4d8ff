//! Logging and the agent's own operation spans, as methods of [`Ctx`]. The host turns each into a
//! span or span event of the attempt's trace; nothing here prints to stdout.

use serde::Serialize;

use crate::bindings::agl::agent::trace;
use crate::{Ctx, Level, Result};

impl Ctx {
    /// Logs `message` at `level`.
    pub fn log(&self, level: Level, message: &str) {
        trace::log(level, message);
    }

    /// Logs at trace level.
    pub fn trace(&self, message: &str) {
        self.log(Level::Trace, message);
    }

    /// Logs at debug level.
    pub fn debug(&self, message: &str) {
        self.log(Level::Debug, message);
    }

    /// Logs at info level.
    pub fn info(&self, message: &str) {
        self.log(Level::Info, message);
    }

    /// Logs at warn level.
    pub fn warn(&self, message: &str) {
        self.log(Level::Warn, message);
    }

    /// Logs at error level (the attempt goes on; return `Err` to fail it).
    pub fn error(&self, message: &str) {
        self.log(Level::Error, message);
    }

    /// Records a free-form message (a span event).
    pub fn message(&self, text: &str) {
        trace::message(text);
    }

    /// Records `value` as a structured object (its JSON becomes the span's `agl.object`). Fails only
    /// when `value` cannot be serialized to JSON (e.g. a map with non-string keys).
    pub fn object<T: Serialize + ?Sized>(&self, value: &T) -> Result<()> {
        let json = serde_json::to_string(value)?;
        trace::object(&json);
        Ok(())
    }

    /// Runs `body` inside an operation span called `name`: host calls made in `body` become its
    /// children, and an `Err` from `body` marks the span failed with its message before being
    /// returned. (A panic in `body` traps the instance; the span is then closed by the host.)
    pub fn operation<T>(&self, name: &str, body: impl FnOnce() -> Result<T>) -> Result<T> {
        let handle = trace::start_operation(name);
        let result = body();
        trace::end_operation(handle, result.as_ref().err().map(|e| e.message()));
        result
    }
}
