//! The stack on several lcores: one pipeline per forwarding lcore, each
//! polling its own queue of every port with its own services handler. The
//! home pipeline (the first lcore's, [`super::StackState`]) serves the
//! console's commands; the others are [`Lane`]s, which answer only what is
//! theirs: their TCP listeners and connections, and the echo services
//! (a TCP echo listens on every pipeline; a UDP echo socket is bound once
//! by the home pipeline and echoed by every pipeline that receives for it).
//!
//! Every pipeline, home included, takes [`LaneRequest`]s on a channel of
//! its own, at most one per poll iteration (`try_recv`), so the console
//! asks each and merges the answers; counters need no request (each
//! pipeline's `Arc<Counters>` is read from the console thread).
//!
//! Lanes outlive a run: after `set nbcore` lowers the lcore count, the
//! lanes a run does not use stay parked (not polled, their connections
//! idle: a pipeline cannot be taken out of its stack); a later run on more
//! lcores brings their services up to the home pipeline's first.

use super::port::StackPort;
use super::services::{Service, Services};
use super::{Proto, Publisher};
use crate::forward::ForwardStats;
use crossbeam_channel::{Receiver, Sender};
use dpstack::stack::counters::Counters;
use dpstack::stack::iface::{
    EchoReply, Interface, TcpBufferMemory, TcpConnInfo, TcpListenerInfo, UdpSocketInfo,
};
use dpstack::stack::port::{Buf, Port};
use dpstack::stack::time::Instant;
use dpstack::stack::udp::BindOptions;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A pipeline other than the home one, with its handler.
pub struct Lane<B: Buf> {
    pub(super) iface: Interface<B>,
    pub(super) services: Services,
    /// Where the echo replies its ports take go (the home pipeline's ping).
    replies: Sender<EchoReply>,
}

impl<B: Buf> Lane<B> {
    /// A new pipeline of `home`'s stack running the services `home_services`
    /// runs, handing the ping replies its ports take to `replies`.
    pub(super) fn new(
        home: &Interface<B>,
        home_services: &Services,
        replies: Sender<EchoReply>,
    ) -> Result<Lane<B>, String> {
        let iface = home.pipeline().map_err(|e| format!("stack: {e}"))?;
        let mut lane = Lane {
            iface,
            services: Services::new(),
            replies,
        };
        lane.follow(home_services)?;
        Ok(lane)
    }

    /// Makes the lane run exactly the services `home_services` runs: the
    /// same UDP echo sockets, a listener of its own per TCP echo. (A lane
    /// a run did not use missed the changes made meanwhile.)
    pub(super) fn follow(&mut self, home_services: &Services) -> Result<(), String> {
        let same = |a: &Service, b: &Service| match (a, b) {
            (Service::Udp(a, _), Service::Udp(b, _)) => a == b,
            (Service::Tcp(_, a), Service::Tcp(_, b)) => a == b,
            _ => false,
        };
        let iface = &mut self.iface;
        self.services.started.retain(|mine| {
            let kept = home_services.started.iter().any(|s| same(s, mine));
            if let (false, Service::Tcp(id, _)) = (kept, mine) {
                iface.tcp_unlisten(*id);
            }
            kept
        });
        for service in &home_services.started {
            if self.services.started.iter().any(|s| same(s, service)) {
                continue;
            }
            let service = match *service {
                Service::Udp(..) => *service,
                Service::Tcp(_, local) => (iface.tcp_listen(local, BACKLOG))
                    .map(|id| Service::Tcp(id, local))
                    .map_err(|e| format!("TCP echo on {local}: {e}"))?,
            };
            self.services.started.push(service);
        }
        Ok(())
    }

    /// Polls the lane's ports once and hands the ping replies they took
    /// to the home pipeline.
    pub(super) fn poll<P: Port<Buf = B>>(&mut self, ports: &mut [StackPort<P>], now: Instant) {
        self.iface.poll_ports(ports, now, &mut self.services);
        for port in ports.iter_mut() {
            for reply in port.take_replies() {
                let _ = self.replies.send(reply);
            }
        }
    }

    /// The pipeline's counters.
    pub fn counters(&self) -> &Arc<Counters> {
        self.iface.counters()
    }
}

/// A TCP echo listener's backlog.
const BACKLOG: usize = 128;

/// What the console asks of every pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaneRequest {
    /// Its sockets (`show sockets`, `show tcp`).
    Sockets,
    /// `udp-echo|tcp-echo start|stop PORT` on this pipeline.
    Echo {
        /// The protocol.
        proto: Proto,
        /// The port.
        port: u16,
        /// Start (else stop).
        start: bool,
    },
}

/// A pipeline's answer.
#[derive(Debug)]
pub enum LaneAnswer {
    /// Its sockets.
    Sockets(SocketsPart),
    /// An echo command's text: `Ok` if it changed the services, `Err` if
    /// not (already running, not running, refused).
    Echo(Result<String, String>),
}

