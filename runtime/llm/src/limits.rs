//! Bounds on one chat request, checked before anything is sent: the total bytes of its messages
//! (and stop sequences), its `max_tokens` (absolute and against what the budget has left) and its
//! tool list (count and bytes). Pure functions over [`ChatRequest`], no I/O, so they can be fuzzed.

use crate::types::{ChatRequest, Message, Tool};

/// How large one request may be. The host fills it from the sandbox policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestLimits {
    /// Total bytes of the messages (content, tool call ids, role names) and stop sequences.
    pub max_request_bytes: u64,
    /// Largest `max_tokens` a request may ask for.
    pub max_output_tokens: u32,
    /// Most tools one request may offer.
    pub max_tools: u32,
    /// Total bytes of the tool definitions (names, descriptions, JSON schemas).
    pub max_tools_bytes: u64,
}

/// Why a request was refused before it was sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestRejected {
    #[error("a chat request needs at least one message")]
    NoMessages,
    #[error("the request is {bytes} bytes of messages, over the limit of {limit} bytes")]
    TooLarge { bytes: u64, limit: u64 },
    #[error("max_tokens {requested} is over the limit of {limit}")]
    MaxTokensTooLarge { requested: u32, limit: u32 },
    #[error("max_tokens {requested} is more than the {remaining} tokens left in the budget")]
    MaxTokensOverBudget { requested: u32, remaining: u64 },
    #[error("the request offers {count} tools, over the limit of {limit}")]
    TooManyTools { count: usize, limit: u32 },
    #[error("the tool definitions are {bytes} bytes, over the limit of {limit} bytes")]
    ToolsTooLarge { bytes: u64, limit: u64 },
}

impl RequestRejected {
    /// Whether the refusal is about the budget (what is left of it) rather than the request alone.
    pub fn is_budget(&self) -> bool {
        matches!(self, RequestRejected::MaxTokensOverBudget { .. })
    }
}

fn len(text: &str) -> u64 {
    u64::try_from(text.len()).unwrap_or(u64::MAX)
}

/// Bytes a message counts for: content, tool call id, role name and its tool calls (id, name
/// and arguments of each).
pub fn message_bytes(message: &Message) -> u64 {
    let calls = message.tool_calls.iter().fold(0u64, |sum, call| {
        sum.saturating_add(len(&call.id))
            .saturating_add(len(&call.name))
            .saturating_add(len(&call.arguments))
    });
    len(&message.content)
        .saturating_add(message.tool_call_id.as_deref().map_or(0, len))
        .saturating_add(len(message.role.as_str()))
        .saturating_add(calls)
}

/// Bytes a tool counts for: name, description and its JSON schema as compact JSON.
pub fn tool_bytes(tool: &Tool) -> u64 {
    let schema = serde_json::to_vec(&tool.parameters).map_or(u64::MAX, |v| u64::try_from(v.len()).unwrap_or(u64::MAX));
    len(&tool.name)
        .saturating_add(len(&tool.description))
        .saturating_add(schema)
}

/// Bytes of the messages and stop sequences of `request`.
pub fn request_bytes(request: &ChatRequest) -> u64 {
    let messages = request
        .messages
        .iter()
        .fold(0u64, |sum, m| sum.saturating_add(message_bytes(m)));
    request.stop.iter().fold(messages, |sum, s| sum.saturating_add(len(s)))
}

