//! The UDP socket table, with Linux's lookup semantics.
//!
//! Layout: an array indexed by local port (65,536 eight-byte entries, 512 KiB) holds the
//! first socket bound to each port; the sockets of one port form a chain
//! through their entries. Lookup reads one array slot and walks that port's
//! chain, so its cost does not depend on how many sockets exist, only on how
//! many share the destination port (usually one).
//!
//! Semantics follow `__udp4_lib_lookup`: sockets bound to the destination
//! address are considered first, and only if none matches, those bound to ANY.
//! A port whose only socket is a plain one (unconnected, no group, no
//! device) is marked in its slot, and lookup just compares that socket's
//! address: the common server case costs one slot read and one compare.
//! Otherwise each candidate is scored by [`score`], which has exactly one call site
//! on the per-packet path ([`UdpTable::lookup`]) and is forced inline (in
//! Linux a second call site of the UDP scoring function made the compiler
//! stop inlining it, a cost felt on every datagram). A datagram to a
//! broadcast address or a group goes to every socket [`score`] lets hear
//! it ([`UdpTable::hearers`], Linux's multicast delivery): the one lookup
//! picks, and a copy to each other. When the best candidate belongs to an SO_REUSEPORT group, a
//! keyed hash of the 4-tuple picks the member, or a member pinned to the
//! pipeline the datagram arrived on (SO_INCOMING_CPU; the `group` submodule),
//! unless the group holds connected sockets: then scoring goes on, so the
//! connected socket wins (the case Linux's reuseport lookup keeps as well).
//!
//! Connecting a socket bound to ANY binds it to the route's source address
//! ([`UdpTable::connect_from`]), as Linux's connect does.
//!
//! The send side, what a send or forward from a socket reads (its address,
//! TOS byte and the route kept to its last destination, one 32-byte slot
//! per socket), is in the `send` submodule.
//!
//! Shared by every pipeline of a stack, which read it per packet; binds,
//! connects and closes are control-path writes.

use crate::bind_views::{is_mapped, key_of, overlap, views, Views};
use core::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

/// A socket's handle in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SocketId(u32);

impl SocketId {
    /// No socket: what a datagram carries before delivery names one.
    pub(crate) const UNSET: SocketId = SocketId(NONE);

    /// The raw index (stable while the socket is bound).
    pub fn index(self) -> u32 {
        self.0
    }
}

/// Options of [`UdpTable::bind`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BindOptions {
    /// SO_REUSEPORT: share the address with other sockets that set it.
    pub reuse_port: bool,
    /// SO_BINDTODEVICE: only receive from this port.
    pub device: Option<u16>,
    /// IPV6_V6ONLY: an IPv6 socket bound to `::` does not also receive
    /// IPv4 (as IPv4-mapped addresses). Ignored for IPv4 sockets.
    pub v6_only: bool,
    /// IP_TOS / IPV6_TCLASS: the DSCP/ECN byte of every datagram the
    /// socket sends (IPv4 type of service, IPv6 traffic class), replies
    /// and forwards included. 0 (the default) leaves it clear; 0xb8 is
    /// DSCP EF (46), what media traffic usually asks for.
    pub tos: u8,
    /// SO_INCOMING_CPU: the pipeline (lcore, by `Interface::index`) this
    /// socket serves. In a reuseport group, a datagram that arrives on
    /// that pipeline goes to a member pinned there (by hash among several)
    /// rather than to the group's hash pick; a connected member still
    /// takes its own flow. Outside a group it changes nothing (the socket
    /// hears every pipeline).
    pub incoming_lcore: Option<u16>,
}

/// Why a bind failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindError {
    /// Another socket holds the address and not both set SO_REUSEPORT.
    AddrInUse,
    /// The address is not one of ours (and not ANY).
    AddrNotAvailable,
    /// Port 0 asked and every ephemeral port is taken.
    NoFreePort,
    /// The table holds as many sockets as it can index (67 million).
    TableFull,
}

impl core::fmt::Display for BindError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            BindError::AddrInUse => "address already in use",
            BindError::AddrNotAvailable => "address not available (not one of ours)",
            BindError::NoFreePort => "no free ephemeral port",
            BindError::TableFull => "the socket table is full",
        })
    }
}

impl std::error::Error for BindError {}

/// The parts of a received IPv6 datagram that lookup looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowKey6 {
    /// Sender.
    pub src: SocketAddrV6,
    /// Destination (ours).
    pub dst: SocketAddrV6,
    /// The port (device) it arrived on.
    pub device: u16,
    /// The pipeline (lcore) it arrived on (for [`BindOptions::incoming_lcore`]).
    pub lcore: u16,
}

