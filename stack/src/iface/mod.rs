//! The pipeline of one lcore: an [`Interface`] driving one or more ports
//! (links) with its routes, over IPv4 and IPv6.
//!
//! [`Interface::poll_ports`] is the run-to-completion step: receive a burst
//! from each port, run each frame through Ethernet, ARP or Neighbor
//! Discovery, IPv4 or IPv6, ICMP, UDP and TCP (`rx`, `rx6`, `tcp`),
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
mod buffers;
mod config;
mod control;
mod deliver;
mod fast;
mod fast6;
mod forward;
mod inspect;
mod ip_out;
mod limit;
mod next_hop;
mod rx;
mod rx6;
pub mod tcp;
mod tx;
mod tx6;

pub use app::{Batch, DropDatagrams, InlineHandler, LcoreContext, RX_BURST};
pub use config::{ChecksumPolicy, ConfigError, InterfaceConfig, LinkConfig, MAX_LINKS};
pub use inspect::{
    parse_echo_reply, AddressInfo, AddressState, CounterSnapshot, EchoReply, NeighborInfo, Prefix,
    RouteInfo, TcpBufferMemory, TcpConnInfo, TcpListenerInfo, UdpSocketInfo,
};
pub use limit::TokenBucket;
pub use tcp::{ConnId, ListenError, ListenOptions, ListenerId, TcpEvent};
pub use tx::{SendError, TxBatch};

pub use crate::keys::Keys;

use crate::counters::{Counters, DropReason};
use crate::neighbor::{NeighborCache, NeighborState, Probe};
use crate::port::{Buf, MacAddr, Port};
use crate::reassembly::{Key6, Reassembler};
use crate::route::{Ipv4Cidr, Ipv6Cidr, Route, RouteCache, RouteTable};
use crate::route6::{Route6, RouteTable6};
use crate::socket::{BufPool, Command, Shared, SocketQueue, StackHandle};
use crate::tcp::TcpError;
use crate::time::{Duration, Instant};
use crate::udp::{BindError, BindOptions, PeerError, SocketId, UdpTable};
use crate::wire::ipv6::{multicast_mac, solicited_node};
use arrayvec::ArrayVec;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4};

/// ff02::1, the all-nodes group every IPv6 link joins.
pub(crate) const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
use deliver::{receive_burst, report_tcp, Delivery};
use std::collections::HashMap;
use std::sync::Arc;
use tx::Out;

/// One port's link-layer state: its MAC, addresses, MTU and neighbours.
#[derive(Debug)]
pub(crate) struct Link<B> {
    pub(crate) mac: MacAddr,
    pub(crate) addresses: Vec<Ipv4Cidr>,
    pub(crate) mtu: usize,
    pub(crate) neighbors: NeighborCache<B>,
    /// IPv6 runs on the link.
    pub(crate) ipv6: bool,
    /// IPv6 addresses in use (duplicate address detection passed).
    pub(crate) addresses6: Vec<Ipv6Cidr>,
    /// IPv6 addresses still under duplicate address detection.
    pub(crate) tentative6: Vec<Tentative>,
    /// IPv6 addresses another node turned out to use (never used here).
    pub(crate) duplicates6: Vec<Ipv6Cidr>,
    /// Multicast groups joined: all-nodes and each address's solicited-node
    /// group.
    pub(crate) groups6: Vec<Ipv6Addr>,
    pub(crate) neighbors6: NeighborCache<B, Ipv6Addr>,
}

impl<B> Link<B> {
    /// Our address to speak from towards `peer` on this link: the one whose
    /// network holds it, else the link's first.
    pub(crate) fn source_for(&self, peer: Ipv4Addr) -> Ipv4Addr {
        self.addresses
            .iter()
            .find(|a| a.contains(peer))
            .or(self.addresses.first())
            .map_or(Ipv4Addr::UNSPECIFIED, |a| a.addr)
    }

    /// True if `ip` is on one of this link's connected networks.
    pub(crate) fn on_link(&self, ip: Ipv4Addr) -> bool {
        self.addresses.iter().any(|a| a.contains(ip))
    }

    /// True if `ip` is one of this link's IPv6 addresses in use.
    pub(crate) fn has_address6(&self, ip: Ipv6Addr) -> bool {
        self.addresses6.iter().any(|a| a.addr == ip)
    }

    /// True if `ip` is one of this link's tentative IPv6 addresses.
    pub(crate) fn is_tentative6(&self, ip: Ipv6Addr) -> bool {
        self.tentative6.iter().any(|t| t.cidr.addr == ip)
    }

