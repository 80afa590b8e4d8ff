//! OTLP/HTTP trace bodies (`agl-otlp`): content type and encoding picked by the first byte, the
//! rest is the body. Covers `decode_request` (protobuf, OTLP/JSON, gzip and its size bound),
//! attribution and conversion to store spans, the error responses, and storing the spans in an
//! in-memory store (`store_decoded`, re-pointed at a rollout that exists so the store takes them).
//!
//! Invariants: no panic; a decoding error is a 4xx; a request decoded from OTLP/JSON survives a
//! protobuf round trip byte for byte; the store's invariants hold after the spans go in.

#![no_main]

use agl_fuzz::{assert_invariants, memory_store, runtime};
use agl_otlp::{Decoded, JSON_CONTENT_TYPE, PROTOBUF_CONTENT_TYPE, decode_request, store_decoded};
use agl_store::{EnqueueRolloutRequest, LightningStore};
use flate2::Compression;
use flate2::write::GzEncoder;
use libfuzzer_sys::fuzz_target;
use prost::Message;
use std::io::Write;

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
    encoder.write_all(bytes).expect("gzip into memory");
    encoder.finish().expect("gzip into memory")
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, body)) = data.split_first() else {
        return;
    };
    let content_type = match mode & 0b11 {
        0 => Some(PROTOBUF_CONTENT_TYPE),
        1 => Some(JSON_CONTENT_TYPE),
        2 => Some("Application/JSON; charset=utf-8"),
        _ => None,
    };
    let zipped;
    let (encoding, body) = match (mode >> 2) & 0b11 {
        0 => (None, body),
        1 => {
            zipped = gzip(body);
            (Some("gzip"), zipped.as_slice())
        }
        2 => (Some("gzip"), body),
        _ => (Some("br"), body),
    };

    let request = match decode_request(content_type, encoding, body) {
        Ok(request) => request,
        Err(error) => {
            let status = error.http_status();
            assert!(
                (400..500).contains(&status),
                "decoding error answered {status}: {error}"
            );
            let _ = error.response(content_type);
            return;
        }
    };

    // The JSON decoder builds the same prost message the protobuf decoder reads.
    let encoded = request.encode_to_vec();
    let again = decode_request(Some(PROTOBUF_CONTENT_TYPE), None, &encoded).expect("re-encoded request decodes");
    assert_eq!(
        again.encode_to_vec(),
        encoded,
        "protobuf round trip changed the request"
    );

    let Decoded { mut spans, dropped } = agl_otlp::attribution::spans_from_request(&request);
    for decoded in &spans {
        let _ = serde_json::to_vec(&decoded.span);
    }

    let rt = runtime();
    rt.block_on(async {
        let store = memory_store();
        let rollout = store
            .start_rollout(agl_store::StartRolloutRequest {
                rollout: EnqueueRolloutRequest::new(serde_json::json!({"q": 1})),
                worker_id: None,
            })
            .await
            .expect("a rollout in an empty store");
        for decoded in &mut spans {
            decoded.span.rollout_id.clone_from(&rollout.rollout.rollout_id);
            decoded.span.attempt_id.clone_from(&rollout.attempt.attempt_id);
        }
        let result = store_decoded(store.as_ref(), Decoded { spans, dropped }).await;
        if let Err(error) = &result {
            let _ = error.response(content_type);
        }
        assert_invariants(&store);
    });
});
