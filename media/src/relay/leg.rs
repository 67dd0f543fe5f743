//! One leg's state on the lcore: where its peer is (an RTP and an RTCP
//! [`Latch`]), the receive statistics of each SSRC it sends
//! ([`ReceiveStats`], RFC 3550 A.1/A.3/A.8), which of those SSRCs are
//! session members and senders ([`Membership`]: BYE and 6.3.5 timeouts),
//! its counters, and the state of the receiver reports it sends
//! ([`ReportState`]).
//!
//! Layout: a leg is cache-line aligned and starts with what the
//! per-packet path touches. Line 0 holds the forwarded count, the RTP
//! peer (the RTP latch's, kept in step with it) and where packets go (the
//! other leg's peer, copied here when it changes) as [`Compact`]
//! addresses, and whether the latch is settled (latched for good, so a
//! packet from the peer needs no look at the latch); the
//! first SSRC's statistics follow from byte 48 with their hot fields first
//! (77 bytes: they end in line 1). So a packet touches two lines of its
//! own leg and none of the other (an IPv6 peer with a scope id or flow
//! label, which a `Compact` cannot hold, is read from the other leg).
//! Latches, other counters and report state come after, touched only by
//! learning, drops, RTCP and the report timer.
//!
//! Invariants: `dst == rtp.peer()`, `own` is `dst` compacted, and
//! `settled` is true only while the RTP latch is latched or fixed and
//! never re-latches, after every change made through this type (the
//! latches are only changed here); the session keeps each leg's `fwd` equal
//! to the other leg's `dst` ([`super::Session::new`] and the receive path
//! after each change). At most [`SSRCS_PER_LEG`] SSRCs get statistics at a
//! time (fixed storage, nothing allocated per packet). A new SSRC takes a
//! free slot, else the slot of a stream that is no longer a member (its
//! figures move to the leg's `retired_*` counters, so totals keep them);
//! with every slot held by a member, its packets are relayed but only
//! counted in `untracked`. Each SSRC's clock rate is fixed by the payload
//! type of its first packet: RFC 3551's static types have theirs, every
//! other type gets the configured default (`--clock-rate`). Counters only
//! grow (saturating, or 64-bit and added to once a packet: a plain add,
//! which cannot reach 2^64). A tracked SSRC that said BYE or timed out stays
//! tracked (its statistics keep counting and are still shown) until a new
//! SSRC needs its slot, but is no longer one of the leg's session members
//! ([`LegState::members_mut`]): reports leave it out (after a BYE for
//! good, after a timeout until it is heard again).
//!
//! On several lanes ([`super::lanes`]) each lane has its own copy of a
//! leg: the copy of the lane that receives the leg's flow records; the
//! others only take in its peers ([`LegState::adopt`], from the news
//! [`LegState::news`] makes), ordered by ticket.

use super::addr::{Compact, Family, Stored};
use super::membership::{Membership, SSRCS_PER_LEG};
use super::reports::ReportState;
use super::LegReport;
use crate::rtp::{ArrivalClock, Counters, ReceiveStats, RtpSummary};
use crate::{Channel, Latch, LatchConfig, LegSockets, Verdict};
use dpstack_stack::time::{Duration, Instant};
use dpstack_stack::udp::SocketId;
use std::net::{SocketAddr, SocketAddrV4};

/// `streams_used`: the last stream's index; `LAST` itself, an index past
/// `streams`, until the first stream is in use.
const LAST: u8 = 0x07;
const _: () = assert!(SSRCS_PER_LEG < LAST as usize);
/// `streams_used`: `dst` changed.
const DST_CHANGED: u8 = 0x08;

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
    /// Packets of SSRCs that found no statistics slot: all
    /// [`SSRCS_PER_LEG`] held by members (relayed, no statistics).
    pub untracked: u64,
    /// Streams whose slot went to a newer SSRC after they left (BYE) or
    /// timed out; their figures are kept in `retired_*`.
    pub retired: u64,
    /// Packets of the retired streams.
    pub retired_packets: u64,
    /// Payload bytes of the retired streams.
    pub retired_bytes: u64,
    /// Cumulative loss of the retired streams.
    pub retired_lost: i64,
    /// Packets that reached this leg and were dropped, for any reason.
    pub dropped: u64,
    /// RTCP receiver reports of our own sent to the peer.
    pub reports_sent: u64,
    /// Receiver reports that could not be sent (no peer, no route...).
    pub reports_failed: u64,
}

