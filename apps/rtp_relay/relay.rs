//! The relay as an inline [`UdpHandler`] on the polling lcore: for each
//! batch of datagrams of one socket, one [`SessionTable`] lookup finds the
//! session, leg and channel; each datagram is classified (RTP or RTCP,
//! RFC 5761 on RTP ports), checked (RFC 3550 A.1 header checks, A.2 for
//! RTCP), judged by the leg's latch, recorded in its SSRC's statistics and
//! sent from the other leg's socket to that leg's peer (address and
//! port rewritten, like rtpengine's in-kernel forwarding), or, in echo
//! mode, reflected to its sender from its own buffer.
//!
//! The receive timestamp of every packet is `ctx.now()`: the TSC time the
//! lcore takes once per poll, just before the rx burst, so all packets of
//! a burst share it (at most 32 packets, microseconds apart).
//!
//! Invariants: no allocation, lock, clock read, log line or `dyn` call per
//! packet; no panic on any input; every datagram that is not sent on is
//! counted once, by [`RelayDrop`] reason and on its leg. The statistics
//! leave the lcore only as snapshots the main thread asks for
//! ([`StatsLink`]), copied into a buffer it provides.

use crate::config::{assign_ports, SessionPorts, SessionSpec};
use crate::leg::LegState;
use crate::report::{LegReport, SessionReport, Snapshot, StatsLink};
use dpstack::stack::iface::{Batch, Interface, UdpContext, UdpHandler};
use dpstack::stack::media::{
    Channel, Endpoint, Entry, LatchConfig, Leg, LegSockets, SessionTable, Verdict,
};
use dpstack::stack::port::{Buf, Port};
use dpstack::stack::rtp::{classify, Compound, Kind, RtcpPacket, RtpPacket};
use dpstack::stack::time::Instant;
use dpstack::stack::udp::{BindOptions, Datagram, SocketId};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::ops::RangeInclusive;
use std::sync::atomic::Ordering;

/// Why a datagram was not sent on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelayDrop {
    /// It reached a socket with no session (none is bound).
    UnknownSocket,
    /// Neither RTP nor RTCP (another version, too short, STUN, DTLS...).
    NotRtp,
    /// It failed RTP's header checks.
    BadRtp,
    /// It failed RTCP's compound checks (on an RTCP port: also RTP sent
    /// there).
    BadRtcp,
    /// From another source than the leg's latched peer.
    Foreign,
    /// From a source still on latching probation.
    Learning,
    /// The other leg has no peer yet (not heard, none signalled).
    NoPeer,
    /// Sending it on failed (no route, no buffer, unresolved neighbour:
    /// the stack counts those too).
    SendFailed,
}

impl RelayDrop {
    /// Every reason, in counter order.
    pub const ALL: [RelayDrop; 8] = [
        RelayDrop::UnknownSocket,
        RelayDrop::NotRtp,
        RelayDrop::BadRtp,
        RelayDrop::BadRtcp,
        RelayDrop::Foreign,
        RelayDrop::Learning,
        RelayDrop::NoPeer,
        RelayDrop::SendFailed,
    ];

    /// The counter's name.
    pub fn name(self) -> &'static str {
        match self {
            RelayDrop::UnknownSocket => "unknown_socket",
            RelayDrop::NotRtp => "not_rtp",
            RelayDrop::BadRtp => "bad_rtp",
            RelayDrop::BadRtcp => "bad_rtcp",
            RelayDrop::Foreign => "foreign_source",
            RelayDrop::Learning => "latch_learning",
            RelayDrop::NoPeer => "no_peer",
            RelayDrop::SendFailed => "send_failed",
        }
    }
}

/// Counts by [`RelayDrop`] reason.
pub type Drops = [u64; RelayDrop::ALL.len()];

/// How the relay treats media.
#[derive(Debug, Clone, Copy)]
pub struct RelayOptions {
    /// Reflect media back to its sender instead of relaying.
    pub echo: bool,
    /// How legs learn their peers.
    pub latch: LatchConfig,
    /// Clock rate for payload types without a static one.
    pub clock_rate: u32,
    /// DSCP of everything the media sockets send (46, EF, by default):
    /// the sockets' TOS byte is `dscp << 2`.
    pub dscp: u8,
    /// Connect a leg's socket to its peer when it latches (only without
    /// re-latching): sends keep their route, and the stack, not the relay,
    /// then refuses other sources (ICMP port unreachable, counted as
    /// no-port drops instead of `foreign_source`).
    pub connect_on_latch: bool,
}

/// One session: legs A and B.
#[derive(Debug, Clone)]
pub struct Session {
    legs: [LegState; 2],
}

/// The handler. See the module documentation.
#[derive(Debug)]
pub struct Relay {
    table: SessionTable<Session>,
    options: RelayOptions,
    drops: Drops,
    stats: Option<StatsLink>,
}

