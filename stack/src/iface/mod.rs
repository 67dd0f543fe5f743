//! The pipeline of one lcore: an [`Interface`] driving one or more ports
//! (links) with its routes, over IPv4 and IPv6.
//!
//! [`Interface::poll_ports`] is the run-to-completion step: receive a burst
//! from each port, run each frame through Ethernet, ARP or Neighbor
//! Discovery, IPv4 or IPv6, ICMP, UDP and TCP (`ethernet`, `arp`, `nd`, `ip`,
//! `icmp`, `icmp4`, `icmp6`, `udp`, `tcp`; MLD and IGMP report the IPv6
//! and IPv4 groups, `mld`, `igmp`; sockets join groups, `membership`),
//! hand the datagrams to the application grouped per socket
//! ([`InlineHandler`], inline mode, or socket queues), run the timers, and
//! transmit everything the step produced in bursts, one batch per port
//! ([`TxBatch`]). Replies (ARP, ICMP echo, UDP echo) are built in the
//! received buffer and leave through the port the request came in on; new
//! packets leave through the port their route names, resolved by that
//! port's neighbour cache. Nothing is copied or allocated per packet.
//!
//! Invariants: no panic on any input (wire views are checked before use);
//! every dropped packet increments one [`DropReason`]; `now` is an argument.
//! Replies go back to the Ethernet source of the request (the previous hop),
//! so answering needs no route or neighbour lookup. Addresses follow the
//! weak host model: a packet for any of our addresses is accepted on any
//! link, as Linux does.

mod app;
mod arp;
mod buffers;
mod config;
mod control;
mod deliver;
mod ethernet;
mod icmp;
mod icmp4;
mod icmp6;
mod igmp;
mod inspect;
mod ip;
mod ip_out;
mod limit;
mod membership;
mod mld;
mod nd;
mod next_hop;
mod poll;
mod routes;
mod state;
mod steering;
mod tables;
pub mod tcp;
mod transmit;
mod udp;

pub use crate::udp::membership::{
    GroupLink, JoinError, MAX_GROUPS_PER_LINK, MAX_GROUPS_PER_SOCKET,
};
pub use app::{Batch, DropDatagrams, InlineHandler, LcoreContext, RX_BURST};
pub use config::{ChecksumPolicy, ConfigError, InterfaceConfig, LinkConfig, MAX_LINKS};
pub use inspect::{
    parse_echo_reply, AddressInfo, AddressState, CounterSnapshot, EchoReply, NeighborInfo, Prefix,
    RouteInfo, TcpBufferMemory, TcpConnInfo, TcpListenerInfo, UdpSocketInfo,
};
pub use limit::TokenBucket;
pub use routes::StackControl;
pub use tcp::{ConnId, ListenError, ListenOptions, ListenerId, TcpEvent};
pub use transmit::{SendError, TxBatch};

pub use crate::keys::Keys;

use crate::counters::{Counters, DropReason};
use crate::neighbor::{NeighborCache, NeighborState, Probe};
use crate::port::{Buf, MacAddr, Port};
use crate::route::{Ipv4Cidr, Ipv6Cidr, Route, RouteTable};
use crate::socket::{BufPool, Command, Shared, StackHandle};
use crate::tcp::TcpError;
use crate::time::{Duration, Instant};
use crate::udp::{BindError, BindOptions, RouteMemo, SocketId, UdpTable};
use crate::wire::ipv6::solicited_node;
use arrayvec::ArrayVec;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4};

/// ff02::1, the all-nodes group every IPv6 link joins.
pub(crate) const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
use deliver::{receive_burst, report_tcp, Delivery};
use nd::add_on_link_route6;
use poll::Poll;
use std::sync::Arc;
use transmit::Out;

use ip::family::{IpLcore, IpShared};
use state::{special_addresses, special_bit, LcoreState, Master};
pub(crate) use state::{
    Core, IgmpState, Link, LinkNeighbors, Listening, MldState, QueueTable, SharedState, Tentative,
};
use tables::{CowArc, SharedView, Tables};

