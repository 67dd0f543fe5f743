//! An RTP/RTCP relay (and echo) for many sessions, as a library: what
//! `dpstack-rtp-relay` runs, and what any other app linking the stack can
//! run inside its own [`InlineHandler`] by composition.
//!
//! Each session has two legs (A and B), each an RTP socket and an RTCP
//! socket (or one socket under rtcp-mux). What a leg's peer sends is
//! classified (RTP or RTCP, RFC 5761 on RTP ports), checked (RFC 3550 A.1
//! header checks, A.2 for RTCP), judged by the leg's latch, recorded in its
//! SSRC's statistics and sent from the other leg's socket to that leg's
//! peer (address and port rewritten in the received buffer, like
//! rtpengine's in-kernel forwarding), or, in echo mode, reflected to its
//! sender. The relay can also send RTCP receiver reports of its own
//! ([`reports`]): always in echo mode (it is then the media endpoint), on
//! request ([`RelayOptions::rtcp_reports`]) in relay mode.
//!
//! Files by responsibility:
//! - this file: the [`Relay`], its options and drop reasons, and the
//!   control path (starting and stopping sessions on an interface,
//!   snapshots);
//! - [`receive`]: the per-packet path ([`Relay::on_datagrams`]);
//! - [`leg`]: one leg's state, laid out for that path ([`addr`]: the
//!   compact addresses it keeps there);
//! - [`reports`]: RTCP receiver reports at RFC 3550's interval, from
//!   [`Relay::on_poll`]; [`timer`]: one leg's report timer (6.3, with
//!   timer reconsideration and reverse reconsideration on BYE);
//! - [`spec`]: sessions as configured (flags, file) and their ports;
//! - [`report`]: statistics snapshots and their text;
//! - [`lanes`]: the relay on several lanes (one relay per pipeline, a
//!   copy of every session on each; a leg's latch news passed between
//!   lanes at their polls, never on the per-packet path).
//!
//! Use by composition: an app's own handler asks [`Relay::owns`] for the
//! socket of a batch and hands it to [`Relay::on_datagrams`], and calls
//! [`Relay::on_poll`] from its `on_poll`:
//!
//! ```
//! use dpstack_stack::iface::{Batch, LcoreContext, InlineHandler};
//! use dpstack_media::relay::Relay;
//! use dpstack_stack::port::{Buf, Port};
//! use dpstack_stack::udp::SocketId;
//!
//! struct MyApp {
//!     relay: Relay,
//! }
//!
//! impl<B: Buf> InlineHandler<B> for MyApp {
//!     fn on_datagrams<P: Port<Buf = B>>(
//!         &mut self,
//!         socket: SocketId,
//!         batch: &mut Batch<B>,
//!         ctx: &mut LcoreContext<'_, P>,
//!     ) {
//!         if self.relay.owns(socket) {
//!             return self.relay.on_datagrams(socket, batch, ctx);
//!         }
//!         // ... the app's own sockets
//!     }
//!
//!     fn on_poll<P: Port<Buf = B>>(&mut self, ctx: &mut LcoreContext<'_, P>) {
//!         self.relay.on_poll(ctx);
//!     }
//! }
//! ```
//!
//! Sessions are started on an existing interface with [`Relay::start`]
//! (which binds their sockets) and stopped with [`Relay::stop`] (which
//! closes them).
//!
//! Invariants: no allocation, lock, clock read, log line or `dyn` call per
//! packet; no panic on any input; every datagram that is not sent on is
//! counted once, by [`RelayDrop`] reason and on its leg. Time comes from
//! each datagram's receive timestamp and from `ctx.now()`. Statistics leave
//! the lcore as snapshots ([`Relay::fill`]), or through a [`StatsLink`] the
//! relay serves from its poll.

pub mod addr;
pub mod error;
pub mod lanes;
pub mod leg;
pub mod membership;
pub mod receive;
pub mod report;
pub mod reports;
pub mod spec;
pub mod timer;

#[cfg(test)]
mod tests;

pub use error::{PeerProblem, SpecError, StartError};
pub use lanes::{LaneLink, LegNews, NewsCounters};
pub use leg::{clock_rate, rtcp_of, LegCounters, LegState, PeerNews, StreamReport};
pub use membership::SSRCS_PER_LEG;
pub use report::{
    drops_line, is_active, leg_lines, render, LegReport, SessionReport, Snapshot, StatsLink,
};
pub use reports::ReportConfig;
pub use spec::{
    assign_ports, check_peer, generate, parse, LegSpec, LocalPort, SessionPorts, SessionSpec,
};

use crate::rtp::ArrivalClock;
use crate::{LatchConfig, LegSockets, SessionId, SessionTable};
use dpstack_stack::iface::{Batch, InlineHandler, Interface, LcoreContext};
use dpstack_stack::port::{Buf, Port};
use dpstack_stack::udp::{BindOptions, Datagram, SocketId};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
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
    /// In relay mode, also send RTCP receiver reports of our own to each
    /// leg's peer about what that leg received (an RTP translator with its
    /// own SSRC, RFC 3550 7.1/7.2). Echo mode always sends them.
    pub rtcp_reports: bool,
    /// The RTCP interval's inputs and the reports' randomness.
    pub reports: ReportConfig,
}

