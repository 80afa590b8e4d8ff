//! Scripted misbehaviour for the test server ([`serve_with_faults`](super::serve_with_faults)):
//! the first chat answers replaced by given HTTP statuses (with `Retry-After`, a message or a raw
//! body), a delay before every chat answer, and a gap between a streamed answer's events.

use std::time::Duration;

/// What the server does wrong. `Faults::default()` is a well-behaved server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Faults {
    /// Answers to the first chat requests, in order, instead of the backend's (request 0 gets
    /// `leading[0]`, ...); later requests reach the backend.
    pub leading: Vec<Fault>,
    /// Waited before answering every chat request (faulty or not).
    pub delay: Duration,
    /// Waited between the events of a streamed answer (`"stream": true`).
    pub stream_gap: Duration,
}

impl Faults {
    /// The next chat request gets `fault`.
    pub fn then(mut self, fault: Fault) -> Self {
        self.leading.push(fault);
        self
    }

    /// The next `times` chat requests get `fault`.
    pub fn then_times(mut self, times: usize, fault: Fault) -> Self {
        self.leading.extend(std::iter::repeat_n(fault, times));
        self
    }

    /// A streamed answer's events come `gap` apart.
    pub fn with_stream_gap(mut self, gap: Duration) -> Self {
        self.stream_gap = gap;
        self
    }

    /// Every chat answer comes `delay` late.
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

/// One scripted HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// The HTTP status (an invalid code is answered as 500).
    pub status: u16,
    /// The `Retry-After` header value, if any.
    pub retry_after: Option<String>,
    /// The message of the OpenAI-shaped error body `{"error": {"message", "type"}}`.
    pub message: String,
    /// A raw body sent instead of the error body (e.g. garbage with status 200).
    pub body: Option<String>,
}

impl Fault {
    /// An answer with `status` and an OpenAI-shaped error body.
    pub fn status(status: u16) -> Self {
        Fault {
            status,
            retry_after: None,
            message: format!("injected fault: HTTP {status}"),
            body: None,
        }
    }

    /// Adds `Retry-After: <seconds>`.
    pub fn with_retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds.to_string());
        self
    }

    /// Sets the error body's message.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }

    /// Sends `body` verbatim (as `application/json`) instead of an error body.
    pub fn with_body(mut self, body: impl Into<String>) -> Self {
        self.body = Some(body.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_compose() {
        let faults = Faults::default()
            .then_times(2, Fault::status(429).with_retry_after(0))
            .then(Fault::status(200).with_body("nope"))
            .with_delay(Duration::from_millis(5));
        assert_eq!(faults.leading.len(), 3);
        assert_eq!(faults.leading[1].retry_after.as_deref(), Some("0"));
        assert_eq!(faults.leading[2].body.as_deref(), Some("nope"));
        assert_eq!(faults.delay, Duration::from_millis(5));
        assert_eq!(Fault::status(503).with_message("busy").message, "busy");
    }
}
