//! agl-proxy: Agent-lightning's LLM proxy, built in. An OpenAI-compatible front (axum) before
//! the `agl-llm` backends: `POST /v1/chat/completions` and `GET /v1/models`, and the same under
//! a rollout's attempt — `/rollout/{rollout_id}/attempt/{attempt_id}/v1/...` (0.3.0's
//! `LLMProxy`) and `/proxy/rollout/{rollout_id}/attempt/{attempt_id}/mode/{train|val}/openai/v1/...`
//! (1.0's) — where every call is recorded as an LLM span of that attempt through the
//! `LightningStore` trait. Streams are passed on event by event and recorded as one span.
//!
//! It owns the routes, forwarding, retries and recording; not the listening socket nor the
//! token check (the store's server mounts [`Proxy::router`] beside its own routes, under its
//! token), nor which backends exist (the binary builds the [`Upstream`]s from its flags).

mod error;
mod grants;
mod pause;
mod record;
mod registered;
mod routes;
mod stream;
mod upstream;

pub use error::ProxyError;
pub use grants::{AttemptGrant, GrantAnswer, GrantError, GrantGuard, GrantRequest, Grants, LlmLimits};
pub use pause::{DEFAULT_RETRY_AFTER_SECONDS, PauseRequest, PauseState};
pub use record::{HTTP_STATUS, PROXY_MODE, PROXY_RETRIES, PROXY_STREAM, PROXY_UPSTREAM};
pub use upstream::{Upstream, UpstreamError, Upstreams};

use agl_store::LightningStore;
use std::sync::Arc;
use std::time::Duration;

/// How the proxy behaves.
#[derive(Clone)]
pub struct ProxyConfig {
    /// Where calls go; a rollout's calls all go to the one its id picks.
    pub upstreams: Upstreams,
    /// Ask the upstream for token ids (vLLM's `return_token_ids`) on every call under an attempt,
    /// and for logprobs in train mode, as Agent-lightning 1.0 does; they land on the span. Off
    /// by default: servers other than vLLM refuse the unknown field.
    pub token_ids: bool,
    /// The temperature of every call under an attempt in train mode, whatever the request asks
    /// (Agent-lightning 1.0's `train.temperature`); `None`: the request's.
    pub train_temperature: Option<f64>,
    /// The same in val mode.
    pub val_temperature: Option<f64>,
    /// Longer request bodies are refused with 413.
    pub max_body_bytes: usize,
    /// A body that takes longer to arrive is refused with 408.
    pub body_read_timeout: Duration,
    /// Text attributes of a span are clipped to this many bytes (the host's own cap).
    pub attribute_cap: usize,
    /// Where the calls' spans also go (e.g. an OTLP exporter), besides the store.
    pub span_export: Option<agl_trace::SpanExport>,
}

impl ProxyConfig {
    /// `upstreams` with every other setting at its default (no token ids, 16 MiB bodies read
    /// within 60 s, 64 KiB attributes).
    pub fn new(upstreams: Upstreams) -> Self {
        ProxyConfig {
            upstreams,
            token_ids: false,
            train_temperature: None,
            val_temperature: None,
            max_body_bytes: 16 << 20,
            body_read_timeout: Duration::from_secs(60),
            attribute_cap: agl_policy::DEFAULT_MAX_ATTRIBUTE_BYTES,
            span_export: None,
        }
    }
}

/// The proxy over one store. Cheap to clone; every clone is the same proxy (one pause switch).
#[derive(Clone)]
pub struct Proxy {
    shared: Arc<routes::Shared>,
}

impl Proxy {
    pub fn new(store: Arc<dyn LightningStore>, config: ProxyConfig) -> Self {
        Proxy {
            shared: Arc::new(routes::Shared {
                store,
                config,
                pause: pause::Pause::default(),
                grants: Grants::default(),
                agent_port: std::sync::OnceLock::new(),
                registered: registered::RegisteredServers::default(),
            }),
        }
    }

    /// The operator's routes (calls naming an attempt by its ids, the pause switch, grants for
    /// runners in other processes), to mount beside the store's under its token
    /// (`agl_server::serve_with`), or on the proxy's own listener under a token of its own.
    /// Never for agents.
    pub fn router(&self) -> axum::Router {
        routes::router(self.shared.clone())
    }

    /// Calls outside any attempt (`/v1/chat/completions`, `/v1/models`): served when `enabled`
    /// (the listener requires a token), else refused with 403 saying why.
    pub fn unattributed_router(&self, enabled: bool) -> axum::Router {
        routes::unattributed_router(self.shared.clone(), enabled)
    }

    /// The sandboxed agents' routes: LLM calls through a live per-attempt capability
    /// ([`Self::grants`]), nothing else. Served without a token: the capability is the key.
    pub fn agent_router(&self) -> axum::Router {
        routes::agent_router(self.shared.clone())
    }

    /// The per-attempt capabilities runners issue for the agents they run.
    pub fn grants(&self) -> &Grants {
        &self.shared.grants
    }

    /// Says which port serves [`Self::agent_router`] (told to runners of other processes with
    /// each grant); the first call wins.
    pub fn set_agent_port(&self, port: u16) {
        let _ = self.shared.agent_port.set(port);
    }

    /// New calls are answered 429 with `Retry-After: retry_after_seconds` until [`Self::resume`].
    pub fn pause(&self, request: PauseRequest) -> PauseState {
        self.shared.pause.pause(request)
    }

    pub fn resume(&self) -> PauseState {
        self.shared.pause.resume()
    }

    pub fn state(&self) -> PauseState {
        self.shared.pause.state()
    }

    /// For the start-up line: each upstream's address or name (never a key).
    pub fn describe(&self) -> String {
        let names: Vec<String> = self
            .shared
            .config
            .upstreams
            .all()
            .iter()
            .map(Upstream::describe)
            .collect();
        names.join(", ")
    }
}
