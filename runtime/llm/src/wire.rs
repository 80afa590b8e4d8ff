//! The OpenAI chat-completions wire format: request, response and error bodies, and their
//! conversion to and from this crate's types. Shared by the HTTP client ([`crate::openai`]) and
//! the HTTP server (feature `server`). Lenient when reading (nulls, missing fields, content parts).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ChatRequest, ChatResponse, TokenDetail, ToolCall, Usage};
use crate::{Message, Role, Tool};

/// Body of `POST /chat/completions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WireRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default)]
    pub messages: Vec<WireMessage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Newer clients send this instead of `max_tokens`; read only.
    #[serde(default, skip_serializing)]
    pub max_completion_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<WireStop>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<WireTool>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WireMessage {
    pub role: String,
    /// A string, null, or (read only) an array of content parts.
    #[serde(default)]
    pub content: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// An assistant message's tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<WireToolCall>>,
}

/// `stop` is either one string or a list of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum WireStop {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WireTool {
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    pub function: WireFunction,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WireFunction {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub parameters: Option<Value>,
}

/// Body of a successful chat completion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WireResponse {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub object: Option<String>,
    #[serde(default)]
    pub created: Option<u64>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub choices: Vec<WireChoice>,
    #[serde(default)]
    pub usage: Option<WireUsage>,
    /// vLLM: the prompt's token ids (with `return_token_ids`, or Agent-lightning's patch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_token_ids: Option<Value>,
    /// Agent-lightning's patched vLLM: the completion's token ids, one list per choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_token_ids: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WireChoice {
    #[serde(default)]
    pub index: u32,
    #[serde(default)]
    pub message: Option<WireAssistantMessage>,
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// vLLM (`return_token_ids`): the completion's token ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_ids: Option<Value>,
    /// `{"content": [{token, logprob, ...}]}` when logprobs were asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<WireLogprobs>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WireLogprobs {
    #[serde(default)]
    pub content: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WireAssistantMessage {
    #[serde(default = "assistant_role")]
    pub role: String,
    #[serde(default)]
    pub content: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WireToolCall {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    pub function: WireCalledFunction,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WireCalledFunction {
    pub name: String,
    /// JSON text (a string) per the spec; some servers send an object.
    #[serde(default)]
    pub arguments: Option<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    #[serde(default)]
    pub total_tokens: Option<u64>,
}

/// `{"error": {"message": ..., "type": ...}}`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WireErrorBody {
    pub error: WireError,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WireError {
    pub message: String,
    #[serde(rename = "type")]
    pub kind: String,
}

fn function_type() -> String {
    "function".to_owned()
}

fn assistant_role() -> String {
    "assistant".to_owned()
}

fn clamp_u32(n: Option<u64>) -> u32 {
    n.map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX))
}

/// The text of a message `content`: a string, null (empty), or the concatenated `text` of content parts.
pub(crate) fn content_text(content: Option<&Value>) -> String {
    match content {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| match part {
                Value::String(text) => Some(text.as_str()),
                other => other.get("text").and_then(Value::as_str),
            })
            .collect(),
        Some(other) => other.to_string(),
    }
}

