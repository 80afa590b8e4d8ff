//! Decoded spans → the store: missing sequence ids are issued in one batched
//! `get_next_span_sequence_ids` call, in request order, then every span goes in one `add_spans`.

use crate::error::OtlpError;
use crate::{Decoded, IngestReport, decode_within};
use agl_store::{LightningStore, StoreError};

/// Decodes an OTLP/HTTP trace export and stores its attributed spans. Spans without a rollout
/// or attempt id are dropped and counted; the rest are stored all at once (a store error, such
/// as an unknown rollout, stores none of them).
pub async fn ingest(
    store: &dyn LightningStore,
    content_type: Option<&str>,
    content_encoding: Option<&str>,
    body: &[u8],
) -> Result<IngestReport, OtlpError> {
    ingest_within(
        store,
        content_type,
        content_encoding,
        body,
        crate::MAX_DECOMPRESSED_BYTES,
    )
    .await
}

/// [`ingest`] with a gzip body inflated to at most `max_decompressed` bytes (413 beyond).
pub async fn ingest_within(
    store: &dyn LightningStore,
    content_type: Option<&str>,
    content_encoding: Option<&str>,
    body: &[u8],
    max_decompressed: usize,
) -> Result<IngestReport, OtlpError> {
    let decoded = decode_within(content_type, content_encoding, body, max_decompressed)?;
    store_decoded(store, decoded).await
}

/// Stores already decoded spans (the second half of [`ingest`]).
pub async fn store_decoded(store: &dyn LightningStore, decoded: Decoded) -> Result<IngestReport, OtlpError> {
    let Decoded { spans, dropped } = decoded;
    if dropped > 0 {
        tracing::warn!(
            dropped,
            "OTLP spans without agentlightning.rollout_id / agentlightning.attempt_id were dropped"
        );
    }
    let mut spans: Vec<_> = spans.into_iter().map(|d| (d.span, d.sequence_id)).collect();

    let missing: Vec<usize> = (0..spans.len()).filter(|&i| spans[i].1.is_none()).collect();
    if !missing.is_empty() {
        let pairs: Vec<(&str, &str)> = missing
            .iter()
            .map(|&i| (spans[i].0.rollout_id.as_str(), spans[i].0.attempt_id.as_str()))
            .collect();
        let issued = store.get_next_span_sequence_ids(&pairs).await?;
        if issued.len() != missing.len() {
            return Err(StoreError::Backend(format!(
                "asked for {} span sequence ids, got {}",
                missing.len(),
                issued.len()
            ))
            .into());
        }
        for (&i, sequence_id) in missing.iter().zip(issued) {
            spans[i].0.sequence_id = sequence_id;
        }
    }

    let accepted = spans.len();
    if accepted > 0 {
        store
            .add_spans(spans.into_iter().map(|(span, _)| span).collect())
            .await?;
    }
    Ok(IngestReport { accepted, dropped })
}
