//! The output-capture slice: how many bytes of a guest's stdout and of its stderr are kept per
//! attempt (the rest is counted, not kept). The pipes themselves are the host's (`output.rs`).

use crate::value::Size;
use crate::{Layer, set};
use serde::Deserialize;

pub const DEFAULT_OUTPUT_CAPTURE_BYTES: usize = 64 << 10;

/// Bytes of stdout and of stderr kept per attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputCapture {
    pub bytes: usize,
}

impl Default for OutputCapture {
    fn default() -> Self {
        Self {
            bytes: DEFAULT_OUTPUT_CAPTURE_BYTES,
        }
    }
}

/// Output capture as a manifest (`output-capture`) or the flags set it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, clap::Args)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct OutputOptions {
    /// Bytes of stdout and of stderr kept per attempt, e.g. 64KiB (the rest is counted, not kept).
    #[arg(long = "agent-output-capture", value_name = "SIZE")]
    pub output_capture: Option<Size>,
}

impl Layer for OutputOptions {
    type Policy = OutputCapture;
    fn apply(self, output: &mut OutputCapture) {
        set(&mut output.bytes, self.output_capture.map(|s| s.as_usize()));
    }
}
