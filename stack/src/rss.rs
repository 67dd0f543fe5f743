//! Receive-side scaling in software: the Toeplitz hash that NICs use to
//! spread flows over receive queues, the input it hashes, and the
//! redirection table that turns a hash into a queue.
//!
//! It serves two purposes: predicting on which queue a flow lands when the
//! device hashes with a known key and table (so a connection can be placed
//! on the lcore that will receive its replies), and spreading in software
//! for devices that have queues but no RSS.
//!
//! Invariants: the hash input is laid out as NICs and DPDK's `rte_softrss`
//! read it, addresses then ports, source before destination, each in
//! network byte order; a key must be at least 4 bytes longer than the
//! input it hashes (40 bytes cover IPv6 with ports); a redirection table
//! maps `hash % len` to a queue, as devices do with the low bits of the
//! hash.

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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

#[cfg(test)]
mod tests {
    use super::*;

    /// Microsoft's "Verifying the RSS Hash Calculation" vectors: source,
    /// destination, the addresses-only hash and the hash with ports.
    const V4: [(&str, &str, u32, u32); 5] = [
        (
            "66.9.149.187:2794",
            "161.142.100.80:1766",
            0x323e8fc2,
            0x51ccc178,
        ),
        (
            "199.92.111.2:14230",
            "65.69.140.83:4739",
            0xd718262a,
            0xc626b0ea,
        ),
        (
            "24.19.198.95:12898",
            "12.22.207.184:38024",
            0xd2d0a5de,
            0x5c2b394a,
        ),
        (
            "38.27.205.30:48228",
            "209.142.163.6:2217",
            0x82989176,
            0xafc7327f,
        ),
        (
            "153.39.163.191:44251",
            "202.188.127.2:1303",
            0x5d1809c5,
            0x10e828a2,
        ),
    ];
    const V6: [(&str, &str, u32, u32); 3] = [
        (
            "[3ffe:2501:200:1fff::7]:2794",
            "[3ffe:2501:200:3::1]:1766",
            0x2cc18cd5,
            0x40207d3d,
        ),
        (
            "[3ffe:501:8::260:97ff:fe40:efab]:14230",
            "[ff02::1]:4739",
            0x0f0c461c,
            0xdde51bbf,
        ),
        (
            "[3ffe:1900:4545:3:200:f8ff:fe21:67cf]:44251",
            "[fe80::200:f8ff:fe21:67cf]:38024",
            0x4b61e985,
            0x02d1feef,
        ),
    ];

    fn check(vectors: &[(&str, &str, u32, u32)]) {
        for &(src, dst, addresses, with_ports) in vectors {
            let src: core::net::SocketAddr = src.parse().expect("vector");
            let dst: core::net::SocketAddr = dst.parse().expect("vector");
            let plain = FlowInput::new(src.ip(), dst.ip(), None);
            assert_eq!(plain.hash(&MICROSOFT_KEY), addresses, "{src} -> {dst}");
            let ports = FlowInput::new(src.ip(), dst.ip(), Some((src.port(), dst.port())));
            assert_eq!(
                ports.hash(&MICROSOFT_KEY),
                with_ports,
                "{src} -> {dst} ports"
            );
        }
    }

    #[test]
    fn microsoft_ipv4_vectors() {
        check(&V4);
    }

    #[test]
    fn microsoft_ipv6_vectors() {
        check(&V6);
    }

    #[test]
    fn the_symmetric_key_hashes_both_directions_alike() {
        for &(src, dst, _, _) in V4.iter().chain(&V6) {
            let src: core::net::SocketAddr = src.parse().expect("vector");
            let dst: core::net::SocketAddr = dst.parse().expect("vector");
            let there = FlowInput::new(src.ip(), dst.ip(), Some((src.port(), dst.port())));
            let back = FlowInput::new(dst.ip(), src.ip(), Some((dst.port(), src.port())));
            assert_eq!(there.hash(&SYMMETRIC_KEY), back.hash(&SYMMETRIC_KEY));
            assert_ne!(
                there.hash(&MICROSOFT_KEY),
                back.hash(&MICROSOFT_KEY),
                "the default key is not symmetric"
            );
        }
    }

    #[test]
    fn the_table_maps_the_low_bits_and_refuses_missing_queues() {
        let reta = RedirectionTable::round_robin(128, 2);
        assert_eq!(reta.queue(0), 0);
        assert_eq!(reta.queue(1), 1);
        assert_eq!(reta.queue(128 + 3), 1);
        assert_eq!(reta.entries().len(), 128);
        assert_eq!(
            RedirectionTable::new(vec![0, 1, 2], 2),
            Err(RetaError::NoSuchQueue {
                index: 2,
                queue: 2,
                queues: 2
            })
        );
        assert_eq!(RedirectionTable::new(vec![], 2), Err(RetaError::Empty));
    }
}