    /// True if the link joined multicast group `ip`.
    pub(crate) fn joined(&self, ip: Ipv6Addr) -> bool {
        self.groups6.contains(&ip)
    }

    /// True if the link listens to Ethernet multicast address `mac` (the
    /// mapping of a group it joined).
    pub(crate) fn listens(&self, mac: MacAddr) -> bool {
        self.groups6.iter().any(|&g| multicast_mac(g) == mac)
    }

    /// The address that routes through this link speak from: the first
    /// global one (in use or tentative), else the link-local one.
    pub(crate) fn route_source6(&self) -> Option<Ipv6Addr> {
        let all = || {
            self.addresses6
                .iter()
                .chain(self.tentative6.iter().map(|t| &t.cidr))
        };
        all()
            .find(|a| !a.addr.is_unicast_link_local())
            .or_else(|| all().next())
            .map(|a| a.addr)
    }

    /// True if `ip` is on one of the link's IPv6 prefixes (in use or
    /// tentative).
    pub(crate) fn on_link6(&self, ip: Ipv6Addr) -> bool {
        self.addresses6
            .iter()
            .chain(self.tentative6.iter().map(|t| &t.cidr))
            .any(|a| a.len < 128 && !a.addr.is_unicast_link_local() && a.contains(ip))
    }

    /// The link-local address, once it is in use.
    pub(crate) fn link_local6(&self) -> Option<Ipv6Addr> {
        self.addresses6
            .iter()
            .find(|a| a.addr.is_unicast_link_local())
            .map(|a| a.addr)
    }
}

/// An IPv6 address under duplicate address detection.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tentative {
    pub(crate) cidr: Ipv6Cidr,
    /// Solicitations still to send.
    pub(crate) probes_left: u8,
    /// When to send the next one, or to take the address into use;
    /// `None` before the first.
    pub(crate) deadline: Option<Instant>,
}

/// [`Core::class`]: one of our addresses.
pub(crate) const LOCAL: u8 = 1;
/// [`Core::class`]: a directed broadcast address of one of our networks, or
/// the limited broadcast.
pub(crate) const BROADCAST: u8 = 2;

/// An address's bit in [`Core::special_filter`] (a multiplicative hash's
/// top six bits).
#[inline]
fn special_bit(ip: u32) -> u64 {
    1 << (ip.wrapping_mul(0x9e37_79b1) >> 26)
}

/// The address classes of a configuration: each local address, each
/// directed broadcast address (prefixes shorter than /31) and the limited
/// broadcast, with an address in two roles getting both bits.
fn special_addresses(links: &[LinkConfig]) -> Vec<(u32, u8)> {
    let mut special: Vec<(u32, u8)> = vec![(Ipv4Addr::BROADCAST.to_bits(), BROADCAST)];
    let mut add =
        |ip: Ipv4Addr, class: u8| match special.iter_mut().find(|(a, _)| *a == ip.to_bits()) {
            Some((_, bits)) => *bits |= class,
            None => special.push((ip.to_bits(), class)),
        };
    for address in links.iter().flat_map(|l| l.addresses.iter()) {
        add(address.addr, LOCAL);
        if address.len < 31 {
            add(address.broadcast(), BROADCAST);
        }
    }
    // Local addresses first: they are what most packets ask about.
    special.sort_by_key(|&(_, class)| class & LOCAL == 0);
    special
}

