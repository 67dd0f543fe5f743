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
//! back as one ordinary, unfragmented frame for the normal receive path. Its
//! ECN field is the first-arrived fragment's, or CE if any fragment was
//! marked CE (RFC 3168 5.3: reassembly does not lose a congestion mark); a
//! datagram whose fragments mix Not-ECT with ECT or CE is dropped whole.
//!
//! Bounds: memory, not a count of datagrams, as Linux bounds it
//! (`ipfrag_high_thresh`). Each datagram is charged what it pins (its
//! buffer's size and its bitmap), however few bytes its fragments brought,
//! so a flood of 8-byte first fragments is charged what it costs. The
//! charges stay within `max_bytes`, those of one source (an IPv4 address;
//! an IPv6 /64, since a host has the whole prefix) within
//! `max_source_bytes`, and the table within `max_datagrams` entries. A new
//! datagram that would cross a bound evicts, oldest first, a datagram of
//! its own source if that source is over its share, else one of the source
//! holding the most: a flood from a few sources evicts its own datagrams,
//! and real traffic keeps reassembling. Each eviction is counted by that
//! reason. A datagram not completed within `timeout` is dropped; if its
//! first fragment had come ([`Reassembler::heard_first`] keeps that
//! fragment's IP header and where it came from), it is handed back rebuilt
//! ([`TimedOut`]) for a "fragment reassembly time exceeded" (RFC 1122
//! 3.3.2, RFC 8200 4.5: only once fragment zero arrived).
//!
//! Rules: non-final fragments carry a multiple of 8 bytes. A fragment that
//! only repeats bytes already received (a duplicate, which networks make)
//! is dropped alone (RFC 5722 erratum 3089, as Linux). An overlapping
//! fragment drops the whole datagram (as Linux does since FragmentSmack);
//! for IPv6 it also poisons the key until the timeout (RFC 5722): the
//! datagram's later fragments are dropped too rather than starting a new
//! reassembly. An IPv4 key starts afresh, as in Linux.
//!
//! The table is keyed with a randomly seeded hash (peers choose the keys)
//! and its capacity is reserved up front. Slow path; owning lcore only.

use crate::counters::{Counters, DropReason};
use crate::port::{Buf, MacAddr, Port};
use crate::time::{Duration, Instant};
use crate::wire::ethernet::HEADER_LEN as ETH_LEN;
use crate::wire::ipv4::{Ipv4Header, Ipv4Packet, HEADER_LEN as IP_LEN};
use crate::wire::ipv6::{Ipv6Header, Ipv6Packet, HEADER_LEN as IP6_LEN};
use crate::wire::Ecn;
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
/// What a datagram pins besides its buffer: its bitmap (a poisoned key
/// keeps only this).
const BOOKKEEPING: usize = core::mem::size_of::<[u64; WORDS]>();
/// The longest first-fragment IP header kept for a timeout's error: IPv4
/// with options (60 bytes), IPv6 with its headers up to the fragment
/// header.
const FIRST_HEADER_MAX: usize = 128;
/// Headroom a timed-out datagram's rebuilt first fragment gets for the
/// error's own IP and ICMP headers (IPv6's 48 bytes at most).
const ERROR_ROOM: usize = 64;

/// Why a fragment was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReassemblyError {
    /// No room even after evicting: no large buffer free and nothing to
    /// evict, or one datagram is more than a source may hold.
    Full,
    /// It overlapped another fragment (or belonged to a datagram that did).
    Overlap,
    /// It repeated bytes already received, exactly: dropped alone.
    Duplicate,
    /// It reached past the largest datagram we reassemble.
    TooBig,
    /// A non-final fragment whose length is not a multiple of 8, or an
    /// empty one.
    Malformed,
    /// The datagram was complete but its fragments mixed Not-ECT with ECT
    /// or CE: a sender that marks some fragments capable and others not
    /// is broken or forging (RFC 3168 5.3), so the whole datagram goes.
    EcnMix,
}

