//! Receive-side scaling in software: the Toeplitz hash that NICs use to
//! spread flows over receive queues, the input it hashes, and the
//! redirection table that turns a hash into a queue.
//!
//! It serves two purposes: predicting on which queue a flow lands when the
//! device hashes with a known key and table (so a connection can be placed
//! on the lcore that will receive its replies), and spreading in software
//! for devices that have queues but no RSS.
//!
//! [`RssPlacement`] is the prediction `connect()` uses: a port's key and
//! table and the queue the connecting lcore polls. [`ReturnQueues`] gives
//! the queue of the return traffic for every local port towards one peer
//! at the cost of one hash: Toeplitz is linear in its input (XOR), and the
//! local port is the input's last 16 bits, so each port bit adds a fixed
//! 32-bit key window to the hash of the rest.
//!
//! Invariants: the hash input is laid out as NICs and DPDK's `rte_softrss`
//! read it, addresses then ports, source before destination, each in
//! network byte order; a key must be at least 4 bytes longer than the
//! input it hashes (40 bytes cover IPv6 with ports); a redirection table
//! maps `hash % len` to a queue, as devices do with the low bits of the
//! hash.

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Bytes in the standard RSS key (enough for IPv6 addresses and ports).
pub const KEY_LEN: usize = 40;

/// The key of Microsoft's RSS verification suite, which many NICs and
/// DPDK's testpmd also use as their default.
pub const MICROSOFT_KEY: [u8; KEY_LEN] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
    0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
    0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
];

/// A key under which both directions of a flow hash alike: with a 16-bit
/// period, swapping source and destination (addresses and ports) swaps
/// 16-bit-aligned halves of the input, which the repeated pattern cannot
/// tell apart.
pub const SYMMETRIC_KEY: [u8; KEY_LEN] = {
    let mut key = [0u8; KEY_LEN];
    let mut i = 0;
    while i < KEY_LEN {
        key[i] = if i % 2 == 0 { 0x6d } else { 0x5a };
        i += 1;
    }
    key
};

/// The Toeplitz hash of `input` under `key` (MSB first: each set input bit
/// XORs in the 32 key bits that start at its position). Key bits past the
/// end of `key` count as zero.
pub fn toeplitz(key: &[u8], input: &[u8]) -> u32 {
    let byte = |i: usize| u32::from(key.get(i).copied().unwrap_or(0));
    let mut window = (byte(0) << 24) | (byte(1) << 16) | (byte(2) << 8) | byte(3);
    let mut hash = 0;
    for (i, &bits) in input.iter().enumerate() {
        let next = byte(i + 4);
        for bit in 0..8 {
            if bits & (0x80 >> bit) != 0 {
                hash ^= window;
            }
            window = (window << 1) | ((next >> (7 - bit)) & 1);
        }
    }
    hash
}

/// What a flow contributes to the hash: addresses, and ports if the hash
/// type includes them (`RTE_ETH_RSS_*_TCP`/`_UDP`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowInput {
    bytes: [u8; 36],
    len: usize,
}

impl FlowInput {
    /// The input for packets from `src` to `dst` (both of one family), with
    /// `ports` as (source, destination) when the hash covers them.
    pub fn new(src: IpAddr, dst: IpAddr, ports: Option<(u16, u16)>) -> FlowInput {
        match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => FlowInput::v4(s, d, ports),
            (IpAddr::V6(s), IpAddr::V6(d)) => FlowInput::v6(s, d, ports),
            (IpAddr::V4(s), IpAddr::V6(d)) => FlowInput::v6(s.to_ipv6_mapped(), d, ports),
            (IpAddr::V6(s), IpAddr::V4(d)) => FlowInput::v6(s, d.to_ipv6_mapped(), ports),
        }
    }

    /// IPv4: source and destination addresses, then the ports.
    pub fn v4(src: Ipv4Addr, dst: Ipv4Addr, ports: Option<(u16, u16)>) -> FlowInput {
        FlowInput::build(&src.octets(), &dst.octets(), ports)
    }

    /// IPv6: source and destination addresses, then the ports.
    pub fn v6(src: Ipv6Addr, dst: Ipv6Addr, ports: Option<(u16, u16)>) -> FlowInput {
        FlowInput::build(&src.octets(), &dst.octets(), ports)
    }

    fn build(src: &[u8], dst: &[u8], ports: Option<(u16, u16)>) -> FlowInput {
        let mut input = FlowInput {
            bytes: [0; 36],
            len: 0,
        };
        input.push(src);
        input.push(dst);
        if let Some((sport, dport)) = ports {
            input.push(&sport.to_be_bytes());
            input.push(&dport.to_be_bytes());
        }
        input
    }

    fn push(&mut self, bytes: &[u8]) {
        self.bytes[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    /// The bytes the hash reads.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// Its Toeplitz hash under `key`.
    pub fn hash(&self, key: &[u8]) -> u32 {
        toeplitz(key, self.as_bytes())
    }
}

/// A redirection table (RETA): entry `hash % len` names the queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedirectionTable {
    queues: Vec<u16>,
}

/// Why a redirection table was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetaError {
    /// A table needs at least one entry.
    Empty,
    /// Entry `index` names queue `queue`, but there are only `queues`.
    NoSuchQueue {
        /// The entry.
        index: usize,
        /// The queue it names.
        queue: u16,
        /// How many queues there are.
        queues: u16,
    },
}

impl core::fmt::Display for RetaError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RetaError::Empty => write!(f, "a redirection table needs at least one entry"),
            RetaError::NoSuchQueue {
                index,
                queue,
                queues,
            } => write!(
                f,
                "redirection table entry {index} names queue {queue}, but there are only \
                 {queues} (0..={})",
                queues.saturating_sub(1)
            ),
        }
    }
}

