//! [`Http`]: outgoing HTTP requests from an agent (`ctx.http()`), over `wasi:http/outgoing-handler`.
//!
//! The host denies every host by default; it grants the ones named in the agent's sandbox
//! manifest (`allowed-outbound-hosts`) or by `--agent-http`, within a per-attempt request budget,
//! a per-request timeout and a cap on response bodies. A refused request is an [`HttpError`]
//! saying why. Every request is recorded by the host as a span (method, host, path, status, bytes,
//! latency): agents write no tracing code. Requests are blocking: one at a time, bodies whole.

use std::fmt;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, IncomingBody, Method, OutgoingBody, OutgoingRequest, RequestOptions, Scheme,
};
use wasip2::io::streams::StreamError;

/// Bytes read from a body stream at a time.
const CHUNK: u64 = 64 * 1024;

/// Bytes written to a body stream at a time: the most one `blocking-write-and-flush` of a WASI
/// stream may take (a longer write traps the instance).
const WRITE_CHUNK: usize = 4096;

/// The agent's HTTP client (see the module docs): `ctx.http()`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Http;

impl crate::Ctx {
    /// Outgoing HTTP, to the hosts the sandbox grants (none unless the host is told).
    pub fn http(&self) -> Http {
        Http
    }
}

impl Http {
    /// `GET url`.
    pub fn get(&self, url: &str) -> Result<HttpResponse, HttpError> {
        self.send(&HttpRequest::get(url))
    }

    /// `POST url` with `body` as JSON (`content-type: application/json`).
    pub fn post_json<T: Serialize + ?Sized>(&self, url: &str, body: &T) -> Result<HttpResponse, HttpError> {
        self.send(&HttpRequest::post(url).json(body)?)
    }

    /// Sends `request` and reads the whole response.
    pub fn send(&self, request: &HttpRequest) -> Result<HttpResponse, HttpError> {
        let target = Target::parse(&request.url).map_err(|reason| HttpError::new(request, reason))?;
        send(request, &target).map_err(|reason| HttpError::new(request, reason))
    }
}

/// A request: method, URL, headers, body and an optional timeout.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpRequest {
    method: String,
    url: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    timeout: Option<Duration>,
}

impl HttpRequest {
    /// A request with any method (`"GET"`, `"PUT"`, ...).
    pub fn new(method: impl Into<String>, url: impl Into<String>) -> Self {
        HttpRequest {
            method: method.into(),
            url: url.into(),
            headers: Vec::new(),
            body: Vec::new(),
            timeout: None,
        }
    }

    pub fn get(url: impl Into<String>) -> Self {
        Self::new("GET", url)
    }

    pub fn post(url: impl Into<String>) -> Self {
        Self::new("POST", url)
    }

    /// Adds a header (a repeated name sends it several times).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The body, as bytes.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// The body as JSON, with `content-type: application/json`.
    pub fn json<T: Serialize + ?Sized>(self, value: &T) -> Result<Self, HttpError> {
        let body = serde_json::to_vec(value)
            .map_err(|e| HttpError::new(&self, format!("cannot encode the body as JSON: {e}")))?;
        Ok(self.header("content-type", "application/json").body(body))
    }

    /// How long to wait for the connection and for the first byte of the answer (the host's own
    /// per-request limit applies as well: the shorter wins).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    pub fn method(&self) -> &str {
        &self.method
    }

    pub fn url(&self) -> &str {
        &self.url
    }
}

/// A response, its body read whole.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The first header called `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The body as UTF-8 text.
    pub fn text(&self) -> Result<&str, crate::Error> {
        std::str::from_utf8(&self.body).map_err(|e| crate::Error::new(format!("the response body is not UTF-8: {e}")))
    }

    /// The body parsed as JSON into `T`.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, crate::Error> {
        serde_json::from_slice(&self.body)
            .map_err(|e| crate::Error::new(format!("the response body is not the expected JSON: {e}")))
    }

    /// `Ok(self)` for a 2xx status, else an error naming the status and the start of the body.
    pub fn error_for_status(self) -> Result<Self, crate::Error> {
        if self.is_success() {
            return Ok(self);
        }
        let start: String = String::from_utf8_lossy(&self.body).chars().take(200).collect();
        Err(crate::Error::new(format!("HTTP status {}: {start}", self.status)))
    }
}

/// A request that did not get a response: refused by the sandbox, unreachable, timed out...
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpError {
    method: String,
    url: String,
    reason: String,
}

impl HttpError {
    fn new(request: &HttpRequest, reason: impl Into<String>) -> Self {
        HttpError {
            method: request.method.clone(),
            url: request.url.clone(),
            reason: reason.into(),
        }
    }

    /// Why the request failed.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} failed: {}", self.method, self.url, self.reason)
    }
}

impl std::error::Error for HttpError {}

