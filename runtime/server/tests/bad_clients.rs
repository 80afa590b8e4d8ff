//! The server under bad clients, over real loopback connections: slow and idle connections, the
//! connection cap, a gzip bomb, oversized, stalled and malformed bodies. Each test first stores a
//! rollout and checks at the end that the store still answers and still holds it.
//!
//! Timeouts are small configured values (1 s); no test measures how fast anything is. Waits for
//! something that must happen are bounded by [`PATIENCE`], so a regression fails instead of
//! hanging.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test: a failed step panics and fails it"
)]

mod support;

use agl_server::ServerOptions;
use agl_store::LightningStore;
use serde_json::{Value, json};
use std::io::Write;
use std::time::Duration;
use support::TestServer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The longest a test waits for something that must happen.
const PATIENCE: Duration = Duration::from_secs(30);

async fn server_with(options: ServerOptions) -> (TestServer, String) {
    let server = TestServer::with_options(options).await;
    let queued = server
        .post_ok(
            "/v1/agl/queues/rollouts/enqueue",
            &json!({"rollouts": [{"input": "stored before the bad client"}]}),
            201,
        )
        .await;
    let id = queued[0]["rollout_id"].as_str().expect("rollout id").to_owned();
    (server, id)
}

/// The store answers and still holds the rollout stored at the start.
async fn assert_intact(server: &TestServer, rollout_id: &str) {
    let stored = server.get_ok(&format!("/v1/agl/rollouts/{rollout_id}")).await;
    assert_eq!(stored["input"], "stored before the bad client", "{stored}");
    let health = server.get_ok("/v1/agl/health").await;
    assert_eq!(health["status"], "ok", "{health}");
}

async fn connect(server: &TestServer) -> TcpStream {
    TcpStream::connect(server.handle.local_addr()).await.expect("connects")
}

/// Reads until the server closes the connection; what it sent, or `None` if it never closed.
async fn read_until_closed(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut seen = Vec::new();
    let closed = tokio::time::timeout(PATIENCE, async {
        let mut buffer = [0u8; 4096];
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => seen.extend_from_slice(&buffer[..n]),
            }
        }
    })
    .await;
    closed.ok().map(|()| seen)
}

/// One `GET /v1/agl/health` on a raw connection, reading its whole answer (kept alive after).
async fn health_on(stream: &mut TcpStream) -> String {
    stream
        .write_all(b"GET /v1/agl/health HTTP/1.1\r\nhost: localhost\r\n\r\n")
        .await
        .expect("request sent");
    let mut answer = Vec::new();
    let mut buffer = [0u8; 1024];
    let complete = |answer: &[u8]| {
        let text = String::from_utf8_lossy(answer);
        let Some((head, body)) = text.split_once("\r\n\r\n") else {
            return false;
        };
        let length = head
            .lines()
            .find_map(|line| {
                line.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().to_owned())
            })
            .and_then(|v| v.parse::<usize>().ok());
        length.is_some_and(|length| body.len() >= length)
    };
    tokio::time::timeout(PATIENCE, async {
        while !complete(&answer) {
            let n = stream.read(&mut buffer).await.expect("answer read");
            assert!(n > 0, "closed before answering: {}", String::from_utf8_lossy(&answer));
            answer.extend_from_slice(&buffer[..n]);
        }
    })
    .await
    .expect("health answered");
    String::from_utf8_lossy(&answer).into_owned()
}

fn quick_timeouts() -> ServerOptions {
    ServerOptions {
        header_read_timeout: Duration::from_secs(1),
        body_read_timeout: Duration::from_secs(1),
        ..ServerOptions::default()
    }
}