/// State shared by the receive and send paths (everything but the handler
/// and the per-poll transmit batches).
#[derive(Debug)]
pub(crate) struct Core<B: Buf> {
    pub(crate) config: InterfaceConfig,
    pub(crate) links: Vec<Link<B>>,
    pub(crate) routes: RouteTable,
    /// IPv6 routes: on-link prefixes of the configured addresses, static
    /// routes (link-local destinations are not routed: they name a link).
    pub(crate) routes6: RouteTable6,
    pub(crate) route_cache: RouteCache,
    /// The IPv6 routes' cache (stamped with their generation).
    pub(crate) route_cache6: RouteCache<RouteTable6>,
    pub(crate) reassembler: Reassembler<B>,
    pub(crate) reassembler6: Reassembler<B, Key6>,
    pub(crate) udp: UdpTable,
    pub(crate) counters: Arc<Counters>,
    /// Every local address, of every link (computed once).
    pub(crate) local: Vec<Ipv4Addr>,
    /// Every address that is ours or a broadcast address, with its
    /// [`LOCAL`]/[`BROADCAST`] bits (computed once; one scan per question).
    pub(crate) special: Vec<(u32, u8)>,
    /// One bit per [`special_bit`] of each special address: a clear bit
    /// answers "neither local nor broadcast" without the scan (the common
    /// question about a source address).
    pub(crate) special_filter: u64,
    pub(crate) icmp_limit: TokenBucket,
    pub(crate) next_ident: u16,
    /// IPv6 fragment identification: a counter from a keyed start (RFC
    /// 7739: not predictable from outside).
    pub(crate) next_ident6: u32,
    /// Path MTUs below the link's, learned from packet-too-big messages
    /// (RFC 8201), with when to forget them. Bounded.
    pub(crate) path_mtus6: HashMap<Ipv6Addr, (usize, Instant)>,
    /// Path MTUs below the link's, learned from ICMP "fragmentation
    /// needed" about our TCP segments (RFC 1191), with when to forget
    /// them. Bounded.
    pub(crate) path_mtus4: HashMap<Ipv4Addr, (usize, Instant)>,
    /// ICMP errors for connected sockets found during a burst, handed over
    /// after it (bounded: more in one burst are dropped).
    pub(crate) socket_errors: ArrayVec<(SocketId, PeerError), SOCKET_ERRORS>,
    /// The default route a router advertisement installed: (link, router,
    /// until when).
    pub(crate) ra_default: Option<(usize, Ipv6Addr, Instant)>,
    /// TCP connections, listeners and their timers.
    pub(crate) tcp: tcp::TcpCore<B>,
}

/// Most socket errors kept per burst.
pub(crate) const SOCKET_ERRORS: usize = 16;

/// Most path MTUs remembered.
pub(crate) const PATH_MTUS: usize = 4096;

/// How long a learned path MTU holds (RFC 8201 5.3: at least 5 minutes).
pub(crate) const PATH_MTU_TIMEOUT: Duration = Duration::from_secs(600);

impl<B: Buf> Core<B> {
    /// [`LOCAL`] and/or [`BROADCAST`] for `ip`, or 0. Per packet.
    #[inline(always)]
    pub(crate) fn class(&self, ip: u32) -> u8 {
        if self.special_filter & special_bit(ip) == 0 {
            return 0;
        }
        for &(address, class) in &self.special {
            if address == ip {
                return class;
            }
        }
        0
    }

    /// True if `ip` is one of our addresses (on any link).
    #[inline]
    pub(crate) fn is_local(&self, ip: Ipv4Addr) -> bool {
        self.class(ip.to_bits()) & LOCAL != 0
    }

    /// True if `ip` is a broadcast address of one of our networks (or the
    /// limited broadcast).
    #[inline]
    pub(crate) fn is_broadcast(&self, ip: Ipv4Addr) -> bool {
        self.class(ip.to_bits()) & BROADCAST != 0
    }

    /// The next IPv6 fragment identification.
    pub(crate) fn fragment_ident6(&mut self) -> u32 {
        self.next_ident6 = self.next_ident6.wrapping_add(1);
        self.next_ident6
    }

    /// The MTU towards `dst` on a link of `link_mtu`.
    pub(crate) fn path_mtu6(&self, dst: Ipv6Addr, link_mtu: usize) -> usize {
        match self.path_mtus6.get(&dst) {
            Some(&(mtu, _)) => mtu.min(link_mtu),
            None => link_mtu,
        }
    }

    /// The MTU towards `dst` on a link of `link_mtu` (IPv4).
    pub(crate) fn path_mtu4(&self, dst: Ipv4Addr, link_mtu: usize) -> usize {
        match self.path_mtus4.get(&dst) {
            Some(&(mtu, _)) => mtu.min(link_mtu),
            None => link_mtu,
        }
    }

    /// Records a path MTU to `dst` learned now (a full table takes no new
    /// destinations; a known one is updated). ICMP errors only, not per
    /// packet.
    pub(crate) fn learn_path_mtu(&mut self, dst: IpAddr, mtu: usize, now: Instant) {
        let until = now + PATH_MTU_TIMEOUT;
        match dst {
            IpAddr::V4(dst) => {
                if self.path_mtus4.contains_key(&dst) || self.path_mtus4.len() < PATH_MTUS {
                    self.path_mtus4.insert(dst, (mtu, until));
                }
            }
            IpAddr::V6(dst) => {
                if self.path_mtus6.contains_key(&dst) || self.path_mtus6.len() < PATH_MTUS {
                    self.path_mtus6.insert(dst, (mtu, until));
                }
            }
        }
    }