/// The IPv4/UDP stack of one lcore over one or more ports. See the module
/// documentation.
#[derive(Debug)]
pub struct Interface<B: Buf> {
    core: Core<B>,
    /// One transmit batch per link, empty between polls.
    batches: Vec<TxBatch<B>>,
    /// Commands and sends from application threads, once a handle exists.
    shared: Option<Arc<Shared<B>>>,
    /// This pipeline runs the shared state's timers (neighbours, duplicate
    /// address detection, advertised routes, path MTUs): the first one.
    home: bool,
    /// The queue-mode sockets' queues as of `queues_generation`: this
    /// pipeline's own reference, so that a poll does not touch the shared
    /// reference count.
    queues: QueueTable<B>,
    queues_generation: u64,
    probes: Vec<Probe<Ipv4Addr>>,
    next_timers: Instant,
    announced: bool,
}

/// Commands from application threads applied per poll.
const MAX_COMMANDS_PER_POLL: usize = 16;
/// Datagrams from application threads sent per poll.
const MAX_SENDS_PER_POLL: usize = 256;
/// Capacity of the send queue shared by application threads.
const SEND_QUEUE: usize = 4096;

/// How often neighbour timers run.
const TIMER_INTERVAL: Duration = Duration::from_millis(100);

impl<B: Buf> Interface<B> {
    /// An interface with connected routes for its links' addresses and a
    /// default route through the gateway, if one is set.
    pub fn new(config: InterfaceConfig) -> Result<Interface<B>, ConfigError> {
        config::validate(&config)?;
        let keys = match config.keys.clone() {
            Some(keys) => keys,
            None => Keys::random().map_err(ConfigError::NoRandomness)?,
        };
        let mut routes = RouteTable::new();
        for (index, link) in config.links.iter().enumerate() {
            for address in &link.addresses {
                routes.add(Route {
                    prefix: *address,
                    gateway: None,
                    port: index as u16,
                    source: address.addr,
                });
            }
        }
        let mut links = Vec::new();
        let mut neighbors = Vec::new();
        for l in &config.links {
            let addresses6 = l.all_addresses6();
            let mut groups6 = Vec::new();
            if l.ipv6 {
                groups6.push(ALL_NODES);
            }
            for a in &addresses6 {
                let group = solicited_node(a.addr);
                if !groups6.contains(&group) {
                    groups6.push(group);
                }
            }
            let dad = config.dad_transmits;
            let tentative6 = addresses6
                .iter()
                .filter(|_| dad > 0)
                .map(|&cidr| Tentative {
                    cidr,
                    probes_left: dad,
                    deadline: None,
                })
                .collect();
            let caches = LinkNeighbors {
                v4: NeighborCache::new(config.neighbor.clone()),
                v6: NeighborCache::new(config.neighbor.clone()),
            };
            links.push(Link {
                mac: l.mac,
                addresses: l.addresses.clone(),
                mtu: l.mtu,
                mtu6: l.mtu,
                neighbors: Arc::new(caches.v4.view()),
                ipv6: l.ipv6,
                addresses6: if dad > 0 { Vec::new() } else { addresses6 },
                tentative6,
                duplicates6: Vec::new(),
                groups6,
                mld: MldState::default(),
                groups4: Vec::new(),
                socket_groups6: Vec::new(),
                igmp: IgmpState::default(),
                neighbors6: Arc::new(caches.v6.view()),
            });
            neighbors.push(caches);
        }
        let all = || config.links.iter().flat_map(|l| l.addresses.iter());
        let mut ip = IpShared::new();
        ip.v4.routes = routes;
        let state = SharedState {
            udp: CowArc::new(UdpTable::new(keys.flow)),
            queues: CowArc::new(Vec::new()),
            ip: CowArc::new(ip),
            local: all().map(|a| a.addr).collect(),
            special_filter: special_addresses(&config.links)
                .iter()
                .fold(0, |bits, &(ip, _)| bits | special_bit(ip)),
            special: special_addresses(&config.links),
            ra_default: None,
            links,
            generation: 0,
            tcp_table: tcp::shared_table(&config.tcp, &keys),
            steering: Arc::new(steering::Steering::new()),
            config: CowArc::new(InterfaceConfig {
                keys: Some(keys),
                ..config
            }),
        };
        let tables = Tables::new(Master { state, neighbors });
        let mut iface = Interface::pipeline_of(tables)?;
        if let Some(gateway) = iface.core.shared.config.gateway {
            iface.add_route(Ipv4Cidr::DEFAULT, gateway)?;
        }
        iface.core.shared.edit(|shared| {
            for link in 0..shared.links.len() {
                for cidr in shared.links[link].addresses6.clone() {
                    add_on_link_route6(shared, link, cidr);
                }
            }
        });
        Ok(iface)
    }

