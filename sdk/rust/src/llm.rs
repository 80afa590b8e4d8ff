//! Chat completions through the host: the [`Llm`] handle and builders for the WIT request types.
//! The host holds the keys, picks the backend, enforces the attempt's budget and traces each call;
//! the guest only describes the conversation.

use crate::bindings::agl::agent::llm as wit;
use crate::{ChatRequest, ChatResponse, Error, LlmError, Message, Result, Role, Tool, ToolCall};

/// The host's LLM, as seen by one attempt. Get it with [`Ctx::llm`](crate::Ctx::llm).
#[derive(Debug, Clone, Copy, Default)]
pub struct Llm {
    _private: (),
}

impl Llm {
    pub(crate) fn new() -> Self {
        Llm { _private: () }
    }

    /// Sends `request`; the error says why the host refused or failed (budget, model, backend...).
    /// `?` turns it into the SDK's [`Error`] with a readable message.
    pub fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        wit::chat(&request)
    }

    /// One user message in, the reply's text out.
    pub fn ask(&self, prompt: impl Into<String>) -> Result<String> {
        self.chat(ChatRequest::user(prompt))
            .map(|reply| reply.content)
            .map_err(Error::from)
    }
}

impl Message {
    /// A message with `role` and `content`.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
            tool_call_id: None,
            tool_calls: Vec::new(),
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message::new(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message::new(Role::User, content)
    }

    /// An assistant message (an earlier model turn).
    pub fn assistant(content: impl Into<String>) -> Self {
        Message::new(Role::Assistant, content)
    }

    /// The model's turn as a message, tool calls included: push it before the tools' results so
    /// the next request holds the whole tool-calling conversation.
    pub fn from_reply(reply: &ChatResponse) -> Self {
        Message {
            tool_calls: reply.tool_calls.clone(),
            ..Message::assistant(reply.content.clone())
        }
    }

    /// An assistant message that called tools (`content` may be empty).
    pub fn assistant_tool_calls(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Message {
            tool_calls,
            ..Message::assistant(content)
        }
    }

    /// A tool result answering the tool call `tool_call_id`.
    pub fn tool_result(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Message {
            tool_call_id: Some(tool_call_id.into()),
            ..Message::new(Role::Tool, content)
        }
    }
}

impl Tool {
    /// A tool the model may call; `parameters_json` is the JSON schema of its arguments.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters_json: impl Into<String>) -> Self {
        Tool {
            name: name.into(),
            description: description.into(),
            parameters_json: parameters_json.into(),
        }
    }
}

impl Default for ChatRequest {
    fn default() -> Self {
        ChatRequest::new()
    }
}

impl ChatRequest {
    /// An empty request: no messages, the host's model and sampling defaults.
    pub fn new() -> Self {
        ChatRequest {
            messages: Vec::new(),
            model: None,
            temperature: None,
            max_tokens: None,
            stop: Vec::new(),
            tools: Vec::new(),
        }
    }

    /// A request of one user message.
    pub fn user(content: impl Into<String>) -> Self {
        ChatRequest::new().with_user(content)
    }

    /// A request of these messages.
    pub fn from_messages(messages: impl IntoIterator<Item = Message>) -> Self {
        ChatRequest {
            messages: messages.into_iter().collect(),
            ..ChatRequest::new()
        }
    }

    /// Adds a system message after any system messages already at the front, before the rest of
    /// the conversation (so `ChatRequest::user(q).with_system(s)` asks `[s, q]`).
    pub fn with_system(mut self, content: impl Into<String>) -> Self {
        let at = self.messages.iter().take_while(|m| m.role == Role::System).count();
        self.messages.insert(at, Message::system(content));
        self
    }

    /// Appends a user message.
    pub fn with_user(self, content: impl Into<String>) -> Self {
        self.with_message(Message::user(content))
    }

    /// Appends an assistant message (an earlier model turn).
    pub fn with_assistant(self, content: impl Into<String>) -> Self {
        self.with_message(Message::assistant(content))
    }

    /// Appends the model's turn `reply` (its text and tool calls), before the tools' results.
    pub fn with_reply(self, reply: &ChatResponse) -> Self {
        self.with_message(Message::from_reply(reply))
    }

    /// Appends a tool result for the tool call `tool_call_id`.
    pub fn with_tool_result(self, tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        self.with_message(Message::tool_result(tool_call_id, content))
    }

    /// Appends any message.
    pub fn with_message(mut self, message: Message) -> Self {
        self.messages.push(message);
        self
    }