    pub(crate) fn ident(&mut self) -> u16 {
        self.next_ident = self.next_ident.wrapping_add(1);
        self.next_ident
    }

    /// Changes whenever a route or any neighbour changes: the stamp of
    /// cached routes.
    #[inline]
    pub(crate) fn generation(&self) -> u64 {
        let neighbors = match self.links.as_slice() {
            // One port, the common case: no loop.
            [link] => link.neighbors.generation(),
            links => links
                .iter()
                .fold(0u64, |sum, l| sum.wrapping_add(l.neighbors.generation())),
        };
        self.routes.generation() ^ neighbors.rotate_left(32)
    }

    /// The link whose connected networks hold `ip`.
    pub(crate) fn link_of(&self, ip: Ipv4Addr) -> Option<usize> {
        self.links.iter().position(|l| l.on_link(ip))
    }

    /// True if `ip` is one of our IPv6 addresses (on any link: the weak
    /// host model, except that link-local addresses are per link).
    pub(crate) fn is_local6(&self, link: usize, ip: Ipv6Addr) -> bool {
        if ip.is_unicast_link_local() {
            return self.links.get(link).is_some_and(|l| l.has_address6(ip));
        }
        self.links.iter().any(|l| l.has_address6(ip))
    }
}

/// The IPv4/UDP stack of one lcore over one or more ports. See the module
/// documentation.
#[derive(Debug)]
pub struct Interface<B: Buf> {
    core: Core<B>,
    /// One transmit batch per link, empty between polls.
    batches: Vec<TxBatch<B>>,
    /// Queues of queue-mode sockets, by socket index.
    queues: Vec<Option<Arc<SocketQueue<B>>>>,
    /// Commands and sends from application threads, once a handle exists.
    shared: Option<Arc<Shared<B>>>,
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
        let routes6 = RouteTable6::new();
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
        let links: Vec<Link<B>> = config
            .links
            .iter()
            .map(|l| {
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
                Link {
                    mac: l.mac,
                    addresses: l.addresses.clone(),
                    mtu: l.mtu,
                    neighbors: NeighborCache::new(config.neighbor.clone()),
                    ipv6: l.ipv6,
                    addresses6: if dad > 0 { Vec::new() } else { addresses6 },
                    tentative6,
                    duplicates6: Vec::new(),
                    groups6,
                    neighbors6: NeighborCache::new(config.neighbor.clone()),
                }
            })
            .collect();
        let all = || config.links.iter().flat_map(|l| l.addresses.iter());
        let core = Core {
            reassembler: Reassembler::new(config.reassembly.clone()),
            reassembler6: Reassembler::new(config.reassembly.clone()),
            udp: UdpTable::new(keys.flow),
            icmp_limit: TokenBucket::new(
                config.icmp_errors_per_sec,
                config.icmp_errors_per_sec.max(1),
            ),
            routes,
            routes6,
            route_cache: RouteCache::new(4096),
            route_cache6: RouteCache::new(4096),
            counters: Arc::new(Counters::default()),
            local: all().map(|a| a.addr).collect(),
            special_filter: special_addresses(&config.links)
                .iter()
                .fold(0, |bits, &(ip, _)| bits | special_bit(ip)),
            special: special_addresses(&config.links),
            next_ident: 0,
            next_ident6: keys.fragment_ident,
            path_mtus6: HashMap::new(),
            path_mtus4: HashMap::new(),
            socket_errors: ArrayVec::new(),
            ra_default: None,
            tcp: tcp::TcpCore::new(config.tcp.clone(), &keys),
            links,
            config,
        };
        let batches = (0..core.links.len())
            .map(|_| TxBatch::new(core.config.tx_retries))
            .collect();
        let mut iface = Interface {
            core,
            batches,
            queues: Vec::new(),
            shared: None,
            probes: Vec::new(),
            next_timers: Instant::ZERO,
            announced: false,
        };
        if let Some(gateway) = iface.core.config.gateway {
            iface.add_route(Ipv4Cidr::DEFAULT, gateway)?;
        }
        for link in 0..iface.core.links.len() {
            for cidr in iface.core.links[link].addresses6.clone() {
                add_on_link_route6(&mut iface.core, link, cidr);
            }
        }
        Ok(iface)
    }

    /// The counters (clone the `Arc` to read them from another thread).
    pub fn counters(&self) -> &Arc<Counters> {
        &self.core.counters
    }

    /// The configuration.
    pub fn config(&self) -> &InterfaceConfig {
        &self.core.config
    }

    /// A handle that application threads use to open queue-mode sockets on
    /// this interface; `pool` gives them buffers for sending, and each socket
    /// queues up to `queue_len` received datagrams.
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
        let links = ports.len().min(self.batches.len());
        let mut out = Out::new(&mut ports[..links], &mut self.batches[..links]);
        let result = tx6::send_any(&mut self.core, &mut out, now, socket, dst.into(), payload);
        out.flush(&self.core.counters);
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
            queues,
            shared,
            probes,
            next_timers,
            announced,
        } = self;
        let mut out = Out::new(&mut ports[..links], &mut batches[..links]);
        if let Some(shared) = shared.as_deref() {
            // Sends first: a socket's last datagrams go out before its close.
            send_queued(core, shared, &mut out, now);
            run_commands(core, queues, shared, &mut out, now);
            tcp::attend(core, &mut out, now, shared);
        }
        if !*announced {
            *announced = true;
            for link in 0..links {
                for i in 0..core.links[link].addresses.len() {
                    let ip = core.links[link].addresses[i].addr;
                    tx::send_arp_request(core, &mut out, link, ip, ip, None);
                }
                run_dad(core, &mut out, link, now);
                let ready = core.links[link].link_local6().is_some();
                if core.config.accept_ra && ready {
                    tx6::send_router_solicitation(core, &mut out, link);
                }
            }
        }
        let mut delivery = Delivery::new();
        let mut received = 0;
        for link in 0..links {
            received += receive_burst(core, queues, &mut out, link, now, handler, &mut delivery);
        }
        tcp::run_deferred(core, &mut out, now);
        delivery.wake_queues(queues);
        if now >= *next_timers {
            *next_timers = now + TIMER_INTERVAL;
            run_timers(core, probes, &mut out, now);
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
        out.flush(&core.counters);
        received
    }
}