/// Checks `request` against `limits`; `remaining_tokens` is what the caller's token budget has
/// left (a `max_tokens` above it could not be paid for).
pub fn validate_request(
    request: &ChatRequest,
    limits: &RequestLimits,
    remaining_tokens: u64,
) -> Result<(), RequestRejected> {
    if request.messages.is_empty() {
        return Err(RequestRejected::NoMessages);
    }
    if let Some(requested) = request.max_tokens {
        if requested > limits.max_output_tokens {
            return Err(RequestRejected::MaxTokensTooLarge {
                requested,
                limit: limits.max_output_tokens,
            });
        }
        if u64::from(requested) > remaining_tokens {
            return Err(RequestRejected::MaxTokensOverBudget {
                requested,
                remaining: remaining_tokens,
            });
        }
    }
    if request.tools.len() > usize::try_from(limits.max_tools).unwrap_or(usize::MAX) {
        return Err(RequestRejected::TooManyTools {
            count: request.tools.len(),
            limit: limits.max_tools,
        });
    }
    let tools = request
        .tools
        .iter()
        .fold(0u64, |sum, t| sum.saturating_add(tool_bytes(t)));
    if tools > limits.max_tools_bytes {
        return Err(RequestRejected::ToolsTooLarge {
            bytes: tools,
            limit: limits.max_tools_bytes,
        });
    }
    let bytes = request_bytes(request);
    if bytes > limits.max_request_bytes {
        return Err(RequestRejected::TooLarge {
            bytes,
            limit: limits.max_request_bytes,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Message;

    const LIMITS: RequestLimits = RequestLimits {
        max_request_bytes: 1000,
        max_output_tokens: 500,
        max_tools: 2,
        max_tools_bytes: 200,
    };

    fn tool(name: &str) -> Tool {
        Tool {
            name: name.into(),
            description: "d".into(),
            parameters: serde_json::json!({"type": "object"}),
        }
    }

    #[test]
    fn a_small_request_passes() {
        let mut request = ChatRequest::new(vec![Message::system("be brief"), Message::user("hi")]);
        request.max_tokens = Some(500);
        request.tools = vec![tool("a"), tool("b")];
        assert_eq!(validate_request(&request, &LIMITS, 500), Ok(()));
    }

    #[test]
    fn no_messages_is_refused() {
        assert_eq!(
            validate_request(&ChatRequest::default(), &LIMITS, 1000),
            Err(RequestRejected::NoMessages)
        );
    }

    #[test]
    fn message_bytes_add_up_to_the_cap() {
        // "user" (4) + 496 bytes = 500 per message: two fit exactly, one more byte does not.
        let at_cap = ChatRequest::new(vec![Message::user("x".repeat(496)), Message::user("y".repeat(496))]);
        assert_eq!(request_bytes(&at_cap), 1000);
        assert_eq!(validate_request(&at_cap, &LIMITS, 0), Ok(()));
        let mut over = at_cap.clone();
        over.stop = vec!["!".into()];
        assert_eq!(
            validate_request(&over, &LIMITS, 0),
            Err(RequestRejected::TooLarge {
                bytes: 1001,
                limit: 1000
            })
        );
        let tool_result = ChatRequest::new(vec![Message::tool("id".repeat(500), "4")]);
        assert!(matches!(
            validate_request(&tool_result, &LIMITS, 0),
            Err(RequestRejected::TooLarge { .. })
        ));
    }

    #[test]
    fn max_tokens_is_bounded_absolutely_and_by_the_budget() {
        let mut request = ChatRequest::new(vec![Message::user("hi")]);
        request.max_tokens = Some(501);
        assert_eq!(
            validate_request(&request, &LIMITS, u64::MAX),
            Err(RequestRejected::MaxTokensTooLarge {
                requested: 501,
                limit: 500
            })
        );
        request.max_tokens = Some(300);
        let over_budget = validate_request(&request, &LIMITS, 299).unwrap_err();
        assert_eq!(
            over_budget,
            RequestRejected::MaxTokensOverBudget {
                requested: 300,
                remaining: 299
            }
        );
        assert!(over_budget.is_budget());
        assert_eq!(validate_request(&request, &LIMITS, 300), Ok(()));
        request.max_tokens = None;
        assert_eq!(
            validate_request(&request, &LIMITS, 0),
            Ok(()),
            "no max_tokens, no claim"
        );
    }

    #[test]
    fn tools_are_bounded_by_count_and_bytes() {
        let mut request = ChatRequest::new(vec![Message::user("hi")]);
        request.tools = vec![tool("a"), tool("b"), tool("c")];
        assert_eq!(
            validate_request(&request, &LIMITS, 0),
            Err(RequestRejected::TooManyTools { count: 3, limit: 2 })
        );
        request.tools = vec![Tool {
            description: "z".repeat(190),
            ..tool("a")
        }];
        // 1 + 190 + `{"type":"object"}` (17) = 208 bytes.
        assert_eq!(tool_bytes(&request.tools[0]), 208);
        assert_eq!(
            validate_request(&request, &LIMITS, 0),
            Err(RequestRejected::ToolsTooLarge { bytes: 208, limit: 200 })
        );
    }
}