/// A [`LaneRequest`] and where its answer goes.
#[derive(Debug)]
pub struct LaneEnvelope {
    /// The request.
    pub request: LaneRequest,
    /// The answer's channel.
    pub reply: Sender<LaneAnswer>,
}

/// One pipeline's sockets.
#[derive(Debug)]
pub struct SocketsPart {
    /// The UDP sockets (shared by all pipelines: the home one's part only).
    pub udp: Vec<UdpSocketInfo>,
    /// Its TCP listeners.
    pub listeners: Vec<TcpListenerInfo>,
    /// The TCP connections it owns.
    pub connections: Vec<TcpConnInfo>,
    /// Its TCP buffer memory.
    pub memory: TcpBufferMemory,
}

/// `iface`'s sockets; the UDP ones only if it is the home pipeline.
pub(super) fn sockets_part<B: Buf>(iface: &Interface<B>) -> SocketsPart {
    SocketsPart {
        udp: if iface.index() == 0 {
            iface.udp_sockets()
        } else {
            Vec::new()
        },
        listeners: iface.tcp_listeners(),
        connections: iface.tcp_connections(),
        memory: iface.tcp_buffer_memory(),
    }
}

/// Answers `request` on the pipeline `iface` with its handler `services`.
pub(super) fn answer<B: Buf>(
    iface: &mut Interface<B>,
    services: &mut Services,
    request: LaneRequest,
) -> LaneAnswer {
    match request {
        LaneRequest::Sockets => LaneAnswer::Sockets(sockets_part(iface)),
        LaneRequest::Echo { proto, port, start } => {
            LaneAnswer::Echo(echo(iface, services, proto, port, start))
        }
    }
}

/// `udp-echo|tcp-echo start|stop PORT` on one pipeline: the home pipeline
/// binds or closes a UDP echo socket, the others start or stop echoing
/// the socket it bound; every pipeline listens or stops listening for TCP.
/// `Err` (with the command's text) if nothing changed.
pub(super) fn echo<B: Buf>(
    iface: &mut Interface<B>,
    services: &mut Services,
    proto: Proto,
    port: u16,
    start: bool,
) -> Result<String, String> {
    let name = match proto {
        Proto::Udp => "UDP",
        Proto::Tcp => "TCP",
    };
    let found = services.started.iter().position(|s| {
        s.port() == port
            && matches!(
                (s, proto),
                (Service::Udp(..), Proto::Udp) | (Service::Tcp(..), Proto::Tcp)
            )
    });
    let home = iface.index() == 0;
    let local = SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), port);
    match (start, found) {
        (true, Some(_)) => Err(format!("{name} echo already runs on port {port}\n")),
        (true, None) => {
            let started = match proto {
                Proto::Udp if home => (iface.udp_bind(local, BindOptions::default()))
                    .map(|id| Service::Udp(id, local))
                    .map_err(|e| e.to_string()),
                Proto::Udp => (iface.udp_sockets().into_iter())
                    .find(|s| s.local == local)
                    .map(|s| Service::Udp(s.id, local))
                    .ok_or_else(|| "the home lcore bound no such socket".to_owned()),
                Proto::Tcp => (iface.tcp_listen(local, BACKLOG))
                    .map(|id| Service::Tcp(id, local))
                    .map_err(|e| e.to_string()),
            };
            match started {
                Ok(service) => {
                    services.started.push(service);
                    Ok(format!("{name} echo started on {local}\n"))
                }
                Err(e) => Err(format!("Error: cannot start {name} echo on {local}: {e}\n")),
            }
        }
        (false, Some(at)) => {
            match services.started.remove(at) {
                Service::Udp(id, _) if home => {
                    iface.udp_close(id);
                }
                Service::Udp(..) => {}
                Service::Tcp(id, _) => {
                    iface.tcp_unlisten(id);
                }
            };
            Ok(format!("{name} echo stopped on port {port}\n"))
        }
        (false, None) => Err(format!("No {name} echo runs on port {port}\n")),
    }
}

/// A lane's loop: poll, then at most one request, until `stop`. Its ports'
/// figures go to `stats` as streams `first_stream..`.
pub fn run<B: Buf, P: Port<Buf = B>>(
    lane: &mut Lane<B>,
    ports: &mut [StackPort<P>],
    requests: &Receiver<LaneEnvelope>,
    stop: &AtomicBool,
    clock: impl Fn() -> Instant,
    (stats, first_stream): (&ForwardStats, usize),
) {
    let mut publisher = Publisher::new(ports.len(), first_stream);
    while !stop.load(Ordering::Relaxed) {
        let now = clock();
        lane.poll(ports, now);
        publisher.publish(ports, stats);
        if let Ok(envelope) = requests.try_recv() {
            let answer = answer(&mut lane.iface, &mut lane.services, envelope.request);
            let _ = envelope.reply.send(answer);
        }
    }
}
