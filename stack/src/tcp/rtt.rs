//! The retransmission timer's estimate (RFC 6298): smoothed RTT and its
//! variation from samples (timestamps, or one timed segment at a time per
//! Karn's algorithm), the RTO bounded by the configured minimum and
//! maximum, doubled per expiry.

use crate::time::Duration;

/// RFC 6298's estimator.
#[derive(Debug, Clone)]
pub struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
    rto: Duration,
    min: Duration,
    max: Duration,
    /// Consecutive expiries (each doubles the timeout).
    backoff: u32,
}

impl RttEstimator {
    /// Before any sample: `initial`, kept within `[min, max]`.
    pub fn new(initial: Duration, min: Duration, max: Duration) -> RttEstimator {
        RttEstimator {
            srtt: None,
            rttvar: Duration::ZERO,
            rto: initial.max(min).min(max),
            min,
            max,
            backoff: 0,
        }
    }

    /// Takes one round-trip sample (RFC 6298 2.2, 2.3); clears the backoff.
    pub fn sample(&mut self, rtt: Duration) {
        match self.srtt {
            None => {
                self.srtt = Some(rtt);
                self.rttvar = rtt / 2;
            }
            Some(srtt) => {
                let delta = srtt.abs_diff(rtt);
                self.rttvar = (self.rttvar * 3 + delta) / 4;
                self.srtt = Some((srtt * 7 + rtt) / 8);
            }
        }
        let srtt = self.srtt.unwrap_or(rtt);
        // G (the clock granularity) is a microsecond or less here.
        self.rto = (srtt + self.rttvar * 4).max(self.min).min(self.max);
        self.backoff = 0;
    }

    /// The timeout to arm now (backed off).
    pub fn rto(&self) -> Duration {
        let factor = 1u32 << self.backoff.min(16);
        (self.rto * factor).min(self.max)
    }

    /// The timer expired: double the next timeout (RFC 6298 5.5).
    pub fn back_off(&mut self) {
        self.backoff = self.backoff.saturating_add(1);
    }

    /// The smoothed RTT, once there is one.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn rfc_6298_arithmetic_and_bounds() {
        let mut r = RttEstimator::new(ms(1000), ms(200), ms(60_000));
        assert_eq!(r.rto(), ms(1000));
        r.sample(ms(100));
        // SRTT 100, RTTVAR 50: 100 + 4 * 50 = 300.
        assert_eq!(r.rto(), ms(300));
        r.sample(ms(100));
        // RTTVAR 3/4 * 50 = 37.5; RTO 100 + 150 = 250.
        assert_eq!(r.rto(), Duration::from_micros(250_000));
        r.sample(ms(1));
        assert!(r.rto() >= ms(200), "never under the minimum");
        r.back_off();
        r.back_off();
        assert_eq!(r.rto(), r.rto.min(ms(60_000)) * 4);
        for _ in 0..40 {
            r.back_off();
        }
        assert_eq!(r.rto(), ms(60_000), "never over the maximum");
    }
}
