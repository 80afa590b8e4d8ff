//! The provider-neutral chat vocabulary every backend speaks: messages, tools, requests,
//! responses and token usage. Plain serde data, no I/O.

use serde::{Deserialize, Serialize};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    /// The lowercase wire name (`"system"`, `"user"`, `"assistant"`, `"tool"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
    /// For [`Role::Tool`] messages: the id of the tool call this message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For [`Role::Assistant`] messages: the tool calls the model made in that turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
}

impl Message {
    fn new(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
            tool_call_id: None,
            tool_calls: Vec::new(),
        }
    }

    /// An assistant turn that called tools (its `text` may be empty).
    pub fn assistant_tool_calls(text: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Message {
            tool_calls,
            ..Message::new(Role::Assistant, text)
        }
    }

    pub fn system(text: impl Into<String>) -> Self {
        Message::new(Role::System, text)
    }

    pub fn user(text: impl Into<String>) -> Self {
        Message::new(Role::User, text)
    }

    pub fn assistant(text: impl Into<String>) -> Self {
        Message::new(Role::Assistant, text)
    }

    /// The result of the tool call `tool_call_id`.
    pub fn tool(tool_call_id: impl Into<String>, text: impl Into<String>) -> Self {
        Message {
            tool_call_id: Some(tool_call_id.into()),
            ..Message::new(Role::Tool, text)
        }
    }
}

/// A function the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    pub description: String,
    /// JSON schema of the arguments.
    pub parameters: serde_json::Value,
}

/// One chat-completion request.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    /// `None` means the backend's [`default_model`](crate::LlmBackend::default_model).
    pub model: Option<String>,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
    pub stop: Vec<String>,
    pub tools: Vec<Tool>,
}

impl ChatRequest {
    pub fn new(messages: Vec<Message>) -> Self {
        ChatRequest {
            messages,
            ..ChatRequest::default()
        }
    }
}

/// A call of a [`Tool`] the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as JSON text, exactly as the model wrote them (not necessarily valid JSON).
    pub arguments: String,
}

/// Token counts of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u32,
    pub output_tokens: u32,
}

/// The model's answer to a [`ChatRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
    /// As the backend reported it: `"stop"`, `"length"`, `"tool_calls"`, ...
    pub finish_reason: String,
    pub usage: Usage,
    /// The model that actually answered.
    pub model: String,
    /// The provider's id of this completion (`chatcmpl-...`), when it sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// What an RL-ready server (vLLM) returns besides the text: the prompt's and the completion's
    /// token ids and the completion's logprobs. `None` when the backend did not send them.
    #[serde(default, skip_serializing_if = "TokenDetail::is_empty")]
    pub tokens: TokenDetail,
}

/// Token-level detail of a completion, as vLLM returns it (`prompt_token_ids`,
/// `choices[0].token_ids`, `choices[0].logprobs.content`). Every part is optional.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TokenDetail {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_token_ids: Option<Vec<u32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_token_ids: Option<Vec<u32>>,
    /// `choices[0].logprobs.content`: one `{token, logprob, top_logprobs, ...}` per token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<serde_json::Value>,
}

impl TokenDetail {
    pub fn is_empty(&self) -> bool {
        self.prompt_token_ids.is_none() && self.response_token_ids.is_none() && self.logprobs.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_serde_omits_absent_tool_call_id() {
        let json = serde_json::to_value(Message::user("hi")).unwrap();
        assert_eq!(json, serde_json::json!({"role": "user", "content": "hi"}));
        let back: Message =
            serde_json::from_value(serde_json::json!({"role": "tool", "content": "4", "tool_call_id": "c1"})).unwrap();
        assert_eq!(back, Message::tool("c1", "4"));
    }

    #[test]
    fn role_names_are_lowercase() {
        for role in [Role::System, Role::User, Role::Assistant, Role::Tool] {
            assert_eq!(
                serde_json::to_value(role).unwrap(),
                serde_json::Value::from(role.as_str())
            );
        }
    }
}
