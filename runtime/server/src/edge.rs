//! The edge of every listener: what a request must look like before any route (the store's, the
//! LLM proxy's, the static site) sees it, so that a web page elsewhere cannot drive a server
//! through the user's browser. In this order:
//!
//! - a path beginning with `//` is a 404 (a page served there would resolve its API base to
//!   another host and send it the token);
//! - the `Host` must be one this server answers ([`Edge::host_allowed`]): on a loopback-bound
//!   server only loopback names and `allowed_hosts`, so a name re-pointed at 127.0.0.1 (DNS
//!   rebinding) gets a 421;
//! - an `Origin`, when sent, must be the server's own (as its `Host` says) or an allowed one,
//!   else 403 (`null` included);
//! - a body sent to anything but a `GET`/`HEAD` must be JSON (`application/json`,
//!   `application/*+json`), else 415: forms, `text/plain` and untyped bodies are what a page may
//!   send cross-site without asking. `POST /v1/traces` (OTLP: protobuf or JSON) keeps its own
//!   check, and a body-less request needs no content type.
//!
//! The token check and the routes come after ([`crate::routes::guard`] layers them).

use crate::error::ApiError;
use crate::options::ServerOptions;
use axum::body::HttpBody;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

/// The one route whose body is not JSON: OTLP/HTTP (protobuf or JSON), checked by its handler.
const OTLP_PATH: &str = "/v1/traces";

/// The longest piece of a client's header quoted back in a refusal.
const QUOTED_MAX: usize = 100;

/// What the edge lets in, from the [`ServerOptions`].
#[derive(Debug, Clone)]
pub(crate) struct Edge {
    /// Whether `Host` is checked at all (a loopback-bound server, or `allowed_hosts` given).
    check_host: bool,
    /// The bound address when it is a specific one: its literal is answered too.
    bound: Option<IpAddr>,
    allowed_hosts: Vec<Authority>,
    allowed_origins: Vec<Origin>,
}

impl Edge {
    pub(crate) fn from_options(options: &ServerOptions) -> Self {
        Self {
            check_host: options.host.is_loopback() || !options.allowed_hosts.is_empty(),
            bound: (!options.host.is_unspecified()).then_some(options.host),
            allowed_hosts: options
                .allowed_hosts
                .iter()
                .filter_map(|host| Authority::parse(host.trim()))
                .collect(),
            allowed_origins: options
                .allowed_origins
                .iter()
                .filter_map(|origin| Origin::parse(origin.trim().trim_end_matches('/')))
                .collect(),
        }
    }

    /// Whether a request naming `host` (its `Host` header, parsed) is answered.
    fn host_allowed(&self, host: &Authority) -> bool {
        !self.check_host
            || host.is_loopback()
            || self.bound.is_some_and(|bound| host.ip() == Some(bound))
            || self.allowed_hosts.iter().any(|allowed| allowed.admits(host))
    }

    /// The refusal of a request that may not pass, if it may not (`has_body`: whether a body
    /// follows its head).
    fn refusal(&self, request: &RequestHead<'_>) -> Option<ApiError> {
        let RequestHead {
            method,
            path,
            headers,
            uri_authority,
            has_body,
        } = *request;
        if path.starts_with("//") {
            return Some(ApiError::not_found("Not Found"));
        }
        // An absolute-form request line's authority wins over `Host` (RFC 9112, 3.2.2).
        let host_text = match uri_authority {
            Some(authority) => Some(authority),
            None => match headers.get(header::HOST).map(|value| value.to_str()) {
                Some(Ok(text)) => Some(text),
                Some(Err(_)) => return Some(misdirected("the Host header is not text")),
                None => None,
            },
        };
        let host = match host_text {
            Some(text) => match Authority::parse(text) {
                Some(host) => Some(host),
                None => return Some(misdirected(&format!("Host `{}` is not a host name", quoted(text)))),
            },
            None => None,
        };
        if let Some(host) = &host
            && !self.host_allowed(host)
        {
            return Some(misdirected(&format!(
                "this server does not answer the host name `{}` (it answers loopback names: localhost, \
                 127.0.0.1, [::1]); if it is yours, start the server with --allowed-host {}",
                quoted(&host.name),
                quoted(&host.name)
            )));
        }
        if let Some(origin) = headers.get(header::ORIGIN)
            && let Some(detail) = self.origin_refusal(origin.to_str().ok(), host.as_ref())
        {
            return Some(ApiError::new(StatusCode::FORBIDDEN, detail));
        }
        if has_body && !matches!(*method, Method::GET | Method::HEAD) && path != OTLP_PATH {
            return json_body_refusal(headers);
        }
        None
    }

