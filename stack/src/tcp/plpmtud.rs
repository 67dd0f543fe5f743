//! Packetization-layer path MTU discovery (RFC 4821) as the fallback for
//! paths whose routers' ICMP errors never arrive (filtered), so that
//! full-sized segments vanish without a word: an MTU black hole. As
//! Linux with `tcp_mtu_probing = 1`, it stays idle until one is suspected.
//!
//! - **Down.** A second retransmission timeout in a row with segments of
//!   more than the floor in flight is taken for a black hole: the MSS drops
//!   to [`BASE_MSS`] (on a repeat, to half of what it is), never below
//!   [`FLOOR_MSS`], and a search opens between it and the MSS that failed.
//! - **Up.** While the search is open, and the windows and the data
//!   allow, one segment of new data of the middle size is sent as a probe.
//!   Acknowledged, the probe's size becomes the MSS and the search's lower
//!   bound; lost, the upper bound drops below it, and what was lost is
//!   sent again at the current MSS with no congestion response (a lost
//!   probe says nothing of congestion, RFC 4821 7.6.2).
//! - The search ends when its bounds are within [`PROBE_THRESHOLD`]
//!   bytes, and opens again after [`REPROBE_INTERVAL`] in case the path
//!   has changed (RFC 4821 7.7; Linux's `tcp_probe_interval`).
//!
//! Sizes are MSS values as the connection keeps them: payload bytes, after
//! the timestamp option. Invariants: `low <= high <= ceiling` while
//! searching; one probe in flight at most; the MSS is never raised above
//! the ceiling (the MSS at the handshake, less what ICMP errors took).

use super::seq::Seq;
use crate::time::{Duration, Instant};

/// The MSS a black hole first drops to (Linux's `tcp_base_mss`).
pub const BASE_MSS: u16 = 1024;

/// The smallest MSS a black hole may drop to.
pub const FLOOR_MSS: u16 = 512;

/// The search ends when its bounds are this close (bytes).
pub const PROBE_THRESHOLD: u16 = 16;

/// How long after a search ended the next one opens.
pub const REPROBE_INTERVAL: Duration = Duration::from_secs(600);

/// What a probe's fate changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeOutcome {
    /// Acknowledged: the MSS may rise to this.
    Raised(u16),
    /// Lost: what it carried is to go again at the current MSS.
    Lost,
}

/// The search state of one connection once a black hole was suspected.
#[derive(Debug, Clone, Default)]
struct Search {
    /// Searching: the largest MSS known to pass and the largest that may.
    search: Option<(u16, u16)>,
    /// The probe in flight: its sequence range and size.
    probe: Option<(Seq, Seq, u16)>,
    /// When the next search opens, once one has ended.
    reopen_at: Option<Instant>,
    /// The largest MSS the path may take; 0 until a black hole (nothing to
    /// search before).
    ceiling: u16,
}

impl Search {
    /// A second timeout in a row with segments of `mss` in flight: returns
    /// the MSS to drop to, if lower.
    pub fn black_hole(&mut self, mss: u16) -> Option<u16> {
        if mss <= FLOOR_MSS {
            return None;
        }
        let lower = if self.ceiling == 0 {
            self.ceiling = mss;
            mss.min(BASE_MSS)
        } else {
            mss / 2
        };
        let lower = lower.max(FLOOR_MSS);
        self.probe = None;
        self.search = Some((lower, mss.min(self.ceiling)));
        self.reopen_at = None;
        (lower < mss).then_some(lower)
    }

    /// An ICMP error lowered the MSS to `mss`: no probe may exceed it.
    pub fn lowered(&mut self, mss: u16) {
        if self.ceiling == 0 {
            return;
        }
        self.ceiling = self.ceiling.min(mss);
        if let Some((low, high)) = self.search {
            self.search = Some((low.min(mss), high.min(mss)));
        }
    }

    /// The size of the probe to send now, if one is due: the middle of
    /// the search (with `mss` the current MSS).
    pub fn due(&mut self, mss: u16, now: Instant) -> Option<u16> {
        if self.reopen_at.is_some_and(|t| now >= t) {
            self.reopen_at = None;
            self.search = Some((mss, self.ceiling));
        }
        let (low, high) = self.search?;
        if self.probe.is_some() || high < low + PROBE_THRESHOLD || mss > low {
            return None;
        }
        Some(low + (high - low).div_ceil(2))
    }

    /// The probe of `size` went out as `[start, end)`.
    pub fn sent(&mut self, start: Seq, end: Seq, size: u16) {
        self.probe = Some((start, end, size));
    }

    /// The probe in flight, if any: where it starts.
    pub fn in_flight(&self) -> Option<Seq> {
        self.probe.map(|(start, _, _)| start)
    }

    /// After an ACK up to `ack`, at `now`.
    pub fn on_ack(&mut self, ack: Seq, now: Instant) -> Option<ProbeOutcome> {
        let (_, end, size) = self.probe?;
        if ack < end {
            return None;
        }
        self.probe = None;
        let (_, high) = self.search?;
        self.settle(size, high, now);
        Some(ProbeOutcome::Raised(size))
    }

