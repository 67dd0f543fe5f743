//! Control-path views of an [`Interface`] for consoles and monitoring:
//! snapshots of its addresses, routes, neighbours, sockets, TCP
//! connections and counters; addresses added and removed at run time; and
//! ICMP echo requests sent on behalf of a `ping` command (with
//! [`parse_echo_reply`] to recognise the answers on the receive side).
//!
//! Invariants: every view is a copy (plain structs, allocated: control
//! path only, never per packet) taken on the lcore that owns the interface;
//! an address change keeps the interface's derived state consistent (the
//! local-address set and broadcast classes, connected routes, IPv6 groups
//! and duplicate address detection), exactly as if the address had been in
//! the configuration from the start.
//!
//! Limits (what the owning modules do not expose yet): the route tables
//! cannot list themselves, so [`Interface::route_list`] lists the routes the
//! interface installs itself plus the prefixes the caller names; UDP
//! sockets and TCP connections are looked up by the ids the caller holds,
//! and [`Interface::tcp_table`] gives every connection's addresses without
//! its id.

use super::{add_on_link_route6, special_addresses, special_bit, Interface, Tentative, ALL_NODES};
use super::{ip_out, tx::Out, ConfigError, ConnId, SendError};
use crate::counters::{DropReason, Stat};
use crate::neighbor::NeighborState;
use crate::port::{Buf, MacAddr, Port};
use crate::route::{Ipv4Cidr, Ipv6Cidr, Route};
use crate::route6::Route6;
use crate::tcp::table::TableValue;
use crate::tcp::{ConnStats, State};
use crate::time::Instant;
use crate::udp::SocketId;
use crate::wire::ethernet::HEADER_LEN as ETH_LEN;
use crate::wire::icmpv4::{msg_type, Icmpv4Packet, HEADER_LEN as ICMP_LEN};
use crate::wire::icmpv6::{msg_type as msg_type6, Icmpv6Packet};
use crate::wire::ipv4::protocol;
use crate::wire::ipv6::{next_header, solicited_node};
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV6};

/// An address with its prefix length, of either family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prefix {
    /// IPv4.
    V4(Ipv4Cidr),
    /// IPv6.
    V6(Ipv6Cidr),
}

impl Prefix {
    /// The address.
    pub fn addr(self) -> IpAddr {
        match self {
            Prefix::V4(c) => IpAddr::V4(c.addr),
            Prefix::V6(c) => IpAddr::V6(c.addr),
        }
    }

    /// The prefix length.
    pub fn prefix_len(self) -> u8 {
        match self {
            Prefix::V4(c) => c.len,
            Prefix::V6(c) => c.len,
        }
    }

    /// The prefix with the host bits cleared (`10.0.0.0/24` for
    /// `10.0.0.1/24`).
    pub fn network(self) -> Prefix {
        match self {
            Prefix::V4(c) => Prefix::V4(Ipv4Cidr {
                addr: c.network(),
                len: c.len,
            }),
            Prefix::V6(c) => Prefix::V6(Ipv6Cidr {
                addr: Ipv6Addr::from_bits(c.addr.to_bits() & c.mask()),
                len: c.len,
            }),
        }
    }
}

impl core::fmt::Display for Prefix {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Prefix::V4(c) => c.fmt(f),
            Prefix::V6(c) => c.fmt(f),
        }
    }
}

impl core::str::FromStr for Prefix {
    type Err = String;

    /// `ADDR/LEN` of either family.
    fn from_str(s: &str) -> Result<Prefix, String> {
        if s.contains(':') {
            s.parse().map(Prefix::V6)
        } else {
            s.parse().map(Prefix::V4)
        }
    }
}

/// Where an address stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressState {
    /// In use.
    Preferred,
    /// IPv6, under duplicate address detection: not used yet.
    Tentative,
    /// IPv6, found in use by another node: never used.
    Duplicate,
}

/// One address of one link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressInfo {
    /// The link (port index).
    pub link: usize,
    /// The address and its prefix length.
    pub prefix: Prefix,
    /// Whether it is in use.
    pub state: AddressState,
}