impl Relay {
    /// Binds every session's sockets on `iface` at `ip` (fixed ports as
    /// given, `auto` ones from `range`) and makes the relay. Session `i`
    /// of `specs` gets slot `i`.
    pub fn build<B: Buf>(
        iface: &mut Interface<B>,
        ip: Ipv4Addr,
        specs: &[SessionSpec],
        range: RangeInclusive<u16>,
        options: RelayOptions,
    ) -> Result<(Relay, Vec<SessionPorts>), String> {
        let ports = assign_ports(specs, range)?;
        let mut table = SessionTable::with_capacity(specs.len(), 4 * specs.len() + 16);
        for (spec, pair) in specs.iter().zip(&ports) {
            let mut bind = |port: u16| -> Result<SocketId, String> {
                let local = SocketAddrV4::new(ip, port);
                let options = BindOptions {
                    tos: options.dscp << 2,
                    ..BindOptions::default()
                };
                iface
                    .udp_bind(local, options)
                    .map_err(|e| format!("session {}: cannot bind {local}: {e}", spec.name))
            };
            let mut legs = [LegSockets {
                rtp: bind(pair[0])?,
                rtcp: None,
            }; 2];
            legs[1].rtp = bind(pair[1])?;
            if !spec.mux {
                legs[0].rtcp = Some(bind(pair[0] + 1)?);
                legs[1].rtcp = Some(bind(pair[1] + 1)?);
            }
            let session = Session {
                legs: spec
                    .legs
                    .map(|l| LegState::new(options.latch, l.peer, spec.mux)),
            };
            table
                .insert(legs, session)
                .map_err(|e| format!("session {}: {e}", spec.name))?;
        }
        let relay = Relay {
            table,
            options,
            drops: [0; RelayDrop::ALL.len()],
            stats: None,
        };
        Ok((relay, ports))
    }

    /// Serves snapshot requests through `link` from now on.
    pub fn set_stats_link(&mut self, link: StatsLink) {
        self.stats = Some(link);
    }

    /// Sessions relayed.
    pub fn sessions(&self) -> usize {
        self.table.len()
    }

    /// Copies every session's figures into `snapshot` (allocates nothing
    /// if it has room for them all).
    pub fn fill(&self, snapshot: &mut Snapshot) {
        snapshot.sessions.clear();
        snapshot.drops = self.drops;
        for (id, _, session) in self.table.iter() {
            let legs = [&session.legs[0], &session.legs[1]].map(|leg| LegReport {
                peer: leg.rtp.peer(),
                latched: leg.rtp.is_latched(),
                relatches: leg.rtp.relatches(),
                streams: leg.streams().collect(),
                counters: leg.counters,
            });
            snapshot.sessions.push(SessionReport {
                index: id.index(),
                legs,
            });
        }
    }

    /// A new snapshot (control path).
    pub fn snapshot(&self) -> Snapshot {
        let mut snapshot = Snapshot {
            sessions: Vec::with_capacity(self.table.len()),
            drops: [0; RelayDrop::ALL.len()],
        };
        self.fill(&mut snapshot);
        snapshot
    }
}

impl<B: Buf> UdpHandler<B> for Relay {
    #[inline]
    fn on_datagrams<P: Port<Buf = B>>(
        &mut self,
        socket: SocketId,
        batch: &mut Batch<B>,
        ctx: &mut UdpContext<'_, P>,
    ) {
        let now = ctx.now();
        let Relay {
            table,
            options,
            drops,
            ..
        } = self;
        let Some(Entry {
            endpoint,
            legs,
            value,
        }) = table.lookup_mut(socket)
        else {
            count(drops, RelayDrop::UnknownSocket, batch.len() as u64);
            return;
        };
        for datagram in batch.drain(..) {
            if let Err(reason) = value.receive(endpoint, &legs, datagram, now, options, ctx) {
                count(drops, reason, 1);
                let leg = &mut value.legs[endpoint.leg.index()].counters;
                leg.dropped = leg.dropped.saturating_add(1);
            }
        }
    }

    #[inline]
    fn on_poll<P: Port<Buf = B>>(&mut self, _ctx: &mut UdpContext<'_, P>) {
        // One atomic load per poll; the channel only when asked.
        let Some(link) = &self.stats else { return };
        if !link.requested.load(Ordering::Acquire) {
            return;
        }
        if let Ok(mut snapshot) = link.requests.try_recv() {
            link.requested.store(false, Ordering::Relaxed);
            self.fill(&mut snapshot);
            let _ = link.replies.try_send(snapshot);
        }
    }
}

fn count(drops: &mut Drops, reason: RelayDrop, n: u64) {
    let slot = &mut drops[reason as usize];
    *slot = slot.saturating_add(n);
}

fn bump(counter: &mut u64) {
    *counter = counter.saturating_add(1);
}

/// Connects `socket` to `peer` when this packet latched its leg (and
/// connecting is asked for and latching is final: a connected socket hears
/// nobody else, so it could never re-latch). Once per latch.
#[inline]
fn latched<P: Port>(
    verdict: Verdict,
    options: &RelayOptions,
    socket: SocketId,
    peer: std::net::SocketAddr,
    ctx: &mut UdpContext<'_, P>,
) {
    if verdict == Verdict::Latched
        && options.connect_on_latch
        && options.latch.relatch_after.is_none()
    {
        ctx.udp_connect(socket, peer);
    }
}

