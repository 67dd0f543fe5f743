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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_instead_of_panicking() {
        let t = Instant::from_nanos(1_000);
        assert_eq!(t + Duration::from_micros(1), Instant::from_nanos(2_000));
        assert_eq!(Instant::ZERO - t, Duration::ZERO);
        assert_eq!(t - Instant::ZERO, Duration::from_nanos(1_000));
        assert_eq!(t + Duration::MAX, Instant::from_nanos(u64::MAX));
    }
}
