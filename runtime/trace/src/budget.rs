//! The span budget of one attempt: how many spans and how many bytes of span content a guest may
//! make the host hold (the sandbox policy's `[spans]`). Attribute text is clipped to the
//! per-attribute cap before it is measured; a span past the count or byte budget is never built,
//! only counted (by span name: the host's own, a fixed set), and the attempt's trace ends with
//! one marker span saying what was dropped.

use agl_policy::SpanBudget;
use opentelemetry::{KeyValue, StringValue, Value};
use std::collections::BTreeMap;

/// What a span costs besides its attribute text: ids, times, names, the store's bookkeeping.
pub const SPAN_OVERHEAD_BYTES: u64 = 512;

/// Spans and bytes spent, and what was refused.
#[derive(Debug, Clone)]
pub struct SpanAccount {
    budget: SpanBudget,
    spans: u32,
    bytes: u64,
    dropped_spans: u32,
    dropped_bytes: u64,
    dropped_by_name: BTreeMap<&'static str, u32>,
    /// The first bound that refused a span ("count" or "bytes").
    first_refusal: Option<&'static str>,
}

/// What an attempt dropped, for its summary marker and its outcome.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DroppedSpans {
    pub spans: u32,
    pub bytes: u64,
    pub by_name: BTreeMap<&'static str, u32>,
    /// Which bound was reached first: `count` or `bytes`.
    pub bound: Option<&'static str>,
}

impl SpanAccount {
    pub fn new(budget: SpanBudget) -> Self {
        Self {
            budget,
            spans: 0,
            bytes: 0,
            dropped_spans: 0,
            dropped_bytes: 0,
            dropped_by_name: BTreeMap::new(),
            first_refusal: None,
        }
    }

    pub fn budget(&self) -> SpanBudget {
        self.budget
    }

    /// Clips every string attribute to the per-attribute cap (in place, marking what it cut) and
    /// returns what the attributes weigh afterwards.
    pub fn clip(&self, attributes: &mut [KeyValue]) -> u64 {
        let cap = self.budget.max_attribute_bytes;
        attributes
            .iter_mut()
            .map(|kv| {
                if let Value::String(text) = &kv.value
                    && text.as_str().len() > cap
                {
                    kv.value = Value::String(StringValue::from(agl_store::clip(text.as_str(), cap)));
                }
                weight(kv)
            })
            .sum()
    }

    /// Admits a span of `bytes` (its attributes, clipped) named `name`, or counts it as dropped.
    pub fn admit(&mut self, name: &'static str, bytes: u64) -> bool {
        let cost = bytes.saturating_add(SPAN_OVERHEAD_BYTES);
        let refusal = if self.spans >= self.budget.max_spans {
            Some("count")
        } else if self.bytes.saturating_add(cost) > self.budget.max_bytes {
            Some("bytes")
        } else {
            None
        };
        match refusal {
            None => {
                self.spans += 1;
                self.bytes += cost;
                true
            }
            Some(bound) => {
                self.first_refusal.get_or_insert(bound);
                self.dropped_spans = self.dropped_spans.saturating_add(1);
                self.dropped_bytes = self.dropped_bytes.saturating_add(cost);
                *self.dropped_by_name.entry(name).or_default() += 1;
                false
            }
        }
    }

    /// Counts bytes added to a span already admitted (an LLM call's response); they are held
    /// whatever the budget says, since the span exists, but they count against what follows.
    pub fn add(&mut self, bytes: u64) {
        self.bytes = self.bytes.saturating_add(bytes);
    }

    pub fn dropped(&self) -> DroppedSpans {
        DroppedSpans {
            spans: self.dropped_spans,
            bytes: self.dropped_bytes,
            by_name: self.dropped_by_name.clone(),
            bound: self.first_refusal,
        }
    }
}

/// The bytes an attribute makes the host hold: its key and its value's text.
fn weight(kv: &KeyValue) -> u64 {
    let value = match &kv.value {
        Value::String(s) => s.as_str().len(),
        Value::Array(array) => array.to_string().len(),
        _ => 8,
    };
    (kv.key.as_str().len() + value) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(max_spans: u32, max_bytes: u64, max_attribute_bytes: usize) -> SpanAccount {
        SpanAccount::new(SpanBudget {
            max_spans,
            max_bytes,
            max_attribute_bytes,
        })
    }

    #[test]
    fn the_count_bound_refuses_and_counts_by_name() {
        let mut account = budget(2, u64::MAX, 1024);
        assert!(account.admit("a", 10));
        assert!(account.admit("a", 10));
        assert!(!account.admit("a", 10));
        assert!(!account.admit("b", 10));
        let dropped = account.dropped();
        assert_eq!((dropped.spans, dropped.bound), (2, Some("count")));
        assert_eq!(dropped.by_name.get("a"), Some(&1));
        assert_eq!(dropped.by_name.get("b"), Some(&1));
    }

    #[test]
    fn the_byte_bound_counts_the_overhead_and_later_small_spans_still_fit() {
        let mut account = budget(100, 2 * SPAN_OVERHEAD_BYTES + 100, 1024);
        assert!(account.admit("big", 100));
        assert!(!account.admit("big", 100), "over by the overhead");
        assert!(account.admit("small", 0), "what still fits is kept");
        assert_eq!(account.dropped().bound, Some("bytes"));
    }

    #[test]
    fn attributes_are_clipped_before_they_are_weighed() {
        let account = budget(10, u64::MAX, 100);
        let mut attributes = vec![KeyValue::new("k", "x".repeat(10_000)), KeyValue::new("n", 1_i64)];
        let bytes = account.clip(&mut attributes);
        let Value::String(kept) = &attributes[0].value else {
            panic!("still a string")
        };
        assert!(kept.as_str().starts_with(&"x".repeat(100)) && kept.as_str().contains("more bytes"));
        assert!(bytes < 200, "{bytes}");
    }
}