/// One route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteInfo {
    /// The destination prefix (host bits clear).
    pub prefix: Prefix,
    /// The next hop, or `None` for an on-link prefix.
    pub gateway: Option<IpAddr>,
    /// The link packets leave through.
    pub link: usize,
    /// The source address packets taking it get.
    pub source: IpAddr,
    /// The prefix of one of the interface's own addresses (installed with
    /// it, removed with it).
    pub connected: bool,
}

/// One neighbour cache entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NeighborInfo {
    /// The link whose cache holds it.
    pub link: usize,
    /// Its address.
    pub ip: IpAddr,
    /// Its MAC, once resolved.
    pub mac: Option<MacAddr>,
    /// Its state.
    pub state: NeighborState,
}

/// A UDP socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpSocketInfo {
    /// Its id.
    pub id: SocketId,
    /// The address it is bound to.
    pub local: SocketAddr,
    /// The peer it is connected to, if it is.
    pub remote: Option<SocketAddr>,
    /// True for a queue-mode socket (application threads read it); inline
    /// sockets hand datagrams to the handler at once and queue nothing.
    pub queue_mode: bool,
}

/// A TCP connection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TcpConnInfo {
    /// Our address and port.
    pub local: SocketAddr,
    /// The peer's.
    pub remote: SocketAddr,
    /// Its state.
    pub state: State,
    /// Bytes in the send buffer (not yet sent or not yet acknowledged).
    pub send_queued: usize,
    /// Bytes received and not yet read.
    pub recv_queued: usize,
    /// Retransmissions, congestion window, RTT, MSS.
    pub stats: ConnStats,
}

/// An entry of the TCP connection table (every connection, id unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpTableEntry {
    /// Our address and port.
    pub local: SocketAddr,
    /// The peer's.
    pub remote: SocketAddr,
    /// The connection lingers in TIME-WAIT.
    pub time_wait: bool,
}

/// Every counter's value at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterSnapshot {
    /// Protocol counters, in declaration order.
    pub stats: Vec<(Stat, u64)>,
    /// Drops by reason, in declaration order.
    pub drops: Vec<(DropReason, u64)>,
}

/// An ICMP or ICMPv6 echo reply seen on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EchoReply {
    /// Who answered.
    pub src: IpAddr,
    /// The identifier of the request it answers.
    pub ident: u16,
    /// Its sequence number.
    pub seq: u16,
    /// The TTL (hop limit) it arrived with.
    pub ttl: u8,
    /// Bytes of ICMP message (header and data), as `ping` counts them.
    pub len: usize,
}

/// The echo reply in Ethernet `frame`, if it carries one (an IPv4 packet
/// without options fragments, or an IPv6 packet without extension headers).
/// Checksums are not verified: this only recognises answers.
pub fn parse_echo_reply(frame: &[u8]) -> Option<EchoReply> {
    let ip = frame.get(ETH_LEN..)?;
    match u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]) {
        0x0800 => {
            let header = usize::from(ip.first()? & 0x0f) * 4;
            let total = usize::from(u16::from_be_bytes([*ip.get(2)?, *ip.get(3)?]));
            let fragment = u16::from_be_bytes([*ip.get(6)?, *ip.get(7)?]) & 0x3fff;
            if ip[0] >> 4 != 4 || header < 20 || *ip.get(9)? != protocol::ICMP || fragment != 0 {
                return None;
            }
            let icmp = Icmpv4Packet::new_checked(ip.get(header..total)?).ok()?;
            (icmp.msg_type() == msg_type::ECHO_REPLY).then(|| EchoReply {
                src: IpAddr::V4(Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15])),
                ident: icmp.echo_ident(),
                seq: icmp.echo_seq(),
                ttl: ip[8],
                len: total - header,
            })
        }
        0x86dd => {
            let len = usize::from(u16::from_be_bytes([*ip.get(4)?, *ip.get(5)?]));
            if *ip.get(6)? != next_header::ICMPV6 {
                return None;
            }
            let icmp = Icmpv6Packet::new_checked(ip.get(40..40 + len)?).ok()?;
            let src: [u8; 16] = ip.get(8..24)?.try_into().ok()?;
            (icmp.msg_type() == msg_type6::ECHO_REPLY).then(|| EchoReply {
                src: IpAddr::V6(Ipv6Addr::from(src)),
                ident: icmp.echo_ident(),
                seq: icmp.echo_seq(),
                ttl: ip[7],
                len,
            })
        }
        _ => None,
    }
}

