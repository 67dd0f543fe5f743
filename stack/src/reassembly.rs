//! Fragment reassembly for IPv4 and IPv6, with bounded memory and a
//! timeout.
//!
//! Each datagram in reassembly (keyed per family: source, destination,
//! protocol and identification for IPv4, RFC 791; source, destination and
//! identification for IPv6, RFC 8200 4.5) owns one large buffer from the
//! port ([`Port::alloc_large`]); fragment payloads are copied into it at
//! their offsets, and a bitmap of 8-byte blocks records what has arrived.
//! When the last fragment is in and no block is missing, the buffer gets a
//! plain Ethernet and IP header ([`FragmentKey::emit_header`]) and is handed
//! back as one ordinary, unfragmented frame for the normal receive path.
//!
//! Bounds and rules: at most `max_datagrams` in reassembly (further ones are
//! dropped, not evicting older ones, so a flood of bogus first fragments
//! cannot push out real traffic); a datagram not completed within `timeout`
//! is dropped; non-final fragments must carry a multiple of 8 bytes. An
//! overlapping fragment drops the whole datagram (as Linux does since
//! FragmentSmack) and, per RFC 5722, poisons its key until the timeout: the
//! datagram's later fragments are dropped too rather than starting a new
//! reassembly. The table is keyed with a randomly seeded hash (peers choose
//! the keys) and its capacity is reserved up front. Slow path; owning lcore
//! only.

use crate::counters::DropReason;
use crate::port::{Buf, Port};
use crate::time::{Duration, Instant};
use crate::wire::ethernet::HEADER_LEN as ETH_LEN;
use crate::wire::ipv4::{Ipv4Header, Ipv4Packet, HEADER_LEN as IP_LEN};
use crate::wire::ipv6::{Ipv6Header, Ipv6Packet, HEADER_LEN as IP6_LEN};
use core::hash::Hash;
use core::net::{Ipv4Addr, Ipv6Addr};
use std::collections::HashMap;

/// Largest payload of either family (IPv6's: the payload length field).
const MAX_PAYLOAD: usize = 65535;
/// 8-byte blocks in the largest payload.
const BLOCKS: usize = MAX_PAYLOAD.div_ceil(8);
const WORDS: usize = BLOCKS.div_ceil(64);
/// Where payloads go in the reassembly buffer: room for Ethernet and the
/// larger (IPv6) header; an IPv4 datagram starts 20 bytes in.
const PAYLOAD_AT: usize = ETH_LEN + IP6_LEN;

/// Why a fragment was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReassemblyError {
    /// Too many datagrams in reassembly, or no large buffer free.
    Full,
    /// It overlapped another fragment (or belonged to a datagram that did).
    Overlap,
    /// It reached past the largest datagram we reassemble.
    TooBig,
    /// A non-final fragment whose length is not a multiple of 8, or an
    /// empty one.
    Malformed,
}

/// What identifies a datagram's fragments, per family, and how its
/// reassembled header is written.
pub trait FragmentKey: Copy + Eq + Hash + core::fmt::Debug {
    /// The family's fixed header length.
    const HEADER_LEN: usize;
    /// Largest payload the family allows.
    const MAX_PAYLOAD: usize;
    /// The drop reason a family counts for `error`.
    fn reason(error: ReassemblyError) -> DropReason;
    /// Writes the unfragmented header of a `payload_len`-byte datagram
    /// carrying `protocol` into `header` (exactly `HEADER_LEN` bytes).
    fn emit_header(&self, header: &mut [u8], protocol: u8, payload_len: usize, hop: u8);
}

/// An IPv4 datagram's identity (RFC 791).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key4 {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// Payload protocol.
    pub protocol: u8,
    /// Identification.
    pub ident: u16,
}

impl FragmentKey for Key4 {
    const HEADER_LEN: usize = IP_LEN;
    const MAX_PAYLOAD: usize = 65535 - IP_LEN;

    fn reason(error: ReassemblyError) -> DropReason {
        match error {
            ReassemblyError::Full => DropReason::Ipv4ReassemblyFull,
            ReassemblyError::Overlap => DropReason::Ipv4ReassemblyOverlap,
            ReassemblyError::TooBig => DropReason::Ipv4ReassemblyTooBig,
            ReassemblyError::Malformed => DropReason::Ipv4FragmentMalformed,
        }
    }

    fn emit_header(&self, header: &mut [u8], protocol: u8, payload_len: usize, hop: u8) {
        Ipv4Packet::new_unchecked(header).emit_header(&Ipv4Header {
            src: self.src,
            dst: self.dst,
            protocol,
            payload_len: payload_len as u16,
            ttl: hop,
            ident: self.ident,
            dont_fragment: false,
            tos: 0,
        });
    }
}

