//! [`Host`]: everything an algorithm can reach, handed to the algorithm function by
//! [`export_algorithm!`](crate::export_algorithm). Its methods are grouped by WIT interface in
//! `store.rs`, `resources.rs`, `adapter.rs`, `progress.rs` and `trace.rs`; the LLM is here.

use crate::Llm;

/// The host, as one algorithm run sees it: the LightningStore (rollouts, spans, resources), the
/// adapter (rewards, triplets, conversations), the LLM, the host's log and the progress reports.
///
/// Every method is a host call. Failures the host reports (an unknown id, a store error) come back
/// as [`Error`](crate::Error)s whose message names the call, e.g. `store.enqueue: ...`.
#[derive(Debug)]
pub struct Host {
    _private: (),
}

impl Host {
    pub(crate) fn new() -> Self {
        Host { _private: () }
    }

    /// The host's LLM (for an algorithm's own calls, e.g. to critique or rewrite a prompt).
    /// `host.llm().chat(ChatRequest::user("..."))?` or `host.llm().ask("...")?`.
    pub fn llm(&self) -> Llm {
        Llm::default()
    }
}