impl<B: Buf> Interface<B> {
    /// Every address of every link, IPv4 first, with its state.
    pub fn ip_addresses(&self) -> Vec<AddressInfo> {
        let mut all = Vec::new();
        for (link, l) in self.core.links.iter().enumerate() {
            let v4 = l
                .addresses
                .iter()
                .map(|&c| (Prefix::V4(c), AddressState::Preferred));
            let v6 = l.addresses6.iter().map(|&c| (c, AddressState::Preferred));
            let tentative = l
                .tentative6
                .iter()
                .map(|t| (t.cidr, AddressState::Tentative));
            let duplicate = l.duplicates6.iter().map(|&c| (c, AddressState::Duplicate));
            let v6 = v6
                .chain(tentative)
                .chain(duplicate)
                .map(|(c, state)| (Prefix::V6(c), state));
            all.extend(v4.chain(v6).map(|(prefix, state)| AddressInfo {
                link,
                prefix,
                state,
            }));
        }
        all
    }

    /// Adds an address to `link`, with its connected (IPv4) or on-link
    /// (IPv6, once duplicate address detection passed) route. IPv4
    /// addresses are announced with gratuitous ARP on the next poll.
    pub fn add_address(&mut self, link: usize, prefix: Prefix) -> Result<(), ConfigError> {
        let core = &mut self.core;
        let l = core.links.get(link).ok_or(ConfigError::NoSuchLink(link))?;
        match prefix {
            Prefix::V4(cidr) => {
                if core.local.contains(&cidr.addr) {
                    return Err(ConfigError::DuplicateAddress(cidr.addr));
                }
                core.links[link].addresses.push(cidr);
                core.config.links[link].addresses.push(cidr);
                refresh_local(core);
                core.routes.add(Route {
                    prefix: cidr,
                    gateway: None,
                    port: link as u16,
                    source: cidr.addr,
                });
                self.announced = false;
            }
            Prefix::V6(cidr) => {
                let ip = cidr.addr;
                let bad = ip.is_multicast()
                    || ip.is_unspecified()
                    || ip.is_loopback()
                    || ip.to_ipv4_mapped().is_some();
                if !l.ipv6 || bad {
                    return Err(ConfigError::BadAddress6(ip));
                }
                let taken = |k: &super::Link<B>| {
                    k.has_address6(ip)
                        || k.is_tentative6(ip)
                        || k.duplicates6.iter().any(|d| d.addr == ip)
                };
                if core.links.iter().any(taken) {
                    return Err(ConfigError::DuplicateAddress6(ip));
                }
                core.config.links[link].addresses6.push(cidr);
                let group = solicited_node(ip);
                let l = &mut core.links[link];
                if !l.groups6.contains(&group) {
                    l.groups6.push(group);
                }
                let dad = core.config.dad_transmits;
                if dad > 0 {
                    l.tentative6.push(Tentative {
                        cidr,
                        probes_left: dad,
                        deadline: None,
                    });
                } else {
                    l.addresses6.push(cidr);
                    add_on_link_route6(core, link, cidr);
                }
            }
        }
        Ok(())
    }

