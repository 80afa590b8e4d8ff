//! The server's own behaviour over real HTTP: the token check, the body limit, JSON errors for
//! bad input, unknown ids (4xx or `null`, never 5xx), query strings, concurrent clients, waits
//! (timeout, early wake-up, not blocking other requests), binding and shutdown.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test: a failed step panics and fails it"
)]

mod support;

use agl_server::{ServerError, ServerOptions, serve};
use agl_store::{InMemoryLightningStore, LightningStore};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::TestServer;

fn rollout_id(value: &Value) -> String {
    value["rollout_id"].as_str().expect("rollout_id").to_owned()
}

/// A rollout that has finished (started, its attempt succeeded) and one still queued.
async fn finished_and_queued(server: &TestServer) -> (String, String) {
    let started = server.post_ok("/v1/agl/rollouts", &json!({"input": 1}), 201).await;
    let done = rollout_id(&started);
    let attempt = started["attempt"]["attempt_id"].as_str().expect("attempt").to_owned();
    server
        .post_ok(
            &format!("/v1/agl/rollouts/{done}/attempts/{attempt}"),
            &json!({"status": "succeeded"}),
            200,
        )
        .await;
    let queued = server
        .post_ok(
            "/v1/agl/queues/rollouts/enqueue",
            &json!({"rollouts": [{"input": 2}]}),
            201,
        )
        .await;
    (done, rollout_id(&queued[0]))
}

// ---- token ---------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_guards_every_route_but_health() {
    let server = TestServer::with_options(ServerOptions {
        token: Some("s3cret".into()),
        ..ServerOptions::default()
    })
    .await;
    let good = [("authorization", "Bearer s3cret")];

    let open = server.get("/v1/agl/health").await;
    assert_eq!((open.status, open.json()), (200, json!({"status": "ok"})));

    for (method, path) in [
        ("GET", "/v1/agl/statistics"),
        ("GET", "/v1/agl/rollouts"),
        ("POST", "/v1/agl/queues/rollouts/dequeue"),
        ("POST", "/v1/agl/health"),
        ("GET", "/v1/agl/no-such-route"),
        ("POST", "/v1/traces"),
    ] {
        for headers in [
            vec![],
            vec![("authorization", "Bearer wrong")],
            vec![("authorization", "Basic s3cret")],
            vec![("authorization", "s3cret")],
        ] {
            let answer = server.send(method, path, None, &headers).await;
            let detail = answer.error(401);
            assert!(detail.contains("Bearer"), "{detail}");
            assert_eq!(
                answer.headers.get("www-authenticate").and_then(|v| v.to_str().ok()),
                Some("Bearer")
            );
        }
    }

    let stats = server.send("GET", "/v1/agl/statistics", None, &good).await;
    assert_eq!(stats.status, 200, "{}", stats.text);
    assert_eq!(stats.json()["name"], "InMemoryLightningStore");
    let dequeued = server
        .send("POST", "/v1/agl/queues/rollouts/dequeue", None, &good)
        .await;
    assert_eq!((dequeued.status, dequeued.json()), (200, json!([])));
    // With the token, unknown routes are plain 404s.
    server
        .send("GET", "/v1/agl/no-such-route", None, &good)
        .await
        .error(404);
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_token_refuses_everything_but_health() {
    let server = TestServer::with_options(ServerOptions {
        token: Some(String::new()),
        ..ServerOptions::default()
    })
    .await;
    assert_eq!(server.get("/v1/agl/health").await.status, 200);
    for headers in [vec![], vec![("authorization", "Bearer ")]] {
        server
            .send("GET", "/v1/agl/statistics", None, &headers)
            .await
            .error(401);
    }
    server.handle.shutdown().await;
}

