//! Recordings (issue #39, replay and fork): what entered an attempt's guest, as the store keeps
//! it — the tape (agl-wasm's JSON text, never parsed here) and the content-addressed text blobs it
//! refers to — with the size limits and the checks a recording passes before anything of it is
//! stored ([`Recording::check`]).

use crate::error::{StoreError, StoreResult};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The largest tape a recording may have: 64 MiB.
pub const MAX_TAPE_BYTES: usize = 64 * 1024 * 1024;
/// The most a recording may hold, its tape and every blob's text together: 256 MiB.
pub const MAX_RECORDING_BYTES: usize = 256 * 1024 * 1024;
/// The most blobs one recording may refer to.
pub const MAX_RECORDING_BLOBS: usize = 1 << 16;

/// An attempt's record of what entered its guest: a tape (JSON text, its format is agl-wasm's) and
/// the content-addressed text blobs it refers to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recording {
    pub rollout_id: String,
    pub attempt_id: String,
    /// The tape, JSON text. The store does not parse it.
    pub tape: String,
    /// Every blob the tape refers to: lowercase hex SHA-256 of the text → the text.
    #[serde(default)]
    pub blobs: BTreeMap<String, String>,
}

/// What keeping a recording cost: its tape, and the blobs the store did not hold yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RecordingStored {
    pub tape_bytes: u64,
    pub blobs: u32,
    pub new_blobs: u32,
    pub new_blob_bytes: u64,
}

/// Lowercase hex SHA-256 of `text`: a blob's address.
pub fn blob_address(text: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(text.as_bytes());
    let mut out = String::with_capacity(digest.len() * 2);
    for byte in digest {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    out
}

impl Recording {
    /// How many bytes its tape and blob texts hold together.
    pub fn content_bytes(&self) -> usize {
        self.blobs
            .values()
            .fold(self.tape.len(), |total, text| total.saturating_add(text.len()))
    }

    /// Refuses ([`StoreError::InvalidArgument`]) a recording over the limits
    /// ([`MAX_TAPE_BYTES`], [`MAX_RECORDING_BYTES`], [`MAX_RECORDING_BLOBS`]) or with a blob whose
    /// key is not the SHA-256 of its text; the sizes are checked before anything is hashed.
    pub fn check(&self) -> StoreResult<()> {
        let refuse = |why: String| {
            Err(StoreError::InvalidArgument(format!(
                "recording of attempt {} of rollout {}: {why}",
                self.attempt_id, self.rollout_id
            )))
        };
        if self.tape.len() > MAX_TAPE_BYTES {
            return refuse(format!(
                "its tape of {} bytes is over the limit of {MAX_TAPE_BYTES} bytes",
                self.tape.len()
            ));
        }
        if self.blobs.len() > MAX_RECORDING_BLOBS {
            return refuse(format!(
                "its {} blobs are over the limit of {MAX_RECORDING_BLOBS}",
                self.blobs.len()
            ));
        }
        let total = self.content_bytes();
        if total > MAX_RECORDING_BYTES {
            return refuse(format!(
                "its tape and blobs of {total} bytes are over the limit of {MAX_RECORDING_BYTES} bytes"
            ));
        }
        for (address, text) in &self.blobs {
            if blob_address(text) != *address {
                let shown: String = address.chars().take(80).collect();
                return refuse(format!("blob `{shown}` is not the SHA-256 (lowercase hex) of its text"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recording(blobs: &[(&str, &str)]) -> Recording {
        Recording {
            rollout_id: "ro-1".into(),
            attempt_id: "at-1".into(),
            tape: "[]".into(),
            blobs: blobs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
        }
    }

    #[test]
    fn a_blob_address_is_the_lowercase_hex_sha256_of_its_text() {
        assert_eq!(
            blob_address(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            blob_address("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn a_recording_whose_keys_are_its_blobs_hashes_passes() {
        let text = "the model said hello";
        recording(&[(&blob_address(text), text)]).check().unwrap();
        recording(&[]).check().unwrap();
    }

    #[test]
    fn a_wrong_or_uppercase_key_is_refused() {
        let text = "hello";
        let wrong = recording(&[(&blob_address("other"), text)]).check().unwrap_err();
        assert!(matches!(wrong, StoreError::InvalidArgument(_)), "{wrong}");
        let upper = blob_address(text).to_uppercase();
        assert!(recording(&[(&upper, text)]).check().is_err());
        assert!(recording(&[("not-hex", text)]).check().is_err());
    }

    #[test]
    fn a_recording_over_a_limit_is_refused_before_any_hashing() {
        let mut big = recording(&[]);
        big.tape = " ".repeat(MAX_TAPE_BYTES + 1);
        let error = big.check().unwrap_err().to_string();
        assert!(error.contains("over the limit"), "{error}");

        let chunk = "x".repeat(MAX_TAPE_BYTES);
        let mut total = recording(&[]);
        total.tape = chunk.clone();
        for i in 0..4 {
            // Keys that are not hashes: the size is refused first.
            total.blobs.insert(format!("k{i}"), chunk.clone());
        }
        let error = total.check().unwrap_err().to_string();
        assert!(error.contains("tape and blobs"), "{error}");
    }
}