    /// Removes address `ip` from `link` (any link if `None`), with the
    /// connected route of its prefix unless another address still has that
    /// prefix. Returns the prefix removed, or `None` if no link had it.
    pub fn remove_address(&mut self, link: Option<usize>, ip: IpAddr) -> Option<Prefix> {
        let core = &mut self.core;
        let on = |l: &usize| link.is_none_or(|given| given == *l);
        let link = (0..core.links.len()).filter(on).find(|&l| {
            let k = &core.links[l];
            match ip {
                IpAddr::V4(v4) => k.addresses.iter().any(|a| a.addr == v4),
                IpAddr::V6(v6) => {
                    k.has_address6(v6)
                        || k.is_tentative6(v6)
                        || k.duplicates6.iter().any(|d| d.addr == v6)
                }
            }
        })?;
        match ip {
            IpAddr::V4(v4) => {
                let l = &mut core.links[link];
                let at = l.addresses.iter().position(|a| a.addr == v4)?;
                let cidr = l.addresses.remove(at);
                core.config.links[link].addresses.retain(|a| a.addr != v4);
                refresh_local(core);
                let network = Ipv4Cidr {
                    addr: cidr.network(),
                    len: cidr.len,
                };
                let other = core.links.iter().enumerate().find_map(|(i, k)| {
                    let same = |a: &&Ipv4Cidr| a.len == cidr.len && a.network() == network.addr;
                    k.addresses.iter().find(same).map(|a| (i, *a))
                });
                let connected = core.routes.lookup(network.addr).is_some_and(|r| {
                    r.gateway.is_none() && r.prefix.len == cidr.len && r.source == v4
                });
                if connected {
                    core.routes.remove(network);
                    if let Some((i, a)) = other {
                        core.routes.add(Route {
                            prefix: a,
                            gateway: None,
                            port: i as u16,
                            source: a.addr,
                        });
                    }
                }
                Some(Prefix::V4(cidr))
            }
            IpAddr::V6(v6) => {
                let l = &mut core.links[link];
                let mut removed = None;
                let mut take = |list: &mut Vec<Ipv6Cidr>| {
                    if let Some(at) = list.iter().position(|a| a.addr == v6) {
                        removed = Some(list.remove(at));
                    }
                };
                take(&mut l.addresses6);
                take(&mut l.duplicates6);
                if let Some(at) = l.tentative6.iter().position(|t| t.cidr.addr == v6) {
                    removed = Some(l.tentative6.remove(at).cidr);
                }
                let cidr = removed?;
                core.config.links[link].addresses6.retain(|a| a.addr != v6);
                let group = solicited_node(v6);
                let still = |a: &Ipv6Cidr| solicited_node(a.addr) == group;
                let l = &mut core.links[link];
                let in_use =
                    l.addresses6.iter().any(still) || l.tentative6.iter().any(|t| still(&t.cidr));
                if !in_use && group != ALL_NODES {
                    l.groups6.retain(|&g| g != group);
                }
                let Prefix::V6(network) = Prefix::V6(cidr).network() else {
                    return Some(Prefix::V6(cidr));
                };
                let shared = core.links.iter().any(|k| {
                    k.addresses6.iter().any(|a| {
                        a.len == cidr.len && Prefix::V6(*a).network() == Prefix::V6(network)
                    })
                });
                let on_link = core
                    .routes6
                    .get(network)
                    .is_some_and(|r| r.gateway.is_none());
                if on_link && !shared {
                    core.routes6.remove(network);
                }
                Some(Prefix::V6(cidr))
            }
        }
    }

    /// Adds (or replaces) an IPv6 route that sends `prefix` straight out of
    /// `link` (its hosts answer Neighbor Discovery there).
    pub fn add_link_route6(&mut self, prefix: Ipv6Cidr, link: usize) -> Result<(), ConfigError> {
        let l = self
            .core
            .links
            .get(link)
            .filter(|l| l.ipv6)
            .ok_or(ConfigError::NoSuchLink(link))?;
        let source = l
            .route_source6()
            .ok_or(ConfigError::BadAddress6(prefix.addr))?;
        self.core.routes6.add(Route6 {
            prefix,
            gateway: None,
            port: link as u16,
            source,
        });
        Ok(())
    }

    /// The routes: the connected prefixes of the interface's addresses,
    /// the default routes (static or advertised), and the prefixes in
    /// `also` (routes the caller added), each listed if the table holds it;
    /// IPv4 first, defaults first.
    pub fn route_list(&self, also: &[Prefix]) -> Vec<RouteInfo> {
        let core = &self.core;
        let mut candidates: Vec<(Prefix, bool)> = vec![
            (Prefix::V4(Ipv4Cidr::DEFAULT), false),
            (Prefix::V6(Ipv6Cidr::DEFAULT), false),
        ];
        for l in &core.links {
            candidates.extend(l.addresses.iter().map(|&a| (Prefix::V4(a).network(), true)));
            let global = l
                .addresses6
                .iter()
                .filter(|a| !a.addr.is_unicast_link_local());
            candidates.extend(global.map(|&a| (Prefix::V6(a).network(), true)));
        }
        candidates.extend(also.iter().map(|p| (p.network(), false)));
        let mut routes: Vec<RouteInfo> = Vec::new();
        for (prefix, connected) in candidates {
            if routes.iter().any(|r| r.prefix == prefix) {
                continue;
            }
            let found = match prefix {
                Prefix::V4(cidr) => route4_exact(&core.routes, cidr).map(|r| RouteInfo {
                    prefix,
                    gateway: r.gateway.map(IpAddr::V4),
                    link: usize::from(r.port),
                    source: IpAddr::V4(r.source),
                    connected: connected && r.gateway.is_none(),
                }),
                Prefix::V6(cidr) => core.routes6.get(cidr).map(|r| RouteInfo {
                    prefix,
                    gateway: r.gateway.map(IpAddr::V6),
                    link: usize::from(r.port),
                    source: IpAddr::V6(r.source),
                    connected: connected && r.gateway.is_none(),
                }),
            };
            routes.extend(found);
        }
        routes.sort_by_key(|r| (r.prefix.addr().is_ipv6(), r.prefix.prefix_len() != 0));
        routes
    }