/// The parts of a received IPv4 datagram that lookup looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowKey {
    /// Sender.
    pub src: SocketAddrV4,
    /// Destination (ours).
    pub dst: SocketAddrV4,
    /// The port (device) it arrived on.
    pub device: u16,
    /// The pipeline (lcore) it arrived on (for [`BindOptions::incoming_lcore`]).
    pub lcore: u16,
}

/// No socket (end of a chain, empty port slot).
const NONE: u32 = ID_MASK;

/// Socket indexes take the low 25 bits of a port slot (33 million sockets).
const ID_MASK: u32 = (1 << 25) - 1;

/// Set in a port slot whose head is the only socket of the chain that hears
/// IPv6, hears it at ANY, and is plain: an IPv6 lookup's answer is the head.
const SOLE6: u32 = 1 << 25;

/// Where a [`SOLE`] slot keeps its socket's address: an index into
/// [`UdpTable::addresses`] plus one (0 is ANY), five bits.
const ADDRESS_SHIFT: u32 = 26;
const ADDRESS_MASK: u32 = 0x1f;

/// Set in a port slot whose chain has one socket that hears IPv4 (its head;
/// any others are IPv6-only) and that socket is unconnected, in no reuseport
/// group and bound to no device: an IPv4 lookup then only compares the
/// local address (what [`score`] would decide for it), skipping the walk.
/// The slot names that address by a 5-bit index into a short list, so the
/// shortcut reads one 4-byte slot and that list (always in cache): with
/// 10,000 ports in use the slots touched take 40 KB.
const SOLE: u32 = 1 << 31;

/// The first socket of a port slot (without the [`SOLE`] and [`SOLE6`]
/// marks).
#[inline]
fn head_of(slot: u32) -> u32 {
    slot & ID_MASK
}

/// An address with IPv4-mapped IPv6 turned into IPv4.
fn canonical(addr: SocketAddr) -> SocketAddr {
    match addr {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::V4(SocketAddrV4::new(v4, v6.port())),
            None => addr,
        },
        v4 => v4,
    }
}

#[derive(Debug, Clone)]
struct Socket {
    local: SocketAddr,
    remote: Option<SocketAddr>,
    options: BindOptions,
    group: Option<usize>,
}

/// What lookup reads of a socket (its whole match state and its chain
/// link), kept apart from the colder [`Socket`]. Addresses are keys
/// ([`key_of`]): IPv4 as IPv4-mapped, 0 for ANY.
#[derive(Debug, Clone, Copy)]
struct Hot {
    local: u128,
    remote: u128,
    local_port: u16,
    /// 0: any remote port (or not connected).
    remote_port: u16,
    /// [`ANY_DEVICE`] unless bound to a device.
    device: u32,
    connected: bool,
    /// An IPv6 socket that may hear IPv6 (else an IPv4 socket, or an IPv6
    /// one bound to the IPv4-mapped wildcard, which hears IPv4 only).
    v6: bool,
    v6_only: bool,
    /// Reuseport group index, or [`NONE`].
    group: u32,
    /// The next socket bound to the same port, or [`NONE`].
    next_on_port: u32,
}

/// What the reuseport step decided.
enum GroupPick {
    /// This member receives the datagram (the group has no connected
    /// members).
    Final(SocketId),
    /// This unconnected member stands in for the group; scoring goes on.
    StandIn(SocketId),
    /// The scored socket itself stays the best so far.
    Keep,
}

/// [`Hot::device`] of a socket not bound to a device.
const ANY_DEVICE: u32 = u32::MAX;

impl Hot {
    fn views(&self) -> Views {
        views(self.local, self.v6, self.v6_only)
    }
}

impl Probe {
    fn of_v4(key: &FlowKey) -> Probe {
        Probe {
            v4: true,
            src: key_of(IpAddr::V4(*key.src.ip())),
            dst: key_of(IpAddr::V4(*key.dst.ip())),
            src_port: key.src.port(),
            dst_port: key.dst.port(),
            device: u32::from(key.device),
            lcore: key.lcore,
        }
    }
}

impl Probe {
    fn of_v6(key: &FlowKey6) -> Probe {
        Probe {
            v4: false,
            src: key.src.ip().to_bits(),
            dst: key.dst.ip().to_bits(),
            src_port: key.src.port(),
            dst_port: key.dst.port(),
            device: u32::from(key.device),
            lcore: key.lcore,
        }
    }
}

/// A received datagram's addresses as lookup compares them (keys).
#[derive(Debug, Clone, Copy)]
struct Probe {
    /// An IPv4 datagram (else IPv6).
    v4: bool,
    src: u128,
    dst: u128,
    src_port: u16,
    dst_port: u16,
    device: u32,
    /// The pipeline it arrived on.
    lcore: u16,
}

