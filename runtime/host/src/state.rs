//! What one attempt's `Store` holds: its WASI context, memory limits, trace, LLM gate, the
//! rollout's resources and the rewards seen so far. Dropped with the store after the attempt.

use crate::imports::llm::LlmGate;
use crate::spans::AttemptTrace;
use agl_store::ResourcesUpdate;
use std::sync::Arc;
use wasmtime::StoreLimits;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// Host-call spans one attempt may record; beyond this they are counted, not kept.
pub const MAX_SPANS_PER_ATTEMPT: u32 = 100_000;
/// Longest string kept in a span attribute (a log line, a prompt); longer ones are clipped.
pub const MAX_ATTRIBUTE_BYTES: usize = 64 << 10;

#[derive(Debug, Default, Clone, Copy)]
pub struct Rewards {
    /// The last primary reward emitted by the agent (`reward.emit`).
    pub last_primary: Option<f64>,
    pub emitted: u32,
}

pub struct HostState {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limits: StoreLimits,
    pub(crate) trace: AttemptTrace,
    pub(crate) llm: LlmGate,
    pub(crate) resources: Option<Arc<ResourcesUpdate>>,
    pub(crate) rewards: Rewards,
    spans_recorded: u32,
    pub(crate) spans_dropped: u32,
}

impl HostState {
    pub(crate) fn new(
        wasi: WasiCtx,
        limits: StoreLimits,
        trace: AttemptTrace,
        llm: LlmGate,
        resources: Option<Arc<ResourcesUpdate>>,
    ) -> Self {
        Self {
            wasi,
            table: ResourceTable::new(),
            limits,
            trace,
            llm,
            resources,
            rewards: Rewards::default(),
            spans_recorded: 0,
            spans_dropped: 0,
        }
    }

    /// Counts one host-call span against the attempt's allowance; false when it is spent.
    pub(crate) fn take_span_allowance(&mut self) -> bool {
        if self.spans_recorded < MAX_SPANS_PER_ATTEMPT {
            self.spans_recorded += 1;
            true
        } else {
            self.spans_dropped += 1;
            false
        }
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Like [`clip`] but reuses `text` when it is short enough (the common case: no copy).
pub fn clip_owned(text: String, max: usize) -> String {
    if text.len() <= max { text } else { clip(&text, max) }
}

/// `text` cut to at most `max` bytes on a character boundary, marked when cut.
pub fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} more bytes]", &text[..end], text.len() - end)
}

#[cfg(test)]
mod tests {
    use super::clip;

    #[test]
    fn clip_cuts_on_a_char_boundary_and_says_so() {
        assert_eq!(clip("short", 10), "short");
        assert_eq!(clip("ééé", 3), "é… [4 more bytes]");
    }
}