/// The ECN field of a datagram reassembled from fragments that carried the
/// codepoints in `seen` (bit `1 << codepoint`), the first-arrived carrying
/// `first`; `None` if it must be dropped. RFC 3168 5.3, as Linux's
/// `ip_frag_ecn_table`: CE on any fragment marks the datagram (a router's
/// congestion mark is not lost); Not-ECT mixed with ECT or CE is invalid.
fn reassembled_ecn(first: Ecn, seen: u8) -> Option<Ecn> {
    let not_ect = 1 << Ecn::NotEct as u8;
    if seen & not_ect != 0 && seen != not_ect {
        None
    } else if seen & 1 << Ecn::Ce as u8 != 0 {
        Some(Ecn::Ce)
    } else {
        Some(first)
    }
}

/// Why a datagram in reassembly was evicted to make room for a new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eviction {
    /// The new datagram is from its source, which would hold more than
    /// its share with it: it was that source's oldest.
    SourceShare,
    /// The memory, the table or the large buffers were exhausted: it was
    /// the oldest of the source holding the most.
    Memory,
}

/// What identifies a datagram's fragments, per family, and how its
/// reassembled header is written.
pub trait FragmentKey: Copy + Eq + Hash + core::fmt::Debug {
    /// Who a datagram's memory is charged to: one sender.
    type Source: Copy + Eq + Hash + core::fmt::Debug;
    /// The family's fixed header length.
    const HEADER_LEN: usize;
    /// Largest payload the family allows.
    const MAX_PAYLOAD: usize;
    /// An overlap poisons the key until the timeout (RFC 5722, IPv6), or
    /// only drops the datagram so that the key may start afresh (IPv4, as
    /// Linux: no RFC asks more of it).
    const OVERLAP_POISONS: bool;
    /// The drop reason a family counts for `error`.
    fn reason(error: ReassemblyError) -> DropReason;
    /// The drop reason a family counts for an evicted datagram.
    fn eviction_reason(eviction: Eviction) -> DropReason;
    /// The sender charged for this datagram.
    fn source(&self) -> Self::Source;
    /// Writes the unfragmented header of a `payload_len`-byte datagram
    /// carrying `protocol`, its ECN field `ecn`, into `header` (exactly
    /// `HEADER_LEN` bytes).
    fn emit_header(&self, header: &mut [u8], protocol: u8, payload_len: usize, hop: u8, ecn: Ecn);
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
    type Source = Ipv4Addr;
    const HEADER_LEN: usize = IP_LEN;
    const MAX_PAYLOAD: usize = 65535 - IP_LEN;
    const OVERLAP_POISONS: bool = false;

    fn reason(error: ReassemblyError) -> DropReason {
        match error {
            ReassemblyError::Full => DropReason::Ipv4ReassemblyFull,
            ReassemblyError::Overlap => DropReason::Ipv4ReassemblyOverlap,
            ReassemblyError::Duplicate => DropReason::Ipv4ReassemblyDuplicate,
            ReassemblyError::TooBig => DropReason::Ipv4ReassemblyTooBig,
            ReassemblyError::Malformed => DropReason::Ipv4FragmentMalformed,
            ReassemblyError::EcnMix => DropReason::Ipv4ReassemblyEcnMix,
        }
    }

    fn eviction_reason(eviction: Eviction) -> DropReason {
        match eviction {
            Eviction::SourceShare => DropReason::Ipv4ReassemblyEvictedShare,
            Eviction::Memory => DropReason::Ipv4ReassemblyEvictedMemory,
        }
    }

    fn source(&self) -> Ipv4Addr {
        self.src
    }

