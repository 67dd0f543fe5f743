//! RFC 5961 section 7's limit on challenge ACKs, one per stack (lcore),
//! as Linux's `tcp_challenge_ack_limit`: about `limit` a second, however
//! many connections the segments that provoke them aim at.
//!
//! The budget of each second is drawn afresh between half and one and a
//! half times the limit (its mean is the limit), as Linux does since
//! CVE-2016-5696: with a fixed count, an off-path attacker who spends the
//! budget with segments of its own can tell from the challenge ACKs it
//! still gets whether its guesses at another connection provoked some,
//! and so find the connection and its window.
//!
//! Sans-IO: `now` comes in; seconds are counted on that clock. Owning
//! lcore only; no allocation.

use crate::time::Instant;

/// The limiter. See the module documentation.
#[derive(Debug, Clone)]
pub struct ChallengeAckLimit {
    /// Challenge ACKs a second on average (`u32::MAX`: no limit).
    limit: u32,
    /// The second the budget was drawn for.
    second: Option<u64>,
    /// What is left of it.
    left: u32,
    /// xorshift64 state (never 0).
    rng: u64,
}

impl ChallengeAckLimit {
    /// About `limit` challenge ACKs a second (`u32::MAX` turns the limit
    /// off); `seed` randomises the budgets (use a secret value).
    pub fn new(limit: u32, seed: u64) -> ChallengeAckLimit {
        ChallengeAckLimit {
            limit,
            second: None,
            left: 0,
            rng: seed | 1,
        }
    }

    /// May a challenge ACK go at `now`? Takes one from the second's budget
    /// if so.
    pub fn allow(&mut self, now: Instant) -> bool {
        if self.limit == u32::MAX {
            return true;
        }
        let second = now.as_nanos() / 1_000_000_000;
        if self.second != Some(second) {
            self.second = Some(second);
            // Linux: half + a uniform draw below the limit.
            let half = self.limit.div_ceil(2);
            self.left = half + (self.next_random() % u64::from(self.limit.max(1))) as u32;
        }
        if self.left == 0 {
            return false;
        }
        self.left -= 1;
        true
    }

    fn next_random(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: f64) -> Instant {
        Instant::from_nanos((seconds * 1e9) as u64)
    }

    /// Challenge ACKs allowed out of 10,000 asked for within second `s`.
    fn budget(limit: &mut ChallengeAckLimit, s: u64) -> u32 {
        (0..10_000)
            .map(|i| limit.allow(at(s as f64 + f64::from(i) / 10_001.0)))
            .filter(|&ok| ok)
            .count() as u32
    }

    #[test]
    fn each_second_allows_a_random_budget_around_the_limit() {
        let mut limit = ChallengeAckLimit::new(1000, 0x5eed);
        let budgets: Vec<u32> = (0..20).map(|s| budget(&mut limit, s)).collect();
        assert!(
            budgets.iter().all(|b| (500..1500).contains(b)),
            "{budgets:?}"
        );
        let mean = budgets.iter().sum::<u32>() / 20;
        assert!((800..1200).contains(&mean), "mean {mean}: {budgets:?}");
        assert!(
            budgets.windows(2).any(|w| w[0] != w[1]),
            "an attacker must not be able to count on the budget: {budgets:?}"
        );
    }

    #[test]
    fn the_limit_can_be_turned_off() {
        let mut limit = ChallengeAckLimit::new(u32::MAX, 1);
        assert_eq!(budget(&mut limit, 0), 10_000);
    }
}
