//! Stack mode (`set fwd stack`, `--forward-mode=stack`): instead of a
//! forwarding engine, the forwarding lcores run dpstack's TCP/IP stack on
//! every port (an [`Interface`] with one link per port), one pipeline per
//! lcore, each polling its own queue of every port (see [`lanes`]), and
//! the console's stack commands (`show ip addr`, `ip addr add`, `route
//! add`, `ping`, `udp-echo start`, ...) act on it.
//!
//! The console thread talks to the first lcore (the home pipeline)
//! through a channel: each command is a [`Request`] in an [`Envelope`]
//! with a reply channel; the lcore takes at most one request per poll
//! iteration (`try_recv`: no lock and no wait in its loop, nothing in its
//! per-packet path) and answers with the command's text. Addresses,
//! routes and UDP sockets are the stack's shared tables, so a change the
//! home pipeline makes is seen by every pipeline at its next poll. A
//! `ping` answers when it is over; the lcore keeps polling meanwhile.
//!
//! Invariants: exactly one thread owns the [`StackState`] at a time (the
//! first lcore while stack mode runs, the session while stopped, so
//! addresses, routes, neighbours and services survive a stop and start),
//! and each [`Lane`] likewise (its lcore, or the state while stopped);
//! links are the session's ports in order, so link `i` is port
//! `links[i].port`.

pub mod lanes;
mod ping;
pub mod port;
pub mod rtp;
mod serve;
mod services;
pub mod text;

pub use lanes::{Lane, LaneAnswer, LaneEnvelope, LaneRequest};
pub use port::{Capture, StackPort};
pub use text::LinkLine;

use crate::forward::{ForwardStats, StreamCounters};
use crossbeam_channel::{Receiver, Sender};
use dpstack::stack::counters::Counters;
use dpstack::stack::iface::{EchoReply, Interface, InterfaceConfig, LinkConfig, Prefix, SendError};
use dpstack::stack::port::{Buf, Port};
use dpstack::stack::route::{Ipv4Cidr, Ipv6Cidr};
use dpstack::stack::time::Instant;
use dpstack::stack::wire::ipv6::link_local_from_mac;
use ping::PingRun;
use services::Services;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// What a stack command says while stack mode does not run.
pub const NOT_RUNNING: &str = "Stack not running: set fwd stack, then start";

/// UDP or TCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    /// UDP.
    Udp,
    /// TCP.
    Tcp,
}

/// A stack command for the lcore.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// `show ip addr`.
    ShowAddr,
    /// `ip addr add PREFIX [port N]`.
    AddrAdd {
        /// The link.
        link: usize,
        /// The address.
        prefix: Prefix,
    },
    /// `ip addr del ADDR [port N]`.
    AddrDel {
        /// The link, or any.
        link: Option<usize>,
        /// The address.
        addr: IpAddr,
    },
    /// `show route`.
    ShowRoute,
    /// `route add PREFIX [via GW] [port N]`.
    RouteAdd {
        /// The destination.
        prefix: Prefix,
        /// The gateway, if any.
        via: Option<IpAddr>,
        /// The link, if given.
        link: Option<usize>,
    },
    /// `route del PREFIX`.
    RouteDel {
        /// The destination.
        prefix: Prefix,
    },
    /// `show neigh`.
    ShowNeigh,
    /// `show sockets`.
    ShowSockets,
    /// `show tcp`.
    ShowTcp,
    /// `show counters`.
    ShowCounters,
    /// `ping ADDR [count N]`.
    Ping {
        /// The destination.
        dst: IpAddr,
        /// Requests to send.
        count: u16,
    },
    /// `rtp-relay start|stop`, `show rtp`.
    Rtp(rtp::RtpRequest),
    /// `udp-echo|tcp-echo start|stop PORT`.
    Echo {
        /// The protocol.
        proto: Proto,
        /// The port.
        port: u16,
        /// Start (else stop).
        start: bool,
    },
}

impl Request {
    /// How long the console waits for the answer.
    pub fn timeout(&self) -> std::time::Duration {
        let base = std::time::Duration::from_secs(3);
        match self {
            Request::Ping { count, .. } => base + (ping::INTERVAL * u32::from(*count)) + ping::WAIT,
            _ => base,
        }
    }
}

/// A request and where its answer goes.
#[derive(Debug)]
pub struct Envelope {
    /// The request.
    pub request: Request,
    /// The answer's channel.
    pub reply: Sender<String>,
}

