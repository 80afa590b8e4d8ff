//! Wakes this process's `wait_for_rollouts` when any replica finishes a rollout: a thread with a
//! connection of its own `LISTEN`s on [`CHANNEL`] and wakes every wait of the store's
//! [`Notifier`] for each notification (this process's own commits wake them directly too). The connection is opened
//! again when it breaks, waking the waits, since notifications sent meanwhile are lost. Waits re-read
//! the database each time and on a slow timer, so a lost notification only delays them. This
//! module does not know what a wait is waiting for.

use super::conn::{connect, describe};
use super::pool::CHANNEL;
use ::postgres::fallible_iterator::FallibleIterator as _;
use ::postgres::{Client, Config};
use agl_store::notifier::Notifier;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How often the thread looks whether the store is gone.
const POLL: Duration = Duration::from_millis(250);

/// The longest pause between two tries to connect again.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Starts the listening thread, and returns once its first try to listen is over (or `wait`
/// has passed), so that a store is listening when it is opened; it ends once `stop` is set.
pub(crate) fn spawn(
    config: Arc<Config>,
    place: String,
    finished: Arc<Notifier>,
    stop: Arc<AtomicBool>,
    wait: Duration,
) -> std::io::Result<()> {
    let (tried, first_try) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("agl-postgres-listen".into())
        .spawn(move || listen(&config, &place, &finished, &stop, tried))?;
    // A first try that fails (logged) or takes too long leaves the waits to their re-checks.
    let _ = first_try.recv_timeout(wait);
    Ok(())
}

fn bump(finished: &Notifier) {
    finished.wake_all();
}

fn listen(config: &Config, place: &str, finished: &Notifier, stop: &AtomicBool, tried: std::sync::mpsc::Sender<()>) {
    let mut tried = Some(tried);
    let mut client: Option<Client> = None;
    let mut backoff = Duration::from_millis(100);
    let mut was_connected = false;
    let mut warned = false;
    while !stop.load(Ordering::Relaxed) {
        let Some(listening) = client.as_mut().filter(|c| !c.is_closed()) else {
            client = None;
            let opened = connect(config).and_then(|mut c| c.batch_execute(&format!("LISTEN {CHANNEL}")).map(|()| c));
            if let Some(tried) = tried.take() {
                let _ = tried.send(());
            }
            match opened {
                Ok(c) => {
                    client = Some(c);
                    backoff = Duration::from_millis(100);
                    if was_connected || warned {
                        // Whatever finished while no one listened: waiters look again.
                        tracing::info!(store = place, "PostgreSQL store: listening for finished rollouts again");
                        bump(finished);
                    }
                    was_connected = true;
                    warned = false;
                }
                Err(error) => {
                    if !warned {
                        tracing::warn!(
                            store = place,
                            "PostgreSQL store: cannot listen for finished rollouts ({}); waits fall back \
                             to polling until the connection is back",
                            describe(&error)
                        );
                        warned = true;
                    }
                    sleep_unless_stopped(backoff, stop);
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
            continue;
        };
        let heard = listening.notifications().timeout_iter(POLL).next().map(|n| n.is_some());
        match heard {
            Ok(true) => {
                // Take whatever else has arrived already: one bump for the lot.
                let _ = listening.notifications().iter().count();
                bump(finished);
            }
            Ok(false) => {}
            Err(error) => {
                tracing::warn!(
                    store = place,
                    "PostgreSQL store: the listening connection broke: {}",
                    describe(&error)
                );
                client = None;
            }
        }
    }
}

/// Sleeps `total`, in steps, returning early once `stop` is set.
fn sleep_unless_stopped(total: Duration, stop: &AtomicBool) {
    let mut left = total;
    while !left.is_zero() && !stop.load(Ordering::Relaxed) {
        let step = left.min(POLL);
        std::thread::sleep(step);
        left -= step;
    }
}