// ---- slow and idle connections ------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_sent_byte_by_byte_are_cut_off_at_the_header_timeout_while_others_are_served() {
    let (server, id) = server_with(quick_timeouts()).await;
    let stream = connect(&server).await;
    let (mut reader, mut writer) = stream.into_split();
    // The slow client: a request head that never ends, one byte every 50 ms.
    let trickle = tokio::spawn(async move {
        let head = b"POST /v1/agl/queues/rollouts/enqueue HTTP/1.1\r\nhost: localhost\r\nx-slow: ";
        for byte in head.iter().copied().chain(std::iter::repeat(b'a')) {
            if writer.write_all(&[byte]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    // Others are served meanwhile.
    for _ in 0..3 {
        assert_intact(&server, &id).await;
    }
    let closed = tokio::time::timeout(PATIENCE, async {
        let mut sink = Vec::new();
        let _ = reader.read_to_end(&mut sink).await;
    })
    .await;
    assert!(
        closed.is_ok(),
        "a connection still sending its headers was never closed"
    );
    trickle.abort();
    assert_intact(&server, &id).await;
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_sends_nothing_or_idles_after_a_request_is_closed() {
    let (server, id) = server_with(quick_timeouts()).await;
    let mut silent = connect(&server).await;
    let mut kept_alive = connect(&server).await;
    let answer = health_on(&mut kept_alive).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        read_until_closed(&mut silent).await.is_some(),
        "a connection that never sent a byte stayed open"
    );
    assert!(
        read_until_closed(&mut kept_alive).await.is_some(),
        "an idle kept-alive connection stayed open"
    );
    assert_intact(&server, &id).await;
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_connection_cap_a_new_client_waits_until_a_connection_closes() {
    let server = TestServer::with_options(ServerOptions {
        max_connections: 2,
        header_read_timeout: Duration::from_secs(120),
        ..ServerOptions::default()
    })
    .await;
    // Stored in-process: the test's own HTTP client must not hold a connection.
    let stored = server
        .store
        .enqueue_rollout(agl_store::EnqueueRolloutRequest::new(json!(
            "stored before the bad client"
        )))
        .await
        .expect("enqueued");
    // Two connections that are surely being served (each has had an answer), then left idle.
    let mut first = connect(&server).await;
    let mut second = connect(&server).await;
    for idle in [&mut first, &mut second] {
        let answer = health_on(idle).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
    // One connection per request, none kept.
    let fresh = |timeout| {
        reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .timeout(timeout)
            .build()
            .expect("client")
    };
    let waiting = fresh(Duration::from_secs(1))
        .get(server.url("/v1/agl/health"))
        .send()
        .await;
    assert!(
        waiting.is_err(),
        "a third connection was served while two were open: {waiting:?}"
    );
    drop(first);
    let served = tokio::time::timeout(PATIENCE, async {
        loop {
            if let Ok(answer) = fresh(Duration::from_secs(1))
                .get(server.url("/v1/agl/health"))
                .send()
                .await
            {
                return answer.status().as_u16();
            }
        }
    })
    .await;
    assert_eq!(served.ok(), Some(200), "no client was served after an idle one closed");
    let again = fresh(PATIENCE)
        .get(server.url(&format!("/v1/agl/rollouts/{}", stored.rollout_id)))
        .send()
        .await
        .expect("answered")
        .json::<Value>()
        .await
        .expect("JSON");
    assert_eq!(again["input"], "stored before the bad client", "{again}");
    drop(second);
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_its_answer_is_cut_off_and_frees_its_slot() {
    let server = TestServer::with_options(ServerOptions {
        max_connections: 1,
        write_stall_timeout: Duration::from_secs(1),
        ..ServerOptions::default()
    })
    .await;
    // An answer far larger than the socket buffers: four rollouts of 8 MiB input each.
    let big = "x".repeat(8 << 20);
    for _ in 0..4 {
        server
            .store
            .enqueue_rollout(agl_store::EnqueueRolloutRequest::new(json!(big)))
            .await
            .expect("enqueued");
    }
    drop(big);
    let mut reader = connect(&server).await;
    reader
        .write_all(b"GET /v1/agl/rollouts HTTP/1.1\r\nhost: localhost\r\n\r\n")
        .await
        .expect("request sent");
    // It reads nothing. The one connection slot is its until the server gives up on it.
    let served = tokio::time::timeout(PATIENCE, async {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .timeout(PATIENCE)
            .build()
            .expect("client");
        client
            .get(server.url("/v1/agl/health"))
            .send()
            .await
            .map(|a| a.status().as_u16())
    })
    .await;
    assert!(
        matches!(served, Ok(Ok(200))),
        "the slot of a client that never reads was never freed: {served:?}"
    );
    drop(reader);
    server.handle.shutdown().await;
}

// ---- bodies -------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_stalls_is_408_with_a_detail() {
    let (server, id) = server_with(quick_timeouts()).await;
    let mut stream = connect(&server).await;
    stream
        .write_all(
            b"POST /v1/agl/queues/rollouts/enqueue HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n\
              content-length: 100\r\n\r\n{\"rollouts\": [",
        )
        .await
        .expect("sent");
    let answer = read_until_closed(&mut stream).await.expect("answered and closed");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("did not arrive within 1.000 s"), "{answer}");
    assert_intact(&server, &id).await;
    server.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_body_is_413_naming_the_limit_declared_or_chunked() {
    let (server, id) = server_with(ServerOptions {
        max_body_bytes: 4096,
        ..quick_timeouts()
    })
    .await;
    let big = json!({"rollouts": [{"input": "x".repeat(8192)}]}).to_string();
    let declared = server.post_raw("/v1/agl/queues/rollouts/enqueue", &big).await;
    assert!(declared.error(413).contains("limit of 4096 bytes"), "{}", declared.text);
    // Chunked: no length to refuse up front, the limit stops the read.
    let mut stream = connect(&server).await;
    let mut request = b"POST /v1/agl/queues/rollouts/enqueue HTTP/1.1\r\nhost: localhost\r\n\
                        content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
        .to_vec();
    for chunk in big.as_bytes().chunks(1000) {
        request.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        request.extend_from_slice(chunk);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"0\r\n\r\n");
    // The server may answer and close before taking the whole body in: a failed write is fine.
    let _ = stream.write_all(&request).await;
    let answer = read_until_closed(&mut stream).await.expect("answered and closed");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("limit of 4096 bytes"), "{answer}");
    let spans = server
        .send(
            "POST",
            "/v1/traces",
            Some(vec![0; 8192]),
            &[("content-type", "application/x-protobuf")],
        )
        .await;
    assert!(spans.error(413).contains("limit of 4096 bytes"), "{}", spans.text);
    assert_intact(&server, &id).await;
    server.handle.shutdown().await;
}

/// `POST /v1/agl/recordings` reads bodies past the server's limit for other routes, up to its own
/// (a larger one declared is refused before any of it is read), and stays under the token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_body_has_its_own_larger_limit_and_needs_the_token() {
    let (server, id) = server_with(ServerOptions {
        max_body_bytes: 4096,
        ..quick_timeouts()
    })
    .await;
    let big = json!({"rollout_id": "ro-nobody", "attempt_id": "at-nobody", "tape": "x".repeat(8192)});
    let read = server.post("/v1/agl/recordings", &big).await;
    assert!(
        read.error(404).contains("ro-nobody"),
        "read, then judged by the store: {}",
        read.text
    );
    let limit = agl_server::MAX_RECORDING_BODY_BYTES;
    let mut stream = connect(&server).await;
    let head = format!(
        "POST /v1/agl/recordings HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n{{",
        limit + 1
    );
    stream.write_all(head.as_bytes()).await.expect("sent");
    let answer = read_until_closed(&mut stream).await.expect("answered and closed");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains(&format!("limit of {limit} bytes")), "{answer}");
    assert_intact(&server, &id).await;
    server.handle.shutdown().await;

    let guarded = TestServer::with_options(ServerOptions {
        token: Some("s3cret".into()),
        ..ServerOptions::default()
    })
    .await;
    assert_eq!(guarded.post("/v1/agl/recordings", &big).await.status, 401);
    assert_eq!(guarded.get("/v1/agl/recordings/ro-1/at-1").await.status, 401);
    guarded.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_json_is_422_and_malformed_protobuf_is_400_each_with_a_message() {
    let (server, id) = server_with(ServerOptions::default()).await;
    let broken = server
        .post_raw("/v1/agl/queues/rollouts/enqueue", "{\"rollouts\": [")
        .await;
    assert!(broken.error(422).contains("not valid JSON"), "{}", broken.text);
    let misshaped = server
        .post_raw("/v1/agl/queues/rollouts/enqueue", "{\"rollouts\": 5}")
        .await;
    assert!(
        misshaped.error(422).contains("does not match the expected shape"),
        "{}",
        misshaped.text
    );
    let protobuf = server
        .send(
            "POST",
            "/v1/traces",
            Some(b"\xff\xff\xff\xff not a protobuf".to_vec()),
            &[("content-type", "application/x-protobuf")],
        )
        .await;
    assert_eq!(protobuf.status, 400, "{}", protobuf.text);
    assert!(
        protobuf.text.contains("Unable to parse OTLP traces payload"),
        "{}",
        protobuf.text
    );
    let otlp_json = server
        .send(
            "POST",
            "/v1/traces",
            Some(b"{\"resourceSpans\": [".to_vec()),
            &[("content-type", "application/json")],
        )
        .await;
    assert_eq!(otlp_json.status, 400, "{}", otlp_json.text);
    // The store's own routes never inflate: a gzip JSON body is just not JSON.
    let gzipped = server
        .send(
            "POST",
            "/v1/agl/queues/rollouts/enqueue",
            Some(gzip_of_zeros(1 << 20)),
            &[("content-type", "application/json"), ("content-encoding", "gzip")],
        )
        .await;
    assert!(gzipped.error(422).contains("not valid JSON"), "{}", gzipped.text);
    assert_intact(&server, &id).await;
    server.handle.shutdown().await;
}

// ---- a gzip bomb --------------------------------------------------------------------------------

/// `zeros` zero bytes as one gzip member, compressed a MiB at a time.
fn gzip_of_zeros(zeros: usize) -> Vec<u8> {
    let chunk = vec![0u8; 1 << 20];
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let mut left = zeros;
    while left > 0 {
        let n = left.min(chunk.len());
        encoder.write_all(&chunk[..n]).expect("compressed");
        left -= n;
    }
    encoder.finish().expect("compressed")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gzip_bomb_of_one_gib_is_413_without_being_inflated() {
    let (server, id) = server_with(ServerOptions::default()).await;
    let bomb = gzip_of_zeros(1 << 30);
    assert!(bomb.len() < 2 << 20, "the bomb is small: {} bytes", bomb.len());
    for content_type in ["application/x-protobuf", "application/json"] {
        let answer = server
            .send(
                "POST",
                "/v1/traces",
                Some(bomb.clone()),
                &[("content-type", content_type), ("content-encoding", "gzip")],
            )
            .await;
        assert_eq!(answer.status, 413, "{content_type}: {}", answer.text);
        assert!(
            answer
                .text
                .contains("inflates to more than the limit of 16777216 bytes"),
            "{content_type}: {}",
            answer.text
        );
    }
    assert_intact(&server, &id).await;
    server.handle.shutdown().await;
}
