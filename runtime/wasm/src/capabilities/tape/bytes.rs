//! Bytes as a tape keeps them (HTTP bodies, files of granted directories): text when they are
//! UTF-8 — so that a long text is a blob shared by every tape that holds it — else base64.

use base64::Engine as _;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// Most bytes kept as they are; longer ones are kept by their length and digest only.
pub const MAX_KEPT_BYTES: usize = 16 << 20;

/// Bytes on the tape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeptBytes {
    Text(String),
    Base64(String),
    /// Too long to keep ([`MAX_KEPT_BYTES`]): its length and SHA-256.
    Digest {
        bytes: u64,
        sha256: String,
    },
}

impl KeptBytes {
    pub fn of(bytes: &[u8]) -> Self {
        if bytes.len() > MAX_KEPT_BYTES {
            return Self::Digest {
                bytes: bytes.len() as u64,
                sha256: crate::cache::component_digest(bytes),
            };
        }
        match std::str::from_utf8(bytes) {
            Ok(text) => Self::Text(text.to_owned()),
            Err(_) => Self::Base64(base64::engine::general_purpose::STANDARD.encode(bytes)),
        }
    }

    /// The bytes kept (none for a [`KeptBytes::Digest`]).
    pub fn bytes(&self) -> Bytes {
        match self {
            Self::Text(text) => Bytes::copy_from_slice(text.as_bytes()),
            Self::Base64(encoded) => base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map(Bytes::from)
                .unwrap_or_default(),
            Self::Digest { .. } => Bytes::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_kept_as_text_or_base64_and_come_back() {
        for bytes in [&b"plain text"[..], &[0xff, 0x00, 0x80][..], &b""[..]] {
            let kept = KeptBytes::of(bytes);
            assert_eq!(kept.bytes().as_ref(), bytes);
            let json = serde_json::to_value(&kept).unwrap();
            assert_eq!(serde_json::from_value::<KeptBytes>(json).unwrap(), kept);
        }
        assert!(matches!(KeptBytes::of(b"abc"), KeptBytes::Text(_)));
        assert!(matches!(KeptBytes::of(&[0xff]), KeptBytes::Base64(_)));
    }
}
