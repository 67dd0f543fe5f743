//! The IPv4/UDP pipeline of one port: an [`Interface`] polled by its lcore.
//!
//! [`Interface::poll`] is the run-to-completion step: receive a burst, run
//! each frame through Ethernet, ARP, IPv4, ICMP and UDP ([`rx`]), hand the
//! datagrams to the application grouped per socket ([`UdpHandler`], inline
//! mode), run the neighbour timers, and transmit everything the step produced
//! in bursts ([`TxBatch`]). Replies (ARP, ICMP echo, UDP echo) are built in
//! the received buffer; nothing is copied or allocated per packet.
//!
//! Invariants: no panic on any input (wire views are checked before use);
//! every dropped packet increments one [`DropReason`]; `now` is an argument.
//! Replies go back to the Ethernet source of the request (the previous hop),
//! so answering needs no route or neighbour lookup.

mod fast;
mod limit;
mod rx;
mod tx;

pub use limit::TokenBucket;
pub use tx::{SendError, TxBatch};

use crate::counters::{Counters, DropReason};
use crate::neighbor::{NeighborCache, NeighborConfig, NeighborState};
use crate::port::{Buf, MacAddr, Port, DEFAULT_BURST};
use crate::reassembly::{Reassembler, ReassemblyConfig};
use crate::route::{Ipv4Cidr, Route, RouteCache, RouteTable};
use crate::socket::{BufPool, Command, Shared, SocketQueue, StackHandle};
use crate::time::{Duration, Instant};
use crate::udp::{BindError, BindOptions, Datagram, SocketId, UdpTable};
use arrayvec::ArrayVec;
use core::net::{Ipv4Addr, SocketAddrV4};
use std::sync::Arc;

/// Packets received per poll.
pub const RX_BURST: usize = DEFAULT_BURST;

/// Datagrams handed to a handler at once (consecutive datagrams of a burst
/// for one socket).
pub type Batch<B> = ArrayVec<Datagram<B>, RX_BURST>;

/// How checksums of received packets are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChecksumPolicy {
    /// Trust the device's verdict when it gives one; verify in software
    /// otherwise.
    TrustOffload,
    /// Always verify in software.
    Software,
}

/// How an interface is set up.
#[derive(Debug, Clone)]
pub struct InterfaceConfig {
    /// The port's MAC address.
    pub mac: MacAddr,
    /// Local addresses with their prefix lengths (each adds a connected route).
    pub addresses: Vec<Ipv4Cidr>,
    /// Default gateway, if any.
    pub gateway: Option<Ipv4Addr>,
    /// This port's index (for routes and SO_BINDTODEVICE).
    pub port_index: u16,
    /// Largest IPv4 packet the link carries (bigger ones are fragmented).
    pub mtu: usize,
    /// Receive checksum policy.
    pub checksum: ChecksumPolicy,
    /// ICMP errors allowed per second (and burst) before rate limiting.
    pub icmp_errors_per_sec: u64,
    /// Neighbour cache tunables.
    pub neighbor: NeighborConfig,
    /// Fragment reassembly tunables.
    pub reassembly: ReassemblyConfig,
    /// Key of the reuseport flow hash (use a random value).
    pub hash_key: u64,
    /// Extra transmit attempts before the unsent tail is dropped.
    pub tx_retries: u32,
}

impl InterfaceConfig {
    /// A configuration with one address and defaults for everything else.
    pub fn new(mac: MacAddr, address: Ipv4Cidr) -> InterfaceConfig {
        InterfaceConfig {
            mac,
            addresses: vec![address],
            gateway: None,
            port_index: 0,
            mtu: 1500,
            checksum: ChecksumPolicy::TrustOffload,
            icmp_errors_per_sec: 1000,
            neighbor: NeighborConfig::default(),
            reassembly: ReassemblyConfig::default(),
            hash_key: 0x005e_ed0f_d057_ac6b,
            tx_retries: 4,
        }
    }
}

