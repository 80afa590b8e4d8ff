//! `GET /metrics` over real HTTP: a store (in memory, SQLite, PostgreSQL) driven as runners drive
//! it (enqueue, dequeue, a heartbeat, spans over the 0.3.0 API and over OTLP, an attempt's end),
//! then the scrape parsed as Prometheus' text format and read value by value; and the token
//! guarding it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test: a failed step panics and fails it"
)]

mod support;

use agl_server::ServerOptions;
use agl_store::{StoreBackend, StoreOptions};
use agl_store_db::DbUrl;
use agl_testkit::prometheus::{Scrape, TEXT_FORMAT};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use support::{Answer, TestServer};

/// A scrape answered 200 in the text format, parsed.
fn scrape(answer: &Answer) -> Scrape {
    assert_eq!(answer.status, 200, "{}", answer.text);
    let content_type = answer.content_type.as_deref().unwrap_or_default();
    assert!(content_type.starts_with(TEXT_FORMAT), "content type {content_type}");
    Scrape::parse(&answer.text)
}

/// An LLM call span as agl-host records it: tokens, and its start and end in seconds.
fn llm_span(rollout: &str, attempt: &str, span_id: &str, tokens: (u64, u64), times: (f64, f64)) -> Value {
    json!({
        "rollout_id": rollout, "attempt_id": attempt, "sequence_id": 1,
        "trace_id": "ab".repeat(16), "span_id": span_id, "parent_id": null,
        "name": "openai.chat.completion",
        "status": {"status_code": "OK"},
        "attributes": {
            "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "2+2?",
            "gen_ai.completion.0.content": "4",
            "gen_ai.usage.input_tokens": tokens.0, "gen_ai.usage.output_tokens": tokens.1,
        },
        "events": [], "links": [], "start_time": times.0, "end_time": times.1,
        "context": null, "parent": null,
        "resource": {"attributes": {}, "schema_url": ""},
    })
}