/// One leg. See the module documentation.
#[derive(Debug, Clone)]
#[repr(C, align(64))]
pub struct LegState {
    // Line 0.
    /// RTP packets sent on.
    forwarded: u64,
    /// This leg's RTP peer (`dst`), compact, to compare sources with.
    own: Compact,
    /// Where this leg's packets go: the other leg's `dst`, compact (kept
    /// in step by [`LegState::set_forward`]).
    fwd: Compact,
    own_family: Family,
    fwd_family: Family,
    /// The RTP latch holds its peer for good: packets from `dst` are the
    /// peer's without asking the latch.
    settled: bool,
    /// Bits 0-2: the stream the last packet belonged to (checked first;
    /// [`LAST`], past the end, before any stream is in use); bit 3: `dst`
    /// changed since [`LegState::take_dst_change`] last asked; bits 4-7:
    /// streams in use (the first ones of `streams`, never fewer later).
    streams_used: u8,
    /// Per SSRC, filled in order (from byte 48: the first stream's hot
    /// fields end in line 1). No `Option` around them: its tag would sit
    /// in a cold field.
    streams: [ReceiveStats; SSRCS_PER_LEG],
    // Cold.
    /// Where RTP for this leg's peer goes: `rtp.peer()`.
    dst: Option<SocketAddr>,
    rtp: Latch,
    rtcp: Latch,
    /// The peer's last accepted RTCP came to this leg's RTP port although
    /// the leg has an RTCP port (implicit rtcp-mux): RTCP to the peer then
    /// leaves from the RTP port too ([`LegState::rtcp_sender`]).
    rtcp_on_rtp: bool,
    /// The counters (`forwarded` is kept above and filled in on reads).
    counters: LegCounters,
    /// Which streams are session members and senders (RFC 3550 6.3.4,
    /// 6.3.5).
    membership: Membership,
    /// Our receiver reports to this leg's peer.
    pub(crate) reports: ReportState,
    /// The relay on several lanes: the ticket of the newest [`PeerNews`]
    /// this copy of the leg took in or sent (older news is stale).
    news_ticket: u64,
}

/// What one lane learned of a leg's peers, for the other lanes' copies of
/// that leg ([`LegState::news`], [`LegState::adopt`]): the latched RTP and
/// RTCP peers and whether the peer sends RTCP to the RTP port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerNews {
    /// Orders news of one leg (from any lane): newer wins.
    pub ticket: u64,
    /// The RTP latch's peer, once latched.
    pub rtp: Option<SocketAddr>,
    /// The RTCP latch's peer, once latched.
    pub rtcp: Option<SocketAddr>,
    /// RTCP arrives on the RTP port (implicit rtcp-mux).
    pub rtcp_on_rtp: bool,
}

impl LegState {
    /// A leg that learns its peer by `latch`; `peer` is where signalling
    /// said it is (RTCP on the next port, or the same one under `mux`).
    /// `ssrc` is ours, in the receiver reports we send this leg's peer.
    pub fn new(latch: LatchConfig, peer: Option<SocketAddr>, mux: bool, ssrc: u32) -> LegState {
        let mut rtp = Latch::new(latch);
        let mut rtcp = Latch::new(latch);
        if let Some(peer) = peer {
            rtp.expect(peer);
            if let Some(rtcp_peer) = rtcp_of(peer, mux) {
                rtcp.expect(rtcp_peer);
            }
        }
        let mut leg = LegState {
            forwarded: 0,
            own: Compact::NONE,
            fwd: Compact::NONE,
            own_family: Family::None,
            fwd_family: Family::None,
            settled: false,
            streams_used: LAST,
            streams: [ReceiveStats::new(0, 0), ReceiveStats::new(0, 0)],
            dst: None,
            rtcp_on_rtp: false,
            rtp,
            rtcp,
            counters: LegCounters::default(),
            membership: Membership::default(),
            reports: ReportState::new(ssrc),
            news_ticket: 0,
        };
        leg.sync();
        leg
    }

    /// Brings `dst` and `settled` in step with the RTP latch.
    fn sync(&mut self) {
        let dst = self.rtp.peer();
        if dst != self.dst {
            self.dst = dst;
            (self.own, self.own_family) = Compact::new(dst);
            self.streams_used |= DST_CHANGED;
        }
        self.settled = self.rtp.is_latched() && self.rtp.config().relatch_after.is_none();
    }

