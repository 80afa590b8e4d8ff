//! The accept loop and each connection's life: HTTP/1.1 by hyper, at most `max_connections` at
//! once, `header_read_timeout` to send a request head, `write_stall_timeout` for a client to go
//! on reading its answer ([`StallGuard`]), accept errors (EMFILE and the like) logged
//! and retried instead of ending the server, and a graceful close of every connection on shutdown.
//! What a request means is the router's business ([`crate::routes`]), not this module's.

use crate::options::ServerOptions;
use crate::stall::StallGuard;
use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::io;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};

/// How long the loop pauses after an accept error that is not about one connection (EMFILE,
/// ENFILE, ENOBUFS...): long enough for connections to close and free descriptors, short enough
/// that clients barely notice.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);

/// The most connections the cap can be set to (the semaphore's and `acquire_many`'s bound).
const MAX_CONNECTIONS: usize = if Semaphore::MAX_PERMITS < u32::MAX as usize {
    Semaphore::MAX_PERMITS
} else {
    u32::MAX as usize
};

/// The limits the loop applies to every connection.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectionLimits {
    pub header_read_timeout: Duration,
    /// How long a write to the client may wait without progress ([`StallGuard`]).
    pub write_stall_timeout: Duration,
    pub max_connections: usize,
}

impl ConnectionLimits {
    pub fn from_options(options: &ServerOptions) -> Self {
        Self {
            // hyper treats a zero timeout as "fire at once"; a millisecond is the intent.
            header_read_timeout: options.header_read_timeout.max(Duration::from_millis(1)),
            write_stall_timeout: options.write_stall_timeout.max(Duration::from_millis(1)),
            max_connections: options.max_connections.clamp(1, MAX_CONNECTIONS),
        }
    }
}

/// Serves `app` on the listener's connections until `stop` turns true (or its sender is gone),
/// then closes idle connections, lets the others finish their request, and returns when the last
/// one has ended.
pub(crate) async fn serve(listener: TcpListener, app: Router, limits: ConnectionLimits, stop: watch::Receiver<bool>) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true);
    let mut stopping = stop.clone();
    loop {
        // A free slot first: at the cap, new clients wait in the kernel's backlog.
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot,
            () = stopped(&mut stopping) => break,
        };
        let Ok(slot) = slot else { break };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stopped(&mut stopping) => break,
        };
        let stream = match accepted {
            Ok((stream, _peer)) => stream,
            Err(error) => {
                drop(slot);
                pause_after(error).await;
                continue;
            }
        };
        let io = TokioIo::new(StallGuard::new(stream, limits.write_stall_timeout));
        let connection = http.serve_connection(io, TowerToHyperService::new(app.clone()));
        let mut stop = stop.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let mut connection = pin!(connection);
            tokio::select! {
                result = connection.as_mut() => log_end(result),
                () = stopped(&mut stop) => {
                    connection.as_mut().graceful_shutdown();
                    log_end(connection.await);
                }
            }
        });
    }
    drop(listener);
    // Every slot back means every connection has ended.
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    let _ = slots.acquire_many(all).await;
}

/// Resolves once `stop` is true or its sender is gone.
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|stopping| *stopping).await;
}

/// An error about one connection (reset before it was accepted) is skipped; anything else, such
/// as running out of file descriptors, is logged and waited out: the server keeps running.
async fn pause_after(error: io::Error) {
    if matches!(
        error.kind(),
        io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionRefused
    ) {
        return;
    }
    tracing::warn!(
        "the store server cannot accept a connection ({error}); retrying in {} ms \
         (too many open files? raise `ulimit -n` or lower --max-connections)",
        ACCEPT_ERROR_PAUSE.as_millis()
    );
    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
}

/// A connection ending in an error (a header timeout, a client gone mid-request) concerns only
/// that client.
fn log_end(result: Result<(), hyper::Error>) {
    if let Err(error) = result {
        if error.is_timeout() {
            tracing::debug!("closed a connection that did not send its request headers in time");
        } else {
            tracing::debug!("connection ended: {error}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_never_disable_the_timer_or_the_server() {
        let limits = ConnectionLimits::from_options(&ServerOptions {
            header_read_timeout: Duration::ZERO,
            max_connections: 0,
            ..ServerOptions::default()
        });
        assert_eq!(limits.header_read_timeout, Duration::from_millis(1));
        assert_eq!(limits.max_connections, 1);
        let limits = ConnectionLimits::from_options(&ServerOptions {
            max_connections: usize::MAX,
            ..ServerOptions::default()
        });
        assert_eq!(limits.max_connections, MAX_CONNECTIONS);
        assert!(u32::try_from(MAX_CONNECTIONS).is_ok());
    }
}
