//! A store served elsewhere (`agl-host store`): the HTTP client with its token, checked with a
//! health probe before anything else starts. (Its runners, which `agl-host run --store URL` does
//! not own, are agl_runner::ExecutionStrategy::External.)

use crate::inputs::InputError;
use agl_client::{ClientOptions, HttpStoreClient};

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