    /// Every neighbour cache entry, IPv4 then IPv6, by link.
    pub fn neighbor_list(&self) -> Vec<NeighborInfo> {
        let v4 = self
            .neighbors()
            .into_iter()
            .map(|(link, ip, mac, state)| NeighborInfo {
                link,
                ip: IpAddr::V4(ip),
                mac,
                state,
            });
        let v6 = self
            .neighbors6()
            .into_iter()
            .map(|(link, ip, mac, state)| NeighborInfo {
                link,
                ip: IpAddr::V6(ip),
                mac,
                state,
            });
        v4.chain(v6).collect()
    }

    /// UDP socket `id`, while it is bound.
    pub fn udp_socket_info(&self, id: SocketId) -> Option<UdpSocketInfo> {
        let udp = &self.core.udp;
        Some(UdpSocketInfo {
            id,
            local: udp.local_socket_addr(id)?,
            remote: udp.remote_addr(id),
            queue_mode: matches!(self.queues.get(id.index() as usize), Some(Some(_))),
        })
    }

    /// TCP connection `id`, while it exists (TIME-WAIT included).
    pub fn tcp_conn_info(&self, id: ConnId) -> Option<TcpConnInfo> {
        let tcp = &self.core.tcp;
        let (conn, tuple) = (tcp.peek(id)?, tcp.tuple(id)?);
        Some(TcpConnInfo {
            local: tuple.local,
            remote: tuple.remote,
            state: conn.state(),
            send_queued: tcp.config.send_buffer.saturating_sub(conn.send_room()),
            recv_queued: conn.recv_ready(),
            stats: conn.stats(),
        })
    }

    /// Every entry of the TCP connection table (handshakes in progress and
    /// TIME-WAIT included).
    pub fn tcp_table(&self) -> Vec<TcpTableEntry> {
        let mut all: Vec<TcpTableEntry> = (self.core.tcp.table.entries().into_iter())
            .map(|(tuple, value)| TcpTableEntry {
                local: tuple.local,
                remote: tuple.remote,
                time_wait: value.in_time_wait(),
            })
            .collect();
        all.sort_by_key(|e| (e.local, e.remote));
        all
    }

    /// Every counter, zero or not.
    pub fn counter_snapshot(&self) -> CounterSnapshot {
        let c = &self.core.counters;
        CounterSnapshot {
            stats: Stat::ALL.iter().map(|&s| (s, c.get(s))).collect(),
            drops: DropReason::ALL.iter().map(|&r| (r, c.dropped(r))).collect(),
        }
    }

