//! An attempt's LLM calls as one chat transcript, the `{"messages": [...]}` that fine-tuning
//! pipelines take. Which calls count, and their order, are [`triplets`](crate::triplets)'s; this
//! only joins their conversations (rewards are not its concern).

use crate::model::{Message, Triplet};

/// The conversations of `calls` (in call order) joined into one transcript: the first call's
/// prompt and answer; then, for each later call, when its prompt starts with the whole transcript
/// so far (a multi-turn agent sending the conversation back), only the messages past it and its
/// answer; otherwise (a call that starts afresh) its whole prompt and answer. Empty when there is
/// no call.
pub fn transcript(calls: &[Triplet]) -> Vec<Message> {
    let mut joined: Vec<Message> = Vec::new();
    for call in calls {
        let conversation = call.conversation();
        let continues = conversation.len() >= joined.len() && conversation[..joined.len()] == joined[..];
        let new_part = if continues { joined.len() } else { 0 };
        joined.extend(conversation.into_iter().skip(new_part));
    }
    joined
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolCall;

    fn call(prompt: &[Message], response: &str, tool_calls: Vec<ToolCall>) -> Triplet {
        Triplet {
            prompt: prompt.to_vec(),
            response: response.to_owned(),
            tool_calls,
            ..Triplet::default()
        }
    }

    fn roles_and_texts(messages: &[Message]) -> Vec<(&str, &str)> {
        messages.iter().map(|m| (m.role.as_str(), m.content.as_str())).collect()
    }

    #[test]
    fn no_call_is_an_empty_transcript() {
        assert!(transcript(&[]).is_empty());
    }

    #[test]
    fn one_call_is_its_prompt_and_answer() {
        let system = Message::new("system", "Be brief.");
        let user = Message::new("user", "2 + 2?");
        let joined = transcript(&[call(&[system, user], "4", Vec::new())]);
        assert_eq!(
            roles_and_texts(&joined),
            [("system", "Be brief."), ("user", "2 + 2?"), ("assistant", "4")]
        );
    }

    #[test]
    fn a_call_that_continues_the_conversation_adds_only_what_is_new() {
        let user = Message::new("user", "Weather in Oslo?");
        let lookup = ToolCall {
            id: "call-1".into(),
            name: "weather".into(),
            arguments: r#"{"city":"Oslo"}"#.into(),
        };
        let first = call(std::slice::from_ref(&user), "", vec![lookup.clone()]);
        let tool_answer = Message {
            tool_call_id: Some("call-1".into()),
            ..Message::new("tool", "3 °C")
        };
        let second = call(&[user, first.answer(), tool_answer], "It is 3 °C.", Vec::new());
        let joined = transcript(&[first, second]);
        assert_eq!(
            roles_and_texts(&joined),
            [
                ("user", "Weather in Oslo?"),
                ("assistant", ""),
                ("tool", "3 °C"),
                ("assistant", "It is 3 °C.")
            ]
        );
        assert_eq!(joined[1].tool_calls, vec![lookup]);
        assert_eq!(joined[2].tool_call_id.as_deref(), Some("call-1"));
    }

    #[test]
    fn a_call_that_starts_afresh_is_added_whole() {
        let system = Message::new("system", "Be brief.");
        let first = call(&[system.clone(), Message::new("user", "2 + 2?")], "4", Vec::new());
        let second = call(&[system, Message::new("user", "3 + 3?")], "6", Vec::new());
        let joined = transcript(&[first, second]);
        assert_eq!(
            roles_and_texts(&joined),
            [
                ("system", "Be brief."),
                ("user", "2 + 2?"),
                ("assistant", "4"),
                ("system", "Be brief."),
                ("user", "3 + 3?"),
                ("assistant", "6")
            ]
        );
    }
}
