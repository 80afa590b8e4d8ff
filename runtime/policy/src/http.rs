//! The outgoing HTTP slice (`wasi:http/outgoing-handler`): which hosts a guest may send requests
//! to (none by default), how many requests one attempt may send, how long one request may wait and
//! how large a response body may be. The host enforces it (agl-wasm's `capabilities/http/`); the manifest's table
//! is `[http]`.
//!
//! A grant is Spin's `allowed_outbound_hosts` entry: `scheme://host[:port]`. The scheme is `http`
//! or `https`; without a port only the scheme's default one (80, 443) is granted; `*.example.com`
//! grants every subdomain of `example.com` (not `example.com` itself); a bare `*` is refused. Hosts
//! are DNS names or IP literals (`[::1]` for IPv6). Patterns are parsed once, here, with the
//! reason a bad one is refused.

use crate::value::{HumanDuration, Size, from_text};
use crate::{Layer, PolicyError, set};
use serde::{Deserialize, Deserializer};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

pub const DEFAULT_HTTP_MAX_REQUESTS: u32 = 100;
pub const DEFAULT_HTTP_TIMEOUT: Duration = Duration::from_secs(30);
pub const DEFAULT_HTTP_MAX_RESPONSE_BYTES: u64 = 10 << 20;

/// The scheme of a grant or a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HttpScheme {
    Http,
    Https,
}

impl HttpScheme {
    /// `http` or `https` (any case); anything else is no HTTP scheme.
    pub fn parse(scheme: &str) -> Option<Self> {
        if scheme.eq_ignore_ascii_case("http") {
            Some(Self::Http)
        } else if scheme.eq_ignore_ascii_case("https") {
            Some(Self::Https)
        } else {
            None
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Https => "https",
        }
    }

    /// The port a URL without one means.
    pub fn default_port(self) -> u16 {
        match self {
            Self::Http => 80,
            Self::Https => 443,
        }
    }
}

/// The host part of a grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostMatch {
    /// One DNS name (lowercase, without a trailing dot).
    Name(String),
    /// One IP address.
    Ip(IpAddr),
    /// Every subdomain of this name (`*.example.com` holds `example.com`), at any depth.
    Subdomains(String),
}

/// One grant: `scheme://host[:port]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    pub scheme: HttpScheme,
    pub host: HostMatch,
    pub port: u16,
}

/// How a request's host matched a grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Granted {
    /// A grant names this very host (e.g. `http://localhost:8080`, `http://127.0.0.1:8080`): it
    /// may reach loopback and private addresses.
    Exactly,
    /// Only a wildcard grant covers it: public addresses only.
    ByWildcard,
}

impl HostPattern {
    /// Whether a request to `scheme://host:port` falls under this grant.
    pub fn matches(&self, scheme: HttpScheme, host: &RequestHost, port: u16) -> Option<Granted> {
        if scheme != self.scheme || port != self.port {
            return None;
        }
        match (&self.host, host) {
            (HostMatch::Ip(ip), RequestHost::Ip(requested)) if ip == requested => Some(Granted::Exactly),
            (HostMatch::Name(name), RequestHost::Name(requested)) if name == requested => Some(Granted::Exactly),
            (HostMatch::Subdomains(parent), RequestHost::Name(requested))
                if requested
                    .strip_suffix(parent.as_str())
                    .and_then(|label| label.strip_suffix('.'))
                    .is_some_and(|label| !label.is_empty()) =>
            {
                Some(Granted::ByWildcard)
            }
            _ => None,
        }
    }
}

/// A request's host, normalised once as grants are: an IP address, or a DNS name in lower case
/// without its trailing dot (`LOCALHOST.` is `localhost`). The host matches grants against this
/// form, resolves it, and names it in the `Host` header, TLS and the request's span.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RequestHost {
    Name(String),
    Ip(IpAddr),
}

impl RequestHost {
    /// `host` as a URL writes it (any case, IPv6 in brackets, maybe one trailing dot), or why it
    /// is no host.
    pub fn parse(host: &str) -> Result<Self, String> {
        if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            return inner
                .parse::<Ipv6Addr>()
                .map(|ip| Self::Ip(IpAddr::V6(ip)))
                .map_err(|_| format!("'{inner}' is not an IPv6 address"));
        }
        let name = normalise_name(host)?;
        if let Ok(ip) = name.parse::<Ipv4Addr>() {
            return Ok(Self::Ip(IpAddr::V4(ip)));
        }
        refuse_numeric(&name, host)?;
        Ok(Self::Name(name))
    }

    /// The host as an IP address, when it is one.
    pub fn ip(&self) -> Option<IpAddr> {
        match self {
            Self::Ip(ip) => Some(*ip),
            Self::Name(_) => None,
        }
    }
}

