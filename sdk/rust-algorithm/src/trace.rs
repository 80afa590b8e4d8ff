//! The host's log and the algorithm's own operation spans, as methods of [`Host`] (the WIT `trace`
//! interface, shared with agents). Nothing here prints to stdout.

use serde::Serialize;

use agl_sdk::bindings::agl::agent::trace;

use crate::{Host, Level, Result};

impl Host {
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

    /// Logs at error level (the run goes on; return `Err` to fail it).
    pub fn error(&self, message: &str) {
        self.log(Level::Error, message);
    }

    /// Records a free-form message.
    pub fn message(&self, text: &str) {
        trace::message(text);
    }

    /// Records `value` as a structured object. Fails only when `value` cannot be serialized to
    /// JSON (e.g. a map with non-string keys).
    pub fn object<T: Serialize + ?Sized>(&self, value: &T) -> Result<()> {
        let json = serde_json::to_string(value)?;
        trace::object(&json);
        Ok(())
    }

    /// Runs `body` inside an operation span called `name` (e.g. "round 2"): host calls made in
    /// `body` become its children, and an `Err` from `body` marks the span failed with its
    /// message before being returned.
    pub fn operation<T>(&self, name: &str, body: impl FnOnce() -> Result<T>) -> Result<T> {
        let handle = trace::start_operation(name);
        let result = body();
        trace::end_operation(handle, result.as_ref().err().map(|e| e.message()));
        result
    }
}