/// The on-link route of an IPv6 address's prefix (none for link-local
/// addresses, which name their link, or for /128s).
fn add_on_link_route6<B: Buf>(core: &mut Core<B>, link: usize, cidr: Ipv6Cidr) {
    if cidr.len < 128 && !cidr.addr.is_unicast_link_local() {
        core.routes6.add(Route6 {
            prefix: cidr,
            gateway: None,
            port: link as u16,
            source: cidr.addr,
        });
    }
}

/// Duplicate address detection on `link`: solicitations for tentative
/// addresses whose time has come, and addresses that stayed unclaimed
/// taken into use.
fn run_dad<B: Buf, P: Port<Buf = B>>(
    core: &mut Core<B>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
) {
    let retrans = core.config.neighbor.retrans_time;
    let mut index = 0;
    while let Some(tentative) = core.links[link].tentative6.get_mut(index) {
        if tentative.deadline.is_some_and(|d| now < d) {
            index += 1;
            continue;
        }
        if tentative.probes_left > 0 {
            tentative.probes_left -= 1;
            tentative.deadline = Some(now + retrans);
            let target = tentative.cidr.addr;
            tx6::send_dad_solicitation(core, out, link, target);
            index += 1;
            continue;
        }
        let cidr = tentative.cidr;
        core.links[link].tentative6.remove(index);
        core.links[link].addresses6.push(cidr);
        add_on_link_route6(core, link, cidr);
        if core.config.accept_ra && cidr.addr.is_unicast_link_local() {
            tx6::send_router_solicitation(core, out, link);
        }
    }
}

/// Another node uses `ip`, tentative on `link`: it is never used here.
pub(crate) fn address_in_use6<B: Buf>(core: &mut Core<B>, link: usize, ip: Ipv6Addr) {
    let tentative = &mut core.links[link].tentative6;
    if let Some(at) = tentative.iter().position(|t| t.cidr.addr == ip) {
        let cidr = tentative.remove(at).cidr;
        core.links[link].duplicates6.push(cidr);
        core.counters.count(crate::counters::Stat::Ip6DadDuplicates);
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
        IpAddr::V4(ip) => core.routes.next_hop(ip).map(|hop| IpAddr::V4(hop.source)),
        IpAddr::V6(ip) if ip.is_unicast_link_local() => None,
        IpAddr::V6(ip) => core.routes6.next_hop(ip).map(|hop| IpAddr::V6(hop.source)),
    };
    match source {
        Some(source) => core.udp.connect_from(id, remote, source),
        None => core.udp.connect(id, remote),
    }
}

