//! IPv4 fragment reassembly with bounded memory and a timeout.
//!
//! Each datagram in reassembly (keyed by source, destination, protocol and
//! identification, RFC 791) owns one large buffer from the port
//! ([`Port::alloc_large`]); fragment payloads are copied into it at their
//! offsets, and a bitmap of 8-byte blocks records what has arrived. When the
//! last fragment is in and no block is missing, the buffer gets a plain
//! Ethernet and IPv4 header and is handed back as one ordinary, unfragmented
//! frame for the normal receive path.
//!
//! Bounds and rules: at most `max_datagrams` in reassembly (further ones are
//! dropped, not evicting older ones, so a flood of bogus first fragments
//! cannot push out real traffic); a datagram not completed within `timeout`
//! is dropped; overlapping fragments drop the whole datagram (as Linux does
//! since FragmentSmack); non-final fragments must carry a multiple of 8
//! bytes. The table is keyed with a randomly seeded hash (peers choose the
//! keys) and its capacity is reserved up front. Slow path; owning lcore only.

use crate::counters::DropReason;
use crate::port::{Buf, Port};
use crate::time::{Duration, Instant};
use crate::wire::ethernet::HEADER_LEN as ETH_LEN;
use crate::wire::ipv4::{Ipv4Header, Ipv4Packet, HEADER_LEN as IP_LEN};
use core::net::Ipv4Addr;
use std::collections::HashMap;

/// Largest IPv4 payload.
const MAX_PAYLOAD: usize = 65535 - IP_LEN;
/// 8-byte blocks in the largest payload.
const BLOCKS: usize = MAX_PAYLOAD.div_ceil(8);
const WORDS: usize = BLOCKS.div_ceil(64);

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

/// One fragment, as the IPv4 layer parsed it.
#[derive(Debug, Clone, Copy)]
pub struct Fragment {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// Payload protocol.
    pub protocol: u8,
    /// Identification.
    pub ident: u16,
    /// Byte offset of this fragment's payload in the datagram.
    pub offset: usize,
    /// More fragments follow.
    pub more: bool,
    /// Where the payload starts in the frame.
    pub payload_start: usize,
    /// Payload length.
    pub payload_len: usize,
    /// TTL of the fragment.
    pub ttl: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    src: Ipv4Addr,
    dst: Ipv4Addr,
    protocol: u8,
    ident: u16,
}

#[derive(Debug)]
struct Datagram<B> {
    buf: B,
    blocks: Box<[u64; WORDS]>,
    /// Payload length, known once the last fragment arrived.
    total: Option<usize>,
    deadline: Instant,
    ttl: u8,
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

/// The reassembly table. See the module documentation.
#[derive(Debug)]
pub struct Reassembler<B> {
    config: ReassemblyConfig,
    datagrams: HashMap<Key, Datagram<B>>,
}

impl<B: Buf> Reassembler<B> {
    /// An empty table.
    pub fn new(config: ReassemblyConfig) -> Reassembler<B> {
        Reassembler {
            datagrams: HashMap::with_capacity(config.max_datagrams),
            config,
        }
    }

    /// Datagrams in reassembly.
    pub fn len(&self) -> usize {
        self.datagrams.len()
    }

    /// True if nothing is in reassembly.
    pub fn is_empty(&self) -> bool {
        self.datagrams.is_empty()
    }

