//! GEPA's evaluation cache (the `gepa` package's `cache_evaluation`): the outcome of every
//! (candidate, split, task) rollout already paid for, so the same candidate is never run — nor
//! charged — twice on the same task. A candidate is keyed by its component texts, so a child that
//! repeats an earlier candidate's texts reuses its outcomes too.

use agl_algorithm_sdk::evaluate::Outcome;
use std::collections::BTreeMap;

use crate::merge::Components;

/// Which split a task index refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Split {
    Train,
    Val,
}

#[derive(Debug, Default)]
pub struct EvalCache {
    enabled: bool,
    outcomes: BTreeMap<Components, BTreeMap<(Split, usize), Outcome>>,
    /// Rollouts answered from the cache instead of run.
    pub hits: usize,
}

impl EvalCache {
    pub fn new(enabled: bool) -> Self {
        EvalCache {
            enabled,
            ..Default::default()
        }
    }

    /// The outcome already paid for, if any (always `None` when disabled).
    pub fn get(&self, components: &Components, split: Split, task: usize) -> Option<&Outcome> {
        if !self.enabled {
            return None;
        }
        self.outcomes.get(components)?.get(&(split, task))
    }

    /// The tasks of `indices` that would have to be run (and paid for), in order.
    pub fn missing(&self, components: &Components, split: Split, indices: &[usize]) -> Vec<usize> {
        indices
            .iter()
            .copied()
            .filter(|&task| self.get(components, split, task).is_none())
            .collect()
    }

    pub fn put(&mut self, components: &Components, split: Split, task: usize, outcome: &Outcome) {
        if self.enabled {
            self.outcomes
                .entry(components.clone())
                .or_default()
                .insert((split, task), outcome.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(id: &str, reward: f64) -> Outcome {
        Outcome {
            rollout_id: id.to_owned(),
            status: "succeeded",
            reward,
            failure: None,
        }
    }

    fn candidate(text: &str) -> Components {
        [("prompt".to_owned(), text.to_owned())].into_iter().collect()
    }

    #[test]
    fn a_candidate_is_paid_once_per_task_and_split() {
        let mut cache = EvalCache::new(true);
        let (a, b) = (candidate("A {q}"), candidate("B {q}"));
        assert_eq!(cache.missing(&a, Split::Train, &[4, 1]), vec![4, 1]);
        cache.put(&a, Split::Train, 4, &outcome("r1", 1.0));
        assert_eq!(cache.missing(&a, Split::Train, &[4, 1, 7]), vec![1, 7]);
        assert_eq!(
            cache.missing(&a, Split::Val, &[4]),
            vec![4],
            "val task 4 is another task"
        );
        assert_eq!(cache.missing(&b, Split::Train, &[4]), vec![4], "another candidate");
        assert_eq!(cache.get(&a, Split::Train, 4).map(|o| o.reward), Some(1.0));
        assert_eq!(
            cache
                .get(&candidate("A {q}"), Split::Train, 4)
                .map(|o| o.rollout_id.as_str()),
            Some("r1"),
            "the same texts are the same candidate"
        );
    }

    #[test]
    fn a_disabled_cache_answers_nothing() {
        let mut cache = EvalCache::new(false);
        let a = candidate("A {q}");
        cache.put(&a, Split::Train, 0, &outcome("r1", 1.0));
        assert!(cache.get(&a, Split::Train, 0).is_none());
        assert_eq!(cache.missing(&a, Split::Train, &[0]), vec![0]);
    }
}