/// The stack and the console's services on it. See the module
/// documentation.
pub struct StackState<B: Buf> {
    iface: Interface<B>,
    services: Services,
    links: Vec<LinkLine>,
    ping: Option<(PingRun, Sender<String>)>,
    next_ident: u16,
    /// The other pipelines while stack mode does not run; a run takes the
    /// first `nb-cores - 1` to their lcores and gives them back.
    pub lanes: Vec<Lane<B>>,
    /// The DPDK lcore of each pipeline of the current run (index 0: this
    /// one), for `show tcp`.
    pub lcore_ids: Vec<u32>,
    /// Which ping's replies every pipeline's ports take.
    capture: Arc<Capture>,
    /// The replies the lanes' ports took, to the running ping.
    lane_replies: (Sender<EchoReply>, Receiver<EchoReply>),
}

impl<B: Buf> StackState<B> {
    /// A stack over `links` (in port order) with the `(link, address)`
    /// pairs of `setup`; a port without an address gets only its IPv6
    /// link-local one. The stack draws its own keys from the system's
    /// random source; `ping_ident` numbers this console's pings.
    pub fn new(
        links: Vec<LinkLine>,
        setup: &[(usize, Prefix)],
        ping_ident: u16,
    ) -> Result<StackState<B>, String> {
        let configs = links.iter().enumerate().map(|(i, l)| {
            let mine = || setup.iter().filter(move |(link, _)| *link == i);
            let v4: Vec<Ipv4Cidr> = (mine())
                .filter_map(|(_, p)| {
                    if let Prefix::V4(c) = p {
                        Some(*c)
                    } else {
                        None
                    }
                })
                .collect();
            let mut v6: Vec<Ipv6Cidr> = (mine())
                .filter_map(|(_, p)| {
                    if let Prefix::V6(c) = p {
                        Some(*c)
                    } else {
                        None
                    }
                })
                .collect();
            if v4.is_empty() && v6.is_empty() {
                v6.push(Ipv6Cidr {
                    addr: link_local_from_mac(l.mac),
                    len: 64,
                });
            }
            LinkConfig {
                mac: l.mac,
                addresses: v4,
                mtu: l.mtu,
                addresses6: v6,
                ipv6: true,
            }
        });
        let config = InterfaceConfig::with_links(configs.collect());
        let iface = Interface::new(config).map_err(|e| format!("stack: {e}"))?;
        Ok(StackState {
            iface,
            services: Services::new(),
            links,
            ping: None,
            next_ident: ping_ident,
            lanes: Vec::new(),
            lcore_ids: Vec::new(),
            capture: Arc::default(),
            lane_replies: crossbeam_channel::unbounded(),
        })
    }

    /// What every port of the stack shares to take a ping's replies.
    pub fn capture(&self) -> &Arc<Capture> {
        &self.capture
    }

    /// Readies the first `total - 1` lanes for a run on `total` pipelines
    /// (this one and its lanes), making the missing ones: each runs the
    /// services this one runs.
    pub fn add_lanes(&mut self, total: usize) -> Result<(), String> {
        for lane in self.lanes.iter_mut().take(total.saturating_sub(1)) {
            lane.follow(&self.services)?;
        }
        while self.lanes.len() + 1 < total {
            let replies = self.lane_replies.0.clone();
            let lane = Lane::new(&self.iface, &self.services, replies)?;
            self.lanes.push(lane);
        }
        Ok(())
    }

    /// The home pipeline's counters.
    pub fn counters(&self) -> &Arc<Counters> {
        self.iface.counters()
    }

    /// The DPDK port id of each link.
    pub fn port_ids(&self) -> Vec<u16> {
        self.links.iter().map(|l| l.port).collect()
    }

    /// Answers `envelope` (a `ping` answers when it is over).
    pub fn serve<P: Port<Buf = B>>(
        &mut self,
        ports: &mut [StackPort<P>],
        now: Instant,
        envelope: Envelope,
    ) {
        let text = match envelope.request {
            Request::Ping { dst, count } => match self.start_ping(ports, now, dst, count) {
                Ok(run) => {
                    self.ping = Some((run, envelope.reply));
                    return;
                }
                Err(text) => text,
            },
            Request::Rtp(rtp::RtpRequest::Stop) => {
                // RTCP BYE from the legs that report, before their ports close.
                if let Some(service) = &mut self.services.rtp {
                    service.relay.say_bye(&mut self.iface, ports, now);
                }
                self.answer(envelope.request)
            }
            request => self.answer(request),
        };
        let _ = envelope.reply.send(text);
    }

