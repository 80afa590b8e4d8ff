//! What the adapter hands to algorithms: chat messages, tool calls and (prompt, response, reward)
//! triplets, as plain serde structs (what the `agl:agent/adapter` interface carries, plus the
//! span each triplet came from).

use serde::{Deserialize, Serialize};

/// One call of a tool the model asked for.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id (empty when the span recorded none).
    #[serde(default)]
    pub id: String,
    /// The tool's name.
    #[serde(default)]
    pub name: String,
    /// The arguments as the model wrote them (JSON text; empty when the span recorded none).
    #[serde(default)]
    pub arguments: String,
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Message {
    /// `system`, `user`, `assistant`, `tool`, or whatever other role the span recorded
    /// (`developer`, `function`, ...): kept as text, not mapped.
    pub role: String,
    /// The text (empty when the span recorded none, e.g. an assistant turn that only calls tools).
    #[serde(default)]
    pub content: String,
    /// For a `tool` message: the tool call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For an `assistant` message: the tools it called.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
}

impl Message {
    /// A message with just a role and text.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role: role.into(),
            content: content.into(),
            tool_call_id: None,
            tool_calls: Vec::new(),
        }
    }
}

/// Token counts of one LLM call, where the span recorded them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
}

/// One LLM call of an attempt as a (prompt, response, reward) triplet.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Triplet {
    /// The messages the LLM was sent, in index order.
    pub prompt: Vec<Message>,
    /// The text of its answer (empty when it only called tools).
    pub response: String,
    /// The tools it called.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The model that answered (the requested one when the span does not say; empty if neither).
    pub model: String,
    /// The attempt's final reward on its last LLM call; `None` on the others.
    pub reward: Option<f64>,
    /// Token counts, where recorded.
    #[serde(default)]
    pub usage: Usage,
    /// The provider's response id (`gen_ai.response.id`), where recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    /// The prompt's token ids (`prompt_token_ids`), where the backend returned them (vLLM).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompt_token_ids: Vec<u32>,
    /// The response's token ids (`response_token_ids`), where the backend returned them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub response_token_ids: Vec<u32>,
    /// The LLM span this triplet came from.
    pub span_id: String,
    /// That span's sequence id.
    pub sequence_id: u64,
}

impl Triplet {
    /// The assistant's answer as a message (its text and tool calls).
    pub fn answer(&self) -> Message {
        Message {
            role: crate::conventions::ASSISTANT.to_owned(),
            content: self.response.clone(),
            tool_call_id: None,
            tool_calls: self.tool_calls.clone(),
        }
    }

    /// The prompt followed by the answer.
    pub fn conversation(&self) -> Vec<Message> {
        let mut messages = Vec::with_capacity(self.prompt.len() + 1);
        messages.extend(self.prompt.iter().cloned());
        messages.push(self.answer());
        messages
    }
}
