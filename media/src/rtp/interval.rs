//! The RTCP transmission interval (RFC 3550 section 6.3.1, Appendix A.7) as
//! a pure function: the random factor is an argument, so the result is
//! deterministic and the caller picks the random source.
//!
//! The deterministic interval is `avg_rtcp_size * n / rtcp_bw`, where, if
//! senders are at most a quarter of the members, senders share a quarter of
//! the RTCP bandwidth among themselves and receivers the rest; otherwise
//! everyone shares all of it. It is at least 5 s (2.5 s before our first
//! RTCP packet). The result is that times a factor in [0.5, 1.5], divided by
//! `e - 3/2` to make up for timer reconsideration's bias toward early
//! sends.
//!
//! Invariants: no input panics. The random factor is clamped into
//! [0.5, 1.5] (NaN counts as 1); a bandwidth that is not a positive finite
//! number, like zero members, leaves only the minimum interval.

use dpstack_stack::time::Duration;

/// The minimum interval, before halving for the first packet (6.2).
pub const RTCP_MIN_TIME_SECS: f64 = 5.0;
/// The senders' share of the RTCP bandwidth when they are few (6.2).
pub const RTCP_SENDER_BW_FRACTION: f64 = 0.25;
/// `e - 3/2` (A.7 writes e as 2.71828; this uses the exact constant).
pub const COMPENSATION: f64 = core::f64::consts::E - 1.5;

/// What the interval depends on (A.7's parameters).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct IntervalParams {
    /// Session members, ourselves included (1 before anyone is heard).
    pub members: u32,
    /// Active senders, ourselves included if we sent in this interval.
    pub senders: u32,
    /// The RTCP bandwidth of the whole session in octets per second
    /// (normally 5 % of the session bandwidth).
    pub rtcp_bandwidth: f64,
    /// We sent RTP in the last two intervals (our next report is an SR).
    pub we_sent: bool,
    /// The average compound RTCP packet size in octets, UDP and IP headers
    /// included ([`update_avg_rtcp_size`]).
    pub avg_rtcp_size: f64,
    /// We have not sent an RTCP packet yet.
    pub initial: bool,
}

/// The deterministic calculated interval in seconds (A.7's `t` before
/// the random factor): the bandwidth share's interval, at least the
/// minimum.
fn deterministic_secs(params: &IntervalParams) -> f64 {
    let min_time = if params.initial {
        RTCP_MIN_TIME_SECS / 2.0
    } else {
        RTCP_MIN_TIME_SECS
    };
    let members = f64::from(params.members);
    let senders = f64::from(params.senders);
    let mut bandwidth = params.rtcp_bandwidth;
    let mut n = members;
    if senders <= members * RTCP_SENDER_BW_FRACTION {
        if params.we_sent {
            bandwidth *= RTCP_SENDER_BW_FRACTION;
            n = senders;
        } else {
            bandwidth *= 1.0 - RTCP_SENDER_BW_FRACTION;
            n = members - senders;
        }
    }
    let deterministic = if bandwidth.is_finite() && bandwidth > 0.0 {
        params.avg_rtcp_size * n / bandwidth
    } else {
        0.0
    };
    // max() also replaces a NaN (a NaN average size) by the minimum.
    deterministic.max(min_time)
}

/// Converts seconds to a duration; `as` saturates (an infinite size gives
/// the longest Duration-worth of nanoseconds rather than a panic).
fn duration_of(secs: f64) -> Duration {
    Duration::from_nanos((secs * 1e9).round() as u64)
}

/// The deterministic calculated interval `Td` (no random factor, no
/// compensation): what RFC 3550 6.3.5's timeouts are multiples of, for a
/// receiver when `params.we_sent` is false.
pub fn deterministic_interval(params: &IntervalParams) -> Duration {
    duration_of(deterministic_secs(params))
}

/// The interval until the next RTCP packet, for `params` and a
/// `random_factor` drawn uniformly from [0.5, 1.5].
pub fn rtcp_interval(params: &IntervalParams, random_factor: f64) -> Duration {
    let t = deterministic_secs(params);
    let factor = if random_factor.is_nan() {
        1.0
    } else {
        random_factor.clamp(0.5, 1.5)
    };
    duration_of(t * factor / COMPENSATION)
}

