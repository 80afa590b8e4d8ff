//! [`ScriptedBackend`]: an offline, deterministic [`LlmBackend`] whose answers come from a JSON
//! rules file, for demos and tests.
//!
//! # The rules file
//!
//! ```json
//! {
//!   "model": "scripted",
//!   "rules": [
//!     {
//!       "when": [ {"role": "system", "contains": "step by step"},
//!                 {"role": "user", "matches": "What is (\\d+) \\+ (\\d+)"} ],
//!       "reply": "{1} plus {2}: let me compute.",
//!       "finish_reason": "stop",
//!       "tool_calls": [ {"id": "call-1", "name": "calc", "arguments": {"x": 1}} ],
//!       "usage": {"input_tokens": 12, "output_tokens": 1}
//!     }
//!   ],
//!   "fallback": {"reply": "I do not know."}
//! }
//! ```
//!
//! - `rules` are tried in order; the first whose every `when` condition holds answers (`when`
//!   empty or absent: always). A condition holds when some message, of `role` if given (`system`,
//!   `user`, `assistant`, `tool`) — only the conversation's last message when `"last": true` —
//!   contains the substring `contains` and matches the regex `matches` (both optional; with
//!   neither, such a message just has to exist). Messages are searched latest first.
//! - `reply` may use `{1}`, `{2}`, ... for the capture groups of the rule's last `matches`
//!   condition, `{0}` for the whole match and `{name}` for a named group; braces naming no group
//!   are left as they are. The same captures fill each tool call's `id`, `name` and every string
//!   inside its `arguments` (nested ones too; object keys, numbers and booleans stay as written):
//!   they are substituted into the parsed strings, so the arguments text stays valid JSON whatever
//!   a capture holds (quotes and backslashes come out escaped). The `fallback` has no captures.
//! - `finish_reason`: default `"stop"`, or `"tool_calls"` when `tool_calls` is non-empty.
//!   `tool_calls[].arguments` is any JSON, answered as its text; `id` defaults to `call-N`.
//! - `usage`: each missing count is computed: `input_tokens` = whitespace-separated words over
//!   all message contents, `output_tokens` = words of the reply.
//! - `model` (default `"scripted"`) is reported unless the request names a model.
//! - No rule matches and no `fallback`: [`LlmError::InvalidRequest`]. Unknown keys are errors.

pub mod rules;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::excerpt;
use crate::{ChatRequest, ChatResponse, LlmBackend, LlmError};
use rules::CompiledRules;
pub use rules::{ScriptedCondition, ScriptedReply, ScriptedRule, ScriptedRules, ScriptedToolCall, ScriptedUsage};

/// An [`LlmBackend`] answering from [`ScriptedRules`]. Thread-safe; counts its answers.
#[derive(Debug)]
pub struct ScriptedBackend {
    rules: CompiledRules,
    /// Where the rules came from, for [`LlmBackend::describe`].
    source: String,
    calls: AtomicU64,
}

impl ScriptedBackend {
    /// Loads a rules file; errors name the file and the problem (line and column for bad JSON,
    /// the rule for a bad regex).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, LlmError> {
        let path = path.as_ref();
        let label = format!("scripted rules file {}", path.display());
        let text = std::fs::read_to_string(path)
            .map_err(|e| LlmError::InvalidRequest(format!("{label}: cannot read it: {e}")))?;
        Self::parse(&text, &label, path.display().to_string())
    }

    /// Rules given as JSON text (the file format).
    pub fn from_json_str(json: &str) -> Result<Self, LlmError> {
        Self::parse(json, "scripted rules", "(inline rules)".to_owned())
    }

    /// Rules already parsed; fails only on a bad regex.
    pub fn from_rules(rules: ScriptedRules) -> Result<Self, LlmError> {
        Self::build(rules, "scripted rules", "(inline rules)".to_owned())
    }

    fn parse(json: &str, label: &str, source: String) -> Result<Self, LlmError> {
        let rules: ScriptedRules = serde_json::from_str(json).map_err(|e| {
            let what = match e.classify() {
                serde_json::error::Category::Data => "invalid rules",
                _ => "bad JSON",
            };
            LlmError::InvalidRequest(format!("{label}: {what}: {e}"))
        })?;
        Self::build(rules, label, source)
    }

    fn build(rules: ScriptedRules, label: &str, source: String) -> Result<Self, LlmError> {
        let rules = CompiledRules::compile(rules).map_err(|e| LlmError::InvalidRequest(format!("{label}: {e}")))?;
        Ok(ScriptedBackend {
            rules,
            source,
            calls: AtomicU64::new(0),
        })
    }

    /// How many calls this backend has answered (errors not counted).
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }
}

#[async_trait::async_trait]
impl LlmBackend for ScriptedBackend {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let rendered = self.rules.respond(&request.messages).ok_or_else(|| {
            let last = request
                .messages
                .last()
                .map_or_else(|| "(no messages)".to_owned(), |m| excerpt(&m.content, 120));
            LlmError::InvalidRequest(format!("no scripted rule matches the last message: {last}"))
        })?;
        self.calls.fetch_add(1, Ordering::Relaxed);
        Ok(ChatResponse {
            content: rendered.content,
            tool_calls: rendered.tool_calls,
            finish_reason: rendered.finish_reason,
            usage: rendered.usage,
            model: request.model.clone().unwrap_or_else(|| self.rules.model.clone()),
            id: None,
            tokens: rendered.tokens,
        })
    }

    fn default_model(&self) -> &str {
        &self.rules.model
    }

    fn describe(&self) -> String {
        format!("scripted {}", self.source)
    }
}