/// The most sockets one datagram to a broadcast address or a group reaches
/// (the socket lookup picks and the first others that hear it, in the
/// port's chain order): each takes a buffer copy, so the work per packet
/// stays bounded however many sockets share the port. Linux has no bound;
/// the sockets left out are counted (`DropReason::UdpFanoutLimit`).
pub const BROADCAST_RECEIVERS: usize = 32;

/// Ephemeral ports, as Linux's default range.
pub const EPHEMERAL_PORTS: core::ops::RangeInclusive<u16> = 32768..=60999;

/// The table. See the module documentation.
#[derive(Debug, Clone)]
pub struct UdpTable {
    sockets: Vec<Option<Socket>>,
    /// Lookup's view of each socket (same index as `sockets`).
    hot: Vec<Hot>,
    /// What sending reads of each socket (same index).
    send: Vec<SendSlot>,
    free: Vec<u32>,
    /// First socket bound to each port.
    ports: Box<[u32; 1 << 16]>,
    /// The specific local addresses [`SOLE`] slots refer to (at most 31).
    addresses: Vec<u32>,
    groups: Vec<ReuseportGroup>,
    /// Groups whose last member left, for the next new group.
    free_groups: Vec<usize>,
    hash_key: u64,
    /// SipHash keys of the ephemeral port searches' starts, derived from
    /// `hash_key` (which never reaches the wire; ports do).
    port_key: [u64; 2],
    /// Port-0 binds so far: what each search's start is a hash of.
    port_draws: u64,
    bound: usize,
}

impl UdpTable {
    /// An empty table; `hash_key` keys the reuseport flow hash (make it
    /// random so peers cannot aim at one member).
    pub fn new(hash_key: u64) -> UdpTable {
        UdpTable {
            sockets: Vec::new(),
            hot: Vec::new(),
            send: Vec::new(),
            free: Vec::new(),
            addresses: Vec::new(),
            ports: vec![NONE; 1 << 16]
                .into_boxed_slice()
                .try_into()
                .unwrap_or_else(|_| unreachable!("65,536 entries")),
            groups: Vec::new(),
            free_groups: Vec::new(),
            hash_key,
            port_key: [sip(hash_key, 0, 1), sip(hash_key, 0, 2)],
            port_draws: 0,
            bound: 0,
        }
    }

    /// Binds a socket to `local` (port 0: an ephemeral port). `is_local`
    /// says whether an address is one of the host's.
    ///
    /// An IPv6 address binds an IPv6 socket (see [`Views`] for what it
    /// hears); an IPv4-mapped one must name an address of ours, and cannot
    /// be v6-only.
    pub fn bind(
        &mut self,
        local: impl Into<SocketAddr>,
        options: BindOptions,
        is_local: impl Fn(IpAddr) -> bool,
    ) -> Result<SocketId, BindError> {
        let mut local = local.into();
        let v6 = local.is_ipv6();
        let ip = canonical(local).ip();
        let mapped = v6 && ip.is_ipv4();
        if (!ip.is_unspecified() && !is_local(ip)) || (mapped && options.v6_only) {
            return Err(BindError::AddrNotAvailable);
        }
        if self.free.is_empty() && self.sockets.len() >= NONE as usize {
            return Err(BindError::TableFull);
        }
        let key = key_of(ip);
        // ::ffff:0.0.0.0 is an IPv6 socket's IPv4 wildcard (as in Linux):
        // it hears every IPv4 address and no IPv6, so the table holds it
        // as an IPv4 wildcard (for IPv4 traffic it then scores as an IPv4
        // socket, one point above Linux's, which only breaks a tie with an
        // IPv4 wildcard sharing its port by SO_REUSEPORT).
        let hears_v6 = v6 && !(mapped && ip.is_unspecified());
        let socket_views = views(key, hears_v6, options.v6_only);
        if local.port() == 0 {
            local.set_port(self.free_port(socket_views)?);
        }
        let group = self.join_group(local, socket_views, options)?;
        let socket = Socket {
            local,
            remote: None,
            options,
            group,
        };
        let hot = Hot {
            local: key,
            remote: 0,
            local_port: local.port(),
            remote_port: 0,
            device: options.device.map_or(ANY_DEVICE, u32::from),
            connected: false,
            v6: hears_v6,
            v6_only: hears_v6 && options.v6_only,
            group: group.map_or(NONE, |g| g as u32),
            next_on_port: NONE,
        };
        let v4 = socket_views.v4;
        // A socket bound to a group sends from the route's source.
        let send_from = v4
            .map(|k| k as u32)
            .filter(|&k| !Ipv4Addr::from(k).is_multicast());
        let send = SendSlot {
            local4: Ipv4Addr::from(send_from.unwrap_or(0)),
            port: local.port(),
            tos: options.tos,
            flags: LIVE | if v4.is_some() { SPEAKS_V4 } else { 0 },
            ..SendSlot::EMPTY
        };
        let id = match self.free.pop() {
            Some(slot) => {
                self.sockets[slot as usize] = Some(socket);
                self.hot[slot as usize] = hot;
                self.send[slot as usize] = send;
                SocketId(slot)
            }
            None => {
                self.sockets.push(Some(socket));
                self.hot.push(hot);
                self.send.push(send);
                SocketId((self.sockets.len() - 1) as u32)
            }
        };
        self.link(id);
        self.refresh(local.port());
        self.bound += 1;
        if let Some(g) = group {
            self.groups[g].join(id, options.incoming_lcore);
        }
        Ok(id)
    }

