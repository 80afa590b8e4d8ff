//! One attempt of a task as an algorithm that learns from text (GEPA) reads it: what the agent
//! answered, its reward, the feedback it gave beside the reward (`reward.feedback`, recorded by
//! the host as `agl.reward.feedback`) and the LLM transcript, in one view.

use crate::conventions as c;
use crate::model::Message;
use crate::reward::final_reward;
use crate::transcript::transcript;
use crate::triplet::triplets;
use agl_store::Span;
use serde_json::Value;
use std::borrow::Borrow;

/// One attempt of a task: its input (the rollout's, given by the caller), output, reward,
/// feedback and transcript.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskView {
    /// The task, as the rollout holds it.
    pub input: Value,
    /// What the agent answered: the last LLM call's response text (`None` without a call). The
    /// WIT has the agent return a reward only, so its own final answer is not recorded.
    pub output: Option<String>,
    /// The attempt's final reward ([`final_reward`]).
    pub reward: Option<f64>,
    /// The agent's feedback texts, in order ([`feedback`]).
    pub feedback: Vec<String>,
    /// The attempt's LLM calls joined into one conversation ([`transcript`]).
    pub transcript: Vec<Message>,
}

/// The feedback of the attempt: the texts of the last span (by sequence id) carrying
/// `agl.reward.feedback` — a list of strings, or one string — in order; empty when none does.
pub fn feedback<S: Borrow<Span>>(spans: &[S]) -> Vec<String> {
    let mut ordered: Vec<&Span> = spans.iter().map(Borrow::borrow).collect();
    ordered.sort_by_key(|s| s.sequence_id);
    let Some(value) = ordered
        .into_iter()
        .rev()
        .find_map(|s| s.attributes.get(c::REWARD_FEEDBACK))
    else {
        return Vec::new();
    };
    match value {
        Value::String(text) => vec![text.clone()],
        Value::Array(texts) => texts.iter().filter_map(|t| t.as_str().map(str::to_owned)).collect(),
        _ => Vec::new(),
    }
}

/// The view of one attempt of the task `input` from its spans.
pub fn task_view<S: Borrow<Span>>(input: Value, spans: &[S]) -> TaskView {
    let calls = triplets(spans);
    TaskView {
        input,
        output: calls.last().map(|call| call.response.clone()),
        reward: final_reward(spans),
        feedback: feedback(spans),
        transcript: transcript(&calls),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::support::SpanBuilder;
    use serde_json::json;

    fn llm(seq: u64, question: &str, answer: &str) -> Span {
        SpanBuilder::new(c::LLM_SPAN, seq)
            .parent("root")
            .attrs(json!({
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "m",
                "gen_ai.prompt.0.role": "user",
                "gen_ai.prompt.0.content": question,
                "gen_ai.completion.0.role": "assistant",
                "gen_ai.completion.0.content": answer,
            }))
            .build()
    }

    #[test]
    fn the_view_holds_the_last_answer_the_final_reward_the_feedback_and_the_transcript() {
        let spans = vec![
            llm(1, "What is 3*9?", "2.7"),
            llm(2, "Again: what is 3*9?", "27"),
            SpanBuilder::new(c::ANNOTATION_SPAN, 3)
                .parent("root")
                .attrs(json!({
                    c::REWARD_0_NAME: "primary",
                    c::REWARD_0_VALUE: 0.5,
                    c::REWARD_FEEDBACK: ["expected 27, got 2.7: units", "second try right\n\u{1b}[31m"],
                }))
                .build(),
        ];
        let view = task_view(json!({"q": "3*9"}), &spans);
        assert_eq!(view.input, json!({"q": "3*9"}));
        assert_eq!(view.output.as_deref(), Some("27"));
        assert_eq!(view.reward, Some(0.5));
        assert_eq!(
            view.feedback,
            ["expected 27, got 2.7: units", "second try right\n\u{1b}[31m"]
        );
        let texts: Vec<&str> = view.transcript.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(texts, ["What is 3*9?", "2.7", "Again: what is 3*9?", "27"]);
    }

    #[test]
    fn feedback_is_the_last_spans_and_a_lone_string_counts_as_one_text() {
        let old = SpanBuilder::new(c::ANNOTATION_SPAN, 1)
            .attrs(json!({ c::REWARD_FEEDBACK: ["stale"] }))
            .build();
        let new = SpanBuilder::new(c::ANNOTATION_SPAN, 2)
            .attrs(json!({ c::REWARD_FEEDBACK: "fresh" }))
            .build();
        assert_eq!(feedback(&[new.clone(), old.clone()]), ["fresh"]);
        assert!(feedback::<Span>(&[]).is_empty());
        let view = task_view(Value::Null, &[old]);
        assert_eq!((view.output, view.reward), (None, None));
        assert!(view.transcript.is_empty());
    }
}
