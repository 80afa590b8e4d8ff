//! The outgoing HTTP probe: an agent that sends the requests its task names through
//! `wasi:http/outgoing-handler`, so that the host's tests can check grants, the request budget,
//! the timeout, the response-body cap and the request spans. The task:
//!
//! ```json
//! {"requests": [{"url": "http://127.0.0.1:8080/hello", "method": "POST", "body": "hi",
//!                "read_body": true, "timeout_ms": 500}],
//!  "operation": "fetching"}
//! ```
//!
//! Each request logs one line at info level: `http <url>: status <code>, <n> bytes: <body>` (the
//! body's first 200 bytes, lossy UTF-8) or `http <url>: <where> error: <error>` (`handle`,
//! `response` or `body`), and the reward is the number of requests answered with their whole
//! body. With `operation`, the requests are sent inside an operation span of that name. A request
//! with `"via_sdk": true` goes through the Rust SDK's client (`ctx.http()`) instead, and logs
//! `sdk: status ...` or `sdk error: <the SDK's sentence>`. Nothing here traps on the host's answers.

use agl_sdk::prelude::*;
use serde::Deserialize;
use wasip2::http::outgoing_handler;
use wasip2::http::types::{self, Fields, Method, OutgoingBody, OutgoingRequest, RequestOptions, Scheme};
use wasip2::io::streams::StreamError;

#[derive(Deserialize)]
struct Task {
    requests: Vec<Request>,
    #[serde(default)]
    operation: Option<String>,
}

#[derive(Deserialize)]
struct Request {
    url: String,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    body: Option<String>,
    /// Read the response body to its end (else drop it unread).
    #[serde(default = "yes")]
    read_body: bool,
    /// The guest's own first-byte timeout, if any.
    #[serde(default)]
    timeout_ms: Option<u64>,
    /// Send it with the SDK's client (`ctx.http()`) instead.
    #[serde(default)]
    via_sdk: bool,
}

fn yes() -> bool {
    true
}

fn rollout(task: Task, ctx: &Ctx) -> Result<Option<f64>> {
    let send_all = || -> Result<f64> {
        let mut answered = 0.0;
        for request in &task.requests {
            let sent = match request.via_sdk {
                true => send_with_sdk(ctx, request),
                false => send(request),
            };
            match sent {
                Ok(line) => {
                    answered += 1.0;
                    ctx.info(&format!("http {}: {line}", request.url));
                }
                Err(line) => ctx.info(&format!("http {}: {line}", request.url)),
            }
        }
        Ok(answered)
    };
    let answered = match &task.operation {
        Some(name) => ctx.operation(name, send_all)?,
        None => send_all()?,
    };
    Ok(Some(answered))
}

/// Sends one request; `Ok` with what was received, or `Err` with where and why it failed.
fn send(request: &Request) -> std::result::Result<String, String> {
    let (scheme, rest) = request
        .url
        .split_once("://")
        .ok_or_else(|| "bad url error: no scheme".to_owned())?;
    let (authority, path) = match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, "/"),
    };
    let outgoing = OutgoingRequest::new(Fields::new());
    let method = match request.method.as_deref().unwrap_or("GET") {
        "GET" => Method::Get,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "HEAD" => Method::Head,
        other => Method::Other(other.to_owned()),
    };
    let scheme = match scheme {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        other => Scheme::Other(other.to_owned()),
    };
    let set = outgoing
        .set_method(&method)
        .and_then(|()| outgoing.set_scheme(Some(&scheme)))
        .and_then(|()| outgoing.set_authority(Some(authority)))
        .and_then(|()| outgoing.set_path_with_query(Some(path)));
    set.map_err(|()| "request error: wasi:http refused the URL's parts".to_owned())?;
    let body = outgoing.body().map_err(|()| "request error: no body".to_owned())?;
    let options = request.timeout_ms.map(|ms| {
        let options = RequestOptions::new();
        let _ = options.set_first_byte_timeout(Some(ms * 1_000_000));
        options
    });

    let future = outgoing_handler::handle(outgoing, options).map_err(|e| format!("handle error: {e:?}"))?;
    if let Some(text) = &request.body {
        let stream = body.write().map_err(|()| "request error: no body stream".to_owned())?;
        for chunk in text.as_bytes().chunks(4096) {
            stream
                .blocking_write_and_flush(chunk)
                .map_err(|e| format!("request body error: {}", stream_error(e)))?;
        }
        drop(stream);
    }
    OutgoingBody::finish(body, None).map_err(|e| format!("request body error: {e:?}"))?;

    future.subscribe().block();
    let response = match future.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(e))) => return Err(format!("response error: {e:?}")),
        Some(Err(())) | None => return Err("response error: no response".to_owned()),
    };
    let status = response.status();
    if !request.read_body {
        return Ok(format!("status {status}, body not read"));
    }
    let incoming = response.consume().map_err(|()| "body error: no body".to_owned())?;
    let stream = incoming
        .stream()
        .map_err(|()| "body error: no body stream".to_owned())?;
    let mut received = Vec::new();
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => received.extend_from_slice(&chunk),
            Err(StreamError::Closed) => break,
            Err(e) => {
                return Err(format!(
                    "body error after {} bytes: {}",
                    received.len(),
                    stream_error(e)
                ));
            }
        }
    }
    let shown = String::from_utf8_lossy(&received[..received.len().min(200)]).into_owned();
    Ok(format!("status {status}, {} bytes: {shown}", received.len()))
}

/// Sends one request with the SDK's client: `Ok` with what was received, or `Err` with the
/// SDK's sentence.
fn send_with_sdk(ctx: &Ctx, request: &Request) -> std::result::Result<String, String> {
    let method = request.method.as_deref().unwrap_or("GET");
    let mut outgoing = HttpRequest::new(method, request.url.as_str());
    if let Some(body) = &request.body {
        outgoing = outgoing.body(body.as_bytes().to_vec());
    }
    match ctx.http().send(&outgoing) {
        Ok(response) => {
            let shown = String::from_utf8_lossy(&response.body[..response.body.len().min(200)]).into_owned();
            Ok(format!(
                "sdk: status {}, {} bytes: {shown}",
                response.status,
                response.body.len()
            ))
        }
        Err(e) => Err(format!("sdk error: {e}")),
    }
}

fn stream_error(error: StreamError) -> String {
    match error {
        StreamError::Closed => "closed".to_owned(),
        StreamError::LastOperationFailed(e) => match types::http_error_code(&e) {
            Some(code) => format!("{code:?}"),
            None => e.to_debug_string(),
        },
    }
}

agl_sdk::export_agent!(rollout);
