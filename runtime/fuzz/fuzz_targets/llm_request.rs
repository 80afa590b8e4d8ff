//! Chat requests an agent sends (`agl-llm`): the input as a JSON `ChatRequest`, checked against
//! request limits (`validate_request`, the size caps the host applies before anything is sent)
//! and answered by the offline scripted backend with the math example's rules (regex matching on
//! the messages, templated replies).
//!
//! Invariants: no panic; a request that passes is within every limit, and passes again under
//! larger limits and a larger budget; the scripted answer never panics, whatever the messages.

#![no_main]

use agl_fuzz::runtime;
use agl_llm::limits::{request_bytes, tool_bytes};
use agl_llm::{ChatRequest, LlmBackend, RequestLimits, ScriptedBackend, validate_request};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

const RULES: &str = include_str!("../../../examples/math-agent/apo/rules.json");

const SMALL: RequestLimits = RequestLimits {
    max_request_bytes: 4096,
    max_output_tokens: 1024,
    max_tools: 4,
    max_tools_bytes: 2048,
};

const LARGE: RequestLimits = RequestLimits {
    max_request_bytes: u64::MAX,
    max_output_tokens: u32::MAX,
    max_tools: u32::MAX,
    max_tools_bytes: u64::MAX,
};

fn backend() -> &'static ScriptedBackend {
    static BACKEND: OnceLock<ScriptedBackend> = OnceLock::new();
    BACKEND.get_or_init(|| ScriptedBackend::from_json_str(RULES).expect("the example rules load"))
}

fuzz_target!(|data: &[u8]| {
    let Ok(request) = serde_json::from_slice::<ChatRequest>(data) else {
        return;
    };
    let budget = u64::from(data.len() as u32 % 2048);
    if validate_request(&request, &SMALL, budget).is_ok() {
        assert!(!request.messages.is_empty());
        assert!(request_bytes(&request) <= SMALL.max_request_bytes);
        assert!(request.tools.len() <= SMALL.max_tools as usize);
        let tools = request.tools.iter().fold(0u64, |sum, t| sum.saturating_add(tool_bytes(t)));
        assert!(tools <= SMALL.max_tools_bytes);
        assert!(request.max_tokens.is_none_or(|n| n <= SMALL.max_output_tokens && u64::from(n) <= budget));
        assert!(validate_request(&request, &LARGE, u64::MAX).is_ok(), "larger limits refused {request:?}");
    }
    // The request survives its own JSON round trip (the host records it in span attributes).
    let json = serde_json::to_vec(&request).expect("a request serialises");
    let _ = serde_json::from_slice::<ChatRequest>(&json).expect("a serialised request parses again");

    let rt = runtime();
    let _ = rt.block_on(backend().chat(&request));
});
