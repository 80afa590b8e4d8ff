//! The outgoing HTTP capability (`wasi:http/outgoing-handler` and `wasi:http/types`, from
//! wasmtime-wasi-http), denied by default. Policy slice: `http` (`agl-policy`'s `http.rs`: the
//! granted hosts, the request budget, the timeout and the response-body cap).
//!
//! Every world links it; what a guest may do is decided per request by [`HttpGate`], the
//! wasi:http hooks of one instance: a URL with user info is refused; the host is normalised once
//! ([`RequestHost`]: lower case, no trailing dot), and the request's scheme, that host and port
//! must fall under a grant and the attempt's budget must not be spent, else the guest's `handle`
//! fails at once with `HTTP-request-denied`. An admitted request is sent by the host itself (`send.rs`: its own name
//! lookup, non-public addresses only for a host granted exactly, TLS, timeouts), and its response
//! body is counted and capped (`body.rs`). `handle` is linked here rather than taken from
//! wasmtime-wasi-http so that it can reach the world's trace: each request is a client span, a
//! child of the operation open when it was sent (`span.rs`). Not here: incoming HTTP (no world
//! serves requests) and HTTP/2.

mod addr;
mod body;
mod send;
mod span;
mod taped;

use super::tape::{Cue, TapeHandle};
use super::{Capability, InstanceContext, InstanceState, Link, SandboxError, World};
use crate::policy::{HttpPolicy, HttpScheme, RequestHost, SandboxPolicy};
use agl_trace::names::http as keys;
use opentelemetry::KeyValue;
use opentelemetry::trace::SpanKind;
use span::{OpenSpans, RequestSpan};
use std::pin::Pin;
use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi_http::p2::bindings::LinkOptions;
use wasmtime_wasi_http::p2::bindings::http::outgoing_handler::Host as _;
use wasmtime_wasi_http::p2::bindings::http::types::{self as wit, ErrorCode};
use wasmtime_wasi_http::p2::types::{HostFutureIncomingResponse, HostOutgoingRequest};
use wasmtime_wasi_http::{
    Error, RequestOptions, WasiBody, WasiHttp, WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks, WasiHttpView,
};

/// The interface `handle` is linked under (the version wasmtime-wasi-http 48 serves; guests
/// importing an older 0.2 version are linked to it by semver).
const OUTGOING_HANDLER: &str = "wasi:http/outgoing-handler@0.2.12";
/// The interface `http-error-code` is linked under (as `OUTGOING_HANDLER`).
const TYPES: &str = "wasi:http/types@0.2.12";

/// `types.http-error-code`: the wasi:http error code a stream's error carries — one made by
/// wasmtime-wasi-http, or a failure of a response body the host reads (`body.rs`: past the size
/// cap, silent past the timeout, broken off by the server).
fn error_code_of(error: &wasmtime::Error) -> Option<ErrorCode> {
    if let Some(code) = error.downcast_ref::<ErrorCode>() {
        return Some(code.clone());
    }
    match error.downcast_ref::<Error>()? {
        Error::HttpResponseBodySize(size) => Some(ErrorCode::HttpResponseBodySize(*size)),
        Error::ConnectionReadTimeout => Some(ErrorCode::ConnectionReadTimeout),
        Error::Hyper(e) if e.is_incomplete_message() => Some(ErrorCode::HttpResponseIncomplete),
        Error::Hyper(e) => Some(ErrorCode::InternalError(Some(e.to_string()))),
        _ => None,
    }
}

/// The outgoing HTTP side of one instance. Its resources live in the sandbox's one table.
pub struct HttpState {
    ctx: WasiHttpCtx,
    pub(crate) gate: HttpGate,
}

