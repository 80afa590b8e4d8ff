//! Scenario tests of the public API on hand-built spans, and on the span JSON Agent-lightning
//! 0.3.0 itself produced (the captured exchanges).

pub(crate) mod support;

mod fixture;
mod scenarios;
