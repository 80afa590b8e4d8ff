//! Outgoing HTTP (`wasi:http/outgoing-handler`) through the sandbox: the http-probe guest sends
//! the requests its task names to a tiny HTTP server on 127.0.0.1 started by each test (no other
//! address is ever contacted). Grants, denials, the budget, the response cap, the timeout, and the
//! spans each request leaves.

use crate::common::*;
use agl_store::{AttemptStatus, Span, StatusCode};
use agl_wasm::SandboxPolicy;
use agl_wasm::policy::HostPattern;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const HTTP_PROBE: &str = "tests/guests/http-probe";
const HTTP_SPAN: &str = "agl.http.request";

/// A loopback HTTP/1.1 server that answers by path and remembers what it was asked.
struct TestServer {
    addr: SocketAddr,
    /// `METHOD PATH host=<Host header> body=<bytes>` per request received.
    seen: Arc<Mutex<Vec<String>>>,
}

impl TestServer {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local addr");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(answer(stream, Arc::clone(&log)));
            }
        });
        Self { addr, seen }
    }

    fn port(&self) -> u16 {
        self.addr.port()
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port())
    }

    fn grant(&self) -> HostPattern {
        format!("http://127.0.0.1:{}", self.port()).parse().expect("grant")
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

/// Answers one request: `/hello`, `/echo` (how many body bytes came), `/big/N` (N bytes with a
/// length), `/chunked/N` (N bytes, chunked), `/missing` (404), `/silent` (never answers).
async fn answer(mut stream: TcpStream, seen: Arc<Mutex<Vec<String>>>) {
    let mut buffer = Vec::new();
    let head_end = loop {
        let mut chunk = [0u8; 4096];
        let Ok(n) = stream.read(&mut chunk).await else { return };
        if n == 0 {
            return;
        }
        buffer.extend_from_slice(&chunk[..n]);
        if buffer[0] == 0x16 {
            // A TLS ClientHello: this server speaks plain HTTP only.
            let _ = stream
                .write_all(b"HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n")
                .await;
            return;
        }
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.lines();
    let request_line = lines.next().unwrap_or_default().to_owned();
    let header = |name: &str| {
        head.lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_owned())
    };
    let chunked = header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
    let length: usize = header("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
    let mut body = buffer[head_end..].to_vec();
    let complete = |body: &[u8]| match chunked {
        true => body.starts_with(b"0\r\n\r\n") || body.windows(7).any(|w| w == b"\r\n0\r\n\r\n"),
        false => body.len() >= length,
    };
    while !complete(&body) {
        let mut chunk = [0u8; 4096];
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => body.extend_from_slice(&chunk[..n]),
        }
    }
    if chunked {
        body = dechunk(&body);
    }
    let mut parts = request_line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    seen.lock().unwrap().push(format!(
        "{method} {path} host={} body={}",
        header("host").unwrap_or_default(),
        body.len()
    ));
    let response = match path.split('/').collect::<Vec<_>>()[..] {
        ["", "hello"] => respond(200, b"hello from the test server"),
        ["", "echo"] => respond(200, format!("got {} bytes", body.len()).as_bytes()),
        ["", "big", n] => respond(200, &vec![b'x'; n.parse().unwrap_or(0)]),
        ["", "chunked", n] => {
            let total: usize = n.parse().unwrap_or(0);
            let mut out = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n".to_vec();
            let mut left = total;
            while left > 0 {
                let size = left.min(1000);
                out.extend_from_slice(format!("{size:x}\r\n").as_bytes());
                out.extend_from_slice(&vec![b'y'; size]);
                out.extend_from_slice(b"\r\n");
                left -= size;
            }
            out.extend_from_slice(b"0\r\n\r\n");
            out
        }
        ["", "silent"] => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            return;
        }
        _ => respond(404, b"no such page"),
    };
    let _ = stream.write_all(&response).await;
    let _ = stream.shutdown().await;
}

/// A chunked body's data (sizes in hex, each chunk followed by CRLF, ended by a 0-size chunk).
fn dechunk(mut framed: &[u8]) -> Vec<u8> {
    let mut data = Vec::new();
    while let Some(line_end) = framed.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(String::from_utf8_lossy(&framed[..line_end]).trim(), 16).unwrap_or(0);
        if size == 0 || framed.len() < line_end + 2 + size {
            break;
        }
        data.extend_from_slice(&framed[line_end + 2..line_end + 2 + size]);
        framed = &framed[(line_end + 4 + size).min(framed.len())..];
    }
    data
}

