//! The relay's per-packet decision, without sockets: the same steps as
//! `dpstack-rtp-relay`'s handler (apps/rtp_relay/relay.rs), on a payload
//! and its source instead of a stack datagram. Each datagram is classified
//! (RTP or RTCP, RFC 5761 on RTP ports), checked (RFC 3550 A.1 header
//! checks, A.2 compound checks for RTCP), judged by its leg's latch,
//! recorded in its SSRC's statistics ([`LegState`], the stack's relay
//! library's leg) and answered with where it goes: the other leg's socket
//! of the same channel, to that leg's peer. Drop reasons and their names
//! are the library's ([`RelayDrop`]; `unknown_socket` never happens here:
//! every socket belongs to a session).
//!
//! Invariants: no allocation, clock read, log line or system call; no
//! panic on any input; a datagram either yields a [`Forward`] (and the
//! caller reports the send with [`Session::sent`] or [`Session::send_failed`])
//! or a [`RelayDrop`] already counted on its leg.

use dpstack::media::relay::receive::admit;
use dpstack::media::relay::{Drops, LegState, RelayDrop};
use dpstack::media::rtp::{classify, Compound, Kind, RtcpPacket, RtpPacket};
use dpstack::media::{Channel, LatchConfig, Leg};
use dpstack::stack::time::Instant;
use std::net::SocketAddr;

/// Adds `n` to `reason`'s count.
pub fn count(drops: &mut Drops, reason: RelayDrop, n: u64) {
    let slot = &mut drops[reason as usize];
    *slot = slot.saturating_add(n);
}

/// How the relay treats media.
#[derive(Debug, Clone, Copy)]
pub struct RelayOptions {
    /// How legs learn their peers.
    pub latch: LatchConfig,
    /// Clock rate for payload types without a static one.
    pub clock_rate: u32,
}

/// Where a datagram goes: from `leg`'s `channel` socket to `dst`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Forward {
    /// The leg whose socket sends it (the other leg).
    pub leg: Leg,
    /// Its RTP or RTCP socket.
    pub channel: Channel,
    /// The other leg's peer.
    pub dst: SocketAddr,
    /// RTP or RTCP (which counter [`Session::sent`] bumps).
    pub kind: Kind,
}

/// One session: legs A and B.
#[derive(Debug, Clone)]
pub struct Session {
    /// Legs A and B.
    pub legs: [LegState; 2],
}

fn bump(counter: &mut u64) {
    *counter = counter.saturating_add(1);
}

impl Session {
    /// A session whose legs expect their peers at `peers` (signalled), or
    /// learn them by latching.
    /// (`ssrc` is the library's own SSRC for receiver reports, which this
    /// relay does not send.)
    pub fn new(options: &RelayOptions, peers: [Option<SocketAddr>; 2]) -> Session {
        Session {
            legs: peers.map(|peer| LegState::new(options.latch, peer, false, 0)),
        }
    }

    /// One datagram `payload` from `source` that reached `leg`'s `channel`
    /// socket at `now`: where to send it, or why not (counted on the leg).
    #[inline]
    pub fn receive(
        &mut self,
        leg: Leg,
        channel: Channel,
        payload: &[u8],
        source: SocketAddr,
        now: Instant,
        options: &RelayOptions,
    ) -> Result<Forward, RelayDrop> {
        let kind = match channel {
            Channel::Rtp => classify(payload),
            Channel::Rtcp => Kind::Rtcp,
        };
        let outcome = match kind {
            Kind::Rtp => self.rtp(leg, payload, source, now, options),
            Kind::Rtcp => self.rtcp(leg, payload, source, now),
            Kind::Other => Err(RelayDrop::NotRtp),
        };
        if outcome.is_err() {
            self.dropped(leg);
        }
        outcome
    }

    /// A datagram that reached `leg` and was dropped before the decision
    /// (e.g. truncated): counted on the leg.
    pub fn dropped(&mut self, leg: Leg) {
        bump(&mut self.legs[leg.index()].counters_mut().dropped);
    }

    /// The forward decided for a datagram from `leg` was sent.
    #[inline]
    pub fn sent(&mut self, leg: Leg, kind: Kind) {
        let state = &mut self.legs[leg.index()];
        match kind {
            Kind::Rtcp => bump(&mut state.counters_mut().rtcp_forwarded),
            _ => state.count_forwarded(),
        }
    }

    /// The forward decided for a datagram from `leg` could not be sent.
    pub fn send_failed(&mut self, leg: Leg) {
        self.dropped(leg);
    }

    #[inline]
    fn rtp(
        &mut self,
        leg: Leg,
        payload: &[u8],
        source: SocketAddr,
        now: Instant,
        options: &RelayOptions,
    ) -> Result<Forward, RelayDrop> {
        let packet = RtpPacket::new_checked(payload).map_err(|_| RelayDrop::BadRtp)?;
        let seq = packet.seq();
        let (this, other) = leg.split(&mut self.legs);
        admit(this.observe_rtp(source, seq, now), this)?;
        this.record(packet.summary(), now, options.clock_rate);
        let dst = other.dst().ok_or(RelayDrop::NoPeer)?;
        Ok(Forward {
            leg: leg.other(),
            channel: Channel::Rtp,
            dst,
            kind: Kind::Rtp,
        })
    }

    #[inline]
    fn rtcp(
        &mut self,
        leg: Leg,
        payload: &[u8],
        source: SocketAddr,
        now: Instant,
    ) -> Result<Forward, RelayDrop> {
        let compound = Compound::new_checked(payload).map_err(|_| RelayDrop::BadRtcp)?;
        let (this, other) = leg.split(&mut self.legs);
        admit(this.observe_rtcp(source, now), this)?;
        for packet in compound.packets() {
            if let RtcpPacket::SenderReport(sr) = packet {
                if let Some(stats) = this.stream_mut(sr.ssrc()) {
                    stats.record_sender_report(sr.sender_info().ntp_timestamp, now);
                }
            }
        }
        let counters = this.counters_mut();
        bump(&mut counters.rtcp);
        let bytes = &mut counters.rtcp_bytes;
        *bytes = bytes.saturating_add(payload.len() as u64);
        let dst = other.rtcp_destination(false).ok_or(RelayDrop::NoPeer)?;
        Ok(Forward {
            leg: leg.other(),
            channel: Channel::Rtcp,
            dst,
            kind: Kind::Rtcp,
        })
    }
}

/// The index of session `session`'s `leg` `channel` socket: sockets are
/// laid out as ports are, four per session (A RTP, A RTCP, B RTP, B RTCP).
#[inline]
pub fn socket_index(session: usize, leg: Leg, channel: Channel) -> usize {
    4 * session + 2 * leg.index() + usize::from(channel == Channel::Rtcp)
}

/// The session, leg and channel of socket `index` (see [`socket_index`]).
#[inline]
pub fn endpoint_of(index: usize) -> (usize, Leg, Channel) {
    let leg = if index & 2 == 0 { Leg::A } else { Leg::B };
    let channel = if index & 1 == 0 {
        Channel::Rtp
    } else {
        Channel::Rtcp
    };
    (index / 4, leg, channel)
}
