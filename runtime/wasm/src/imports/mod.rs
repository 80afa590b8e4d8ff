//! One module per WIT interface the host provides to agents; each checks the policy first and
//! records the call as a span of the attempt's trace.

pub mod llm;
pub mod resources;
pub mod reward;
pub mod trace;

impl crate::bindings::types::Host for crate::state::HostState {}