impl Default for RelayOptions {
    fn default() -> RelayOptions {
        RelayOptions {
            echo: false,
            latch: LatchConfig::default(),
            clock_rate: 8000,
            dscp: 46,
            connect_on_latch: false,
            rtcp_reports: false,
            reports: ReportConfig::default(),
        }
    }
}

impl RelayOptions {
    /// True if legs send receiver reports of their own.
    pub fn sends_reports(&self) -> bool {
        self.echo || self.rtcp_reports
    }
}

/// One session: legs A and B, each within its own cache lines.
#[derive(Debug, Clone, Default)]
pub struct Session {
    pub(crate) legs: [LegState; 2],
}

impl Session {
    /// A session of legs A and B, each told where the other's peer is.
    pub fn new(mut legs: [LegState; 2]) -> Session {
        let [a, b] = &mut legs;
        a.take_dst_change();
        b.take_dst_change();
        a.set_forward(b.dst());
        b.set_forward(a.dst());
        Session { legs }
    }
}

/// The addresses sessions bind to: an IPv4 one, and an IPv6 one for legs
/// whose peers are IPv6.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalAddrs {
    /// For IPv4 legs.
    pub v4: Option<Ipv4Addr>,
    /// For IPv6 legs.
    pub v6: Option<Ipv6Addr>,
}

impl LocalAddrs {
    /// `ip` is one of these addresses (an IPv4-mapped IPv6 address counts
    /// as its IPv4 address).
    pub fn has(&self, ip: IpAddr) -> bool {
        match ip.to_canonical() {
            IpAddr::V4(v4) => self.v4 == Some(v4),
            IpAddr::V6(v6) => self.v6 == Some(v6),
        }
    }
}

impl From<Ipv4Addr> for LocalAddrs {
    fn from(v4: Ipv4Addr) -> LocalAddrs {
        LocalAddrs {
            v4: Some(v4),
            v6: None,
        }
    }
}

/// The relay. See the module documentation.
#[derive(Debug)]
pub struct Relay {
    pub(crate) table: SessionTable<Session>,
    pub(crate) options: RelayOptions,
    pub(crate) drops: Drops,
    stats: Option<StatsLink>,
    /// Where the report scheduler goes on (a slot index).
    pub(crate) cursor: u32,
    /// The reports' random source (xorshift64*).
    pub(crate) rng: u64,
    /// The sessions started, in order (for stopping them).
    started: Vec<SessionId>,
    /// On several lanes: the link to the other lanes ([`lanes`]).
    pub(crate) lanes: Option<LaneLink>,
    /// The receive path's last arrival time in RTP units (one conversion a
    /// burst, not a packet).
    pub(crate) clock: ArrivalClock,
}

impl Relay {
    /// A relay with no session.
    pub fn new(options: RelayOptions) -> Relay {
        Relay {
            table: SessionTable::new(),
            options,
            drops: [0; RelayDrop::ALL.len()],
            stats: None,
            cursor: 0,
            rng: options.reports.seed | 1,
            started: Vec::new(),
            lanes: None,
            clock: ArrivalClock::new(),
        }
    }

    /// [`Relay::new`] and [`Relay::start`] at IPv4 address `ip`.
    pub fn build<B: Buf>(
        iface: &mut Interface<B>,
        ip: Ipv4Addr,
        specs: &[SessionSpec],
        range: RangeInclusive<u16>,
        options: RelayOptions,
    ) -> Result<(Relay, Vec<SessionPorts>), StartError> {
        let mut relay = Relay::new(options);
        let ports = relay.start(iface, ip.into(), specs, range)?;
        Ok((relay, ports))
    }

    /// Binds every session's sockets on `iface` (IPv4 legs at
    /// `local.v4`, IPv6 legs at `local.v6`; fixed ports as given, `auto`
    /// ones from `range`) and adds the sessions, in the order of `specs`
    /// (on an empty relay, session `i` gets slot `i`). On an error nothing
    /// is left bound or added. Control path.
    pub fn start<B: Buf>(
        &mut self,
        iface: &mut Interface<B>,
        local: LocalAddrs,
        specs: &[SessionSpec],
        range: RangeInclusive<u16>,
    ) -> Result<Vec<SessionPorts>, StartError> {
        let ports = assign_ports(specs, range)?;
        let first = self.started.len();
        self.table.reserve(specs.len(), 4 * specs.len() + 16);
        let mut bound = Vec::new();
        let result = self.start_each(iface, local, specs, &ports, &mut bound);
        if let Err(e) = result {
            for id in self.started.drain(first..) {
                self.table.remove(id);
            }
            for socket in bound {
                iface.udp_close(socket);
            }
            return Err(e);
        }
        Ok(ports)
    }