/// Receives datagrams in inline mode, on the lcore.
pub trait UdpHandler<B: Buf> {
    /// Called with consecutive datagrams of a burst for one socket, in
    /// arrival order. Datagrams left in `batch` are freed afterwards.
    fn on_datagrams<P: Port<Buf = B>>(
        &mut self,
        socket: SocketId,
        batch: &mut Batch<B>,
        ctx: &mut UdpContext<'_, P>,
    );
}

/// A handler that drops everything (for stacks that only answer ARP/ICMP).
#[derive(Debug, Default)]
pub struct DropDatagrams;

impl<B: Buf> UdpHandler<B> for DropDatagrams {
    fn on_datagrams<P: Port<Buf = B>>(
        &mut self,
        _: SocketId,
        _: &mut Batch<B>,
        _: &mut UdpContext<'_, P>,
    ) {
    }
}

/// State shared by the receive and send paths (everything but the handler).
#[derive(Debug)]
pub(crate) struct Core<B: Buf> {
    pub(crate) config: InterfaceConfig,
    pub(crate) routes: RouteTable,
    pub(crate) route_cache: RouteCache,
    pub(crate) neighbors: NeighborCache<B>,
    pub(crate) reassembler: Reassembler<B>,
    pub(crate) udp: UdpTable,
    pub(crate) counters: Arc<Counters>,
    /// Directed broadcast addresses of our networks (computed once).
    pub(crate) broadcasts: Vec<Ipv4Addr>,
    pub(crate) icmp_limit: TokenBucket,
    pub(crate) next_ident: u16,
}

impl<B: Buf> Core<B> {
    /// True if `ip` is one of our addresses.
    #[inline]
    pub(crate) fn is_local(&self, ip: Ipv4Addr) -> bool {
        self.config.addresses.iter().any(|a| a.addr == ip)
    }

    /// True if `ip` is a broadcast address of one of our networks (or the
    /// limited broadcast).
    #[inline]
    pub(crate) fn is_broadcast(&self, ip: Ipv4Addr) -> bool {
        ip.is_broadcast() || self.broadcasts.contains(&ip)
    }

    pub(crate) fn ident(&mut self) -> u16 {
        self.next_ident = self.next_ident.wrapping_add(1);
        self.next_ident
    }
}

/// What a handler may do while it runs on the lcore.
pub struct UdpContext<'a, P: Port> {
    pub(crate) core: &'a mut Core<P::Buf>,
    pub(crate) port: &'a mut P,
    pub(crate) tx: &'a mut TxBatch<P::Buf>,
    pub(crate) now: Instant,
}

impl<P: Port> UdpContext<'_, P> {
    /// Sends `datagram`'s payload back to its sender, from the address it
    /// was sent to, reusing its buffer (zero-copy).
    pub fn reply(&mut self, datagram: Datagram<P::Buf>) {
        tx::reply_udp_in_place(self.core, self.port, self.tx, datagram);
    }

    /// Sends `payload` from `socket` to `dst` (a new buffer; headers added).
    pub fn send_to(
        &mut self,
        socket: SocketId,
        dst: SocketAddrV4,
        payload: &[u8],
    ) -> Result<(), SendError> {
        tx::send_udp(
            self.core, self.port, self.tx, self.now, socket, dst, payload,
        )
    }

    /// The interface's counters.
    pub fn counters(&self) -> &Counters {
        &self.core.counters
    }

    /// The time of this poll.
    pub fn now(&self) -> Instant {
        self.now
    }
}

/// One port's IPv4/UDP stack. See the module documentation.
#[derive(Debug)]
pub struct Interface<B: Buf> {
    core: Core<B>,
    /// Queues of queue-mode sockets, by socket index.
    queues: Vec<Option<Arc<SocketQueue<B>>>>,
    /// Commands and sends from application threads, once a handle exists.
    shared: Option<Arc<Shared<B>>>,
    probes: Vec<Ipv4Addr>,
    next_timers: Instant,
    announced: bool,
}