    /// Adds the fragment in `frame` (an Ethernet frame) to its datagram.
    pub fn add<P: Port<Buf = B>>(
        &mut self,
        port: &mut P,
        frame: &B,
        fragment: Fragment,
        now: Instant,
    ) -> Reassembly<B> {
        let end = fragment.offset + fragment.payload_len;
        if fragment.more && fragment.payload_len % 8 != 0 || fragment.payload_len == 0 {
            return Reassembly::Dropped(DropReason::Ipv4FragmentMalformed);
        }
        if end > MAX_PAYLOAD {
            return Reassembly::Dropped(DropReason::Ipv4ReassemblyTooBig);
        }
        let key = Key {
            src: fragment.src,
            dst: fragment.dst,
            protocol: fragment.protocol,
            ident: fragment.ident,
        };
        if !self.datagrams.contains_key(&key) {
            if self.datagrams.len() >= self.config.max_datagrams {
                return Reassembly::Dropped(DropReason::Ipv4ReassemblyFull);
            }
            let Some(mut buf) = port.alloc_large() else {
                return Reassembly::Dropped(DropReason::Ipv4ReassemblyFull);
            };
            let room = buf.tailroom();
            if buf.append(room).is_none() {
                return Reassembly::Dropped(DropReason::Ipv4ReassemblyFull);
            }
            let datagram = Datagram {
                buf,
                blocks: Box::new([0; WORDS]),
                total: None,
                deadline: now + self.config.timeout,
                ttl: fragment.ttl,
            };
            self.datagrams.insert(key, datagram);
        }
        let Some(datagram) = self.datagrams.get_mut(&key) else {
            return Reassembly::Dropped(DropReason::Ipv4ReassemblyFull);
        };
        let verdict = Self::store(datagram, frame, &fragment);
        if let Some(reason) = verdict {
            self.datagrams.remove(&key);
            return Reassembly::Dropped(reason);
        }
        if !datagram.is_complete() {
            return Reassembly::Pending;
        }
        let Some(mut done) = self.datagrams.remove(&key) else {
            return Reassembly::Pending;
        };
        let total = done.total.unwrap_or(0);
        let excess = done.buf.len().saturating_sub(ETH_LEN + IP_LEN + total);
        done.buf.trim(excess);
        let data = done.buf.data_mut();
        data[..ETH_LEN].copy_from_slice(&frame.data()[..ETH_LEN]);
        Ipv4Packet::new_unchecked(&mut data[ETH_LEN..]).emit_header(&Ipv4Header {
            src: key.src,
            dst: key.dst,
            protocol: key.protocol,
            payload_len: total as u16,
            ttl: done.ttl,
            ident: key.ident,
            dont_fragment: false,
        });
        Reassembly::Complete(done.buf)
    }

    /// Copies the fragment's payload in; returns why the datagram must be
    /// dropped, if it must.
    fn store(datagram: &mut Datagram<B>, frame: &B, fragment: &Fragment) -> Option<DropReason> {
        let end = fragment.offset + fragment.payload_len;
        let at = ETH_LEN + IP_LEN + fragment.offset;
        if at + fragment.payload_len > datagram.buf.len() {
            return Some(DropReason::Ipv4ReassemblyTooBig);
        }
        if !fragment.more {
            if datagram.total.is_some_and(|t| t != end) {
                return Some(DropReason::Ipv4ReassemblyOverlap);
            }
            datagram.total = Some(end);
        }
        if datagram.total.is_some_and(|t| end > t) {
            return Some(DropReason::Ipv4ReassemblyOverlap);
        }
        let (first, last) = (fragment.offset / 8, end.div_ceil(8));
        if (first..last).any(|b| datagram.blocks[b / 64] & (1 << (b % 64)) != 0) {
            return Some(DropReason::Ipv4ReassemblyOverlap);
        }
        for b in first..last {
            datagram.blocks[b / 64] |= 1 << (b % 64);
        }
        let source =
            &frame.data()[fragment.payload_start..fragment.payload_start + fragment.payload_len];
        datagram.buf.data_mut()[at..at + fragment.payload_len].copy_from_slice(source);
        None
    }

    /// Drops datagrams past their deadline; returns how many.
    pub fn expire(&mut self, now: Instant) -> usize {
        let before = self.datagrams.len();
        self.datagrams.retain(|_, d| now < d.deadline);
        before - self.datagrams.len()
    }
}

#[cfg(test)]
mod tests;