/// True if `ip` is one of our addresses (IPv4 from `local4`, IPv6 on any
/// link).
pub(crate) fn is_ours<B>(local4: &[Ipv4Addr], links: &[Link<B>], ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => local4.contains(&v4),
        IpAddr::V6(v6) => links
            .iter()
            .any(|l| l.has_address6(v6) || l.is_tentative6(v6)),
    }
}

/// Applies binds, connects and closes from application threads.
fn run_commands<B: Buf, P: Port<Buf = B>>(
    core: &mut Core<B>,
    queues: &mut Vec<Option<Arc<SocketQueue<B>>>>,
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
                let (local4, links) = (&core.local, &core.links);
                let result = core
                    .udp
                    .bind(local, options, |ip| is_ours(local4, links, ip))
                    .map(|id| {
                        let index = id.index() as usize;
                        if queues.len() <= index {
                            queues.resize(index + 1, None);
                        }
                        queues[index] = Some(queue);
                        (id, core.udp.local_socket_addr(id).unwrap_or(local))
                    });
                if let (Err(_), Ok((id, _))) = (reply.try_send(result), result) {
                    // The caller gave up waiting: nobody owns the socket.
                    close_queued(core, queues, id);
                }
            }
            Command::Connect { socket, remote } => {
                udp_connect(core, socket, remote);
            }
            Command::Close { socket } => close_queued(core, queues, socket),
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

fn close_queued<B: Buf>(
    core: &mut Core<B>,
    queues: &mut [Option<Arc<SocketQueue<B>>>],
    socket: SocketId,
) {
    core.udp.close(socket);
    if let Some(slot) = queues.get_mut(socket.index() as usize) {
        *slot = None;
    }
}

/// Sends datagrams queued by application threads (bounded per poll).
fn send_queued<B: Buf, P: Port<Buf = B>>(
    core: &mut Core<B>,
    shared: &Shared<B>,
    out: &mut Out<'_, P>,
    now: Instant,
) {
    for _ in 0..MAX_SENDS_PER_POLL {
        let Some(request) = shared.sends.pop() else {
            return;
        };
        // Failures are counted by reason inside.
        let _ = match canonical_dst(request.dst) {
            SocketAddr::V4(v4) => {
                tx::send_udp_buffer(core, out, now, request.socket, v4, request.buf)
            }
            SocketAddr::V6(v6) => {
                tx6::send_udp6_buffer(core, out, now, request.socket, v6, request.buf)
            }
        };
    }
}

/// Neighbour retries and expiry on every link, reassembly timeouts.
fn run_timers<B: Buf, P: Port<Buf = B>>(
    core: &mut Core<B>,
    probes: &mut Vec<Probe<Ipv4Addr>>,
    out: &mut Out<'_, P>,
    now: Instant,
) {
    for _ in 0..core.reassembler.expire(now) {
        core.counters.count_drop(DropReason::Ipv4ReassemblyTimeout);
    }
    for _ in 0..core.reassembler6.expire(now) {
        core.counters.count_drop(DropReason::Ipv6ReassemblyTimeout);
    }
    if !core.path_mtus6.is_empty() {
        core.path_mtus6.retain(|_, (_, until)| now < *until);
    }
    if !core.path_mtus4.is_empty() {
        core.path_mtus4.retain(|_, (_, until)| now < *until);
    }
    if let Some((_, _, until)) = core.ra_default {
        if now >= until {
            core.ra_default = None;
            core.routes6.remove(Ipv6Cidr::DEFAULT);
        }
    }
    for link in 0..core.links.len() {
        if !core.links[link].tentative6.is_empty() {
            run_dad(core, out, link, now);
        }
        probes.clear();
        let given_up = core.links[link].neighbors.poll(now, probes);
        for _ in 0..given_up {
            core.counters.count_drop(DropReason::TxNeighborUnresolved);
        }
        for &Probe { ip, mac } in probes.iter() {
            let source = core.links[link].source_for(ip);
            tx::send_arp_request(core, out, link, source, ip, mac);
        }
        // IPv6 neighbours: the same ageing, and solicitations repeated.
        let mut probes6 = Vec::new();
        let given_up = core.links[link].neighbors6.poll(now, &mut probes6);
        for _ in 0..given_up {
            core.counters.count_drop(DropReason::TxNeighborUnresolved);
        }
        for Probe { ip, mac } in probes6 {
            tx6::send_solicitation(core, out, link, ip, mac);
        }
    }
}

#[cfg(test)]
mod tests;
