//! What every listener refuses before any route sees a request (`agl_server`'s edge), over a real
//! server: bodies that are not JSON (what a web page may send cross-site without asking), an
//! `Origin` that is not the server's own, a `Host` a loopback-bound server does not answer (DNS
//! rebinding), and paths starting with `//` — and what still passes: JSON with parameters, OTLP
//! protobuf, body-less POSTs, the allowed hosts and origins. Raw requests where `reqwest` would
//! set `Host` or `Content-Type` itself.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test: a failed step panics and fails it"
)]

mod support;

use agl_server::{ServerOptions, Site};
use serde_json::{Value, json};
use std::net::SocketAddr;
use support::TestServer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ENQUEUE: &str = "/v1/agl/queues/rollouts/enqueue";
const ROLLOUT: &str = r#"{"rollouts": [{"input": 1}]}"#;

/// An answer to a raw request: its status and body.
struct Raw {
    status: u16,
    body: String,
}

impl Raw {
    /// The `detail` of a JSON error answer with this status.
    fn detail(&self, status: u16) -> String {
        assert_eq!(self.status, status, "{}", self.body);
        let body: Value = serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body));
        body["detail"].as_str().expect("a detail").to_owned()
    }
}

/// Sends `method path` with exactly these headers (plus `content-length` and `connection:
/// close`) and `body`.
async fn raw(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Raw {
    let mut request = format!("{method} {path} HTTP/1.1\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!("content-length: {}\r\nconnection: close\r\n\r\n", body.len()));
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("send the head");
    stream.write_all(body).await.expect("send the body");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.expect("read the answer");
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {answer}"));
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    Raw { status, body }
}

/// The `Host` a client of `server` sends: `127.0.0.1:PORT`.
fn own_host(server: &TestServer) -> String {
    server.handle.local_addr().to_string()
}

async fn rollouts_in(server: &TestServer) -> usize {
    let page = server.get_ok("/v1/agl/rollouts").await;
    page["items"].as_array().expect("items").len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_plain_json_post_is_refused_415_and_changes_nothing() {
    let server = TestServer::start().await;
    let host = own_host(&server);
    // What `fetch(url, {method: "POST", body: JSON.stringify(...)})` sends from any page.
    let answer = raw(
        server.handle.local_addr(),
        "POST",
        ENQUEUE,
        &[("host", &host), ("content-type", "text/plain;charset=UTF-8")],
        ROLLOUT.as_bytes(),
    )
    .await;
    let detail = answer.detail(415);
    assert!(
        detail.contains("must be JSON") && detail.contains("text/plain"),
        "{detail}"
    );
    // A body with no content type at all (a Blob) is no better.
    let untyped = raw(
        server.handle.local_addr(),
        "POST",
        ENQUEUE,
        &[("host", &host)],
        ROLLOUT.as_bytes(),
    )
    .await;
    untyped.detail(415);
    assert_eq!(rollouts_in(&server).await, 0);
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn form_and_multipart_posts_are_refused() {
    let server = TestServer::start().await;
    let host = own_host(&server);
    for content_type in ["application/x-www-form-urlencoded", "multipart/form-data; boundary=b"] {
        let answer = raw(
            server.handle.local_addr(),
            "POST",
            "/v1/agl/resources",
            &[("host", &host), ("content-type", content_type)],
            br#"{"resources": {}}"#,
        )
        .await;
        answer.detail(415);
    }
    let resources = server.get_ok("/v1/agl/resources").await;
    assert_eq!(resources["items"], json!([]));
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_with_parameters_and_body_less_posts_are_accepted() {
    let server = TestServer::start().await;
    let enqueued = server
        .send(
            "POST",
            ENQUEUE,
            Some(ROLLOUT.as_bytes().to_vec()),
            &[("content-type", "application/json; charset=utf-8")],
        )
        .await;
    assert_eq!(enqueued.status, 201, "{}", enqueued.text);
    // A POST with no body needs no content type (the dequeue's body is optional).
    let dequeued = server.send("POST", "/v1/agl/queues/rollouts/dequeue", None, &[]).await;
    assert_eq!(dequeued.status, 200, "{}", dequeued.text);
    assert_eq!(dequeued.json().as_array().map(Vec::len), Some(1));
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_protobuf_is_still_accepted() {
    let server = TestServer::start().await;
    // An ExportTraceServiceRequest holding one empty ResourceSpans (field 1, length 0).
    let answer = server
        .send(
            "POST",
            "/v1/traces",
            Some(vec![0x0a, 0x00]),
            &[("content-type", "application/x-protobuf")],
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_origin_is_refused_403_and_the_own_origin_accepted() {
    let server = TestServer::start().await;
    let json = [("content-type", "application/json")];
    let foreign = server
        .send(
            "POST",
            ENQUEUE,
            Some(ROLLOUT.as_bytes().to_vec()),
            &[json[0], ("origin", "http://evil.example")],
        )
        .await;
    let detail = foreign.error(403);
    assert!(
        detail.contains("http://evil.example") && detail.contains("--allowed-origin"),
        "{detail}"
    );
    // Reading is refused to other origins too.
    let read = server
        .send("GET", "/v1/agl/rollouts", None, &[("origin", "http://evil.example")])
        .await;
    read.error(403);
    assert_eq!(rollouts_in(&server).await, 0);

    let own = server.base.clone();
    let accepted = server
        .send(
            "POST",
            ENQUEUE,
            Some(ROLLOUT.as_bytes().to_vec()),
            &[json[0], ("origin", &own)],
        )
        .await;
    assert_eq!(accepted.status, 201, "{}", accepted.text);
    assert_eq!(rollouts_in(&server).await, 1);
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn origin_null_is_refused() {
    let server = TestServer::start().await;
    let answer = server
        .send(
            "POST",
            ENQUEUE,
            Some(ROLLOUT.as_bytes().to_vec()),
            &[("content-type", "application/json"), ("origin", "null")],
        )
        .await;
    answer.error(403);
    assert_eq!(rollouts_in(&server).await, 0);
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_origin_is_accepted() {
    let server = TestServer::with_options(ServerOptions {
        allowed_origins: vec!["https://dash.example.com".to_owned()],
        ..ServerOptions::default()
    })
    .await;
    let answer = server
        .send(
            "GET",
            "/v1/agl/rollouts",
            None,
            &[("origin", "https://dash.example.com")],
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let other = server
        .send(
            "GET",
            "/v1/agl/rollouts",
            None,
            &[("origin", "https://other.example.com")],
        )
        .await;
    other.error(403);
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebinding_host_is_refused_on_loopback_and_accepted_when_allowed() {
    let server = TestServer::start().await;
    let addr = server.handle.local_addr();
    let port = addr.port();
    // A page of evil.example whose name now resolves to 127.0.0.1: same origin as far as the
    // browser knows, so `Origin` (if any) matches `Host`.
    let origin = format!("http://evil.example:{port}");
    let rebinding = raw(
        addr,
        "POST",
        ENQUEUE,
        &[
            ("host", &format!("evil.example:{port}")),
            ("origin", &origin),
            ("content-type", "application/json"),
        ],
        ROLLOUT.as_bytes(),
    )
    .await;
    let detail = rebinding.detail(421);
    assert!(
        detail.contains("evil.example") && detail.contains("--allowed-host"),
        "{detail}"
    );
    let read = raw(addr, "GET", "/v1/agl/statistics", &[("host", "evil.example")], b"").await;
    read.detail(421);
    for host in [
        "localhost",
        &format!("localhost:{port}"),
        "app.localhost",
        "127.0.0.1",
        "[::1]",
    ] {
        let answer = raw(addr, "GET", "/v1/agl/statistics", &[("host", host)], b"").await;
        assert_eq!(answer.status, 200, "{host}: {}", answer.body);
    }
    assert_eq!(rollouts_in(&server).await, 0);
    server.handle.shutdown().await;

    let allowing = TestServer::with_options(ServerOptions {
        allowed_hosts: vec!["evil.example".to_owned()],
        ..ServerOptions::default()
    })
    .await;
    let addr = allowing.handle.local_addr();
    let port = addr.port();
    let answer = raw(
        addr,
        "POST",
        ENQUEUE,
        &[
            ("host", &format!("evil.example:{port}")),
            ("origin", &format!("http://evil.example:{port}")),
            ("content-type", "application/json"),
        ],
        ROLLOUT.as_bytes(),
    )
    .await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    assert_eq!(rollouts_in(&allowing).await, 1);
    allowing.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_bound_to_every_interface_answers_any_host() {
    let server = TestServer::with_options(ServerOptions {
        host: "0.0.0.0".parse().expect("an address"),
        ..ServerOptions::default()
    })
    .await;
    let addr = SocketAddr::from(([127, 0, 0, 1], server.handle.local_addr().port()));
    let answer = raw(addr, "GET", "/v1/agl/statistics", &[("host", "store.lan:4747")], b"").await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_starting_with_two_slashes_is_404() {
    const FILES: &[(&str, &[u8])] = &[("index.html", b"<!doctype html><title>app</title>")];
    let server = TestServer::with_options(ServerOptions {
        site: Some(Site::Embedded(FILES)),
        ..ServerOptions::default()
    })
    .await;
    let addr = server.handle.local_addr();
    let host = own_host(&server);
    // Served, the page would resolve its API base against `//evil.example/` and send the token there.
    for path in ["//evil.example/v1/agl/statistics", "//evil.example/", "//"] {
        let answer = raw(addr, "GET", path, &[("host", &host)], b"").await;
        answer.detail(404);
    }
    let page = raw(addr, "GET", "/some/view", &[("host", &host)], b"").await;
    assert_eq!(page.status, 200, "the site still answers: {}", page.body);
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_router_guards_another_router_as_the_store_is_guarded() {
    use axum::routing::{get, post};
    let router = axum::Router::new()
        .route("/hello", get(|| async { "hello" }))
        .route("/echo", post(|body: String| async move { body }));
    let options = ServerOptions {
        port: 0,
        token: Some("s3cret".to_owned()),
        ..ServerOptions::default()
    };
    let handle = agl_server::serve_router(options, router).await.expect("serves");
    let addr = handle.local_addr();
    let host = addr.to_string();
    let auth = ("authorization", "Bearer s3cret");
    let hello = raw(addr, "GET", "/hello", &[("host", &host), auth], b"").await;
    assert_eq!((hello.status, hello.body.as_str()), (200, "hello"));
    raw(addr, "GET", "/hello", &[("host", &host)], b"").await.detail(401);
    let unknown = raw(addr, "GET", "/v1/agl/rollouts", &[("host", &host), auth], b"").await;
    assert_eq!(unknown.detail(404), "Not Found");
    let echoed = raw(
        addr,
        "POST",
        "/echo",
        &[("host", &host), auth, ("content-type", "application/json")],
        b"{}",
    )
    .await;
    assert_eq!((echoed.status, echoed.body.as_str()), (200, "{}"));
    let plain = raw(
        addr,
        "POST",
        "/echo",
        &[("host", &host), auth, ("content-type", "text/plain")],
        b"{}",
    )
    .await;
    plain.detail(415);
    let foreign = raw(
        addr,
        "POST",
        "/echo",
        &[
            ("host", &host),
            auth,
            ("content-type", "application/json"),
            ("origin", "http://evil.example"),
        ],
        b"{}",
    )
    .await;
    foreign.detail(403);
    raw(addr, "GET", "/hello", &[("host", "evil.example"), auth], b"")
        .await
        .detail(421);
    raw(addr, "GET", "//evil.example/hello", &[("host", &host), auth], b"")
        .await
        .detail(404);
    handle.shutdown().await;
}