    /// True (once) if `dst` changed since the last call: the other leg's
    /// [`LegState::set_forward`] is then due.
    #[inline]
    pub fn take_dst_change(&mut self) -> bool {
        // Per packet: written only when set (a test, not a store a packet).
        if self.streams_used & DST_CHANGED == 0 {
            return false;
        }
        self.streams_used &= !DST_CHANGED;
        true
    }

    /// Sets where this leg's packets go (the other leg's `dst`).
    pub fn set_forward(&mut self, to: Option<SocketAddr>) {
        (self.fwd, self.fwd_family) = Compact::new(to);
    }

    /// Where this leg's packets go, if the line holds it (else the other
    /// leg's [`LegState::dst`] has it). Per packet.
    #[inline]
    pub fn forward_to(&self) -> Stored {
        self.fwd.get(self.fwd_family)
    }

    /// Where this leg's packets go if that is an IPv4 address (the line
    /// holds every IPv4 address): [`LegState::forward_to`] without building
    /// a `SocketAddr`. Per packet.
    #[inline]
    pub fn forward_to_v4(&self) -> Option<SocketAddrV4> {
        self.fwd.get_v4(self.fwd_family)
    }
    /// Where this leg's RTP goes (the latched peer, else the signalled
    /// one). Per packet.
    #[inline]
    pub fn dst(&self) -> Option<SocketAddr> {
        self.dst
    }

    /// Judges an RTP packet from `source` (sequence number `seq`) by the
    /// RTP latch. Per packet: a compare once settled.
    #[inline]
    pub fn observe_rtp(&mut self, source: SocketAddr, seq: u16, now: Instant) -> Verdict {
        if self.settled && self.own.is(self.own_family, &source) {
            return Verdict::Peer;
        }
        let verdict = self.rtp.observe(source, Some(seq), now);
        if verdict == Verdict::Latched || !self.settled {
            self.sync();
        }
        verdict
    }

    /// True if the leg is settled and `v4`, an IPv4 sender, is its peer:
    /// [`LegState::observe_rtp`] would say [`Verdict::Peer`] without
    /// looking at the latch. Per packet: always inlined (a few compares,
    /// no `SocketAddr` built); any other packet goes to `observe_rtp`.
    #[inline(always)]
    pub fn is_settled_peer(&self, v4: Option<SocketAddrV4>) -> bool {
        v4.is_some_and(|v4| self.settled && self.own.is_v4(self.own_family, v4))
    }

    /// Judges an RTCP packet from `source` by the RTCP latch.
    #[inline]
    pub fn observe_rtcp(&mut self, source: SocketAddr, now: Instant) -> Verdict {
        self.rtcp.observe(source, None, now)
    }

    /// Judges RTCP that came to this leg's RTP port (rtcp-mux, or
    /// implicit rtcp-mux on a leg with an RTCP port): once the RTP latch
    /// has a peer, the port is that peer's (RFC 5761: muxed RTCP comes from
    /// the RTP transport address), so its RTCP is the peer's and anyone
    /// else's is foreign, and the RTCP latch is left alone; before, the
    /// RTCP latch judges it.
    pub fn observe_rtcp_on_rtp_port(&mut self, source: SocketAddr, now: Instant) -> Verdict {
        match self.rtp.latched_peer() {
            Some(peer) if peer == source => Verdict::Peer,
            Some(_) => Verdict::Foreign,
            None => self.rtcp.observe(source, None, now),
        }
    }

    /// This leg's peers as news for the other lanes, under `ticket`
    /// (which this copy then holds: older news from elsewhere is stale).
    pub fn news(&mut self, ticket: u64) -> PeerNews {
        self.news_ticket = ticket;
        PeerNews {
            ticket,
            rtp: self.rtp.latched_peer(),
            rtcp: self.rtcp.latched_peer(),
            rtcp_on_rtp: self.rtcp_on_rtp,
        }
    }

    /// Takes in what another lane learned of this leg's peers, unless this
    /// copy holds newer news: latched peers are adopted (the RTP one
    /// becomes `dst`, with [`LegState::take_dst_change`] then true). True
    /// if the news was taken. Control path of a lane (its poll).
    pub fn adopt(&mut self, news: &PeerNews, now: Instant) -> bool {
        if news.ticket <= self.news_ticket {
            return false;
        }
        self.news_ticket = news.ticket;
        if let Some(peer) = news.rtp {
            self.rtp.adopt(peer, now);
        }
        if let Some(peer) = news.rtcp {
            self.rtcp.adopt(peer, now);
        }
        self.rtcp_on_rtp = news.rtcp_on_rtp;
        self.sync();
        true
    }

