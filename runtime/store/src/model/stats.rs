//! What a store reports about itself: statistics and capabilities.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Statistics {
    pub name: String,
    pub total_rollouts: u64,
    pub total_attempts: u64,
    pub total_spans: u64,
    pub total_resources: u64,
    pub total_workers: u64,
    /// Seconds since the store started.
    pub uptime: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_span_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eviction_threshold_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safe_threshold_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_capacity_bytes: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Capabilities {
    #[serde(default)]
    pub thread_safe: bool,
    #[serde(default)]
    pub async_safe: bool,
    /// One copy shared by every thread and process.
    #[serde(default)]
    pub zero_copy: bool,
    /// Serves OTLP/HTTP at `/v1/traces`.
    #[serde(default)]
    pub otlp_traces: bool,
}