    /// Sends an ICMP (or ICMPv6) echo request to `dst` with `ident`, `seq`
    /// and `data` as its payload, from the address the route to `dst`
    /// names, through `ports` (in link order). It waits in the neighbour's
    /// queue while the next hop is being resolved.
    pub fn send_echo_request<P: Port<Buf = B>>(
        &mut self,
        ports: &mut [P],
        now: Instant,
        dst: IpAddr,
        (ident, seq): (u16, u16),
        data: &[u8],
    ) -> Result<(), SendError> {
        let links = ports.len().min(self.batches.len());
        let core = &mut self.core;
        let mut out = Out::new(&mut ports[..links], &mut self.batches[..links]);
        let sent = match dst {
            IpAddr::V4(dst) => {
                let Some(hop) = core.routes.next_hop(dst) else {
                    core.counters.count_drop(DropReason::TxNoRoute);
                    return Err(SendError::NoRoute);
                };
                let buf = echo_buffer(&mut out, usize::from(hop.port), (ident, seq), data, None)?;
                let ends = (hop.source, dst);
                ip_out::send_ipv4(core, &mut out, now, ends, protocol::ICMP, buf).map(|_| ())
            }
            IpAddr::V6(dst) => {
                let target = SocketAddrV6::new(dst, 0, 0, 0);
                let Some(path) = super::tx6::path6(core, Ipv6Addr::UNSPECIFIED, &target) else {
                    core.counters.count_drop(DropReason::TxNoRoute);
                    return Err(SendError::NoRoute);
                };
                let ends = Some((path.source, dst));
                let buf = echo_buffer(&mut out, path.link, (ident, seq), data, ends)?;
                let ends = (path.source, dst, 0);
                ip_out::send_ipv6(core, &mut out, now, ends, next_header::ICMPV6, buf).map(|_| ())
            }
        };
        out.flush(&core.counters);
        sent
    }
}

/// Recomputes the local-address set and the address classes after the
/// IPv4 addresses changed.
fn refresh_local<B: Buf>(core: &mut super::Core<B>) {
    core.local = (core.links.iter())
        .flat_map(|l| l.addresses.iter().map(|a| a.addr))
        .collect();
    core.special = special_addresses(&core.config.links);
    core.special_filter = (core.special.iter()).fold(0, |bits, &(ip, _)| bits | special_bit(ip));
}

/// The route for exactly `cidr`, found by looking up its first and last
/// address (a more specific route covering both hides it).
fn route4_exact(table: &crate::route::RouteTable, cidr: Ipv4Cidr) -> Option<Route> {
    let network = cidr.network();
    [network, cidr.broadcast()]
        .into_iter()
        .filter_map(|ip| table.lookup(ip))
        .find(|r| r.prefix.len == cidr.len && r.prefix.network() == network)
        .copied()
}

