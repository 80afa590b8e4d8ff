//! `agl-host store` (no token) against what a web page of another site could make a browser
//! send it: a cross-site `text/plain` POST (a "simple" request, sent without asking) and a
//! request naming the server by a rebound name (DNS rebinding) are refused and change nothing;
//! `--allowed-host` lets that name in. Raw HTTP, so that `Host` and `Content-Type` are exactly
//! what a browser would send.

use crate::support;

use std::io::{Read, Write};
use std::net::TcpStream;
use support::ServerProcess;

/// What a page's `fetch(url, {method: "POST", body: JSON.stringify(...)})` sends.
const RESOURCES: &str =
    r#"{"prompt": {"resource_type": "prompt_template", "template": "pwned", "engine": "f-string"}}"#;

/// The status and body of `method path` sent to `server` with these headers (and `body`).
fn raw(server: &ServerProcess, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let mut request = format!("{method} {path} HTTP/1.1\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    ));
    let mut stream = TcpStream::connect(server.host()).expect("connect to agl-host store");
    stream.write_all(request.as_bytes()).expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read the answer");
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {answer}\n{}", server.log()));
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// How many resources versions the store holds.
fn resources_versions(server: &ServerProcess) -> usize {
    let (status, body) = raw(server, "GET", "/v1/agl/resources", &[("host", server.host())], "");
    assert_eq!(status, 200, "{body}");
    let page: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    page["items"].as_array().expect("items").len()
}

#[test]
fn a_token_less_store_refuses_cross_site_posts_and_rebound_names_unless_allowed() {
    let store = ServerProcess::agl_host_store(&[]);
    let own = store.host().to_owned();
    let port = own.rsplit(':').next().expect("a port").to_owned();

    // A page of evil.example POSTing JSON as text/plain to the store on this machine.
    let (status, body) = raw(
        &store,
        "POST",
        "/v1/agl/resources",
        &[
            ("host", &own),
            ("origin", "http://evil.example"),
            ("content-type", "text/plain;charset=UTF-8"),
        ],
        RESOURCES,
    );
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("--allowed-origin"), "{body}");
    // Without an Origin (a client that is no browser), text/plain is still no JSON.
    let (status, body) = raw(
        &store,
        "POST",
        "/v1/agl/resources",
        &[("host", &own), ("content-type", "text/plain")],
        RESOURCES,
    );
    assert_eq!(status, 415, "{body}");
    // evil.example re-pointed at 127.0.0.1: its page is same-origin with itself, JSON and all.
    let rebound = format!("evil.example:{port}");
    let rebound_origin = format!("http://{rebound}");
    let from_rebound_page = [
        ("host", rebound.as_str()),
        ("origin", rebound_origin.as_str()),
        ("content-type", "application/json"),
    ];
    let (status, body) = raw(&store, "POST", "/v1/agl/resources", &from_rebound_page, RESOURCES);
    assert_eq!(status, 421, "{body}");
    assert!(body.contains("--allowed-host"), "{body}");
    assert_eq!(resources_versions(&store), 0, "nothing was published");
    // The store's own clients are served.
    let (status, body) = raw(
        &store,
        "POST",
        "/v1/agl/resources",
        &[("host", &own), ("content-type", "application/json")],
        RESOURCES,
    );
    assert_eq!(status, 201, "{body}");
    drop(store);

    // A name the user does use for this machine, allowed.
    let allowing = ServerProcess::agl_host_store(&["--allowed-host", "evil.example"]);
    let port = allowing.host().rsplit(':').next().expect("a port").to_owned();
    let rebound = format!("evil.example:{port}");
    let rebound_origin = format!("http://{rebound}");
    let (status, body) = raw(
        &allowing,
        "POST",
        "/v1/agl/resources",
        &[
            ("host", rebound.as_str()),
            ("origin", rebound_origin.as_str()),
            ("content-type", "application/json"),
        ],
        RESOURCES,
    );
    assert_eq!(status, 201, "{body}");
    assert_eq!(resources_versions(&allowing), 1);
}