    /// Another pipeline of the same stack, for another lcore: it shares
    /// this one's tables (routes, neighbours, addresses, UDP sockets and
    /// their queues) and has its own counters, reassembly, route caches,
    /// transmit batches and TCP endpoint. It polls its own queues of the
    /// same ports; the shared state's timers stay with the first pipeline.
    /// At most 64 pipelines make one stack.
    pub fn pipeline(&self) -> Result<Interface<B>, ConfigError> {
        Interface::pipeline_of(Arc::clone(self.core.shared.tables()))
    }

    /// Which pipeline of its stack this is: 0 for the one
    /// [`Interface::new`] made, then in the order [`Interface::pipeline`]
    /// made them.
    pub fn index(&self) -> usize {
        usize::from(self.core.lcore.index)
    }

    /// Where this pipeline's TCP connects should place their ports: the
    /// RSS of the queue it polls, when the device's spreading is a known
    /// Toeplitz (see [`crate::rss::RssPlacement`]); `None` to place freely.
    pub fn set_tcp_rss(&mut self, placement: Option<crate::rss::RssPlacement>) {
        self.core.tcp.config.rss = placement;
    }

    fn pipeline_of(tables: Arc<Tables<Master<B>>>) -> Result<Interface<B>, ConfigError> {
        let most = steering::MAX_PIPELINES;
        let index =
            (tables.next_pipeline(most as u16)).ok_or(ConfigError::TooManyPipelines(most))?;
        let home = index == 0;
        let shared = SharedView::new(tables);
        shared.steering.open(usize::from(index));
        let keys = (shared.config.keys.clone()).unwrap_or_else(|| unreachable!("set by new"));
        let core = Core {
            lcore: LcoreState {
                index,
                counters: Arc::new(Counters::default()),
                ip: IpLcore::new(&shared.config.reassembly, keys.fragment_ident),
                udp_routes: RouteMemo::new(),
                icmp_limit: TokenBucket::new(
                    shared.config.icmp_errors_per_sec,
                    shared.config.icmp_errors_per_sec.max(1),
                ),
                socket_errors: ArrayVec::new(),
            },
            tcp: tcp::TcpCore::new(
                shared.config.tcp.clone(),
                &keys,
                Arc::clone(&shared.tcp_table),
                index as u8,
            ),
            shared,
        };
        let batches = (0..core.shared.links.len())
            .map(|_| TxBatch::new(core.shared.config.tx_retries))
            .collect();
        Ok(Interface {
            queues: core.shared.queues.clone(),
            queues_generation: core.shared.generation,
            core,
            batches,
            shared: None,
            home,
            probes: Vec::new(),
            next_timers: Instant::ZERO,
            announced: !home,
        })
    }

    /// The counters (clone the `Arc` to read them from another thread).
    pub fn counters(&self) -> &Arc<Counters> {
        &self.core.lcore.counters
    }

    /// The configuration.
    pub fn config(&self) -> &InterfaceConfig {
        &self.core.shared.config
    }

    /// A handle that application threads use to open queue-mode sockets on
    /// this interface; `pool` gives them buffers for sending, and each socket
    /// queues up to `queue_len` received datagrams. Take it from the home
    /// pipeline (the first): its sockets' datagrams reach their queues from
    /// every pipeline, and the TCP segments other pipelines cannot place are
    /// handed to the home pipeline, where queue-mode listeners must be.
    pub fn handle<Q: BufPool<Buf = B>>(&mut self, pool: Q, queue_len: usize) -> StackHandle<Q> {
        let shared = self
            .shared
            .get_or_insert_with(|| Arc::new(Shared::new(SEND_QUEUE)));
        StackHandle::new(Arc::clone(shared), pool, queue_len)
    }

