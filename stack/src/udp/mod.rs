//! UDP: the socket table with Linux's lookup semantics ([`table`]) and the
//! datagram type handed to applications.

pub mod membership;
pub mod table;

pub use membership::{GroupLink, JoinError};
pub use table::{BindError, BindOptions, RouteMemo, SocketId, UdpTable};

use crate::port::Buf;
use crate::time::Instant;
use crate::wire::ethernet::HEADER_LEN as ETH;
use crate::wire::{ipv4, ipv6};
use core::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use core::ops::Range;

/// A received UDP datagram: the whole frame's buffer (zero-copy) and where
/// its payload lies in it. Addresses and ports are read from the frame when
/// asked for ([`Datagram::src`], [`Datagram::dst`]): the frame always holds
/// an Ethernet header, an IPv4 or IPv6 header at byte 14 and the UDP header
/// right before the payload. 40 bytes, moved by value per packet.
#[derive(Debug)]
pub struct Datagram<B: Buf> {
    pub(crate) buf: B,
    /// Where the payload lies in the frame (u32: a reassembled datagram
    /// may end past 65,535; compact, as datagrams move by value per packet).
    pub(crate) payload_start: u32,
    pub(crate) payload_end: u32,
    /// A fast path took it: the frame is Ethernet (to our MAC, from a
    /// unicast one) + a fixed IP header (IPv4: 20 bytes, its packet within
    /// the arriving link's MTU) + UDP + payload and nothing else, its
    /// checksums verified and its payload untouched: a reply may just turn
    /// the headers around, with nothing to look up of the link. Cleared by
    /// [`Datagram::payload_mut`] (the reply then recomputes the checksum).
    pub(crate) plain: bool,
    /// It was sent to a broadcast address: a reply must come from ours.
    pub(crate) to_broadcast: bool,
    /// The link it arrived on (a reply leaves through it).
    pub(crate) link: u16,
    /// It came over IPv6.
    pub(crate) v6: bool,
    /// The socket it was delivered to (set on delivery): a reply or a
    /// forward reads that socket's TOS byte.
    pub(crate) socket: SocketId,
    /// When it was received: the poll's time, read once before the rx
    /// burst (set on delivery).
    pub(crate) received_at: Instant,
}

/// The source address and port of a validated IPv4 frame whose UDP payload
/// starts at `payload_start` (unspecified if it is too short). Per packet
/// for a relay: two loads, not the four of [`addresses`].
#[inline]
fn source_v4(frame: &[u8], payload_start: usize) -> SocketAddrV4 {
    let ip = frame
        .get(26..)
        .and_then(|f| f.first_chunk::<4>())
        .map_or(Ipv4Addr::UNSPECIFIED, |b| Ipv4Addr::from(*b));
    let port = frame
        .get(payload_start.saturating_sub(8)..)
        .and_then(|f| f.first_chunk::<2>())
        .map_or(0, |b| u16::from_be_bytes(*b));
    SocketAddrV4::new(ip, port)
}

/// The (source, destination) addresses and ports of a validated frame whose
/// UDP payload starts at `payload_start` (unspecified if it is too short,
/// which the receive path never lets through).
pub(crate) fn addresses(frame: &[u8], payload_start: usize) -> ((Ipv4Addr, Ipv4Addr), (u16, u16)) {
    addresses_at::<4, _>(frame, payload_start, ETH + ipv4::field::SRC)
}

/// [`addresses`] for an IPv6 frame (the fixed header at byte 14).
pub(crate) fn addresses6(frame: &[u8], payload_start: usize) -> ((Ipv6Addr, Ipv6Addr), (u16, u16)) {
    addresses_at::<16, _>(frame, payload_start, ETH + ipv6::field::SRC)
}

/// [`addresses`] of either family: `N`-byte source address at `src`, the
/// destination right after it as in both IP headers (all zeros, the
/// unspecified address, where the frame is too short).
fn addresses_at<const N: usize, A: From<[u8; N]>>(
    frame: &[u8],
    payload_start: usize,
    src: usize,
) -> ((A, A), (u16, u16)) {
    let ip = |at: usize| {
        A::from(
            frame
                .get(at..at + N)
                .and_then(|b| <[u8; N]>::try_from(b).ok())
                .unwrap_or([0; N]),
        )
    };
    let port = |at: usize| {
        frame
            .get(at..at + 2)
            .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]))
    };
    let udp = payload_start.saturating_sub(8);
    ((ip(src), ip(src + N)), (port(udp), port(udp + 2)))
}

impl<B: Buf> Datagram<B> {
    pub(crate) fn new(buf: B, payload: Range<usize>, to_broadcast: bool, link: u16) -> Self {
        Datagram {
            buf,
            payload_start: payload.start as u32,
            payload_end: payload.end as u32,
            plain: false,
            to_broadcast,
            link,
            v6: false,
            socket: SocketId::UNSET,
            received_at: Instant::ZERO,
        }
    }

    /// The socket it was delivered to.
    pub fn socket(&self) -> SocketId {
        self.socket
    }

