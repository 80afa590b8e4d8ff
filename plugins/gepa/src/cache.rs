//! GEPA's evaluation cache (the `gepa` package's `cache_evaluation`): the outcome of every
//! (candidate, split, task) rollout already paid for, so the same candidate is never run — nor
//! charged — twice on the same task. A candidate is keyed by its component texts, so a child that
//! repeats an earlier candidate's texts reuses its outcomes too. The outcomes are recorded even
//! when the cache is off (then never reused), so a candidate's known failures can be looked up.

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

    /// Records an outcome (reused only when the cache is enabled).
    pub fn put(&mut self, components: &Components, split: Split, task: usize, outcome: &Outcome) {
        self.outcomes
            .entry(components.clone())
            .or_default()
            .insert((split, task), outcome.clone());
    }

    /// The tasks of `split` the candidate was run on and scored below `perfect_score` (its
    /// latest outcome there, whether the cache is enabled or not), in task order.
    pub fn known_failures(&self, components: &Components, split: Split, perfect_score: f64) -> Vec<usize> {
        self.outcomes
            .get(components)
            .into_iter()
            .flatten()
            .filter(|((s, _), outcome)| *s == split && outcome.reward < perfect_score)
            .map(|((_, task), _)| *task)
            .collect()
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

    #[test]
    fn known_failures_are_a_candidates_tasks_below_perfect_even_with_the_cache_off() {
        for enabled in [true, false] {
            let mut cache = EvalCache::new(enabled);
            let (a, b) = (candidate("A {q}"), candidate("B {q}"));
            cache.put(&a, Split::Train, 7, &outcome("r1", 0.0));
            cache.put(&a, Split::Train, 2, &outcome("r2", 1.0));
            cache.put(&a, Split::Train, 3, &outcome("r3", 0.5));
            cache.put(&a, Split::Val, 1, &outcome("r4", 0.0));
            cache.put(&b, Split::Train, 4, &outcome("r5", 0.0));
            assert_eq!(cache.known_failures(&a, Split::Train, 1.0), vec![3, 7]);
            assert_eq!(cache.known_failures(&a, Split::Val, 1.0), vec![1]);
            assert_eq!(cache.known_failures(&a, Split::Train, 0.5), vec![7]);
            assert!(cache.known_failures(&candidate("C {q}"), Split::Train, 1.0).is_empty());
        }
    }
}