    /// Sends `payload` from `socket` to `dst` outside of a poll (e.g. to
    /// start a conversation) on a one-port interface; it leaves on this call.
    pub fn send_to<P: Port<Buf = B>>(
        &mut self,
        port: &mut P,
        now: Instant,
        socket: SocketId,
        dst: impl Into<SocketAddr>,
        payload: &[u8],
    ) -> Result<(), SendError> {
        self.send_to_ports(core::slice::from_mut(port), now, socket, dst, payload)
    }

    /// [`Interface::send_to`] with all the interface's ports, in link order.
    pub fn send_to_ports<P: Port<Buf = B>>(
        &mut self,
        ports: &mut [P],
        now: Instant,
        socket: SocketId,
        dst: impl Into<SocketAddr>,
        payload: &[u8],
    ) -> Result<(), SendError> {
        self.core.shared.refresh();
        let links = ports.len().min(self.batches.len());
        let mut out = Out::new(&mut ports[..links], &mut self.batches[..links]);
        let result = udp::send_any(&mut self.core, &mut out, now, socket, dst.into(), payload);
        out.flush(&self.core.lcore.counters);
        result
    }

    /// One run-to-completion step on a one-port interface.
    /// See [`Interface::poll_ports`].
    pub fn poll<P: Port<Buf = B>, H: InlineHandler<B>>(
        &mut self,
        port: &mut P,
        now: Instant,
        handler: &mut H,
    ) -> usize {
        self.poll_ports(core::slice::from_mut(port), now, handler)
    }

    /// One run-to-completion step: receive up to [`RX_BURST`] frames from
    /// each port (`ports` in link order; ports beyond the links are not
    /// polled), process them, deliver datagrams to `handler` or socket
    /// queues, run timers, transmit. Returns the number of frames received.
    /// Owning lcore only.
    pub fn poll_ports<P: Port<Buf = B>, H: InlineHandler<B>>(
        &mut self,
        ports: &mut [P],
        now: Instant,
        handler: &mut H,
    ) -> usize {
        let links = ports.len().min(self.batches.len());
        let Interface {
            core,
            batches,
            shared,
            home,
            queues,
            queues_generation,
            probes,
            next_timers,
            announced,
        } = self;
        core.shared.refresh();
        let mut out = Out::new(&mut ports[..links], &mut batches[..links]);
        if let Some(shared) = shared.as_deref() {
            // Sends first: a socket's last datagrams go out before its close.
            send_queued(core, shared, &mut out, now, MAX_SENDS_PER_POLL);
            run_commands(core, shared, &mut out, now);
            tcp::attend(core, &mut out, now, shared);
            // Binds applied just now serve this poll's burst.
            core.shared.refresh();
        }
        if !*announced {
            *announced = true;
            announce(core, &mut out, links, now);
        }
        tcp::take_steered(core, &mut out, now);
        let mut delivery = Delivery::new();
        let mut received = 0;
        if *queues_generation != core.shared.generation {
            *queues_generation = core.shared.generation;
            *queues = core.shared.queues.clone();
        }
        // One context for the poll's bursts: the handler is called with it
        // per datagram, so it is built once, not per call.
        let mut ctx = LcoreContext {
            core: &mut *core,
            out: out.reborrow(),
            now,
        };
        for link in 0..links {
            received += receive_burst(&mut ctx, queues, link, handler, &mut delivery);
        }
        tcp::run_deferred(core, &mut out, now);
        delivery.wake_queues(queues);
        if now >= *next_timers {
            *next_timers = now + TIMER_INTERVAL;
            run_timers(core, probes, &mut out, now, *home);
        }
        tcp::run_paced(core, &mut out, now);
        tcp::run_timers(core, &mut out, now);
        handler.on_poll(&mut LcoreContext {
            core,
            out: out.reborrow(),
            now,
        });
        if !core.tcp.events.is_empty() {
            report_tcp(core, &mut out, now, handler);
        }
        out.flush(&core.lcore.counters);
        received
    }
}

/// `dst` with an IPv4-mapped IPv6 address turned into IPv4 (it leaves over
/// IPv4).
fn canonical_dst(dst: SocketAddr) -> SocketAddr {
    match dst {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::V4(SocketAddrV4::new(v4, v6.port())),
            None => dst,
        },
        v4 => v4,
    }
}

