//! The OpenAI-compatible client against the real `server` module on 127.0.0.1 (fronting a
//! scripted backend): round trips, retries, timeouts, refused connections and error mapping.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test: a failed step panics and fails it"
)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agl_llm::{
    ChatRequest, ChatResponse, LlmBackend, LlmError, Message, OpenAiBackend, OpenAiConfig, ScriptedBackend,
    TokenDetail, Tool, ToolCall, Usage,
};
use agl_testkit::llm_server::{Fault, Faults, ServerHandle, serve, serve_with_faults};
use serde_json::{Value, json};

const RULES: &str = r#"{
  "model": "scripted-model",
  "rules": [
    {"when": [{"role": "user", "matches": "What is (\\d+) \\+ (\\d+)"}], "reply": "{1}+{2}", "usage": {"input_tokens": 12, "output_tokens": 1}},
    {"when": [{"contains": "use a tool"}], "tool_calls": [{"id": "call-1", "name": "calc", "arguments": {"x": 1}}]}
  ]
}"#;

fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

async fn start(faults: Faults) -> (ServerHandle, Arc<ScriptedBackend>) {
    let scripted = Arc::new(ScriptedBackend::from_json_str(RULES).unwrap());
    let server = serve_with_faults(scripted.clone(), loopback(), faults).await.unwrap();
    (server, scripted)
}

/// Fast-failing settings for tests: 1 ms backoff, 5 s timeout, 4 retries.
fn config(base_url: String) -> OpenAiConfig {
    OpenAiConfig {
        base_url,
        api_key: None,
        model: "client-default".into(),
        request_timeout: Duration::from_secs(5),
        max_retries: 4,
        initial_backoff: Duration::from_millis(1),
    }
}

fn client(config: OpenAiConfig) -> OpenAiBackend {
    OpenAiBackend::new(config).unwrap()
}

fn sum_question() -> ChatRequest {
    ChatRequest::new(vec![Message::system("be exact"), Message::user("What is 2 + 3?")])
}

