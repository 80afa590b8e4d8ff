//! The `tasks` of the summary (config `task_views`): each rollout's task view from the adapter
//! (`adapter.task`: input, output, reward, the agent's feedback, the LLM transcript) as JSON.

use agl_algorithm_sdk::prelude::*;
use agl_algorithm_sdk::{Role, TaskView};
use serde_json::{Value, json};

fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

/// One task view as JSON (the input parsed back; kept as text if it is not JSON).
pub fn view_json(split: &str, view: TaskView) -> Value {
    let input = serde_json::from_str(&view.input_json).unwrap_or(Value::String(view.input_json));
    let transcript: Vec<Value> = view
        .transcript
        .iter()
        .map(|m| json!({"role": role_name(m.role), "content": m.content}))
        .collect();
    json!({
        "split": split,
        "rollout_id": view.rollout_id,
        "attempt_id": view.attempt_id,
        "input": input,
        "output": view.output,
        "reward": view.reward,
        "feedback": view.feedback,
        "transcript": transcript,
        "failure": view.failure,
    })
}

/// The task views of every rollout of `splits` (name, rollout ids), in order.
pub fn views<'a>(host: &Host, splits: impl Iterator<Item = (&'a str, &'a [String])>) -> Result<Value> {
    let mut out = Vec::new();
    for (split, ids) in splits {
        for id in ids {
            out.push(view_json(split, host.task(id, None)?));
        }
    }
    Ok(Value::Array(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agl_algorithm_sdk::Message;

    #[test]
    fn a_view_is_json_with_its_input_parsed_back() {
        let view = TaskView {
            rollout_id: "ro-1".into(),
            attempt_id: Some("at-1".into()),
            input_json: r#"{"q": "3*9"}"#.into(),
            output: Some("2.7".into()),
            reward: Some(0.0),
            feedback: vec!["expected 27, got 2.7: units".into()],
            transcript: vec![Message {
                role: Role::User,
                content: "3*9?".into(),
                tool_call_id: None,
                tool_calls: Vec::new(),
            }],
            failure: None,
        };
        let json = view_json("val", view);
        assert_eq!(json["input"]["q"], "3*9");
        assert_eq!(json["feedback"][0], "expected 27, got 2.7: units");
        assert_eq!(json["transcript"][0], json!({"role": "user", "content": "3*9?"}));
        assert_eq!(json["split"], "val");
    }
}