    /// Why a request sent with `Origin: origin` (`None`: not text) from a page is refused, if it is.
    fn origin_refusal(&self, origin: Option<&str>, host: Option<&Authority>) -> Option<String> {
        let foreign = |shown: &str| {
            format!(
                "requests from web pages of other origins ({}) are refused; if that page is yours, start the \
                 server with --allowed-origin {}",
                quoted(shown),
                quoted(shown)
            )
        };
        let Some(text) = origin else {
            return Some("the Origin header is not text".to_owned());
        };
        if text.eq_ignore_ascii_case("null") {
            return Some(
                "requests from pages with an opaque origin (Origin: null: a sandboxed frame, a file, a redirect) are \
                 refused"
                    .to_owned(),
            );
        }
        let Some(origin) = Origin::parse(text) else {
            return Some(foreign(text));
        };
        let own = host.is_some_and(|host| origin.is_of(host));
        if own || self.allowed_origins.contains(&origin) {
            None
        } else {
            Some(foreign(text))
        }
    }
}

/// Middleware: answers the request's refusal (404, 421, 403 or 415), or passes it on.
pub(crate) async fn check(State(edge): State<Arc<Edge>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    // A `Content-Length` that is not `0` (an unreadable one included) declares a body.
    let length = headers
        .get(header::CONTENT_LENGTH)
        .map(|value| value.to_str().ok().and_then(|value| value.trim().parse::<u64>().ok()));
    let declares_body = headers.contains_key(header::TRANSFER_ENCODING) || length.is_some_and(|n| n != Some(0));
    let head = RequestHead {
        method: request.method(),
        path: request.uri().path(),
        headers,
        uri_authority: request.uri().authority().map(|authority| authority.as_str()),
        has_body: declares_body || !request.body().is_end_stream(),
    };
    match edge.refusal(&head) {
        Some(refusal) => refusal.into_response(),
        None => next.run(request).await,
    }
}

fn misdirected(detail: &str) -> ApiError {
    ApiError::new(StatusCode::MISDIRECTED_REQUEST, detail)
}

/// What the edge reads of a request.
#[derive(Clone, Copy)]
struct RequestHead<'a> {
    method: &'a Method,
    /// As sent (percent-encoded).
    path: &'a str,
    headers: &'a HeaderMap,
    /// The request line's authority (absolute form), which wins over `Host`.
    uri_authority: Option<&'a str>,
    /// Whether a body follows (declared by its headers, or not known to be empty).
    has_body: bool,
}

/// A 415 unless the request's body (there is one) is JSON.
fn json_body_refusal(headers: &HeaderMap) -> Option<ApiError> {
    let content_type = headers.get(header::CONTENT_TYPE).map(|value| value.to_str());
    let refused = |got: &str| {
        Some(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("the request body must be JSON, sent as Content-Type: application/json ({got})"),
        ))
    };
    match content_type {
        None => refused("it has no Content-Type"),
        Some(Err(_)) => refused("its Content-Type is not text"),
        Some(Ok(text)) if is_json(text) => None,
        Some(Ok(text)) => refused(&format!("it is {}", quoted(media_type(text)))),
    }
}

/// `type/subtype` of a Content-Type, without its parameters.
fn media_type(content_type: &str) -> &str {
    content_type.split(';').next().unwrap_or_default().trim()
}

/// `application/json` or `application/SOMETHING+json`, with any parameters.
fn is_json(content_type: &str) -> bool {
    let media = media_type(content_type).to_ascii_lowercase();
    media == "application/json"
        || media
            .strip_prefix("application/")
            .and_then(|subtype| subtype.strip_suffix("+json"))
            .is_some_and(|name| !name.is_empty() && !name.contains('/'))
}

/// At most [`QUOTED_MAX`] characters of a client's text, to quote it back.
fn quoted(text: &str) -> String {
    match text.char_indices().nth(QUOTED_MAX) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// A host name and an optional port, as a `Host` header (or an `--allowed-host`) writes them;
/// the name lowercased, an IPv6 address in brackets.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Authority {
    name: String,
    port: Option<u16>,
}

