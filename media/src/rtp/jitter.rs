//! Interarrival jitter (RFC 3550 section 6.4.1, Appendix A.8), in integers.
//!
//! Arrival times are converted to the RTP clock of the stream
//! ([`rtp_units`]), so the transit time `arrival - timestamp` is in RTP
//! units with an arbitrary offset that cancels out. For consecutive packets
//! `D = transit_j - transit_i`, and the estimate moves 1/16 of the way to
//! `|D|`. As A.8's integer form does, the estimate is kept scaled by 16:
//! `jitter += |D| - ((jitter + 8) >> 4)`, reported as `jitter >> 4`.
//!
//! Invariants: transit and `D` use wrapping 32-bit arithmetic (timestamps and
//! converted arrival times both wrap), `|D|` is below 2^31, and the scaled
//! estimate stays below 2^36 in a `u64`, so nothing overflows.

use dpstack_stack::time::Instant;

const NANOS_PER_SEC: u64 = 1_000_000_000;

/// `arrival` on a `clock_rate` Hz clock, truncated to 32 bits like an RTP
/// timestamp (only differences matter). Per packet: whole seconds and the
/// remainder converted apart, `floor(ns * rate / 1e9) = s * rate +
/// floor(r * rate / 1e9)` exactly, each in 64 bits (`r * rate < 2^62`) with
/// divisions by a constant, which compile to multiplies (a 128-bit
/// division was a library call).
#[inline]
pub fn rtp_units(arrival: Instant, clock_rate: u32) -> u32 {
    let nanos = arrival.as_nanos();
    let rate = u64::from(clock_rate);
    let (secs, rest) = (nanos / NANOS_PER_SEC, nanos % NANOS_PER_SEC);
    let ticks = secs
        .wrapping_mul(rate)
        .wrapping_add(rest * rate / NANOS_PER_SEC);
    // Keep the low 32 bits: RTP time wraps the same way.
    ticks as u32
}

/// [`rtp_units`] with its last answer remembered. The datagrams of one
/// receive burst share their arrival time and most streams share a clock
/// rate, so one lcore's memo converts once a burst instead of once a
/// packet (the conversion is about 15 instructions; the test is two
/// compares). Owned by one lcore's receive path.
#[derive(Debug, Clone, Copy)]
pub struct ArrivalClock {
    at: Instant,
    /// 0 until the first conversion: no conversion is asked at rate 0 (a
    /// stream without a clock keeps no jitter).
    rate: u32,
    units: u32,
}

impl ArrivalClock {
    /// A memo that remembers nothing yet.
    pub const fn new() -> ArrivalClock {
        ArrivalClock {
            at: Instant::ZERO,
            rate: 0,
            units: 0,
        }
    }

    /// `rtp_units(arrival, clock_rate)`, converted only when either
    /// differs from the last call's. Per packet.
    #[inline]
    pub fn units(&mut self, arrival: Instant, clock_rate: u32) -> u32 {
        if arrival != self.at || clock_rate != self.rate {
            *self = ArrivalClock {
                at: arrival,
                rate: clock_rate,
                units: rtp_units(arrival, clock_rate),
            };
        }
        self.units
    }
}

impl Default for ArrivalClock {
    fn default() -> ArrivalClock {
        ArrivalClock::new()
    }
}

/// Appendix A.8's jitter estimator for one source.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Jitter {
    /// The previous packet's transit time, once there is one.
    transit: Option<u32>,
    /// The estimate times 16.
    scaled: u64,
}

impl Jitter {
    /// No packet seen, jitter 0.
    pub const fn new() -> Jitter {
        Jitter {
            transit: None,
            scaled: 0,
        }
    }

    /// Forgets the previous transit time (after a resync, when timestamps
    /// start again): the next packet only sets the reference. The estimate
    /// itself is kept.
    pub fn restart(&mut self) {
        self.transit = None;
    }

    /// Takes one packet: its arrival in RTP units and its RTP timestamp.
    pub fn update(&mut self, arrival: u32, timestamp: u32) {
        let transit = arrival.wrapping_sub(timestamp);
        if let Some(previous) = self.transit {
            // Reinterpreting the wrapped difference as signed gives D.
            let d = u64::from((transit.wrapping_sub(previous) as i32).unsigned_abs());
            self.scaled = self.scaled - ((self.scaled + 8) >> 4) + d;
        }
        self.transit = Some(transit);
    }