/// As a URL writes it: the name, an IPv4 address, an IPv6 one in brackets.
impl fmt::Display for RequestHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(name) => f.write_str(name),
            Self::Ip(IpAddr::V4(ip)) => write!(f, "{ip}"),
            Self::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
        }
    }
}

/// A DNS name in the one form grants and requests share: one trailing dot removed, lower case,
/// labels of letters, digits, `-` and `_` (IDNA is not done: write `xn--` names).
fn normalise_name(host: &str) -> Result<String, String> {
    let name = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    let valid_label = |label: &str| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    if name.len() > 253 || !name.split('.').all(valid_label) {
        return Err(format!("'{host}' is not a host name"));
    }
    Ok(name)
}

/// Refuses a name whose last label is a number (`127.1`, `2130706433`, `0x7f.1`): the system's
/// resolver would read it as an IPv4 address, so it is neither a name nor a checked address.
fn refuse_numeric(name: &str, host: &str) -> Result<(), String> {
    let last = name.rsplit('.').next().unwrap_or(name);
    let hex = last
        .strip_prefix("0x")
        .is_some_and(|digits| digits.bytes().all(|b| b.is_ascii_hexdigit()));
    if hex || last.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "'{host}' is neither a host name nor an IP address written as a.b.c.d"
        ));
    }
    Ok(())
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://", self.scheme.as_str())?;
        match &self.host {
            HostMatch::Name(name) => f.write_str(name)?,
            HostMatch::Ip(IpAddr::V4(ip)) => write!(f, "{ip}")?,
            HostMatch::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]")?,
            HostMatch::Subdomains(parent) => write!(f, "*.{parent}")?,
        }
        if self.port != self.scheme.default_port() {
            write!(f, ":{}", self.port)?;
        }
        Ok(())
    }
}

impl FromStr for HostPattern {
    type Err = PolicyError;
    fn from_str(value: &str) -> Result<Self, PolicyError> {
        parse_host_pattern(value)
    }
}

impl<'de> Deserialize<'de> for HostPattern {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        from_text(deserializer, "an outbound host such as \"https://api.example.com\"")
    }
}

/// `scheme://host[:port]`, as Spin writes its `allowed_outbound_hosts`: `http` or `https`; a DNS
/// name, `*.` and a DNS name, an IPv4 address or an IPv6 one in brackets; a port from 1 to 65535
/// (the scheme's default without one). A trailing `/` is accepted; a path, a query, user info or a
/// bare `*` is refused.
pub fn parse_host_pattern(value: &str) -> Result<HostPattern, PolicyError> {
    let invalid = |message: &str| PolicyError::InvalidValue {
        what: "outbound host",
        value: value.to_owned(),
        message: message.to_owned(),
    };
    let text = value.trim();
    let (scheme, rest) = text
        .split_once("://")
        .ok_or_else(|| invalid("expected scheme://host[:port], e.g. https://api.example.com"))?;
    let scheme = HttpScheme::parse(scheme).ok_or_else(|| invalid("the scheme must be http or https"))?;
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.contains(['/', '?', '#']) {
        return Err(invalid("a grant names a host, not a path: scheme://host[:port]"));
    }
    if authority.contains('@') {
        return Err(invalid("user info is not part of a grant: scheme://host[:port]"));
    }
    let (host, port) = split_port(authority).map_err(|m| invalid(&m))?;
    let port = port.unwrap_or_else(|| scheme.default_port());
    let host = parse_host(host).map_err(|m| invalid(&m))?;
    Ok(HostPattern { scheme, host, port })
}

