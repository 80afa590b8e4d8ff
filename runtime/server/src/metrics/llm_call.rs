//! One LLM call span read for `/metrics`: its outcome, tokens and duration. Which spans are LLM
//! calls, and where their tokens are, is `agl_adapter`'s to say (as for triplets).

use agl_store::{Span, StatusCode};

/// What one LLM call span says, read before the span is stored (an OTLP batch is stored whole).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LlmCall {
    /// The span's status is ERROR.
    pub failed: bool,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// End minus start, when the span has both and they are in order.
    pub seconds: Option<f64>,
}

impl LlmCall {
    /// The call `span` records, or `None` when it is no LLM call (as `agl_adapter` decides).
    pub(crate) fn of(span: &Span) -> Option<LlmCall> {
        let usage = agl_adapter::llm_call_usage(span)?;
        let seconds = match (span.start_time, span.end_time) {
            (Some(start), Some(end)) if end >= start => Some(end - start),
            _ => None,
        };
        Some(LlmCall {
            failed: span.status.status_code == StatusCode::Error,
            prompt_tokens: usage.input_tokens.unwrap_or(0),
            completion_tokens: usage.output_tokens.unwrap_or(0),
            seconds,
        })
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use agl_store::TraceStatus;
    use serde_json::json;

    /// An LLM call span with these token counts, from `start` to `end`.
    pub(crate) fn llm_span(input: u64, output: u64, start: f64, end: f64) -> Span {
        let mut span = Span::new(
            "ro-1",
            "at-1",
            1,
            "ab".repeat(16),
            "cd".repeat(8),
            "openai.chat.completion",
        );
        span.attributes.insert("gen_ai.usage.input_tokens".into(), json!(input));
        span.attributes
            .insert("gen_ai.usage.output_tokens".into(), json!(output));
        span.start_time = Some(start);
        span.end_time = Some(end);
        span
    }

    #[test]
    fn an_llm_call_span_is_read_for_outcome_tokens_and_duration() {
        let call = LlmCall::of(&llm_span(12, 3, 10.0, 10.75)).expect("an LLM call");
        assert_eq!(
            call,
            LlmCall {
                failed: false,
                prompt_tokens: 12,
                completion_tokens: 3,
                seconds: Some(0.75)
            }
        );
        let mut failed = llm_span(5, 0, 2.0, 1.0);
        failed.status = TraceStatus {
            status_code: StatusCode::Error,
            ..TraceStatus::default()
        };
        let call = LlmCall::of(&failed).expect("an LLM call");
        assert!(call.failed);
        assert_eq!(call.seconds, None, "an end before the start is no duration");
        let plain = Span::new("ro-1", "at-1", 2, "ab".repeat(16), "ef".repeat(8), "agl.stdout");
        assert_eq!(LlmCall::of(&plain), None);
    }
}