    fn emit_header(&self, header: &mut [u8], protocol: u8, payload_len: usize, hop: u8, ecn: Ecn) {
        Ipv4Packet::new_unchecked(header).emit_header(&Ipv4Header {
            src: self.src,
            dst: self.dst,
            protocol,
            payload_len: payload_len as u16,
            ttl: hop,
            ident: self.ident,
            dont_fragment: false,
            tos: ecn as u8,
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
    /// The /64 (a host has the whole prefix, so an address is no sender);
    /// a link-local address by itself (every neighbour shares fe80::/64).
    type Source = u128;
    const HEADER_LEN: usize = IP6_LEN;
    const MAX_PAYLOAD: usize = 65535;
    const OVERLAP_POISONS: bool = true;

    fn reason(error: ReassemblyError) -> DropReason {
        match error {
            ReassemblyError::Full => DropReason::Ipv6ReassemblyFull,
            ReassemblyError::Overlap => DropReason::Ipv6ReassemblyOverlap,
            ReassemblyError::Duplicate => DropReason::Ipv6ReassemblyDuplicate,
            ReassemblyError::TooBig => DropReason::Ipv6ReassemblyTooBig,
            ReassemblyError::Malformed => DropReason::Ipv6FragmentMalformed,
            ReassemblyError::EcnMix => DropReason::Ipv6ReassemblyEcnMix,
        }
    }

    fn eviction_reason(eviction: Eviction) -> DropReason {
        match eviction {
            Eviction::SourceShare => DropReason::Ipv6ReassemblyEvictedShare,
            Eviction::Memory => DropReason::Ipv6ReassemblyEvictedMemory,
        }
    }

    fn source(&self) -> u128 {
        let bits = self.src.to_bits();
        if self.src.is_unicast_link_local() {
            bits
        } else {
            bits & !u128::from(u64::MAX)
        }
    }

    fn emit_header(&self, header: &mut [u8], protocol: u8, payload_len: usize, hop: u8, ecn: Ecn) {
        let mut packet = Ipv6Packet::new_unchecked(header);
        packet.emit_header(&Ipv6Header {
            src: self.src,
            dst: self.dst,
            next_header: protocol,
            payload_len: payload_len as u16,
            hop_limit: hop,
        });
        packet.set_traffic_class(ecn as u8);
    }
}

/// Tunables (see the module documentation for how the bounds apply).
#[derive(Debug, Clone)]
pub struct ReassemblyConfig {
    /// Entries in the table at once: datagrams, and IPv6 keys poisoned by
    /// an overlap. Reserved up front.
    pub max_datagrams: usize,
    /// Bytes the datagrams in reassembly may pin at once: each is charged
    /// its buffer's size and its bitmap.
    pub max_bytes: usize,
    /// Bytes one source may pin (the rest stays for others).
    pub max_source_bytes: usize,
    /// How long a datagram may take to complete.
    pub timeout: Duration,
}

impl Default for ReassemblyConfig {
    /// Linux's default `ipfrag_high_thresh` (4 MiB): about 56 datagrams in
    /// 64 KiB buffers; a quarter of it for one source.
    fn default() -> Self {
        ReassemblyConfig {
            max_datagrams: 64,
            max_bytes: 4 << 20,
            max_source_bytes: 1 << 20,
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
    /// The ECN field of its IP header.
    pub ecn: Ecn,
}

/// Where a datagram's first fragment came from, for the error its timeout
/// sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origin {
    /// The link it arrived on.
    pub link: usize,
    /// Its Ethernet source (the previous hop, where the error goes).
    pub eth_src: MacAddr,
    /// It was sent to a group (an IPv4 broadcast address, a link-layer
    /// group): no error answers it.
    pub to_group: bool,
}

/// A datagram whose reassembly timed out after its first fragment came:
/// that fragment rebuilt in the datagram's buffer (an Ethernet frame, its
/// IP header as received, then its payload; room for the error's headers
/// in front), to be quoted by a "fragment reassembly time exceeded".
#[derive(Debug)]
pub struct TimedOut<K, B> {
    /// The datagram's identity.
    pub key: K,
    /// The rebuilt first fragment.
    pub frame: B,
    /// Where its IP packet ends in `frame`.
    pub end: usize,
    /// Where it came from.
    pub origin: Origin,
}

/// The first fragment of a datagram in reassembly, as far as its timeout
/// needs it.
#[derive(Debug)]
struct First {
    origin: Origin,
    /// Its IP header (with options or extension headers) as received.
    header: [u8; FIRST_HEADER_MAX],
    header_len: usize,
    payload_len: usize,
}

#[derive(Debug)]
struct Datagram<B> {
    /// The reassembly buffer; `None` once the datagram was poisoned by an
    /// overlap (IPv6: its key is remembered until the deadline).
    buf: Option<B>,
    /// What it is charged: its buffer's size and [`BOOKKEEPING`].
    charge: usize,
    /// When it came, in arrivals: the smallest is the oldest.
    arrival: u64,
    blocks: BlockMap,
    /// Payload length, known once the last fragment arrived.
    total: Option<usize>,
    deadline: Instant,
    ttl: u8,
    protocol: u8,
    /// The first-arrived fragment's ECN field.
    ecn: Ecn,
    /// The ECN codepoints its fragments carried, one bit each
    /// ([`reassembled_ecn`] decides from them).
    ecn_seen: u8,
    /// Its first fragment, once it came ([`Reassembler::heard_first`]).
    first: Option<First>,
}

impl<B> Datagram<B> {
    fn is_complete(&self) -> bool {
        let Some(total) = self.total else {
            return false;
        };
        let full_blocks = total.div_ceil(8);
        self.blocks.arrived_in(0..full_blocks) == full_blocks
    }
}

/// Which 8-byte blocks of a datagram have arrived, one bit each. Ranges are
/// counted and set a 64-bit word at a time: a last fragment asks about
/// every block beyond it, up to [`BLOCKS`].
#[derive(Debug)]
struct BlockMap(Box<[u64; WORDS]>);

impl BlockMap {
    fn new() -> BlockMap {
        BlockMap(Box::new([0; WORDS]))
    }

    /// The mask of `range`'s bits within word `w` (`range` non-empty and
    /// touching `w`).
    fn mask(w: usize, range: &std::ops::Range<usize>) -> u64 {
        let lo = range.start.max(w * 64) - w * 64;
        let hi = range.end.min(w * 64 + 64) - w * 64;
        (u64::MAX >> (64 - (hi - lo))) << lo
    }

    /// How many blocks of `range` have arrived.
    fn arrived_in(&self, range: std::ops::Range<usize>) -> usize {
        if range.is_empty() {
            return 0;
        }
        let (first, last) = (range.start / 64, (range.end - 1) / 64);
        let edge = |w: usize| (self.0[w] & Self::mask(w, &range)).count_ones() as usize;
        if first == last {
            return edge(first);
        }
        let inner: u32 = self.0[first + 1..last].iter().map(|w| w.count_ones()).sum();
        edge(first) + inner as usize + edge(last)
    }

    /// Marks every block of `range` as arrived.
    fn set(&mut self, range: std::ops::Range<usize>) {
        if range.is_empty() {
            return;
        }
        for w in range.start / 64..range.end.div_ceil(64) {
            self.0[w] |= Self::mask(w, &range);
        }
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
pub struct Reassembler<B, K: FragmentKey = Key4> {
    config: ReassemblyConfig,
    datagrams: HashMap<K, Datagram<B>>,
    /// The charges of each source's entries (no entry: no source).
    sources: HashMap<K::Source, usize>,
    /// The charges of every entry.
    bytes: usize,
    /// Datagrams started so far (their arrival order).
    arrivals: u64,
    /// Bytes a large buffer holds, once one was taken: a fragment that
    /// cannot fit one is refused before it evicts anything for a place.
    large_room: Option<usize>,
}

impl<B: Buf, K: FragmentKey> Reassembler<B, K> {
    /// An empty table.
    pub fn new(config: ReassemblyConfig) -> Reassembler<B, K> {
        Reassembler {
            datagrams: HashMap::with_capacity(config.max_datagrams),
            sources: HashMap::with_capacity(config.max_datagrams),
            bytes: 0,
            arrivals: 0,
            large_room: None,
            config,
        }
    }

    /// Bytes the entries pin (see [`ReassemblyConfig::max_bytes`]).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Datagrams in reassembly (not counting poisoned keys).
    pub fn len(&self) -> usize {
        self.datagrams.values().filter(|d| d.buf.is_some()).count()
    }

    /// True if the datagram of `key` is in reassembly (not evicted,
    /// expired, completed or poisoned).
    pub fn holds(&self, key: &K) -> bool {
        self.datagrams.get(key).is_some_and(|d| d.buf.is_some())
    }

    /// True if nothing is in reassembly.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds the fragment in `frame` (an Ethernet frame) to its datagram.
    /// Datagrams evicted to make room for a new one are counted in
    /// `counters`; the fragment's own fate is the outcome.
    pub fn add<P: Port<Buf = B>>(
        &mut self,
        port: &mut P,
        frame: &B,
        fragment: Fragment<K>,
        now: Instant,
        counters: &Counters,
    ) -> Reassembly<B> {
        match self.add_fragment(port, frame, &fragment, now, counters) {
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
        counters: &Counters,
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
            if self.large_room.is_some_and(|room| PAYLOAD_AT + end > room) {
                return Err(ReassemblyError::TooBig);
            }
            self.start(port, key, fragment, now, counters)?;
        }
        let datagram = self.datagrams.get_mut(&key).ok_or(ReassemblyError::Full)?;
        if let Err(error) = Self::store(datagram, frame, fragment) {
            match error {
                // The datagram is still whole.
                ReassemblyError::Duplicate => {}
                // RFC 5722: the rest of this datagram is dropped as it comes.
                ReassemblyError::Overlap if K::OVERLAP_POISONS => self.poison(key),
                _ => drop(self.remove(&key)),
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
            ecn,
            ecn_seen,
            ..
        }) = self.remove(&key)
        else {
            return Ok(Reassembly::Pending);
        };
        let ecn = reassembled_ecn(ecn, ecn_seen).ok_or(ReassemblyError::EcnMix)?;
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
            ecn,
        );
        Ok(Reassembly::Complete(buf))
    }

    /// Starts a datagram for `key` in a large buffer, making room for its
    /// charge within the bounds (evicting, counted, as the module
    /// documentation says).
    fn start<P: Port<Buf = B>>(
        &mut self,
        port: &mut P,
        key: K,
        fragment: &Fragment<K>,
        now: Instant,
        counters: &Counters,
    ) -> Result<(), ReassemblyError> {
        let mut buf = match port.alloc_large() {
            Some(buf) => buf,
            None => {
                // The large buffers are gone, perhaps to us: free one.
                self.evict(Eviction::Memory, None, counters)
                    .ok_or(ReassemblyError::Full)?;
                port.alloc_large().ok_or(ReassemblyError::Full)?
            }
        };
        let room = buf.tailroom();
        buf.append(room).ok_or(ReassemblyError::Full)?;
        self.large_room = Some(buf.len());
        if PAYLOAD_AT + fragment.offset + fragment.payload_len > buf.len() {
            return Err(ReassemblyError::TooBig);
        }
        let charge = buf.len() + BOOKKEEPING;
        let source = key.source();
        loop {
            let held = self.sources.get(&source).copied().unwrap_or(0);
            let eviction = if held + charge > self.config.max_source_bytes {
                Eviction::SourceShare
            } else if self.datagrams.len() >= self.config.max_datagrams
                || self.bytes + charge > self.config.max_bytes
            {
                Eviction::Memory
            } else {
                break;
            };
            let only = (eviction == Eviction::SourceShare).then_some(source);
            self.evict(eviction, only, counters)
                .ok_or(ReassemblyError::Full)?;
        }
        self.arrivals += 1;
        let datagram = Datagram {
            buf: Some(buf),
            charge,
            arrival: self.arrivals,
            blocks: BlockMap::new(),
            total: None,
            deadline: now + self.config.timeout,
            ttl: fragment.ttl,
            protocol: fragment.protocol,
            ecn: fragment.ecn,
            ecn_seen: 0,
            first: None,
        };
        self.bytes += charge;
        *self.sources.entry(source).or_insert(0) += charge;
        self.datagrams.insert(key, datagram);
        Ok(())
    }

    /// Evicts the oldest entry of `source`, or (`None`) of the source
    /// holding the most, and counts it (a poisoned key was counted when it
    /// was poisoned). `None` if there was nothing to evict.
    fn evict(
        &mut self,
        eviction: Eviction,
        source: Option<K::Source>,
        counters: &Counters,
    ) -> Option<()> {
        let sources = &self.sources;
        let held = |key: &K| sources.get(&key.source()).copied().unwrap_or(0);
        let victim = (self.datagrams.iter())
            .filter(|(key, _)| source.is_none_or(|s| key.source() == s))
            .max_by_key(|(key, d)| (held(key), core::cmp::Reverse(d.arrival)))
            .map(|(key, _)| *key)?;
        if self.remove(&victim)?.buf.is_some() {
            counters.count_drop(K::eviction_reason(eviction));
        }
        Some(())
    }

    /// Takes `key`'s entry out of the table and its charge off the books.
    fn remove(&mut self, key: &K) -> Option<Datagram<B>> {
        let datagram = self.datagrams.remove(key)?;
        uncharge(
            &mut self.sources,
            &mut self.bytes,
            key.source(),
            datagram.charge,
        );
        Some(datagram)
    }

    /// RFC 5722: the datagram's buffer goes, its key stays until the
    /// deadline, charged its bookkeeping only.
    fn poison(&mut self, key: K) {
        let Some(datagram) = self.datagrams.get_mut(&key) else {
            return;
        };
        datagram.buf = None;
        let freed = datagram.charge - BOOKKEEPING;
        datagram.charge = BOOKKEEPING;
        uncharge(&mut self.sources, &mut self.bytes, key.source(), freed);
    }

    /// Copies the fragment's payload in, or says why it (a duplicate) or
    /// the datagram must be dropped.
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
        let source = frame
            .data()
            .get(fragment.payload_start..fragment.payload_start + fragment.payload_len)
            .ok_or(ReassemblyError::Malformed)?;
        let (first, last) = (fragment.offset / 8, end.div_ceil(8));
        let arrived = datagram.blocks.arrived_in(first..last);
        if arrived != 0 {
            // RFC 5722 with erratum 3089, as Linux: a fragment that only
            // repeats what arrived (every block in, the same end of the
            // datagram, the same bytes) is a duplicate, which networks
            // make; anything else is an overlap.
            let same_end = match (fragment.more, datagram.total) {
                (true, total) => total.is_none_or(|t| end <= t),
                (false, total) => total == Some(end),
            };
            let repeated = arrived == last - first
                && same_end
                && buf.data()[at..at + fragment.payload_len] == *source;
            return Err(if repeated {
                ReassemblyError::Duplicate
            } else {
                ReassemblyError::Overlap
            });
        }
        if !fragment.more {
            if datagram.total.is_some_and(|t| t != end) {
                return Err(ReassemblyError::Overlap);
            }
            // Data already received beyond the end makes the datagram
            // inconsistent (the other order is checked just below).
            let last = end.div_ceil(8);
            if datagram.blocks.arrived_in(last..BLOCKS) != 0 {
                return Err(ReassemblyError::Overlap);
            }
            datagram.total = Some(end);
        }
        if datagram.total.is_some_and(|t| end > t) {
            return Err(ReassemblyError::Overlap);
        }
        datagram.blocks.set(first..last);
        datagram.ecn_seen |= 1 << fragment.ecn as u8;
        if fragment.offset == 0 {
            datagram.protocol = fragment.protocol;
            datagram.ttl = fragment.ttl;
        }
        buf.data_mut()[at..at + fragment.payload_len].copy_from_slice(source);
        Ok(())
    }

    /// Records that `fragment`, the first of its datagram (offset 0), was
    /// stored from `frame` (it came from `origin`): should the datagram
    /// time out, its IP header and payload are quoted by the error.
    pub fn heard_first(&mut self, frame: &B, fragment: &Fragment<K>, origin: Origin) {
        let Some(datagram) = self.datagrams.get_mut(&fragment.key) else {
            return;
        };
        let header = frame.data().get(ETH_LEN..fragment.payload_start);
        let Some(header) = header.filter(|h| h.len() <= FIRST_HEADER_MAX) else {
            return;
        };
        if fragment.offset != 0 || datagram.buf.is_none() {
            return;
        }
        let mut first = First {
            origin,
            header: [0; FIRST_HEADER_MAX],
            header_len: header.len(),
            payload_len: fragment.payload_len,
        };
        first.header[..header.len()].copy_from_slice(header);
        datagram.first = Some(first);
    }

    /// Drops datagrams past their deadline; returns how many (poisoned
    /// keys, already counted as overlaps, are forgotten without a count).
    pub fn expire(&mut self, now: Instant) -> usize {
        self.expire_with(now, |_| {})
    }

    /// [`Self::expire`], handing each dropped datagram whose first fragment
    /// came to `timed_out`, that fragment rebuilt for the error.
    pub fn expire_with(
        &mut self,
        now: Instant,
        mut timed_out: impl FnMut(TimedOut<K, B>),
    ) -> usize {
        let mut expired = 0;
        let (sources, bytes) = (&mut self.sources, &mut self.bytes);
        self.datagrams.retain(|key, d| {
            let keep = now < d.deadline;
            if !keep {
                expired += usize::from(d.buf.is_some());
                uncharge(sources, bytes, key.source(), d.charge);
                if let (Some(buf), Some(first)) = (d.buf.take(), d.first.take()) {
                    if let Some((frame, end)) = rebuild_first(buf, &first) {
                        let origin = first.origin;
                        timed_out(TimedOut {
                            key: *key,
                            frame,
                            end,
                            origin,
                        });
                    }
                }
            }
            keep
        });
        expired
    }
}

/// The first fragment again, in its datagram's buffer `buf` (payload at
/// [`PAYLOAD_AT`]): an Ethernet frame (its Ethernet header unwritten: the
/// error replaces it) with the IP header as received and the payload, and
/// [`ERROR_ROOM`] bytes of headroom; with the end of its IP packet.
fn rebuild_first<B: Buf>(mut buf: B, first: &First) -> Option<(B, usize)> {
    let ip_at = ERROR_ROOM + ETH_LEN;
    let payload_at = ip_at + first.header_len;
    let end = payload_at + first.payload_len;
    let data = buf.data_mut();
    if end > data.len() {
        return None;
    }
    data.copy_within(PAYLOAD_AT..PAYLOAD_AT + first.payload_len, payload_at);
    data[ip_at..payload_at].copy_from_slice(&first.header[..first.header_len]);
    let excess = buf.len() - end;
    if !buf.trim(excess) || !buf.adjust(ERROR_ROOM) {
        return None;
    }
    Some((buf, end - ERROR_ROOM))
}

/// Takes `charge` off the books of the table and of `source` (which is
/// forgotten once it holds nothing: every entry is charged something).
fn uncharge<S: Eq + Hash>(
    sources: &mut HashMap<S, usize>,
    bytes: &mut usize,
    source: S,
    charge: usize,
) {
    *bytes -= charge;
    if let Some(held) = sources.get_mut(&source) {
        *held -= charge;
        if *held == 0 {
            sources.remove(&source);
        }
    }
}

#[cfg(test)]
mod tests;