/// `host[:port]` or `[v6][:port]` into the host and the port, if any.
fn split_port(authority: &str) -> Result<(&str, Option<u16>), String> {
    let (host, port) = if authority.starts_with('[') {
        let end = authority.find(']').ok_or("an IPv6 address needs its closing ']'")?;
        let (host, rest) = authority.split_at(end + 1);
        match rest {
            "" => (host, None),
            _ => match rest.strip_prefix(':') {
                Some(port) => (host, Some(port)),
                None => return Err("expected :port after the IPv6 address".into()),
            },
        }
    } else if authority.matches(':').count() > 1 {
        return Err("write an IPv6 address in brackets, e.g. http://[::1]:8080".into());
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let port = match port {
        None => None,
        Some("*") => return Err("a port wildcard is not supported: name the port".into()),
        Some(port) => match port.parse::<u16>() {
            Ok(port) if port > 0 => Some(port),
            _ => return Err(format!("'{port}' is not a port (1 to 65535)")),
        },
    };
    Ok((host, port))
}

/// A grant's host, normalised as a request's is ([`RequestHost::parse`]), or `*.` and a name.
fn parse_host(host: &str) -> Result<HostMatch, String> {
    if host.is_empty() {
        return Err("the host is empty".into());
    }
    if host == "*" {
        return Err("'*' would grant every host; name them, or their parent as *.example.com".into());
    }
    let (wildcard, name) = match host.strip_prefix("*.") {
        Some(parent) => (true, parent),
        None => (false, host),
    };
    if name.contains('*') {
        return Err("a wildcard is only allowed as the first label: *.example.com".into());
    }
    Ok(match (wildcard, RequestHost::parse(name)?) {
        (false, RequestHost::Name(name)) => HostMatch::Name(name),
        (false, RequestHost::Ip(ip)) => HostMatch::Ip(ip),
        (true, RequestHost::Name(name)) => HostMatch::Subdomains(name),
        (true, RequestHost::Ip(_)) => return Err("a wildcard covers subdomains of a name, not IP addresses".into()),
    })
}

/// A guest's outgoing HTTP: where it may go and its limits per attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpPolicy {
    /// The grants; empty = no outgoing HTTP at all. Shared, not copied, by each instance.
    pub allowed_hosts: Arc<[HostPattern]>,
    /// Requests one attempt may send (denied ones do not count).
    pub max_requests: u32,
    /// How long one request may wait at each step: connecting (name lookup, TCP, TLS), the
    /// response's first byte, and between two pieces of its body.
    pub timeout: Duration,
    /// Largest response body; past it the body fails in the guest.
    pub max_response_bytes: u64,
}

impl Default for HttpPolicy {
    fn default() -> Self {
        Self {
            allowed_hosts: Arc::new([]),
            max_requests: DEFAULT_HTTP_MAX_REQUESTS,
            timeout: DEFAULT_HTTP_TIMEOUT,
            max_response_bytes: DEFAULT_HTTP_MAX_RESPONSE_BYTES,
        }
    }
}

impl HttpPolicy {
    /// The grant a request to `scheme://host:port` falls under, an exact one first.
    pub fn grant_for(&self, scheme: HttpScheme, host: &RequestHost, port: u16) -> Option<Granted> {
        let mut found = None;
        for pattern in self.allowed_hosts.iter() {
            match pattern.matches(scheme, host, port) {
                Some(Granted::Exactly) => return Some(Granted::Exactly),
                Some(Granted::ByWildcard) => found = Some(Granted::ByWildcard),
                None => {}
            }
        }
        found
    }
}

/// Outgoing HTTP as a manifest's `[http]` table or the flags set it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, clap::Args)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct HttpOptions {
    /// Allow outgoing HTTP to a host: scheme://host[:port] (no port: the scheme's default only),
    /// *.example.com for its subdomains. None by default. Repeatable.
    #[arg(long = "agent-http", value_name = "URL-PATTERN")]
    #[serde(default)]
    pub allowed_outbound_hosts: Vec<HostPattern>,
    /// Outgoing HTTP requests allowed per attempt [default: 100].
    #[arg(long = "agent-http-requests", value_name = "N")]
    pub max_requests: Option<u32>,
    /// Timeout of each step of one HTTP request (connecting, the first byte, between body
    /// bytes), e.g. 30s [default: 30s].
    #[arg(id = "agent_http_timeout", long = "agent-http-timeout", value_name = "DURATION")]
    pub timeout: Option<HumanDuration>,
    /// Largest HTTP response body, e.g. 10MiB [default: 10MiB]; past it the body fails in the guest.
    #[arg(long = "agent-http-max-response", value_name = "SIZE")]
    pub max_response_size: Option<Size>,
}