/// Connects UDP socket `id` to `remote`. A socket bound to ANY is bound to
/// the source address the route to `remote` gives (as Linux's connect),
/// so it hears its peer only there; without a route (or to a link-local
/// peer, whose source depends on the link) it stays bound to ANY.
pub(crate) fn udp_connect<B: Buf>(core: &mut Core<B>, id: SocketId, remote: SocketAddr) -> bool {
    let source = match remote.ip().to_canonical() {
        IpAddr::V4(ip) => core
            .shared
            .ip
            .v4
            .routes
            .next_hop(ip)
            .map(|hop| IpAddr::V4(hop.source)),
        IpAddr::V6(ip) if ip.is_unicast_link_local() => None,
        IpAddr::V6(ip) => core
            .shared
            .ip
            .v6
            .routes
            .next_hop(ip)
            .map(|hop| IpAddr::V6(hop.source)),
    };
    core.shared.edit_later(|shared| match source {
        Some(source) => shared.udp.connect_from(id, remote, source),
        None => shared.udp.connect(id, remote),
    })
}

/// True if `ip` is one of our addresses (IPv4 from `local4`, IPv6 on any
/// link).
#[inline]
pub(crate) fn is_ours(local4: &[Ipv4Addr], links: &[Link], ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => local4.contains(&v4),
        IpAddr::V6(v6) => links
            .iter()
            .any(|l| l.has_address6(v6) || l.is_tentative6(v6)),
    }
}

/// True if a UDP socket may bind to `ip`: one of our addresses, or a
/// multicast group (as Linux allows: the socket then hears only that
/// group's datagrams, once it joined it).
pub(crate) fn bindable(local4: &[Ipv4Addr], links: &[Link], ip: IpAddr) -> bool {
    ip.is_multicast() || is_ours(local4, links, ip)
}

/// The first poll's announcements on every link: a gratuitous ARP, the
/// MLD reports of its groups, duplicate address detection. Out of line:
/// once in the loop's life, it must not weigh on the receive loop's
/// register allocation.
#[cold]
#[inline(never)]
fn announce<B: Buf, P: Port<Buf = B>>(
    core: &mut Core<B>,
    out: &mut Out<'_, P>,
    links: usize,
    now: Instant,
) {
    for link in 0..links {
        arp::announce(core, out, link);
        // The solicited-node groups are reported before duplicate address
        // detection asks in them (RFC 4862 5.4.2).
        mld::run(core, out, link, now);
        igmp::run(core, out, link, now);
        nd::start(core, out, link, now);
    }
}

/// Applies binds, connects and closes from application threads.
#[inline(never)]
fn run_commands<B: Buf, P: Port<Buf = B>>(
    core: &mut Core<B>,
    shared: &Shared<B>,
    out: &mut Out<'_, P>,
    now: Instant,
) {
    for _ in 0..MAX_COMMANDS_PER_POLL {
        let Some(command) = shared.commands.pop() else {
            return;
        };
        match command {
            Command::Bind {
                local,
                options,
                queue,
                reply,
            } => {
                let result = core.shared.edit_later(|shared| {
                    let shared = &mut **shared;
                    let (local4, links) = (&shared.local, &shared.links);
                    let id = shared
                        .udp
                        .bind(local, options, |ip| bindable(local4, links, ip))?;
                    let index = id.index() as usize;
                    if shared.queues.len() <= index {
                        shared.queues.resize(index + 1, None);
                    }
                    shared.queues[index] = Some(queue);
                    Ok((id, shared.udp.local_socket_addr(id).unwrap_or(local)))
                });
                if let (Err(_), Ok((id, _))) = (reply.try_send(result), result) {
                    // The caller gave up waiting: nobody owns the socket.
                    close_queued(core, id);
                }
            }
            Command::Connect {
                socket,
                remote,
                reply,
            } => {
                let connected = udp_connect(core, socket, remote);
                let _ = reply.try_send(if connected { Ok(()) } else { Err(()) });
            }
            Command::Close { socket } => {
                // The socket's last datagrams were queued before its close,
                // maybe more than one poll sends: they all leave now, from
                // it, not at a later poll, dropped as from no socket or
                // sent from another socket bound meanwhile under its id.
                send_queued(core, shared, out, now, shared.sends.capacity());
                close_queued(core, socket)
            }
            Command::Join {
                socket,
                group,
                on,
                join,
                reply,
            } => {
                let result = core.shared.edit(|shared| match join {
                    true => membership::join(shared, socket, group, on),
                    false => membership::leave(shared, socket, group, on),
                });
                let _ = reply.try_send(result);
            }
            Command::TcpListen {
                local,
                backlog,
                options,
                queue,
                reply,
            } => {
                let result = tcp::listen_queued(core, local, backlog, options, queue);
                let _ = reply.try_send(result);
            }
            Command::TcpUnlisten { local, queue } => tcp::unlisten(core, local, &queue),
            Command::TcpConnect {
                remote,
                stream,
                reply,
            } => {
                let _ = reply.try_send(tcp::connect_queued(core, out, now, remote, stream));
            }
        }
    }
}

