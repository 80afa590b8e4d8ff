//! The scripted backend's rules file: its serde types ([`ScriptedRules`] and parts, exactly the
//! JSON format) and their compiled form, which picks the rule for a conversation and renders it.

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Message, Role, TokenDetail, ToolCall, Usage};

/// A whole rules file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedRules {
    /// Reported as the answering model when a request names none; default `"scripted"`.
    #[serde(default = "default_model")]
    pub model: String,
    /// Tried in order; the first whose conditions all hold answers.
    #[serde(default)]
    pub rules: Vec<ScriptedRule>,
    /// The answer when no rule matches; without one, no match is an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<ScriptedReply>,
}

impl Default for ScriptedRules {
    fn default() -> Self {
        ScriptedRules {
            model: default_model(),
            rules: Vec::new(),
            fallback: None,
        }
    }
}

/// One rule: conditions and the answer they lead to.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedRule {
    /// All must hold; empty means the rule always matches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub when: Vec<ScriptedCondition>,
    /// The answer text; `{0}`, `{1}`, ... (and `{name}`) are the captures of the rule's last `matches`.
    #[serde(default)]
    pub reply: String,
    /// Default `"stop"`, or `"tool_calls"` when there are tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptedToolCall>,
    /// Counts to report; a missing count is computed (whitespace-separated words).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<ScriptedUsage>,
    /// Token ids and logprobs to report, as an RL-ready server (vLLM) would.
    #[serde(default, skip_serializing_if = "TokenDetail::is_empty")]
    pub tokens: TokenDetail,
}

/// The `fallback` answer: a rule without conditions (and without captures to substitute).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedReply {
    #[serde(default)]
    pub reply: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptedToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<ScriptedUsage>,
    #[serde(default, skip_serializing_if = "TokenDetail::is_empty")]
    pub tokens: TokenDetail,
}

/// Holds when some message (of `role` if given; only the conversation's last message when
/// `last`) contains `contains` and matches the regex `matches` (each optional).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCondition {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub last: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contains: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matches: Option<String>,
}

/// A tool call to answer with; `arguments` is any JSON, sent as its text. A rule's captures fill
/// `id`, `name` and the strings inside `arguments` (not object keys), as in `reply`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedToolCall {
    /// Default `call-1`, `call-2`, ... by position.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub name: String,
    #[serde(default)]
    pub arguments: Value,
}

/// Token counts to report; each missing one is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedUsage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u32>,
}

fn default_model() -> String {
    "scripted".to_owned()
}

/// The rules, regexes compiled and tool-call arguments rendered, ready to answer.
#[derive(Debug)]
pub(crate) struct CompiledRules {
    pub model: String,
    rules: Vec<CompiledRule>,
    fallback: Option<Answer>,
}

#[derive(Debug)]
struct CompiledRule {
    conditions: Vec<CompiledCondition>,
    answer: Answer,
}

#[derive(Debug)]
struct CompiledCondition {
    role: Option<Role>,
    last: bool,
    contains: Option<String>,
    matches: Option<Regex>,
}

#[derive(Debug)]
struct Answer {
    reply: String,
    finish_reason: String,
    /// Ids defaulted; `arguments` kept as JSON so that captures go into its strings at render.
    tool_calls: Vec<(String, String, Value)>,
    usage: ScriptedUsage,
    tokens: TokenDetail,
}

/// What a matched rule (or the fallback) says for one conversation.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rendered {
    pub content: String,
    pub finish_reason: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    pub tokens: TokenDetail,
}

/// The groups of one regex match: by index (`None` = did not participate) and by name.
#[derive(Debug, Default)]
struct Groups {
    by_index: Vec<Option<String>>,
    by_name: Vec<(String, usize)>,
}

impl Groups {
    fn of(regex: &Regex, captures: &regex::Captures<'_>) -> Self {
        Groups {
            by_index: captures.iter().map(|g| g.map(|m| m.as_str().to_owned())).collect(),
            by_name: regex
                .capture_names()
                .enumerate()
                .filter_map(|(i, name)| name.map(|n| (n.to_owned(), i)))
                .collect(),
        }
    }

    /// The text of group `key` (a number or a name); `None` when there is no such group.
    fn get(&self, key: &str) -> Option<&str> {
        let index = match key.parse::<usize>() {
            Ok(index) => index,
            Err(_) => self.by_name.iter().find(|(name, _)| name == key)?.1,
        };
        self.by_index.get(index).map(|g| g.as_deref().unwrap_or(""))
    }
}

