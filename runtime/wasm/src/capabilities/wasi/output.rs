//! Captured stdout/stderr: a guest may write as much as it likes, the host keeps the first
//! `cap` bytes and counts the rest. Writes never fail, so a chatty guest is truncated, not killed.
//! What an attempt printed ends as one span per stream ([`record`]).

use agl_trace::{AttemptTrace, names};
use bytes::Bytes;
use opentelemetry::KeyValue;
use opentelemetry::trace::Status;
use parking_lot::Mutex;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// Largest write the guest is offered at once.
const WRITE_PERMIT: usize = 64 << 10;

#[derive(Debug, Default)]
struct Captured {
    kept: Vec<u8>,
    dropped: u64,
}

/// What an attempt printed: the kept prefix and how many bytes were dropped after it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CapturedOutput {
    pub text: String,
    pub dropped_bytes: u64,
}

/// Records what an attempt printed: an `agl.stdout` / `agl.stderr` span for each stream that
/// kept text or dropped bytes (outside the span budget, as the guest's own last words).
pub(crate) fn record(trace: &AttemptTrace, stdout: &CapturedOutput, stderr: &CapturedOutput) {
    for (name, output) in [(names::STDOUT, stdout), (names::STDERR, stderr)] {
        if !output.text.is_empty() || output.dropped_bytes > 0 {
            let attributes = vec![
                KeyValue::new(names::OUTPUT_TEXT, output.text.clone()),
                KeyValue::new(
                    names::OUTPUT_DROPPED_BYTES,
                    i64::try_from(output.dropped_bytes).unwrap_or(i64::MAX),
                ),
            ];
            trace.instant_always(name, attributes, Status::Unset);
        }
    }
}

/// A bounded, never-failing output pipe; clones share the same buffer.
#[derive(Debug, Clone)]
pub struct CappedPipe {
    captured: Arc<Mutex<Captured>>,
    cap: usize,
}

impl CappedPipe {
    pub fn new(cap: usize) -> Self {
        Self {
            captured: Arc::new(Mutex::new(Captured::default())),
            cap,
        }
    }

    fn accept(&self, bytes: &[u8]) {
        let mut captured = self.captured.lock();
        let room = self.cap.saturating_sub(captured.kept.len());
        let kept = room.min(bytes.len());
        captured.kept.extend_from_slice(&bytes[..kept]);
        captured.dropped += (bytes.len() - kept) as u64;
    }

    /// A copy of what was written so far, leaving it in place.
    pub fn peek(&self) -> CapturedOutput {
        let captured = self.captured.lock();
        CapturedOutput {
            text: String::from_utf8_lossy(&captured.kept).into_owned(),
            dropped_bytes: captured.dropped,
        }
    }

    /// Takes what was written so far (lossy UTF-8), leaving the pipe empty.
    pub fn take(&self) -> CapturedOutput {
        let mut captured = self.captured.lock();
        let kept = std::mem::take(&mut captured.kept);
        let dropped_bytes = std::mem::take(&mut captured.dropped);
        CapturedOutput {
            text: String::from_utf8_lossy(&kept).into_owned(),
            dropped_bytes,
        }
    }
}

impl IsTerminal for CappedPipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CappedPipe {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[async_trait::async_trait]
impl Pollable for CappedPipe {
    async fn ready(&mut self) {}
}

#[async_trait::async_trait]
impl OutputStream for CappedPipe {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.accept(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(WRITE_PERMIT)
    }
}

impl AsyncWrite for CappedPipe {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.accept(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_prefix_and_counts_the_rest() {
        let mut pipe = CappedPipe::new(8);
        pipe.write(Bytes::from_static(b"hello ")).unwrap();
        pipe.write(Bytes::from_static(b"world, again")).unwrap();
        assert_eq!(pipe.check_write().unwrap(), WRITE_PERMIT, "never refuses a write");
        let out = pipe.take();
        assert_eq!(
            out,
            CapturedOutput {
                text: "hello wo".into(),
                dropped_bytes: 10
            }
        );
        assert_eq!(pipe.take(), CapturedOutput::default());
    }
}
