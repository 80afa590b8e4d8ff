//! The two bodies of a request as the host sees them: the guest's request body, counted as it is
//! sent, and the server's response body, counted, capped (past the cap the guest reads an error)
//! and timed (a server silent for longer than the timeout between two pieces fails it). The
//! response body ends the request's span when it ends, fails, or is dropped.

use super::span::{RequestSpan, SentCounter};
use super::taped::{BodyTape, KeptEnd, KeptError, KeptFailure};
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Sleep;
use wasmtime_wasi_http::{Error, WasiBody};

/// The guest's request body, adding what it sends to the span's counter.
pub(crate) struct CountingBody {
    inner: WasiBody,
    sent: SentCounter,
}

impl CountingBody {
    pub(crate) fn new(inner: WasiBody, sent: SentCounter) -> Self {
        Self { inner, sent }
    }
}

impl Body for CountingBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled
            && let Some(data) = frame.data_ref()
        {
            self.sent.add(data.len() as u64);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The server's response body, as the guest reads it.
pub(crate) struct ResponseBody {
    incoming: hyper::body::Incoming,
    /// The longest wait for the next piece, and the timer of the current wait.
    between: Duration,
    timer: Pin<Box<Sleep>>,
    max_bytes: u64,
    status: u16,
    /// `None` once the body ended or failed (the span with it).
    span: Option<RequestSpan>,
    /// Where what the guest reads is kept, when the attempt is recorded.
    tape: Option<BodyTape>,
}

impl ResponseBody {
    pub(crate) fn new(
        incoming: hyper::body::Incoming,
        between: Duration,
        max_bytes: u64,
        status: u16,
        span: RequestSpan,
        tape: Option<BodyTape>,
    ) -> Self {
        Self {
            incoming,
            between,
            timer: Box::pin(tokio::time::sleep(between)),
            max_bytes,
            status,
            span: Some(span),
            tape,
        }
    }

    /// Ends the span as failed and hands the guest `error`.
    fn fail(&mut self, error: Error, kind: &'static str, reason: String) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let received = self.span.as_mut().map(|span| span.add_received(0));
        if let Some(tape) = self.tape.as_mut() {
            tape.end(KeptEnd::Failed(KeptFailure {
                answered: None,
                received,
                kind: kind.to_owned(),
                reason: reason.clone(),
                refused: None,
                error: KeptError::of(&error),
            }));
        }
        if let Some(span) = self.span.take() {
            span.fail(kind, reason);
        }
        Poll::Ready(Some(Err(error)))
    }

    fn complete(&mut self) {
        if let Some(tape) = self.tape.as_mut() {
            tape.end(KeptEnd::Complete);
        }
        if let Some(span) = self.span.take() {
            span.complete(self.status);
        }
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = self.get_mut();
        if this.span.is_none() {
            return Poll::Ready(None); // ended or failed: nothing more
        }
        match Pin::new(&mut this.incoming).poll_frame(cx) {
            Poll::Ready(None) => {
                this.complete();
                Poll::Ready(None)
            }
            Poll::Ready(Some(Err(e))) => {
                let reason = format!("the response body failed: {e}");
                this.fail(Error::Hyper(e), "response-body", reason)
            }
            Poll::Ready(Some(Ok(frame))) => {
                let len = frame.data_ref().map_or(0, |d| d.len() as u64);
                let received = this.span.as_mut().map_or(len, |span| span.add_received(len));
                if received > this.max_bytes {
                    let reason = format!(
                        "the response body is larger than the {} bytes allowed (--agent-http-max-response)",
                        this.max_bytes
                    );
                    return this.fail(
                        Error::HttpResponseBodySize(Some(received)),
                        "response-body-size",
                        reason,
                    );
                }
                if let (Some(tape), Some(data)) = (this.tape.as_mut(), frame.data_ref()) {
                    tape.read(data);
                }
                let deadline = tokio::time::Instant::now() + this.between;
                this.timer.as_mut().reset(deadline);
                if this.incoming.is_end_stream() {
                    this.complete();
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Pending => match this.timer.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    let reason = format!("no response body bytes for {:?} (--agent-http-timeout)", this.between);
                    this.fail(Error::ConnectionReadTimeout, "timeout", reason)
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.span.is_none() || self.incoming.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.incoming.size_hint()
    }
}