/// An IPv6 datagram's identity (RFC 8200 4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key6 {
    /// Source address.
    pub src: Ipv6Addr,
    /// Destination address.
    pub dst: Ipv6Addr,
    /// Identification.
    pub ident: u32,
}

impl FragmentKey for Key6 {
    const HEADER_LEN: usize = IP6_LEN;
    const MAX_PAYLOAD: usize = 65535;

    fn reason(error: ReassemblyError) -> DropReason {
        match error {
            ReassemblyError::Full => DropReason::Ipv6ReassemblyFull,
            ReassemblyError::Overlap => DropReason::Ipv6ReassemblyOverlap,
            ReassemblyError::TooBig => DropReason::Ipv6ReassemblyTooBig,
            ReassemblyError::Malformed => DropReason::Ipv6FragmentMalformed,
        }
    }

    fn emit_header(&self, header: &mut [u8], protocol: u8, payload_len: usize, hop: u8) {
        Ipv6Packet::new_unchecked(header).emit_header(&Ipv6Header {
            src: self.src,
            dst: self.dst,
            next_header: protocol,
            payload_len: payload_len as u16,
            hop_limit: hop,
        });
    }
}

/// Tunables.
#[derive(Debug, Clone)]
pub struct ReassemblyConfig {
    /// Datagrams in reassembly at once.
    pub max_datagrams: usize,
    /// How long a datagram may take to complete.
    pub timeout: Duration,
}

impl Default for ReassemblyConfig {
    fn default() -> Self {
        ReassemblyConfig {
            max_datagrams: 64,
            timeout: Duration::from_secs(30),
        }
    }
}

/// One fragment, as the IP layer parsed it.
#[derive(Debug, Clone, Copy)]
pub struct Fragment<K> {
    /// Which datagram it belongs to.
    pub key: K,
    /// The upper-layer protocol (taken from the first fragment).
    pub protocol: u8,
    /// Byte offset of this fragment's payload in the datagram.
    pub offset: usize,
    /// More fragments follow.
    pub more: bool,
    /// Where the payload starts in the frame.
    pub payload_start: usize,
    /// Payload length.
    pub payload_len: usize,
    /// TTL (hop limit) of the fragment.
    pub ttl: u8,
}

#[derive(Debug)]
struct Datagram<B> {
    /// The reassembly buffer; `None` once the datagram was poisoned by an
    /// overlap (its key is remembered until the deadline).
    buf: Option<B>,
    blocks: Box<[u64; WORDS]>,
    /// Payload length, known once the last fragment arrived.
    total: Option<usize>,
    deadline: Instant,
    ttl: u8,
    protocol: u8,
}

impl<B> Datagram<B> {
    fn is_complete(&self) -> bool {
        let Some(total) = self.total else {
            return false;
        };
        let full_blocks = total.div_ceil(8);
        (0..full_blocks).all(|b| self.blocks[b / 64] & (1 << (b % 64)) != 0)
    }
}

/// What happened to a fragment.
#[derive(Debug)]
pub enum Reassembly<B> {
    /// Stored; the datagram is not complete yet.
    Pending,
    /// The datagram is complete: an unfragmented frame.
    Complete(B),
    /// The fragment (and possibly its datagram) was dropped for this reason.
    Dropped(DropReason),
}

/// The reassembly table of one family (IPv4 by default). See the module
/// documentation.
#[derive(Debug)]
pub struct Reassembler<B, K = Key4> {
    config: ReassemblyConfig,
    datagrams: HashMap<K, Datagram<B>>,
}

impl<B: Buf, K: FragmentKey> Reassembler<B, K> {
    /// An empty table.
    pub fn new(config: ReassemblyConfig) -> Reassembler<B, K> {
        Reassembler {
            datagrams: HashMap::with_capacity(config.max_datagrams),
            config,
        }
    }

    /// Datagrams in reassembly (not counting poisoned keys).
    pub fn len(&self) -> usize {
        self.datagrams.values().filter(|d| d.buf.is_some()).count()
    }

    /// True if nothing is in reassembly.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds the fragment in `frame` (an Ethernet frame) to its datagram.
    pub fn add<P: Port<Buf = B>>(
        &mut self,
        port: &mut P,
        frame: &B,
        fragment: Fragment<K>,
        now: Instant,
    ) -> Reassembly<B> {
        match self.add_fragment(port, frame, &fragment, now) {
            Ok(outcome) => outcome,
            Err(error) => Reassembly::Dropped(K::reason(error)),
        }
    }