/// `template` with each `{key}` naming an existing group replaced by its text; other braces stay.
fn substitute(template: &str, groups: &Groups) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after
            .find('}')
            .and_then(|close| groups.get(&after[..close]).map(|text| (close, text)))
        {
            Some((close, text)) => {
                out.push_str(text);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// [`substitute`] in every string of `value`, however nested; object keys stay as written. The
/// captures land in parsed strings, so the JSON text rendered afterwards escapes them (quotes,
/// backslashes, newlines) and stays valid.
fn substitute_strings(value: &mut Value, groups: &Groups) {
    match value {
        Value::String(text) => *text = substitute(text, groups),
        Value::Array(items) => items.iter_mut().for_each(|item| substitute_strings(item, groups)),
        Value::Object(map) => map.values_mut().for_each(|item| substitute_strings(item, groups)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

fn words(text: &str) -> u32 {
    u32::try_from(text.split_whitespace().count()).unwrap_or(u32::MAX)
}

impl CompiledCondition {
    /// `None` when the condition fails; else the groups of its regex (empty without one).
    fn check(&self, messages: &[Message]) -> Option<Groups> {
        let candidates: &[Message] = if self.last {
            messages.last().map(std::slice::from_ref).unwrap_or(&[])
        } else {
            messages
        };
        // Latest first, so that captures come from the most recent matching message.
        candidates.iter().rev().find_map(|message| {
            if self.role.is_some_and(|role| role != message.role) {
                return None;
            }
            if self
                .contains
                .as_deref()
                .is_some_and(|needle| !message.content.contains(needle))
            {
                return None;
            }
            match &self.matches {
                None => Some(Groups::default()),
                Some(regex) => regex
                    .captures(&message.content)
                    .map(|captures| Groups::of(regex, &captures)),
            }
        })
    }
}

impl Answer {
    fn compile(
        reply: String,
        finish_reason: Option<String>,
        tool_calls: Vec<ScriptedToolCall>,
        usage: Option<ScriptedUsage>,
        tokens: TokenDetail,
    ) -> Self {
        let tool_calls: Vec<(String, String, Value)> = tool_calls
            .into_iter()
            .enumerate()
            .map(|(i, call)| {
                let id = call.id.unwrap_or_else(|| format!("call-{}", i + 1));
                let arguments = match call.arguments {
                    Value::Null => Value::Object(Default::default()),
                    other => other,
                };
                (id, call.name, arguments)
            })
            .collect();
        let finish_reason =
            finish_reason.unwrap_or_else(|| if tool_calls.is_empty() { "stop" } else { "tool_calls" }.to_owned());
        Answer {
            reply,
            finish_reason,
            tool_calls,
            usage: usage.unwrap_or_default(),
            tokens,
        }
    }

    fn render(&self, messages: &[Message], groups: Option<&Groups>) -> Rendered {
        let content = match groups {
            Some(groups) => substitute(&self.reply, groups),
            None => self.reply.clone(),
        };
        let usage = Usage {
            input_tokens: self
                .usage
                .input_tokens
                .unwrap_or_else(|| messages.iter().map(|m| words(&m.content)).fold(0, u32::saturating_add)),
            output_tokens: self.usage.output_tokens.unwrap_or_else(|| words(&content)),
        };
        Rendered {
            content,
            finish_reason: self.finish_reason.clone(),
            tool_calls: self
                .tool_calls
                .iter()
                .map(|(id, name, arguments)| match groups {
                    Some(groups) => {
                        let mut arguments = arguments.clone();
                        substitute_strings(&mut arguments, groups);
                        ToolCall {
                            id: substitute(id, groups),
                            name: substitute(name, groups),
                            arguments: arguments.to_string(),
                        }
                    }
                    None => ToolCall {
                        id: id.clone(),
                        name: name.clone(),
                        arguments: arguments.to_string(),
                    },
                })
                .collect(),
            usage,
            tokens: self.tokens.clone(),
        }
    }
}

impl CompiledRules {
    /// Compiles every regex; an error names the offending place, e.g. `rules[2].when[0].matches`.
    pub fn compile(rules: ScriptedRules) -> Result<Self, String> {
        let compiled = rules
            .rules
            .into_iter()
            .enumerate()
            .map(|(r, rule)| {
                let conditions = rule
                    .when
                    .into_iter()
                    .enumerate()
                    .map(|(c, cond)| {
                        let matches = cond
                            .matches
                            .map(|pattern| {
                                Regex::new(&pattern).map_err(|e| {
                                    format!("rules[{r}].when[{c}].matches: invalid regex `{pattern}`: {e}")
                                })
                            })
                            .transpose()?;
                        Ok(CompiledCondition {
                            role: cond.role,
                            last: cond.last,
                            contains: cond.contains,
                            matches,
                        })
                    })
                    .collect::<Result<Vec<_>, String>>()?;
                let answer = Answer::compile(rule.reply, rule.finish_reason, rule.tool_calls, rule.usage, rule.tokens);
                Ok(CompiledRule { conditions, answer })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let fallback = rules
            .fallback
            .map(|f| Answer::compile(f.reply, f.finish_reason, f.tool_calls, f.usage, f.tokens));
        Ok(CompiledRules {
            model: rules.model,
            rules: compiled,
            fallback,
        })
    }

    /// The answer of the first rule whose conditions all hold, else the fallback, else `None`.
    pub fn respond(&self, messages: &[Message]) -> Option<Rendered> {
        for rule in &self.rules {
            let mut groups = None;
            let mut all_hold = true;
            for condition in &rule.conditions {
                match condition.check(messages) {
                    Some(found) => {
                        if condition.matches.is_some() {
                            groups = Some(found);
                        }
                    }
                    None => {
                        all_hold = false;
                        break;
                    }
                }
            }
            if all_hold {
                return Some(rule.answer.render(messages, groups.as_ref()));
            }
        }
        self.fallback.as_ref().map(|answer| answer.render(messages, None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups(pattern: &str, text: &str) -> Groups {
        let regex = Regex::new(pattern).unwrap();
        let captures = regex.captures(text).unwrap();
        Groups::of(&regex, &captures)
    }

    #[test]
    fn substitution_by_index_and_name_leaves_unknown_braces() {
        let g = groups(r"(\d+) \+ (?<b>\d+)(x)?", "2 + 3");
        assert_eq!(
            substitute("{1}+{b}={0}|{2}|{3}|{4}|{c}|{}|{", &g),
            "2+3=2 + 3|3||{4}|{c}|{}|{"
        );
        assert_eq!(substitute(r#"{"json": {1}}"#, &g), r#"{"json": 2}"#);
        assert_eq!(substitute("no braces", &Groups::default()), "no braces");
        assert_eq!(substitute("{0}", &Groups::default()), "{0}");
    }

    #[test]
    fn words_counts_whitespace_separated() {
        assert_eq!(words(""), 0);
        assert_eq!(words("  one\ttwo\nthree "), 3);
    }
}