    /// Starts a ping: its first request leaves now.
    fn start_ping<P: Port<Buf = B>>(
        &mut self,
        ports: &mut [StackPort<P>],
        now: Instant,
        dst: IpAddr,
        count: u16,
    ) -> Result<PingRun, String> {
        if self.ping.is_some() {
            return Err("ping: another ping runs\n".into());
        }
        // Replies a lane took after the last ping ended are stale.
        while self.lane_replies.1.try_recv().is_ok() {}
        self.next_ident = self.next_ident.wrapping_add(1);
        let mut run = PingRun::new(dst, self.next_ident, count);
        match self
            .iface
            .send_echo_request(ports, now, dst, (run.ident, 1), &ping::DATA)
        {
            Err(SendError::NoRoute) => return Err("ping: connect: Network is unreachable\n".into()),
            Err(SendError::OwnAddress) => {
                return Err(format!(
                    "ping: {dst} is one of the stack's own addresses (it has no loopback)\n"
                ))
            }
            Ok(()) | Err(_) => run.sent(now),
        }
        for port in ports.iter_mut() {
            port.capture(Some(run.ident));
        }
        Ok(run)
    }

    /// After a poll: the running ping's replies, next request and end.
    pub fn step<P: Port<Buf = B>>(&mut self, ports: &mut [StackPort<P>], now: Instant) {
        let Some((run, _)) = &mut self.ping else {
            return;
        };
        for port in ports.iter_mut() {
            for reply in port.take_replies() {
                run.on_reply(&reply, now);
            }
        }
        for reply in self.lane_replies.1.try_iter() {
            run.on_reply(&reply, now);
        }
        if let Some(seq) = run.due(now) {
            // A failure (no buffer, neighbour unresolved) is a lost request.
            let _ = (self.iface).send_echo_request(
                ports,
                now,
                run.dst(),
                (run.ident, seq),
                &ping::DATA,
            );
            run.sent(now);
        }
        if run.finished(now) {
            self.finish_ping(ports, now);
        }
    }

    /// Ends the running ping (if any) and sends its report.
    pub fn finish_ping<P: Port<Buf = B>>(&mut self, ports: &mut [StackPort<P>], now: Instant) {
        if let Some((run, reply)) = self.ping.take() {
            let _ = reply.send(run.report(now));
        }
        for port in ports.iter_mut() {
            port.capture(None);
        }
    }
}

/// The home lcore's loop: poll, then the ping's progress, then at most
/// one command and one [`LaneRequest`], until `stop`. Each port's figures
/// go to `stats` (stream `i` is port `i` looped onto itself) when they
/// change.
pub fn run<B: Buf, P: Port<Buf = B>>(
    state: &mut StackState<B>,
    ports: &mut [StackPort<P>],
    (requests, lane_requests): (&Receiver<Envelope>, &Receiver<LaneEnvelope>),
    stop: &AtomicBool,
    clock: impl Fn() -> Instant,
    stats: &ForwardStats,
) {
    let mut publisher = Publisher::new(ports.len(), 0);
    while !stop.load(Ordering::Relaxed) {
        let now = clock();
        state.iface.poll_ports(ports, now, &mut state.services);
        state.step(ports, now);
        publisher.publish(ports, stats);
        if let Ok(envelope) = requests.try_recv() {
            state.serve(ports, clock(), envelope);
        }
        if let Ok(envelope) = lane_requests.try_recv() {
            let answer = lanes::answer(&mut state.iface, &mut state.services, envelope.request);
            let _ = envelope.reply.send(answer);
        }
    }
    state.finish_ping(ports, clock());
}

/// Publishes a pipeline's per-port figures to the forwarding stats when
/// they change: port `i`'s as stream `first + i`.
struct Publisher {
    published: Vec<(u64, u64)>,
    first: usize,
}

impl Publisher {
    fn new(ports: usize, first: usize) -> Publisher {
        Publisher {
            published: vec![(0, 0); ports],
            first,
        }
    }

    fn publish<P>(&mut self, ports: &[StackPort<P>], stats: &ForwardStats) {
        for (i, port) in ports.iter().enumerate() {
            let figures = (port.rx_packets, port.tx_packets);
            if figures != self.published[i] {
                self.published[i] = figures;
                let counters = StreamCounters {
                    rx_packets: figures.0,
                    tx_packets: figures.1,
                    ..StreamCounters::default()
                };
                stats.publish(self.first + i, &counters);
            }
        }
    }
}

#[cfg(test)]
mod lane_tests;
#[cfg(test)]
mod tests;
