//! The rate limit of mirrored Events: a token bucket per key, in the shape
//! of client-go's `EventSourceObjectSpamFilter` (`tools/record`,
//! `defaultSpamBurst` 25, `defaultSpamQPS` 1/300: a burst of 25, then one
//! more every 5 minutes). Pure: the caller gives the time.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::{Duration, Instant};

/// client-go's `defaultSpamBurst`.
pub const BURST: u32 = 25;
/// client-go's `defaultSpamQPS` (1/300): one token every 5 minutes.
pub const REFILL_EVERY: Duration = Duration::from_secs(300);

#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// One token bucket per key, each `burst` deep, refilled with one token
/// every `every`. A key whose bucket is full again is forgotten
/// ([`Limiter::prune`]), so the map holds only keys that spent recently.
#[derive(Debug)]
pub struct Limiter<K> {
    burst: f64,
    every: Duration,
    buckets: HashMap<K, Bucket>,
}

impl<K: Eq + Hash + Clone> Limiter<K> {
    /// Buckets of `burst` tokens, one more every `every`.
    pub fn new(burst: u32, every: Duration) -> Self {
        Self {
            burst: f64::from(burst.max(1)),
            every: every.max(Duration::from_millis(1)),
            buckets: HashMap::new(),
        }
    }

    fn refilled(&self, b: Bucket, now: Instant) -> Bucket {
        let gained = now.saturating_duration_since(b.at).as_secs_f64() / self.every.as_secs_f64();
        Bucket {
            tokens: (b.tokens + gained).min(self.burst),
            at: now,
        }
    }

    /// Take a token of `key`'s bucket at `now`; `false` when it is empty.
    pub fn try_take(&mut self, key: &K, now: Instant) -> bool {
        let full = Bucket {
            tokens: self.burst,
            at: now,
        };
        let b = self.buckets.get(key).copied().unwrap_or(full);
        let mut b = self.refilled(b, now);
        let took = b.tokens >= 1.0;
        if took {
            b.tokens -= 1.0;
        }
        self.buckets.insert(key.clone(), b);
        took
    }

    /// Forget the keys whose bucket is full again at `now`.
    pub fn prune(&mut self, now: Instant) {
        let (burst, every) = (self.burst, self.every);
        self.buckets.retain(|_, b| {
            let gained = now.saturating_duration_since(b.at).as_secs_f64() / every.as_secs_f64();
            b.tokens + gained < burst
        });
    }

    /// How many keys have spent tokens not yet refilled (as last pruned).
    pub fn len(&self) -> usize {
        self.buckets.len()
    }

    /// Whether no key has spent a token since the last prune.
    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_one_token_per_period_per_key() {
        let mut l = Limiter::new(BURST, REFILL_EVERY);
        let t0 = Instant::now();
        for i in 0..BURST {
            assert!(l.try_take(&"a", t0), "token {i} of the burst");
        }
        assert!(!l.try_take(&"a", t0), "the 26th at once is refused");
        assert!(l.try_take(&"b", t0), "another key has its own bucket");
        assert!(!l.try_take(&"a", t0 + Duration::from_secs(299)));
        assert!(l.try_take(&"a", t0 + Duration::from_secs(300 + 299)));
        assert!(!l.try_take(&"a", t0 + Duration::from_secs(300 + 299)));
        // Pruning keeps spent buckets ("a") and forgets full ones ("b"
        // spent one token, refilled after 5 minutes).
        l.prune(t0 + Duration::from_secs(600));
        assert_eq!(l.len(), 1);
        assert!(!l.try_take(&"a", t0 + Duration::from_secs(600)));
        l.prune(t0 + REFILL_EVERY * (BURST + 2));
        assert!(l.is_empty());
    }
}
