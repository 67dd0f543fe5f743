//! The TSC clock: cycles and [`Instant`]s for the stack.
//!
//! Polling loops read the TSC once per iteration and pass the result down;
//! the stack itself never reads a clock. Converting cycles to nanoseconds is a
//! multiply and a shift (no division).

use crate::stack::time::Instant;
use crate::sys;

/// The invariant TSC, calibrated by EAL.
#[derive(Debug, Clone, Copy)]
pub struct TscClock {
    hz: u64,
    origin: u64,
    /// Nanoseconds per cycle as a 32.32 fixed-point number.
    nanos_per_cycle: u64,
}

impl TscClock {
    /// A clock whose origin is now. Needs EAL (for the calibrated frequency).
    pub fn new() -> TscClock {
        // SAFETY: EAL calibrated the TSC during init; this reads the result.
        let hz = unsafe { sys::rte_get_tsc_hz() }.max(1);
        TscClock {
            hz,
            origin: Self::cycles(),
            nanos_per_cycle: ((1_000_000_000u128 << 32) / u128::from(hz)) as u64,
        }
    }

    /// The raw cycle counter.
    #[inline]
    pub fn cycles() -> u64 {
        // SAFETY: rdtsc has no preconditions.
        unsafe { sys::dps_rdtsc() }
    }

    /// Cycles per second.
    pub fn hz(&self) -> u64 {
        self.hz
    }

    /// Time since this clock's origin.
    #[inline]
    pub fn now(&self) -> Instant {
        self.instant_at(Self::cycles())
    }

    /// The instant at which the counter read `cycles`.
    #[inline]
    pub fn instant_at(&self, cycles: u64) -> Instant {
        let elapsed = cycles.saturating_sub(self.origin);
        Instant::from_nanos(((u128::from(elapsed) * u128::from(self.nanos_per_cycle)) >> 32) as u64)
    }

    /// Cycles in `duration` (for TSC-based timers such as a drain interval).
    pub fn cycles_in(&self, duration: std::time::Duration) -> u64 {
        (duration.as_nanos() * u128::from(self.hz) / 1_000_000_000) as u64
    }
}

impl Default for TscClock {
    fn default() -> Self {
        TscClock::new()
    }
}
