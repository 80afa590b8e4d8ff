//! A real OpenTelemetry exporter (the Rust `opentelemetry-otlp` crate, OTLP/HTTP over its
//! blocking reqwest client) sends spans to a small axum server whose `/v1/traces` calls
//! `agl_otlp::ingest` into an in-memory store; the stored spans are then checked.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test: a failed step panics and fails it"
)]

mod common;

use agl_store::{InMemoryLightningStore, StatusCode as SpanStatus};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use common::*;
use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt, Tracer, TracerProvider as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{Compression, Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::sync::{Arc, Mutex};

/// The headers of each request the server saw: (content type, content encoding, HTTP status).
type Seen = Arc<Mutex<Vec<(Option<String>, Option<String>, u16)>>>;

#[derive(Clone)]
struct App {
    store: Arc<InMemoryLightningStore>,
    seen: Seen,
}

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> Option<String> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
}

/// The `/v1/traces` handler as a server would mount it.
async fn traces(State(app): State<App>, headers: HeaderMap, body: Bytes) -> Response {
    let content_type = header_str(&headers, header::CONTENT_TYPE);
    let encoding = header_str(&headers, header::CONTENT_ENCODING);
    let (status, (media, bytes)) =
        match agl_otlp::ingest(app.store.as_ref(), content_type.as_deref(), encoding.as_deref(), &body).await {
            Ok(report) => (StatusCode::OK, report.response(content_type.as_deref())),
            Err(error) => (
                StatusCode::from_u16(error.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                error.response(content_type.as_deref()),
            ),
        };
    if let Ok(mut seen) = app.seen.lock() {
        seen.push((content_type, encoding, status.as_u16()));
    }
    (status, [(header::CONTENT_TYPE, media)], bytes).into_response()
}

/// Starts the server on 127.0.0.1:0; returns the store, the traces URL and the request log.
async fn serve() -> (Arc<InMemoryLightningStore>, String, Seen) {
    let app = App {
        store: Arc::new(InMemoryLightningStore::new()),
        seen: Seen::default(),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let router = Router::new().route("/v1/traces", post(traces)).with_state(app.clone());
    tokio::spawn(async move { axum::serve(listener, router).await });
    (app.store, format!("http://{address}/v1/traces"), app.seen)
}

/// What the agent side produced, to compare with the store.
struct Emitted {
    trace_id: String,
    root_id: String,
    llm_id: String,
    reward_id: String,
    other_rollout_id: String,
}

/// Runs an "agent" with the real SDK and exporter (on a plain thread: the blocking client must
/// not run on the async runtime) and shuts the provider down, which flushes the batch.
fn run_agent(
    endpoint: String,
    protocol: Protocol,
    compression: Option<Compression>,
    ids: (String, String),
    other: (String, String),
) -> Emitted {
    let mut builder = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(endpoint)
        .with_protocol(protocol);
    if let Some(compression) = compression {
        builder = builder.with_compression(compression);
    }
    let exporter = builder.build().expect("exporter");
    let resource = Resource::builder()
        .with_service_name("agl-otlp-test-agent")
        .with_attributes([
            KeyValue::new("agentlightning.rollout_id", ids.0),
            KeyValue::new("agentlightning.attempt_id", ids.1),
        ])
        .build();
    let provider = SdkTracerProvider::builder()
        .with_resource(resource)
        .with_batch_exporter(exporter)
        .build();
    let tracer = provider.tracer("agl-otlp-test");

    let root = tracer.start("agent.run");
    let trace_id = root.span_context().trace_id().to_string();
    let root_id = root.span_context().span_id().to_string();
    let cx = Context::current_with_span(root);

    let mut llm = tracer
        .span_builder("openai.chat.completion")
        .with_kind(SpanKind::Client)
        .with_attributes([
            KeyValue::new("gen_ai.prompt.0.content", "hi"),
            KeyValue::new("gen_ai.usage.prompt_tokens", 12_i64),
            KeyValue::new("gen_ai.request.temperature", 0.5),
        ])
        .start_with_context(&tracer, &cx);
    llm.add_event("retry", vec![KeyValue::new("attempt", 2_i64)]);
    llm.set_status(Status::error("rate limited"));
    let llm_id = llm.span_context().span_id().to_string();
    llm.end();

    let mut reward = tracer.start_with_context("agentlightning.annotation", &cx);
    reward.set_attribute(KeyValue::new("agentlightning.reward.0.value", 1.0));
    reward.set_attribute(KeyValue::new("agentlightning.span_sequence_id", 100_i64));
    let reward_id = reward.span_context().span_id().to_string();
    reward.end();

    // A span that belongs elsewhere: span-level ids override the resource's.
    let mut moved = tracer.start_with_context("moved", &cx);
    moved.set_attribute(KeyValue::new("agentlightning.rollout_id", other.0.clone()));
    moved.set_attribute(KeyValue::new("agentlightning.attempt_id", other.1));
    moved.end();

    cx.span().set_status(Status::Ok);
    cx.span().end();
    drop(cx);
    provider.shutdown().expect("flush and shut down");
    Emitted {
        trace_id,
        root_id,
        llm_id,
        reward_id,
        other_rollout_id: other.0,
    }
}

async fn export_and_check(protocol: Protocol, compression: Option<Compression>) -> Seen {
    let (store, endpoint, seen) = serve().await;
    let (rollout_id, attempt_id) = start(&store).await;
    let other = start(&store).await;
    let ids = (rollout_id.clone(), attempt_id.clone());
    let agent = std::thread::spawn(move || run_agent(endpoint, protocol, compression, ids, other));
    let emitted = tokio::task::spawn_blocking(move || agent.join())
        .await
        .expect("join")
        .expect("the agent thread");

    let spans = spans_of(&store, &rollout_id).await;
    let names: Vec<_> = spans.iter().map(|s| (s.name.as_str(), s.sequence_id)).collect();
    // The batch arrives in end order: llm, reward (explicit 100), moved (elsewhere), root.
    assert_eq!(
        names,
        [
            ("openai.chat.completion", 1),
            ("agent.run", 2),
            ("agentlightning.annotation", 100)
        ]
    );
    let by_name = |name: &str| spans.iter().find(|s| s.name == name).expect(name).clone();
    let (root, llm, reward) = (
        by_name("agent.run"),
        by_name("openai.chat.completion"),
        by_name("agentlightning.annotation"),
    );

    for span in [&root, &llm, &reward] {
        assert_eq!(span.trace_id, emitted.trace_id);
        assert_eq!(span.attempt_id, attempt_id);
        assert_eq!(span.resource.attributes["service.name"], "agl-otlp-test-agent");
        assert!(span.start_time.is_some_and(|t| t > 1.6e9) && span.end_time >= span.start_time);
    }
    assert_eq!(root.span_id, emitted.root_id);
    assert_eq!(root.parent_id, None);
    assert_eq!(root.status.status_code, SpanStatus::Ok);
    assert_eq!(llm.span_id, emitted.llm_id);
    assert_eq!(llm.parent_id.as_deref(), Some(emitted.root_id.as_str()));
    assert_eq!(llm.status.status_code, SpanStatus::Error);
    assert_eq!(llm.status.description.as_deref(), Some("rate limited"));
    assert_eq!(llm.attributes["gen_ai.prompt.0.content"], "hi");
    assert_eq!(llm.attributes["gen_ai.usage.prompt_tokens"], 12);
    assert_eq!(llm.attributes["gen_ai.request.temperature"], 0.5);
    assert_eq!(llm.events.len(), 1);
    assert_eq!(llm.events[0].name, "retry");
    assert_eq!(llm.events[0].attributes["attempt"], 2);
    assert_eq!(reward.span_id, emitted.reward_id);
    assert_eq!(reward.parent_id.as_deref(), Some(emitted.root_id.as_str()));
    assert_eq!(reward.attributes["agentlightning.reward.0.value"], 1.0);

    let moved = spans_of(&store, &emitted.other_rollout_id).await;
    assert_eq!(moved.len(), 1);
    assert_eq!(moved[0].name, "moved");
    assert_eq!(moved[0].sequence_id, 1);
    assert_eq!(moved[0].parent_id.as_deref(), Some(emitted.root_id.as_str()));
    seen
}

fn seen(log: &Seen) -> Vec<(Option<String>, Option<String>, u16)> {
    log.lock().map(|v| v.clone()).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_otlp_http_protobuf_exporter_lands_in_the_store() {
    let log = export_and_check(Protocol::HttpBinary, None).await;
    assert_eq!(
        seen(&log),
        [(Some(PROTOBUF.to_owned()), None, 200)],
        "one batch, one request"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_exporter_with_gzip_lands_in_the_store() {
    let log = export_and_check(Protocol::HttpBinary, Some(Compression::Gzip)).await;
    assert_eq!(seen(&log), [(Some(PROTOBUF.to_owned()), Some("gzip".to_owned()), 200)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_otlp_http_json_exporter_lands_in_the_store() {
    let log = export_and_check(Protocol::HttpJson, Some(Compression::Gzip)).await;
    assert_eq!(seen(&log), [(Some(JSON.to_owned()), Some("gzip".to_owned()), 200)]);
}