#[tokio::test]
async fn a_normal_call_round_trips_content_usage_model_and_request_fields() {
    let (server, scripted) = start(Faults::default()).await;
    let backend = client(config(server.base_url()));
    assert_eq!(backend.describe(), format!("openai-compatible {}", server.base_url()));

    let response = backend.chat(&sum_question()).await.unwrap();
    assert_eq!(
        response,
        ChatResponse {
            content: "2+3".into(),
            tool_calls: vec![],
            finish_reason: "stop".into(),
            usage: Usage {
                input_tokens: 12,
                output_tokens: 1
            },
            model: "client-default".into(),
            id: Some("chatcmpl-1".into()),
            tokens: TokenDetail::default(),
        }
    );

    let mut request = ChatRequest::new(vec![
        Message::user("please use a tool"),
        Message::tool("call-0", "earlier"),
    ]);
    request.model = Some("asked-model".into());
    request.temperature = Some(0.25);
    request.max_tokens = Some(64);
    request.stop = vec!["END".into()];
    request.tools = vec![Tool {
        name: "calc".into(),
        description: "adds".into(),
        parameters: json!({"type": "object"}),
    }];
    let response = backend.chat(&request).await.unwrap();
    assert_eq!(response.content, "");
    assert_eq!(response.finish_reason, "tool_calls");
    assert_eq!(response.model, "asked-model");
    assert_eq!(
        response.tool_calls,
        vec![ToolCall {
            id: "call-1".into(),
            name: "calc".into(),
            arguments: r#"{"x":1}"#.into()
        }]
    );
    assert_eq!(
        server.last_request(),
        Some(request),
        "every request field reached the server intact"
    );

    assert_eq!((server.chat_requests(), scripted.calls()), (2, 2));
    assert_eq!(
        server.last_authorization(),
        None,
        "no key configured, no Authorization header"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn the_bearer_key_is_sent_when_configured() {
    let (server, _) = start(Faults::default()).await;
    let backend = client(OpenAiConfig {
        api_key: Some("sk-test-123".into()),
        ..config(server.base_url())
    });
    backend.chat(&sum_question()).await.unwrap();
    assert_eq!(server.last_authorization().as_deref(), Some("Bearer sk-test-123"));
    server.shutdown().await;
}

#[tokio::test]
async fn two_429s_with_retry_after_zero_then_success() {
    let (server, scripted) = start(Faults::default().then_times(2, Fault::status(429).with_retry_after(0))).await;
    // A 30 s backoff would blow the test's time: Retry-After: 0 must win over it.
    let backend = client(OpenAiConfig {
        initial_backoff: Duration::from_secs(30),
        ..config(server.base_url())
    });
    let started = Instant::now();
    let response = backend.chat(&sum_question()).await.unwrap();
    assert_eq!(response.content, "2+3");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "Retry-After honoured: {:?}",
        started.elapsed()
    );
    assert_eq!(server.chat_requests(), 3, "two refused attempts, then the answer");
    assert_eq!(scripted.calls(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn errors_beyond_max_retries_give_a_backend_error_naming_the_status() {
    let faults = Faults::default().then_times(10, Fault::status(500).with_message("database on fire"));
    let (server, scripted) = start(faults).await;
    let backend = client(OpenAiConfig {
        max_retries: 2,
        ..config(server.base_url())
    });
    match backend.chat(&sum_question()).await {
        Err(LlmError::Backend(message)) => {
            assert!(
                message.contains("500") && message.contains("database on fire"),
                "{message}"
            );
            assert!(message.contains("3 attempts"), "{message}");
        }
        other => panic!("expected a backend error, got {other:?}"),
    }
    assert_eq!(server.chat_requests(), 3, "1 attempt + max_retries");
    assert_eq!(scripted.calls(), 0);
    server.shutdown().await;
}

#[tokio::test]
async fn a_408_and_a_503_are_retried_too() {
    let faults = Faults::default().then(Fault::status(408)).then(Fault::status(503));
    let (server, _) = start(faults).await;
    let response = client(config(server.base_url())).chat(&sum_question()).await.unwrap();
    assert_eq!(response.content, "2+3");
    assert_eq!(server.chat_requests(), 3);
    server.shutdown().await;
}

#[tokio::test]
async fn a_400_is_an_invalid_request_at_once() {
    let faults = Faults::default().then(Fault::status(400).with_message("model `nope` does not exist"));
    let (server, _) = start(faults).await;
    let result = client(config(server.base_url())).chat(&sum_question()).await;
    assert_eq!(
        result,
        Err(LlmError::InvalidRequest(
            "HTTP 400 Bad Request: model `nope` does not exist".into()
        ))
    );
    assert_eq!(server.chat_requests(), 1, "no retry on a 4xx");
    server.shutdown().await;
}

#[tokio::test]
async fn a_backend_refusal_maps_to_400_and_back_to_invalid_request() {
    let (server, _) = start(Faults::default()).await;
    let result = client(config(server.base_url()))
        .chat(&ChatRequest::new(vec![Message::user("unknown question")]))
        .await;
    match result {
        Err(LlmError::InvalidRequest(message)) => {
            assert!(
                message.contains("no scripted rule matches the last message: unknown question"),
                "{message}"
            )
        }
        other => panic!("expected InvalidRequest, got {other:?}"),
    }
    assert_eq!(server.chat_requests(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn a_server_slower_than_the_timeout_gives_timeout_without_retrying() {
    let (server, _) = start(Faults::default().with_delay(Duration::from_secs(3))).await;
    let backend = client(OpenAiConfig {
        request_timeout: Duration::from_millis(200),
        ..config(server.base_url())
    });
    let started = Instant::now();
    assert_eq!(backend.chat(&sum_question()).await, Err(LlmError::Timeout));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "gave up at the timeout: {:?}",
        started.elapsed()
    );
    assert_eq!(server.chat_requests(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn a_refused_connection_is_a_backend_error_after_retries() {
    let port = {
        let listener = std::net::TcpListener::bind(loopback()).unwrap();
        listener.local_addr().unwrap().port()
    };
    let backend = client(OpenAiConfig {
        max_retries: 2,
        ..config(format!("http://127.0.0.1:{port}/v1"))
    });
    let started = Instant::now();
    match backend.chat(&sum_question()).await {
        Err(LlmError::Backend(message)) => {
            assert!(message.starts_with("network error"), "{message}");
            assert!(message.contains("3 attempts"), "{message}");
        }
        other => panic!("expected a backend error, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
}

#[tokio::test]
async fn an_unparsable_200_is_a_backend_error_without_retry() {
    for body in [
        "this is not json",
        r#"{"choices": []}"#,
        r#"{"choices": [{"message": {"content": 5, "tool_calls": "x"}}]}"#,
    ] {
        let (server, _) = start(Faults::default().then(Fault::status(200).with_body(body))).await;
        match client(config(server.base_url())).chat(&sum_question()).await {
            Err(LlmError::Backend(message)) => assert!(message.starts_with("unparsable response: "), "{message}"),
            other => panic!("{body}: expected a backend error, got {other:?}"),
        }
        assert_eq!(server.chat_requests(), 1);
        server.shutdown().await;
    }
}

/// A backend that always fails with the given error.
struct Failing(LlmError);

#[async_trait::async_trait]
impl LlmBackend for Failing {
    async fn chat(&self, _request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        Err(self.0.clone())
    }
    fn default_model(&self) -> &str {
        "failing"
    }
    fn describe(&self) -> String {
        "failing".into()
    }
}

async fn post_raw(url: &str, body: &str) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (
        status,
        serde_json::from_slice(&response.bytes().await.unwrap()).unwrap(),
    )
}

#[tokio::test]
async fn the_server_speaks_the_openai_shapes() {
    let (server, _) = start(Faults::default()).await;
    let url = format!("{}/chat/completions", server.base_url());
    let (status, body) = post_raw(
        &url,
        r#"{"model": "m", "messages": [{"role": "user", "content": "What is 4 + 5"}]}"#,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["object"], "chat.completion");
    assert!(
        body["id"].as_str().is_some_and(|id| id.starts_with("chatcmpl-")),
        "{body}"
    );
    assert!(body["created"].as_u64().is_some_and(|t| t > 1_600_000_000), "{body}");
    assert_eq!(body["model"], "m");
    assert_eq!(
        body["choices"],
        json!([{"index": 0, "message": {"role": "assistant", "content": "4+5"}, "finish_reason": "stop"}])
    );
    assert_eq!(
        body["usage"],
        json!({"prompt_tokens": 12, "completion_tokens": 1, "total_tokens": 13})
    );

    let (status, body) = post_raw(&url, "{not json").await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["type"], "invalid_request_error");
    let (status, body) = post_raw(&url, r#"{"messages": [{"role": "robot", "content": "x"}]}"#).await;
    assert_eq!(
        (status, body["error"]["message"].as_str()),
        (400, Some("messages[0].role: unknown role `robot`"))
    );

    let models = reqwest::get(format!("{}/models", server.base_url()))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let models: Value = serde_json::from_slice(&models).unwrap();
    assert_eq!(models["object"], "list");
    assert_eq!(models["data"][0]["id"], "scripted-model");

    let missing = reqwest::get(format!("{}/nothing", server.base_url())).await.unwrap();
    assert_eq!(missing.status().as_u16(), 404);
    server.shutdown().await;
}

#[tokio::test]
async fn backend_errors_map_to_502_and_504() {
    for (error, status, kind) in [
        (LlmError::Backend("upstream down".into()), 502, "backend_error"),
        (LlmError::Timeout, 504, "timeout"),
        (LlmError::InvalidRequest("bad".into()), 400, "invalid_request_error"),
    ] {
        let server = serve(Arc::new(Failing(error)), loopback()).await.unwrap();
        let (got, body) = post_raw(
            &format!("{}/chat/completions", server.base_url()),
            r#"{"messages": []}"#,
        )
        .await;
        assert_eq!((got, body["error"]["type"].as_str()), (status, Some(kind)), "{body}");
        assert!(body["error"]["message"].is_string(), "{body}");
        server.shutdown().await;
    }
}

#[tokio::test]
async fn concurrent_calls_share_one_client() {
    let (server, scripted) = start(Faults::default()).await;
    let backend = Arc::new(client(config(server.base_url())));
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let backend = backend.clone();
            tokio::spawn(async move {
                let request = ChatRequest::new(vec![Message::user(format!("What is {i} + 1"))]);
                backend.chat(&request).await.map(|r| r.content)
            })
        })
        .collect();
    for (i, task) in tasks.into_iter().enumerate() {
        assert_eq!(task.await.unwrap().unwrap(), format!("{i}+1"));
    }
    assert_eq!(scripted.calls(), 16);
    server.shutdown().await;
}
