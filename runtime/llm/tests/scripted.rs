//! The scripted backend through its public API: rule order, conditions, captures, usage,
//! fallback, and the errors of bad rules files.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test: a failed step panics and fails it"
)]

use std::path::PathBuf;

use agl_llm::{
    ChatRequest, LlmBackend, LlmError, Message, ScriptedBackend, ScriptedRule, ScriptedRules, ToolCall, Usage,
};

fn backend(json: &str) -> ScriptedBackend {
    match ScriptedBackend::from_json_str(json) {
        Ok(backend) => backend,
        Err(e) => panic!("rules should load: {e}"),
    }
}

async fn ask(backend: &ScriptedBackend, messages: Vec<Message>) -> Result<agl_llm::ChatResponse, LlmError> {
    backend.chat(&ChatRequest::new(messages)).await
}

async fn reply(backend: &ScriptedBackend, messages: Vec<Message>) -> String {
    ask(backend, messages)
        .await
        .map(|r| r.content)
        .unwrap_or_else(|e| format!("ERROR {e}"))
}

/// A file under the system temp dir, unique to this test process and name.
fn temp_file(name: &str, text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("agl-llm-test-{}-{name}", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test]
async fn rules_are_tried_in_order_and_the_first_match_answers() {
    let b = backend(
        r#"{"rules": [
            {"when": [{"contains": "apple"}], "reply": "first"},
            {"when": [{"contains": "apple"}], "reply": "second"},
            {"when": [{"contains": "pear"}], "reply": "third"},
            {"reply": "catch-all"}
        ]}"#,
    );
    assert_eq!(reply(&b, vec![Message::user("an apple and a pear")]).await, "first");
    assert_eq!(reply(&b, vec![Message::user("a pear")]).await, "third");
    assert_eq!(
        reply(&b, vec![Message::user("a plum")]).await,
        "catch-all",
        "a rule without `when` always matches"
    );
}

#[tokio::test]
async fn role_and_last_restrict_which_messages_count() {
    let b = backend(
        r#"{"rules": [
            {"when": [{"role": "system", "contains": "step by step"}, {"role": "user", "contains": "2 + 3"}], "reply": "both"},
            {"when": [{"role": "assistant", "last": true}], "reply": "assistant spoke last"},
            {"when": [{"role": "user", "contains": "hello", "last": true}], "reply": "greeting last"},
            {"when": [{"role": "tool"}], "reply": "a tool answered"}
        ],
        "fallback": {"reply": "fallback"}}"#,
    );
    let sys = || Message::system("think step by step");
    assert_eq!(reply(&b, vec![sys(), Message::user("what is 2 + 3")]).await, "both");
    // The substring in the wrong role does not count.
    assert_eq!(
        reply(&b, vec![Message::system("what is 2 + 3, step by step")]).await,
        "fallback"
    );
    assert_eq!(
        reply(&b, vec![Message::user("hi"), Message::assistant("yes")]).await,
        "assistant spoke last"
    );
    assert_eq!(
        reply(&b, vec![Message::user("hello"), Message::user("bye")]).await,
        "fallback",
        "`last` is the last message"
    );
    assert_eq!(
        reply(&b, vec![Message::user("bye"), Message::user("hello there")]).await,
        "greeting last"
    );
    assert_eq!(
        reply(&b, vec![Message::tool("c1", "42"), Message::user("so?")]).await,
        "a tool answered"
    );
}

#[tokio::test]
async fn contains_and_matches_must_hold_in_the_same_message() {
    let b = backend(
        r#"{"rules": [{"when": [{"contains": "alpha", "matches": "\\d{3}"}], "reply": "yes"}], "fallback": {"reply": "no"}}"#,
    );
    assert_eq!(reply(&b, vec![Message::user("alpha 123")]).await, "yes");
    assert_eq!(
        reply(&b, vec![Message::user("alpha"), Message::user("123")]).await,
        "no"
    );
}

#[tokio::test]
async fn captures_of_the_last_matches_condition_are_substituted() {
    let b = backend(
        r#"{"rules": [
            {"when": [{"role": "system", "matches": "mode=(\\w+)"}, {"role": "user", "matches": "What is (\\d+) \\+ (?<b>\\d+)"}],
             "reply": "{1} plus {b} ({2}); whole: '{0}'; unknown {3} {x} stays"}
        ]}"#,
    );
    let messages = vec![Message::system("mode=fast"), Message::user("What is 2 + 3?")];
    assert_eq!(
        reply(&b, messages).await,
        "2 plus 3 (3); whole: 'What is 2 + 3'; unknown {3} {x} stays"
    );

    // The latest matching message provides the captures.
    let b = backend(r#"{"rules": [{"when": [{"role": "user", "matches": "n=(\\d+)"}], "reply": "{1}"}]}"#);
    assert_eq!(
        reply(
            &b,
            vec![Message::user("n=1"), Message::assistant("ok"), Message::user("n=2")]
        )
        .await,
        "2"
    );
}