    fn add_fragment<P: Port<Buf = B>>(
        &mut self,
        port: &mut P,
        frame: &B,
        fragment: &Fragment<K>,
        now: Instant,
    ) -> Result<Reassembly<B>, ReassemblyError> {
        let end = fragment.offset + fragment.payload_len;
        if fragment.more && fragment.payload_len % 8 != 0 || fragment.payload_len == 0 {
            return Err(ReassemblyError::Malformed);
        }
        if end > K::MAX_PAYLOAD {
            return Err(ReassemblyError::TooBig);
        }
        let key = fragment.key;
        if !self.datagrams.contains_key(&key) {
            if self.datagrams.len() >= self.config.max_datagrams {
                return Err(ReassemblyError::Full);
            }
            let mut buf = port.alloc_large().ok_or(ReassemblyError::Full)?;
            let room = buf.tailroom();
            buf.append(room).ok_or(ReassemblyError::Full)?;
            let datagram = Datagram {
                buf: Some(buf),
                blocks: Box::new([0; WORDS]),
                total: None,
                deadline: now + self.config.timeout,
                ttl: fragment.ttl,
                protocol: fragment.protocol,
            };
            self.datagrams.insert(key, datagram);
        }
        let datagram = self.datagrams.get_mut(&key).ok_or(ReassemblyError::Full)?;
        if let Err(error) = Self::store(datagram, frame, fragment) {
            if error == ReassemblyError::Overlap {
                // RFC 5722: the rest of this datagram is dropped as it comes.
                datagram.buf = None;
            } else {
                self.datagrams.remove(&key);
            }
            return Err(error);
        }
        if !datagram.is_complete() {
            return Ok(Reassembly::Pending);
        }
        let Some(Datagram {
            buf: Some(mut buf),
            total: Some(total),
            ttl,
            protocol,
            ..
        }) = self.datagrams.remove(&key)
        else {
            return Ok(Reassembly::Pending);
        };
        // The frame starts where the family's header must go.
        let start = PAYLOAD_AT - ETH_LEN - K::HEADER_LEN;
        let excess = buf.len().saturating_sub(PAYLOAD_AT + total);
        buf.trim(excess);
        buf.adjust(start);
        let data = buf.data_mut();
        data[..ETH_LEN].copy_from_slice(&frame.data()[..ETH_LEN]);
        key.emit_header(
            &mut data[ETH_LEN..ETH_LEN + K::HEADER_LEN],
            protocol,
            total,
            ttl,
        );
        Ok(Reassembly::Complete(buf))
    }

    /// Copies the fragment's payload in, or says why the datagram must be
    /// dropped.
    fn store(
        datagram: &mut Datagram<B>,
        frame: &B,
        fragment: &Fragment<K>,
    ) -> Result<(), ReassemblyError> {
        let end = fragment.offset + fragment.payload_len;
        let at = PAYLOAD_AT + fragment.offset;
        let Some(buf) = datagram.buf.as_mut() else {
            return Err(ReassemblyError::Overlap);
        };
        if at + fragment.payload_len > buf.len() {
            return Err(ReassemblyError::TooBig);
        }
        if !fragment.more {
            if datagram.total.is_some_and(|t| t != end) {
                return Err(ReassemblyError::Overlap);
            }
            // Data already received beyond the end makes the datagram
            // inconsistent (the other order is checked just below).
            let last = end.div_ceil(8);
            if (last..BLOCKS).any(|b| datagram.blocks[b / 64] & (1 << (b % 64)) != 0) {
                return Err(ReassemblyError::Overlap);
            }
            datagram.total = Some(end);
        }
        if datagram.total.is_some_and(|t| end > t) {
            return Err(ReassemblyError::Overlap);
        }
        let (first, last) = (fragment.offset / 8, end.div_ceil(8));
        if (first..last).any(|b| datagram.blocks[b / 64] & (1 << (b % 64)) != 0) {
            return Err(ReassemblyError::Overlap);
        }
        for b in first..last {
            datagram.blocks[b / 64] |= 1 << (b % 64);
        }
        if fragment.offset == 0 {
            datagram.protocol = fragment.protocol;
            datagram.ttl = fragment.ttl;
        }
        let source = frame
            .data()
            .get(fragment.payload_start..fragment.payload_start + fragment.payload_len)
            .ok_or(ReassemblyError::Malformed)?;
        buf.data_mut()[at..at + fragment.payload_len].copy_from_slice(source);
        Ok(())
    }

    /// Drops datagrams past their deadline; returns how many (poisoned
    /// keys, already counted as overlaps, are forgotten without a count).
    pub fn expire(&mut self, now: Instant) -> usize {
        let mut expired = 0;
        self.datagrams.retain(|_, d| {
            let keep = now < d.deadline;
            if !keep && d.buf.is_some() {
                expired += 1;
            }
            keep
        });
        expired
    }
}

#[cfg(test)]
mod tests;