/// Section 6.3.3's running average of compound RTCP packet sizes: moves
/// 1/16 of the way to `packet_size` (octets, headers included), for every
/// RTCP packet sent or received.
pub fn update_avg_rtcp_size(avg: f64, packet_size: usize) -> f64 {
    // Sizes are datagram lengths, far below 2^53: the cast is exact.
    avg + (packet_size as f64 - avg) / 16.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> IntervalParams {
        IntervalParams {
            members: 2,
            senders: 1,
            // 5 % of 64 kbit/s = 3200 bit/s = 400 octets/s.
            rtcp_bandwidth: 400.0,
            we_sent: true,
            avg_rtcp_size: 100.0,
            initial: true,
        }
    }

    #[test]
    fn the_deterministic_interval_has_no_factor_and_no_compensation() {
        let later = IntervalParams {
            initial: false,
            ..params()
        };
        assert_eq!(deterministic_interval(&later), Duration::from_secs(5));
        // 40 members, 1 sender, receivers' 300 B/s: 100 * 39 / 300 = 13 s.
        let crowd = IntervalParams {
            members: 40,
            we_sent: false,
            ..later
        };
        assert_eq!(deterministic_interval(&crowd), Duration::from_secs(13));
    }

    #[test]
    fn small_sessions_get_the_minimum() {
        // Two members, one sender (1 > 2/4): everyone shares 400 B/s;
        // 100 * 2 / 400 = 0.5 s, below the minimum.
        // Initial: 2.5 s / (e - 1.5) = 2.0520703...
        assert_eq!(rtcp_interval(&params(), 1.0).as_nanos(), 2_052_070_335);
        // Not initial: 5 s / (e - 1.5) = 4.1041407...; x0.5 and x1.5.
        let later = IntervalParams {
            initial: false,
            ..params()
        };
        assert_eq!(rtcp_interval(&later, 1.0).as_nanos(), 4_104_140_670);
        assert_eq!(rtcp_interval(&later, 0.5).as_nanos(), 2_052_070_335);
        assert_eq!(rtcp_interval(&later, 1.5).as_nanos(), 6_156_211_005);
        // Out-of-range and NaN factors are clamped / taken as 1.
        assert_eq!(rtcp_interval(&later, 7.0).as_nanos(), 6_156_211_005);
        assert_eq!(rtcp_interval(&later, f64::NAN).as_nanos(), 4_104_140_670);
    }

    #[test]
    fn large_membership() {
        // 1000 members, 10 senders (10 <= 250): receivers share 75 % of
        // 400 B/s = 300 B/s among 990: 100 * 990 / 300 = 330 s;
        // / (e - 1.5) = 270.873284...
        let receivers = IntervalParams {
            members: 1000,
            senders: 10,
            we_sent: false,
            initial: false,
            ..params()
        };
        assert_eq!(rtcp_interval(&receivers, 1.0).as_nanos(), 270_873_284_236);
        // As one of the senders: 25 % = 100 B/s among 10: 100 * 10 / 100 =
        // 10 s; / (e - 1.5) = 8.2082813...
        let sender = IntervalParams {
            we_sent: true,
            ..receivers
        };
        assert_eq!(rtcp_interval(&sender, 1.0).as_nanos(), 8_208_281_340);
        // 400 senders of 1000 (> 25 %): all share 400 B/s among 1000:
        // 250 s; / (e - 1.5) = 205.2070335...
        let many = IntervalParams {
            senders: 400,
            ..receivers
        };
        assert_eq!(rtcp_interval(&many, 1.0).as_nanos(), 205_207_033_512);
    }

    #[test]
    fn degenerate_inputs_do_not_panic() {
        let zero_bw = IntervalParams {
            rtcp_bandwidth: 0.0,
            initial: false,
            ..params()
        };
        assert_eq!(rtcp_interval(&zero_bw, 1.0).as_nanos(), 4_104_140_670);
        let nan = IntervalParams {
            avg_rtcp_size: f64::NAN,
            initial: false,
            ..params()
        };
        assert_eq!(rtcp_interval(&nan, 1.0).as_nanos(), 4_104_140_670);
        let inf = IntervalParams {
            avg_rtcp_size: f64::INFINITY,
            ..params()
        };
        assert_eq!(rtcp_interval(&inf, 1.0).as_nanos(), u128::from(u64::MAX));
        let nobody = IntervalParams {
            members: 0,
            senders: 0,
            ..params()
        };
        assert_eq!(rtcp_interval(&nobody, 1.0).as_nanos(), 2_052_070_335);
    }

    #[test]
    fn average_size() {
        // 100 + (260 - 100) / 16 = 110.
        assert_eq!(update_avg_rtcp_size(100.0, 260), 110.0);
    }
}