    /// The estimate times 16 (A.8's integer `jitter`).
    pub fn scaled(&self) -> u64 {
        self.scaled
    }

    /// The estimate in RTP timestamp units, as a report block carries it.
    pub fn value(&self) -> u32 {
        u32::try_from(self.scaled >> 4).unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Instant {
        Instant::from_nanos(n * 1_000_000)
    }

    #[test]
    fn the_memo_answers_as_the_conversion_for_any_order_of_arrivals_and_rates() {
        let mut clock = ArrivalClock::new();
        // A burst (one arrival, two rates, back and forth), the next burst,
        // the epoch itself first at rate 0, then at a real rate.
        let calls = [
            (ms(0), 0),
            (ms(0), 8000),
            (ms(20), 8000),
            (ms(20), 8000),
            (ms(20), 48_000),
            (ms(20), 8000),
            (ms(40), 90_000),
            (Instant::from_nanos(u64::MAX), 8000),
            (ms(40), 90_000),
        ];
        for (arrival, rate) in calls {
            assert_eq!(
                clock.units(arrival, rate),
                rtp_units(arrival, rate),
                "{arrival:?} at {rate} Hz"
            );
        }
    }

    #[test]
    fn conversion_matches_the_exact_128_bit_formula() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let rates = [0, 1, 8000, 16_000, 48_000, 90_000, u32::MAX];
        for i in 0..100_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let nanos = if i % 2 == 0 { x } else { x >> (i % 64) };
            let rate = rates[(i % rates.len() as u64) as usize];
            let exact = (u128::from(nanos) * u128::from(rate) / 1_000_000_000) as u32;
            assert_eq!(
                rtp_units(Instant::from_nanos(nanos), rate),
                exact,
                "{nanos} {rate}"
            );
        }
    }

    #[test]
    fn conversion_to_rtp_units() {
        assert_eq!(rtp_units(ms(20), 8000), 160);
        assert_eq!(rtp_units(ms(1000), 90_000), 90_000);
        // 1 ms less 1 ns at 8 kHz: 7.999992 ticks, truncated to 7.
        assert_eq!(rtp_units(Instant::from_nanos(999_999), 8000), 7);
        // 2^32 ticks at 8 kHz (about 6.2 days) wraps to 0.
        let wrap = Instant::from_nanos((1u64 << 32) * 125_000);
        assert_eq!(rtp_units(wrap, 8000), 0);
        assert_eq!(rtp_units(Instant::from_nanos(u64::MAX), 0), 0);
    }

    #[test]
    fn hand_computed_sequence() {
        // G.711: 160 samples (20 ms) per packet at 8000 Hz.
        // packet  timestamp  arrival   in units  transit  |D|  scaled
        //   0         0        0 ms        0        0      -      0
        //   1       160       20 ms      160        0      0      0
        //   2       320       50 ms      400       80     80     80     (J 5)
        //   3       480       60 ms      480        0     80     80 - (88>>4 = 5) + 80 = 155 (J 9)
        //   4       640       80 ms      640        0      0    155 - (163>>4 = 10) = 145 (J 9)
        //   5       800      110 ms      880       80     80    145 - (153>>4 = 9) + 80 = 216 (J 13)
        // (In floating point: 5, 9.6875, 9.082, 13.514.)
        let mut j = Jitter::new();
        let arrivals = [0, 20, 50, 60, 80, 110];
        let expected_scaled = [0, 0, 80, 155, 145, 216];
        for (i, (&at, &want)) in arrivals.iter().zip(&expected_scaled).enumerate() {
            j.update(rtp_units(ms(at), 8000), 160 * i as u32);
            assert_eq!(j.scaled(), want, "packet {i}");
        }
        assert_eq!(j.value(), 13);
    }

    #[test]
    fn wrapping_timestamps_and_negative_d() {
        // The timestamp wraps between the two packets and the second arrives
        // early relative to the first: D = -40, |D| = 40 -> scaled 40.
        let mut j = Jitter::new();
        j.update(1000, u32::MAX - 79);
        j.update(1120, 80);
        assert_eq!((j.scaled(), j.value()), (40, 2));
        // After a restart the next packet only sets the reference.
        j.restart();
        j.update(0, 123_456);
        assert_eq!(j.scaled(), 40);
    }
}
