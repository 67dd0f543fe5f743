//! The UDP socket table, with Linux's lookup semantics.
//!
//! Lookup goes from most to least specific, as `__udp4_lib_lookup`: the
//! sockets bound to (destination address, port), and only if none matches,
//! those bound to (ANY, port). Each candidate is scored by [`score`], which
//! has exactly one call site ([`UdpTable::lookup`]) so it stays inlined (seed
//! 000: a second call site cost 7-12 %). When the best candidate belongs to an
//! SO_REUSEPORT group, a keyed hash of the 4-tuple picks the member, unless
//! the group holds connected sockets: then scoring goes on, so the connected
//! socket wins (the case seed 000's kernel fix keeps).
//!
//! Cost per lookup: at most two hash probes plus the sockets sharing one
//! (address, port), independent of how many sockets exist.
//!
//! Owned by one lcore; binds and closes are control-path calls.

use core::net::{Ipv4Addr, SocketAddrV4};
use std::collections::HashMap;

/// A socket's handle in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SocketId(u32);

impl SocketId {
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
}

impl core::fmt::Display for BindError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            BindError::AddrInUse => "address already in use",
            BindError::AddrNotAvailable => "address not available (not one of ours)",
            BindError::NoFreePort => "no free ephemeral port",
        })
    }
}

impl std::error::Error for BindError {}

/// The parts of a received datagram that lookup looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowKey {
    /// Sender.
    pub src: SocketAddrV4,
    /// Destination (ours).
    pub dst: SocketAddrV4,
    /// The port (device) it arrived on.
    pub device: u16,
}

#[derive(Debug, Clone)]
struct Socket {
    local: SocketAddrV4,
    remote: Option<SocketAddrV4>,
    options: BindOptions,
    group: Option<usize>,
}

#[derive(Debug, Clone, Default)]
struct ReuseportGroup {
    members: Vec<SocketId>,
    connected: usize,
}

impl ReuseportGroup {
    /// Picks a member by flow hash.
    #[inline]
    fn select(&self, hash: u32) -> SocketId {
        // Multiply-shift maps the hash onto 0..len without a division.
        let index = (u64::from(hash) * self.members.len() as u64) >> 32;
        self.members[index as usize]
    }
}

/// Ephemeral ports, as Linux's default range.
pub const EPHEMERAL_PORTS: core::ops::RangeInclusive<u16> = 32768..=60999;

/// The table. See the module documentation.
#[derive(Debug)]
pub struct UdpTable {
    sockets: Vec<Option<Socket>>,
    free: Vec<u32>,
    by_local: HashMap<SocketAddrV4, Vec<SocketId>>,
    by_port: HashMap<u16, Vec<SocketId>>,
    groups: Vec<ReuseportGroup>,
    hash_key: u64,
    next_ephemeral: u16,
}

impl UdpTable {
    /// An empty table; `hash_key` keys the reuseport flow hash (make it
    /// random so peers cannot aim at one member).
    pub fn new(hash_key: u64) -> UdpTable {
        UdpTable {
            sockets: Vec::new(),
            free: Vec::new(),
            by_local: HashMap::new(),
            by_port: HashMap::new(),
            groups: Vec::new(),
            hash_key,
            next_ephemeral: *EPHEMERAL_PORTS.start(),
        }
    }

    /// Binds a socket to `local` (port 0: an ephemeral port). `is_local`
    /// says whether an address is one of the host's.
    pub fn bind(
        &mut self,
        mut local: SocketAddrV4,
        options: BindOptions,
        is_local: impl Fn(Ipv4Addr) -> bool,
    ) -> Result<SocketId, BindError> {
        if !local.ip().is_unspecified() && !is_local(*local.ip()) {
            return Err(BindError::AddrNotAvailable);
        }
        if local.port() == 0 {
            local.set_port(self.free_port(*local.ip())?);
        }
        let group = self.join_group(local, options)?;
        let socket = Socket {
            local,
            remote: None,
            options,
            group,
        };
        let id = match self.free.pop() {
            Some(slot) => {
                self.sockets[slot as usize] = Some(socket);
                SocketId(slot)
            }
            None => {
                self.sockets.push(Some(socket));
                SocketId((self.sockets.len() - 1) as u32)
            }
        };
        self.by_local.entry(local).or_default().push(id);
        self.by_port.entry(local.port()).or_default().push(id);
        if let Some(g) = group {
            self.groups[g].members.push(id);
        }
        Ok(id)
    }

    /// Checks the conflict rules; returns the reuseport group to join.
    fn join_group(
        &mut self,
        local: SocketAddrV4,
        options: BindOptions,
    ) -> Result<Option<usize>, BindError> {
        let mut group = None;
        for id in self.overlapping(local) {
            let other = self.socket(id).expect("listed sockets exist");
            if !(options.reuse_port && other.options.reuse_port) {
                return Err(BindError::AddrInUse);
            }
            if other.local == local {
                group = other.group;
            }
        }
        if options.reuse_port && group.is_none() {
            self.groups.push(ReuseportGroup::default());
            group = Some(self.groups.len() - 1);
        }
        Ok(group)
    }

    /// Sockets whose address overlaps `local` (same port, and same address
    /// or either one ANY).
    fn overlapping(&self, local: SocketAddrV4) -> Vec<SocketId> {
        let Some(ids) = self.by_port.get(&local.port()) else {
            return Vec::new();
        };
        ids.iter()
            .copied()
            .filter(|&id| {
                self.socket(id).is_some_and(|s| {
                    s.local.ip() == local.ip()
                        || s.local.ip().is_unspecified()
                        || local.ip().is_unspecified()
                })
            })
            .collect()
    }