/// The wasi:http hooks of one instance: the policy, what the attempt has spent, and the span of
/// the request being handed over (started where the trace is at hand, finished by the hook).
pub struct HttpGate {
    policy: HttpPolicy,
    /// Requests admitted so far.
    pub(crate) requests: u32,
    pending: Option<RequestSpan>,
    /// The spans of requests still in flight (ended with the instance).
    open: OpenSpans,
    /// Set by the hook when it refused the request `handle` is handing over.
    denied: Option<ErrorCode>,
    /// The attempt's tape: every request handed over is a call on it (`taped.rs`).
    tape: TapeHandle,
}

impl<W: World> Link<W> for HttpState {
    fn link(linker: &mut Linker<InstanceState<W>>) -> wasmtime::Result<()> {
        let options = LinkOptions::default();
        wit::add_to_linker::<_, WasiHttp>(linker, &options.into(), <InstanceState<W> as WasiHttpView>::http)?;
        // wasmtime-wasi-http's `http-error-code` knows only the errors it made itself as codes;
        // the failures of the host's response bodies (`body.rs`) are read here too.
        linker.allow_shadowing(true);
        let shadowed = linker.instance(TYPES)?.func_wrap(
            "http-error-code",
            |store: StoreContextMut<'_, InstanceState<W>>, (error,): (Resource<wasmtime::Error>,)| {
                Ok((error_code_of(store.data().sandbox.table.get(&error)?),))
            },
        );
        linker.allow_shadowing(false);
        shadowed?;
        linker.instance(OUTGOING_HANDLER)?.func_wrap_async(
            "handle",
            |mut store: StoreContextMut<'_, InstanceState<W>>,
             (request, options): (Resource<HostOutgoingRequest>, Option<Resource<RequestOptions>>)| {
                Box::new(async move { Ok((handle(store.data_mut(), request, options).await?,)) })
            },
        )
    }
}

impl Capability for HttpState {
    fn prepare(policy: &SandboxPolicy, instance: &InstanceContext) -> Result<Self, SandboxError> {
        Ok(Self {
            ctx: WasiHttpCtx::new(),
            gate: HttpGate {
                policy: policy.http.clone(),
                requests: 0,
                pending: None,
                open: OpenSpans::default(),
                denied: None,
                tape: instance.tape.clone(),
            },
        })
    }

    /// Ends the spans of requests still in flight, before the trace ends.
    fn finish(&mut self) {
        self.gate.open.close_all();
    }
}

impl<W: World> WasiHttpView for InstanceState<W> {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.sandbox.http.ctx,
            table: &mut self.sandbox.table,
            hooks: &mut self.sandbox.http.gate,
        }
    }
}

/// `outgoing-handler.handle`: starts the request's span in the world's trace, then hands the
/// request to wasmtime-wasi-http, whose call of [`HttpGate::send_request`] admits or refuses it.
/// A refusal is the guest's error at once (the future made for it is dropped).
async fn handle<W: World>(
    state: &mut InstanceState<W>,
    request: Resource<HostOutgoingRequest>,
    options: Option<Resource<RequestOptions>>,
) -> wasmtime::Result<Result<Resource<HostFutureIncomingResponse>, ErrorCode>> {
    let InstanceState { sandbox, world } = state;
    let span = world
        .trace()
        .await
        .map(|trace| trace.start(keys::SPAN, SpanKind::Client, Vec::new()));
    let gate = &mut sandbox.http.gate;
    let span = RequestSpan::new(span);
    gate.open.track(&span);
    gate.pending = Some(span);
    gate.denied = None;
    let mut view = WasiHttpCtxView {
        ctx: &mut sandbox.http.ctx,
        table: &mut sandbox.table,
        hooks: &mut sandbox.http.gate,
    };
    let handled = view.handle(request, options);
    let unsent = sandbox.http.gate.pending.take();
    let denied = sandbox.http.gate.denied.take();
    match handled {
        Ok(future) => match denied {
            None => Ok(Ok(future)),
            Some(code) => {
                sandbox.table.delete(future)?;
                Ok(Err(code))
            }
        },
        Err(error) => {
            // Refused by wasi:http before it reached the hook (a bad method, URI or header).
            let code = error.downcast()?;
            if let Some(span) = unsent {
                span.fail("invalid-request", format!("wasi:http refused the request: {code:?}"));
            }
            Ok(Err(code))
        }
    }
}

