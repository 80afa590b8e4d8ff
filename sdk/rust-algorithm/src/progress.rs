//! What the algorithm tells the user through the host: a status line and its best result so far
//! (the [`Host`] methods of the WIT `progress` interface).

use serde::Serialize;

use crate::bindings::agl::agent::progress;
use crate::{Error, Host, Result};

impl Host {
    /// A short line for the progress display, e.g. "round 2/3: evaluating 16 candidates".
    pub fn status(&self, text: &str) {
        progress::status(text);
    }

    /// Reports the best result so far: its `score`, the resources version that achieved it, and
    /// `detail` (any JSON-serializable value, e.g. the prompt) for the results file. A later call
    /// replaces an earlier one. Fails only when `detail` cannot be written as JSON.
    pub fn best<D: Serialize + ?Sized>(&self, score: f64, resources_id: Option<&str>, detail: &D) -> Result<()> {
        let detail = serde_json::to_string(detail)
            .map_err(|err| Error::new(format!("progress.best: the detail is not valid JSON: {err}")))?;
        progress::best(score, resources_id, &detail);
        Ok(())
    }
}
