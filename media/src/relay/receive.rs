//! The relay's per-packet path: for each datagram, one
//! [`SessionTable::lookup_hot`](crate::SessionTable::lookup_hot) finds the
//! session's state, leg, channel and the socket to send on from (the
//! session's other bookkeeping is read only by RTCP, a latch and a peer
//! change); each datagram is classified (RTP or RTCP,
//! RFC 5761 on RTP ports), checked (RFC 3550 A.1 header checks, A.2 for
//! RTCP), judged by the leg's latch, recorded in its SSRC's statistics and
//! sent from the other leg's socket to that leg's peer, or, in echo mode,
//! reflected to its sender from its own buffer.
//!
//! The arrival time of each packet is its receive timestamp
//! ([`Datagram::received_at`]): the time the lcore read just before the rx
//! burst.
//!
//! Invariants: no allocation, lock, clock read, log line or `dyn` call;
//! no panic on any input; every datagram that is not sent on is counted
//! once, by [`RelayDrop`] reason and on its leg.

use super::addr::Stored;
use super::{Drops, LaneLink, LegState, Relay, RelayDrop, RelayOptions, Session};
use crate::rtp::{classify, ArrivalClock, Compound, Kind, RtcpPacket, RtpSummary};
use crate::{Channel, Hot, HotEndpoint, Verdict};
use dpstack_stack::iface::{Batch, LcoreContext, SendError};
use dpstack_stack::port::{Buf, Port};
use dpstack_stack::time::Instant;
use dpstack_stack::udp::{Datagram, SocketId};
use std::net::SocketAddr;

impl Relay {
    /// Takes a batch of datagrams that reached `socket` (one of the
    /// relay's, see [`Relay::owns`]; others are counted as
    /// `unknown_socket` and freed). Per packet. Not inlined (the relay's
    /// own handler takes each datagram in [`Relay::on_datagram`]), so that
    /// `Relay::take` is inlined only where it runs per packet.
    #[inline(never)]
    pub fn on_datagrams<B: Buf, P: Port<Buf = B>>(
        &mut self,
        socket: SocketId,
        batch: &mut Batch<B>,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        debug_assert!(batch.iter().all(|d| d.socket() == socket));
        for datagram in batch.drain(..) {
            self.take(datagram, ctx);
        }
    }

    /// A whole burst across sockets, for an app whose handler takes whole
    /// bursts (`InlineHandler::WHOLE_BURSTS`), each datagram as
    /// [`Relay::on_datagrams`] takes it. Reading every
    /// session's state in a first pass, to overlap the cache misses, was
    /// tried and cost more than it saved (~560 vs ~480 cycles a packet).
    /// Inlined into the receive path, with `Relay::take` inlined in its
    /// loop: no call per packet but the forward's.
    #[inline]
    pub fn on_burst<B: Buf, P: Port<Buf = B>>(
        &mut self,
        batch: &mut Batch<B>,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        for datagram in batch.drain(..) {
            self.take(datagram, ctx);
        }
    }

    /// One datagram as the receive loop hands it over
    /// (`InlineHandler::EACH_DATAGRAM`): no batch to push it into and read
    /// it back from. Inlined into the receive loop.
    #[inline(always)]
    pub fn on_datagram<B: Buf, P: Port<Buf = B>>(
        &mut self,
        datagram: Datagram<B>,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        self.take(datagram, ctx);
    }

    /// One datagram: its session found by its socket (one O(1) lookup; with
    /// thousands of sessions consecutive datagrams rarely share a socket),
    /// then relayed, echoed or counted as a drop. Inlined into the two
    /// loops that call it.
    #[inline(always)]
    fn take<B: Buf, P: Port<Buf = B>>(
        &mut self,
        datagram: Datagram<B>,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        let Relay {
            table,
            options,
            drops,
            lanes,
            clock,
            ..
        } = self;
        let Some(Hot { at, value }) = table.lookup_hot(datagram.socket()) else {
            count(drops, RelayDrop::UnknownSocket);
            return;
        };
        if let Err(reason) = value.receive(at, datagram, (options, clock), lanes, ctx) {
            count(drops, reason);
            let leg = value.legs[at.leg().index()].counters_mut();
            leg.dropped = leg.dropped.saturating_add(1);
        }
    }
}

fn count(drops: &mut Drops, reason: RelayDrop) {
    let slot = &mut drops[reason as usize];
    *slot = slot.saturating_add(1);
}

fn bump(counter: &mut u64) {
    *counter = counter.saturating_add(1);
}

