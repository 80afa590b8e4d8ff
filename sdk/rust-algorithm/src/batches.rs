//! Endless batches over a dataset: each epoch is a fresh shuffle, and a batch never holds the
//! same task twice (when an epoch runs out mid-batch, the batch is completed from the next
//! epoch's shuffle, skipping tasks it already holds). A batch is at most the dataset's size.
//! APO's train and val batches and GEPA's reflection minibatches; deterministic under a seeded
//! `rand` generator, so a resumed run draws the same batches again.

use rand::Rng;
use rand::seq::SliceRandom;

#[derive(Debug, Clone)]
pub struct BatchIterator {
    len: usize,
    batch_size: usize,
    /// The current epoch's order; `position` is the next index to hand out.
    order: Vec<usize>,
    position: usize,
    epochs: u32,
}

impl BatchIterator {
    /// Batches of `batch_size` (at least 1, at most `len`) indices into a dataset of `len` tasks.
    pub fn new(len: usize, batch_size: usize) -> Self {
        Self {
            len,
            batch_size: batch_size.clamp(1, len.max(1)),
            order: Vec::new(),
            position: 0,
            epochs: 0,
        }
    }

    /// Epochs started so far.
    pub fn epochs(&self) -> u32 {
        self.epochs
    }

    fn new_epoch(&mut self, rng: &mut impl Rng) {
        self.order = (0..self.len).collect();
        self.order.shuffle(rng);
        self.position = 0;
        self.epochs += 1;
    }

    /// The next batch of task indices; empty for an empty dataset.
    pub fn next_batch(&mut self, rng: &mut impl Rng) -> Vec<usize> {
        if self.len == 0 {
            return Vec::new();
        }
        let mut batch = Vec::with_capacity(self.batch_size);
        while batch.len() < self.batch_size {
            if self.position >= self.order.len() {
                self.new_epoch(rng);
                // Tasks already in this batch go to the end of the new epoch instead.
                let (held, fresh): (Vec<usize>, Vec<usize>) =
                    self.order.iter().partition(|index| batch.contains(*index));
                self.order = fresh.into_iter().chain(held).collect();
            }
            let index = self.order[self.position];
            self.position += 1;
            if !batch.contains(&index) {
                batch.push(index);
            }
        }
        batch
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;
    use std::collections::BTreeSet;

    #[test]
    fn batches_never_repeat_a_task_and_each_epoch_covers_the_dataset() {
        let mut rng = StdRng::seed_from_u64(1);
        let mut batches = BatchIterator::new(10, 4);
        let mut seen_in_first_epoch = BTreeSet::new();
        for round in 0..50 {
            let batch = batches.next_batch(&mut rng);
            assert_eq!(batch.len(), 4);
            let unique: BTreeSet<_> = batch.iter().collect();
            assert_eq!(unique.len(), 4, "repeat in {batch:?}");
            if round < 2 {
                seen_in_first_epoch.extend(batch);
            }
        }
        // The first two batches come from one shuffle: 8 distinct tasks.
        assert_eq!(seen_in_first_epoch.len(), 8);
    }

    #[test]
    fn each_epoch_is_reshuffled() {
        let mut rng = StdRng::seed_from_u64(7);
        let mut batches = BatchIterator::new(6, 6);
        let first = batches.next_batch(&mut rng);
        let orders: BTreeSet<Vec<usize>> = (0..5).map(|_| batches.next_batch(&mut rng)).collect();
        assert!(orders.len() > 1 || !orders.contains(&first), "the order never changed");
        assert_eq!(batches.epochs(), 6);
    }

    #[test]
    fn a_batch_is_at_most_the_dataset_and_empty_data_gives_nothing() {
        let mut rng = StdRng::seed_from_u64(3);
        let mut small = BatchIterator::new(3, 16);
        let batch = small.next_batch(&mut rng);
        assert_eq!(batch.iter().collect::<BTreeSet<_>>().len(), 3);
        assert!(BatchIterator::new(0, 4).next_batch(&mut rng).is_empty());
    }

    #[test]
    fn the_same_seed_gives_the_same_batches() {
        let run = |seed| {
            let mut rng = StdRng::seed_from_u64(seed);
            let mut batches = BatchIterator::new(9, 4);
            (0..6).map(|_| batches.next_batch(&mut rng)).collect::<Vec<_>>()
        };
        assert_eq!(run(42), run(42));
        assert_ne!(run(42), run(43));
    }
}