impl Layer for HttpOptions {
    type Policy = HttpPolicy;
    fn apply(self, http: &mut HttpPolicy) {
        if !self.allowed_outbound_hosts.is_empty() {
            let mut hosts = http.allowed_hosts.to_vec();
            hosts.extend(self.allowed_outbound_hosts);
            http.allowed_hosts = hosts.into();
        }
        set(&mut http.max_requests, self.max_requests);
        set(&mut http.timeout, self.timeout.map(|t| t.0));
        set(&mut http.max_response_bytes, self.max_response_size.map(|s| s.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(text: &str) -> HostPattern {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn host(text: &str) -> RequestHost {
        RequestHost::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn refused(text: &str) -> String {
        match text.parse::<HostPattern>() {
            Ok(p) => panic!("{text} parsed as {p:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_grant_is_scheme_host_and_the_schemes_default_port() {
        let p = pattern("https://API.example.com");
        assert_eq!(
            p,
            HostPattern {
                scheme: HttpScheme::Https,
                host: HostMatch::Name("api.example.com".into()),
                port: 443
            }
        );
        assert_eq!(
            p.matches(HttpScheme::Https, &host("api.example.com"), 443),
            Some(Granted::Exactly)
        );
        assert_eq!(
            p.matches(HttpScheme::Https, &host("API.Example.Com."), 443),
            Some(Granted::Exactly)
        );
        assert_eq!(
            p.matches(HttpScheme::Https, &host("api.example.com"), 8443),
            None,
            "other port"
        );
        assert_eq!(
            p.matches(HttpScheme::Http, &host("api.example.com"), 443),
            None,
            "other scheme"
        );
        assert_eq!(p.matches(HttpScheme::Https, &host("example.com"), 443), None);
        assert_eq!(p.matches(HttpScheme::Https, &host("x.api.example.com"), 443), None);
        assert_eq!(pattern("http://example.com/").port, 80, "a trailing slash is fine");
    }

    #[test]
    fn an_explicit_port_grants_that_port_only() {
        let p = pattern("http://127.0.0.1:8080");
        assert_eq!(
            p.matches(HttpScheme::Http, &host("127.0.0.1"), 8080),
            Some(Granted::Exactly)
        );
        assert_eq!(p.matches(HttpScheme::Http, &host("127.0.0.1"), 80), None);
        assert_eq!(
            p.matches(HttpScheme::Http, &host("localhost"), 8080),
            None,
            "a name is not its address"
        );
        let p = pattern("http://localhost:8080");
        assert_eq!(p.matches(HttpScheme::Http, &host("127.0.0.1"), 8080), None);
        assert_eq!(
            p.matches(HttpScheme::Http, &host("localhost"), 8080),
            Some(Granted::Exactly)
        );
    }

    #[test]
    fn a_wildcard_grants_subdomains_at_any_depth_but_not_the_parent() {
        let p = pattern("https://*.example.com");
        assert_eq!(
            p.matches(HttpScheme::Https, &host("a.example.com"), 443),
            Some(Granted::ByWildcard)
        );
        assert_eq!(
            p.matches(HttpScheme::Https, &host("a.b.example.com"), 443),
            Some(Granted::ByWildcard)
        );
        assert_eq!(p.matches(HttpScheme::Https, &host("example.com"), 443), None);
        assert_eq!(p.matches(HttpScheme::Https, &host("badexample.com"), 443), None);
        assert!(RequestHost::parse(".example.com").is_err(), "an empty label is no name");
        assert_eq!(p.to_string(), "https://*.example.com");
    }

    #[test]
    fn ipv6_grants_are_bracketed_and_compared_as_addresses() {
        let p = pattern("http://[::1]:8080");
        assert_eq!(
            p.matches(HttpScheme::Http, &host("[0:0::1]"), 8080),
            Some(Granted::Exactly)
        );
        assert_eq!(p.matches(HttpScheme::Http, &host("127.0.0.1"), 8080), None);
        assert_eq!(p.to_string(), "http://[::1]:8080");
        assert!(refused("http://::1").contains("brackets"));
        assert!(refused("http://[::1").contains("']'"));
        assert!(refused("http://[nope]:80").contains("IPv6"));
    }

    #[test]
    fn bad_grants_are_refused_with_their_reason() {
        assert!(refused("api.example.com").contains("scheme://host"));
        assert!(refused("ftp://example.com").contains("http or https"));
        assert!(refused("https://*").contains("every host"));
        assert!(refused("https://*:443").contains("every host"));
        assert!(refused("https://example.com/v1").contains("not a path"));
        assert!(refused("https://example.com?x=1").contains("not a path"));
        assert!(refused("https://user@example.com").contains("user info"));
        assert!(refused("https://example.com:0").contains("not a port"));
        assert!(refused("https://example.com:99999").contains("not a port"));
        assert!(refused("https://example.com:*").contains("port wildcard"));
        assert!(refused("https://a.*.example.com").contains("first label"));
        assert!(refused("https://exa mple.com").contains("not a host name"));
        assert!(refused("https://").contains("empty"));
        assert!(refused("https://*.10.0.0.1").contains("IP"));
    }

    #[test]
    fn a_request_host_is_normalised_once_as_grants_are() {
        // One trailing dot and the case are dropped: `LOCALHOST.` is `localhost` everywhere.
        assert_eq!(host("LOCALHOST."), RequestHost::Name("localhost".into()));
        assert_eq!(host("LOCALHOST.").to_string(), "localhost");
        assert_eq!(host("A.Example.COM.").to_string(), "a.example.com");
        assert_eq!(host("127.0.0.1."), RequestHost::Ip("127.0.0.1".parse().unwrap()));
        assert_eq!(host("[::1]").to_string(), "[::1]");
        let grant = pattern("http://localhost:8080");
        assert_eq!(
            grant.matches(HttpScheme::Http, &host("LOCALHOST."), 8080),
            Some(Granted::Exactly)
        );
        assert_eq!(grant.host, HostMatch::Name("localhost".into()));
        assert_eq!(
            pattern("http://LocalHost.:8080"),
            grant,
            "a grant is normalised the same way"
        );
        assert_eq!(pattern("http://127.0.0.1.:8080"), pattern("http://127.0.0.1:8080"));
        // What is no host name is refused, not handed to a resolver.
        for bad in [
            "localhost..",
            "a..b",
            ".",
            "",
            "exa mple.com",
            "[::1",
            "x%00.com",
            "u@host",
        ] {
            assert!(RequestHost::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_name_the_resolver_would_read_as_an_ipv4_address_is_refused() {
        for numeric in [
            "127.1",
            "2130706433",
            "0x7f.1",
            "0x7f000001",
            "10.0.1",
            "a.0x1f",
            "127.0.0.1..",
        ] {
            let error = RequestHost::parse(numeric).expect_err(numeric);
            assert!(
                error.contains("not a host name") || error.contains("neither"),
                "{numeric}: {error}"
            );
        }
        assert!(refused("http://*.0.1").contains("neither"));
        assert!(refused("http://2130706433").contains("neither"));
        assert_eq!(host("0x.example.com"), RequestHost::Name("0x.example.com".into()));
        assert_eq!(host("1.example.com"), RequestHost::Name("1.example.com".into()));
    }

    #[test]
    fn an_exact_grant_wins_over_a_wildcard() {
        let policy = HttpPolicy {
            allowed_hosts: vec![pattern("http://*.example.com"), pattern("http://a.example.com")].into(),
            ..HttpPolicy::default()
        };
        assert_eq!(
            policy.grant_for(HttpScheme::Http, &host("a.example.com"), 80),
            Some(Granted::Exactly)
        );
        assert_eq!(
            policy.grant_for(HttpScheme::Http, &host("b.example.com"), 80),
            Some(Granted::ByWildcard)
        );
        assert_eq!(policy.grant_for(HttpScheme::Http, &host("example.org"), 80), None);
        assert_eq!(
            HttpPolicy::default().grant_for(HttpScheme::Http, &host("a.example.com"), 80),
            None
        );
    }

    #[test]
    fn grants_add_up_and_limits_replace() {
        let mut policy = HttpPolicy::default();
        HttpOptions {
            allowed_outbound_hosts: vec![pattern("https://a.example.com")],
            max_requests: Some(5),
            ..HttpOptions::default()
        }
        .apply(&mut policy);
        HttpOptions {
            allowed_outbound_hosts: vec![pattern("https://b.example.com")],
            timeout: Some(HumanDuration(Duration::from_secs(2))),
            ..HttpOptions::default()
        }
        .apply(&mut policy);
        assert_eq!(policy.allowed_hosts.len(), 2);
        assert_eq!(policy.max_requests, 5, "an absent value keeps the earlier layer's");
        assert_eq!(policy.timeout, Duration::from_secs(2));
        assert_eq!(policy.max_response_bytes, DEFAULT_HTTP_MAX_RESPONSE_BYTES);
    }
}
