//! A token bucket, for rate-limiting ICMP errors (time passed in).

use crate::time::Instant;

/// Allows `rate` events per second on average, `burst` at once.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    rate: u64,
    burst: u64,
    /// Tokens, scaled by 10^9 so refills are exact integer nanoseconds.
    tokens: u64,
    last: Instant,
}

const SCALE: u64 = 1_000_000_000;

impl TokenBucket {
    /// A full bucket.
    pub fn new(rate: u64, burst: u64) -> TokenBucket {
        TokenBucket {
            rate,
            burst,
            tokens: burst * SCALE,
            last: Instant::ZERO,
        }
    }

    /// Takes one token if there is one.
    pub fn take(&mut self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.last).as_nanos() as u64;
        self.last = self.last.max(now);
        self.tokens = self
            .tokens
            .saturating_add(elapsed.saturating_mul(self.rate))
            .min(self.burst * SCALE);
        if self.tokens >= SCALE {
            self.tokens -= SCALE;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bursts_then_refills_at_the_rate() {
        let mut bucket = TokenBucket::new(10, 3);
        let t0 = Instant::from_nanos(0);
        assert!((0..3).all(|_| bucket.take(t0)));
        assert!(!bucket.take(t0));
        assert!(
            bucket.take(Instant::from_nanos(100_000_000)),
            "one token per 100 ms"
        );
        assert!(!bucket.take(Instant::from_nanos(100_000_000)));
    }
}