impl Authority {
    fn parse(text: &str) -> Option<Self> {
        let (name, port) = if text.starts_with('[') {
            let end = text.find(']')?;
            let port = match &text[end + 1..] {
                "" => None,
                rest => Some(rest.strip_prefix(':')?),
            };
            (&text[..=end], port)
        } else {
            match text.rsplit_once(':') {
                Some((name, port)) => (name, Some(port)),
                None => (text, None),
            }
        };
        let valid_name = match name.strip_prefix('[').and_then(|rest| rest.strip_suffix(']')) {
            Some(v6) => v6.parse::<Ipv6Addr>().is_ok(),
            None => {
                !name.is_empty()
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
            }
        };
        if !valid_name {
            return None;
        }
        let port = match port {
            Some(port) => Some(port.parse::<u16>().ok()?),
            None => None,
        };
        Some(Self {
            name: name.to_ascii_lowercase(),
            port,
        })
    }

    /// The name as an IP address, when it is one.
    fn ip(&self) -> Option<IpAddr> {
        match self.name.strip_prefix('[').and_then(|rest| rest.strip_suffix(']')) {
            Some(v6) => v6.parse::<Ipv6Addr>().ok().map(IpAddr::V6),
            None => self.name.parse::<Ipv4Addr>().ok().map(IpAddr::V4),
        }
    }

    /// `localhost`, `*.localhost`, `127.x.y.z` or `[::1]`: names only this machine answers.
    fn is_loopback(&self) -> bool {
        self.name == "localhost" || self.name.ends_with(".localhost") || self.ip().is_some_and(|ip| ip.is_loopback())
    }

    /// Whether this allowed host (a name, or a name and port) admits `host`.
    fn admits(&self, host: &Authority) -> bool {
        self.name == host.name && (self.port.is_none() || self.port == host.port)
    }
}

/// A web origin: scheme, host name and port (the scheme's default when none is written).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Origin {
    scheme: &'static str,
    name: String,
    port: u16,
}

impl Origin {
    fn parse(text: &str) -> Option<Self> {
        let lower = text.to_ascii_lowercase();
        let (scheme, rest): (&'static str, &str) = if let Some(rest) = lower.strip_prefix("http://") {
            ("http", rest)
        } else {
            ("https", lower.strip_prefix("https://")?)
        };
        let authority = Authority::parse(rest)?;
        Some(Self {
            scheme,
            port: authority.port.unwrap_or(default_port(scheme)),
            name: authority.name,
        })
    }

    /// Whether this is the origin of pages served by the server `host` names (over HTTP, or
    /// HTTPS through a proxy that keeps the `Host`).
    fn is_of(&self, host: &Authority) -> bool {
        self.name == host.name && self.port == host.port.unwrap_or(default_port(self.scheme))
    }
}

