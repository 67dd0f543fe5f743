//! One leg's state on the lcore: where its peer is (an RTP and an RTCP
//! [`Latch`]), the receive statistics of each SSRC it sends
//! ([`ReceiveStats`], RFC 3550 A.1/A.3/A.8) and its counters.
//!
//! Invariants: at most [`SSRCS_PER_LEG`] SSRCs get statistics (fixed
//! storage, nothing allocated per packet); packets of further SSRCs are
//! relayed but only counted in `untracked`. Each SSRC's clock rate is fixed
//! by the payload type of its first packet: RFC 3551's static types have
//! theirs, every other type gets the configured default (`--clock-rate`).
//! Counters only grow (saturating).

use arrayvec::ArrayVec;
use dpstack::stack::media::{Latch, LatchConfig};
use dpstack::stack::rtp::{Counters, ReceiveStats};
use dpstack::stack::time::Instant;
use std::net::SocketAddr;

/// SSRCs per leg with statistics (one, plus one change of source, e.g.
/// after a re-INVITE or a transfer).
pub const SSRCS_PER_LEG: usize = 2;

/// The RTP clock rate of static payload type `pt` (RFC 3551 tables 4 and
/// 5), or `default` for dynamic and unassigned types.
pub fn clock_rate(pt: u8, default: u32) -> u32 {
    match pt {
        0 | 3 | 4 | 5 | 7 | 8 | 9 | 12 | 13 | 15 | 18 => 8000,
        6 => 16000,
        10 | 11 => 44100,
        16 => 11025,
        17 => 22050,
        14 | 25 | 26 | 28 | 31 | 32 | 33 | 34 => 90000,
        _ => default,
    }
}

/// A leg's counters besides the per-SSRC statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LegCounters {
    /// RTP packets sent on to the other leg (or back, in echo mode).
    pub forwarded: u64,
    /// RTCP packets accepted from the peer.
    pub rtcp: u64,
    /// Their bytes.
    pub rtcp_bytes: u64,
    /// RTCP packets sent on.
    pub rtcp_forwarded: u64,
    /// Packets from another source than the latched peer (dropped).
    pub foreign: u64,
    /// Packets of SSRCs beyond [`SSRCS_PER_LEG`] (relayed, no statistics).
    pub untracked: u64,
    /// Packets that reached this leg and were dropped, for any reason.
    pub dropped: u64,
}

/// One leg. See the module documentation.
#[derive(Debug, Clone)]
pub struct LegState {
    /// Where RTP comes from and goes to.
    pub rtp: Latch,
    /// Where RTCP comes from and goes to.
    pub rtcp: Latch,
    streams: ArrayVec<ReceiveStats, SSRCS_PER_LEG>,
    /// The stream the last packet belonged to (checked first).
    last: usize,
    /// The counters.
    pub counters: LegCounters,
}

impl LegState {
    /// A leg that learns its peer by `latch`; `peer` is where signalling
    /// said it is (RTCP on the next port, or the same one under `mux`).
    pub fn new(latch: LatchConfig, peer: Option<SocketAddr>, mux: bool) -> LegState {
        let mut rtp = Latch::new(latch);
        let mut rtcp = Latch::new(latch);
        if let Some(peer) = peer {
            rtp.expect(peer);
            if let Some(rtcp_peer) = rtcp_of(peer, mux) {
                rtcp.expect(rtcp_peer);
            }
        }
        LegState {
            rtp,
            rtcp,
            streams: ArrayVec::new(),
            last: 0,
            counters: LegCounters::default(),
        }
    }

    /// Where RTCP for this leg goes: the peer heard on RTCP, else next to
    /// the RTP peer once that is latched, else the signalled address.
    pub fn rtcp_destination(&self, mux: bool) -> Option<SocketAddr> {
        if self.rtcp.is_latched() {
            return self.rtcp.peer();
        }
        if self.rtp.is_latched() {
            return self.rtp.peer().and_then(|p| rtcp_of(p, mux));
        }
        self.rtcp.peer()
    }