/// An OTLP/HTTP JSON export: one LLM call of the attempt (7 prompt and 2 completion tokens, 2 s),
/// and one span that names no rollout (dropped).
fn otlp_export(rollout: &str, attempt: &str) -> Value {
    let text = |key: &str, value: &str| json!({"key": key, "value": {"stringValue": value}});
    let int = |key: &str, value: u64| json!({"key": key, "value": {"intValue": value.to_string()}});
    json!({"resourceSpans": [
        {
            "resource": {"attributes": [
                text("agentlightning.rollout_id", rollout),
                text("agentlightning.attempt_id", attempt),
            ]},
            "scopeSpans": [{"spans": [{
                "traceId": "cd".repeat(16), "spanId": "0123456789abcdef",
                "name": "openai.chat.completion", "kind": 3,
                "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000002000000000",
                "attributes": [
                    int("gen_ai.usage.input_tokens", 7),
                    int("gen_ai.usage.output_tokens", 2),
                ],
            }]}],
        },
        {
            "resource": {"attributes": []},
            "scopeSpans": [{"spans": [{
                "traceId": "ef".repeat(16), "spanId": "fedcba9876543210", "name": "elsewhere",
                "startTimeUnixNano": "1000000000", "endTimeUnixNano": "1000000001",
            }]}],
        },
    ]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_show_the_state_of_a_memory_store_and_what_came_in() {
    metrics_show_the_store_state_and_what_came_in(TestServer::start().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_show_the_state_of_a_sqlite_store_and_what_came_in() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("metrics-sqlite-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = open(&DbUrl::Sqlite(dir.join("store.db")));
    metrics_show_the_store_state_and_what_came_in(TestServer::on(store).await).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// The store state of a PostgreSQL store, read as every replica on it reads it (ignored, saying
/// why, on a machine without PostgreSQL outside CI).
#[agl_testkit::needs(postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_show_the_state_of_a_postgres_store_and_what_came_in() {
    let postgres = agl_testkit::postgres::server();
    let url: DbUrl = postgres
        .fresh_database()
        .parse()
        .expect("the testkit's URL is a store URL");
    metrics_show_the_store_state_and_what_came_in(TestServer::on(open(&url)).await).await;
}

/// A store opened as `agl-host store --db` opens it.
fn open(url: &DbUrl) -> Arc<dyn StoreBackend> {
    agl_store_db::open(url, StoreOptions::default())
        .unwrap_or_else(|error| panic!("opening {}: {error}", url.redacted()))
}

async fn metrics_show_the_store_state_and_what_came_in<S>(server: TestServer<S>) {
    let queued = server
        .post_ok(
            "/v1/agl/queues/rollouts/enqueue",
            &json!({"rollouts": [{"input": 1}, {"input": 2}, {"input": 3}]}),
            201,
        )
        .await;
    assert_eq!(queued.as_array().map(Vec::len), Some(3));
    let taken = server
        .post_ok(
            "/v1/agl/queues/rollouts/dequeue",
            &json!({"limit": 1, "worker_id": "w-1"}),
            200,
        )
        .await;
    let rollout = taken[0]["rollout_id"].as_str().expect("rollout id").to_owned();
    let attempt = taken[0]["attempt"]["attempt_id"]
        .as_str()
        .expect("attempt id")
        .to_owned();
    let worker = server.post_ok("/v1/agl/workers/w-1", &json!({}), 200).await;

    let call = llm_span(&rollout, &attempt, "1111111111111111", (12, 3), (100.0, 100.75));
    server.post_ok("/v1/agl/spans", &call, 201).await;
    let duplicate = server.post_ok("/v1/agl/spans", &call, 201).await;
    assert_eq!(duplicate, Value::Null, "a duplicate is not stored");
    let mut log = llm_span(&rollout, &attempt, "2222222222222222", (0, 0), (101.0, 101.0));
    log["name"] = json!("agentlightning.message");
    log["attributes"] = json!({"agentlightning.message.body": "thinking"});
    server.post_ok("/v1/agl/spans", &log, 201).await;
    let otlp = server.post("/v1/traces", &otlp_export(&rollout, &attempt)).await;
    assert_eq!(otlp.status, 200, "{}", otlp.text);

    server
        .post_ok(
            &format!("/v1/agl/rollouts/{rollout}/attempts/{attempt}"),
            &json!({"status": "succeeded"}),
            200,
        )
        .await;

    let scraped = scrape(&server.get("/metrics").await);
    let expected = [
        // The store, read at scrape time.
        ("agl_store_up", 1.0),
        ("agl_rollouts{status=\"queuing\"}", 2.0),
        ("agl_rollouts{status=\"succeeded\"}", 1.0),
        ("agl_rollouts{status=\"running\"}", 0.0),
        ("agl_rollout_queue_depth", 2.0),
        ("agl_attempts{status=\"succeeded\"}", 1.0),
        ("agl_attempts{status=\"running\"}", 0.0),
        ("agl_workers{status=\"idle\"}", 1.0),
        ("agl_workers{status=\"busy\"}", 0.0),
        // What this server received: 2 spans over the 0.3.0 API (the duplicate is not), 1 over
        // OTLP and 1 OTLP span dropped; 2 LLM calls, 12 + 7 and 3 + 2 tokens, 0.75 s and 2 s.
        ("agl_spans_received_total{api=\"agl\"}", 2.0),
        ("agl_spans_received_total{api=\"otlp\"}", 1.0),
        ("agl_otlp_spans_dropped_total", 1.0),
        ("agl_llm_calls_total{outcome=\"ok\"}", 2.0),
        ("agl_llm_calls_total{outcome=\"error\"}", 0.0),
        ("agl_llm_prompt_tokens_total", 19.0),
        ("agl_llm_completion_tokens_total", 5.0),
        ("agl_llm_call_duration_seconds_bucket{le=\"0.5\"}", 0.0),
        ("agl_llm_call_duration_seconds_bucket{le=\"1\"}", 1.0),
        ("agl_llm_call_duration_seconds_bucket{le=\"2.5\"}", 2.0),
        ("agl_llm_call_duration_seconds_bucket{le=\"+Inf\"}", 2.0),
        ("agl_llm_call_duration_seconds_sum", 2.75),
        ("agl_llm_call_duration_seconds_count", 2.0),
        ("agl_worker_heartbeats_total", 1.0),
        (
            "agl_http_requests_total{method=\"POST\",route=\"/v1/agl/spans\",status=\"2xx\"}",
            3.0,
        ),
        (
            "agl_http_requests_total{method=\"POST\",route=\"/v1/agl/workers/{worker_id}\",status=\"2xx\"}",
            1.0,
        ),
        ("agl_http_request_duration_seconds_count{route=\"/v1/agl/spans\"}", 3.0),
    ];
    for (series, wanted) in expected {
        assert_eq!(scraped.value(series), wanted, "{series}");
    }
    let heartbeat = scraped.value("agl_worker_last_heartbeat_timestamp_seconds{worker_id=\"w-1\"}");
    let recorded = worker["last_heartbeat_time"].as_f64().expect("a heartbeat time");
    assert!((heartbeat - recorded).abs() < 1e-3, "{heartbeat} vs {recorded}");
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_need_the_token_when_the_store_has_one() {
    let server = TestServer::with_options(ServerOptions {
        token: Some("s3cret".into()),
        ..ServerOptions::default()
    })
    .await;
    let refused = server.get("/metrics").await;
    assert!(refused.error(401).contains("bearer token"), "{}", refused.text);
    let wrong = server
        .send("GET", "/metrics", None, &[("authorization", "Bearer nope")])
        .await;
    wrong.error(401);

    let scraped = scrape(
        &server
            .send("GET", "/metrics", None, &[("authorization", "Bearer s3cret")])
            .await,
    );
    assert_eq!(scraped.value("agl_store_up"), 1.0);
    // The refused scrapes were counted too.
    let refused_scrapes = "agl_http_requests_total{method=\"GET\",route=\"/metrics\",status=\"4xx\"}";
    assert_eq!(scraped.value(refused_scrapes), 2.0);
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_are_counted_by_route_pattern_never_by_path() {
    let server = TestServer::start().await;
    for id in ["ro-a", "ro-b"] {
        server.get(&format!("/v1/agl/rollouts/{id}")).await;
    }
    server.get("/no/such/page").await.error(404);
    server.get("/v1/agl/no-such-route").await.error(404);
    let scraped = scrape(&server.get("/metrics").await);
    let by_route = |route: &str, status: &str| {
        scraped.value(&format!(
            "agl_http_requests_total{{method=\"GET\",route=\"{route}\",status=\"{status}\"}}"
        ))
    };
    assert_eq!(by_route("/v1/agl/rollouts/{rollout_id}", "2xx"), 2.0);
    assert_eq!(by_route("unmatched", "4xx"), 2.0);
    let paths_as_labels: Vec<_> = scraped
        .samples
        .keys()
        .filter(|series| series.contains("ro-a"))
        .collect();
    assert!(paths_as_labels.is_empty(), "{paths_as_labels:?}");
    server.handle.shutdown().await;
}