impl From<HttpError> for crate::Error {
    fn from(error: HttpError) -> Self {
        crate::Error::new(error.to_string())
    }
}

/// Where a URL points: scheme, authority (`host[:port]`) and path with query.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Target {
    https: bool,
    authority: String,
    path_and_query: String,
}

impl Target {
    fn parse(url: &str) -> Result<Self, String> {
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| "not an absolute URL (it needs http:// or https://)".to_string())?;
        let https = match scheme.to_ascii_lowercase().as_str() {
            "http" => false,
            "https" => true,
            other => return Err(format!("unsupported scheme `{other}` (only http and https)")),
        };
        let rest = rest.split('#').next().unwrap_or_default();
        let split = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(split);
        if authority.is_empty() {
            return Err("the URL has no host".to_string());
        }
        if authority.contains('@') {
            return Err("credentials in the URL are not supported (send an authorization header)".to_string());
        }
        let path_and_query = match path {
            "" => "/".to_string(),
            p if p.starts_with('?') => format!("/{p}"),
            p => p.to_string(),
        };
        Ok(Target {
            https,
            authority: authority.to_string(),
            path_and_query,
        })
    }
}

/// A readable reason for a wasi:http error code.
fn describe(code: &ErrorCode) -> String {
    match code {
        ErrorCode::HttpRequestDenied => {
            "denied by the sandbox: this host is not granted ([http] allowed-outbound-hosts in the agent's \
             manifest, agent.toml in its folder, or --agent-http), or the attempt's request budget is spent"
                .to_string()
        }
        ErrorCode::DnsTimeout => "DNS lookup timed out".to_string(),
        ErrorCode::DnsError(payload) => format!(
            "DNS lookup failed{}",
            payload.rcode.as_deref().map(|r| format!(" ({r})")).unwrap_or_default()
        ),
        ErrorCode::DestinationNotFound => "the host was not found".to_string(),
        ErrorCode::DestinationUnavailable => "the host is unavailable".to_string(),
        ErrorCode::DestinationIpProhibited => "the host's address is in a prohibited range".to_string(),
        ErrorCode::ConnectionRefused => "connection refused".to_string(),
        ErrorCode::ConnectionTimeout => "connecting timed out".to_string(),
        ErrorCode::ConnectionReadTimeout => "the response timed out".to_string(),
        ErrorCode::HttpResponseTimeout => "no response within the timeout".to_string(),
        ErrorCode::HttpResponseBodySize(Some(size)) => {
            format!("the response body is larger than the limit ({size} bytes)")
        }
        ErrorCode::HttpResponseBodySize(None) => "the response body is larger than the limit".to_string(),
        ErrorCode::TlsCertificateError => "the server's TLS certificate was refused".to_string(),
        ErrorCode::InternalError(Some(message)) => message.clone(),
        other => format!("{other:?}"),
    }
}

fn send(request: &HttpRequest, target: &Target) -> Result<HttpResponse, String> {
    let entries: Vec<(String, Vec<u8>)> = request
        .headers
        .iter()
        .map(|(name, value)| (name.clone(), value.as_bytes().to_vec()))
        .collect();
    let headers = Fields::from_list(&entries).map_err(|e| format!("bad header: {e:?}"))?;
    let outgoing = OutgoingRequest::new(headers);
    let method = match request.method.to_ascii_uppercase().as_str() {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        "CONNECT" => Method::Connect,
        "OPTIONS" => Method::Options,
        "TRACE" => Method::Trace,
        "PATCH" => Method::Patch,
        _ => Method::Other(request.method.clone()),
    };
    let invalid = |what: &str| format!("invalid {what}");
    outgoing.set_method(&method).map_err(|()| invalid("method"))?;
    let scheme = if target.https { Scheme::Https } else { Scheme::Http };
    outgoing.set_scheme(Some(&scheme)).map_err(|()| invalid("scheme"))?;
    outgoing
        .set_authority(Some(&target.authority))
        .map_err(|()| invalid("host"))?;
    outgoing
        .set_path_with_query(Some(&target.path_and_query))
        .map_err(|()| invalid("path"))?;
    let options = request.timeout.map(|timeout| {
        let options = RequestOptions::new();
        let nanos = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
        // The host may refuse to let a guest set a timeout; its own limit applies then.
        let _ = options.set_connect_timeout(Some(nanos));
        let _ = options.set_first_byte_timeout(Some(nanos));
        let _ = options.set_between_bytes_timeout(Some(nanos));
        options
    });
    let body = outgoing
        .body()
        .map_err(|()| "the request body is unavailable".to_string())?;
    let pending = outgoing_handler::handle(outgoing, options).map_err(|code| describe(&code))?;
    write_body(&body, &request.body)?;
    OutgoingBody::finish(body, None).map_err(|code| describe(&code))?;

    pending.subscribe().block();
    let response = match pending.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(code))) => return Err(describe(&code)),
        Some(Err(())) | None => return Err("the response was lost".to_string()),
    };
    let status = response.status();
    let headers = response
        .headers()
        .entries()
        .into_iter()
        .map(|(name, value)| (name, String::from_utf8_lossy(&value).into_owned()))
        .collect();
    let incoming = response
        .consume()
        .map_err(|()| "the response body is unavailable".to_string())?;
    let body = read_body(&incoming)?;
    if let Some(code) = IncomingBody::finish(incoming).subscribe_and_get_error() {
        return Err(describe(&code));
    }
    Ok(HttpResponse { status, headers, body })
}