    /// A copy of this leg for another lane: the same latches, sockets'
    /// report SSRC and settings, no statistics, counters or report state
    /// of its own yet (only the lane that receives a leg's flow fills
    /// those). Control path.
    pub fn lane_copy(&self) -> LegState {
        let mut leg = LegState {
            forwarded: 0,
            own: self.own,
            fwd: self.fwd,
            own_family: self.own_family,
            fwd_family: self.fwd_family,
            settled: self.settled,
            streams_used: LAST | (self.streams_used & DST_CHANGED),
            streams: [ReceiveStats::new(0, 0), ReceiveStats::new(0, 0)],
            dst: self.dst,
            rtp: self.rtp,
            rtcp: self.rtcp,
            rtcp_on_rtp: self.rtcp_on_rtp,
            counters: LegCounters::default(),
            membership: Membership::default(),
            reports: ReportState::new(self.reports.ssrc()),
            news_ticket: self.news_ticket,
        };
        leg.sync();
        leg
    }

    /// Notes which of the leg's ports the peer's accepted RTCP came to:
    /// `on_rtp_port` on a leg with an RTCP port of its own means the peer
    /// muxes anyway (RFC 5761 4 lets a receiver tell RTCP by its type), so
    /// it hears RTCP where it sends it: on its RTP port, from ours (a
    /// symmetric NAT in front of it only lets that pair through).
    /// True if that changed.
    pub fn note_rtcp_port(&mut self, on_rtp_port: bool) -> bool {
        let changed = self.rtcp_on_rtp != on_rtp_port;
        self.rtcp_on_rtp = on_rtp_port;
        changed
    }

    /// The socket of `sockets` (this leg's) that RTCP to the peer leaves
    /// from: the RTCP socket, or the RTP socket under rtcp-mux, explicit
    /// or implicit ([`LegState::note_rtcp_port`]).
    pub fn rtcp_sender(&self, sockets: LegSockets) -> SocketId {
        if self.rtcp_on_rtp {
            sockets.rtp
        } else {
            sockets.sender(Channel::Rtcp)
        }
    }

    /// The RTP latch.
    pub fn rtp_latch(&self) -> &Latch {
        &self.rtp
    }

    /// The RTCP latch.
    pub fn rtcp_latch(&self) -> &Latch {
        &self.rtcp
    }

    /// Counts one forwarded RTP packet.
    #[inline]
    pub fn count_forwarded(&mut self) {
        // 64-bit, one a packet: cannot reach 2^64, so a plain add.
        self.forwarded = self.forwarded.wrapping_add(1);
    }

    /// The counters.
    pub fn counters(&self) -> LegCounters {
        LegCounters {
            forwarded: self.forwarded,
            ..self.counters
        }
    }

    /// The counters other than `forwarded`, writable (off the hot path).
    pub fn counters_mut(&mut self) -> &mut LegCounters {
        &mut self.counters
    }

    /// Where RTCP for this leg goes: the latched RTP peer itself under
    /// rtcp-mux or while the peer sends its RTCP to our RTP port (implicit
    /// rtcp-mux), else the peer heard on RTCP, else next to the RTP peer
    /// once that is latched, else the signalled address.
    pub fn rtcp_destination(&self, mux: bool) -> Option<SocketAddr> {
        if (self.rtcp_on_rtp || mux) && self.rtp.is_latched() {
            return self.rtp.peer();
        }
        if self.rtcp.is_latched() {
            return self.rtcp.peer();
        }
        if self.rtp.is_latched() {
            return self.rtp.peer().and_then(|p| rtcp_of(p, mux));
        }
        self.rtcp.peer()
    }

    /// Records an accepted RTP packet (its header's fields and payload
    /// size), arrived at `arrival`, in its SSRC's statistics; a new SSRC
    /// gets a slot while there is one, with the clock rate of its payload
    /// type, or `default_rate` for a dynamic one. A receive path calls
    /// [`LegState::record_with`], with its memo of the arrival time in RTP
    /// units.
    pub fn record(&mut self, packet: RtpSummary, arrival: Instant, default_rate: u32) {
        self.record_with(packet, arrival, default_rate, &mut ArrivalClock::new());
    }

