//! A lock-free latency histogram: log buckets a quarter of a binary order apart (each
//! bucket's upper edge is ~19 % above its lower one), from 1 µs to ~9 hours. Recording is
//! one atomic add; quantiles are read at scrape time, reported at the bucket's upper edge
//! (never low), as Kafka's request-time summaries are read by operators: p50/p75/p95/p98/
//! p99/p999.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

const STEPS_PER_DOUBLING: f64 = 4.0;
const BUCKETS: usize = 140;

pub struct Histogram {
    buckets: [AtomicU64; BUCKETS],
    count: AtomicU64,
    sum_us: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            count: AtomicU64::new(0),
            sum_us: AtomicU64::new(0),
        }
    }
}

fn bucket_of(us: u64) -> usize {
    if us <= 1 {
        return 0;
    }
    let index = ((us as f64).log2() * STEPS_PER_DOUBLING).ceil() as usize;
    index.min(BUCKETS - 1)
}

fn upper_edge_us(bucket: usize) -> f64 {
    (bucket as f64 / STEPS_PER_DOUBLING).exp2()
}

impl Histogram {
    pub fn record(&self, took: Duration) {
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.buckets[bucket_of(us)].fetch_add(1, Relaxed);
        self.count.fetch_add(1, Relaxed);
        self.sum_us.fetch_add(us, Relaxed);
    }

    #[must_use]
    pub fn count(&self) -> u64 {
        self.count.load(Relaxed)
    }

    #[must_use]
    pub fn sum_ms(&self) -> f64 {
        self.sum_us.load(Relaxed) as f64 / 1000.0
    }

    /// The `q` quantile (0..=1) in milliseconds; 0 before anything was recorded.
    #[must_use]
    pub fn quantile_ms(&self, q: f64) -> f64 {
        let counts: Vec<u64> = self.buckets.iter().map(|b| b.load(Relaxed)).collect();
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return 0.0;
        }
        let rank = ((total as f64 * q).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, c) in counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return upper_edge_us(i) / 1000.0;
            }
        }
        upper_edge_us(BUCKETS - 1) / 1000.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_err_high_by_at_most_a_bucket() {
        let h = Histogram::default();
        for ms in 1..=1000u64 {
            h.record(Duration::from_millis(ms));
        }
        assert_eq!(h.count(), 1000);
        for (q, exact) in [(0.5, 500.0), (0.99, 990.0), (0.999, 999.0)] {
            let got = h.quantile_ms(q);
            assert!(
                got >= exact && got <= exact * 1.19 + 0.01,
                "{q}: {got} vs {exact}"
            );
        }
        assert!((h.sum_ms() - 500_500.0).abs() < 1.0);
        assert_eq!(Histogram::default().quantile_ms(0.99), 0.0);
    }

    #[test]
    fn extremes_stay_in_range() {
        let h = Histogram::default();
        h.record(Duration::ZERO);
        h.record(Duration::from_secs(100_000));
        assert_eq!(h.count(), 2);
        assert!(h.quantile_ms(1.0) > 1e6);
    }
}
