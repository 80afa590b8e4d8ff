//! How the server is started: address, optional bearer token, the limits that keep a bad client
//! from starving the others (body size, time to send headers and body, connections), and the
//! host names and web origins it answers besides its own.

use crate::site::Site;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

/// The port Agent-lightning's `agl store` uses by default.
pub const DEFAULT_PORT: u16 = 4747;
/// The largest request body accepted unless configured otherwise: 16 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 16 * 1024 * 1024;
/// How long a client may take to send a request's headers unless configured otherwise: 30 s
/// (hyper's own default).
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a client may take to send a request's body unless configured otherwise: 60 s.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a client may leave an answer unread before its connection is closed unless
/// configured otherwise: 60 s.
pub const DEFAULT_WRITE_STALL_TIMEOUT: Duration = Duration::from_secs(60);
/// How many connections are served at once unless configured otherwise: 512 (below the usual
/// 1024 open-file limit, so the cap is reached before the process runs out of descriptors).
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;

/// Options for [`crate::serve`] and [`crate::router`].
#[derive(Clone, PartialEq, Eq)]
pub struct ServerOptions {
    /// The address to bind; loopback (`127.0.0.1`) by default.
    pub host: IpAddr,
    /// The port to bind; `0` picks any free port (see [`crate::ServerHandle::local_addr`]).
    pub port: u16,
    /// When set, every route except `GET /v1/agl/health` requires `Authorization: Bearer <token>`.
    /// An empty token matches nothing: every other request is refused.
    pub token: Option<String>,
    /// Request bodies longer than this are refused with 413; so are gzip bodies (OTLP) that
    /// inflate beyond it.
    pub max_body_bytes: usize,
    /// A connection that has not sent a complete request head this long after it became ready
    /// for one (opened, or done with its previous request) is closed: slow senders ("slowloris")
    /// and kept-alive connections left idle alike. Zero is treated as one millisecond.
    pub header_read_timeout: Duration,
    /// A request whose body has not fully arrived this long after its headers is answered 408.
    pub body_read_timeout: Duration,
    /// A connection whose client has read nothing of an answer for this long is closed (a client
    /// that asks and never reads would otherwise hold its connection for ever).
    pub write_stall_timeout: Duration,
    /// At most this many connections are served at once; further clients wait in the listen
    /// backlog until one closes. At least 1.
    pub max_connections: usize,
    /// A static web app (a dashboard) served at `/` for every `GET`/`HEAD` that is not the API's,
    /// without the token (its files hold no data). `None`: no site, every other path is a 404.
    pub site: Option<Site>,
    /// Host names answered besides the loopback ones, as a `Host` header names them: `name`
    /// (any port) or `name:port`, case-insensitive, e.g. `dash.example.com`, `10.0.0.5:4747`.
    /// A server bound to a loopback address answers only loopback names (`localhost`,
    /// `*.localhost`, `127.x.y.z`, `[::1]`) and these, so that a web page whose name was
    /// re-pointed at 127.0.0.1 (DNS rebinding) cannot use it. A server bound to another address
    /// checks `Host` only when this is not empty (then loopback names, the bound address and these).
    pub allowed_hosts: Vec<String>,
    /// Web origins (`scheme://host[:port]`, e.g. `https://dash.example.com`) whose pages may call
    /// this server besides its own. A request whose `Origin` is another (or `null`) is refused
    /// 403: a page elsewhere cannot drive the API with the user's browser.
    pub allowed_origins: Vec<String>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            host: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: DEFAULT_PORT,
            token: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            write_stall_timeout: DEFAULT_WRITE_STALL_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            site: None,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
        }
    }
}

impl fmt::Debug for ServerOptions {
    /// Like a derived `Debug`, with the token redacted.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerOptions")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("max_body_bytes", &self.max_body_bytes)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("body_read_timeout", &self.body_read_timeout)
            .field("write_stall_timeout", &self.write_stall_timeout)
            .field("max_connections", &self.max_connections)
            .field("site", &self.site)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_loopback_4747_no_token_16_mib() {
        let options = ServerOptions::default();
        assert_eq!(options.host, IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert_eq!(options.port, 4747);
        assert_eq!(options.token, None);
        assert_eq!(options.max_body_bytes, 16 << 20);
        assert_eq!(options.site, None);
    }

    #[test]
    fn default_limits_bound_slow_clients_and_connections() {
        let options = ServerOptions::default();
        assert_eq!(options.header_read_timeout, Duration::from_secs(30));
        assert_eq!(options.body_read_timeout, Duration::from_secs(60));
        assert_eq!(options.write_stall_timeout, Duration::from_secs(60));
        assert_eq!(options.max_connections, 512);
    }

    #[test]
    fn debug_never_shows_the_token() {
        let options = ServerOptions {
            token: Some("s3cret".into()),
            ..ServerOptions::default()
        };
        let shown = format!("{options:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }
}