    /// [`LegState::record`] with the receive path's memo of the last
    /// arrival time converted to RTP units (`clock`). Per packet: the last
    /// packet's stream, most often this one's, is checked inline; any
    /// other goes to `record_other`. Always inlined.
    #[inline(always)]
    pub fn record_with(
        &mut self,
        packet: RtpSummary,
        arrival: Instant,
        default_rate: u32,
        clock: &mut ArrivalClock,
    ) {
        // The last stream's index is of a stream in use, or past
        // `streams` (none in use yet): no count of streams needed.
        let last = usize::from(self.streams_used & LAST);
        if let Some(stream) = self.streams.get_mut(last) {
            if stream.ssrc() == packet.ssrc {
                // `streams_used` stays as it is.
                stream.record_with(
                    packet.seq,
                    packet.timestamp,
                    packet.payload_len,
                    arrival,
                    clock,
                );
                return;
            }
        }
        self.record_other(packet, arrival, default_rate);
    }

    /// [`LegState::record`] for a packet of another stream than the last
    /// one's (or the first packet).
    #[inline(never)]
    fn record_other(&mut self, packet: RtpSummary, arrival: Instant, default_rate: u32) {
        let RtpSummary {
            payload_type: pt,
            seq,
            timestamp,
            ssrc,
            payload_len,
        } = packet;
        let used = usize::from(self.streams_used >> 4);
        let index = match self.index_of(ssrc) {
            Some(i) => i,
            None => {
                let free = if used < SSRCS_PER_LEG {
                    Some(used)
                } else {
                    self.retire_a_former_member()
                };
                let Some(free) = free else {
                    self.counters.untracked = self.counters.untracked.saturating_add(1);
                    return;
                };
                let rate = clock_rate(pt, default_rate);
                if let Some(slot) = self.streams.get_mut(free) {
                    *slot = ReceiveStats::new(ssrc, rate);
                }
                self.membership.added(free, arrival);
                // Heard in RTCP first: a member as a stream from now on.
                self.membership.forget_listener(ssrc);
                free
            }
        };
        // index < SSRCS_PER_LEG (2), used <= 2: each fits its nibble.
        let used = used.max(index + 1);
        self.streams_used = (used << 4) as u8 | (self.streams_used & DST_CHANGED) | index as u8;
        if let Some(stream) = self.streams.get_mut(index) {
            stream.record(seq, timestamp, payload_len, arrival);
        }
    }

    /// With every slot in use: frees the slot of the first stream that is
    /// no longer a member (it said BYE or timed out), adding its figures
    /// to the leg's `retired_*` counters, and returns its index. `None` if
    /// every tracked stream is a member.
    fn retire_a_former_member(&mut self) -> Option<usize> {
        let index = (0..self.used().len()).find(|&i| !self.membership.is_member(i))?;
        let gone = self.streams.get(index)?.counters();
        let c = &mut self.counters;
        c.retired = c.retired.saturating_add(1);
        c.retired_packets = c.retired_packets.saturating_add(gone.packets);
        c.retired_bytes = c.retired_bytes.saturating_add(gone.bytes);
        c.retired_lost = c.retired_lost.saturating_add(gone.lost);
        Some(index)
    }

    /// The streams in use.
    #[inline]
    fn used(&self) -> &[ReceiveStats] {
        let used = usize::from(self.streams_used >> 4);
        self.streams.get(..used).unwrap_or_default()
    }

    /// The statistics of `ssrc`, if it has them.
    pub fn stream_mut(&mut self, ssrc: u32) -> Option<&mut ReceiveStats> {
        self.streams_mut().find(|s| s.ssrc() == ssrc)
    }