/// The message of an OpenAI-shaped error body (`error.message`, or `error` as a string, or a
/// top-level `message`/`detail`), if the body has one.
pub fn error_message(body: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let error = value.get("error");
    let text = error
        .and_then(|e| e.get("message"))
        .or(error)
        .or_else(|| value.get("message"))
        .or_else(|| value.get("detail"))?;
    match text {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

impl WireRequest {
    /// The body the client sends for `request`, naming `model`.
    #[cfg_attr(not(feature = "http-client"), allow(dead_code, reason = "the HTTP client's"))]
    pub fn from_chat(request: &ChatRequest, model: &str) -> Self {
        WireRequest {
            model: Some(model.to_owned()),
            messages: request
                .messages
                .iter()
                .map(|m| {
                    let tool_calls = wire_tool_calls(&m.tool_calls);
                    WireMessage {
                        role: m.role.as_str().to_owned(),
                        content: message_content(&m.content, tool_calls.is_some()),
                        tool_call_id: m.tool_call_id.clone(),
                        tool_calls,
                    }
                })
                .collect(),
            temperature: request.temperature,
            max_tokens: request.max_tokens,
            max_completion_tokens: None,
            stop: (!request.stop.is_empty()).then(|| WireStop::Many(request.stop.clone())),
            tools: (!request.tools.is_empty()).then(|| {
                request
                    .tools
                    .iter()
                    .map(|t| WireTool {
                        kind: function_type(),
                        function: WireFunction {
                            name: t.name.clone(),
                            description: Some(t.description.clone()),
                            parameters: Some(t.parameters.clone()),
                        },
                    })
                    .collect()
            }),
        }
    }

    /// The request a server received; an error message when a role is unknown.
    pub fn into_chat(self) -> Result<ChatRequest, String> {
        let messages = self
            .messages
            .into_iter()
            .enumerate()
            .map(|(i, m)| {
                let role = match m.role.as_str() {
                    "system" | "developer" => Role::System,
                    "user" => Role::User,
                    "assistant" => Role::Assistant,
                    "tool" | "function" => Role::Tool,
                    other => return Err(format!("messages[{i}].role: unknown role `{other}`")),
                };
                Ok(Message {
                    role,
                    content: content_text(m.content.as_ref()),
                    tool_call_id: m.tool_call_id,
                    tool_calls: m.tool_calls.map(chat_tool_calls).unwrap_or_default(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let stop = match self.stop {
            None => Vec::new(),
            Some(WireStop::One(s)) => vec![s],
            Some(WireStop::Many(v)) => v,
        };
        let tools = self
            .tools
            .unwrap_or_default()
            .into_iter()
            .map(|t| Tool {
                name: t.function.name,
                description: t.function.description.unwrap_or_default(),
                parameters: t.function.parameters.unwrap_or(Value::Null),
            })
            .collect();
        Ok(ChatRequest {
            messages,
            model: self.model,
            temperature: self.temperature,
            max_tokens: self.max_tokens.or(self.max_completion_tokens),
            stop,
            tools,
        })
    }
}

/// Tool calls on the wire; `None` when there are none (the key is then left out).
fn wire_tool_calls(calls: &[ToolCall]) -> Option<Vec<WireToolCall>> {
    (!calls.is_empty()).then(|| {
        calls
            .iter()
            .map(|c| WireToolCall {
                id: Some(c.id.clone()),
                kind: function_type(),
                function: WireCalledFunction {
                    name: c.name.clone(),
                    arguments: Some(Value::String(c.arguments.clone())),
                },
            })
            .collect()
    })
}

/// Tool calls read from the wire: a missing id becomes `call_{i}`, arguments sent as an object
/// become its JSON text, absent arguments `{}`.
fn chat_tool_calls(calls: Vec<WireToolCall>) -> Vec<ToolCall> {
    calls
        .into_iter()
        .enumerate()
        .map(|(i, c)| ToolCall {
            id: c.id.unwrap_or_else(|| format!("call_{i}")),
            name: c.function.name,
            arguments: match c.function.arguments {
                Some(Value::String(text)) => text,
                None | Some(Value::Null) => "{}".to_owned(),
                Some(other) => other.to_string(),
            },
        })
        .collect()
}

/// A message's `content`: OpenAI sends `null` for a pure tool-call turn (no text, some calls).
fn message_content(text: &str, has_tool_calls: bool) -> Option<Value> {
    (!(text.is_empty() && has_tool_calls)).then(|| Value::String(text.to_owned()))
}

/// Token ids as JSON.
fn id_list(ids: &[u32]) -> Value {
    ids.iter().copied().map(Value::from).collect()
}

/// A JSON array of token ids; anything else (or an id out of range) reads as absent.
fn token_ids(value: &Value) -> Option<Vec<u32>> {
    value
        .as_array()?
        .iter()
        .map(|id| id.as_u64().and_then(|id| u32::try_from(id).ok()))
        .collect()
}

impl WireResponse {
    /// The body a server sends for `response`.
    pub fn from_chat(response: &ChatResponse, id: String, created: u64) -> Self {
        let tool_calls = wire_tool_calls(&response.tool_calls);
        let content = message_content(&response.content, tool_calls.is_some());
        let (input, output) = (
            u64::from(response.usage.input_tokens),
            u64::from(response.usage.output_tokens),
        );
        WireResponse {
            id: Some(id),
            object: Some("chat.completion".to_owned()),
            created: Some(created),
            model: Some(response.model.clone()),
            choices: vec![WireChoice {
                index: 0,
                message: Some(WireAssistantMessage {
                    role: assistant_role(),
                    content,
                    tool_calls,
                }),
                finish_reason: Some(response.finish_reason.clone()),
                token_ids: response.tokens.response_token_ids.as_deref().map(id_list),
                logprobs: response
                    .tokens
                    .logprobs
                    .clone()
                    .map(|content| WireLogprobs { content: Some(content) }),
            }],
            usage: Some(WireUsage {
                prompt_tokens: Some(input),
                completion_tokens: Some(output),
                total_tokens: Some(input + output),
            }),
            prompt_token_ids: response.tokens.prompt_token_ids.as_deref().map(id_list),
            response_token_ids: None,
        }
    }

    /// The answer a client received; an error message when it has no choice.
    pub fn into_chat(self, requested_model: &str) -> Result<ChatResponse, String> {
        let choice = self.choices.into_iter().next().ok_or("no choices")?;
        let tokens = TokenDetail {
            prompt_token_ids: self.prompt_token_ids.as_ref().and_then(token_ids),
            response_token_ids: choice.token_ids.as_ref().and_then(token_ids).or_else(|| {
                match self.response_token_ids.as_ref()? {
                    Value::Array(per_choice) if per_choice.first().is_some_and(Value::is_array) => {
                        token_ids(&per_choice[0])
                    }
                    flat => token_ids(flat),
                }
            }),
            logprobs: choice.logprobs.and_then(|l| l.content).filter(|c| !c.is_null()),
        };
        let message = choice.message.ok_or("choices[0] has no message")?;
        let tool_calls = chat_tool_calls(message.tool_calls.unwrap_or_default());
        let finish_reason = choice
            .finish_reason
            .unwrap_or_else(|| if tool_calls.is_empty() { "stop" } else { "tool_calls" }.to_owned());
        let usage = self.usage.map_or(Usage::default(), |u| Usage {
            input_tokens: clamp_u32(u.prompt_tokens),
            output_tokens: clamp_u32(u.completion_tokens),
        });
        Ok(ChatResponse {
            content: content_text(message.content.as_ref()),
            tool_calls,
            finish_reason,
            usage,
            model: self
                .model
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| requested_model.to_owned()),
            id: self.id.filter(|id| !id.is_empty()),
            tokens,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Message, Tool};
    use serde_json::json;

    #[test]
    fn request_body_has_the_openai_shape() {
        let mut request = ChatRequest::new(vec![Message::system("be brief"), Message::tool("c1", "4")]);
        request.temperature = Some(0.5);
        request.stop = vec!["END".into()];
        request.tools = vec![Tool {
            name: "calc".into(),
            description: "adds".into(),
            parameters: json!({"type": "object"}),
        }];
        let body = serde_json::to_value(WireRequest::from_chat(&request, "m1")).unwrap();
        assert_eq!(
            body,
            json!({
                "model": "m1",
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "tool", "content": "4", "tool_call_id": "c1"}
                ],
                "temperature": 0.5,
                "stop": ["END"],
                "tools": [{"type": "function", "function": {"name": "calc", "description": "adds", "parameters": {"type": "object"}}}]
            })
        );
        let plain = serde_json::to_value(WireRequest::from_chat(&ChatRequest::new(vec![]), "m")).unwrap();
        assert_eq!(
            plain,
            json!({"model": "m", "messages": []}),
            "empty stop/tools and unset options are omitted"
        );
    }

    #[test]
    fn an_assistant_turn_with_tool_calls_goes_out_and_comes_back_in_the_openai_shape() {
        let call = ToolCall {
            id: "call-1".into(),
            name: "add".into(),
            arguments: r#"{"a":2}"#.into(),
        };
        let request = ChatRequest::new(vec![
            Message::user("2+?"),
            Message::assistant_tool_calls("", vec![call.clone()]),
            Message::tool("call-1", "4"),
        ]);
        let body = serde_json::to_value(WireRequest::from_chat(&request, "m")).unwrap();
        assert_eq!(
            body["messages"][1],
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "call-1", "type": "function", "function": {"name": "add", "arguments": "{\"a\":2}"}}
            ]})
        );
        let back: WireRequest = serde_json::from_value(body).unwrap();
        let back = back.into_chat().unwrap();
        assert_eq!(back.messages[1].tool_calls, vec![call]);
        assert_eq!(back.messages[1].content, "");
        assert_eq!(back.messages, request.messages);
        let with_text = Message::assistant_tool_calls("let me add", vec![]);
        let body = serde_json::to_value(WireRequest::from_chat(&ChatRequest::new(vec![with_text]), "m")).unwrap();
        assert_eq!(
            body["messages"][0],
            json!({"role": "assistant", "content": "let me add"})
        );
    }

    #[test]
    fn vllm_token_ids_and_logprobs_are_read_in_each_shape_and_served_back() {
        let choice = |extra: Value| {
            let mut choice = json!({"message": {"content": "hi"}});
            if let (Some(c), Value::Object(extra)) = (choice.as_object_mut(), extra) {
                c.extend(extra);
            }
            choice
        };
        // vLLM with `return_token_ids`: top-level prompt ids, per-choice completion ids.
        let body = json!({"id": "chatcmpl-7", "prompt_token_ids": [1, 2, 3], "choices": [choice(json!({
            "token_ids": [4, 5], "logprobs": {"content": [{"token": "hi", "logprob": -0.5}]}
        }))]});
        let response = serde_json::from_value::<WireResponse>(body)
            .unwrap()
            .into_chat("m")
            .unwrap();
        assert_eq!(response.id.as_deref(), Some("chatcmpl-7"));
        assert_eq!(response.tokens.prompt_token_ids, Some(vec![1, 2, 3]));
        assert_eq!(response.tokens.response_token_ids, Some(vec![4, 5]));
        assert_eq!(
            response.tokens.logprobs,
            Some(json!([{"token": "hi", "logprob": -0.5}]))
        );
        // Agent-lightning's patched vLLM: one list per choice at the top level.
        let body = json!({"response_token_ids": [[9, 8]], "choices": [choice(json!({}))]});
        let patched = serde_json::from_value::<WireResponse>(body)
            .unwrap()
            .into_chat("m")
            .unwrap();
        assert_eq!(patched.tokens.response_token_ids, Some(vec![9, 8]));
        // Malformed ids read as absent, never as an error; no ids at all is the usual case.
        let body = json!({"prompt_token_ids": [1, -2], "response_token_ids": "x", "choices": [choice(json!({}))]});
        let odd = serde_json::from_value::<WireResponse>(body)
            .unwrap()
            .into_chat("m")
            .unwrap();
        assert!(odd.tokens.is_empty() && odd.id.is_none());
        // What the server sends carries them back.
        let served = WireResponse::from_chat(&response, "chatcmpl-8".into(), 0);
        let again = served.into_chat("m").unwrap();
        assert_eq!(again.tokens, response.tokens);
        assert_eq!(again.id.as_deref(), Some("chatcmpl-8"));
    }

    #[test]
    fn openai_response_is_read_leniently() {
        let body = json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-x",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{"id": "call_a", "type": "function", "function": {"name": "calc", "arguments": "{\"x\":1}"}},
                               {"function": {"name": "obj", "arguments": {"y": 2}}}]
            }}]
        });
        let wire: WireResponse = serde_json::from_value(body).unwrap();
        let response = wire.into_chat("asked").unwrap();
        assert_eq!(response.content, "");
        assert_eq!(response.model, "gpt-x");
        assert_eq!(response.finish_reason, "tool_calls");
        assert_eq!(response.usage, Usage::default(), "missing usage counts as zero");
        assert_eq!(
            response.tool_calls[0],
            ToolCall {
                id: "call_a".into(),
                name: "calc".into(),
                arguments: "{\"x\":1}".into()
            }
        );
        assert_eq!(
            response.tool_calls[1],
            ToolCall {
                id: "call_1".into(),
                name: "obj".into(),
                arguments: "{\"y\":2}".into()
            }
        );

        let empty: WireResponse = serde_json::from_value(json!({"choices": []})).unwrap();
        assert_eq!(empty.into_chat("m"), Err("no choices".to_owned()));
    }

    #[test]
    fn server_side_request_accepts_variants() {
        let wire: WireRequest = serde_json::from_value(json!({
            "messages": [{"role": "developer", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                         {"role": "user", "content": null}],
            "stop": "X", "max_completion_tokens": 7, "tools": null
        }))
        .unwrap();
        let request = wire.into_chat().unwrap();
        assert_eq!(request.messages, vec![Message::system("ab"), Message::user("")]);
        assert_eq!(request.stop, vec!["X".to_owned()]);
        assert_eq!(request.max_tokens, Some(7));
        assert_eq!(request.model, None);

        let bad: WireRequest =
            serde_json::from_value(json!({"messages": [{"role": "robot", "content": "x"}]})).unwrap();
        assert_eq!(
            bad.into_chat(),
            Err("messages[0].role: unknown role `robot`".to_owned())
        );
    }

    #[test]
    fn error_messages_are_found_in_common_shapes() {
        assert_eq!(
            error_message(br#"{"error":{"message":"bad model","type":"x"}}"#).as_deref(),
            Some("bad model")
        );
        assert_eq!(error_message(br#"{"error":"nope"}"#).as_deref(), Some("nope"));
        assert_eq!(error_message(br#"{"detail":"missing"}"#).as_deref(), Some("missing"));
        assert_eq!(error_message(b"<html>"), None);
    }
}
