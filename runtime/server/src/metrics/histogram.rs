//! A Prometheus histogram counted with atomics only: prometheus-client's own `Histogram` takes a
//! mutex on every observation, and this one is observed on every request. Fixed bucket bounds;
//! encoded through prometheus-client like any of its metrics.

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::{MetricType, TypedMetric};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bucket bounds for HTTP request latency, in seconds (a long-poll wait lands in `+Inf`).
pub(crate) const REQUEST_SECONDS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Bucket bounds for LLM call latency, in seconds.
pub(crate) const LLM_CALL_SECONDS: &[f64] = &[0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0];

/// A histogram over fixed bounds; clones share the same counts.
#[derive(Debug, Clone)]
pub(crate) struct AtomicHistogram {
    inner: Arc<Counts>,
}

#[derive(Debug)]
struct Counts {
    /// Upper bounds, ascending, finite.
    bounds: &'static [f64],
    /// One count per bound, then the `+Inf` bucket (not cumulative).
    buckets: Box<[AtomicU64]>,
    count: AtomicU64,
    /// The sum of observations, as `f64` bits.
    sum: AtomicU64,
}

impl AtomicHistogram {
    /// An empty histogram over `bounds` (ascending, finite).
    pub(crate) fn new(bounds: &'static [f64]) -> Self {
        let buckets = (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect();
        Self {
            inner: Arc::new(Counts {
                bounds,
                buckets,
                count: AtomicU64::new(0),
                sum: AtomicU64::new(0f64.to_bits()),
            }),
        }
    }

    /// Counts one observation (a NaN is ignored: it belongs to no bucket).
    pub(crate) fn observe(&self, value: f64) {
        if value.is_nan() {
            return;
        }
        let counts = &self.inner;
        // The first bucket whose bound is at least `value`; past the last bound, `+Inf`.
        let index = counts.bounds.partition_point(|bound| *bound < value);
        if let Some(bucket) = counts.buckets.get(index) {
            bucket.fetch_add(1, Ordering::Relaxed);
        }
        counts.count.fetch_add(1, Ordering::Relaxed);
        // A compare-and-swap loop: never fails, as the closure always answers `Some`.
        let _ = counts.sum.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
            Some((f64::from_bits(bits) + value).to_bits())
        });
    }

    /// (sum, count, per-bucket counts with their upper bounds, `+Inf` last).
    fn snapshot(&self) -> (f64, u64, Vec<(f64, u64)>) {
        let counts = &self.inner;
        let buckets: Vec<(f64, u64)> = counts
            .bounds
            .iter()
            .copied()
            .chain(std::iter::once(f64::INFINITY))
            .zip(counts.buckets.iter().map(|bucket| bucket.load(Ordering::Relaxed)))
            .collect();
        // The count is the buckets' sum, so that `_count` and `le="+Inf"` always agree.
        let count = buckets.iter().map(|(_, n)| n).sum();
        (f64::from_bits(counts.sum.load(Ordering::Relaxed)), count, buckets)
    }
}

impl TypedMetric for AtomicHistogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for AtomicHistogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let (sum, count, buckets) = self.snapshot();
        encoder.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_observation_lands_in_the_first_bucket_whose_bound_holds_it() {
        let histogram = AtomicHistogram::new(&[0.1, 1.0]);
        for value in [0.05, 0.1, 0.5, 1.0, 7.0, f64::NAN] {
            histogram.observe(value);
        }
        let (sum, count, buckets) = histogram.snapshot();
        assert_eq!(count, 5);
        assert!((sum - 8.65).abs() < 1e-9, "sum {sum}");
        assert_eq!(buckets, vec![(0.1, 2), (1.0, 2), (f64::INFINITY, 1)]);
    }

    #[test]
    fn clones_share_their_counts() {
        let histogram = AtomicHistogram::new(REQUEST_SECONDS);
        histogram.clone().observe(0.002);
        assert_eq!(histogram.snapshot().1, 1);
    }
}