fn default_port(scheme: &str) -> u16 {
    if scheme == "https" { 443 } else { 80 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn edge(host: &str, allowed_hosts: &[&str], allowed_origins: &[&str]) -> Edge {
        Edge::from_options(&ServerOptions {
            host: host.parse().expect("an address"),
            allowed_hosts: allowed_hosts.iter().map(|h| (*h).to_owned()).collect(),
            allowed_origins: allowed_origins.iter().map(|o| (*o).to_owned()).collect(),
            ..ServerOptions::default()
        })
    }

    /// The status the edge refuses this request with (its body: as its headers declare), if any.
    fn status(edge: &Edge, method: Method, path: &str, headers: &[(&'static str, &str)]) -> Option<u16> {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.append(*name, HeaderValue::from_str(value).expect("a header value"));
        }
        let has_body = map.contains_key(header::TRANSFER_ENCODING)
            || map.get(header::CONTENT_LENGTH).is_some_and(|length| length != "0");
        let head = RequestHead {
            method: &method,
            path,
            headers: &map,
            uri_authority: None,
            has_body,
        };
        edge.refusal(&head).map(|refusal| refusal.status.as_u16())
    }

    #[test]
    fn loopback_names_are_answered_others_only_when_allowed() {
        let edge = edge("127.0.0.1", &["dash.example.com", "box:8080"], &[]);
        for host in [
            "localhost",
            "LOCALHOST:4747",
            "app.localhost:1",
            "127.0.0.1",
            "127.1.2.3:4747",
            "[::1]",
            "[::1]:4747",
            "dash.example.com:4747",
            "box:8080",
        ] {
            assert_eq!(status(&edge, Method::GET, "/", &[("host", host)]), None, "{host}");
        }
        for host in [
            "evil.example",
            "localhost.evil.example",
            "box:8081",
            "10.0.0.5",
            "[::2]",
            "a b",
            "x:y",
        ] {
            assert_eq!(status(&edge, Method::GET, "/", &[("host", host)]), Some(421), "{host}");
        }
        assert_eq!(status(&edge, Method::GET, "/", &[]), None, "no Host: HTTP/1.0");
    }

    #[test]
    fn a_server_bound_elsewhere_checks_host_only_when_told_which() {
        let open = edge("0.0.0.0", &[], &[]);
        assert_eq!(status(&open, Method::GET, "/", &[("host", "anything.example")]), None);
        let named = edge("10.0.0.5", &["store.lan"], &[]);
        for host in ["store.lan:4747", "10.0.0.5:4747", "localhost"] {
            assert_eq!(status(&named, Method::GET, "/", &[("host", host)]), None, "{host}");
        }
        assert_eq!(status(&named, Method::GET, "/", &[("host", "evil.example")]), Some(421));
    }

    #[test]
    fn only_the_own_or_an_allowed_origin_is_answered() {
        let edge = edge(
            "127.0.0.1",
            &[],
            &["https://dash.example.com/", "http://localhost:3000"],
        );
        let asked = |origin: &str| {
            status(
                &edge,
                Method::GET,
                "/",
                &[("host", "127.0.0.1:4747"), ("origin", origin)],
            )
        };
        assert_eq!(asked("http://127.0.0.1:4747"), None);
        assert_eq!(asked("HTTP://127.0.0.1:4747"), None);
        assert_eq!(asked("https://dash.example.com"), None);
        assert_eq!(asked("https://dash.example.com:443"), None);
        assert_eq!(asked("http://localhost:3000"), None);
        for origin in [
            "http://evil.example",
            "http://127.0.0.1:4748",
            "http://127.0.0.1",
            "https://127.0.0.1:4747x",
            "null",
            "file://",
            "http://localhost:3001",
        ] {
            assert_eq!(asked(origin), Some(403), "{origin}");
        }
        let default_port =
            |host: &str, origin: &str| status(&edge, Method::GET, "/", &[("host", host), ("origin", origin)]);
        assert_eq!(default_port("localhost", "http://localhost"), None);
        assert_eq!(default_port("localhost:80", "http://localhost"), None);
        assert_eq!(default_port("localhost", "https://localhost"), None);
    }

    #[test]
    fn bodies_must_be_json_but_otlp_and_empty_bodies_pass() {
        let edge = edge("127.0.0.1", &[], &[]);
        let post = |path: &str, headers: &[(&'static str, &str)]| status(&edge, Method::POST, path, headers);
        assert_eq!(
            post("/x", &[("content-length", "2"), ("content-type", "application/json")]),
            None
        );
        assert_eq!(
            post(
                "/x",
                &[
                    ("content-length", "2"),
                    ("content-type", "Application/JSON; charset=utf-8")
                ]
            ),
            None
        );
        assert_eq!(
            post(
                "/x",
                &[
                    ("content-length", "2"),
                    ("content-type", "application/merge-patch+json")
                ]
            ),
            None
        );
        assert_eq!(
            post(
                "/x",
                &[("transfer-encoding", "chunked"), ("content-type", "application/json")]
            ),
            None
        );
        for content_type in [
            "text/plain;charset=UTF-8",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/jsonp",
            "application/+json",
            "text/json+json",
        ] {
            assert_eq!(
                post("/x", &[("content-length", "2"), ("content-type", content_type)]),
                Some(415),
                "{content_type}"
            );
        }
        assert_eq!(post("/x", &[("content-length", "2")]), Some(415), "a body with no type");
        assert_eq!(post("/x", &[("transfer-encoding", "chunked")]), Some(415));
        assert_eq!(post("/x", &[]), None, "no body");
        assert_eq!(post("/x", &[("content-length", "0")]), None, "an empty body");
        assert_eq!(
            post("/x", &[("content-length", "0"), ("content-type", "text/plain")]),
            None
        );
        assert_eq!(
            post(
                OTLP_PATH,
                &[("content-length", "2"), ("content-type", "application/x-protobuf")]
            ),
            None
        );
        assert_eq!(
            status(
                &edge,
                Method::GET,
                "/x",
                &[("content-length", "2"), ("content-type", "text/plain")]
            ),
            None
        );
    }

    #[test]
    fn a_path_starting_with_two_slashes_is_not_found_before_anything_else() {
        let edge = edge("127.0.0.1", &[], &[]);
        assert_eq!(
            status(&edge, Method::GET, "//evil.example/", &[("host", "evil.example")]),
            Some(404)
        );
        assert_eq!(status(&edge, Method::GET, "/a//b", &[]), None);
    }

    #[test]
    fn quoted_text_is_bounded() {
        assert_eq!(quoted("short"), "short");
        let long = "é".repeat(300);
        assert_eq!(quoted(&long).chars().count(), QUOTED_MAX + 1);
    }
}