    /// When it was received: the time the lcore passed to the poll whose rx
    /// burst brought it (the TSC read once per poll, just before the burst,
    /// on DPDK lcores), so the datagrams of one burst share it. The
    /// equivalent of `SO_TIMESTAMP`, kept in queue mode too (RTP jitter
    /// measures arrival, not the application's read).
    pub fn received_at(&self) -> Instant {
        self.received_at
    }

    /// The sender. Per packet for a relay: inlined, so a caller that only
    /// compares it never builds the address in memory.
    #[inline]
    pub fn src(&self) -> SocketAddr {
        if self.v6 {
            return self.src6();
        }
        SocketAddr::V4(source_v4(self.buf.data(), self.payload_start as usize))
    }

    /// The sender if it came over IPv4 ([`Datagram::src`] without the
    /// `SocketAddr`: per packet for a relay comparing it).
    #[inline]
    pub fn src_v4(&self) -> Option<SocketAddrV4> {
        if self.v6 {
            return None;
        }
        Some(source_v4(self.buf.data(), self.payload_start as usize))
    }

    /// The sender of an IPv6 datagram.
    fn src6(&self) -> SocketAddr {
        let (ip, port) = addresses6(self.buf.data(), self.payload_start as usize);
        SocketAddr::V6(SocketAddrV6::new(ip.0, port.0, 0, 0))
    }

    /// The address it was sent to (one of ours, or a broadcast or multicast
    /// address).
    pub fn dst(&self) -> SocketAddr {
        if self.v6 {
            let (ip, port) = addresses6(self.buf.data(), self.payload_start as usize);
            return SocketAddr::V6(SocketAddrV6::new(ip.1, port.1, 0, 0));
        }
        let (ip, port) = addresses(self.buf.data(), self.payload_start as usize);
        SocketAddr::V4(SocketAddrV4::new(ip.1, port.1))
    }

    /// True if it came over IPv6.
    pub fn is_ipv6(&self) -> bool {
        self.v6
    }

    /// The link (port, in the interface's link order) it arrived on.
    pub fn link(&self) -> usize {
        usize::from(self.link)
    }

    /// The payload bytes.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buf.data()[self.payload_range()]
    }

    /// The payload bytes, writable in place (for a reply with the same
    /// length; the reply then recomputes the checksum).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        self.plain = false;
        let range = self.payload_range();
        &mut self.buf.data_mut()[range]
    }

    /// Where the payload lies in [`Datagram::frame`].
    pub fn payload_range(&self) -> Range<usize> {
        self.payload_start as usize..self.payload_end as usize
    }

    /// The whole frame, headers included.
    pub fn frame(&self) -> &[u8] {
        self.buf.data()
    }

    /// Gives up the datagram, returning its buffer (the whole frame).
    pub fn into_buf(self) -> B {
        self.buf
    }
}

/// An ICMP or ICMPv6 error a peer (or a router on the way) sent about a
/// datagram from a connected socket: the socket's next receive reports it
/// (queue mode) or [`crate::iface::InlineHandler::on_error`] gets it (inline).
/// Only hard errors reach a UDP socket, as in Linux without IP_RECVERR: a
/// network or host unreachable and a time exceeded are soft and not
/// reported (TCP reads them too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerError {
    /// Port unreachable: nobody listens there (`ECONNREFUSED`).
    Refused,
    /// Unreachable for good: protocol unreachable, administratively
    /// prohibited, host or network unknown (`EHOSTUNREACH` and kin; a
    /// TCP connect also hears a plain network or host unreachable).
    Unreachable,
    /// Packet too big: the path carries at most `mtu` bytes (`EMSGSIZE`).
    TooBig {
        /// The path MTU the router reported.
        mtu: u32,
    },
    /// Hop limit (TTL) exceeded on the way, or reassembly timed out there
    /// (soft: TCP reads it, a UDP socket never gets it).
    TimeExceeded,
    /// The peer found a header of ours malformed (`EPROTO`).
    ParameterProblem,
}

impl core::fmt::Display for PeerError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            PeerError::Refused => f.write_str("connection refused (port unreachable)"),
            PeerError::Unreachable => f.write_str("destination unreachable"),
            PeerError::TooBig { mtu } => write!(f, "message too big for the path (MTU {mtu})"),
            PeerError::TimeExceeded => f.write_str("hop limit exceeded on the way"),
            PeerError::ParameterProblem => f.write_str("the peer reported a parameter problem"),
        }
    }
}

impl PeerError {
    /// A compact non-zero encoding (for an atomic).
    pub(crate) fn to_bits(self) -> u64 {
        match self {
            PeerError::Refused => 1,
            PeerError::Unreachable => 2,
            PeerError::TooBig { mtu } => 3 | u64::from(mtu) << 8,
            PeerError::TimeExceeded => 4,
            PeerError::ParameterProblem => 5,
        }
    }

    /// The inverse of [`PeerError::to_bits`]; `None` for 0.
    pub(crate) fn from_bits(bits: u64) -> Option<PeerError> {
        Some(match bits & 0xff {
            1 => PeerError::Refused,
            2 => PeerError::Unreachable,
            3 => PeerError::TooBig {
                mtu: (bits >> 8) as u32,
            },
            4 => PeerError::TimeExceeded,
            5 => PeerError::ParameterProblem,
            _ => return None,
        })
    }
}
