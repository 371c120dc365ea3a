//! Latency samples and the figures printed for a scenario: operations per
//! second and p50/p99/max latency (nearest-rank percentiles over every
//! sample, kept in a plain `Vec`: a run holds at most a few hundred
//! thousand samples, so exact percentiles cost nothing worth a histogram).

use std::fmt;
use std::time::Duration;

/// Every latency observed in one scenario.
#[derive(Debug, Default, Clone)]
pub struct Latencies {
    samples: Vec<Duration>,
}

impl Latencies {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Record one observation.
    pub fn record(&mut self, d: Duration) {
        self.samples.push(d);
    }

    /// Take in every observation of `other`.
    pub fn merge(&mut self, other: Latencies) {
        self.samples.extend(other.samples);
    }

    /// The nearest-rank percentile `p` (0 < p ≤ 100); `None` if empty.
    pub fn percentile(&self, p: f64) -> Option<Duration> {
        let mut sorted = self.samples.clone();
        sorted.sort_unstable();
        nearest_rank(&sorted, p)
    }

    /// Summarise, with `elapsed` the wall time the operations took together.
    pub fn summary(&self, elapsed: Duration) -> Summary {
        let mut sorted = self.samples.clone();
        sorted.sort_unstable();
        let secs = elapsed.as_secs_f64();
        Summary {
            ops: sorted.len(),
            elapsed,
            ops_per_sec: if secs > 0.0 {
                sorted.len() as f64 / secs
            } else {
                0.0
            },
            p50: nearest_rank(&sorted, 50.0).unwrap_or_default(),
            p99: nearest_rank(&sorted, 99.0).unwrap_or_default(),
            max: sorted.last().copied().unwrap_or_default(),
        }
    }
}

/// The smallest sample with at least `p` percent of the samples at or
/// below it.
fn nearest_rank(sorted: &[Duration], p: f64) -> Option<Duration> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    let idx = rank.clamp(1, sorted.len()) - 1;
    sorted.get(idx).copied()
}

/// The figures of one scenario.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Operations completed.
    pub ops: usize,
    /// Wall time of the whole scenario.
    pub elapsed: Duration,
    /// `ops / elapsed`.
    pub ops_per_sec: f64,
    /// Median latency.
    pub p50: Duration,
    /// 99th percentile latency.
    pub p99: Duration,
    /// Slowest operation.
    pub max: Duration,
}

/// A duration as milliseconds with three decimals (`1.234 ms`).
pub fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:>7} ops in {:>8.3} s = {:>9.1} ops/s; p50 {:>11}  p99 {:>11}  max {:>11}",
            self.ops,
            self.elapsed.as_secs_f64(),
            self.ops_per_sec,
            ms(self.p50),
            ms(self.p99),
            ms(self.max)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn millis(v: &[u64]) -> Latencies {
        let mut l = Latencies::new();
        for m in v {
            l.record(Duration::from_millis(*m));
        }
        l
    }

    #[test]
    fn percentiles_are_nearest_rank_over_every_sample() {
        let l = millis(&(1..=100).rev().collect::<Vec<_>>());
        let s = l.summary(Duration::from_secs(2));
        assert_eq!(s.ops, 100);
        assert_eq!(s.p50, Duration::from_millis(50));
        assert_eq!(s.p99, Duration::from_millis(99));
        assert_eq!(s.max, Duration::from_millis(100));
        assert!((s.ops_per_sec - 50.0).abs() < 1e-9);
    }

    #[test]
    fn a_single_sample_is_every_percentile() {
        let l = millis(&[7]);
        assert_eq!(l.percentile(1.0), Some(Duration::from_millis(7)));
        assert_eq!(l.percentile(100.0), Some(Duration::from_millis(7)));
    }

    #[test]
    fn an_empty_set_summarises_as_zeros() {
        let s = Latencies::new().summary(Duration::ZERO);
        assert_eq!(s.ops, 0);
        assert_eq!(s.ops_per_sec, 0.0);
        assert_eq!(s.max, Duration::ZERO);
        assert_eq!(Latencies::new().percentile(50.0), None);
    }

    #[test]
    fn merging_keeps_every_sample() {
        let mut a = millis(&[1, 2]);
        a.merge(millis(&[3]));
        assert_eq!(a.summary(Duration::from_secs(1)).ops, 3);
        assert_eq!(a.percentile(100.0), Some(Duration::from_millis(3)));
    }
}
