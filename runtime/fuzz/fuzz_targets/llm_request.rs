//! Chat requests an agent sends (`agl-llm`): the input as a JSON `ChatRequest`, checked against
//! request limits (`validate_request`, the size caps the host applies before anything is sent).
//! agl-llm is built without its HTTP client (`default-features = false`).
//!
//! Invariants: no panic; a request that passes is within every limit, and passes again under
//! larger limits and a larger budget; a parsed request serialises and parses again.

#![no_main]

use agl_llm::limits::{RequestLimits, request_bytes, tool_bytes, validate_request};
use agl_llm::types::ChatRequest;
use libfuzzer_sys::fuzz_target;

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

fuzz_target!(|data: &[u8]| {
    let Ok(request) = serde_json::from_slice::<ChatRequest>(data) else {
        return;
    };
    let budget = (data.len() % 2048) as u64;
    let verdict = validate_request(&request, &SMALL, budget);
    if let Err(why) = &verdict {
        let _ = (why.to_string(), why.is_budget());
    } else {
        assert!(!request.messages.is_empty());
        assert!(request_bytes(&request) <= SMALL.max_request_bytes);
        assert!(request.tools.len() <= SMALL.max_tools as usize);
        let tools = request
            .tools
            .iter()
            .fold(0u64, |sum, t| sum.saturating_add(tool_bytes(t)));
        assert!(tools <= SMALL.max_tools_bytes);
        assert!(
            request
                .max_tokens
                .is_none_or(|n| n <= SMALL.max_output_tokens && u64::from(n) <= budget)
        );
        assert!(
            validate_request(&request, &LARGE, u64::MAX).is_ok(),
            "larger limits refused {request:?}"
        );
    }
    // The request survives its own JSON round trip (the host records it in span attributes).
    let json = serde_json::to_vec(&request).expect("a request serialises");
    let again = serde_json::from_slice::<ChatRequest>(&json).expect("a serialised request parses again");
    assert_eq!(
        again.messages, request.messages,
        "messages changed in a JSON round trip"
    );
});
