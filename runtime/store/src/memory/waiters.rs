//! Event-driven `wait_for_rollouts`: each waiter counts the rollouts it still waits for and is
//! woken once, when the last of them finishes. No polling; a finishing rollout touches only its
//! own waiters.

use rustc_hash::FxHashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::Notify;

#[derive(Debug)]
pub(crate) struct Waiter {
    remaining: AtomicUsize,
    pub notify: Notify,
}

#[derive(Debug, Default)]
pub(crate) struct Waiters {
    by_slot: FxHashMap<u32, Vec<Arc<Waiter>>>,
}

impl Waiters {
    /// A waiter for these (unfinished) rollout slots.
    pub fn register(&mut self, slots: &[u32]) -> Arc<Waiter> {
        let waiter = Arc::new(Waiter {
            remaining: AtomicUsize::new(slots.len()),
            notify: Notify::new(),
        });
        for slot in slots {
            self.by_slot.entry(*slot).or_default().push(Arc::clone(&waiter));
        }
        waiter
    }

    /// The rollout in `slot` finished: count it off every waiter on it.
    pub fn finished(&mut self, slot: u32) {
        if self.by_slot.is_empty() {
            return;
        }
        if let Some(waiters) = self.by_slot.remove(&slot) {
            for waiter in waiters {
                if waiter.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
                    waiter.notify.notify_one();
                }
            }
        }
    }

    /// Forgets a waiter that stopped waiting (woken, timed out or dropped).
    pub fn unregister(&mut self, waiter: &Arc<Waiter>, slots: &[u32]) {
        for slot in slots {
            if let Some(list) = self.by_slot.get_mut(slot) {
                list.retain(|w| !Arc::ptr_eq(w, waiter));
                if list.is_empty() {
                    self.by_slot.remove(slot);
                }
            }
        }
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.by_slot.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn wakes_only_when_the_last_slot_finishes() {
        let mut waiters = Waiters::default();
        let waiter = waiters.register(&[1, 2]);
        waiters.finished(1);
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(5), waiter.notify.notified())
                .await
                .is_err()
        );
        waiters.finished(2);
        waiter.notify.notified().await;
        assert!(waiters.is_empty());
    }

    #[test]
    fn unregister_leaves_nothing_behind() {
        let mut waiters = Waiters::default();
        let a = waiters.register(&[1, 2]);
        let _b = waiters.register(&[2]);
        waiters.unregister(&a, &[1, 2]);
        assert_eq!(waiters.by_slot.len(), 1);
        assert_eq!(waiters.by_slot[&2].len(), 1);
    }
}
