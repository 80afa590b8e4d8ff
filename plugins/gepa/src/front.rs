//! The per-val-task Pareto front, as GEPA keeps it: for each val task, the candidates with the
//! highest score on it (ties: all of them); candidates dominated there (every task they are best on
//! has another, undominated best) are set aside; a parent is sampled from what is left with a
//! probability proportional to the number of tasks it is best on.
//!
//! Candidates are indices; `scores[c][t]` is candidate `c`'s score on val task `t`, `means[c]` its
//! mean. Everything iterates in index order, so one seed gives one choice.

use rand::Rng;
use std::collections::BTreeSet;

/// For each val task, the candidates with the best score on it.
pub fn per_task_best(scores: &[Vec<f64>], tasks: usize) -> Vec<BTreeSet<usize>> {
    (0..tasks)
        .map(|t| {
            let best = scores
                .iter()
                .filter_map(|s| s.get(t).copied())
                .fold(f64::NEG_INFINITY, f64::max);
            scores
                .iter()
                .enumerate()
                .filter(|(_, s)| s.get(t).is_some_and(|&v| v == best))
                .map(|(c, _)| c)
                .collect()
        })
        .collect()
}

/// Whether `candidate` is dominated by `others`: every task it is best on also has one of
/// `others` among its best.
fn is_dominated(candidate: usize, others: &BTreeSet<usize>, front: &[BTreeSet<usize>]) -> bool {
    front
        .iter()
        .filter(|best| best.contains(&candidate))
        .all(|best| best.iter().any(|c| others.contains(c)))
}

/// The front without its dominated candidates. Candidates are examined from the lowest mean up
/// (ties: lower index first), one removal at a time, as GEPA does; every task keeps at least one.
pub fn remove_dominated(front: &[BTreeSet<usize>], means: &[f64]) -> Vec<BTreeSet<usize>> {
    let mut programs: Vec<usize> = front
        .iter()
        .flatten()
        .copied()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    programs.sort_by(|&a, &b| means[a].total_cmp(&means[b]).then(a.cmp(&b)));
    let mut dominated = BTreeSet::new();
    loop {
        let removed = programs.iter().copied().find(|&y| {
            if dominated.contains(&y) {
                return false;
            }
            let others: BTreeSet<usize> = programs
                .iter()
                .copied()
                .filter(|&p| p != y && !dominated.contains(&p))
                .collect();
            is_dominated(y, &others, front)
        });
        match removed {
            Some(y) => {
                dominated.insert(y);
            }
            None => break,
        }
    }
    front
        .iter()
        .map(|best| best.iter().copied().filter(|c| !dominated.contains(c)).collect())
        .collect()
}

/// The undominated candidates of the front, in index order (GEPA's merge candidates).
pub fn dominators(front: &[BTreeSet<usize>], means: &[f64]) -> Vec<usize> {
    remove_dominated(front, means)
        .into_iter()
        .flatten()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// How many tasks each undominated candidate is best on, in index order.
pub fn frequencies(front: &[BTreeSet<usize>], means: &[f64]) -> Vec<(usize, usize)> {
    let mut counts = std::collections::BTreeMap::new();
    for best in remove_dominated(front, means) {
        for c in best {
            *counts.entry(c).or_insert(0) += 1;
        }
    }
    counts.into_iter().collect()
}

/// A parent drawn from the front, each undominated candidate as often as the tasks it is best on.
/// `None` only for an empty front.
pub fn sample_parent(front: &[BTreeSet<usize>], means: &[f64], rng: &mut impl Rng) -> Option<usize> {
    let weighted = frequencies(front, means);
    let total: usize = weighted.iter().map(|(_, n)| n).sum();
    if total == 0 {
        return None;
    }
    let mut pick = rng.random_range(0..total);
    for (candidate, count) in weighted {
        if pick < count {
            return Some(candidate);
        }
        pick -= count;
    }
    None
}

/// The candidate with the best mean (ties: the older).
pub fn best_mean(means: &[f64]) -> usize {
    means
        .iter()
        .enumerate()
        .fold(None, |best: Option<(usize, f64)>, (i, &m)| match best {
            Some((_, b)) if b >= m => best,
            _ => Some((i, m)),
        })
        .map_or(0, |(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn set(items: &[usize]) -> BTreeSet<usize> {
        items.iter().copied().collect()
    }

    fn means(scores: &[Vec<f64>]) -> Vec<f64> {
        scores.iter().map(|s| s.iter().sum::<f64>() / s.len() as f64).collect()
    }

    #[test]
    fn each_task_keeps_every_candidate_tied_for_best() {
        let scores = vec![vec![1.0, 0.0, 0.5], vec![1.0, 1.0, 0.0], vec![0.0, 1.0, 0.25]];
        assert_eq!(per_task_best(&scores, 3), [set(&[0, 1]), set(&[1, 2]), set(&[0])]);
    }

    #[test]
    fn a_candidate_best_only_where_others_are_too_is_dominated() {
        // 0 is best on task 0 only, where 1 is too; 1 and 2 each own a task.
        let scores = vec![vec![1.0, 0.0, 0.0], vec![1.0, 1.0, 0.0], vec![0.0, 0.0, 1.0]];
        let front = per_task_best(&scores, 3);
        let reduced = remove_dominated(&front, &means(&scores));
        assert_eq!(reduced, [set(&[1]), set(&[1]), set(&[2])]);
        assert_eq!(dominators(&front, &means(&scores)), [1, 2]);
        // Two candidates equal everywhere: the lower mean (then the lower index) goes, one stays.
        let twins = vec![vec![1.0, 0.0], vec![1.0, 0.0]];
        let front = per_task_best(&twins, 2);
        assert_eq!(remove_dominated(&front, &means(&twins)), [set(&[1]), set(&[1])]);
    }

    #[test]
    fn parents_are_sampled_by_how_many_tasks_they_are_best_on() {
        // 0 is best on three tasks, 1 on one, 2 on none.
        let scores = vec![
            vec![1.0, 1.0, 1.0, 0.0],
            vec![0.0, 0.0, 0.0, 1.0],
            vec![0.5, 0.5, 0.5, 0.5],
        ];
        let front = per_task_best(&scores, 4);
        let m = means(&scores);
        assert_eq!(frequencies(&front, &m), [(0, 3), (1, 1)]);
        let mut rng = StdRng::seed_from_u64(3);
        let mut counts = [0usize; 3];
        for _ in 0..4000 {
            counts[sample_parent(&front, &m, &mut rng).expect("a parent")] += 1;
        }
        assert_eq!(counts[2], 0, "never best: never a parent");
        let ratio = counts[0] as f64 / counts[1] as f64;
        assert!((2.6..3.4).contains(&ratio), "about 3:1, got {counts:?}");
    }

    #[test]
    fn the_same_seed_samples_the_same_parents() {
        let scores = vec![vec![1.0, 0.0, 1.0], vec![0.0, 1.0, 0.0], vec![0.0, 0.0, 1.0]];
        let front = per_task_best(&scores, 3);
        let m = means(&scores);
        let draw = |seed| {
            let mut rng = StdRng::seed_from_u64(seed);
            (0..20).map(|_| sample_parent(&front, &m, &mut rng)).collect::<Vec<_>>()
        };
        assert_eq!(draw(9), draw(9));
        assert!(sample_parent(&[], &[], &mut StdRng::seed_from_u64(1)).is_none());
    }

    #[test]
    fn the_best_mean_prefers_the_older_on_ties() {
        assert_eq!(best_mean(&[0.5, 0.75, 0.75]), 1);
        assert_eq!(best_mean(&[0.5]), 0);
    }
}
