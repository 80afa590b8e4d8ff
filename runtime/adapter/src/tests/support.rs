//! Hand-built spans for tests: a name, attributes, start time, sequence id, parent and status.

use agl_store::{Span, StatusCode, TraceStatus};
use serde_json::Value;

pub(crate) struct SpanBuilder {
    span: Span,
}

impl SpanBuilder {
    /// A span of rollout `ro-test`, attempt `at-test`, with id `s{seq}` and start time `seq`.
    pub fn new(name: &str, seq: u64) -> Self {
        let mut span = Span::new("ro-test", "at-test", seq, "0".repeat(32), format!("s{seq}"), name);
        span.start_time = Some(seq as f64);
        span.end_time = Some(seq as f64 + 0.5);
        Self { span }
    }

    /// Adds the entries of a JSON object as attributes (anything else is ignored).
    pub fn attrs(mut self, attributes: Value) -> Self {
        if let Value::Object(map) = attributes {
            self.span.attributes.extend(map);
        }
        self
    }

    pub fn id(mut self, span_id: &str) -> Self {
        span_id.clone_into(&mut self.span.span_id);
        self
    }

    pub fn parent(mut self, parent_id: &str) -> Self {
        self.span.parent_id = Some(parent_id.to_owned());
        self
    }

    pub fn start(mut self, start_time: Option<f64>) -> Self {
        self.span.start_time = start_time;
        self
    }

    pub fn error(mut self, description: &str) -> Self {
        self.span.status = TraceStatus {
            status_code: StatusCode::Error,
            description: Some(description.to_owned()),
            ..TraceStatus::default()
        };
        self
    }

    pub fn build(self) -> Span {
        self.span
    }
}