/// Above this many sockets the table no longer stays in cache: prefetch.
const PREFETCH_MIN_SOCKETS: usize = 256;
/// Commands from application threads applied per poll.
const MAX_COMMANDS_PER_POLL: usize = 16;
/// Datagrams from application threads sent per poll.
const MAX_SENDS_PER_POLL: usize = 256;
/// Capacity of the send queue shared by application threads.
const SEND_QUEUE: usize = 4096;

/// How often neighbour timers run.
const TIMER_INTERVAL: Duration = Duration::from_millis(100);

impl<B: Buf> Interface<B> {
    /// An interface with connected routes for its addresses and a default
    /// route through the gateway, if one is set.
    pub fn new(config: InterfaceConfig) -> Interface<B> {
        let mut routes = RouteTable::new();
        for address in &config.addresses {
            routes.add(Route {
                prefix: *address,
                gateway: None,
                port: config.port_index,
                source: address.addr,
            });
        }
        if let (Some(gateway), Some(first)) = (config.gateway, config.addresses.first()) {
            let source = config
                .addresses
                .iter()
                .find(|a| a.contains(gateway))
                .unwrap_or(first)
                .addr;
            routes.add(Route {
                prefix: Ipv4Cidr {
                    addr: Ipv4Addr::UNSPECIFIED,
                    len: 0,
                },
                gateway: Some(gateway),
                port: config.port_index,
                source,
            });
        }
        let core = Core {
            neighbors: NeighborCache::new(config.neighbor.clone()),
            reassembler: Reassembler::new(config.reassembly.clone()),
            udp: UdpTable::new(config.hash_key),
            icmp_limit: TokenBucket::new(
                config.icmp_errors_per_sec,
                config.icmp_errors_per_sec.max(1),
            ),
            routes,
            route_cache: RouteCache::new(4096),
            counters: Arc::new(Counters::default()),
            broadcasts: config
                .addresses
                .iter()
                .filter(|a| a.len < 31)
                .map(|a| a.broadcast())
                .collect(),
            next_ident: 0,
            config,
        };
        Interface {
            core,
            queues: Vec::new(),
            shared: None,
            probes: Vec::new(),
            next_timers: Instant::ZERO,
            announced: false,
        }
    }

    /// The counters (clone the `Arc` to read them from another thread).
    pub fn counters(&self) -> &Arc<Counters> {
        &self.core.counters
    }

    /// The configuration.
    pub fn config(&self) -> &InterfaceConfig {
        &self.core.config
    }

    /// Adds a static route.
    pub fn add_route(&mut self, prefix: Ipv4Cidr, gateway: Option<Ipv4Addr>) {
        let source = self
            .core
            .config
            .addresses
            .first()
            .map_or(Ipv4Addr::UNSPECIFIED, |a| a.addr);
        self.core.routes.add(Route {
            prefix,
            gateway,
            port: self.core.config.port_index,
            source,
        });
    }

    /// Binds a UDP socket (port 0: an ephemeral port).
    pub fn udp_bind(
        &mut self,
        local: SocketAddrV4,
        options: BindOptions,
    ) -> Result<SocketId, BindError> {
        let core = &mut self.core;
        let addresses = &core.config.addresses;
        core.udp
            .bind(local, options, |ip| addresses.iter().any(|a| a.addr == ip))
    }

    /// Connects a UDP socket to `remote`.
    pub fn udp_connect(&mut self, socket: SocketId, remote: SocketAddrV4) -> bool {
        self.core.udp.connect(socket, remote)
    }

    /// Closes a UDP socket.
    pub fn udp_close(&mut self, socket: SocketId) -> bool {
        self.core.udp.close(socket)
    }

    /// The local address of a UDP socket.
    pub fn udp_local_addr(&self, socket: SocketId) -> Option<SocketAddrV4> {
        self.core.udp.local_addr(socket)
    }

    /// The MAC of a neighbour, if resolved.
    pub fn neighbor(&self, ip: Ipv4Addr) -> Option<MacAddr> {
        self.core.neighbors.lookup(ip)
    }