/// Closes a queue-mode socket: out of the table, its queue let go, and
/// the datagrams it received but nobody read dropped with it (as Linux
/// frees a closed socket's queue; a group's queue lives on with its other
/// members' datagrams, and the closed socket's id may name the next one
/// bound).
fn close_queued<B: Buf>(core: &mut Core<B>, socket: SocketId) {
    let queue = core.shared.edit_later(|shared| {
        membership::forget(shared, socket);
        shared.udp.close(socket);
        let slot = shared.queues.get_mut(socket.index() as usize);
        slot.and_then(Option::take)
    });
    if let Some(queue) = queue {
        for _ in 0..queue.purge(socket) {
            core.lcore.counters.count_drop(DropReason::UdpQueueFull);
        }
    }
}

/// Sends up to `limit` datagrams queued by application threads (each poll
/// [`MAX_SENDS_PER_POLL`]; a close, the whole queue).
#[inline(never)]
fn send_queued<B: Buf, P: Port<Buf = B>>(
    core: &mut Core<B>,
    shared: &Shared<B>,
    out: &mut Out<'_, P>,
    now: Instant,
    limit: usize,
) {
    for _ in 0..limit {
        let Some(request) = shared.sends.pop() else {
            return;
        };
        // Failures are counted by reason inside, but for a socket closed
        // since the send was queued, or one that hears no IPv4 sending to
        // an IPv4 address (its caller was told it was sent).
        let dst = canonical_dst(request.dst);
        let sent = udp::send_buffer(core, out, now, request.socket, dst, request.buf);
        if sent == Err(SendError::NoSocket) {
            core.lcore.counters.count_drop(DropReason::TxNoSocket);
        }
    }
}

/// Reassembly timeouts (with their errors); on the home pipeline also the shared state's
/// timers: learned path MTUs and advertised routes expiring, MLD reports,
/// duplicate address detection, neighbour retries and expiry on every link.
#[inline(never)]
fn run_timers<B: Buf, P: Port<Buf = B>>(
    core: &mut Core<B>,
    probes: &mut Vec<Probe<Ipv4Addr>>,
    out: &mut Out<'_, P>,
    now: Instant,
    home: bool,
) {
    Poll::new(core, out, now).reassembly_timeouts();
    if !home {
        return;
    }
    let expired_mtu = |ip: &IpShared| {
        let v4 = ip.v4.path_mtus.values().any(|(_, until)| now >= *until);
        v4 || ip.v6.path_mtus.values().any(|(_, until)| now >= *until)
    };
    let ra_expired = core
        .shared
        .ra_default
        .is_some_and(|(_, _, until)| now >= until);
    if ra_expired || expired_mtu(&core.shared.ip) {
        core.shared.edit(|shared| {
            let ip = &mut *shared.ip;
            ip.v6.path_mtus.retain(|_, (_, until)| now < *until);
            ip.v4.path_mtus.retain(|_, (_, until)| now < *until);
            if shared.ra_default.is_some_and(|(_, _, until)| now >= until) {
                shared.ra_default = None;
                shared.ip.v6.routes.remove(Ipv6Cidr::DEFAULT);
            }
        });
    }
    for link in 0..core.shared.links.len() {
        mld::run(core, out, link, now);
        igmp::run(core, out, link, now);
        nd::run_dad(core, out, link, now);
        arp::poll_neighbors(core, out, link, now, probes);
        nd::poll_neighbors(core, out, link, now);
    }
}

#[cfg(test)]
mod tests;