    fn start_each<B: Buf>(
        &mut self,
        iface: &mut Interface<B>,
        local: LocalAddrs,
        specs: &[SessionSpec],
        ports: &[SessionPorts],
        bound: &mut Vec<SocketId>,
    ) -> Result<(), StartError> {
        let options = BindOptions {
            tos: self.options.dscp << 2,
            ..BindOptions::default()
        };
        for (spec, pair) in specs.iter().zip(ports) {
            if let Some(peer) = spec
                .legs
                .iter()
                .filter_map(|l| l.peer)
                .find(|p| local.has(p.ip()))
            {
                return Err(StartError::PeerIsUs {
                    session: spec.name.clone(),
                    peer,
                });
            }
            let mut bind = |leg: usize, port: u16| -> Result<SocketId, StartError> {
                let ip = leg_ip(local, &spec.legs[leg]).ok_or_else(|| StartError::NoAddress {
                    session: spec.name.clone(),
                    ipv6: spec.legs[leg].ipv6,
                })?;
                let at = SocketAddr::new(ip, port);
                let socket = iface
                    .udp_bind(at, options)
                    .map_err(|error| StartError::Bind {
                        session: spec.name.clone(),
                        at,
                        error,
                    })?;
                bound.push(socket);
                Ok(socket)
            };
            let mut legs = [LegSockets {
                rtp: bind(0, pair[0])?,
                rtcp: None,
            }; 2];
            legs[1].rtp = bind(1, pair[1])?;
            if !spec.mux {
                legs[0].rtcp = Some(bind(0, pair[0] + 1)?);
                legs[1].rtcp = Some(bind(1, pair[1] + 1)?);
            }
            let ssrcs = [self.next_random() as u32, self.next_random() as u32];
            let mut leg = 0;
            let session = Session::new(spec.legs.map(|l| {
                leg += 1;
                LegState::new(self.options.latch, l.peer, spec.mux, ssrcs[leg - 1])
            }));
            let id = self
                .table
                .insert(legs, session)
                .map_err(|error| StartError::Table {
                    session: spec.name.clone(),
                    error,
                })?;
            self.started.push(id);
        }
        Ok(())
    }

    /// Removes every session and closes its sockets on `iface`; returns
    /// how many there were. Control path.
    pub fn stop<B: Buf>(&mut self, iface: &mut Interface<B>) -> usize {
        let mut stopped = 0;
        for id in self.started.drain(..) {
            if let Some((legs, _)) = self.table.remove(id) {
                stopped += 1;
                for leg in legs {
                    iface.udp_close(leg.rtp);
                    if let Some(rtcp) = leg.rtcp {
                        iface.udp_close(rtcp);
                    }
                }
            }
        }
        self.cursor = 0;
        stopped
    }

    /// True if `socket` belongs to one of the relay's sessions (per
    /// batch: O(1)).
    #[inline]
    pub fn owns(&self, socket: SocketId) -> bool {
        self.table.lookup(socket).is_some()
    }

    /// Serves snapshot requests through `link` from now on.
    pub fn set_stats_link(&mut self, link: StatsLink) {
        self.stats = Some(link);
    }

    /// Sessions relayed.
    pub fn sessions(&self) -> usize {
        self.table.len()
    }

    /// The options.
    pub fn options(&self) -> &RelayOptions {
        &self.options
    }

    /// Copies every session's figures into `snapshot` (allocates nothing
    /// if it has room for them all).
    pub fn fill(&self, snapshot: &mut Snapshot) {
        snapshot.sessions.clear();
        snapshot.drops = self.drops;
        for (id, _, session) in self.table.iter() {
            let legs = [&session.legs[0], &session.legs[1]].map(LegState::report);
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

    /// The poll's work: on several lanes, news of latches from and to the
    /// other lanes ([`lanes`]); receiver reports that are due (a bounded
    /// number of sessions examined per call), and a snapshot if one was asked for
    /// through the [`StatsLink`] (one atomic load otherwise).
    #[inline]
    pub fn on_poll<P: Port>(&mut self, ctx: &mut LcoreContext<'_, P>) {
        if self.lanes.is_some() {
            self.exchange_news(ctx.now());
        }
        if self.options.sends_reports() {
            self.run_reports(ctx);
        }
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

    /// The next random 64 bits (xorshift64*; never reads a clock).
    pub(crate) fn next_random(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// The local address of a leg: IPv6 if its spec asks for it (none when
/// the relay has no address of that family).
fn leg_ip(local: LocalAddrs, leg: &LegSpec) -> Option<IpAddr> {
    if leg.ipv6 {
        local.v6.map(IpAddr::V6)
    } else {
        local.v4.map(IpAddr::V4)
    }
}

impl<B: Buf> InlineHandler<B> for Relay {
    const EACH_DATAGRAM: bool = true;

    #[inline(always)]
    fn on_datagram<P: Port<Buf = B>>(
        &mut self,
        datagram: Datagram<B>,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        Relay::on_datagram(self, datagram, ctx);
    }

    #[inline]
    fn on_datagrams<P: Port<Buf = B>>(
        &mut self,
        socket: SocketId,
        batch: &mut Batch<B>,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        Relay::on_datagrams(self, socket, batch, ctx);
    }

    #[inline]
    fn on_poll<P: Port<Buf = B>>(&mut self, ctx: &mut LcoreContext<'_, P>) {
        Relay::on_poll(self, ctx);
    }
}
