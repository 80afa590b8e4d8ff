//! Event-driven `wait_for_rollouts`: the waits in progress, each with the rollouts it still
//! waits for, woken once, when a commit finishes the last of them. A backend tells the
//! [`Notifier`] which rollouts each commit finished ([`Notifier::finished`]), or that some may
//! have finished where it cannot tell which ([`Notifier::wake_all`]: another process's commit).

use parking_lot::Mutex;
use rustc_hash::FxHashSet;
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::Notify;

/// The waits in progress of one store.
#[derive(Debug, Default)]
pub struct Notifier {
    waiters: Mutex<Vec<Arc<Waiter>>>,
    /// How many waits are registered: a commit finishing rollouts with none waiting locks nothing.
    count: AtomicUsize,
}

/// One wait: the rollouts it waits for that no commit has finished since it was armed.
#[derive(Debug)]
struct Waiter {
    pending: Mutex<FxHashSet<String>>,
    /// Notified when `pending` empties, or on [`Notifier::wake_all`].
    notify: Notify,
}

impl Notifier {
    /// After a commit: these rollouts finished.
    pub fn finished(&self, rollout_ids: &[String]) {
        if rollout_ids.is_empty() || self.count.load(Ordering::Acquire) == 0 {
            return;
        }
        for waiter in self.waiters.lock().iter() {
            let mut pending = waiter.pending.lock();
            if pending.is_empty() {
                continue;
            }
            for rollout_id in rollout_ids {
                pending.remove(rollout_id);
            }
            if pending.is_empty() {
                waiter.notify.notify_one();
            }
        }
    }

    /// Some rollouts may have finished (which, this process cannot tell): every wait looks again.
    pub fn wake_all(&self) {
        if self.count.load(Ordering::Acquire) == 0 {
            return;
        }
        for waiter in self.waiters.lock().iter() {
            waiter.notify.notify_one();
        }
    }

    /// A wait for `rollout_ids`, registered until the [`Registration`] is dropped.
    pub fn register(&self, rollout_ids: &[String]) -> Registration<'_> {
        let waiter = Arc::new(Waiter {
            pending: Mutex::new(FxHashSet::default()),
            notify: Notify::new(),
        });
        let mut waiters = self.waiters.lock();
        waiters.push(Arc::clone(&waiter));
        self.count.store(waiters.len(), Ordering::Release);
        Registration {
            notifier: self,
            waiter,
            rollout_ids: rollout_ids.to_vec(),
        }
    }
}

/// A registered wait (unregistered on drop, however the wait ends).
#[derive(Debug)]
pub struct Registration<'n> {
    notifier: &'n Notifier,
    waiter: Arc<Waiter>,
    rollout_ids: Vec<String>,
}

impl Registration<'_> {
    /// Listens for every rollout waited for: call before reading which have finished, so that no
    /// commit between the read and the wait goes unheard.
    pub fn arm(&self) {
        *self.waiter.pending.lock() = self.rollout_ids.iter().cloned().collect();
    }

    /// Keeps listening only for those of `unfinished` (what the read found) that no commit has
    /// finished since [`Registration::arm`]; false when none is left (read again).
    pub fn keep_only(&self, unfinished: &HashSet<String>) -> bool {
        let mut pending = self.waiter.pending.lock();
        pending.retain(|rollout_id| unfinished.contains(rollout_id));
        !pending.is_empty()
    }

    /// Resolves once the rollouts kept have all finished (or on [`Notifier::wake_all`]).
    pub async fn woken(&self) {
        self.waiter.notify.notified().await;
    }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        let mut waiters = self.notifier.waiters.lock();
        waiters.retain(|waiter| !Arc::ptr_eq(waiter, &self.waiter));
        self.notifier.count.store(waiters.len(), Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ids(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    #[tokio::test]
    async fn wakes_only_when_the_last_rollout_finishes() {
        let notifier = Notifier::default();
        let wait = notifier.register(&ids(&["a", "b"]));
        wait.arm();
        assert!(wait.keep_only(&ids(&["a", "b"]).into_iter().collect()));
        notifier.finished(&ids(&["a"]));
        assert!(
            tokio::time::timeout(Duration::from_millis(5), wait.woken())
                .await
                .is_err()
        );
        notifier.finished(&ids(&["b"]));
        wait.woken().await;
        drop(wait);
        assert!(notifier.waiters.lock().is_empty());
    }

    #[test]
    fn a_rollout_finished_between_the_read_and_the_wait_is_not_waited_for() {
        let notifier = Notifier::default();
        let wait = notifier.register(&ids(&["a", "b"]));
        wait.arm();
        notifier.finished(&ids(&["a"]));
        assert!(wait.keep_only(&ids(&["a", "b"]).into_iter().collect()));
        notifier.finished(&ids(&["b"]));
        assert!(!wait.keep_only(&ids(&["a", "b"]).into_iter().collect()));
    }

    #[test]
    fn dropping_a_wait_leaves_nothing_behind() {
        let notifier = Notifier::default();
        let a = notifier.register(&ids(&["a", "b"]));
        let _b = notifier.register(&ids(&["b"]));
        drop(a);
        assert_eq!(notifier.waiters.lock().len(), 1);
        assert_eq!(notifier.count.load(Ordering::Acquire), 1);
    }
}
