//! Failure-focused minibatches (`failure_focused_minibatches`): a parent's reflection minibatch
//! takes first train tasks the parent is known to fail (its recorded outcomes below
//! `perfect_score`), then the usual epoch-shuffled draw. A reflection on failures has more to
//! read, and on a task its parent already solves a child can at best tie.

use rand::Rng;
use rand::seq::SliceRandom;

/// The minibatch for a parent: up to `usual.len() - 1` of its `known_failures` (drawn at random
/// when there are more), then the tasks of `usual` (the usual draw) not already in, up to
/// `usual.len()` tasks. At least one task of the usual draw stays, so each reflection also sees
/// a task whose outcome was not known (and two reflections on the same failures differ); with a
/// minibatch of one task nothing changes. No known failure: `usual` as it is (and `rng` unused).
pub fn focus_on_failures(usual: Vec<usize>, mut known_failures: Vec<usize>, rng: &mut impl Rng) -> Vec<usize> {
    let size = usual.len();
    if known_failures.is_empty() || size < 2 {
        return usual;
    }
    known_failures.shuffle(rng);
    known_failures.truncate(size - 1);
    let mut batch = known_failures;
    for task in usual {
        if batch.len() == size {
            break;
        }
        if !batch.contains(&task) {
            batch.push(task);
        }
    }
    batch
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn known_failures_come_first_and_the_usual_draw_fills_the_rest() {
        let mut rng = StdRng::seed_from_u64(0);
        assert_eq!(focus_on_failures(vec![4, 5, 6], vec![9], &mut rng), vec![9, 4, 5]);
        // A known failure already in the usual draw is not taken twice.
        assert_eq!(focus_on_failures(vec![4, 5, 6], vec![5], &mut rng), vec![5, 4, 6]);
        // At most size - 1 failures: one task of the usual draw always stays.
        for seed in 0..20 {
            let mut rng = StdRng::seed_from_u64(seed);
            let batch = focus_on_failures(vec![4, 5, 6], vec![1, 2, 3, 7], &mut rng);
            assert_eq!(batch.len(), 3);
            assert!(batch[..2].iter().all(|t| [1, 2, 3, 7].contains(t)), "{batch:?}");
            assert_eq!(batch[2], 4, "{batch:?}");
        }
        let mut rng = StdRng::seed_from_u64(1);
        let batch = focus_on_failures(vec![1, 5, 6], vec![1, 2], &mut rng);
        assert_eq!(batch.len(), 3);
        assert!(
            batch[..2].contains(&1) && batch[..2].contains(&2) && batch[2] == 5,
            "{batch:?}"
        );
    }

    #[test]
    fn nothing_known_or_a_single_task_batch_keeps_the_usual_draw() {
        let mut rng = StdRng::seed_from_u64(0);
        assert_eq!(focus_on_failures(vec![4, 5, 6], Vec::new(), &mut rng), vec![4, 5, 6]);
        assert_eq!(focus_on_failures(vec![4], vec![1, 2], &mut rng), vec![4]);
    }

    #[test]
    fn the_same_seed_gives_the_same_minibatch() {
        let draw = |seed| {
            let mut rng = StdRng::seed_from_u64(seed);
            (0..8)
                .map(|_| focus_on_failures(vec![0, 1, 2], vec![10, 11, 12, 13, 14], &mut rng))
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(3), draw(3));
    }
}