    fn free_port(&mut self, ip: Ipv4Addr) -> Result<u16, BindError> {
        let span = EPHEMERAL_PORTS.end() - EPHEMERAL_PORTS.start() + 1;
        for _ in 0..span {
            let port = self.next_ephemeral;
            self.next_ephemeral = if port == *EPHEMERAL_PORTS.end() {
                *EPHEMERAL_PORTS.start()
            } else {
                port + 1
            };
            if self.overlapping(SocketAddrV4::new(ip, port)).is_empty() {
                return Ok(port);
            }
        }
        Err(BindError::NoFreePort)
    }

    /// Connects `id` to `remote`: it then only receives from there, and wins
    /// over unconnected sockets of its reuseport group.
    pub fn connect(&mut self, id: SocketId, remote: SocketAddrV4) -> bool {
        let Some(Some(socket)) = self.sockets.get_mut(id.0 as usize) else {
            return false;
        };
        let was_connected = socket.remote.replace(remote).is_some();
        if let (Some(g), false) = (socket.group, was_connected) {
            self.groups[g].connected += 1;
        }
        true
    }

    /// Removes a socket. Returns false if it did not exist.
    pub fn close(&mut self, id: SocketId) -> bool {
        let Some(socket) = self.sockets.get_mut(id.0 as usize).and_then(Option::take) else {
            return false;
        };
        if let Some(ids) = self.by_local.get_mut(&socket.local) {
            ids.retain(|&s| s != id);
            if ids.is_empty() {
                self.by_local.remove(&socket.local);
            }
        }
        if let Some(ids) = self.by_port.get_mut(&socket.local.port()) {
            ids.retain(|&s| s != id);
            if ids.is_empty() {
                self.by_port.remove(&socket.local.port());
            }
        }
        if let Some(g) = socket.group {
            let group = &mut self.groups[g];
            group.members.retain(|&s| s != id);
            if socket.remote.is_some() {
                group.connected -= 1;
            }
        }
        self.free.push(id.0);
        true
    }

    /// The local address of a socket.
    pub fn local_addr(&self, id: SocketId) -> Option<SocketAddrV4> {
        self.socket(id).map(|s| s.local)
    }

    /// The remote address of a connected socket.
    pub fn peer_addr(&self, id: SocketId) -> Option<SocketAddrV4> {
        self.socket(id).and_then(|s| s.remote)
    }

    /// Number of bound sockets.
    pub fn len(&self) -> usize {
        self.sockets.len() - self.free.len()
    }

    /// True if no socket is bound.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn socket(&self, id: SocketId) -> Option<&Socket> {
        self.sockets.get(id.0 as usize).and_then(Option::as_ref)
    }

    /// The socket that receives a datagram with `key`, if any. Per packet,
    /// owning lcore only; no allocation.
    #[inline]
    pub fn lookup(&self, key: &FlowKey) -> Option<SocketId> {
        let wildcard = SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, key.dst.port());
        // Most specific slot first; the wildcard slot only if it has nothing.
        for slot in [key.dst, wildcard] {
            let Some(ids) = self.by_local.get(&slot) else {
                continue;
            };
            let mut best: Option<(u32, SocketId)> = None;
            for &id in ids {
                let Some(socket) = self.socket(id) else {
                    continue;
                };
                let Some(points) = score(socket, key) else {
                    continue;
                };
                if best.is_some_and(|(b, _)| b >= points) {
                    continue;
                }
                best = Some((points, id));
                if let Some(g) = socket.group {
                    let group = &self.groups[g];
                    if group.connected == 0 {
                        return Some(group.select(self.flow_hash(key)));
                    }
                }
            }
            if let Some((_, id)) = best {
                return Some(id);
            }
        }
        None
    }

    /// A keyed hash of the 4-tuple (for reuseport selection).
    #[inline]
    fn flow_hash(&self, key: &FlowKey) -> u32 {
        let a = u64::from(u32::from(*key.src.ip())) << 32 | u64::from(u32::from(*key.dst.ip()));
        let b = u64::from(key.src.port()) << 16 | u64::from(key.dst.port());
        let mut h = (a ^ self.hash_key).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h ^= h >> 29;
        h = (h ^ b ^ self.hash_key.rotate_left(32)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h ^= h >> 32;
        h as u32
    }
}

/// How well `socket` matches `key`: `None` if it cannot receive it, else
/// higher for more specific matches (as Linux's `compute_score`: exact local
/// address, connected remote address and port, bound device, 4 points each).
/// One call site: [`UdpTable::lookup`].
#[inline(always)]
fn score(socket: &Socket, key: &FlowKey) -> Option<u32> {
    if socket.local.port() != key.dst.port() {
        return None;
    }
    let mut points = 2; // IPv4 socket for an IPv4 datagram
    if !socket.local.ip().is_unspecified() {
        if socket.local.ip() != key.dst.ip() {
            return None;
        }
        points += 4;
    }
    if let Some(remote) = socket.remote {
        if remote.ip() != key.src.ip() {
            return None;
        }
        points += 4;
        if remote.port() != 0 {
            if remote.port() != key.src.port() {
                return None;
            }
            points += 4;
        }
    }
    if let Some(device) = socket.options.device {
        if device != key.device {
            return None;
        }
        points += 4;
    }
    Some(points)
}

#[cfg(test)]
mod tests;