    /// Checks the conflict rules; returns the reuseport group to join.
    fn join_group(
        &mut self,
        local: SocketAddr,
        local_views: Views,
        options: BindOptions,
    ) -> Result<Option<usize>, BindError> {
        let mut group = None;
        for id in self.overlapping(local.port(), local_views) {
            let other = self.socket(id).expect("listed sockets exist");
            if !(options.reuse_port && other.options.reuse_port) {
                return Err(BindError::AddrInUse);
            }
            // A group shares address and device (as Linux's sk_bound_dev_if).
            if other.local == local
                && other.options.device == options.device
                && other.options.v6_only == options.v6_only
            {
                group = other.group;
            }
        }
        if options.reuse_port && group.is_none() {
            group = Some(match self.free_groups.pop() {
                Some(free) => free,
                None => {
                    self.groups.push(ReuseportGroup::default());
                    self.groups.len() - 1
                }
            });
        }
        Ok(group)
    }

    /// Adds a socket to its port's chain: IPv4 sockets in bind order, then
    /// IPv6 sockets in bind order (so reuseport members and equal scores
    /// resolve as they were bound within a family).
    /// ([`UdpTable::connect_from`] moves a socket it narrows to the head.)
    fn link(&mut self, id: SocketId) {
        let port = usize::from(self.hot[id.0 as usize].local_port);
        let is_v6 = self.hot[id.0 as usize].v6;
        // IPv4 sockets go before the first IPv6 one (as Linux puts IPv6
        // reuseport sockets at the tail), so for IPv4 traffic an IPv4 socket
        // is met, and wins, before a dual-stack group's early answer.
        let mut previous = NONE;
        let mut at = head_of(self.ports[port]);
        while let Some(hot) = self.hot.get(at as usize) {
            if !is_v6 && hot.v6 {
                break;
            }
            previous = at;
            at = hot.next_on_port;
        }
        self.hot[id.0 as usize].next_on_port = at;
        match self.hot.get_mut(previous as usize) {
            Some(hot) => hot.next_on_port = id.0,
            None => self.ports[port] = id.0,
        }
    }

    /// Marks `port`'s slot [`SOLE`] when its chain allows the shortcut, and
    /// clears the mark otherwise. After every change to the port's sockets.
    fn refresh(&mut self, port: u16) {
        let head = head_of(self.ports[usize::from(port)]);
        // The shortcut answers IPv4 lookups: the head must be the only
        // socket of the chain that hears IPv4 (IPv6-only sockets after it
        // never match IPv4), and plain.
        let others_hear_v4 = || {
            let mut at = self.hot.get(head as usize).map_or(NONE, |h| h.next_on_port);
            while let Some(h) = self.hot.get(at as usize) {
                if h.views().v4.is_some() {
                    return true;
                }
                at = h.next_on_port;
            }
            false
        };
        let plain = self
            .hot
            .get(head as usize)
            .filter(|h| !h.connected && h.group == NONE && h.device == ANY_DEVICE);
        let sole = plain.and_then(|h| (!others_hear_v4()).then(|| h.views().v4).flatten());
        let sole6 = plain.is_some_and(|h| h.views().v6 == Some(0) && !self.others_hear_v6(head));
        let address = sole.and_then(|key| match key as u32 {
            0 => Some(0),
            ip => match self.addresses.iter().position(|&a| a == ip) {
                Some(i) => Some(i as u32 + 1),
                None if self.addresses.len() < ADDRESS_MASK as usize => {
                    self.addresses.push(ip);
                    Some(self.addresses.len() as u32)
                }
                None => None, // no room: this port takes the walk
            },
        });
        let marks = if sole6 { SOLE6 } else { 0 };
        self.ports[usize::from(port)] = match address {
            Some(index) => head | marks | SOLE | index << ADDRESS_SHIFT,
            None => head | marks,
        };
    }

