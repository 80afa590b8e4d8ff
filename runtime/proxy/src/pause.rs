//! Pausing the proxy (Agent-lightning 1.0's gateway pause): while paused, new calls are answered
//! 429 with `Retry-After` (clients come back later; calls already running finish), e.g. while
//! the algorithm swaps the model being served. `POST /proxy/pause`, `POST /proxy/resume` and
//! `GET /proxy/state` as 1.0 spells them, or [`crate::Proxy::pause`] from Rust.

use crate::error::ProxyError;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The default wait a paused proxy asks clients for.
pub const DEFAULT_RETRY_AFTER_SECONDS: u64 = 5;

/// What `POST /proxy/pause` takes (both optional).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct PauseRequest {
    #[serde(default)]
    pub retry_after_seconds: Option<u64>,
    #[serde(default)]
    pub reason: Option<String>,
}

/// What the management routes answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PauseState {
    pub paused: bool,
    pub retry_after_seconds: u64,
    pub reason: Option<String>,
    /// Calls being answered now.
    pub inflight: usize,
}

#[derive(Debug)]
struct Paused {
    paused: bool,
    retry_after_seconds: u64,
    reason: Option<String>,
}

/// The pause switch and the count of calls in flight.
#[derive(Debug, Clone)]
pub(crate) struct Pause {
    state: Arc<Mutex<Paused>>,
    inflight: Arc<AtomicUsize>,
}

/// Held for the life of one call (its stream included): the call counts as in flight.
pub(crate) struct InFlight(Arc<AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Default for Pause {
    fn default() -> Self {
        Pause {
            state: Arc::new(Mutex::new(Paused {
                paused: false,
                retry_after_seconds: DEFAULT_RETRY_AFTER_SECONDS,
                reason: None,
            })),
            inflight: Arc::default(),
        }
    }
}

impl Pause {
    /// Lets a call in, or refuses it while paused.
    pub fn enter(&self) -> Result<InFlight, ProxyError> {
        let state = self.state.lock();
        if state.paused {
            return Err(ProxyError::Paused {
                retry_after_seconds: state.retry_after_seconds,
                reason: state.reason.clone(),
            });
        }
        self.inflight.fetch_add(1, Ordering::SeqCst);
        Ok(InFlight(self.inflight.clone()))
    }

    pub fn pause(&self, request: PauseRequest) -> PauseState {
        {
            let mut state = self.state.lock();
            state.paused = true;
            state.retry_after_seconds = request.retry_after_seconds.unwrap_or(DEFAULT_RETRY_AFTER_SECONDS);
            state.reason = request.reason;
        }
        self.state()
    }

    pub fn resume(&self) -> PauseState {
        {
            let mut state = self.state.lock();
            state.paused = false;
            state.reason = None;
        }
        self.state()
    }

    pub fn state(&self) -> PauseState {
        let state = self.state.lock();
        PauseState {
            paused: state.paused,
            retry_after_seconds: state.retry_after_seconds,
            reason: state.reason.clone(),
            inflight: self.inflight.load(Ordering::SeqCst),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paused_proxy_refuses_new_calls_and_counts_running_ones() {
        let pause = Pause::default();
        let call = pause.enter().expect("not paused");
        let state = pause.pause(PauseRequest {
            retry_after_seconds: Some(7),
            reason: Some("swapping the model".into()),
        });
        assert_eq!((state.paused, state.inflight), (true, 1));
        match pause.enter() {
            Err(ProxyError::Paused {
                retry_after_seconds,
                reason,
            }) => {
                assert_eq!(
                    (retry_after_seconds, reason.as_deref()),
                    (7, Some("swapping the model"))
                );
            }
            Err(other) => panic!("{other:?}"),
            Ok(_) => panic!("a paused proxy let a call in"),
        }
        drop(call);
        assert_eq!(
            pause.resume(),
            PauseState {
                paused: false,
                retry_after_seconds: 7,
                reason: None,
                inflight: 0
            }
        );
        assert!(pause.enter().is_ok());
    }
}