/// A buffer from `link`'s pool holding an echo request (ICMPv6 when `v6`
/// gives the addresses its checksum covers).
fn echo_buffer<P: Port>(
    out: &mut Out<'_, P>,
    link: usize,
    (ident, seq): (u16, u16),
    data: &[u8],
    v6: Option<(Ipv6Addr, Ipv6Addr)>,
) -> Result<P::Buf, SendError> {
    let mut buf = out.alloc(link).ok_or(SendError::NoBuffer)?;
    let message = buf
        .append(ICMP_LEN + data.len())
        .ok_or(SendError::NoBuffer)?;
    message[ICMP_LEN..].copy_from_slice(data);
    match v6 {
        None => {
            let mut icmp = Icmpv4Packet::new_unchecked(message);
            icmp.set_type_code(msg_type::ECHO_REQUEST, 0);
            icmp.set_rest(ident, seq);
            icmp.fill_checksum();
        }
        Some((src, dst)) => {
            let mut icmp = Icmpv6Packet::new_unchecked(message);
            icmp.set_type_code(msg_type6::ECHO_REQUEST, 0);
            let (i, s) = (ident.to_be_bytes(), seq.to_be_bytes());
            icmp.set_body_word([i[0], i[1], s[0], s[1]]);
            icmp.fill_checksum(src, dst);
        }
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iface::{DropDatagrams, InterfaceConfig};
    use crate::port::memory::{MemBuf, MemPort, MemPortConfig};

    const MAC_A: MacAddr = MacAddr([2, 0, 0, 0, 0, 0xa]);
    const MAC_B: MacAddr = MacAddr([2, 0, 0, 0, 0, 0xb]);

    fn v4(s: &str) -> Prefix {
        s.parse().expect("a prefix")
    }

    /// Two interfaces whose ports are wired to each other.
    struct Pair {
        a: Interface<MemBuf>,
        b: Interface<MemBuf>,
        pa: MemPort,
        pb: MemPort,
        now: Instant,
    }

    impl Pair {
        fn new() -> Pair {
            let node = |mac, ip: &str| {
                let Prefix::V4(cidr) = v4(ip) else {
                    unreachable!()
                };
                let mut config = InterfaceConfig::new(mac, cidr);
                config.dad_transmits = 0;
                let port = MemPort::new(MemPortConfig {
                    mac,
                    ..MemPortConfig::default()
                });
                (Interface::new(config).expect("valid"), port)
            };
            let (a, pa) = node(MAC_A, "10.9.0.1/24");
            let (b, pb) = node(MAC_B, "10.9.0.2/24");
            Pair {
                a,
                b,
                pa,
                pb,
                now: Instant::ZERO,
            }
        }

        /// Polls both sides until the wire is quiet; returns the echo
        /// replies A received.
        fn settle(&mut self) -> Vec<EchoReply> {
            let mut replies = Vec::new();
            for _ in 0..6 {
                self.now = self.now + crate::time::Duration::from_millis(1);
                self.pa.deliver_to(&mut self.pb);
                self.b.poll(&mut self.pb, self.now, &mut DropDatagrams);
                self.pb.deliver_to(&mut self.pa);
                let frames = self.pa.take_rx_frames();
                replies.extend(frames.iter().filter_map(|f| parse_echo_reply(f)));
                for f in &frames {
                    self.pa.push_rx(f);
                }
                self.a.poll(&mut self.pa, self.now, &mut DropDatagrams);
            }
            replies
        }

        fn ping(&mut self, dst: &str, seq: u16) -> Result<Vec<EchoReply>, SendError> {
            let dst: IpAddr = dst.parse().expect("an address");
            let ports = core::slice::from_mut(&mut self.pa);
            self.a
                .send_echo_request(ports, self.now, dst, (0x77, seq), &[0x5a; 56])?;
            Ok(self.settle())
        }
    }

    trait TakeRx {
        fn take_rx_frames(&mut self) -> Vec<Vec<u8>>;
    }

    impl TakeRx for MemPort {
        /// Everything waiting on the receive side, as bytes.
        fn take_rx_frames(&mut self) -> Vec<Vec<u8>> {
            let mut burst: arrayvec::ArrayVec<MemBuf, 64> = arrayvec::ArrayVec::new();
            self.rx_burst(&mut burst, 64);
            burst.iter().map(|b| b.data().to_vec()).collect()
        }
    }

    #[test]
    fn an_echo_request_resolves_the_peer_and_its_reply_is_recognised() {
        let mut p = Pair::new();
        p.settle();
        let replies = p.ping("10.9.0.2", 1).expect("sent");
        let expected = EchoReply {
            src: "10.9.0.2".parse().expect("ip"),
            ident: 0x77,
            seq: 1,
            ttl: 64,
            len: 64,
        };
        assert_eq!(replies, [expected], "one reply, after ARP resolved B");
        assert_eq!(
            p.b.counter_snapshot().stats[Stat::IcmpInEchos as usize].1,
            1
        );
        let neighbors = p.a.neighbor_list();
        assert_eq!(neighbors.len(), 1);
        assert_eq!(
            (neighbors[0].ip, neighbors[0].mac),
            ("10.9.0.2".parse().expect("ip"), Some(MAC_B))
        );
        assert_eq!(
            p.ping("10.8.0.9", 2).expect_err("no route"),
            SendError::NoRoute
        );
    }

    #[test]
    fn added_addresses_are_answered_and_removed_ones_are_not() {
        let mut p = Pair::new();
        p.settle();
        p.b.add_address(0, v4("10.9.0.3/24")).expect("added");
        assert_eq!(
            p.b.add_address(0, v4("10.9.0.3/24")),
            Err(ConfigError::DuplicateAddress(
                "10.9.0.3".parse().expect("ip")
            ))
        );
        assert_eq!(p.ping("10.9.0.3", 1).expect("sent").len(), 1);
        let listed: Vec<Prefix> = p.b.ip_addresses().iter().map(|a| a.prefix).collect();
        assert!(listed.contains(&v4("10.9.0.3/24")), "{listed:?}");
        let removed = p.b.remove_address(None, "10.9.0.3".parse().expect("ip"));
        assert_eq!(removed, Some(v4("10.9.0.3/24")));
        assert!(p.ping("10.9.0.3", 2).expect("queued").is_empty());
        assert_eq!(
            p.ping("10.9.0.2", 3).expect("sent").len(),
            1,
            "still answers"
        );
        let routes = p.b.route_list(&[]);
        assert_eq!(routes.len(), 1, "the shared /24 route stays: {routes:?}");
        assert_eq!(routes[0].source, "10.9.0.2".parse::<IpAddr>().expect("ip"));
    }

    #[test]
    fn a_new_network_gets_a_connected_route_that_leaves_with_its_address() {
        let mut p = Pair::new();
        p.a.add_address(0, v4("192.0.2.1/28")).expect("added");
        p.a.add_route(
            "198.51.100.0/24".parse().expect("cidr"),
            "10.9.0.2".parse().expect("ip"),
        )
        .expect("route");
        let routes =
            p.a.route_list(&[v4("198.51.100.0/24"), v4("203.0.113.0/24")]);
        let shown: Vec<String> = routes
            .iter()
            .map(|r| format!("{} {:?} {} {}", r.prefix, r.gateway, r.source, r.connected))
            .collect();
        assert_eq!(
            shown,
            [
                "10.9.0.0/24 None 10.9.0.1 true",
                "192.0.2.0/28 None 192.0.2.1 true",
                "198.51.100.0/24 Some(10.9.0.2) 10.9.0.1 false",
            ]
        );
        p.a.remove_address(Some(0), "192.0.2.1".parse().expect("ip"));
        assert_eq!(p.a.route_list(&[]).len(), 1, "its connected route left too");
    }

    #[test]
    fn ipv6_addresses_go_through_dad_and_join_their_group() {
        let mut p = Pair::new();
        p.a.core.config.dad_transmits = 1;
        let ip: Ipv6Addr = "2001:db8::1".parse().expect("ip");
        p.a.add_address(0, "2001:db8::1/64".parse().expect("prefix"))
            .expect("added");
        let state = |iface: &Interface<MemBuf>| {
            iface
                .ip_addresses()
                .into_iter()
                .find(|a| a.prefix.addr() == IpAddr::V6(ip))
                .map(|a| a.state)
        };
        assert_eq!(state(&p.a), Some(AddressState::Tentative));
        assert!(p.a.core.links[0].joined(solicited_node(ip)));
        for _ in 0..3 {
            p.now = p.now + crate::time::Duration::from_millis(600);
            p.settle();
        }
        assert_eq!(state(&p.a), Some(AddressState::Preferred));
        let routes = p.a.route_list(&[]);
        assert!(
            routes
                .iter()
                .any(|r| r.prefix == "2001:db8::/64".parse().expect("p")),
            "{routes:?}"
        );
        assert!(p.a.remove_address(Some(0), IpAddr::V6(ip)).is_some());
        assert_eq!(state(&p.a), None);
        assert!(!p.a.core.links[0].joined(solicited_node(ip)));
        assert!(p
            .a
            .route_list(&[])
            .iter()
            .all(|r| r.prefix.addr().is_ipv4()));
        assert_eq!(
            p.a.add_address(0, "ff02::1/64".parse().expect("prefix")),
            Err(ConfigError::BadAddress6("ff02::1".parse().expect("ip")))
        );
    }

    #[test]
    fn echo_replies_are_parsed_from_frames_and_nothing_else_is() {
        let mut icmp = [0u8; 12];
        let mut packet = Icmpv4Packet::new_unchecked(&mut icmp[..]);
        packet.set_type_code(msg_type::ECHO_REPLY, 0);
        packet.set_rest(9, 4);
        let mut frame = vec![0u8; 14 + 20];
        frame[12..14].copy_from_slice(&[0x08, 0x00]);
        frame[14] = 0x45;
        frame[16..18].copy_from_slice(&32u16.to_be_bytes());
        frame[22] = 61;
        frame[23] = protocol::ICMP;
        frame[26..30].copy_from_slice(&[192, 0, 2, 7]);
        frame.extend_from_slice(&icmp);
        let reply = parse_echo_reply(&frame).expect("a reply");
        assert_eq!(
            (reply.ident, reply.seq, reply.ttl, reply.len),
            (9, 4, 61, 12)
        );
        assert_eq!(reply.src, "192.0.2.7".parse::<IpAddr>().expect("ip"));
        frame[34] = msg_type::ECHO_REQUEST;
        assert_eq!(parse_echo_reply(&frame), None, "a request is not a reply");
        assert_eq!(parse_echo_reply(&frame[..30]), None, "truncated");
        assert_eq!(parse_echo_reply(&[]), None);
    }
}
