//! The span JSON Agent-lightning 0.3.0 produced (`tests/fixtures/agentlightning-0.3/exchanges.jsonl`,
//! captured from its HTTP store): the only spans there are reward annotations written by its
//! runner for a returned reward, and no LLM spans, so this checks the reward reading end to end.

use crate::{Span, final_reward, messages, rewards, triplets};
use serde_json::Value;

const EXCHANGES: &str = include_str!("../../../../tests/fixtures/agentlightning-0.3/exchanges.jsonl");

/// Every span in the capture: the bodies of `POST /v1/agl/spans` and the items of
/// `POST /v1/agl/spans/search` answers.
fn captured_spans() -> Vec<Span> {
    let mut spans = Vec::new();
    for line in EXCHANGES.lines().filter(|l| !l.trim().is_empty()) {
        let exchange: Value = serde_json::from_str(line).expect("each line is a JSON exchange");
        let body = |key: &str| -> Value {
            exchange[key]
                .as_str()
                .and_then(|text| serde_json::from_str(text).ok())
                .unwrap_or(Value::Null)
        };
        match exchange["path"].as_str() {
            Some("/v1/agl/spans") if exchange["method"] == "POST" => {
                spans.push(serde_json::from_value(body("req_body")).expect("a 0.3.0 span"));
            }
            Some("/v1/agl/spans/search") => {
                if let Value::Array(items) = body("resp_body")["items"].take() {
                    for item in items {
                        spans.push(serde_json::from_value(item).expect("a 0.3.0 span"));
                    }
                }
            }
            _ => {}
        }
    }
    spans
}

#[test]
fn agentlightning_reward_spans_read_as_primary_rewards() {
    let spans = captured_spans();
    assert!(
        spans.iter().any(|s| s.name == "agentlightning.annotation"),
        "the capture holds reward annotation spans"
    );
    // One rollout, its reward span seen twice (as added, and as searched).
    let first = &spans[..1];
    assert_eq!(final_reward(first), Some(1.0));
    assert_eq!(rewards(first), vec![("primary".to_owned(), 1.0)]);
    assert_eq!(final_reward(&spans), Some(1.0));
    assert!(triplets(&spans).is_empty());
    assert!(messages(&spans).is_empty());
}