/// Where a request goes, from its URI: the scheme, the host normalised once (what is matched
/// against the grants, resolved, and named in the `Host` header, TLS and the span) and the port.
pub(crate) struct Target {
    scheme: HttpScheme,
    host: RequestHost,
    port: u16,
}

/// Why a URI names no target: the guest's error code, the span's `error.type` and the reason.
type BadTarget = (ErrorCode, &'static str, String);

impl Target {
    fn of(uri: &http::Uri) -> Result<Self, BadTarget> {
        let invalid = |reason: String| (ErrorCode::HttpRequestUriInvalid, "invalid-uri", reason);
        let authority = uri
            .authority()
            .ok_or_else(|| invalid("the URL names no host".to_owned()))?;
        // Checked first, so that no reason below repeats the credentials.
        if authority.as_str().contains('@') {
            let reason = "the URL carries user info (user:password@host), which is refused: send credentials in an authorization header";
            return Err((ErrorCode::HttpRequestDenied, "HTTP-request-denied", reason.to_owned()));
        }
        let scheme = uri
            .scheme_str()
            .and_then(HttpScheme::parse)
            .ok_or_else(|| invalid(format!("'{uri}': only http and https are supported")))?;
        let host = RequestHost::parse(authority.host()).map_err(invalid)?;
        Ok(Self {
            scheme,
            host,
            port: uri.port_u16().unwrap_or_else(|| scheme.default_port()),
        })
    }

    /// `scheme://host:port`, as a grant for it would be written.
    fn origin(&self) -> String {
        format!("{}://{}:{}", self.scheme.as_str(), self.host, self.port)
    }

    /// The `Host` header: the host as checked, and the port unless it is the scheme's default.
    fn authority(&self) -> String {
        match self.port == self.scheme.default_port() {
            true => self.host.to_string(),
            false => format!("{}:{}", self.host, self.port),
        }
    }
}

impl HttpGate {
    /// Refuses the request: its span ends with the reason, and `handle` returns `code`.
    fn refuse(&mut self, span: RequestSpan, code: ErrorCode, kind: &'static str, reason: String) -> Sending {
        span.fail(kind, reason);
        self.denied = Some(code.clone());
        let error = Error::from(code);
        Box::new(async move { Err(error) })
    }

    fn granted_list(&self) -> String {
        if self.policy.allowed_hosts.is_empty() {
            return "none".to_owned();
        }
        let granted: Vec<String> = self.policy.allowed_hosts.iter().map(ToString::to_string).collect();
        granted.join(", ")
    }
}

/// A refused request's `agl.sandbox.refused` (what was refused, short and stable: no path, no
/// query) and `agl.sandbox.grant` (the flag that would allow it).
fn refusal(refused: String, grant: String) -> [KeyValue; 2] {
    [KeyValue::new(keys::REFUSED, refused), KeyValue::new(keys::GRANT, grant)]
}

type Sending = Box<dyn Future<Output = Result<send::Sent, Error>> + Send>;

impl WasiHttpHooks for HttpGate {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> Sending {
        let mut span = self.pending.take().unwrap_or_else(|| RequestSpan::new(None));
        let cue = match self.tape.call(taped::HTTP_SEND, || taped::request_head(&request)) {
            Ok(cue) => cue,
            Err(diverged) => {
                let reason = diverged.to_string();
                return self.refuse(
                    span,
                    ErrorCode::InternalError(Some(reason.clone())),
                    "replay-diverged",
                    reason,
                );
            }
        };
        span.set([KeyValue::new(keys::METHOD, request.method().as_str().to_owned())]);
        let target = match Target::of(request.uri()) {
            Ok(target) => target,
            Err((code, kind, reason)) => return self.refuse(span, code, kind, reason),
        };
        span.set([
            KeyValue::new(keys::SCHEME, target.scheme.as_str()),
            KeyValue::new(keys::HOST, target.host.to_string()),
            KeyValue::new(keys::PORT, i64::from(target.port)),
            KeyValue::new(keys::PATH, request.uri().path().to_owned()),
        ]);
        let Some(granted) = self.policy.grant_for(target.scheme, &target.host, target.port) else {
            span.set(refusal(
                format!("HTTP to {}", target.origin()),
                format!("--agent-http {}", target.origin()),
            ));
            let reason = format!(
                "{} is not granted (granted: {}); grant it with --agent-http {} or [http] allowed-outbound-hosts in the manifest \
                 (agent.toml in the agent's folder, or NAME.toml beside NAME.wasm)",
                target.origin(),
                self.granted_list(),
                target.origin()
            );
            return self.refuse(span, ErrorCode::HttpRequestDenied, "HTTP-request-denied", reason);
        };
        if self.requests >= self.policy.max_requests {
            span.set(refusal(
                format!("HTTP requests past {} per attempt", self.policy.max_requests),
                "--agent-http-requests".to_owned(),
            ));
            let reason = format!(
                "the attempt's {} HTTP requests are spent (--agent-http-requests)",
                self.policy.max_requests
            );
            return self.refuse(span, ErrorCode::HttpRequestDenied, "HTTP-request-denied", reason);
        }
        self.requests += 1;
        span.set([KeyValue::new(keys::REQUESTS_USED, i64::from(self.requests))]);
        let limits = send::Limits::new(self.policy.timeout, self.policy.max_response_bytes, options);
        match cue {
            Cue::Live(ticket) => Box::new(taped::send_live(request, target, granted, limits, span, ticket)),
            Cue::Recorded(answer) => {
                let index = self.tape.last_index();
                let live = move |request, span, ticket| {
                    Box::pin(taped::send_live(request, target, granted, limits, span, ticket)) as Pin<Box<_>>
                };
                Box::new(taped::replay(request, answer, self.tape.clone(), index, span, live))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(url: &str) -> Result<Target, BadTarget> {
        Target::of(&url.parse().expect("a URI"))
    }

    #[test]
    fn a_url_with_user_info_is_refused_without_repeating_it() {
        for url in [
            "http://user:secret@127.0.0.1:8080/",
            "http://user@localhost:8080/",
            "https://:secret@example.com/",
            "ftp://user:secret@example.com/",
        ] {
            let Err((code, kind, reason)) = target(url) else {
                panic!("{url} was accepted")
            };
            assert!(matches!(code, ErrorCode::HttpRequestDenied), "{url}: {code:?}");
            assert_eq!(kind, "HTTP-request-denied");
            assert!(reason.contains("user info"), "{reason}");
            assert!(!reason.contains("secret"), "{reason}");
        }
    }

    #[test]
    fn the_target_is_the_normalised_host_and_its_authority_the_host_header() {
        let t = target("http://LOCALHOST.:8080/a?b").unwrap_or_else(|(_, _, r)| panic!("{r}"));
        assert_eq!(t.host, RequestHost::Name("localhost".into()));
        assert_eq!(
            (t.origin(), t.authority()),
            ("http://localhost:8080".into(), "localhost:8080".into())
        );
        let t = target("https://Example.COM./").unwrap_or_else(|(_, _, r)| panic!("{r}"));
        assert_eq!((t.port, t.authority()), (443, "example.com".into()));
        let t = target("http://[::1]:80/").unwrap_or_else(|(_, _, r)| panic!("{r}"));
        assert_eq!(t.authority(), "[::1]");
        for bad in ["http://localhost../", "http://127.1/", "http://a..b/"] {
            let Err((code, kind, _)) = target(bad) else {
                panic!("{bad} was accepted")
            };
            assert!(matches!(code, ErrorCode::HttpRequestUriInvalid), "{bad}: {code:?}");
            assert_eq!(kind, "invalid-uri");
        }
    }
}