fn write_body(body: &OutgoingBody, bytes: &[u8]) -> Result<(), String> {
    if bytes.is_empty() {
        return Ok(());
    }
    let stream = body
        .write()
        .map_err(|()| "the request body is unavailable".to_string())?;
    for chunk in bytes.chunks(WRITE_CHUNK) {
        stream
            .blocking_write_and_flush(chunk)
            .map_err(|e| stream_error("sending the request body", e))?;
    }
    Ok(())
}

fn read_body(incoming: &IncomingBody) -> Result<Vec<u8>, String> {
    let stream = incoming
        .stream()
        .map_err(|()| "the response body is unavailable".to_string())?;
    let mut body = Vec::new();
    loop {
        match stream.blocking_read(CHUNK) {
            Ok(chunk) => body.extend_from_slice(&chunk),
            Err(StreamError::Closed) => return Ok(body),
            Err(e) => return Err(stream_error("reading the response body", e)),
        }
    }
}

fn stream_error(doing: &str, error: StreamError) -> String {
    match error {
        StreamError::Closed => format!("{doing}: the connection closed"),
        StreamError::LastOperationFailed(e) => match wasip2::http::types::http_error_code(&e) {
            Some(code) => format!("{doing}: {}", describe(&code)),
            None => format!("{doing}: {}", e.to_debug_string()),
        },
    }
}

/// The trailers future of a finished body, waited for: the error it ended with, if any.
trait TrailersError {
    fn subscribe_and_get_error(self) -> Option<ErrorCode>;
}

impl TrailersError for wasip2::http::types::FutureTrailers {
    fn subscribe_and_get_error(self) -> Option<ErrorCode> {
        self.subscribe().block();
        match self.get() {
            Some(Ok(Err(code))) => Some(code),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_scheme_authority_and_path() {
        let t = Target::parse("https://api.example.com:8443/v1/items?q=a%20b#frag").unwrap();
        assert!(t.https);
        assert_eq!(t.authority, "api.example.com:8443");
        assert_eq!(t.path_and_query, "/v1/items?q=a%20b");
        let t = Target::parse("http://127.0.0.1:8080").unwrap();
        assert!(!t.https);
        assert_eq!(
            (t.authority.as_str(), t.path_and_query.as_str()),
            ("127.0.0.1:8080", "/")
        );
        let t = Target::parse("HTTP://h?x=1").unwrap();
        assert_eq!((t.authority.as_str(), t.path_and_query.as_str()), ("h", "/?x=1"));
    }

    #[test]
    fn bad_urls_say_what_is_wrong() {
        assert!(Target::parse("api.example.com/x").unwrap_err().contains("absolute URL"));
        assert!(Target::parse("ftp://h/x").unwrap_err().contains("scheme `ftp`"));
        assert!(Target::parse("http:///x").unwrap_err().contains("no host"));
        assert!(Target::parse("http://u:p@h/").unwrap_err().contains("credentials"));
    }

    #[test]
    fn requests_build_and_errors_read_as_sentences() {
        let request = HttpRequest::post("http://h/add")
            .json(&serde_json::json!({"a": 1}))
            .unwrap()
            .header("x-k", "v")
            .timeout(Duration::from_secs(2));
        assert_eq!(request.method(), "POST");
        assert_eq!(request.body, br#"{"a":1}"#);
        assert_eq!(request.headers[0], ("content-type".into(), "application/json".into()));
        let error = HttpError::new(&request, describe(&ErrorCode::HttpRequestDenied));
        let message = crate::Error::from(error).into_message();
        assert!(
            message.starts_with("POST http://h/add failed: denied by the sandbox"),
            "{message}"
        );
    }

    #[test]
    fn responses_read_as_text_json_and_status() {
        let response = HttpResponse {
            status: 404,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: br#"{"error":"no such item"}"#.to_vec(),
        };
        assert_eq!(response.header("content-type"), Some("application/json"));
        assert_eq!(response.json::<serde_json::Value>().unwrap()["error"], "no such item");
        let error = response.clone().error_for_status().unwrap_err();
        assert!(error.message().starts_with("HTTP status 404: {\"error\""), "{error}");
        assert!(
            HttpResponse {
                status: 204,
                ..response
            }
            .error_for_status()
            .is_ok()
        );
    }
}