#[tokio::test]
async fn usage_defaults_to_word_counts_and_partial_usage_is_completed() {
    let b = backend(
        r#"{"rules": [
            {"when": [{"contains": "explicit"}], "reply": "a b", "usage": {"input_tokens": 12, "output_tokens": 1}},
            {"when": [{"contains": "partial"}], "reply": "a b c", "usage": {"input_tokens": 100}},
            {"reply": "three word reply"}
        ]}"#,
    );
    let usage = |messages| async { ask(&b, messages).await.unwrap().usage };
    assert_eq!(
        usage(vec![Message::system("one two"), Message::user("three  four\nfive")]).await,
        Usage {
            input_tokens: 5,
            output_tokens: 3
        }
    );
    assert_eq!(
        usage(vec![Message::user("explicit")]).await,
        Usage {
            input_tokens: 12,
            output_tokens: 1
        }
    );
    assert_eq!(
        usage(vec![Message::user("partial x")]).await,
        Usage {
            input_tokens: 100,
            output_tokens: 3
        }
    );
}

#[tokio::test]
async fn tool_calls_finish_reasons_and_model() {
    let b = backend(
        r#"{"model": "rules-v1", "rules": [
            {"when": [{"contains": "calc"}], "tool_calls": [
                {"id": "call-7", "name": "calc", "arguments": {"x": 1, "op": "add"}},
                {"name": "noop"}
            ]},
            {"when": [{"contains": "long"}], "reply": "cut", "finish_reason": "length"}
        ]}"#,
    );
    let response = ask(&b, vec![Message::user("please calc")]).await.unwrap();
    assert_eq!(response.content, "");
    assert_eq!(response.finish_reason, "tool_calls");
    assert_eq!(
        response.tool_calls,
        vec![
            ToolCall {
                id: "call-7".into(),
                name: "calc".into(),
                arguments: r#"{"x":1,"op":"add"}"#.into()
            },
            ToolCall {
                id: "call-2".into(),
                name: "noop".into(),
                arguments: "{}".into()
            },
        ]
    );
    assert_eq!(response.model, "rules-v1");
    assert_eq!(b.default_model(), "rules-v1");

    let mut request = ChatRequest::new(vec![Message::user("a long one")]);
    request.model = Some("asked-for".into());
    let response = b.chat(&request).await.unwrap();
    assert_eq!(
        (response.finish_reason.as_str(), response.model.as_str()),
        ("length", "asked-for")
    );
    assert!(response.tool_calls.is_empty());

    assert_eq!(backend(r#"{"rules": []}"#).default_model(), "scripted");
}

#[tokio::test]
async fn captures_fill_tool_call_names_ids_and_argument_strings_as_valid_json() {
    let b = backend(
        r#"{"rules": [
            {"when": [{"role": "user", "matches": "(?<tool>\\w+)\\((.*)\\) as (\\w+)"}], "tool_calls": [
                {"id": "call-{3}", "name": "{tool}", "arguments": {
                    "expr": "{2}", "whole": "<{0}>", "n": 1, "list": ["{3}", {"deep": "{2}!"}], "{1}": "key kept", "left": "{9}"
                }},
                {"name": "echo", "arguments": "{2}"}
            ]}
        ], "fallback": {"tool_calls": [{"name": "f", "arguments": {"a": "{1}"}}]}}"#,
    );
    // The capture holds quotes, a backslash and a tab: it must be escaped inside the JSON strings.
    let capture = "say \"hi\" \\ \t";
    let response = ask(&b, vec![Message::user(format!("calc({capture}) as c9"))])
        .await
        .unwrap();
    assert_eq!(response.finish_reason, "tool_calls");
    let calls = &response.tool_calls;
    assert_eq!((calls[0].id.as_str(), calls[0].name.as_str()), ("call-c9", "calc"));
    let args: serde_json::Value = serde_json::from_str(&calls[0].arguments).expect("arguments stay valid JSON");
    assert_eq!(
        args,
        serde_json::json!({
            "expr": capture, "whole": format!("<calc({capture}) as c9>"), "n": 1,
            "list": ["c9", {"deep": format!("{capture}!")}], "{1}": "key kept", "left": "{9}"
        })
    );
    assert_eq!((calls[1].id.as_str(), calls[1].name.as_str()), ("call-2", "echo"));
    let text: serde_json::Value = serde_json::from_str(&calls[1].arguments).unwrap();
    assert_eq!(text, serde_json::Value::String(capture.into()));

    // The fallback has no captures: its braces stay as written.
    let response = ask(&b, vec![Message::user("nothing")]).await.unwrap();
    assert_eq!(response.tool_calls[0].arguments, r#"{"a":"{1}"}"#);
}