/// Turns a latch verdict into accept or a drop reason.
#[inline]
fn admit(verdict: Verdict, leg: &mut LegState) -> Result<(), RelayDrop> {
    match verdict {
        Verdict::Peer | Verdict::Latched => Ok(()),
        Verdict::Learning => Err(RelayDrop::Learning),
        Verdict::Foreign => {
            bump(&mut leg.counters.foreign);
            Err(RelayDrop::Foreign)
        }
    }
}

impl Session {
    /// This leg's state and the other's.
    fn pair(&mut self, leg: Leg) -> (&mut LegState, &mut LegState) {
        let [a, b] = &mut self.legs;
        match leg {
            Leg::A => (a, b),
            Leg::B => (b, a),
        }
    }

    /// One datagram that reached `at`.
    #[inline]
    fn receive<B: Buf, P: Port<Buf = B>>(
        &mut self,
        at: Endpoint,
        legs: &[LegSockets; 2],
        datagram: Datagram<B>,
        now: Instant,
        options: &RelayOptions,
        ctx: &mut UdpContext<'_, P>,
    ) -> Result<(), RelayDrop> {
        let kind = match at.channel {
            Channel::Rtp => classify(datagram.payload()),
            Channel::Rtcp => Kind::Rtcp,
        };
        match kind {
            Kind::Rtp => self.rtp(at.leg, legs, datagram, now, options, ctx),
            Kind::Rtcp => self.rtcp(at.leg, legs, datagram, now, options, ctx),
            Kind::Other => Err(RelayDrop::NotRtp),
        }
    }

    /// An RTP packet: check, latch, record, send on.
    #[inline]
    fn rtp<B: Buf, P: Port<Buf = B>>(
        &mut self,
        leg: Leg,
        legs: &[LegSockets; 2],
        datagram: Datagram<B>,
        now: Instant,
        options: &RelayOptions,
        ctx: &mut UdpContext<'_, P>,
    ) -> Result<(), RelayDrop> {
        let (ssrc, pt, seq, timestamp, len) = {
            let p = RtpPacket::new_checked(datagram.payload()).map_err(|_| RelayDrop::BadRtp)?;
            (
                p.ssrc(),
                p.payload_type(),
                p.seq(),
                p.timestamp(),
                p.payload().len(),
            )
        };
        let (this, other) = self.pair(leg);
        let source = datagram.src();
        let verdict = this.rtp.observe(source, Some(seq), now);
        admit(verdict, this)?;
        latched(verdict, options, legs[leg.index()].rtp, source, ctx);
        this.record(ssrc, pt, seq, timestamp, len, now, options.clock_rate);
        if options.echo {
            ctx.reply(datagram);
        } else {
            let dst = other.rtp.peer().ok_or(RelayDrop::NoPeer)?;
            let from = legs[leg.other().index()].rtp;
            // In the received buffer: headers rewritten, payload untouched.
            ctx.forward(datagram, from, dst)
                .map_err(|_| RelayDrop::SendFailed)?;
        }
        bump(&mut this.counters.forwarded);
        Ok(())
    }

    /// A compound RTCP packet: check, latch, note sender reports, send on.
    #[inline]
    fn rtcp<B: Buf, P: Port<Buf = B>>(
        &mut self,
        leg: Leg,
        legs: &[LegSockets; 2],
        datagram: Datagram<B>,
        now: Instant,
        options: &RelayOptions,
        ctx: &mut UdpContext<'_, P>,
    ) -> Result<(), RelayDrop> {
        let (this, other) = self.pair(leg);
        {
            let compound =
                Compound::new_checked(datagram.payload()).map_err(|_| RelayDrop::BadRtcp)?;
            let source = datagram.src();
            let verdict = this.rtcp.observe(source, None, now);
            admit(verdict, this)?;
            if let Some(socket) = legs[leg.index()].rtcp {
                latched(verdict, options, socket, source, ctx);
            }
            for packet in compound.packets() {
                if let RtcpPacket::SenderReport(sr) = packet {
                    if let Some(stats) = this.stream_mut(sr.ssrc()) {
                        stats.record_sender_report(sr.sender_info().ntp_timestamp, now);
                    }
                }
            }
        }
        bump(&mut this.counters.rtcp);
        let bytes = &mut this.counters.rtcp_bytes;
        *bytes = bytes.saturating_add(datagram.payload().len() as u64);
        if options.echo {
            ctx.reply(datagram);
        } else {
            let out = legs[leg.other().index()];
            let dst = other
                .rtcp_destination(out.is_mux())
                .ok_or(RelayDrop::NoPeer)?;
            ctx.forward(datagram, out.sender(Channel::Rtcp), dst)
                .map_err(|_| RelayDrop::SendFailed)?;
        }
        bump(&mut this.counters.rtcp_forwarded);
        Ok(())
    }
}
