//! Time as the stack sees it: a monotonic [`Instant`] passed in by the caller.
//!
//! The stack never reads a clock. Drivers read the TSC once per loop and hand
//! the result to every entry point; tests drive a virtual clock that starts at
//! zero, so a 60-second timer costs nothing to test.

use core::ops::{Add, Sub};
pub use core::time::Duration;

/// A point on a monotonic clock, in nanoseconds since an arbitrary origin
/// (process start for the TSC clock, zero for a test clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(u64);

impl Instant {
    /// The clock's origin.
    pub const ZERO: Instant = Instant(0);

    /// An instant `nanos` nanoseconds after the origin.
    pub const fn from_nanos(nanos: u64) -> Instant {
        Instant(nanos)
    }

    /// Nanoseconds since the origin.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Time elapsed from `earlier` to `self`, or zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;

    fn add(self, rhs: Duration) -> Instant {
        let nanos = u64::try_from(rhs.as_nanos()).unwrap_or(u64::MAX);
        Instant(self.0.saturating_add(nanos))
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;

    fn sub(self, rhs: Instant) -> Duration {
        self.saturating_duration_since(rhs)
    }
}

/// An [`Instant`] in 4 bytes, for state kept per segment or per
/// connection: microseconds, wrapping every 71 minutes. Only the time since
/// a recent stamp is read back (up to half the wrap, 35 minutes), so the
/// wrap never shows; older stamps read as taken just now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stamp(u32);

impl Stamp {
    /// `t`, to the microsecond.
    pub fn of(t: Instant) -> Stamp {
        Stamp((t.0 / 1_000) as u32)
    }

    /// Time from the stamp to `now` (zero if `now` is earlier, or the stamp
    /// is older than half the wrap).
    pub fn age(self, now: Instant) -> Duration {
        let micros = Stamp::of(now).0.wrapping_sub(self.0);
        if micros > u32::MAX / 2 {
            Duration::ZERO
        } else {
            Duration::from_micros(u64::from(micros))
        }
    }

    /// When `wait` after the stamp is, seen from `now` (`now` itself if
    /// that has passed).
    pub fn plus(self, wait: Duration, now: Instant) -> Instant {
        now + wait.saturating_sub(self.age(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_read_back_ages_and_deadlines_across_the_wrap() {
        let ms = |n: u64| Duration::from_millis(n);
        let wrap = Instant::from_nanos((1u64 << 32) * 1_000 - 3_000_000);
        for base in [Instant::ZERO + ms(5), wrap] {
            let stamp = Stamp::of(base);
            assert_eq!(stamp.age(base + ms(10)), ms(10));
            assert_eq!(stamp.plus(ms(25), base + ms(10)), base + ms(25));
            assert_eq!(stamp.plus(ms(5), base + ms(10)), base + ms(10), "passed");
        }
        assert_eq!(
            Stamp::of(Instant::ZERO + ms(10)).age(Instant::ZERO),
            Duration::ZERO
        );
    }

    #[test]
    fn arithmetic_saturates_instead_of_panicking() {
        let t = Instant::from_nanos(1_000);
        assert_eq!(t + Duration::from_micros(1), Instant::from_nanos(2_000));
        assert_eq!(Instant::ZERO - t, Duration::ZERO);
        assert_eq!(t - Instant::ZERO, Duration::from_nanos(1_000));
        assert_eq!(t + Duration::MAX, Instant::from_nanos(u64::MAX));
    }
}
