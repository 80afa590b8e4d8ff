//! A connection that cuts off a client who stops reading: [`StallGuard`] wraps a socket and fails
//! a write (or flush) that has made no progress for the configured time, so a client that asks
//! for an answer and never reads it ("slow read") cannot hold its connection slot for ever.
//! Reads pass through untouched: the header and body timeouts bound those.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// `inner` whose writes fail with `TimedOut` after `limit` without progress.
pub(crate) struct StallGuard<T> {
    inner: T,
    limit: Duration,
    /// Armed while a write waits; disarmed by any progress.
    deadline: Option<Pin<Box<Sleep>>>,
}

impl<T> StallGuard<T> {
    pub fn new(inner: T, limit: Duration) -> Self {
        Self {
            inner,
            limit,
            deadline: None,
        }
    }

    /// What a waiting write becomes: still pending, or `TimedOut` once the deadline has passed.
    fn pending<R>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<R>> {
        let limit = self.limit;
        let deadline = self
            .deadline
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(Instant::now() + limit)));
        match deadline.as_mut().poll(cx) {
            Poll::Ready(()) => {
                self.deadline = None;
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("the client read nothing of the answer for {limit:?}"),
                )))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    /// A write that went somewhere (or failed by itself) ends the wait.
    fn settled<R>(&mut self, result: Poll<io::Result<R>>, cx: &mut Context<'_>) -> Poll<io::Result<R>> {
        match result {
            Poll::Ready(result) => {
                self.deadline = None;
                Poll::Ready(result)
            }
            Poll::Pending => self.pending(cx),
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for StallGuard<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for StallGuard<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.settled(result, cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.settled(result, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let result = Pin::new(&mut self.inner).poll_flush(cx);
        self.settled(result, cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let result = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.settled(result, cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn a_write_nobody_reads_fails_after_the_limit() {
        // A pipe whose reader never reads: once its buffer is full, writes wait for ever.
        let (_reader, writer) = tokio::io::duplex(16);
        let mut guarded = StallGuard::new(writer, Duration::from_millis(100));
        let written = tokio::time::timeout(Duration::from_secs(30), guarded.write_all(&[0u8; 64])).await;
        let error = written.expect("the write ended").expect_err("a stalled write fails");
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
    }

    #[tokio::test]
    async fn writes_that_progress_are_untouched() {
        let (mut reader, writer) = tokio::io::duplex(16);
        let mut guarded = StallGuard::new(writer, Duration::from_secs(5));
        let drain = tokio::spawn(async move {
            let mut all = Vec::new();
            tokio::io::AsyncReadExt::read_to_end(&mut reader, &mut all)
                .await
                .map(|_| all)
        });
        guarded.write_all(&[7u8; 64]).await.expect("written");
        guarded.shutdown().await.expect("closed");
        let all = drain.await.expect("joined").expect("read");
        assert_eq!(all, vec![7u8; 64]);
    }
}