    /// The probe was found lost (a timeout, or loss detection, with it
    /// unacknowledged), at `now`.
    pub fn on_loss(&mut self, now: Instant) -> Option<ProbeOutcome> {
        let (_, _, size) = self.probe.take()?;
        let (low, _) = self.search?;
        self.settle(low, size - 1, now);
        Some(ProbeOutcome::Lost)
    }

    fn settle(&mut self, low: u16, high: u16, now: Instant) {
        if high < low + PROBE_THRESHOLD {
            self.search = None;
            self.reopen_at = Some(now + REPROBE_INTERVAL);
        } else {
            self.search = Some((low, high));
        }
    }

    /// True while a search is open.
    pub fn searching(&self) -> bool {
        self.search.is_some()
    }

    /// The largest segment a probe may be now (the search's upper bound).
    pub fn largest(&self) -> Option<u16> {
        self.search.map(|(_, high)| high)
    }
}

/// A connection's path MTU probing. It holds nothing until the first
/// suspected black hole (most connections never meet one), then the
/// search's state. See the module documentation.
#[derive(Debug, Clone, Default)]
pub struct PathProbe(Option<Box<Search>>);

impl PathProbe {
    /// A second timeout in a row with segments of `mss` in flight: returns
    /// the MSS to drop to, if lower.
    pub fn black_hole(&mut self, mss: u16) -> Option<u16> {
        self.0.get_or_insert_with(Box::default).black_hole(mss)
    }

    /// An ICMP error lowered the MSS to `mss`: no probe may exceed it.
    pub fn lowered(&mut self, mss: u16) {
        if let Some(search) = self.0.as_mut() {
            search.lowered(mss);
        }
    }

    /// The size of the probe to send now, if one is due: the middle of
    /// the search (with `mss` the current MSS).
    pub fn due(&mut self, mss: u16, now: Instant) -> Option<u16> {
        self.0.as_mut()?.due(mss, now)
    }

    /// The probe of `size` went out as `[start, end)`.
    pub fn sent(&mut self, start: Seq, end: Seq, size: u16) {
        if let Some(search) = self.0.as_mut() {
            search.sent(start, end, size);
        }
    }

    /// The probe in flight, if any: where it starts.
    pub fn in_flight(&self) -> Option<Seq> {
        self.0.as_ref()?.in_flight()
    }

    /// After an ACK up to `ack`, at `now`.
    pub fn on_ack(&mut self, ack: Seq, now: Instant) -> Option<ProbeOutcome> {
        self.0.as_mut()?.on_ack(ack, now)
    }

    /// The probe was found lost (a timeout, or loss detection, with it
    /// unacknowledged), at `now`.
    pub fn on_loss(&mut self, now: Instant) -> Option<ProbeOutcome> {
        self.0.as_mut()?.on_loss(now)
    }

    /// True while a search is open.
    pub fn searching(&self) -> bool {
        self.0.as_ref().is_some_and(|s| s.searching())
    }

    /// The largest segment a probe may be now (the search's upper bound).
    pub fn largest(&self) -> Option<u16> {
        self.0.as_ref()?.largest()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: u64) -> Instant {
        Instant::ZERO + Duration::from_secs(s)
    }

    #[test]
    fn idle_until_a_black_hole_then_down_to_the_base_and_half_again() {
        let mut p = PathProbe::default();
        assert_eq!(p.due(1448, at(0)), None, "nothing to search before");
        assert_eq!(p.black_hole(1448), Some(BASE_MSS));
        assert_eq!(p.black_hole(BASE_MSS), Some(512));
        assert_eq!(p.black_hole(512), None, "the floor");
    }

    /// A path that takes an MSS of 1228 at most: the search finds it from
    /// below within the threshold, and opens again later.
    #[test]
    fn probes_bisect_to_the_largest_size_that_passes() {
        let mut p = PathProbe::default();
        let mut mss = p.black_hole(1448).unwrap();
        let mut seq = Seq(0);
        let mut probes = 0;
        while let Some(size) = p.due(mss, at(1)) {
            probes += 1;
            assert!(probes < 20, "the search ends");
            p.sent(seq, seq + u32::from(size), size);
            assert_eq!(p.due(mss, at(1)), None, "one probe at a time");
            seq = seq + u32::from(size);
            let outcome = if size <= 1228 {
                p.on_ack(seq, at(1))
            } else {
                p.on_loss(at(1))
            };
            match outcome {
                Some(ProbeOutcome::Raised(to)) => mss = to,
                Some(ProbeOutcome::Lost) => {}
                None => panic!("the probe's fate is known"),
            }
        }
        assert!(
            (1228 - PROBE_THRESHOLD..=1228).contains(&mss),
            "settled at {mss}"
        );
        assert!(!p.searching());
        assert_eq!(p.due(mss, at(500)), None);
        assert!(
            p.due(mss, at(1) + REPROBE_INTERVAL).is_some(),
            "searching again"
        );
    }

    #[test]
    fn an_icmp_lowered_mss_caps_the_search() {
        let mut p = PathProbe::default();
        let mss = p.black_hole(1448).unwrap();
        p.lowered(1100);
        let size = p.due(mss, at(0)).unwrap();
        assert!(size <= 1100 && size > mss, "{size}");
    }
}
