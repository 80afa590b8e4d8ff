//! Token-exact training rows: an attempt's LLM calls as the token ids the model saw and wrote,
//! with a loss mask and the logprobs of its own tokens, never re-tokenised from text. Calls are
//! merged into one row while each next call's prompt token ids start with the previous call's
//! prompt and response token ids (a multi-turn agent or a tool loop sending the conversation
//! back), as Agent-lightning 1.0's trajectory-level trace aggregator does
//! (`agentlightning/verl/rollout_adapter.py`): the tokens a later prompt adds past that context
//! (tool observations, the next user turn, chat-template tokens) join the row masked (0), the
//! responses unmasked (1). A call whose prompt does not continue starts a new row.
//!
//! Which calls count and their order are [`triplets`](crate::triplets)'s. A call whose span lacks
//! prompt or response token ids cannot be placed: it becomes a row of its own with no tokens and
//! `missing_token_ids` set, and no call merges across it (nothing is guessed).

use crate::attrs::number;
use crate::conventions as c;
use crate::model::Triplet;
use agl_store::Span;
use serde_json::Value;
use std::borrow::Borrow;

/// One training row: one LLM call, or several merged.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TokenRow {
    /// The calls merged into this row: their places among the attempt's LLM calls (as
    /// [`triplets`](crate::triplets) orders them), from 0.
    pub calls: Vec<usize>,
    /// Their LLM spans, in the same order.
    pub span_ids: Vec<String>,
    /// The first call's prompt token ids.
    pub prompt_token_ids: Vec<u32>,
    /// Everything after the prompt: each call's response token ids and, between them, the tokens
    /// the next prompt added (observations).
    pub response_token_ids: Vec<u32>,
    /// One per token of `prompt_token_ids` followed by `response_token_ids`: 1 for a token the
    /// model wrote (a response), 0 for the prompt and observations.
    pub loss_mask: Vec<u8>,
    /// One per token of `response_token_ids`: the model's logprob of each response token, 0.0 at
    /// observation tokens; `None` unless every merged call recorded one logprob per response token.
    pub logprobs: Option<Vec<f64>>,
    /// The model that answered the row's first call.
    pub model: String,
    /// The call's span records no prompt or no response token ids (the row has no tokens).
    pub missing_token_ids: bool,
}

/// The logprobs of the tokens a call wrote, from `logprobs.content` (OpenAI's
/// `choices[0].logprobs.content`, as JSON text or as the array): one `{"logprob": x}` per token.
/// `None` when absent, or when any entry has no finite `logprob` (as Agent-lightning's
/// `_extract_choice_log_probs`).
pub fn response_logprobs(span: &Span) -> Option<Vec<f64>> {
    let parsed;
    let entries = match span.attributes.get(c::LOGPROBS_CONTENT)? {
        Value::String(text) => {
            parsed = serde_json::from_str::<Value>(text).ok()?;
            parsed.as_array()?
        }
        Value::Array(entries) => entries,
        _ => return None,
    };
    entries
        .iter()
        .map(|entry| number(entry.as_object()?.get("logprob")))
        .collect()
}

/// The row being built, and the context (last call's prompt and response) a next call must
/// continue to join it.
struct Open {
    row: TokenRow,
    context: Vec<u32>,
}