/// Sends an RTP packet on to where `this` leg's packets go when that is
/// not an IPv4 address: an IPv6 peer, or none (`NoPeer`). Out of line, so
/// that the IPv4 case, per packet, tests the family byte once instead of
/// jumping on it.
#[cold]
#[inline(never)]
fn forward_elsewhere<B: Buf, P: Port<Buf = B>>(
    this: &LegState,
    other: &LegState,
    datagram: Datagram<B>,
    from: SocketId,
    ctx: &mut LcoreContext<'_, P>,
) -> Result<Result<(), SendError>, RelayDrop> {
    let dst = match this.forward_to() {
        Stored::Here(dst) => dst,
        Stored::Elsewhere => other.dst(),
    };
    let dst = dst.ok_or(RelayDrop::NoPeer)?;
    Ok(ctx.forward(datagram, from, dst))
}

/// Connects `socket` to `peer` when this packet latched its leg (and
/// connecting is asked for and latching is final: a connected socket hears
/// nobody else, so it could never re-latch). Once per latch.
#[inline]
fn latched<P: Port>(
    verdict: Verdict,
    options: &RelayOptions,
    socket: SocketId,
    peer: impl FnOnce() -> SocketAddr,
    ctx: &mut LcoreContext<'_, P>,
) {
    if verdict == Verdict::Latched
        && options.connect_on_latch
        && options.latch.relatch_after.is_none()
    {
        ctx.udp_connect(socket, peer());
    }
}

/// Judges an RTP packet from `source` (not the settled peer) by `this`
/// leg's latch: the other leg told where this leg's peer now is if that
/// changed (and the other lanes, on lanes), the packet accepted or dropped
/// by the verdict, and the socket connected if this packet latched and
/// that is asked for. Out of line: the settled peer's packets, nearly all,
/// never come here.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn judge<P: Port>(
    at: HotEndpoint<'_>,
    (this, other): (&mut LegState, &mut LegState),
    source: SocketAddr,
    seq: u16,
    now: Instant,
    options: &RelayOptions,
    lanes: &mut Option<LaneLink>,
    ctx: &mut LcoreContext<'_, P>,
) -> Result<(), RelayDrop> {
    let leg = at.leg();
    let verdict = this.observe_rtp(source, seq, now);
    if this.take_dst_change() {
        other.set_forward(this.dst());
        if let Some(lanes) = lanes {
            lanes.note(at.endpoint().session, leg);
        }
    }
    admit(verdict, this)?;
    if verdict == Verdict::Latched {
        if let Some(legs) = at.legs() {
            latched(verdict, options, legs[leg.index()].rtp, || source, ctx);
        }
    }
    Ok(())
}

/// Turns a latch verdict into accept or a drop reason (counting a foreign
/// packet on `leg`). The kernel-socket reference relay shares it.
#[inline]
pub fn admit(verdict: Verdict, leg: &mut LegState) -> Result<(), RelayDrop> {
    match verdict {
        Verdict::Peer | Verdict::Latched => Ok(()),
        Verdict::Learning => Err(RelayDrop::Learning),
        Verdict::Foreign => {
            bump(&mut leg.counters_mut().foreign);
            Err(RelayDrop::Foreign)
        }
    }
}

impl Session {
    /// One datagram that reached `at`. Always inlined, as are
    /// [`Session::rtp`] and the latch's settled test: the compiler's own
    /// choice put one of them out of line, the datagram then passed in
    /// memory (about 30 instructions a packet).
    #[inline(always)]
    fn receive<B: Buf, P: Port<Buf = B>>(
        &mut self,
        at: HotEndpoint<'_>,
        datagram: Datagram<B>,
        (options, clock): (&RelayOptions, &mut ArrivalClock),
        lanes: &mut Option<LaneLink>,
        ctx: &mut LcoreContext<'_, P>,
    ) -> Result<(), RelayDrop> {
        let payload = datagram.payload();
        // Most RTP is judged by its first byte alone (`parse_plain`); the
        // rest is classified, then checked as RTP or RTCP.
        let header = match at.channel() {
            Channel::Rtp => match RtpSummary::parse_plain(payload) {
                Some(header) => Some(header),
                None => match classify(payload) {
                    Kind::Rtp => Some(RtpSummary::parse(payload).map_err(|_| RelayDrop::BadRtp)?),
                    Kind::Rtcp => None,
                    Kind::Other => return Err(RelayDrop::NotRtp),
                },
            },
            Channel::Rtcp => None,
        };
        match header {
            Some(header) => self.rtp(at, datagram, header, (options, clock), lanes, ctx),
            None => self.rtcp(at, datagram, options, lanes, ctx),
        }
    }