    /// Records an accepted RTP packet in its SSRC's statistics (a new SSRC
    /// gets a slot while there is one). Per packet.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn record(
        &mut self,
        ssrc: u32,
        pt: u8,
        seq: u16,
        timestamp: u32,
        payload_len: usize,
        arrival: Instant,
        default_rate: u32,
    ) {
        let index = match self.streams.get(self.last) {
            Some(s) if s.ssrc() == ssrc => Some(self.last),
            _ => self.streams.iter().position(|s| s.ssrc() == ssrc),
        };
        let index = match index {
            Some(i) => i,
            None if !self.streams.is_full() => {
                self.streams
                    .push(ReceiveStats::new(ssrc, clock_rate(pt, default_rate)));
                self.streams.len() - 1
            }
            None => {
                self.counters.untracked = self.counters.untracked.saturating_add(1);
                return;
            }
        };
        self.last = index;
        self.streams[index].record(seq, timestamp, payload_len, arrival);
    }

    /// The statistics of `ssrc`, if it has them.
    pub fn stream_mut(&mut self, ssrc: u32) -> Option<&mut ReceiveStats> {
        self.streams.iter_mut().find(|s| s.ssrc() == ssrc)
    }

    /// Each tracked SSRC with its counters and jitter in nanoseconds.
    pub fn streams(&self) -> impl Iterator<Item = StreamReport> + '_ {
        self.streams.iter().map(|s| StreamReport {
            ssrc: s.ssrc(),
            counters: s.counters(),
            jitter_ns: u64::try_from(s.jitter_duration().as_nanos()).unwrap_or(u64::MAX),
        })
    }
}

/// One SSRC's figures, as reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamReport {
    /// The source.
    pub ssrc: u32,
    /// Packets, bytes, loss, jitter (RTP units), reordering, duplicates.
    pub counters: Counters,
    /// The jitter in nanoseconds.
    pub jitter_ns: u64,
}

/// The RTCP address that goes with RTP address `rtp`: the next port, or
/// the same one under rtcp-mux (`None` past port 65535).
pub fn rtcp_of(rtp: SocketAddr, mux: bool) -> Option<SocketAddr> {
    if mux {
        return Some(rtp);
    }
    let port = rtp.port().checked_add(1)?;
    let mut rtcp = rtp;
    rtcp.set_port(port);
    Some(rtcp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_payload_types_have_their_clock_rates() {
        assert_eq!(clock_rate(0, 48000), 8000);
        assert_eq!(clock_rate(8, 48000), 8000);
        assert_eq!(clock_rate(9, 48000), 8000, "G.722's RTP clock is 8000");
        assert_eq!(clock_rate(31, 48000), 90000);
        assert_eq!(clock_rate(111, 48000), 48000);
    }

    #[test]
    fn ssrcs_beyond_the_limit_are_counted_not_tracked() {
        let mut leg = LegState::new(LatchConfig::default(), None, false);
        let t = Instant::ZERO;
        for ssrc in 1..=3u32 {
            for seq in 0..4u16 {
                leg.record(ssrc, 0, seq, u32::from(seq) * 160, 160, t, 8000);
            }
        }
        let streams: Vec<_> = leg.streams().collect();
        assert_eq!(streams.len(), SSRCS_PER_LEG);
        assert_eq!(streams[0].counters.packets, 4);
        assert_eq!(streams[1].ssrc, 2);
        assert_eq!(leg.counters.untracked, 4);
        assert!(leg.stream_mut(3).is_none());
    }

    #[test]
    fn rtcp_goes_next_to_the_rtp_peer_until_heard() {
        let signalled: SocketAddr = "10.0.0.2:5004".parse().unwrap();
        let mut leg = LegState::new(LatchConfig::default(), Some(signalled), false);
        assert_eq!(leg.rtcp_destination(false), "10.0.0.2:5005".parse().ok());
        let nat: SocketAddr = "192.0.2.9:40000".parse().unwrap();
        leg.rtp.observe(nat, Some(1), Instant::ZERO);
        assert_eq!(leg.rtcp_destination(false), "192.0.2.9:40001".parse().ok());
        let rtcp_nat: SocketAddr = "192.0.2.9:40555".parse().unwrap();
        leg.rtcp.observe(rtcp_nat, None, Instant::ZERO);
        assert_eq!(leg.rtcp_destination(false), Some(rtcp_nat));
        let muxed = LegState::new(LatchConfig::default(), Some(signalled), true);
        assert_eq!(muxed.rtcp_destination(true), Some(signalled));
        let top: SocketAddr = "10.0.0.2:65535".parse().unwrap();
        assert_eq!(rtcp_of(top, false), None);
    }
}
