//! The watchdog's agenda: a min-heap of moments when an attempt may need a verdict.
//! Entries are hints, re-checked when due (a heartbeat only moves a deadline later, so stale
//! entries are re-armed lazily instead of being updated on every span).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Due {
    pub at: f64,
    pub slot: u32,
    pub attempt_sequence: u32,
}

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Due {
    /// Reversed on time so that `BinaryHeap` (a max-heap) yields the earliest first.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .at
            .total_cmp(&self.at)
            .then_with(|| other.slot.cmp(&self.slot))
            .then_with(|| other.attempt_sequence.cmp(&self.attempt_sequence))
    }
}

#[derive(Debug, Default)]
pub(crate) struct Agenda {
    heap: BinaryHeap<Due>,
}

impl Agenda {
    pub fn schedule(&mut self, at: f64, slot: u32, attempt_sequence: u32) {
        self.heap.push(Due {
            at,
            slot,
            attempt_sequence,
        });
    }

    /// Removes and returns the earliest entry strictly before `now`.
    pub fn pop_due(&mut self, now: f64) -> Option<Due> {
        if self.heap.peek().is_some_and(|due| due.at < now) {
            self.heap.pop()
        } else {
            None
        }
    }

    /// Cheap check run before every store call.
    pub fn has_due(&self, now: f64) -> bool {
        self.heap.peek().is_some_and(|due| due.at < now)
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yields_earliest_first_and_only_when_due() {
        let mut agenda = Agenda::default();
        agenda.schedule(30.0, 1, 1);
        agenda.schedule(10.0, 2, 1);
        agenda.schedule(20.0, 3, 1);
        assert!(agenda.pop_due(10.0).is_none(), "due means strictly before now");
        assert_eq!(agenda.pop_due(25.0).map(|d| d.slot), Some(2));
        assert_eq!(agenda.pop_due(25.0).map(|d| d.slot), Some(3));
        assert!(agenda.pop_due(25.0).is_none());
        assert_eq!(agenda.len(), 1);
    }
}