    /// A checked RTP packet (`header`, its fields): latch, record, send on.
    #[inline(always)]
    fn rtp<B: Buf, P: Port<Buf = B>>(
        &mut self,
        at: HotEndpoint<'_>,
        datagram: Datagram<B>,
        header: RtpSummary,
        (options, clock): (&RelayOptions, &mut ArrivalClock),
        lanes: &mut Option<LaneLink>,
        ctx: &mut LcoreContext<'_, P>,
    ) -> Result<(), RelayDrop> {
        let leg = at.leg();
        let now = datagram.received_at();
        let (this, other) = leg.split(&mut self.legs);
        // The common case, the settled peer, straight through; any other
        // source is judged by the latch, out of line.
        if !this.is_settled_peer(datagram.src_v4()) {
            let source = datagram.src();
            judge(
                at,
                (this, other),
                source,
                header.seq,
                now,
                options,
                lanes,
                ctx,
            )?;
        } else if this.take_dst_change() {
            // Another lane's news moved this leg's peer (`LegState::adopt`).
            other.set_forward(this.dst());
            if let Some(lanes) = lanes {
                lanes.note(at.endpoint().session, leg);
            }
        }
        this.record_with(header, now, options.clock_rate, clock);
        if options.echo {
            ctx.reply(datagram);
        } else {
            let from = at.forward_from;
            // In the received buffer: headers rewritten, payload untouched
            // (copied only for a change of IP version). An IPv4 peer, the
            // common case, first: no `SocketAddr` built on the way.
            let sent = match this.forward_to_v4() {
                Some(dst) => ctx.forward(datagram, from, dst),
                None => forward_elsewhere(this, other, datagram, from, ctx)?,
            };
            sent.map_err(|_| RelayDrop::SendFailed)?;
        }
        this.count_forwarded();
        Ok(())
    }

    /// A compound RTCP packet: check, latch, note sender reports and BYEs
    /// (sources leaving the leg's membership, RFC 3550 6.3.4), send on.
    #[inline]
    fn rtcp<B: Buf, P: Port<Buf = B>>(
        &mut self,
        at: HotEndpoint<'_>,
        datagram: Datagram<B>,
        options: &RelayOptions,
        lanes: &mut Option<LaneLink>,
        ctx: &mut LcoreContext<'_, P>,
    ) -> Result<(), RelayDrop> {
        // A mapped socket's session is live: both are there.
        let (Some(legs), at) = (at.legs(), at.endpoint()) else {
            return Err(RelayDrop::UnknownSocket);
        };
        let now: Instant = datagram.received_at();
        let leg = at.leg;
        let own = legs[leg.index()];
        let (this, other) = leg.split(&mut self.legs);
        {
            let compound =
                Compound::new_checked(datagram.payload()).map_err(|_| RelayDrop::BadRtcp)?;
            let source = datagram.src();
            let verdict = match at.channel {
                Channel::Rtp => this.observe_rtcp_on_rtp_port(source, now),
                Channel::Rtcp => this.observe_rtcp(source, now),
            };
            admit(verdict, this)?;
            let moved = match (at.channel, own.rtcp) {
                (Channel::Rtcp, Some(socket)) => {
                    let moved = this.note_rtcp_port(false);
                    latched(verdict, options, socket, || source, ctx);
                    moved
                }
                // Implicit rtcp-mux. The RTCP socket is not connected to
                // this source: it is the peer's RTP port, which the RTP
                // latch connects the RTP socket to.
                (Channel::Rtp, Some(_)) => this.note_rtcp_port(true),
                // rtcp-mux: RTCP is on the RTP socket anyway.
                (_, None) => false,
            };
            // The other lanes forward this leg's RTCP by its peers.
            if let Some(lanes) = lanes
                .as_mut()
                .filter(|_| moved || verdict == Verdict::Latched)
            {
                lanes.note(at.session, leg);
            }
            for packet in compound.packets() {
                match packet {
                    RtcpPacket::SenderReport(sr) => {
                        this.heard_rtcp_from(sr.ssrc(), now);
                        if let Some(stats) = this.stream_mut(sr.ssrc()) {
                            stats.record_sender_report(sr.sender_info().ntp_timestamp, now);
                        }
                    }
                    RtcpPacket::ReceiverReport(rr) => this.heard_rtcp_from(rr.ssrc(), now),
                    RtcpPacket::Bye(bye) => this.heard_bye(bye.bye_sources(), now),
                    _ => {}
                }
            }
        }
        let size = datagram.payload().len();
        this.reports.heard_rtcp(size, datagram.is_ipv6());
        let counters = this.counters_mut();
        bump(&mut counters.rtcp);
        counters.rtcp_bytes = counters.rtcp_bytes.saturating_add(size as u64);
        if options.echo {
            ctx.reply(datagram);
        } else {
            let out = legs[leg.other().index()];
            let dst = other
                .rtcp_destination(out.is_mux())
                .ok_or(RelayDrop::NoPeer)?;
            ctx.forward(datagram, other.rtcp_sender(out), dst)
                .map_err(|_| RelayDrop::SendFailed)?;
        }
        bump(&mut this.counters_mut().rtcp_forwarded);
        Ok(())
    }
}