    /// True if a socket after `head` in its chain hears IPv6.
    fn others_hear_v6(&self, head: u32) -> bool {
        let mut at = self.hot.get(head as usize).map_or(NONE, |h| h.next_on_port);
        while let Some(h) = self.hot.get(at as usize) {
            if h.views().v6.is_some() {
                return true;
            }
            at = h.next_on_port;
        }
        false
    }

    /// Removes a socket from its port's chain.
    fn unlink(&mut self, id: SocketId, port: u16, next: u32) {
        let slot = &mut self.ports[usize::from(port)];
        let head = head_of(*slot);
        if head == id.0 {
            *slot = next;
            return;
        }
        let mut at = head;
        while let Some(hot) = self.hot.get_mut(at as usize) {
            if hot.next_on_port == id.0 {
                hot.next_on_port = next;
                return;
            }
            at = hot.next_on_port;
        }
    }

    /// The sockets bound to `port`, in bind order.
    fn chain(&self, port: u16) -> impl Iterator<Item = (SocketId, &Socket)> + '_ {
        let mut at = head_of(self.ports[usize::from(port)]);
        core::iter::from_fn(move || {
            let socket = self.sockets.get(at as usize)?.as_ref()?;
            let id = SocketId(at);
            at = self.hot[id.0 as usize].next_on_port;
            Some((id, socket))
        })
    }

    /// Sockets on `port` that hear some of the traffic `local_views` would.
    fn overlapping(&self, port: u16, local_views: Views) -> Vec<SocketId> {
        self.chain(port)
            .filter(|(id, _)| overlap(self.hot[id.0 as usize].views(), local_views))
            .map(|(id, _)| id)
            .collect()
    }

    /// A free ephemeral port for a port-0 bind: the search starts at a
    /// keyed hash of the count of such binds (RFC 6056's random start, as
    /// Linux draws one for each), so a peer that saw one port cannot tell
    /// the next, and goes up from there, wrapping around the range.
    fn free_port(&mut self, local_views: Views) -> Result<u16, BindError> {
        let (low, high) = (*EPHEMERAL_PORTS.start(), *EPHEMERAL_PORTS.end());
        let span = high - low + 1;
        self.port_draws = self.port_draws.wrapping_add(1);
        let hash = sip(self.port_key[0], self.port_key[1], self.port_draws);
        let start = (hash % u64::from(span)) as u16;
        for i in 0..span {
            let port = low + (start + i) % span;
            if self.overlapping(port, local_views).is_empty() {
                return Ok(port);
            }
        }
        Err(BindError::NoFreePort)
    }

    /// Connects `id` to `remote`: it then only receives from there, and wins
    /// over unconnected sockets of its reuseport group.
    /// A socket connects only to peers of a family it hears (as Linux): an
    /// IPv4 socket to IPv4 peers; an IPv6 one to IPv6 peers, or IPv4 ones
    /// given as IPv4-mapped addresses, except that one bound to a specific
    /// IPv6 address or v6-only hears no IPv4 (ENETUNREACH in Linux) and one
    /// bound to an IPv4-mapped address hears no IPv6 (EAFNOSUPPORT).
    pub fn connect(&mut self, id: SocketId, remote: impl Into<SocketAddr>) -> bool {
        let remote = remote.into();
        let Some(Some(socket)) = self.sockets.get_mut(id.0 as usize) else {
            return false;
        };
        let hot = &mut self.hot[id.0 as usize];
        let peer = canonical(remote);
        let hears = hot.views();
        let fits = match (socket.local.is_ipv6(), remote.is_ipv6(), peer.is_ipv4()) {
            (false, false, _) => true,
            (true, true, true) => hears.v4.is_some(),
            (true, true, false) => hears.v6.is_some(),
            _ => false,
        };
        if !fits {
            return false;
        }
        let was_connected = socket.remote.replace(remote).is_some();
        hot.remote = key_of(peer.ip());
        hot.remote_port = remote.port();
        hot.connected = true;
        let port = hot.local_port;
        if let (Some(g), false) = (socket.group, was_connected) {
            self.groups[g].member_connected(id);
        }
        self.refresh(port);
        true
    }

    /// [`UdpTable::connect`] for a socket that will speak from `source`, the
    /// address routing picks towards `remote`. A socket bound to ANY is then
    /// bound to `source`, as Linux's connect binds it to the route's source
    /// (`inet_rcv_saddr` and a rehash): it hears its peer only at that
    /// address, and a later bind conflicts with `source` only. A reuseport
    /// member so narrowed leaves its group (Linux's `udp_lib_rehash`
    /// detaches it), standing alone at its new address.
    pub fn connect_from(
        &mut self,
        id: SocketId,
        remote: impl Into<SocketAddr>,
        source: IpAddr,
    ) -> bool {
        if !self.connect(id, remote) {
            return false;
        }
        self.narrow(id, source.to_canonical());
        true
    }

    /// Binds a connected wildcard socket to `source` (see
    /// [`UdpTable::connect_from`]).
    fn narrow(&mut self, id: SocketId, source: IpAddr) {
        let at = id.0 as usize;
        let Some(socket) = self.sockets[at].as_mut() else {
            return;
        };
        if self.hot[at].local != 0 || source.is_unspecified() {
            return;
        }
        let port = socket.local.port();
        socket.local = match (socket.local, source) {
            (SocketAddr::V4(_), IpAddr::V4(s)) => SocketAddr::V4(SocketAddrV4::new(s, port)),
            (SocketAddr::V6(l), IpAddr::V4(s)) => SocketAddr::V6(SocketAddrV6::new(
                s.to_ipv6_mapped(),
                port,
                l.flowinfo(),
                l.scope_id(),
            )),
            (SocketAddr::V6(l), IpAddr::V6(s)) => {
                SocketAddr::V6(SocketAddrV6::new(s, port, l.flowinfo(), l.scope_id()))
            }
            (SocketAddr::V4(_), IpAddr::V6(_)) => return, // not a source it can use
        };
        if let Some(g) = socket.group.take() {
            // Connected just before, by `connect_from`.
            self.leave_group(g, id, true);
        }
        // To the head of its chain, where Linux's rehash puts it: a
        // reuseport group met earlier would answer at once (it has no
        // connected member now) and take the connected socket's flow.
        let next = self.hot[at].next_on_port;
        self.unlink(id, port, next);
        let hot = &mut self.hot[at];
        hot.next_on_port = head_of(self.ports[usize::from(port)]);
        self.ports[usize::from(port)] = id.0;
        hot.local = key_of(source);
        hot.group = NONE;
        let v4 = hot.views().v4;
        let send = &mut self.send[at];
        send.local4 = Ipv4Addr::from(v4.unwrap_or(0) as u32);
        if v4.is_none() {
            send.flags &= !SPEAKS_V4;
        }
        self.refresh(port);
    }

    /// Removes a socket. Returns false if it did not exist.
    pub fn close(&mut self, id: SocketId) -> bool {
        let Some(socket) = self.sockets.get(id.0 as usize).and_then(Option::as_ref) else {
            return false;
        };
        let (port, next) = (socket.local.port(), self.hot[id.0 as usize].next_on_port);
        self.unlink(id, port, next);
        self.refresh(port);
        let Some(socket) = self.sockets[id.0 as usize].take() else {
            return false;
        };
        self.send[id.0 as usize] = SendSlot::EMPTY;
        self.bound -= 1;
        if let Some(g) = socket.group {
            let connected = socket.remote.is_some();
            self.leave_group(g, id, connected);
        }
        self.free.push(id.0);
        true
    }

    /// Takes `id` out of group `g`; a group left empty is kept for reuse
    /// (sockets come and go for as long as a server runs).
    fn leave_group(&mut self, g: usize, id: SocketId, connected: bool) {
        let group = &mut self.groups[g];
        group.leave(id, connected);
        if group.is_empty() {
            *group = ReuseportGroup::default();
            self.free_groups.push(g);
        }
    }

    /// The address a socket is bound to, of its own family.
    pub fn local_socket_addr(&self, id: SocketId) -> Option<SocketAddr> {
        self.socket(id).map(|s| s.local)
    }

    /// The options a socket was bound with.
    pub fn options(&self, id: SocketId) -> Option<BindOptions> {
        self.socket(id).map(|s| s.options)
    }

    /// The peer a socket is connected to, if it is.
    pub fn remote_addr(&self, id: SocketId) -> Option<SocketAddr> {
        self.socket(id).and_then(|s| s.remote)
    }

    /// The IPv4 peer of a connected socket (IPv4-mapped peers of IPv6
    /// sockets included).
    pub fn peer_addr(&self, id: SocketId) -> Option<SocketAddrV4> {
        match canonical(self.socket(id)?.remote?) {
            SocketAddr::V4(v4) => Some(v4),
            SocketAddr::V6(_) => None,
        }
    }

    /// Number of bound sockets.
    pub fn len(&self) -> usize {
        self.bound
    }

    /// True if no socket is bound.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every bound socket: its id, its address and its peer if it is
    /// connected, in id order. Control path: for listings, not per packet.
    pub fn sockets(&self) -> impl Iterator<Item = (SocketId, SocketAddr, Option<SocketAddr>)> + '_ {
        (self.sockets.iter().enumerate()).filter_map(|(index, socket)| {
            let socket = socket.as_ref()?;
            Some((SocketId(index as u32), socket.local, socket.remote))
        })
    }

    fn socket(&self, id: SocketId) -> Option<&Socket> {
        self.sockets.get(id.0 as usize).and_then(Option::as_ref)
    }

    /// The socket that receives an IPv4 datagram with `key`, if any. Per
    /// packet, owning lcore only; no allocation.
    #[inline(always)]
    pub fn lookup(&self, key: &FlowKey) -> Option<SocketId> {
        let slot = self.ports[usize::from(key.dst.port())];
        if slot & SOLE != 0 {
            let hit = match (slot >> ADDRESS_SHIFT) & ADDRESS_MASK {
                0 => true,
                index => self.addresses.get(index as usize - 1) == Some(&key.dst.ip().to_bits()),
            };
            return hit.then_some(SocketId(head_of(slot)));
        }
        self.lookup_chain(&Probe::of_v4(key), head_of(slot))
    }

    /// The socket that receives an IPv6 datagram with `key`, if any.
    #[inline]
    pub fn lookup6(&self, key: &FlowKey6) -> Option<SocketId> {
        let slot = self.ports[usize::from(key.dst.port())];
        if slot & SOLE6 != 0 {
            return Some(SocketId(head_of(slot)));
        }
        let probe = Probe {
            v4: false,
            src: key.src.ip().to_bits(),
            dst: key.dst.ip().to_bits(),
            src_port: key.src.port(),
            dst_port: key.dst.port(),
            device: u32::from(key.device),
            lcore: key.lcore,
        };
        self.lookup_chain(&probe, head_of(slot))
    }

    /// Every socket that hears an IPv4 datagram with `key` sent to a
    /// broadcast address, in the port's chain order: each whose port,
    /// address (the destination, or ANY), peer if connected, device and
    /// family match, reuseport members one by one (Linux's
    /// `__udp4_lib_mcast_deliver`). Not per unicast packet.
    pub fn hearers(&self, key: &FlowKey) -> impl Iterator<Item = SocketId> + '_ {
        self.hearers_of(Probe::of_v4(key))
    }

    /// [`UdpTable::hearers`] for an IPv6 datagram sent to a group (Linux's
    /// `__udp6_lib_mcast_deliver`; every socket hears the groups its link
    /// joined, as with Linux's default `IPV6_MULTICAST_ALL`).
    pub fn hearers6(&self, key: &FlowKey6) -> impl Iterator<Item = SocketId> + '_ {
        self.hearers_of(Probe::of_v6(key))
    }

    /// The sockets of `probe`'s port that [`score`] lets receive it.
    fn hearers_of(&self, probe: Probe) -> impl Iterator<Item = SocketId> + '_ {
        let mut at = head_of(self.ports[usize::from(probe.dst_port)]);
        core::iter::from_fn(move || loop {
            let hot = self.hot.get(at as usize)?;
            let id = at;
            at = hot.next_on_port;
            if score(hot, &probe).is_some() {
                return Some(SocketId(id));
            }
        })
    }

    /// The general lookup: walks the port's chain, scoring each socket.
    #[inline(never)]
    fn lookup_chain(&self, probe: &Probe, head: u32) -> Option<SocketId> {
        // Pass 0: sockets bound to the destination address; pass 1, only if
        // pass 0 found nothing: sockets bound to ANY.
        for wildcard_pass in [false, true] {
            let (mut best_points, mut best) = (0, NONE);
            let mut at = head;
            while let Some(hot) = self.hot.get(at as usize) {
                let id = at;
                at = hot.next_on_port;
                if (hot.local == 0) != wildcard_pass {
                    continue;
                }
                let Some(points) = score(hot, probe) else {
                    continue;
                };
                if points <= best_points {
                    continue;
                }
                (best_points, best) = (points, id);
                if let Some(group) = self.groups.get(hot.group as usize) {
                    match self.pick_in_group(group, probe, hot.connected) {
                        // A group that answers at once must not take the
                        // flow of a socket connected to exactly this peer
                        // further on (another family's, or one narrowed by
                        // connect): Linux 6.13+ finds that one by its
                        // 4-tuple hash before any scoring.
                        GroupPick::Final(pick) => {
                            return Some(self.connected_to(probe, head).unwrap_or(pick))
                        }
                        GroupPick::StandIn(pick) => best = pick.0,
                        GroupPick::Keep => {}
                    }
                }
            }
            if best != NONE {
                return Some(SocketId(best));
            }
        }
        None
    }

    /// The socket of `head`'s chain connected to exactly `probe`'s source,
    /// at its destination address (what Linux's 4-tuple hash holds). Only
    /// asked when a reuseport group would answer, so kept out of line.
    #[inline(never)]
    fn connected_to(&self, probe: &Probe, head: u32) -> Option<SocketId> {
        let mut at = head;
        while let Some(hot) = self.hot.get(at as usize) {
            // An address equal to the destination (IPv4-mapped for IPv4)
            // also says the socket hears the datagram's family.
            if hot.connected
                && hot.local != 0
                && hot.local == probe.dst
                && hot.local_port == probe.dst_port
                && hot.remote == probe.src
                && hot.remote_port != 0
                && hot.remote_port == probe.src_port
                && (hot.device == ANY_DEVICE || hot.device == probe.device)
            {
                return Some(SocketId(at));
            }
            at = hot.next_on_port;
        }
        None
    }

    /// The reuseport step for a best-so-far socket in `group`. Kept out of
    /// line so the flow hash is computed only for grouped sockets (inlined,
    /// the compiler hoists it into every lookup).
    #[inline(never)]
    fn pick_in_group(&self, group: &ReuseportGroup, probe: &Probe, connected: bool) -> GroupPick {
        let hash = self.flow_hash(probe);
        if !group.has_connected() {
            return GroupPick::Final(group.select(hash, probe.lcore));
        }
        // Connected members present: an unconnected member chosen by hash
        // (or pinned to the arriving pipeline) stands in, and scoring goes
        // on so a connected socket that matches better still wins.
        if connected {
            return GroupPick::Keep;
        }
        let is_connected = |m| self.socket(m).is_none_or(|s| s.remote.is_some());
        (group.select_unconnected(hash, probe.lcore, is_connected))
            .map_or(GroupPick::Keep, GroupPick::StandIn)
    }

    /// A keyed hash of the 4-tuple (for reuseport selection).
    #[inline]
    fn flow_hash(&self, probe: &Probe) -> u32 {
        let fold = |k: u128| (k >> 64) as u64 ^ k as u64;
        let a = fold(probe.src).rotate_left(32) ^ fold(probe.dst);
        let b = u64::from(probe.src_port) << 16 | u64::from(probe.dst_port);
        let mut h = (a ^ self.hash_key).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h ^= h >> 29;
        h = (h ^ b ^ self.hash_key.rotate_left(32)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h ^= h >> 32;
        h as u32
    }
}

