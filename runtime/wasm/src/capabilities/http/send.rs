//! Sending one admitted request: the host resolves the name itself (the normalised one the grant
//! matched), refuses it if any address it resolves to is non-public unless a grant names the host
//! exactly, connects only to an address it checked (no second lookup, so a name cannot be
//! rebound between the check and the connection), sends that host as `Host`, speaks TLS for
//! `https` (rustls with Mozilla's roots, `webpki-root-certs`), and exchanges the request over
//! HTTP/1.1. Each wait is bounded by the policy's timeout (or a shorter one the guest asked for):
//! connecting (lookup, TCP, TLS, handshake), the response's head, and each wait between two
//! pieces of the body (`body.rs`). Shaped after wasmtime-wasi-http's `default_send_request`.

use super::Target;
use super::addr::non_public;
use super::body::{CountingBody, ResponseBody};
use super::span::RequestSpan;
use super::taped::{self, ExchangeTape, KeptError, KeptFailure};
use crate::policy::{Granted, HttpScheme, RequestHost};
use http_body_util::BodyExt;
use std::future::poll_fn;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::Poll;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::rustls;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody};

/// What the hook hands back to wasmtime-wasi-http: the response and the connection's driver.
pub(crate) type Sent = (
    http::Response<WasiBody>,
    Box<dyn Future<Output = Result<(), Error>> + Send>,
);

/// The limits one request runs under.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub connect: Duration,
    pub first_byte: Duration,
    pub between_bytes: Duration,
    pub max_response_bytes: u64,
}

impl Limits {
    /// The policy's timeout for each wait, or the guest's own where it asked for less.
    pub(crate) fn new(timeout: Duration, max_response_bytes: u64, options: Option<RequestOptions>) -> Self {
        let options = options.unwrap_or_default();
        let bounded = |asked: Option<Duration>| asked.map_or(timeout, |asked| asked.min(timeout));
        Self {
            connect: bounded(options.connect_timeout),
            first_byte: bounded(options.first_byte_timeout),
            // Tokio's timers need a non-zero wait to be useful; 1 ms is as good as none.
            between_bytes: bounded(options.between_bytes_timeout).max(Duration::from_millis(1)),
            max_response_bytes,
        }
    }
}

/// Why a request failed: what the guest gets, and what its span says.
pub(crate) struct Failure {
    pub error: Error,
    pub kind: &'static str,
    pub reason: String,
    /// A refusal of the sandbox: what was refused and the grant that would allow it.
    pub refused: Option<Box<(String, String)>>,
}

impl Failure {
    fn new(error: Error, kind: &'static str, reason: impl Into<String>) -> Self {
        Self {
            error,
            kind,
            reason: reason.into(),
            refused: None,
        }
    }
}

/// Sends `request` to `target` and ends `span` if it fails before the response's body; a
/// response's span travels on in its body.
pub(crate) async fn send(
    request: http::Request<WasiBody>,
    target: Target,
    granted: Granted,
    limits: Limits,
    span: RequestSpan,
    tape: Option<ExchangeTape>,
) -> Result<Sent, Error> {
    let mut span = span;
    // A HEAD answer's length is the one a GET would have had: no body comes.
    let head = request.method() == http::Method::HEAD;
    match exchange(request, &target, granted, limits, &mut span).await {
        Ok((response, io)) => {
            let status = response.status().as_u16();
            span.answered(status);
            if !head
                && let Some(declared) = declared_length(&response)
                && declared > limits.max_response_bytes
            {
                let reason = format!(
                    "the response declares {declared} bytes, more than the {} allowed (--agent-http-max-response)",
                    limits.max_response_bytes
                );
                let error = Error::HttpResponseBodySize(Some(declared));
                if let Some(tape) = tape {
                    tape.failed(KeptFailure {
                        answered: Some(status),
                        received: None,
                        kind: "response-body-size".to_owned(),
                        reason: reason.clone(),
                        refused: None,
                        error: KeptError::of(&error),
                    });
                }
                span.fail("response-body-size", reason);
                return Err(error);
            }
            let body_tape = tape.map(|tape| tape.responded(status, response.headers()));
            let response = response.map(|incoming| {
                ResponseBody::new(
                    incoming,
                    limits.between_bytes,
                    limits.max_response_bytes,
                    status,
                    span,
                    body_tape,
                )
                .boxed_unsync()
            });
            Ok((response, io))
        }
        Err(failure) => {
            let kept = KeptFailure {
                answered: None,
                received: None,
                kind: failure.kind.to_owned(),
                reason: failure.reason,
                refused: failure.refused.map(|refused| *refused),
                error: KeptError::of(&failure.error),
            };
            if let Some(tape) = tape {
                tape.failed(kept.clone());
            }
            taped::fail(span, kept.refused, kept.kind, kept.reason);
            Err(failure.error)
        }
    }
}