    /// Asks for this model instead of the host's default (the host may refuse it).
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Sets the sampling temperature.
    pub fn with_temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Caps the reply's length in tokens.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Adds a stop sequence.
    pub fn with_stop(mut self, stop: impl Into<String>) -> Self {
        self.stop.push(stop.into());
        self
    }

    /// Offers a tool to the model.
    pub fn with_tool(mut self, tool: Tool) -> Self {
        self.tools.push(tool);
        self
    }
}

impl ChatResponse {
    /// Whether the model stopped to call tools (its `tool_calls` are then non-empty).
    pub fn wants_tools(&self) -> bool {
        !self.tool_calls.is_empty()
    }
}

/// A tool call has its arguments both ways, as in every SDK: the field `arguments_json` is the JSON
/// text exactly as the model wrote it; [`ToolCall::arguments`] is that text parsed.
impl ToolCall {
    /// A tool call (to put in an assistant message); `arguments_json` is the arguments' JSON text.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments_json: impl Into<String>) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments_json: arguments_json.into(),
        }
    }

    /// The arguments, parsed from `arguments_json` into `T` (`serde_json::Value` for any JSON);
    /// `Err` when the model wrote invalid JSON or JSON that does not fit `T`. `?` turns the error
    /// into the SDK's [`Error`].
    pub fn arguments<T: serde::de::DeserializeOwned>(&self) -> serde_json::Result<T> {
        serde_json::from_str(&self.arguments_json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roles(request: &ChatRequest) -> Vec<Role> {
        request.messages.iter().map(|m| m.role).collect()
    }

    #[test]
    fn user_builds_one_user_message_with_host_defaults() {
        let request = ChatRequest::user("2+2?");
        assert_eq!(roles(&request), [Role::User]);
        assert_eq!(request.messages[0].content, "2+2?");
        assert!(request.model.is_none() && request.temperature.is_none() && request.max_tokens.is_none());
        assert!(request.stop.is_empty() && request.tools.is_empty());
    }

    #[test]
    fn system_messages_stay_at_the_front() {
        let request = ChatRequest::user("q1")
            .with_system("s1")
            .with_assistant("a1")
            .with_system("s2")
            .with_user("q2")
            .with_tool_result("call-1", "42");
        assert_eq!(
            roles(&request),
            [
                Role::System,
                Role::System,
                Role::User,
                Role::Assistant,
                Role::User,
                Role::Tool
            ]
        );
        let contents: Vec<&str> = request.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(contents, ["s1", "s2", "q1", "a1", "q2", "42"]);
        assert_eq!(request.messages[5].tool_call_id.as_deref(), Some("call-1"));
    }

    #[test]
    fn parameters_are_set() {
        let request = ChatRequest::from_messages([Message::user("hi")])
            .with_model("small")
            .with_temperature(0.5)
            .with_max_tokens(64)
            .with_stop("\n\n")
            .with_stop("END")
            .with_tool(Tool::new("add", "adds two numbers", r#"{"type":"object"}"#));
        assert_eq!(request.model.as_deref(), Some("small"));
        assert_eq!(request.temperature, Some(0.5));
        assert_eq!(request.max_tokens, Some(64));
        assert_eq!(request.stop, ["\n\n", "END"]);
        assert_eq!(request.tools[0].name, "add");
        assert_eq!(request.tools[0].parameters_json, r#"{"type":"object"}"#);
    }

    #[test]
    fn tool_call_arguments_are_the_text_and_parsed() {
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct Add {
            a: i64,
            b: i64,
        }
        let call = ToolCall::new("call-1", "add", r#"{"a": 2, "b": 3}"#);
        assert_eq!(
            call.arguments_json, r#"{"a": 2, "b": 3}"#,
            "the text as the model wrote it"
        );
        assert_eq!(call.arguments::<Add>().unwrap(), Add { a: 2, b: 3 });
        let any: serde_json::Value = call.arguments().unwrap();
        assert_eq!(any, serde_json::json!({"a": 2, "b": 3}));
        assert!(call.arguments::<Add>().is_ok() && call.arguments::<Vec<i64>>().is_err());
        let broken = ToolCall::new("call-2", "add", "{\"a\": 2,");
        let err: Error = broken.arguments::<serde_json::Value>().unwrap_err().into();
        assert!(err.message().contains("EOF"), "{}", err.message());
    }

    #[test]
    fn default_is_empty() {
        assert!(ChatRequest::default().messages.is_empty());
    }
}
