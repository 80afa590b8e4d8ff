//! How the server is started: address, optional bearer token, request body limit.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};

/// The port Agent-lightning's `agl store` uses by default.
pub const DEFAULT_PORT: u16 = 4747;
/// The largest request body accepted unless configured otherwise: 16 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

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
    /// Request bodies longer than this are refused with 413.
    pub max_body_bytes: usize,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            host: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: DEFAULT_PORT,
            token: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
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