fn respond(status: u16, body: &[u8]) -> Vec<u8> {
    let reason = if status == 200 { "OK" } else { "Not Found" };
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

fn probe(policy: SandboxPolicy) -> agl_wasm::AgentComponent {
    load(HTTP_PROBE, policy)
}

fn granting(patterns: impl IntoIterator<Item = HostPattern>) -> SandboxPolicy {
    let mut policy = SandboxPolicy::default();
    policy.http.allowed_hosts = patterns.into_iter().collect::<Vec<_>>().into();
    policy
}

/// Runs the probe on `requests` (and an operation name); returns the run and its HTTP spans.
async fn fetch(agent: &agl_wasm::AgentComponent, requests: Value, operation: Option<&str>) -> Ran {
    let ran = run(
        agent,
        json!({"requests": requests, "operation": operation}),
        echo_llm(),
        None,
    )
    .await;
    assert_eq!(
        ran.outcome.status,
        AttemptStatus::Succeeded,
        "the probe never fails on the host's answers: {:?}",
        ran.outcome.failure
    );
    ran
}

fn http_spans(ran: &Ran) -> Vec<&Arc<Span>> {
    ran.spans_named(HTTP_SPAN)
}

fn attr<'a>(span: &'a Span, key: &str) -> &'a Value {
    span.attributes
        .get(key)
        .unwrap_or_else(|| panic!("{key} missing from {:?}", span.attributes))
}

fn description(span: &Span) -> &str {
    span.status.description.as_deref().unwrap_or_default()
}

#[tokio::test]
async fn a_granted_host_answers_the_guest_and_each_request_is_a_span_of_the_operation() {
    let server = TestServer::start().await;
    let agent = probe(granting([server.grant()]));
    let requests = json!([
        {"url": server.url("/hello")},
        {"url": server.url("/echo"), "method": "POST", "body": "ping"},
    ]);
    let ran = fetch(&agent, requests, Some("fetching")).await;
    assert_eq!(ran.outcome.reward, Some(2.0), "{:?}", ran.logs());
    let logs = ran.logs();
    assert!(
        logs.iter()
            .any(|l| l.ends_with("status 200, 26 bytes: hello from the test server")),
        "{logs:?}"
    );
    assert!(logs.iter().any(|l| l.ends_with("got 4 bytes")), "{logs:?}");
    let host = format!("host=127.0.0.1:{}", server.port());
    assert_eq!(
        server.seen(),
        vec![format!("GET /hello {host} body=0"), format!("POST /echo {host} body=4")]
    );

    let operation = ran
        .spans_named(agl_store::semconv::OPERATION_SPAN)
        .into_iter()
        .find(|s| s.attributes[agl_store::semconv::OPERATION_NAME] == "fetching")
        .expect("the operation span");
    let spans = http_spans(&ran);
    assert_eq!(spans.len(), 2);
    for span in &spans {
        assert_eq!(span.parent_id.as_deref(), Some(operation.span_id.as_str()), "nested");
        assert_eq!(span.status.status_code, StatusCode::Ok, "{:?}", span.status);
        assert_eq!(attr(span, "url.scheme"), "http");
        assert_eq!(attr(span, "server.address"), "127.0.0.1");
        assert_eq!(attr(span, "server.port"), i64::from(server.port()));
        assert_eq!(attr(span, "http.response.status_code"), 200);
        assert_eq!(attr(span, "agl.http.response.body.complete"), true);
        assert!(attr(span, "agl.http.latency_ms").as_f64().is_some_and(|ms| ms >= 0.0));
    }
    let hello = spans
        .iter()
        .find(|s| attr(s, "url.path") == "/hello")
        .expect("GET /hello");
    assert_eq!(attr(hello, "http.request.method"), "GET");
    assert_eq!(attr(hello, "http.request.body.size"), 0);
    assert_eq!(attr(hello, "http.response.body.size"), 26);
    assert_eq!(attr(hello, "agl.http.requests_used"), 1);
    let echo = spans
        .iter()
        .find(|s| attr(s, "url.path") == "/echo")
        .expect("POST /echo");
    assert_eq!(attr(echo, "http.request.method"), "POST");
    assert_eq!(attr(echo, "http.request.body.size"), 4);
    assert_eq!(attr(echo, "agl.http.requests_used"), 2);
    assert!(
        spans.iter().all(|s| !s.attributes.values().any(|v| v == "ping")),
        "bodies are not recorded"
    );
}

