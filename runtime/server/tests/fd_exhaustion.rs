//! A server whose process runs out of file descriptors: `accept` fails with EMFILE, the server
//! waits it out, and once descriptors are free again it serves the connection that waited, with
//! everything stored before still there. Alone in its test binary because it lowers the whole
//! process's open-file limit.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test: a failed step panics and fails it"
)]
#![cfg(target_os = "linux")]

mod support;

use serde_json::json;
use std::fs::File;
use std::time::Duration;
use support::TestServer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The longest the test waits for something that must happen.
const PATIENCE: Duration = Duration::from_secs(30);

fn open_file_limit() -> libc::rlimit {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit through a valid pointer.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    assert_eq!(rc, 0, "getrlimit: {}", std::io::Error::last_os_error());
    limit
}

fn set_open_file_limit(limit: libc::rlimit) {
    // SAFETY: setrlimit reads one rlimit through a valid pointer.
    let rc = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) };
    assert_eq!(rc, 0, "setrlimit: {}", std::io::Error::last_os_error());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_out_of_file_descriptors_pauses_accepting_and_never_stops_the_server() {
    let server = TestServer::start().await;
    let queued = server
        .post_ok(
            "/v1/agl/queues/rollouts/enqueue",
            &json!({"rollouts": [{"input": "stored before the descriptors ran out"}]}),
            201,
        )
        .await;
    let rollout_id = queued[0]["rollout_id"].as_str().expect("rollout id").to_owned();

    // A low limit, then every free descriptor taken by files.
    let original = open_file_limit();
    let in_use = std::fs::read_dir("/proc/self/fd").expect("/proc/self/fd").count() as u64;
    set_open_file_limit(libc::rlimit {
        rlim_cur: (in_use + 64).min(original.rlim_max),
        rlim_max: original.rlim_max,
    });
    let mut hogs = Vec::new();
    loop {
        match File::open("/dev/null") {
            Ok(file) => hogs.push(file),
            Err(error) => {
                assert_eq!(error.raw_os_error(), Some(libc::EMFILE), "{error}");
                break;
            }
        }
        assert!(hogs.len() < 10_000, "the open-file limit did not take");
    }
    // One descriptor freed for the client's socket: the server has none to accept it with.
    hogs.pop();
    let mut client = TcpStream::connect(server.handle.local_addr())
        .await
        .expect("the kernel completes the connection");
    client
        .write_all(b"GET /v1/agl/health HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n")
        .await
        .expect("request sent");
    let mut answer = Vec::new();
    let early = tokio::time::timeout(Duration::from_millis(500), client.read_to_end(&mut answer)).await;
    assert!(
        early.is_err(),
        "answered with no descriptor to accept the connection: {}",
        String::from_utf8_lossy(&answer)
    );

    // Descriptors back: the waiting connection is accepted and served.
    drop(hogs);
    set_open_file_limit(original);
    let read = tokio::time::timeout(PATIENCE, client.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "the waiting connection was never served");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    let stored = server.get_ok(&format!("/v1/agl/rollouts/{rollout_id}")).await;
    assert_eq!(stored["input"], "stored before the descriptors ran out", "{stored}");
    server.handle.shutdown().await;
}