/// The attempt's LLM calls as token rows, in call order. `spans` are one attempt's spans.
pub fn token_rows<S: Borrow<Span>>(spans: &[S]) -> Vec<TokenRow> {
    let calls = crate::triplets(spans);
    let logprobs_of = |call: &Triplet| {
        spans
            .iter()
            .map(Borrow::borrow)
            .find(|span| span.span_id == call.span_id && span.sequence_id == call.sequence_id)
            .and_then(response_logprobs)
    };
    let mut rows = Vec::new();
    let mut open: Option<Open> = None;
    for (index, call) in calls.iter().enumerate() {
        if call.prompt_token_ids.is_empty() || call.response_token_ids.is_empty() {
            rows.extend(open.take().map(|open| open.row));
            rows.push(TokenRow {
                calls: vec![index],
                span_ids: vec![call.span_id.clone()],
                model: call.model.clone(),
                missing_token_ids: true,
                ..TokenRow::default()
            });
            continue;
        }
        let prompt = &call.prompt_token_ids;
        let response = &call.response_token_ids;
        // The call's logprobs, when they align with its response tokens.
        let logprobs = logprobs_of(call).filter(|logprobs| logprobs.len() == response.len());
        if let Some(current) = open.as_mut().filter(|open| prompt.starts_with(&open.context)) {
            let row = &mut current.row;
            let observation = &prompt[current.context.len()..];
            row.calls.push(index);
            row.span_ids.push(call.span_id.clone());
            row.response_token_ids.extend_from_slice(observation);
            row.loss_mask.extend(std::iter::repeat_n(0, observation.len()));
            row.response_token_ids.extend_from_slice(response);
            row.loss_mask.extend(std::iter::repeat_n(1, response.len()));
            row.logprobs = match (row.logprobs.take(), logprobs) {
                (Some(mut all), Some(own)) => {
                    all.extend(std::iter::repeat_n(0.0, observation.len()));
                    all.extend(own);
                    Some(all)
                }
                _ => None,
            };
            current.context = prompt.iter().chain(response).copied().collect();
            continue;
        }
        rows.extend(open.take().map(|open| open.row));
        let mut loss_mask = vec![0; prompt.len()];
        loss_mask.extend(std::iter::repeat_n(1, response.len()));
        open = Some(Open {
            row: TokenRow {
                calls: vec![index],
                span_ids: vec![call.span_id.clone()],
                prompt_token_ids: prompt.clone(),
                response_token_ids: response.clone(),
                loss_mask,
                logprobs,
                model: call.model.clone(),
                missing_token_ids: false,
            },
            context: prompt.iter().chain(response).copied().collect(),
        });
    }
    rows.extend(open.map(|open| open.row));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::support::SpanBuilder;
    use serde_json::json;

    /// An LLM call span at `seq`: its prompt and response token ids (none when empty) and, when
    /// given, one logprob per response token.
    fn call(seq: u64, prompt: &[u32], response: &[u32], logprobs: Option<&[f64]>) -> Span {
        let mut attributes = json!({
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": format!("turn {seq}"),
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": "ok",
            "gen_ai.response.model": "m-1",
        });
        if !prompt.is_empty() {
            attributes[c::PROMPT_TOKEN_IDS] = json!(prompt);
        }
        if !response.is_empty() {
            attributes[c::RESPONSE_TOKEN_IDS] = json!(response);
        }
        if let Some(logprobs) = logprobs {
            let content: Vec<Value> = logprobs
                .iter()
                .map(|x| json!({"token": "t", "logprob": x, "top_logprobs": []}))
                .collect();
            attributes[c::LOGPROBS_CONTENT] = json!(Value::from(content).to_string());
        }
        SpanBuilder::new(c::LLM_SPAN, seq).attrs(attributes).build()
    }

    fn reward(seq: u64, value: f64) -> Span {
        SpanBuilder::new(c::ANNOTATION_SPAN, seq)
            .attrs(json!({c::REWARD_0_NAME: "primary", c::REWARD_0_VALUE: value}))
            .build()
    }

    #[test]
    fn a_call_continuing_the_last_merges_with_its_observation_masked() {
        let spans = [
            call(1, &[1, 2, 3], &[4, 5], Some(&[-0.1, -0.2])),
            // The tool's answer (6, 7) follows the first call's prompt and response.
            call(2, &[1, 2, 3, 4, 5, 6, 7], &[8, 9, 10], Some(&[-0.3, -0.4, -0.5])),
            // Continues directly, with no observation.
            call(3, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], &[11], Some(&[-0.6])),
            reward(4, 1.0),
        ];
        let rows = token_rows(&spans);
        assert_eq!(rows.len(), 1, "{rows:#?}");
        let row = &rows[0];
        assert_eq!(row.calls, [0, 1, 2]);
        assert_eq!(row.span_ids, ["s1", "s2", "s3"]);
        assert_eq!(row.prompt_token_ids, [1, 2, 3]);
        assert_eq!(row.response_token_ids, [4, 5, 6, 7, 8, 9, 10, 11]);
        assert_eq!(row.loss_mask, [0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 1]);
        assert_eq!(
            row.logprobs.as_deref(),
            Some(&[-0.1, -0.2, 0.0, 0.0, -0.3, -0.4, -0.5, -0.6][..]),
            "aligned to the response tokens, 0.0 at the observation"
        );
        assert_eq!(row.model, "m-1");
        assert!(!row.missing_token_ids);
    }

    /// A row's calls, prompt, response and mask.
    type Shape<'a> = (&'a [usize], &'a [u32], &'a [u32], &'a [u8]);

    #[test]
    fn a_call_that_does_not_continue_starts_a_new_row() {
        let spans = [
            call(1, &[1, 2, 3], &[4, 5], None),
            // Re-tokenised differently (5 became 50): no exact continuation.
            call(2, &[1, 2, 3, 4, 50, 6], &[7], None),
            // A fresh conversation.
            call(3, &[9, 9], &[8], None),
        ];
        let rows = token_rows(&spans);
        let shapes: Vec<Shape<'_>> = rows
            .iter()
            .map(|row| {
                (
                    row.calls.as_slice(),
                    row.prompt_token_ids.as_slice(),
                    row.response_token_ids.as_slice(),
                    row.loss_mask.as_slice(),
                )
            })
            .collect();
        assert_eq!(
            shapes,
            [
                (&[0][..], &[1, 2, 3][..], &[4, 5][..], &[0, 0, 0, 1, 1][..]),
                (&[1][..], &[1, 2, 3, 4, 50, 6][..], &[7][..], &[0, 0, 0, 0, 0, 0, 1][..]),
                (&[2][..], &[9, 9][..], &[8][..], &[0, 0, 1][..]),
            ]
        );
        assert!(rows.iter().all(|row| row.logprobs.is_none()), "none recorded");
        // A prompt shorter than the context cannot continue it.
        let rows = token_rows(&[call(1, &[1, 2], &[3], None), call(2, &[1, 2], &[4], None)]);
        assert_eq!(rows.len(), 2);
    }

    #[test]
    fn a_call_without_token_ids_is_a_row_of_its_own_and_nothing_merges_across_it() {
        let spans = [
            call(1, &[1, 2], &[3], None),
            call(2, &[], &[], None),
            // Continues call 1's context, but call 2 came between: not merged across the gap.
            call(3, &[1, 2, 3, 4], &[5], None),
            call(4, &[1, 2, 3, 4, 5, 6], &[], None),
        ];
        let rows = token_rows(&spans);
        let summary: Vec<(&[usize], bool, usize)> = rows
            .iter()
            .map(|row| (row.calls.as_slice(), row.missing_token_ids, row.loss_mask.len()))
            .collect();
        assert_eq!(
            summary,
            [
                (&[0][..], false, 3),
                (&[1][..], true, 0),
                (&[2][..], false, 5),
                (&[3][..], true, 0)
            ]
        );
        assert!(rows[1].prompt_token_ids.is_empty() && rows[1].response_token_ids.is_empty());
        assert_eq!(rows[1].span_ids, ["s2"]);
    }

    #[test]
    fn logprobs_that_do_not_align_are_left_out_of_the_whole_row() {
        let spans = [
            call(1, &[1], &[2, 3], Some(&[-0.1, -0.2])),
            call(2, &[1, 2, 3], &[4, 5], Some(&[-0.3])),
        ];
        let rows = token_rows(&spans);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].logprobs, None, "the second call has one logprob for two tokens");

        let spans = [call(1, &[1], &[2], None), call(2, &[1, 2], &[3], Some(&[-0.3]))];
        assert_eq!(token_rows(&spans)[0].logprobs, None, "the first call recorded none");

        let spans = [call(1, &[1], &[2], Some(&[-0.5]))];
        assert_eq!(token_rows(&spans)[0].logprobs, Some(vec![-0.5]));
    }

    #[test]
    fn logprobs_are_read_from_json_text_or_an_array_and_must_be_finite_numbers() {
        let with = |value: Value| {
            SpanBuilder::new(c::LLM_SPAN, 1)
                .attrs(json!({ c::LOGPROBS_CONTENT: value }))
                .build()
        };
        let text = json!([{"token": "a", "logprob": -1.5}, {"token": "b", "logprob": 0}]).to_string();
        assert_eq!(response_logprobs(&with(json!(text))), Some(vec![-1.5, 0.0]));
        assert_eq!(response_logprobs(&with(json!([{"logprob": -2.0}]))), Some(vec![-2.0]));
        for bad in [
            json!("[{\"logprob\": -1"),
            json!([{"token": "a"}]),
            json!([{"logprob": "NaN"}]),
            json!([-1.0]),
            json!({"content": []}),
        ] {
            assert_eq!(response_logprobs(&with(bad.clone())), None, "{bad}");
        }
        assert_eq!(response_logprobs(&SpanBuilder::new(c::LLM_SPAN, 1).build()), None);
    }
}
