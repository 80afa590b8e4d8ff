//! The LLM proxy's listener for sandboxed agents, and the per-attempt capabilities runners hand
//! them. Agents get only the proxy's capability routes (`agl_proxy::Proxy::agent_router`) on a
//! listener of their own; the operator's routes (calls outside any attempt or naming one by its
//! ids, the pause switch, grants for runners of other processes) are served beside them only
//! under a token, and the store API never is. Runners in this process issue capabilities
//! directly ([`LocalCapabilities`]); runner processes and remote runners ask over HTTP
//! ([`RemoteCapabilities`], `POST /proxy/grants` with the operator's token).

use agl_proxy::{GrantAnswer, GrantRequest, LlmLimits, Proxy};
use agl_runner::{IssuedCapability, ProxyCapabilities};
use agl_wasm::LlmAllowance;
use anyhow::Context;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Serves `proxy`'s agent routes where `options` say (without a token: the capability is the
/// key), and its operator's routes beside them when `operator_token` is given (their requests
/// must present it). The proxy learns the port, for the grants it gives runners elsewhere.
pub async fn serve(
    proxy: &Proxy,
    options: agl_server::ServerOptions,
    operator_token: Option<&str>,
) -> anyhow::Result<agl_server::ServerHandle> {
    let mut router = proxy.agent_router();
    if let Some(token) = operator_token {
        let operator = proxy.router().merge(proxy.unattributed_router(true));
        router = router.merge(agl_server::require_token(operator, token));
    }
    let handle = agl_server::serve_router(options, router)
        .await
        .context("starting the LLM proxy's listener for agents")?;
    proxy.set_agent_port(handle.local_addr().port());
    Ok(handle)
}

/// A token for the operator's routes when none was given (runner processes get it from the
/// environment): 32 random bytes, hex.
pub fn fresh_token() -> anyhow::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("no randomness for a token: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Capabilities of the proxy in this process, for its in-process runners: they spend the very
/// allowance the agent's `llm` import spends.
pub struct LocalCapabilities {
    pub proxy: Proxy,
    /// The agents' listener (`http://127.0.0.1:PORT`).
    pub base_url: String,
}

#[async_trait::async_trait]
impl ProxyCapabilities for LocalCapabilities {
    async fn issue(
        &self,
        rollout_id: &str,
        attempt_id: &str,
        allowance: Arc<LlmAllowance>,
    ) -> Result<Option<IssuedCapability>, String> {
        let guard = self
            .proxy
            .grants()
            .issue(rollout_id, attempt_id, allowance)
            .map_err(|e| e.to_string())?;
        Ok(Some(IssuedCapability {
            endpoint: guard.endpoint(&self.base_url),
            guard: Box::new(guard),
        }))
    }
}

/// Capabilities of a proxy in another process (`agl-host store --llm-proxy`, or the proxy of the
/// `run` whose runner process this is), asked for over HTTP with the operator's token. The
/// proxy there counts the attempt's calls through it against the attempt's LLM limits, apart
/// from what the agent's `llm` import spends here.
pub struct RemoteCapabilities {
    client: reqwest::Client,
    /// The operator's URL of the proxy (where `/proxy/grants` is).
    url: reqwest::Url,
    token: Option<String>,
    /// The proxy answered that it is not there (404): nothing more is asked.
    absent: AtomicBool,
}

impl RemoteCapabilities {
    pub fn new(url: &str, token: Option<String>) -> anyhow::Result<Self> {
        let url = reqwest::Url::parse(url).with_context(|| format!("the LLM proxy's URL `{url}`"))?;
        let client = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(30))
            .build()
            .context("building an HTTP client")?;
        Ok(Self {
            client,
            url,
            token,
            absent: AtomicBool::new(false),
        })
    }

    fn endpoint(&self, path: &str) -> Result<reqwest::Url, String> {
        self.url.join(path).map_err(|e| e.to_string())
    }

    fn authorized(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }
}

/// Revokes a remote capability when dropped (in the background).
struct RemoteGuard {
    request: Option<reqwest::RequestBuilder>,
}

impl Drop for RemoteGuard {
    fn drop(&mut self) {
        if let (Some(request), Ok(runtime)) = (self.request.take(), tokio::runtime::Handle::try_current()) {
            runtime.spawn(async move {
                if let Err(e) = request.send().await {
                    tracing::warn!("revoking an LLM proxy capability failed (its attempt's end revokes it too): {e}");
                }
            });
        }
    }
}

#[async_trait::async_trait]
impl ProxyCapabilities for RemoteCapabilities {
    async fn issue(
        &self,
        rollout_id: &str,
        attempt_id: &str,
        allowance: Arc<LlmAllowance>,
    ) -> Result<Option<IssuedCapability>, String> {
        if self.absent.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let body = GrantRequest {
            rollout_id: rollout_id.to_owned(),
            attempt_id: attempt_id.to_owned(),
            llm: LlmLimits::from(allowance.policy()),
        };
        let response = self
            .authorized(self.client.post(self.endpoint("/proxy/grants")?))
            .json(&body)
            .send()
            .await
            .map_err(|e| format!("asking {} for it: {e}", self.url))?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND || status == reqwest::StatusCode::METHOD_NOT_ALLOWED {
            self.absent.store(true, Ordering::Relaxed);
            return Ok(None);
        }
        if !status.is_success() {
            let text = response.text().await.unwrap_or_default();
            return Err(format!("{} answered {status}: {}", self.url, text.trim()));
        }
        let answer: GrantAnswer = response
            .json()
            .await
            .map_err(|e| format!("{} answered no grant: {e}", self.url))?;
        let mut base = self.url.clone();
        if let Some(port) = answer.port {
            base.set_port(Some(port))
                .map_err(|()| format!("{} cannot take a port", self.url))?;
        }
        let endpoint = base.join(&answer.path).map_err(|e| e.to_string())?;
        let revoke = self.authorized(
            self.client
                .delete(self.endpoint(&format!("/proxy/grants/{}", answer.capability))?),
        );
        Ok(Some(IssuedCapability {
            endpoint: endpoint.to_string(),
            guard: Box::new(RemoteGuard { request: Some(revoke) }),
        }))
    }
}
