//! Serde helpers for "update only the keys present" request bodies.

use serde::{Deserialize, Deserializer};

/// Deserialize a present key (even `null`) as `Some(value)`; a missing key stays `None` via `default`.
pub(crate) fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}