#[tokio::test]
async fn exchanges_replay_from_the_recording_without_reaching_the_server() {
    let server = TestServer::start().await;
    let mut policy = granting([server.grant()]);
    policy.http.max_response_bytes = 1000;
    let agent = probe(policy);
    let requests = json!([
        {"url": server.url("/hello")},
        {"url": server.url("/echo"), "method": "POST", "body": "ping"},
        {"url": server.url("/missing")},
        {"url": server.url("/big/5000")},
        {"url": server.url("/chunked/5000")},
        {"url": "http://not-granted.example/"},
        {"url": format!("http://127.0.0.1:{}/refused", free_port())},
    ]);
    let ran = fetch(&agent, requests, Some("fetching")).await;
    let asked = server.seen().len();
    assert_replays_identically(&ran, &agent).await;
    assert_eq!(server.seen().len(), asked, "the replay sent nothing");
}

/// A loopback port nothing listens on.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

#[tokio::test]
async fn a_host_not_granted_is_denied_in_the_guest_and_the_denial_recorded() {
    let server = TestServer::start().await;
    let other = TestServer::start().await;
    for (policy, url) in [
        (SandboxPolicy::default(), server.url("/hello")),
        // Another port of a granted address, and a name for it, are other hosts.
        (granting([server.grant()]), other.url("/hello")),
        (
            granting([server.grant()]),
            format!("http://localhost:{}/hello", server.port()),
        ),
        (
            granting([server.grant()]),
            format!("https://127.0.0.1:{}/hello", server.port()),
        ),
    ] {
        let agent = probe(policy);
        let ran = fetch(&agent, json!([{"url": url}]), None).await;
        assert_eq!(ran.outcome.reward, Some(0.0), "{url}");
        let logs = ran.logs();
        assert!(
            logs.iter()
                .any(|l| l.contains("handle error") && l.contains("HttpRequestDenied")),
            "{url}: {logs:?}"
        );
        let spans = http_spans(&ran);
        assert_eq!(spans.len(), 1, "{url}");
        let span = spans[0];
        assert_eq!(span.status.status_code, StatusCode::Error);
        assert!(description(span).contains("is not granted"), "{:?}", span.status);
        assert!(description(span).contains("--agent-http"), "{:?}", span.status);
        assert_eq!(attr(span, "error.type"), "HTTP-request-denied");
        // Named for the run's summary: the origin (no path) and the flag that grants it.
        let origin = url.trim_end_matches("/hello");
        assert_eq!(attr(span, "agl.sandbox.refused"), &json!(format!("HTTP to {origin}")));
        assert_eq!(
            attr(span, "agl.sandbox.grant"),
            &json!(format!("--agent-http {origin}"))
        );
        assert_eq!(span.parent_id.as_deref(), Some(ran.root().span_id.as_str()));
    }
    assert!(server.seen().is_empty() && other.seen().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn a_name_granted_exactly_may_resolve_to_loopback() {
    let server = TestServer::start().await;
    let grant = format!("http://localhost:{}", server.port()).parse().unwrap();
    let agent = probe(granting([grant]));
    let url = format!("http://localhost:{}/hello", server.port());
    let ran = fetch(&agent, json!([{"url": url}]), None).await;
    assert_eq!(ran.outcome.reward, Some(1.0), "{:?}", ran.logs());
    assert_eq!(
        server.seen(),
        vec![format!("GET /hello host=localhost:{} body=0", server.port())]
    );
    assert_eq!(attr(http_spans(&ran)[0], "server.address"), "localhost");
}

/// User info in a URL (`user:secret@`) would travel in the `Host` header: the request is refused
/// before anything is resolved or sent, and its span says why without repeating the secret.
#[tokio::test]
async fn a_url_with_user_info_is_refused_before_anything_is_sent() {
    let server = TestServer::start().await;
    let localhost = format!("http://localhost:{}", server.port()).parse().unwrap();
    let agent = probe(granting([server.grant(), localhost]));
    let urls = [
        format!("http://user:secret@127.0.0.1:{}/hello", server.port()),
        format!("http://user@LOCALHOST.:{}/hello", server.port()),
    ];
    let requests: Vec<Value> = urls.iter().map(|url| json!({"url": url})).collect();
    let ran = fetch(&agent, json!(requests), None).await;
    assert_eq!(ran.outcome.reward, Some(0.0), "{:?}", ran.logs());
    let logs = ran.logs();
    for url in &urls {
        assert!(
            logs.iter()
                .any(|l| l.contains(url.as_str()) && l.contains("handle error: ErrorCode::HttpRequestDenied")),
            "{url}: {logs:?}"
        );
    }
    let spans = http_spans(&ran);
    assert_eq!(spans.len(), 2);
    for span in spans {
        assert_eq!(span.status.status_code, StatusCode::Error);
        assert_eq!(attr(span, "error.type"), "HTTP-request-denied");
        assert!(description(span).contains("user info"), "{:?}", span.status);
        assert!(!format!("{span:?}").contains("secret"), "{span:?}");
    }
    assert!(server.seen().is_empty(), "nothing was sent: {:?}", server.seen());
    still_serves_http(&agent, &server).await;
}

/// A host is normalised once (case, one trailing dot): `LOCALHOST.` is the `localhost` its grant
/// names, resolved as that name (the hosts file, not the network's resolver) and sent as it in
/// `Host`; `127.0.0.1.` is that address. A name the resolver would read as an address (`127.1`)
/// is no host at all.
#[tokio::test]
async fn a_trailing_dot_name_is_the_name_its_grant_names_everywhere() {
    let server = TestServer::start().await;
    let port = server.port();
    let localhost = format!("http://localhost:{port}").parse().unwrap();
    let mut policy = granting([localhost, server.grant()]);
    policy.http.timeout = Duration::from_secs(5);
    let agent = probe(policy);
    let requests = json!([
        {"url": format!("http://LOCALHOST.:{port}/hello")},
        {"url": format!("http://127.0.0.1.:{port}/hello")},
        {"url": format!("http://127.1:{port}/hello")},
    ]);
    let ran = fetch(&agent, requests, None).await;
    assert_eq!(ran.outcome.reward, Some(2.0), "{:?}", ran.logs());
    assert_eq!(
        server.seen(),
        vec![
            format!("GET /hello host=localhost:{port} body=0"),
            format!("GET /hello host=127.0.0.1:{port} body=0"),
        ]
    );
    let spans = http_spans(&ran);
    assert_eq!(spans.len(), 3);
    for address in ["localhost", "127.0.0.1"] {
        let span = spans
            .iter()
            .find(|s| s.attributes.get("server.address") == Some(&json!(address)))
            .unwrap_or_else(|| panic!("no span names {address}: {spans:?}"));
        assert_eq!(attr(span, "http.response.status_code"), 200);
    }
    let numeric = spans
        .iter()
        .find(|s| s.attributes.get("error.type") == Some(&json!("invalid-uri")))
        .unwrap_or_else(|| panic!("127.1 is refused as no host: {spans:?}"));
    assert!(description(numeric).contains("'127.1'"), "{:?}", numeric.status);
    let logs = ran.logs();
    assert!(
        logs.iter()
            .any(|l| l.contains("127.1:") && l.contains("handle error: ErrorCode::HttpRequestUriInvalid")),
        "{logs:?}"
    );
}

#[tokio::test]
async fn the_request_budget_stops_the_third_request() {
    let server = TestServer::start().await;
    let mut policy = granting([server.grant()]);
    policy.http.max_requests = 2;
    let agent = probe(policy);
    let requests = json!([{"url": server.url("/hello")}, {"url": server.url("/hello")}, {"url": server.url("/hello")}]);
    let ran = fetch(&agent, requests, None).await;
    assert_eq!(ran.outcome.reward, Some(2.0), "{:?}", ran.logs());
    assert_eq!(server.seen().len(), 2);
    let denied: Vec<_> = http_spans(&ran)
        .into_iter()
        .filter(|s| s.status.status_code == StatusCode::Error)
        .collect();
    assert_eq!(denied.len(), 1);
    assert!(
        description(denied[0]).contains("2 HTTP requests are spent"),
        "{:?}",
        denied[0].status
    );
    assert_eq!(
        attr(denied[0], "agl.sandbox.refused"),
        "HTTP requests past 2 per attempt"
    );
    assert_eq!(attr(denied[0], "agl.sandbox.grant"), "--agent-http-requests");
    assert!(ran.logs().iter().any(|l| l.contains("HttpRequestDenied")));
}

#[tokio::test]
async fn a_response_body_past_the_cap_fails_in_the_guest() {
    let server = TestServer::start().await;
    let mut policy = granting([server.grant()]);
    policy.http.max_response_bytes = 1000;
    let agent = probe(policy);
    let requests = json!([
        {"url": server.url("/big/1000")},
        {"url": server.url("/big/5000")},
        {"url": server.url("/chunked/5000")},
        {"url": server.url("/big/5000"), "method": "HEAD"},
    ]);
    let ran = fetch(&agent, requests, None).await;
    assert_eq!(
        ran.outcome.reward,
        Some(2.0),
        "the body within the cap, and HEAD's (none): {:?}",
        ran.logs()
    );
    let logs = ran.logs();
    assert!(
        logs.iter()
            .any(|l| l.contains("/big/5000") && l.contains("response error") && l.contains("HttpResponseBodySize")),
        "a declared length past the cap fails the response: {logs:?}"
    );
    assert!(
        logs.iter()
            .any(|l| l.contains("/chunked/5000") && l.contains("body error") && l.contains("HttpResponseBodySize")),
        "an undeclared one fails the body where it passes the cap, read as its wasi:http code: {logs:?}"
    );
    let capped: Vec<_> = http_spans(&ran)
        .into_iter()
        .filter(|s| s.status.status_code == StatusCode::Error)
        .collect();
    assert_eq!(capped.len(), 2);
    for span in capped {
        assert_eq!(attr(span, "error.type"), "response-body-size");
        assert!(description(span).contains("1000 "), "{:?}", span.status);
        assert!(
            attr(span, "http.response.body.size")
                .as_u64()
                .is_some_and(|n| n <= 2000)
        );
    }
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let server = TestServer::start().await;
    let mut policy = granting([server.grant()]);
    policy.http.timeout = Duration::from_millis(300);
    let agent = probe(policy);
    let started = Instant::now();
    let requests = json!([{"url": server.url("/silent")}, {"url": server.url("/hello")}]);
    let ran = fetch(&agent, requests, None).await;
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    assert_eq!(
        ran.outcome.reward,
        Some(1.0),
        "the next request still works: {:?}",
        ran.logs()
    );
    let logs = ran.logs();
    assert!(
        logs.iter()
            .any(|l| l.contains("/silent") && l.contains("response error") && l.contains("HttpResponseTimeout")),
        "{logs:?}"
    );
    let span = http_spans(&ran)
        .into_iter()
        .find(|s| attr(s, "url.path") == "/silent")
        .expect("the silent request's span");
    assert_eq!(attr(span, "error.type"), "timeout");
    assert!(description(span).contains("timed out after 300ms"), "{:?}", span.status);
}

#[tokio::test]
async fn bad_requests_and_unread_bodies_fail_or_end_only_their_own_request() {
    let server = TestServer::start().await;
    let agent = probe(granting([server.grant()]));
    let requests = json!([
        {"url": format!("ftp://127.0.0.1:{}/file", server.port())},
        {"url": server.url("/missing")},
        {"url": server.url("/hello"), "read_body": false},
        {"url": server.url("/hello")},
    ]);
    let ran = fetch(&agent, requests, None).await;
    assert_eq!(ran.outcome.reward, Some(3.0), "{:?}", ran.logs());
    let logs = ran.logs();
    assert!(
        logs.iter().any(|l| l.contains("ftp://") && l.contains("handle error")),
        "{logs:?}"
    );
    assert!(logs.iter().any(|l| l.contains("status 404")), "{logs:?}");
    let spans = http_spans(&ran);
    assert_eq!(spans.len(), 4, "the refused URL is recorded too");
    let missing = spans
        .iter()
        .find(|s| s.attributes.get("url.path") == Some(&json!("/missing")))
        .unwrap();
    assert_eq!(missing.status.status_code, StatusCode::Error, "a 4xx answer");
    assert!(description(missing).contains("404"));
    let unread = spans
        .iter()
        .filter(|s| s.attributes.get("agl.http.response.body.complete") == Some(&json!(false)))
        .count();
    assert_eq!(unread, 1, "the body dropped unread ends its span as incomplete");
    still_serves_http(&agent, &server).await;
}

/// After odd requests, the same component still fetches normally.
async fn still_serves_http(agent: &agl_wasm::AgentComponent, server: &TestServer) {
    let ran = fetch(agent, json!([{"url": server.url("/hello")}]), None).await;
    assert_eq!(ran.outcome.reward, Some(1.0), "{:?}", ran.logs());
}

#[tokio::test]
async fn a_request_in_flight_when_the_attempt_is_stopped_is_still_recorded() {
    let server = TestServer::start().await;
    let mut policy = granting([server.grant()]);
    // The guest waits in a host call: the attempt is stopped at deadline + LLM timeout + 1 s.
    policy.limits.deadline = Duration::from_millis(500);
    policy.llm.timeout = Duration::from_millis(500);
    let agent = probe(policy);
    let ran = run(
        &agent,
        json!({"requests": [{"url": server.url("/silent")}]}),
        echo_llm(),
        None,
    )
    .await;
    assert_eq!(ran.outcome.status, AttemptStatus::Failed);
    assert!(
        ran.outcome.failure.as_deref().is_some_and(|f| f.contains("deadline")),
        "{:?}",
        ran.outcome.failure
    );
    let spans = http_spans(&ran);
    assert_eq!(
        spans.len(),
        1,
        "the request's span ends with the instance, before its trace"
    );
    assert_eq!(attr(spans[0], "error.type"), "abandoned");
    assert!(
        description(spans[0]).contains("instance ended"),
        "{:?}",
        spans[0].status
    );
    assert_eq!(spans[0].parent_id.as_deref(), Some(ran.root().span_id.as_str()));
}

#[tokio::test]
async fn the_sdk_client_reaches_a_granted_host_and_reads_a_denial_as_a_sentence() {
    let server = TestServer::start().await;
    let agent = probe(granting([server.grant()]));
    let requests = json!([
        {"url": server.url("/echo"), "method": "POST", "body": "twelve bytes", "via_sdk": true},
        {"url": "http://127.0.0.1:9/hello", "via_sdk": true},
        // Past the 4,096 bytes one blocking write of a WASI stream may take.
        {"url": server.url("/echo"), "method": "POST", "body": "x".repeat(20_000), "via_sdk": true},
    ]);
    let ran = fetch(&agent, requests, None).await;
    assert_eq!(ran.outcome.reward, Some(2.0), "{:?}", ran.logs());
    let logs = ran.logs();
    assert!(
        logs.iter()
            .any(|l| l.ends_with("sdk: status 200, 12 bytes: got 12 bytes")),
        "{logs:?}"
    );
    assert!(
        logs.iter()
            .any(|l| l.contains("sdk error: GET http://127.0.0.1:9/hello failed: denied by the sandbox")),
        "{logs:?}"
    );
    assert!(
        logs.iter().any(|l| l.ends_with("got 20000 bytes")),
        "a large body is sent whole: {logs:?}"
    );
    assert_eq!(http_spans(&ran).len(), 3);
    assert_eq!(server.seen().len(), 2);
}

#[tokio::test]
async fn https_to_a_server_that_speaks_no_tls_fails_its_handshake() {
    let server = TestServer::start().await;
    let grant = format!("https://127.0.0.1:{}", server.port()).parse().unwrap();
    let mut policy = granting([grant]);
    policy.http.timeout = Duration::from_secs(5);
    let agent = probe(policy);
    let url = format!("https://127.0.0.1:{}/hello", server.port());
    let ran = fetch(&agent, json!([{"url": url}]), None).await;
    assert_eq!(ran.outcome.reward, Some(0.0));
    let logs = ran.logs();
    assert!(
        logs.iter().any(|l| l.contains("response error") && l.contains("Tls")),
        "{logs:?}"
    );
    let span = http_spans(&ran)[0];
    assert_eq!(attr(span, "error.type"), "tls");
    assert_eq!(attr(span, "url.scheme"), "https");
    assert!(
        description(span).contains("TLS with 127.0.0.1 failed"),
        "{:?}",
        span.status
    );
}