    /// Every tracked SSRC's statistics, writable (for report blocks).
    pub fn streams_mut(&mut self) -> impl Iterator<Item = &mut ReceiveStats> + '_ {
        let used = usize::from(self.streams_used >> 4);
        self.streams.iter_mut().take(used)
    }

    /// The tracked SSRCs that are session members (no BYE heard, not
    /// timed out), writable: what the receiver reports cover.
    pub fn members_mut(&mut self) -> impl Iterator<Item = &mut ReceiveStats> + '_ {
        let membership = self.membership;
        self.streams_mut()
            .enumerate()
            .filter(move |(i, _)| membership.is_member(*i))
            .map(|(_, stream)| stream)
    }

    /// How many SSRCs are session members (ourselves not counted): the
    /// tracked ones that are, and the RTCP-only participants.
    pub fn member_count(&self) -> usize {
        let streams = (0..self.used().len())
            .filter(|&i| self.membership.is_member(i))
            .count();
        streams + self.membership.listener_count()
    }

    /// How many of the members send RTP (6.3.5's sender timeout).
    pub fn sender_count(&self) -> usize {
        (0..self.used().len())
            .filter(|&i| self.membership.is_sender(i))
            .count()
    }

    /// Notes that `ssrc` left the session (its BYE heard). True if it was
    /// a member until now (tracked, no BYE before, not timed out). Off the
    /// per-packet path.
    pub fn mark_left(&mut self, ssrc: u32) -> bool {
        match self.index_of(ssrc) {
            Some(index) => self.membership.mark_left(index),
            None => self.membership.forget_listener(ssrc),
        }
    }

    /// Notes an SR or RR from `ssrc` at `now`: it counts as heard from,
    /// and if it sends no RTP here, as an RTCP-only member.
    pub fn heard_rtcp_from(&mut self, ssrc: u32, now: Instant) {
        match self.index_of(ssrc) {
            Some(index) => self.membership.heard_rtcp(index, now),
            None => self.membership.heard_listener(ssrc, now),
        }
    }

    /// RFC 3550 6.3.5's check at `now` ([`Membership::check`]). True if a
    /// member timed out.
    pub fn check_membership(
        &mut self,
        now: Instant,
        member_timeout: Duration,
        sender_timeout: Duration,
    ) -> bool {
        let used = usize::from(self.streams_used >> 4);
        let counts = self.streams.iter().take(used).map(|s| s.counters().packets);
        self.membership
            .check(counts, now, member_timeout, sender_timeout)
    }

    /// The index of tracked `ssrc`.
    fn index_of(&self, ssrc: u32) -> Option<usize> {
        self.used().iter().position(|s| s.ssrc() == ssrc)
    }

    /// True if any SSRC is tracked.
    pub fn has_streams(&self) -> bool {
        self.streams_used >> 4 > 0
    }

    /// Each tracked SSRC with its counters and jitter in nanoseconds.
    pub fn streams(&self) -> impl Iterator<Item = StreamReport> + '_ {
        self.used().iter().map(|s| StreamReport {
            ssrc: s.ssrc(),
            counters: s.counters(),
            jitter_ns: u64::try_from(s.jitter_duration().as_nanos()).unwrap_or(u64::MAX),
        })
    }

    /// The leg's figures, as reported.
    pub fn report(&self) -> LegReport {
        LegReport {
            peer: self.rtp.peer(),
            latched: self.rtp.is_latched(),
            relatches: self.rtp.relatches(),
            streams: self.streams().collect(),
            counters: self.counters(),
        }
    }
}

