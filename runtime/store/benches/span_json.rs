//! JSON decoding and encoding of spans, the per-request work of `POST /v1/agl/spans` (decode the
//! body, encode the stored span for the answer) and of a client reading a span query's answer.
//!
//! Two bodies: an LLM-call span as Agent-lightning's tracer stores it (the body the store load
//! bench sends) and a reward span with a context, a parent, an event and keys the model does not
//! name. Each figure is the median of 15 rounds of 20,000 operations on one thread.
//!
//! Run: `cargo bench -p agl-store --bench span_json` (`-- --quick` for a smoke run).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a benchmark: a failed step panics and ends it"
)]

use agl_store::Span;
use std::hint::black_box;
use std::time::Instant;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// What `store_load`'s generator sends for `add_span` (one of its bodies).
const LLM_SPAN: &str = concat!(
    r#"{"rollout_id":"ro-0123456789ab","attempt_id":"at-0123456789ab","sequence_id":17,"#,
    r#""trace_id":"000000000000000000000000be7c0003","span_id":"0003000000000011","parent_id":null,"#,
    r#""name":"openai.chat.completion","status":{"status_code":"OK","description":null},"#,
    r#""attributes":{"gen_ai.system":"openai","gen_ai.request.model":"bench-model","#,
    r#""gen_ai.prompt.0.role":"user","#,
    r#""gen_ai.prompt.0.content":"Solve this problem. Give the final answer as a number on the last line. Problem: What is 6 * 7?","#,
    r#""gen_ai.completion.0.content":"6 * 7 = 42\n42","gen_ai.usage.prompt_tokens":31,"#,
    r#""gen_ai.usage.completion_tokens":7},"events":[],"links":[],"start_time":1790000017.0,"#,
    r#""end_time":1790000017.5,"context":null,"parent":null,"#,
    r#""resource":{"attributes":{"service.name":"bench"},"schema_url":""}}"#
);

/// A reward span with nested contexts, an event, a link and unknown keys at several levels.
const REWARD_SPAN: &str = concat!(
    r#"{"rollout_id":"ro-0123456789ab","attempt_id":"at-0123456789ab","sequence_id":3,"#,
    r#""trace_id":"931cdf1a1293b86cc9d0c7f923b7815c","span_id":"1b2c3d4e5f607182","#,
    r#""parent_id":"a1b2c3d4e5f60718","name":"agentlightning.annotation","#,
    r#""status":{"status_code":"UNSET","description":null,"origin":"sdk"},"#,
    r#""attributes":{"agentlightning.reward.0.name":"primary","agentlightning.reward.0.value":1.0},"#,
    r#""events":[{"name":"graded","attributes":{"exact":true},"timestamp":1795294840.5972834,"source":"judge"}],"#,
    r#""links":[{"context":{"trace_id":"931cdf1a1293b86cc9d0c7f923b7815c","span_id":"0000000000000001","#,
    r#""is_remote":true,"trace_state":{}},"attributes":null}],"#,
    r#""start_time":1795294840.597283,"end_time":1795294840.5972834,"#,
    r#""context":{"trace_id":"931cdf1a1293b86cc9d0c7f923b7815c","span_id":"1b2c3d4e5f607182","is_remote":false,"trace_state":{}},"#,
    r#""parent":{"trace_id":"931cdf1a1293b86cc9d0c7f923b7815c","span_id":"a1b2c3d4e5f60718","is_remote":false,"trace_state":{"k":"v"}},"#,
    r#""resource":{"attributes":{"service.name":"agent"},"schema_url":""},"agent_name":"math","#,
    r#""tags":["train"]}"#
);

/// Median nanoseconds per call of `op` over `rounds` rounds of `per_round` calls.
fn median_ns(rounds: usize, per_round: usize, mut op: impl FnMut()) -> f64 {
    let mut figures: Vec<f64> = (0..rounds)
        .map(|_| {
            let started = Instant::now();
            for _ in 0..per_round {
                op();
            }
            started.elapsed().as_nanos() as f64 / per_round as f64
        })
        .collect();
    figures.sort_by(f64::total_cmp);
    figures[figures.len() / 2]
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (rounds, per_round) = if quick { (3, 500) } else { (15, 20_000) };
    println!("| span | bytes | decode (ns) | encode (ns) |");
    println!("|---|---:|---:|---:|");
    for (label, body) in [("LLM call", LLM_SPAN), ("reward, nested", REWARD_SPAN)] {
        let parsed: Span = serde_json::from_str(body).expect("the bench's span parses");
        assert_eq!(
            serde_json::from_str::<Span>(&serde_json::to_string(&parsed).expect("encodes")).expect("re-parses"),
            parsed,
            "a span survives a round trip"
        );
        let decode = median_ns(rounds, per_round, || {
            black_box(serde_json::from_slice::<Span>(black_box(body.as_bytes())).expect("parses"));
        });
        let encode = median_ns(rounds, per_round, || {
            black_box(serde_json::to_vec(black_box(&parsed)).expect("encodes"));
        });
        println!("| {label} | {} | {decode:.0} | {encode:.0} |", body.len());
    }
}