fn declared_length<B>(response: &http::Response<B>) -> Option<u64> {
    response
        .headers()
        .get(http::header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

trait Stream: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Stream for T {}

type Exchanged = (
    http::Response<hyper::body::Incoming>,
    Box<dyn Future<Output = Result<(), Error>> + Send>,
);

async fn exchange(
    mut request: http::Request<WasiBody>,
    target: &Target,
    granted: Granted,
    limits: Limits,
    span: &mut RequestSpan,
) -> Result<Exchanged, Failure> {
    let connect_by = Instant::now() + limits.connect;
    let addresses = resolve(target, connect_by).await?;
    let addresses = reachable(addresses, granted, target)?;
    let tcp = connect(&addresses, connect_by, target).await?;
    let stream: Box<dyn Stream> = match target.scheme {
        HttpScheme::Http => Box::new(tcp),
        HttpScheme::Https => Box::new(tls(tcp, target, connect_by).await?),
    };
    let handshake = hyper::client::conn::http1::Builder::new().handshake(TokioIo::new(stream));
    let (mut sender, conn) = match tokio::time::timeout_at(connect_by, handshake).await {
        Err(_) => return Err(timed_out(Error::ConnectionTimeout, "connecting", limits.connect)),
        Ok(Err(e)) => return Err(Failure::new(Error::Hyper(e), "connection", "the HTTP handshake failed")),
        Ok(Ok(pair)) => pair,
    };

    // The request line takes the path only; the `host` header names the host as it was checked
    // and resolved (wasi:http set the URL's authority, maybe another case or a trailing dot).
    let host = http::HeaderValue::try_from(target.authority())
        .map_err(|e| Failure::new(Error::HttpRequestUriInvalid, "invalid-uri", e.to_string()))?;
    request.headers_mut().insert(http::header::HOST, host);
    let path = request.uri().path_and_query().map_or("/", |p| p.as_str()).to_owned();
    *request.uri_mut() = http::Uri::builder()
        .path_and_query(path)
        .build()
        .map_err(|e| Failure::new(Error::HttpRequestUriInvalid, "invalid-uri", e.to_string()))?;
    let request = request.map(|body| CountingBody::new(body, span.sent_counter()).boxed_unsync());

    let first_byte = limits.first_byte;
    let send = async move {
        match tokio::time::timeout(first_byte, sender.send_request(request)).await {
            Err(_) => Err(timed_out(Error::HttpResponseTimeout, "the response", first_byte)),
            Ok(Err(e)) => {
                let reason = format!("the request failed: {e}");
                Err(Failure::new(Error::Hyper(e), "connection", reason))
            }
            Ok(Ok(response)) => Ok(response),
        }
    };
    // Wait for the response while driving the connection's I/O; what is left of the connection
    // goes on driving the body.
    let mut send = std::pin::pin!(send);
    let mut conn = Some(conn);
    let response = poll_fn(|cx| match send.as_mut().poll(cx) {
        Poll::Ready(result) => Poll::Ready(result),
        Poll::Pending => {
            let Some(driver) = conn.as_mut() else {
                return Poll::Pending;
            };
            let Poll::Ready(done) = Pin::new(driver).poll(cx) else {
                return Poll::Pending;
            };
            conn = None;
            match done {
                Ok(()) => send.as_mut().poll(cx),
                Err(e) => {
                    let reason = format!("the connection failed: {e}");
                    Poll::Ready(Err(Failure::new(Error::Hyper(e), "connection", reason)))
                }
            }
        }
    })
    .await?;
    let io = async move {
        match conn {
            Some(conn) => conn.await.map_err(Error::Hyper),
            None => Ok(()),
        }
    };
    Ok((response, Box::new(io)))
}

fn timed_out(error: Error, waiting_for: &str, after: Duration) -> Failure {
    Failure::new(
        error,
        "timeout",
        format!("timed out after {after:?} waiting for {waiting_for} (--agent-http-timeout)"),
    )
}

/// The addresses a request may connect to: all of them, when a grant names the host exactly;
/// else every address the name resolved to must be public, or the request is refused (a name
/// cannot mix a public address with a local one and have the local one tried).
fn reachable(addresses: Vec<SocketAddr>, granted: Granted, target: &Target) -> Result<Vec<SocketAddr>, Failure> {
    if granted == Granted::Exactly {
        return Ok(addresses);
    }
    match addresses.iter().find_map(|a| non_public(a.ip()).map(|kind| (a, kind))) {
        None => Ok(addresses),
        Some((address, kind)) => Err(Failure {
            refused: Some(Box::new((
                format!("HTTP to {} at a {kind} address", target.origin()),
                format!("--agent-http {}", target.origin()),
            ))),
            ..Failure::new(
                Error::DestinationIpProhibited,
                "destination-ip-prohibited",
                format!(
                    "{} resolves to {}, a {kind} address; only a grant naming this host exactly may reach it",
                    target.host,
                    address.ip()
                ),
            )
        }),
    }
}

/// The host's addresses: an IP literal as it is, a name (normalised: the one the grant matched)
/// looked up once, here.
async fn resolve(target: &Target, by: Instant) -> Result<Vec<SocketAddr>, Failure> {
    let name = match &target.host {
        RequestHost::Ip(ip) => return Ok(vec![SocketAddr::new(*ip, target.port)]),
        RequestHost::Name(name) => name,
    };
    let lookup = tokio::net::lookup_host((name.as_str(), target.port));
    match tokio::time::timeout_at(by, lookup).await {
        Err(_) => Err(Failure::new(
            Error::DnsTimeout,
            "dns",
            format!("looking up {} timed out", target.host),
        )),
        Ok(Err(e)) => Err(Failure::new(
            Error::DnsError {
                rcode: Some(e.to_string()),
                info_code: None,
            },
            "dns",
            format!("cannot look up {}: {e}", target.host),
        )),
        Ok(Ok(found)) => {
            let found: Vec<SocketAddr> = found.collect();
            if found.is_empty() {
                return Err(Failure::new(
                    Error::DestinationNotFound,
                    "dns",
                    format!("{} has no address", target.host),
                ));
            }
            Ok(found)
        }
    }
}

/// A TCP connection to the first of `addresses` that answers.
async fn connect(addresses: &[SocketAddr], by: Instant, target: &Target) -> Result<TcpStream, Failure> {
    let mut last = None;
    for address in addresses {
        match tokio::time::timeout_at(by, TcpStream::connect(address)).await {
            Err(_) => break,
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) => last = Some((address, e)),
        }
    }
    Err(match last {
        None => Failure::new(
            Error::ConnectionTimeout,
            "timeout",
            format!("connecting to {} timed out (--agent-http-timeout)", target.host),
        ),
        Some((address, e)) => {
            let reason = format!("cannot connect to {address}: {e}");
            let error = match e.kind() {
                std::io::ErrorKind::ConnectionRefused => Error::ConnectionRefused,
                _ => Error::Connect(e),
            };
            Failure::new(error, "connection", reason)
        }
    })
}

async fn tls(tcp: TcpStream, target: &Target, by: Instant) -> Result<impl Stream, Failure> {
    let config = tls_config().map_err(|reason| Failure::new(Error::TlsProtocolError, "tls", reason))?;
    let name = match &target.host {
        RequestHost::Ip(ip) => rustls::pki_types::ServerName::from(*ip),
        RequestHost::Name(name) => rustls::pki_types::ServerName::try_from(name.as_str())
            .map(|n| n.to_owned())
            .map_err(|_| {
                Failure::new(
                    Error::TlsProtocolError,
                    "tls",
                    format!("{} is not a name TLS can verify", target.host),
                )
            })?,
    };
    let connector = tokio_rustls::TlsConnector::from(config);
    match tokio::time::timeout_at(by, connector.connect(name, tcp)).await {
        Err(_) => Err(Failure::new(
            Error::ConnectionTimeout,
            "timeout",
            format!(
                "the TLS handshake with {} timed out (--agent-http-timeout)",
                target.host
            ),
        )),
        Ok(Err(e)) => {
            let certificate = e
                .get_ref()
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
                .is_some_and(|e| matches!(e, rustls::Error::InvalidCertificate(_)));
            let error = if certificate {
                Error::TlsCertificateError
            } else {
                Error::TlsProtocolError
            };
            Err(Failure::new(
                error,
                "tls",
                format!("TLS with {} failed: {e}", target.host),
            ))
        }
        Ok(Ok(stream)) => Ok(stream),
    }
}

/// The one TLS client configuration (rustls on aws-lc-rs, as the LLM client's; Mozilla's roots),
/// built on first use.
fn tls_config() -> Result<Arc<rustls::ClientConfig>, String> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = rustls::RootCertStore::empty();
            roots.add_parsable_certificates(webpki_root_certs::TLS_SERVER_ROOT_CERTS.iter().cloned());
            let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
            let mut config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| format!("cannot set up TLS: {e}"))?
                .with_root_certificates(roots)
                .with_no_client_auth();
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Ok(Arc::new(config))
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::Empty;

    fn get(url: &str) -> http::Request<WasiBody> {
        let body = Empty::new().map_err(|never| match never {}).boxed_unsync();
        http::Request::get(url).body(body).expect("a request")
    }

    /// A name under a wildcard grant that resolves to loopback (`localhost`, looked up by the
    /// system's resolver) is refused before anything connects; granted exactly, it is reached.
    #[tokio::test]
    async fn a_name_resolving_to_loopback_needs_a_grant_naming_it() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let target = || Target {
            scheme: HttpScheme::Http,
            host: RequestHost::Name("localhost".to_owned()),
            port,
        };
        let limits = Limits::new(Duration::from_secs(5), 1 << 20, None);
        let url = format!("http://localhost:{port}/");
        let refused = send(
            get(&url),
            target(),
            Granted::ByWildcard,
            limits,
            RequestSpan::new(None),
            None,
        )
        .await;
        assert!(
            matches!(refused, Err(Error::DestinationIpProhibited)),
            "{:?}",
            refused.err()
        );
        let accepted = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
        assert!(accepted.is_err(), "nothing connected");

        let exact = tokio::spawn(send(
            get(&url),
            target(),
            Granted::Exactly,
            limits,
            RequestSpan::new(None),
            None,
        ));
        let (mut stream, _) = listener.accept().await.expect("the exact grant connects");
        tokio::io::AsyncWriteExt::write_all(&mut stream, b"HTTP/1.1 204 No Content\r\n\r\n")
            .await
            .expect("answer");
        let (response, _io) = exact.await.expect("joined").expect("answered");
        assert_eq!(response.status(), 204);
    }

    /// `LOCALHOST.` is resolved as `localhost`, the name the grant matched (the system's hosts
    /// file, not the network's resolver), and sent as that name in `Host`.
    #[tokio::test]
    async fn a_trailing_dot_name_is_resolved_and_sent_as_the_normalised_name() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let url = format!("http://LOCALHOST.:{port}/x");
        let uri: http::Uri = url.parse().expect("uri");
        let target = Target::of(&uri).unwrap_or_else(|(_, _, reason)| panic!("{reason}"));
        assert_eq!(target.host, RequestHost::Name("localhost".to_owned()));
        let limits = Limits::new(Duration::from_secs(5), 1 << 20, None);
        let mut request = get(&url);
        // As wasi:http sets it: the URL's authority.
        let authority = http::HeaderValue::from_str(&format!("LOCALHOST.:{port}")).expect("header");
        request.headers_mut().insert(http::header::HOST, authority);
        let sent = tokio::spawn(send(
            request,
            target,
            Granted::Exactly,
            limits,
            RequestSpan::new(None),
            None,
        ));
        let accepted = tokio::time::timeout(Duration::from_secs(5), listener.accept()).await;
        let (mut stream, _) = accepted
            .expect("localhost resolves to this loopback listener")
            .expect("accept");
        let mut head = vec![0u8; 4096];
        let read = tokio::io::AsyncReadExt::read(&mut stream, &mut head)
            .await
            .expect("request");
        let head = String::from_utf8_lossy(&head[..read]).to_ascii_lowercase();
        assert!(head.contains(&format!("\r\nhost: localhost:{port}\r\n")), "{head}");
        assert_eq!(head.matches("\r\nhost:").count(), 1, "{head}");
        tokio::io::AsyncWriteExt::write_all(&mut stream, b"HTTP/1.1 204 No Content\r\n\r\n")
            .await
            .expect("answer");
        let (response, _io) = sent.await.expect("joined").expect("answered");
        assert_eq!(response.status(), 204);
    }

    /// Under a wildcard grant every address a name resolves to is checked, not only the first:
    /// one local address among public ones refuses the request.
    #[test]
    fn every_resolved_address_is_checked_unless_the_host_is_granted_exactly() {
        let target = Target {
            scheme: HttpScheme::Https,
            host: RequestHost::Name("api.example.com".to_owned()),
            port: 443,
        };
        let address = |ip: &str| SocketAddr::new(ip.parse().expect("ip"), 443);
        let public = vec![address("93.184.216.34"), address("2606:2800:220:1::1")];
        let ok = reachable(public.clone(), Granted::ByWildcard, &target).map_err(|f| f.reason);
        assert_eq!(ok, Ok(public.clone()));
        let mixed = vec![public[0], address("::ffff:169.254.169.254"), public[1]];
        let refused = reachable(mixed.clone(), Granted::ByWildcard, &target).map(|_| ());
        let Err(failure) = refused else {
            panic!("a local address among public ones is refused")
        };
        assert!(matches!(failure.error, Error::DestinationIpProhibited));
        assert!(failure.reason.contains("169.254.169.254"), "{}", failure.reason);
        let (what, grant) = *failure.refused.expect("a refusal a grant lifts");
        assert!(what.starts_with("HTTP to https://api.example.com:443 at a "), "{what}");
        assert_eq!(grant, "--agent-http https://api.example.com:443");
        let exact = reachable(mixed.clone(), Granted::Exactly, &target).map_err(|f| f.reason);
        assert_eq!(exact, Ok(mixed));
    }

    #[test]
    fn the_guest_may_ask_for_shorter_waits_not_longer_ones() {
        let options = RequestOptions {
            connect_timeout: Some(Duration::from_secs(1)),
            first_byte_timeout: Some(Duration::from_secs(60)),
            between_bytes_timeout: Some(Duration::ZERO),
        };
        let limits = Limits::new(Duration::from_secs(30), 10, Some(options));
        assert_eq!(limits.connect, Duration::from_secs(1));
        assert_eq!(limits.first_byte, Duration::from_secs(30));
        assert_eq!(limits.between_bytes, Duration::from_millis(1));
    }
}