impl Default for LegState {
    /// A leg with the default latching, no peer and SSRC 0 (what a
    /// removed session leaves in its slot).
    fn default() -> LegState {
        LegState::new(LatchConfig::default(), None, false, 0)
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
pub(super) mod tests {
    use super::*;

    fn leg(peer: Option<SocketAddr>, mux: bool) -> LegState {
        LegState::new(LatchConfig::default(), peer, mux, 1)
    }

    /// Packet `seq` of a G.711 stream from `ssrc`: 20 ms, 160 bytes.
    pub(in crate::relay) fn g711(ssrc: u32, seq: u16) -> RtpSummary {
        RtpSummary {
            payload_type: 0,
            seq,
            timestamp: u32::from(seq) * 160,
            ssrc,
            payload_len: 160,
        }
    }

    #[test]
    fn static_payload_types_have_their_clock_rates() {
        assert_eq!(clock_rate(0, 48000), 8000);
        assert_eq!(clock_rate(8, 48000), 8000);
        assert_eq!(clock_rate(9, 48000), 8000, "G.722's RTP clock is 8000");
        assert_eq!(clock_rate(31, 48000), 90000);
        assert_eq!(clock_rate(111, 48000), 48000);
    }

    #[test]
    fn a_new_ssrc_takes_the_slot_of_one_that_left_and_its_figures_are_kept() {
        let mut leg = leg(None, false);
        let t = Instant::ZERO;
        let send = |leg: &mut LegState, ssrc: u32, packets: u16| {
            for seq in 0..packets {
                leg.record(g711(ssrc, seq), t, 8000);
            }
        };
        send(&mut leg, 1, 3);
        send(&mut leg, 2, 4);
        // Both members: a third source has no slot.
        send(&mut leg, 3, 1);
        assert_eq!(leg.counters().untracked, 1);
        // Source 1 says BYE (a transfer): the next new source takes its slot.
        assert!(leg.mark_left(1));
        send(&mut leg, 3, 5);
        let ssrcs: Vec<u32> = leg.streams().map(|s| s.ssrc).collect();
        assert_eq!(ssrcs, [3, 2]);
        assert_eq!(leg.stream_mut(3).map(|s| s.counters().packets), Some(5));
        assert_eq!(leg.member_count(), 2, "the newcomer is a member");
        let c = leg.counters();
        assert_eq!((c.retired, c.retired_packets), (1, 3));
        assert_eq!(c.retired_bytes, 3 * 160);
        assert_eq!(c.untracked, 1, "no more untracked packets");
        // And source 1, heard again, is a new source with no free slot.
        send(&mut leg, 1, 1);
        assert_eq!(leg.counters().untracked, 2);
    }

    #[test]
    fn ssrcs_beyond_the_limit_are_counted_not_tracked() {
        let mut leg = leg(None, false);
        let t = Instant::ZERO;
        for ssrc in 1..=3u32 {
            for seq in 0..4u16 {
                leg.record(g711(ssrc, seq), t, 8000);
            }
        }
        let streams: Vec<_> = leg.streams().collect();
        assert_eq!(streams.len(), SSRCS_PER_LEG);
        assert_eq!(streams[0].counters.packets, 4);
        assert_eq!(streams[1].ssrc, 2);
        assert_eq!(leg.counters().untracked, 4);
        assert!(leg.stream_mut(3).is_none());
    }

    #[test]
    fn a_source_that_says_bye_is_no_longer_a_member() {
        let mut leg = leg(None, false);
        for ssrc in [7, 8] {
            leg.record(g711(ssrc, 1), Instant::ZERO, 8000);
        }
        assert_eq!(leg.member_count(), 2);
        assert!(!leg.mark_left(9), "not tracked");
        assert!(leg.mark_left(7));
        assert!(!leg.mark_left(7), "already gone");
        assert_eq!(leg.member_count(), 1);
        let members: Vec<u32> = leg.members_mut().map(|s| s.ssrc()).collect();
        assert_eq!(members, [8]);
        // Its statistics stay, and keep counting.
        leg.record(g711(7, 2), Instant::ZERO, 8000);
        assert_eq!(leg.stream_mut(7).map(|s| s.counters().packets), Some(2));
        assert_eq!(leg.streams().count(), 2);
        assert_eq!(leg.member_count(), 1);
    }

    #[test]
    fn an_rtcp_only_participant_is_a_member_once() {
        let mut leg = leg(None, false);
        leg.heard_rtcp_from(0x77, Instant::ZERO);
        assert_eq!((leg.member_count(), leg.sender_count()), (1, 0));
        // Then it sends RTP: one member, now a tracked stream.
        leg.record(g711(0x77, 1), Instant::ZERO, 8000);
        assert_eq!((leg.member_count(), leg.sender_count()), (1, 1));
        assert!(leg.mark_left(0x77));
        assert_eq!(leg.member_count(), 0);
        // A receive-only participant's BYE.
        leg.heard_rtcp_from(0x78, Instant::ZERO);
        assert_eq!(leg.member_count(), 1);
        assert!(leg.mark_left(0x78) && !leg.mark_left(0x78));
        assert_eq!(leg.member_count(), 0);
    }

    #[test]
    fn rtcp_goes_next_to_the_rtp_peer_until_heard() {
        let signalled: SocketAddr = "10.0.0.2:5004".parse().unwrap();
        let mut leg = leg(Some(signalled), false);
        assert_eq!(leg.rtcp_destination(false), "10.0.0.2:5005".parse().ok());
        let nat: SocketAddr = "192.0.2.9:40000".parse().unwrap();
        leg.observe_rtp(nat, 1, Instant::ZERO);
        assert_eq!(leg.rtcp_destination(false), "192.0.2.9:40001".parse().ok());
        let rtcp_nat: SocketAddr = "192.0.2.9:40555".parse().unwrap();
        leg.observe_rtcp(rtcp_nat, Instant::ZERO);
        assert_eq!(leg.rtcp_destination(false), Some(rtcp_nat));
        let muxed = LegState::new(LatchConfig::default(), Some(signalled), true, 1);
        assert_eq!(muxed.rtcp_destination(true), Some(signalled));
        let top: SocketAddr = "10.0.0.2:65535".parse().unwrap();
        assert_eq!(rtcp_of(top, false), None);
    }

    #[test]
    fn a_lane_copy_takes_the_newest_news_only_and_records_nothing_of_the_original() {
        let signalled: SocketAddr = "10.0.0.2:5004".parse().unwrap();
        let (nat, later): (SocketAddr, SocketAddr) = (
            "192.0.2.9:40000".parse().unwrap(),
            "192.0.2.9:40002".parse().unwrap(),
        );
        let mut here = leg(Some(signalled), false);
        here.record(g711(7, 1), Instant::ZERO, 8000);
        here.take_dst_change();
        let mut there = here.lane_copy();
        assert!(!there.has_streams() && there.counters() == LegCounters::default());
        assert_eq!(there.dst(), Some(signalled));
        // This lane latches; its news reaches the copy.
        assert_eq!(here.observe_rtp(nat, 1, Instant::ZERO), Verdict::Latched);
        let first = here.news(1);
        assert_eq!(first.rtp, Some(nat));
        assert!(there.adopt(&first, Instant::ZERO));
        assert!(there.take_dst_change());
        assert_eq!(there.dst(), Some(nat));
        assert_eq!(
            there.observe_rtp(signalled, 9, Instant::ZERO),
            Verdict::Foreign
        );
        assert_eq!(there.observe_rtp(nat, 2, Instant::ZERO), Verdict::Peer);
        // Newer news wins; older news arriving late is ignored.
        let newer = PeerNews {
            ticket: 3,
            rtp: Some(later),
            ..first
        };
        let older = PeerNews { ticket: 2, ..first };
        assert!(there.adopt(&newer, Instant::ZERO));
        assert!(!there.adopt(&older, Instant::ZERO));
        assert!(!there.adopt(&newer, Instant::ZERO), "taken once");
        assert_eq!(there.dst(), Some(later));
        assert_eq!(there.rtp_latch().relatches(), 0, "adopting is no relatch");
    }

    #[test]
    fn the_hot_fields_share_few_cache_lines() {
        use std::mem::{align_of, offset_of, size_of};
        assert_eq!(align_of::<LegState>(), 64);
        assert_eq!(size_of::<LegState>() % 64, 0);
        // Line 0: forwarded, both addresses, flags, then the first
        // stream, whose hot part (checked in rtp::stats) ends in line 1.
        assert!(offset_of!(LegState, streams_used) < 64);
        assert!(offset_of!(LegState, fwd) < 64);
        let first = offset_of!(LegState, streams);
        let hot = crate::rtp::stats::HOT_BYTES;
        assert!(first < 64 && first + hot <= 128, "{first} + {hot}");
    }

    #[test]
    fn the_destination_follows_the_latch() {
        let signalled: SocketAddr = "10.0.0.2:5004".parse().unwrap();
        let nat: SocketAddr = "192.0.2.9:40000".parse().unwrap();
        let other: SocketAddr = "192.0.2.9:40002".parse().unwrap();
        let mut leg = leg(Some(signalled), false);
        assert_eq!((leg.dst(), leg.settled), (Some(signalled), false));
        assert!(leg.take_dst_change() && !leg.take_dst_change());
        assert_eq!(leg.observe_rtp(nat, 1, Instant::ZERO), Verdict::Latched);
        assert_eq!((leg.dst(), leg.settled), (Some(nat), true));
        assert!(leg.take_dst_change());
        leg.set_forward(Some(other));
        assert_eq!(leg.forward_to(), Stored::Here(Some(other)));
        assert_eq!(leg.observe_rtp(nat, 2, Instant::ZERO), Verdict::Peer);
        assert_eq!(leg.observe_rtp(other, 1, Instant::ZERO), Verdict::Foreign);
        // With re-latching, the latch keeps being asked (it notes when the
        // peer was last heard) and the destination follows a re-latch.
        let config = LatchConfig {
            probation: 1,
            relatch_after: Some(dpstack_stack::time::Duration::from_millis(100)),
        };
        let mut leg = LegState::new(config, None, false, 1);
        let ms = |n: u64| Instant::from_nanos(n * 1_000_000);
        assert_eq!(leg.observe_rtp(nat, 1, ms(0)), Verdict::Latched);
        assert!(!leg.settled);
        assert_eq!(leg.observe_rtp(nat, 2, ms(50)), Verdict::Peer);
        assert_eq!(leg.observe_rtp(other, 1, ms(120)), Verdict::Foreign);
        assert_eq!(leg.observe_rtp(other, 2, ms(151)), Verdict::Latched);
        assert_eq!(leg.dst(), Some(other));
    }
}