// ---- body limit and bad input --------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_over_the_limit_are_413() {
    let server = TestServer::with_options(ServerOptions {
        max_body_bytes: 1024,
        ..ServerOptions::default()
    })
    .await;
    let small = json!({"rollouts": [{"input": "x".repeat(900)}]});
    server.post_ok("/v1/agl/queues/rollouts/enqueue", &small, 201).await;
    let large = json!({"rollouts": [{"input": "x".repeat(4000)}]});
    let detail = server.post("/v1/agl/queues/rollouts/enqueue", &large).await.error(413);
    assert!(detail.contains("1024"), "{detail}");
    // Also on routes whose body is optional, and without a Content-Length (chunked).
    server
        .post(
            "/v1/agl/workers/w1",
            &json!({"heartbeat_stats": {"pad": "y".repeat(4000)}}),
        )
        .await
        .error(413);
    // A chunked body (no Content-Length) is cut off at the limit too.
    let chunk = format!("200\r\n{}\r\n", " ".repeat(0x200));
    let chunked = format!(
        "POST /v1/agl/rollouts/search HTTP/1.1\r\nhost: localhost\r\ntransfer-encoding: chunked\r\n\
         content-type: application/json\r\nconnection: close\r\n\r\n{}0\r\n\r\n",
        chunk.repeat(8)
    );
    let (status, body) = raw_exchange(server.handle.local_addr(), chunked.as_bytes()).await;
    assert_eq!(status, 413, "{body}");
    assert!(body.contains("\"detail\""), "{body}");
    // A declared Content-Length over the limit is refused without reading the body.
    let declared = "POST /v1/agl/rollouts HTTP/1.1\r\nhost: localhost\r\ncontent-length: 1000000\r\n\
                    content-type: application/json\r\nconnection: close\r\n\r\n{";
    let (status, _) = raw_exchange(server.handle.local_addr(), declared.as_bytes()).await;
    assert_eq!(status, 413);
    // Nothing of the refused requests reached the store.
    assert_eq!(server.store.statistics().await.expect("stats").total_rollouts, 1);
    server.handle.shutdown().await;
}

