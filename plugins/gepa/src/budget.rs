//! GEPA's budgets: rollouts (GEPA's metric calls: every task run, on train minibatches and on val)
//! and reflection calls (every call to the reflection model, failed or malformed ones included).
//! A step is started only when its worst case fits, so neither budget is ever exceeded.

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Budget {
    pub max_rollouts: usize,
    pub rollouts_used: usize,
    pub max_reflection_calls: u32,
    pub reflection_calls_used: u32,
}

impl Budget {
    pub fn new(max_rollouts: usize, max_reflection_calls: u32) -> Self {
        Budget {
            max_rollouts,
            rollouts_used: 0,
            max_reflection_calls,
            reflection_calls_used: 0,
        }
    }

    /// Whether `rollouts` more rollouts and `reflections` more reflection calls fit.
    pub fn can_afford(&self, rollouts: usize, reflections: u32) -> bool {
        self.rollouts_used.saturating_add(rollouts) <= self.max_rollouts
            && self.reflection_calls_used.saturating_add(reflections) <= self.max_reflection_calls
    }

    pub fn spend_rollouts(&mut self, rollouts: usize) {
        self.rollouts_used += rollouts;
    }

    pub fn spend_reflection(&mut self) {
        self.reflection_calls_used += 1;
    }

    /// The worst case of one reflective mutation: the parent on the `parent_unpaid` tasks of its
    /// minibatch not already paid for (the others come from the evaluation cache; all of them
    /// without it), the child on the minibatch, and the child on the full val set.
    pub fn mutation_rollouts(parent_unpaid: usize, minibatch: usize, val: usize) -> usize {
        parent_unpaid + minibatch + val
    }

    /// The worst case of one merge: the merged candidate on its val subsample, then on full val.
    pub fn merge_rollouts(subsample: usize, val: usize) -> usize {
        subsample + val
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_fits_only_when_its_worst_case_does() {
        let mut budget = Budget::new(30, 2);
        budget.spend_rollouts(8); // the seed on 8 val tasks
        let mutation = Budget::mutation_rollouts(3, 3, 8);
        assert_eq!(mutation, 14);
        assert!(budget.can_afford(mutation, 1));
        budget.spend_rollouts(mutation);
        budget.spend_reflection();
        assert_eq!(budget.rollouts_used, 22);
        assert!(!budget.can_afford(mutation, 1), "22 + 14 > 30");
        assert!(budget.can_afford(Budget::merge_rollouts(0, 8), 0));
        budget.spend_reflection();
        assert!(!budget.can_afford(0, 1), "reflection calls spent");
        assert!(budget.can_afford(0, 0));
        let mut full = Budget::new(10, 0);
        full.spend_rollouts(5);
        assert!(!full.can_afford(usize::MAX, 0), "no overflow");
    }

    #[test]
    fn a_parent_minibatch_already_paid_for_makes_room_for_one_more_mutation() {
        let mut budget = Budget::new(200, 200);
        budget.spend_rollouts(176);
        assert!(
            !budget.can_afford(Budget::mutation_rollouts(3, 3, 21), 1),
            "176 + 27 > 200"
        );
        assert!(
            !budget.can_afford(Budget::mutation_rollouts(1, 3, 21), 1),
            "176 + 25 > 200"
        );
        assert!(
            budget.can_afford(Budget::mutation_rollouts(0, 3, 21), 1),
            "176 + 24 = 200"
        );
    }
}
