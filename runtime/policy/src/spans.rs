//! The spans slice: what one attempt may make the host hold in spans (count, bytes, bytes per
//! attribute). Past a bound, further spans are counted and summarised by one marker span, never
//! buffered; the accounting is the host's (`spans/budget.rs`). The manifest's table is `[spans]`.

use crate::value::Size;
use crate::{Layer, set};
use serde::Deserialize;

/// Host-call spans one attempt may record (the final reward and the summary marker always are).
pub const DEFAULT_MAX_SPANS: u32 = 10_000;
/// Bytes of span content one attempt may make the host hold (attribute text and a fixed
/// overhead per span), the final reward and the summary marker aside.
pub const DEFAULT_MAX_SPAN_BYTES: u64 = 32 << 20;
/// Longest string kept in one span attribute (a log line, a message, a prompt); longer ones are
/// clipped and say so.
pub const DEFAULT_MAX_ATTRIBUTE_BYTES: usize = 64 << 10;
/// The least an attribute cap may be, so that a clipped value still says something.
const MIN_ATTRIBUTE_BYTES: usize = 64;

/// What one attempt may make the host hold in spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanBudget {
    pub max_spans: u32,
    pub max_bytes: u64,
    pub max_attribute_bytes: usize,
}

impl Default for SpanBudget {
    fn default() -> Self {
        Self {
            max_spans: DEFAULT_MAX_SPANS,
            max_bytes: DEFAULT_MAX_SPAN_BYTES,
            max_attribute_bytes: DEFAULT_MAX_ATTRIBUTE_BYTES,
        }
    }
}

/// The span budget as a manifest's `[spans]` table or the flags set it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, clap::Args)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SpanOptions {
    /// Spans one attempt may record (host calls: logs, messages, LLM calls...); past it they are
    /// counted and summarised by one `agl.spans.dropped` span. The final reward is always kept.
    #[arg(long = "agent-max-spans", value_name = "N")]
    pub max_count: Option<u32>,
    /// Bytes of span content one attempt may make the host hold, e.g. 32MiB.
    #[arg(long = "agent-max-span-bytes", value_name = "SIZE")]
    pub max_bytes: Option<Size>,
    /// Longest text kept in one span attribute (a log line, a message, a prompt), e.g. 64KiB.
    #[arg(long = "agent-max-attribute-bytes", value_name = "SIZE")]
    pub max_attribute_bytes: Option<Size>,
}

impl Layer for SpanOptions {
    type Policy = SpanBudget;
    fn apply(self, spans: &mut SpanBudget) {
        set(&mut spans.max_spans, self.max_count);
        set(&mut spans.max_bytes, self.max_bytes.map(|s| s.0));
        let attribute = self.max_attribute_bytes.map(|s| s.as_usize().max(MIN_ATTRIBUTE_BYTES));
        set(&mut spans.max_attribute_bytes, attribute);
    }
}