impl std::error::Error for RetaError {}

impl RedirectionTable {
    /// `size` entries spread round-robin over `queues` queues (entry i
    /// names queue i % queues), as DPDK drivers fill it by default.
    pub fn round_robin(size: usize, queues: u16) -> RedirectionTable {
        let queues = queues.max(1);
        RedirectionTable {
            queues: (0..size.max(1))
                .map(|i| (i % usize::from(queues)) as u16)
                .collect(),
        }
    }

    /// A table with these entries, each a queue below `queues`.
    pub fn new(entries: Vec<u16>, queues: u16) -> Result<RedirectionTable, RetaError> {
        if entries.is_empty() {
            return Err(RetaError::Empty);
        }
        if let Some((index, &queue)) = entries.iter().enumerate().find(|(_, &q)| q >= queues) {
            return Err(RetaError::NoSuchQueue {
                index,
                queue,
                queues,
            });
        }
        Ok(RedirectionTable { queues: entries })
    }

    /// The queue for `hash`.
    pub fn queue(&self, hash: u32) -> u16 {
        self.queues[hash as usize % self.queues.len()]
    }

    /// The entries, in order.
    pub fn entries(&self) -> &[u16] {
        &self.queues
    }
}

/// How a port spreads TCP over its receive queues when it hashes with
/// Toeplitz under a key and table the stack knows, and which queue the
/// connecting lcore polls: what `connect()` needs to pick a local port
/// whose return traffic reaches that lcore.
///
/// The device is taken to hash TCP of both families over addresses and
/// ports (`RTE_ETH_RSS_NONFRAG_IPV4_TCP` and `_IPV6_TCP`); the driver
/// builds a placement only for such a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RssPlacement {
    /// The key's first [`KEY_LEN`] bytes (all that IPv6 with ports reads;
    /// a shorter key is padded with zeros, which is how the hash reads
    /// missing key bits).
    key: [u8; KEY_LEN],
    /// The device's redirection table.
    reta: RedirectionTable,
    /// The rx queue the connecting lcore polls.
    queue: u16,
}

impl RssPlacement {
    /// A placement for the lcore polling `queue` of a device hashing with
    /// `key` into `reta`.
    pub fn new(key: &[u8], reta: RedirectionTable, queue: u16) -> RssPlacement {
        let mut padded = [0; KEY_LEN];
        let used = key.len().min(KEY_LEN);
        padded[..used].copy_from_slice(&key[..used]);
        RssPlacement {
            key: padded,
            reta,
            queue,
        }
    }

    /// The rx queue the connecting lcore polls.
    pub fn queue(&self) -> u16 {
        self.queue
    }

    /// The redirection table.
    pub fn reta(&self) -> &RedirectionTable {
        &self.reta
    }

    /// The queue on which the device receives the return traffic of a
    /// connection from `local` to `remote`: packets from `remote` to
    /// `local`, hashed source first.
    pub fn return_queue(&self, local: SocketAddr, remote: SocketAddr) -> u16 {
        let input = FlowInput::new(
            remote.ip().to_canonical(),
            local.ip().to_canonical(),
            Some((remote.port(), local.port())),
        );
        self.reta.queue(input.hash(&self.key))
    }

    /// The return queues of connections from `local_ip` to `remote`, for
    /// any local port.
    pub fn towards(&self, local_ip: IpAddr, remote: SocketAddr) -> ReturnQueues<'_> {
        let input = FlowInput::new(
            remote.ip().to_canonical(),
            local_ip.to_canonical(),
            Some((remote.port(), 0)),
        );
        // The local port's bit b (0 the least significant) sits at input
        // bit `last - b`, counting from the first input bit as bit 0.
        let last = input.as_bytes().len() * 8 - 1;
        ReturnQueues {
            placement: self,
            rest: input.hash(&self.key),
            port_bits: core::array::from_fn(|b| key_window(&self.key, last - b)),
        }
    }
}

/// The 32 key bits that start at bit `at` (MSB first): what a set input
/// bit at `at` XORs into a Toeplitz hash.
fn key_window(key: &[u8; KEY_LEN], at: usize) -> u32 {
    let byte = |i: usize| u64::from(key.get(i).copied().unwrap_or(0));
    let first = at / 8;
    let wide = (byte(first) << 32)
        | (byte(first + 1) << 24)
        | (byte(first + 2) << 16)
        | (byte(first + 3) << 8)
        | byte(first + 4);
    (wide >> (8 - at % 8)) as u32
}

/// The return queue of each local port towards one peer (see the module
/// documentation): one hash of everything but the local port, and the
/// window each of its 16 bits adds.
#[derive(Debug, Clone, Copy)]
pub struct ReturnQueues<'a> {
    placement: &'a RssPlacement,
    /// The hash with local port 0.
    rest: u32,
    /// What local port bit b adds to the hash.
    port_bits: [u32; 16],
}

impl ReturnQueues<'_> {
    /// The queue of the return traffic when the local port is `port`.
    pub fn queue(&self, port: u16) -> u16 {
        let mut hash = self.rest;
        for (b, window) in self.port_bits.iter().enumerate() {
            if port & (1 << b) != 0 {
                hash ^= window;
            }
        }
        self.placement.reta.queue(hash)
    }

    /// True if the return traffic of local port `port` reaches the
    /// connecting lcore's queue.
    pub fn fits(&self, port: u16) -> bool {
        self.queue(port) == self.placement.queue
    }
}

#[cfg(test)]
mod tests;