#[tokio::test]
async fn fallback_answers_when_nothing_matches_and_no_fallback_is_an_error() {
    let with =
        backend(r#"{"rules": [{"when": [{"contains": "x"}], "reply": "x"}], "fallback": {"reply": "I do not know."}}"#);
    let response = ask(&with, vec![Message::user("y")]).await.unwrap();
    assert_eq!(
        (response.content.as_str(), response.finish_reason.as_str()),
        ("I do not know.", "stop")
    );

    let without = backend(r#"{"rules": [{"when": [{"contains": "x"}], "reply": "x"}]}"#);
    let long = "why ".repeat(100);
    match ask(&without, vec![Message::user("first"), Message::user(long)]).await {
        Err(LlmError::InvalidRequest(message)) => {
            assert!(
                message.starts_with("no scripted rule matches the last message: why why"),
                "{message}"
            );
            assert!(message.len() < 200, "the message is an excerpt: {message}");
        }
        other => panic!("expected InvalidRequest, got {other:?}"),
    }
    assert_eq!(
        ask(&without, vec![]).await,
        Err(LlmError::InvalidRequest(
            "no scripted rule matches the last message: (no messages)".into()
        ))
    );
    assert_eq!(without.calls(), 0, "errors are not counted");
}

#[tokio::test]
async fn calls_are_counted_across_threads() {
    let b = std::sync::Arc::new(backend(r#"{"fallback": {"reply": "ok"}}"#));
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let b = b.clone();
            tokio::spawn(async move { b.chat(&ChatRequest::new(vec![Message::user("hi")])).await })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap().unwrap().content, "ok");
    }
    assert_eq!(b.calls(), 8);
}

#[tokio::test]
async fn from_file_and_from_rules() {
    let path = temp_file(
        "good.json",
        r#"{"rules": [{"when": [{"role": "user"}], "reply": "from file"}]}"#,
    );
    let b = ScriptedBackend::from_file(&path).unwrap();
    assert_eq!(b.describe(), format!("scripted {}", path.display()));
    assert_eq!(reply(&b, vec![Message::user("hi")]).await, "from file");
    std::fs::remove_file(&path).unwrap();

    let rules = ScriptedRules {
        rules: vec![ScriptedRule {
            reply: "built".into(),
            ..ScriptedRule::default()
        }],
        ..ScriptedRules::default()
    };
    let b = ScriptedBackend::from_rules(rules).unwrap();
    assert_eq!(reply(&b, vec![]).await, "built");
    assert_eq!(b.describe(), "scripted (inline rules)");
}

fn load_error(result: Result<ScriptedBackend, LlmError>) -> String {
    match result {
        Err(LlmError::InvalidRequest(message)) => message,
        Err(other) => panic!("expected InvalidRequest, got {other:?}"),
        Ok(_) => panic!("expected an error"),
    }
}

#[test]
fn bad_json_names_the_file_line_and_column() {
    let path = temp_file("bad.json", "{\n  \"rules\": [\n    {\"reply\": \"x\",}\n  ]\n}");
    let message = load_error(ScriptedBackend::from_file(&path));
    std::fs::remove_file(&path).unwrap();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("bad JSON"), "{message}");
    assert!(message.contains("line 3 column"), "{message}");
}

#[test]
fn bad_regex_names_the_rule() {
    let message = load_error(ScriptedBackend::from_json_str(
        r#"{"rules": [{"reply": "ok"}, {"when": [{"contains": "a"}, {"matches": "(unclosed"}], "reply": "x"}]}"#,
    ));
    assert!(
        message.starts_with("scripted rules: rules[1].when[1].matches: invalid regex `(unclosed`"),
        "{message}"
    );

    let path = temp_file("regex.json", r#"{"rules": [{"when": [{"matches": "[z-a]"}]}]}"#);
    let message = load_error(ScriptedBackend::from_file(&path));
    std::fs::remove_file(&path).unwrap();
    assert!(
        message.contains(&path.display().to_string()) && message.contains("rules[0].when[0]"),
        "{message}"
    );
}

#[test]
fn unknown_keys_and_missing_files_are_reported() {
    let message = load_error(ScriptedBackend::from_json_str(
        r#"{"rules": [{"when": [{"contain": "typo"}]}]}"#,
    ));
    assert!(
        message.contains("invalid rules") && message.contains("unknown field `contain`"),
        "{message}"
    );

    let message = load_error(ScriptedBackend::from_json_str(
        r#"{"rules": [{"when": [{"role": "robot"}]}]}"#,
    ));
    assert!(message.contains("unknown variant `robot`"), "{message}");

    let missing = std::env::temp_dir().join("agl-llm-test-no-such-file.json");
    let message = load_error(ScriptedBackend::from_file(&missing));
    assert!(
        message.contains("no-such-file.json") && message.contains("cannot read"),
        "{message}"
    );
}
