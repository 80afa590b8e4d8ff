//! A store served elsewhere (`agl-host store`): the HTTP client with its token, checked with a
//! health probe before anything else starts; and, for `agl-host run --store URL`, the runners of
//! that store, which the run reads from but does not own.

use crate::inputs::InputError;
use agl_client::{ClientOptions, HttpStoreClient};
use agl_runner::{RemoteRunners, Shutdown};
use std::time::Duration;

/// A client of the store at `url`, once it answers its health probe.
pub async fn connect(url: &str, token: Option<String>) -> Result<HttpStoreClient, InputError> {
    let options = ClientOptions {
        token,
        ..ClientOptions::default()
    };
    let client = HttpStoreClient::new(url, options).map_err(|e| InputError(format!("--store: {e}")))?;
    if !client.health().await {
        return Err(InputError(format!(
            "cannot reach the store at {url} (is `agl-host store` running there?)"
        )));
    }
    Ok(client)
}

/// The runners of a remote store: started and stopped by their own operators, not by this run.
pub struct TheirRunners;

#[async_trait::async_trait]
impl RemoteRunners for TheirRunners {
    async fn stop(&self, _grace: Duration, _forced: &Shutdown) -> bool {
        false
    }
}