    /// The neighbour cache's entries (control path).
    pub fn neighbors(&self) -> Vec<(Ipv4Addr, Option<MacAddr>, NeighborState)> {
        self.core.neighbors.entries()
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

    /// Sends `payload` from `socket` to `dst` outside of a poll (e.g. to start
    /// a conversation); it leaves on this call.
    pub fn send_to<P: Port<Buf = B>>(
        &mut self,
        port: &mut P,
        now: Instant,
        socket: SocketId,
        dst: SocketAddrV4,
        payload: &[u8],
    ) -> Result<(), SendError> {
        let mut out = TxBatch::new(self.core.config.tx_retries);
        let result = tx::send_udp(&mut self.core, port, &mut out, now, socket, dst, payload);
        out.flush(port, &self.core.counters);
        result
    }

    /// One run-to-completion step: receive up to [`RX_BURST`] frames,
    /// process them, deliver datagrams to `handler`, run timers, transmit.
    /// Returns the number of frames received. Owning lcore only.
    pub fn poll<P: Port<Buf = B>, H: UdpHandler<B>>(
        &mut self,
        port: &mut P,
        now: Instant,
        handler: &mut H,
    ) -> usize {
        let mut tx = TxBatch::new(self.core.config.tx_retries);
        // Taken out and put back (no reference-count traffic per poll).
        if let Some(shared) = self.shared.take() {
            // Sends first: a socket's last datagrams go out before its close.
            self.send_queued(&shared, port, &mut tx, now);
            self.run_commands(&shared);
            self.shared = Some(shared);
        }
        if !self.announced {
            self.announced = true;
            for i in 0..self.core.config.addresses.len() {
                let ip = self.core.config.addresses[i].addr;
                tx::send_arp_request(&mut self.core, port, &mut tx, ip, ip);
            }
        }
        let mut burst: ArrayVec<B, RX_BURST> = ArrayVec::new();
        let received = port.rx_burst(&mut burst, RX_BURST);
        // With many sockets, start the socket-table loads of the whole burst
        // before the first lookup needs one, so their cache misses overlap.
        if self.core.udp.len() > PREFETCH_MIN_SOCKETS {
            let slots: ArrayVec<u32, RX_BURST> = burst
                .iter()
                .map(|buf| {
                    rx::peek_udp_port(buf.data()).map_or(u32::MAX, |p| self.core.udp.touch(p))
                })
                .collect();
            for &slot in &slots {
                self.core.udp.touch_socket(slot);
            }
        }
        // Datagrams are handed over as they come, in arrival order;
        // consecutive ones for the same socket travel together.
        let mut batch: Batch<B> = ArrayVec::new();
        let mut batch_socket = None;
        let mut to_wake: ArrayVec<u32, RX_BURST> = ArrayVec::new();
        for buf in burst.drain(..) {
            let delivered = match fast::try_udp(&self.core, buf) {
                fast::Fast::Deliver(socket, datagram) => Some((socket, datagram)),
                fast::Fast::General(buf) => {
                    let mut delivered = None;
                    rx::receive_frame(&mut self.core, port, &mut tx, now, buf, &mut delivered);
                    delivered
                }
            };
            let Some((socket, datagram)) = delivered else {
                continue;
            };
            if batch_socket != Some(socket) {
                if let Some(previous) = batch_socket {
                    self.hand_over(
                        previous,
                        &mut batch,
                        port,
                        &mut tx,
                        now,
                        handler,
                        &mut to_wake,
                    );
                }
                batch_socket = Some(socket);
            }
            // A batch holds a whole burst, so there is always room.
            if batch.try_push(datagram).is_err() {
                self.core.counters.count_drop(DropReason::UdpQueueFull);
            }
        }
        if let Some(socket) = batch_socket {
            self.hand_over(
                socket,
                &mut batch,
                port,
                &mut tx,
                now,
                handler,
                &mut to_wake,
            );
        }
        for index in to_wake {
            if let Some(Some(queue)) = self.queues.get(index as usize) {
                queue.wake();
            }
        }
        if now >= self.next_timers {
            self.next_timers = now + TIMER_INTERVAL;
            self.run_timers(port, &mut tx, now);
        }
        tx.flush(port, &self.core.counters);
        received
    }

    /// Hands one socket's consecutive datagrams over: to its queue (queue
    /// mode; the queue is noted in `to_wake`, woken once after the burst) or
    /// to one handler call (inline mode). Leaves `batch` empty.
    #[allow(clippy::too_many_arguments)]
    fn hand_over<P: Port<Buf = B>, H: UdpHandler<B>>(
        &mut self,
        socket: SocketId,
        batch: &mut Batch<B>,
        port: &mut P,
        tx: &mut TxBatch<B>,
        now: Instant,
        handler: &mut H,
        to_wake: &mut ArrayVec<u32, RX_BURST>,
    ) {
        let index = socket.index();
        match self.queues.get(index as usize) {
            Some(Some(queue)) => {
                let (pushed, dropped) = queue.push_all(batch.drain(..));
                for _ in 0..dropped {
                    self.core.counters.count_drop(DropReason::UdpQueueFull);
                }
                if pushed > 0 && !to_wake.contains(&index) {
                    let _ = to_wake.try_push(index);
                }
            }
            _ => {
                let mut ctx = UdpContext {
                    core: &mut self.core,
                    port,
                    tx,
                    now,
                };
                handler.on_datagrams(socket, batch, &mut ctx);
            }
        }
        batch.clear();
    }

    /// Applies binds, connects and closes from application threads.
    fn run_commands(&mut self, shared: &Shared<B>) {
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
                    let result = self.udp_bind(local, options).map(|id| {
                        let index = id.index() as usize;
                        if self.queues.len() <= index {
                            self.queues.resize(index + 1, None);
                        }
                        self.queues[index] = Some(queue);
                        (id, self.core.udp.local_addr(id).unwrap_or(local))
                    });
                    if let (Err(_), Ok((id, _))) = (reply.try_send(result), result) {
                        // The caller gave up waiting: nobody owns the socket.
                        self.close_queued(id);
                    }
                }
                Command::Connect { socket, remote } => {
                    self.core.udp.connect(socket, remote);
                }
                Command::Close { socket } => self.close_queued(socket),
            }
        }
    }

    fn close_queued(&mut self, socket: SocketId) {
        self.core.udp.close(socket);
        if let Some(slot) = self.queues.get_mut(socket.index() as usize) {
            *slot = None;
        }
    }

    /// Sends datagrams queued by application threads (bounded per poll).
    fn send_queued<P: Port<Buf = B>>(
        &mut self,
        shared: &Shared<B>,
        port: &mut P,
        tx: &mut TxBatch<B>,
        now: Instant,
    ) {
        for _ in 0..MAX_SENDS_PER_POLL {
            let Some(request) = shared.sends.pop() else {
                return;
            };
            // Failures are counted by reason inside.
            let _ = tx::send_udp_buffer(
                &mut self.core,
                port,
                tx,
                now,
                request.socket,
                request.dst,
                request.buf,
            );
        }
    }

    fn run_timers<P: Port<Buf = B>>(&mut self, port: &mut P, tx: &mut TxBatch<B>, now: Instant) {
        self.probes.clear();
        let given_up = self.core.neighbors.poll(now, &mut self.probes);
        for _ in 0..given_up {
            self.core
                .counters
                .count_drop(DropReason::TxNeighborUnresolved);
        }
        for _ in 0..self.core.reassembler.expire(now) {
            self.core
                .counters
                .count_drop(DropReason::Ipv4ReassemblyTimeout);
        }
        for i in 0..self.probes.len() {
            let target = self.probes[i];
            let source = self
                .core
                .config
                .addresses
                .iter()
                .find(|a| a.contains(target))
                .or(self.core.config.addresses.first())
                .map_or(Ipv4Addr::UNSPECIFIED, |a| a.addr);
            tx::send_arp_request(&mut self.core, port, tx, source, target);
        }
    }
}

#[cfg(test)]
mod tests;