/// SipHash-2-4 of `value` under the keys `k0`, `k1` (control path: port-0
/// binds).
fn sip(k0: u64, k1: u64, value: u64) -> u64 {
    use core::hash::Hasher;
    #[allow(deprecated)]
    let mut hasher = std::hash::SipHasher::new_with_keys(k0, k1);
    hasher.write_u64(value);
    hasher.finish()
}

/// How well a socket matches a datagram: `None` if it cannot receive it,
/// else higher for more specific matches (as Linux's `compute_score`: an
/// IPv4 socket beats an IPv6 one for IPv4 traffic; exact local address,
/// connected remote address and port, bound device, 4 points each). One
/// call site per packet, [`UdpTable::lookup_chain`]; the broadcast
/// fan-out's walk ([`UdpTable::hearers`]) is the other.
#[inline(always)]
fn score(socket: &Hot, probe: &Probe) -> Option<u32> {
    if socket.local_port != probe.dst_port {
        return None;
    }
    let mut points = if probe.v4 {
        // IPv4 traffic: IPv4 sockets, and IPv6 ones that hear IPv4.
        if socket.v6 && (socket.v6_only || (socket.local != 0 && !is_mapped(socket.local))) {
            return None;
        }
        if socket.v6 {
            1
        } else {
            2
        }
    } else {
        // IPv6 traffic: IPv6 sockets not bound to an IPv4-mapped address.
        if !socket.v6 || is_mapped(socket.local) {
            return None;
        }
        2
    };
    if socket.local != 0 {
        if socket.local != probe.dst {
            return None;
        }
        points += 4;
    }
    if socket.connected {
        if socket.remote != probe.src {
            return None;
        }
        points += 4;
        if socket.remote_port != 0 {
            if socket.remote_port != probe.src_port {
                return None;
            }
            points += 4;
        }
    }
    if socket.device != ANY_DEVICE {
        if socket.device != probe.device {
            return None;
        }
        points += 4;
    }
    Some(points)
}

mod group;
use group::ReuseportGroup;

mod send;
pub use send::{CachedRoute, CachedSend, ForwardTemplate, RouteMemo};
use send::{SendSlot, LIVE, SPEAKS_V4};

#[cfg(test)]
mod tests;