/// Writes a raw HTTP/1.1 request and reads the answer until the server closes the connection
/// (or 5 s pass); returns the status and the body text.
async fn raw_exchange(addr: std::net::SocketAddr, request: &[u8]) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    // The server may answer before reading everything; a failed write is then expected.
    let _ = stream.write_all(request).await;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer)).await;
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_or_misshaped_json_is_422_with_a_detail() {
    let server = TestServer::start().await;
    for (path, body) in [
        ("/v1/agl/queues/rollouts/enqueue", "{not json"),
        ("/v1/agl/queues/rollouts/enqueue", "{\"rollouts\": 3}"),
        ("/v1/agl/queues/rollouts/enqueue", "{}"),
        ("/v1/agl/queues/rollouts/enqueue", "[1, 2"),
        ("/v1/agl/rollouts", "{\"mode\": \"train\"}"),
        ("/v1/agl/rollouts", "{\"input\": 1, \"mode\": \"holiday\"}"),
        ("/v1/agl/rollouts/search", "{\"status_in\": [\"sleeping\"]}"),
        ("/v1/agl/rollouts/search", ""),
        ("/v1/agl/spans", "{\"rollout_id\": \"ro-x\"}"),
        ("/v1/agl/spans/next", "{\"rollout_id\": \"ro-x\"}"),
        ("/v1/agl/resources", "{\"p\": {\"resource_type\": \"unknown\"}}"),
        ("/v1/agl/resources", "[]"),
        ("/v1/agl/waits/rollouts", "{\"timeout\": 1}"),
        ("/v1/agl/queues/rollouts/dequeue", "{\"limit\": \"two\"}"),
        ("/v1/agl/workers/w1", "{\"heartbeat_stats\": 5}"),
    ] {
        let answer = server.post_raw(path, body).await;
        let detail = answer.error(422);
        assert!(!detail.is_empty(), "{path} {body}");
    }
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_sort_limit_or_offset_is_400_on_search_and_query_string_routes() {
    let server = TestServer::start().await;
    let (done, _) = finished_and_queued(&server).await;
    for (field, value) in [
        ("sort_by", json!("no_such_field")),
        ("sort_by", json!("input")),
        ("limit", json!(0)),
        ("limit", json!(-2)),
        ("offset", json!(-1)),
    ] {
        let mut body = json!({});
        body[field] = value.clone();
        let query = format!(
            "{field}={}",
            value.as_str().map(str::to_owned).unwrap_or(value.to_string())
        );
        for answer in [
            server.post("/v1/agl/rollouts/search", &body).await,
            server.get(&format!("/v1/agl/rollouts?{query}")).await,
            server.post("/v1/agl/workers/search", &body).await,
            server.get(&format!("/v1/agl/workers?{query}")).await,
            server.get(&format!("/v1/agl/resources?{query}")).await,
            server.get(&format!("/v1/agl/rollouts/{done}/attempts?{query}")).await,
            server
                .post(&format!("/v1/agl/rollouts/{done}/attempts/search"), &body)
                .await,
            server.get(&format!("/v1/agl/spans?rollout_id={done}&{query}")).await,
        ] {
            let detail = answer.error(400);
            let named = value.as_str().unwrap_or(field);
            assert!(detail.contains(named), "{field}: {detail}");
        }
    }
    // A value that is not an integer at all is a shape error (FastAPI's 422).
    server.get("/v1/agl/rollouts?limit=ten").await.error(422);
    server.get("/v1/agl/rollouts?sort_order=sideways").await.error(422);
    server.get("/v1/agl/spans").await.error(422); // rollout_id is required
    // Other bad values.
    server
        .post("/v1/agl/queues/rollouts/dequeue", &json!({"limit": -1}))
        .await
        .error(400);
    server
        .post("/v1/agl/waits/rollouts", &json!({"rollout_ids": [], "timeout": -1}))
        .await
        .error(400);
    server
        .post("/v1/agl/rollouts", &json!({"input": 1, "config": {"max_attempts": 0}}))
        .await
        .error(400);
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_routes_and_methods_are_json_404_and_405() {
    let server = TestServer::start().await;
    for path in [
        "/",
        "/v1/agl",
        "/v1/agl/nothing",
        "/v1/agl/rollouts/ro-x/attempts/at-y/z",
        "/v2/agl/health",
    ] {
        assert_eq!(server.get(path).await.error(404), "Not Found", "{path}");
    }
    for (method, path) in [
        ("DELETE", "/v1/agl/rollouts/ro-x"),
        ("PUT", "/v1/agl/rollouts"),
        ("GET", "/v1/agl/spans/next"),
        ("GET", "/v1/agl/waits/rollouts"),
        ("GET", "/v1/agl/queues/rollouts/enqueue"),
        ("POST", "/v1/agl/statistics"),
    ] {
        let answer = server.send(method, path, None, &[]).await;
        assert_eq!(answer.error(405), "Method Not Allowed", "{method} {path}");
    }
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_otlp_route_refuses_other_content_types_and_large_bodies() {
    let server = TestServer::with_options(ServerOptions {
        max_body_bytes: 2048,
        ..ServerOptions::default()
    })
    .await;
    let refused = server
        .send(
            "POST",
            "/v1/traces",
            Some(b"hello".to_vec()),
            &[("content-type", "text/plain")],
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.text);
    assert!(!refused.text.is_empty(), "a google.rpc.Status body");
    let empty = server
        .send(
            "POST",
            "/v1/traces",
            Some(Vec::new()),
            &[("content-type", "application/x-protobuf")],
        )
        .await;
    assert_eq!(empty.status, 200, "an empty export is a valid request: {}", empty.text);
    let large = server
        .send(
            "POST",
            "/v1/traces",
            Some(vec![0; 4096]),
            &[("content-type", "application/x-protobuf")],
        )
        .await;
    assert_eq!(large.status, 413);
    server.handle.shutdown().await;
}

// ---- what 0.3.0 accepts without a lookup ---------------------------------------------------
// Agent-lightning 0.3.0 (`agentlightning/store/collection_based.py`) stores any `resources_id`
// without looking it up and issues span sequence ids from a counter keyed by rollout id alone.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enqueue_accepts_an_unknown_resources_id() {
    let server = TestServer::start().await;
    let queued = server
        .post_ok(
            "/v1/agl/queues/rollouts/enqueue",
            &json!({"rollouts": [{"input": 1, "resources_id": "rs-000000000000"}]}),
            201,
        )
        .await;
    assert_eq!(queued[0]["resources_id"], "rs-000000000000", "{queued}");
    let stored = server
        .get_ok(&format!("/v1/agl/rollouts/{}", rollout_id(&queued[0])))
        .await;
    assert_eq!(stored["resources_id"], "rs-000000000000", "{stored}");
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_rollout_accepts_an_unknown_resources_id() {
    let server = TestServer::start().await;
    let started = server
        .post_ok(
            "/v1/agl/rollouts",
            &json!({"input": 1, "resources_id": "rs-000000000000"}),
            201,
        )
        .await;
    assert_eq!(started["resources_id"], "rs-000000000000", "{started}");
    assert_eq!(started["attempt"]["sequence_id"], 1, "{started}");
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_rollout_accepts_an_unknown_resources_id() {
    let server = TestServer::start().await;
    let queued = server
        .post_ok(
            "/v1/agl/queues/rollouts/enqueue",
            &json!({"rollouts": [{"input": 1}]}),
            201,
        )
        .await;
    let id = rollout_id(&queued[0]);
    let updated = server
        .post_ok(
            &format!("/v1/agl/rollouts/{id}"),
            &json!({"resources_id": "rs-000000000000"}),
            200,
        )
        .await;
    assert_eq!(updated["resources_id"], "rs-000000000000", "{updated}");
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_span_sequence_id_is_issued_for_an_unknown_rollout_or_attempt() {
    let server = TestServer::start().await;
    let unknown = json!({"rollout_id": "ro-000000000000", "attempt_id": "at-00000000"});
    let first = server.post_ok("/v1/agl/spans/next", &unknown, 200).await;
    let second = server.post_ok("/v1/agl/spans/next", &unknown, 200).await;
    assert_eq!((first, second), (json!({"sequence_id": 1}), json!({"sequence_id": 2})));
    assert_eq!(
        server.get("/v1/agl/rollouts/ro-000000000000").await.json(),
        Value::Null,
        "no rollout is made"
    );
    let started = server.post_ok("/v1/agl/rollouts", &json!({"input": 1}), 201).await;
    let id = rollout_id(&started);
    let stray = server
        .post_ok(
            "/v1/agl/spans/next",
            &json!({"rollout_id": id, "attempt_id": "at-00000000"}),
            200,
        )
        .await;
    assert_eq!(stray, json!({"sequence_id": 1}), "the rollout's own counter");
    server.handle.shutdown().await;
}

// ---- unknown ids ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_ids_answer_null_or_a_4xx_never_a_5xx() {
    let server = TestServer::start().await;
    // Lookups documented to answer null.
    for path in [
        "/v1/agl/rollouts/ro-000000000000",
        "/v1/agl/rollouts/ro-000000000000/attempts/latest",
        "/v1/agl/resources/latest",
        "/v1/agl/resources/rs-000000000000",
        "/v1/agl/workers/nobody",
        "/v1/agl/rollouts/search",
        "/v1/agl/workers/search",
    ] {
        let answer = server.get(path).await;
        assert_eq!((answer.status, answer.json()), (200, Value::Null), "{path}");
    }
    // Queries over an unknown rollout are empty pages.
    for path in [
        "/v1/agl/rollouts/ro-000000000000/attempts",
        "/v1/agl/spans?rollout_id=ro-000000000000",
    ] {
        let page = server.get_ok(path).await;
        assert_eq!(page["total"], 0, "{path}: {page}");
    }
    // Changes to something unknown are 404 with the id named.
    let span = json!({
        "rollout_id": "ro-000000000000", "attempt_id": "at-00000000", "sequence_id": 1,
        "trace_id": "0".repeat(32), "span_id": "0".repeat(16), "parent_id": null, "name": "s",
    });
    let (done, _) = finished_and_queued(&server).await;
    for (path, body) in [
        (
            "/v1/agl/rollouts/ro-000000000000".to_owned(),
            json!({"status": "cancelled"}),
        ),
        ("/v1/agl/rollouts/ro-000000000000/attempts".to_owned(), json!({})),
        (
            "/v1/agl/rollouts/ro-000000000000/attempts/latest".to_owned(),
            json!({"status": "failed"}),
        ),
        (
            "/v1/agl/rollouts/ro-000000000000/attempts/at-00000000".to_owned(),
            json!({"status": "failed"}),
        ),
        (
            format!("/v1/agl/rollouts/{done}/attempts/at-00000000"),
            json!({"status": "failed"}),
        ),
        ("/v1/agl/spans".to_owned(), span),
    ] {
        let detail = server.post(&path, &body).await.error(404);
        assert!(detail.contains("not found"), "{path}: {detail}");
    }
    // A rollout with no attempt yet: `latest` names nothing.
    let queued = server
        .post_ok(
            "/v1/agl/queues/rollouts/enqueue",
            &json!({"rollouts": [{"input": 3}]}),
            201,
        )
        .await;
    let queued = rollout_id(&queued[0]);
    let latest = server
        .get_ok(&format!("/v1/agl/rollouts/{queued}/attempts/latest"))
        .await;
    assert_eq!(latest, Value::Null);
    server
        .post(
            &format!("/v1/agl/rollouts/{queued}/attempts/latest"),
            &json!({"status": "failed"}),
        )
        .await
        .error(404);
    server.handle.shutdown().await;
}

// ---- the routes themselves -----------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_strings_filter_sort_and_page_like_the_search_bodies() {
    let server = TestServer::start().await;
    let (done, queued) = finished_and_queued(&server).await;

    let page = server
        .get_ok("/v1/agl/rollouts?status_in=succeeded&status_in=queuing&sort_by=start_time&sort_order=desc")
        .await;
    let ids: Vec<String> = page["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(rollout_id)
        .collect();
    assert_eq!(ids, vec![queued.clone(), done.clone()]);
    let page = server.get_ok(&format!("/v1/agl/rollouts?rollout_id_in={queued}")).await;
    assert_eq!(
        (page["total"].clone(), rollout_id(&page["items"][0])),
        (json!(1), queued.clone())
    );
    let page = server.get_ok("/v1/agl/rollouts?limit=1&offset=1").await;
    assert_eq!(
        (page["limit"].clone(), page["offset"].clone(), page["total"].clone()),
        (json!(1), json!(1), json!(2))
    );
    assert_eq!(rollout_id(&page["items"][0]), queued);
    // The same query as a search body gives the same page.
    let searched = server
        .post_ok("/v1/agl/rollouts/search", &json!({"limit": 1, "offset": 1}), 200)
        .await;
    assert_eq!(searched, page);

    // Attempts of one rollout, workers, resources, spans.
    let attempts = server
        .get_ok(&format!("/v1/agl/rollouts/{done}/attempts?limit=5&sort_order=desc"))
        .await;
    assert_eq!(attempts["items"][0]["status"], "succeeded");
    let dequeued = server
        .post_ok("/v1/agl/queues/rollouts/dequeue", &json!({"worker_id": "w-1"}), 200)
        .await;
    assert_eq!(rollout_id(&dequeued[0]), queued);
    let busy = server
        .get_ok("/v1/agl/workers?status_in=busy&worker_id_contains=w-")
        .await;
    assert_eq!(busy["items"][0]["worker_id"], "w-1");
    let idle = server.get_ok("/v1/agl/workers?status_in=idle").await;
    assert_eq!(idle["total"], 0);

    let resources = json!({"p": {"resource_type": "prompt_template", "template": "{q}", "engine": "f-string"}});
    let added = server.post_ok("/v1/agl/resources", &resources, 201).await;
    let resources_id = added["resources_id"].as_str().expect("id").to_owned();
    let page = server
        .get_ok(&format!("/v1/agl/resources?resources_id={resources_id}"))
        .await;
    assert_eq!(page["total"], 1);
    let latest = server.get_ok("/v1/agl/resources/latest").await;
    assert_eq!(latest, added);
    let upserted = server.post_ok("/v1/agl/resources/named%20one", &resources, 200).await;
    assert_eq!(upserted["resources_id"], "named one");
    assert_eq!(server.get_ok("/v1/agl/resources/named%20one").await, upserted);

    let attempt_id = dequeued[0]["attempt"]["attempt_id"]
        .as_str()
        .expect("attempt")
        .to_owned();
    let next = server
        .post_ok(
            "/v1/agl/spans/next",
            &json!({"rollout_id": queued, "attempt_id": attempt_id}),
            200,
        )
        .await;
    assert_eq!(next, json!({"sequence_id": 1}));
    let span = json!({
        "rollout_id": queued, "attempt_id": attempt_id, "sequence_id": 1,
        "trace_id": "1".repeat(32), "span_id": "2".repeat(16), "parent_id": null, "name": "step one",
        "custom_key": [1, 2],
    });
    let stored = server.post_ok("/v1/agl/spans", &span, 201).await;
    assert_eq!(stored["custom_key"], json!([1, 2]), "extra keys are echoed: {stored}");
    let duplicate = server.post_ok("/v1/agl/spans", &span, 201).await;
    assert_eq!(duplicate, Value::Null, "a duplicate span is 201 null");
    let found = server
        .get_ok(&format!(
            "/v1/agl/spans?rollout_id={queued}&attempt_id=latest&name=step+one"
        ))
        .await;
    assert_eq!(found["items"][0], stored);
    let none = server
        .get_ok(&format!("/v1/agl/spans?rollout_id={queued}&name_contains=zzz"))
        .await;
    assert_eq!(none["total"], 0);
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optional_bodies_may_be_absent_or_null() {
    let server = TestServer::start().await;
    server
        .post_ok(
            "/v1/agl/queues/rollouts/enqueue",
            &json!({"rollouts": [{"input": 1}, {"input": 2}]}),
            201,
        )
        .await;
    // dequeue: no body means limit 1, no worker.
    let one = server.send("POST", "/v1/agl/queues/rollouts/dequeue", None, &[]).await;
    assert_eq!((one.status, one.json().as_array().map(Vec::len)), (200, Some(1)));
    let none = server.post_raw("/v1/agl/queues/rollouts/dequeue", "null").await;
    assert_eq!(none.json().as_array().map(Vec::len), Some(1));
    let zero = server
        .post_ok("/v1/agl/queues/rollouts/dequeue", &json!({"limit": 0}), 200)
        .await;
    assert_eq!(zero, json!([]));
    // start_attempt and the worker heartbeat without a body.
    let rollout = rollout_id(&one.json()[0]);
    let again = server
        .send("POST", &format!("/v1/agl/rollouts/{rollout}/attempts"), None, &[])
        .await;
    assert_eq!(again.status, 201, "{}", again.text);
    assert_eq!(again.json()["attempt"]["sequence_id"], 2);
    let worker = server.send("POST", "/v1/agl/workers/w-9", None, &[]).await;
    assert_eq!(worker.status, 200, "{}", worker.text);
    assert_eq!(worker.json()["worker_id"], "w-9");
    server.handle.shutdown().await;
}

// ---- concurrency and waits -----------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_runners_each_get_distinct_rollouts() {
    let server = Arc::new(TestServer::start().await);
    let rollouts: Vec<Value> = (0..120).map(|i| json!({"input": i})).collect();
    let enqueued = server
        .post_ok("/v1/agl/queues/rollouts/enqueue", &json!({"rollouts": rollouts}), 201)
        .await;
    let all: Vec<String> = enqueued.as_array().expect("list").iter().map(rollout_id).collect();

    // An algorithm waits for all of them while eight runners work.
    let waiter = {
        let server = Arc::clone(&server);
        let ids = all.clone();
        tokio::spawn(async move {
            server
                .post_ok(
                    "/v1/agl/waits/rollouts",
                    &json!({"rollout_ids": ids, "timeout": 60.0}),
                    200,
                )
                .await
        })
    };
    let mut runners = Vec::new();
    for worker in 0..8 {
        let server = Arc::clone(&server);
        runners.push(tokio::spawn(async move {
            let worker_id = format!("runner-{worker}");
            let mut done = Vec::new();
            loop {
                let batch = server
                    .post_ok(
                        "/v1/agl/queues/rollouts/dequeue",
                        &json!({"limit": 2, "worker_id": worker_id}),
                        200,
                    )
                    .await;
                let batch = batch.as_array().expect("list").clone();
                if batch.is_empty() {
                    break done;
                }
                for item in batch {
                    let rollout = rollout_id(&item);
                    let attempt = item["attempt"]["attempt_id"].as_str().expect("attempt").to_owned();
                    let next = server
                        .post_ok(
                            "/v1/agl/spans/next",
                            &json!({"rollout_id": rollout, "attempt_id": attempt}),
                            200,
                        )
                        .await;
                    let span = json!({
                        "rollout_id": rollout, "attempt_id": attempt, "sequence_id": next["sequence_id"],
                        "trace_id": "a".repeat(32), "span_id": "b".repeat(16), "parent_id": null,
                        "name": "agentlightning.annotation",
                    });
                    server.post_ok("/v1/agl/spans", &span, 201).await;
                    server
                        .post_ok(
                            &format!("/v1/agl/rollouts/{rollout}/attempts/{attempt}"),
                            &json!({"status": "succeeded"}),
                            200,
                        )
                        .await;
                    done.push(rollout);
                }
            }
        }));
    }
    let mut seen = HashSet::new();
    for runner in runners {
        for rollout in runner.await.expect("runner") {
            assert!(seen.insert(rollout.clone()), "{rollout} was dequeued twice");
        }
    }
    assert_eq!(seen, all.iter().cloned().collect::<HashSet<_>>());
    let finished = waiter.await.expect("waiter");
    let finished = finished.as_array().expect("list");
    assert_eq!(finished.len(), 120);
    assert!(finished.iter().all(|r| r["status"] == "succeeded"));
    let stats = server.get_ok("/v1/agl/statistics").await;
    assert_eq!(
        (stats["total_rollouts"].clone(), stats["total_spans"].clone()),
        (json!(120), json!(120))
    );
    server.store.check_state_invariants().expect("store invariants hold");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_times_out_with_only_the_finished_rollouts() {
    let server = TestServer::start().await;
    let (done, queued) = finished_and_queued(&server).await;
    let started = Instant::now();
    let finished = server
        .post_ok(
            "/v1/agl/waits/rollouts",
            &json!({"rollout_ids": [queued, done, "ro-000000000000"], "timeout": 0.5}),
            200,
        )
        .await;
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(500), "answered after {elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "answered after {elapsed:?}");
    let ids: Vec<String> = finished.as_array().expect("list").iter().map(rollout_id).collect();
    assert_eq!(ids, vec![done]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_wait_does_not_hold_up_other_requests() {
    let server = Arc::new(TestServer::start().await);
    let (_, queued) = finished_and_queued(&server).await;
    let waiters: Vec<_> = (0..4)
        .map(|_| {
            let server = Arc::clone(&server);
            let ids = json!([queued]);
            tokio::spawn(async move {
                server
                    .post_ok(
                        "/v1/agl/waits/rollouts",
                        &json!({"rollout_ids": ids, "timeout": 60.0}),
                        200,
                    )
                    .await
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(50)).await;
    // Four waits are pending on a two-thread runtime, and every other request is still answered.
    for _ in 0..5 {
        assert_eq!(server.get("/v1/agl/health").await.status, 200);
        assert_eq!(server.get_ok("/v1/agl/statistics").await["total_rollouts"], 2);
        assert_eq!(
            server.get_ok(&format!("/v1/agl/rollouts/{queued}")).await["status"],
            "queuing"
        );
    }
    assert!(waiters.iter().all(|w| !w.is_finished()), "the waits are still pending");
    server
        .post_ok(
            &format!("/v1/agl/rollouts/{queued}"),
            &json!({"status": "cancelled"}),
            200,
        )
        .await;
    for waiter in waiters {
        let finished = waiter.await.expect("waiter");
        assert_eq!(finished[0]["status"], "cancelled");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_answers_as_soon_as_the_last_rollout_finishes() {
    let server = Arc::new(TestServer::start().await);
    let (done, queued) = finished_and_queued(&server).await;
    let waiter = {
        let server = Arc::clone(&server);
        let ids = json!([done, queued]);
        tokio::spawn(async move {
            server
                .post_ok(
                    "/v1/agl/waits/rollouts",
                    &json!({"rollout_ids": ids, "timeout": 30.0}),
                    200,
                )
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!waiter.is_finished());
    let finished_at = Instant::now();
    server
        .post_ok(
            &format!("/v1/agl/rollouts/{queued}"),
            &json!({"status": "cancelled"}),
            200,
        )
        .await;
    let finished = waiter.await.expect("waiter");
    assert!(finished_at.elapsed() < Duration::from_secs(5));
    let statuses: Vec<&str> = finished
        .as_array()
        .expect("list")
        .iter()
        .map(|r| r["status"].as_str().expect("status"))
        .collect();
    assert_eq!(statuses, vec!["succeeded", "cancelled"]);
}

// ---- binding and shutdown ------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_answers_pending_waits_and_closes_the_port() {
    let server = TestServer::start().await;
    let (done, queued) = finished_and_queued(&server).await;
    let client = server.client.clone();
    let url = server.url("/v1/agl/waits/rollouts");
    let waiter = tokio::spawn(async move {
        let response = client
            .post(url)
            .json(&json!({"rollout_ids": [done, queued]}))
            .send()
            .await
            .expect("answered");
        (
            response.status().as_u16(),
            response.json::<Value>().await.expect("JSON"),
        )
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let addr = server.handle.local_addr();
    let base = server.base.clone();
    let stopping = Instant::now();
    tokio::time::timeout(Duration::from_secs(10), server.handle.shutdown())
        .await
        .expect("shutdown is prompt even with a wait without timeout pending");
    assert!(stopping.elapsed() < Duration::from_secs(5));
    let (status, finished) = waiter.await.expect("waiter");
    assert_eq!(status, 200);
    assert_eq!(finished.as_array().map(Vec::len), Some(1), "{finished}");
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "{base} still accepts"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binding_a_taken_port_is_an_error_naming_the_address() {
    let first = TestServer::start().await;
    let taken = first.handle.local_addr();
    let store: Arc<dyn LightningStore> = Arc::new(InMemoryLightningStore::new());
    let options = ServerOptions {
        host: taken.ip(),
        port: taken.port(),
        ..ServerOptions::default()
    };
    let error = serve(store, options).await.expect_err("port is taken");
    assert!(
        matches!(error, ServerError::Bind { addr, .. } if addr == taken),
        "{error:?}"
    );
    assert!(error.to_string().contains(&taken.to_string()), "{error}");
    assert!(first.handle.url().starts_with("http://127.0.0.1:"));
    assert_eq!(first.handle.url(), format!("http://{taken}"));
    first.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bare_router_serves_the_same_api() {
    let store: Arc<dyn LightningStore> = Arc::new(InMemoryLightningStore::new());
    let app = agl_server::router(store, &ServerOptions::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let task = tokio::spawn(async move { axum_serve(listener, app).await });
    let client = reqwest::Client::new();
    let base = format!("http://{addr}");
    let created = client
        .post(format!("{base}/v1/agl/rollouts"))
        .json(&json!({"input": 1}))
        .send()
        .await
        .expect("answered");
    assert_eq!(created.status().as_u16(), 201);
    let rollout: Value = created.json().await.expect("JSON");
    // Without `serve` there is no shutdown signal: a wait still honours its timeout.
    let waited: Value = client
        .post(format!("{base}/v1/agl/waits/rollouts"))
        .json(&json!({"rollout_ids": [rollout["rollout_id"]], "timeout": 0.1}))
        .send()
        .await
        .expect("answered")
        .json()
        .await
        .expect("JSON");
    assert_eq!(waited, json!([]));
    task.abort();
}

async fn axum_serve(listener: tokio::net::TcpListener, app: axum::Router) {
    let _ = axum::serve(listener, app).await;
}
