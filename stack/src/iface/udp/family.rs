//! What UDP needs to know of an address family ([`UdpFamily`]), so that
//! receive ([`super::input`]), the general reply ([`super::reply`]), send
//! ([`super::send`]) and forward ([`super::forward`]) are written once for
//! IPv4 and IPv6. The implementations are in `v4` and `v6`, beside the
//! family's header writers.
//!
//! Every method is small and `#[inline]`: each generic function is
//! compiled once per family, as if written for it, so the trait costs
//! nothing per packet.

use super::super::next_hop::NextHopAddr;
use super::super::poll::{Arrival, Poll};
use super::super::state::{Core, Link};
use super::super::transmit::SendError;
use crate::port::{Buf, ChecksumStatus, MacAddr, Port};
use crate::udp::table::CachedRoute;
use crate::udp::SocketId;

/// What the IP layer found out about a datagram for us, either family.
#[derive(Debug, Clone, Copy)]
pub(crate) struct UdpIn<A> {
    /// Its sender.
    pub(crate) src: A,
    /// Where it was sent: one of our addresses, a broadcast address or a
    /// group.
    pub(crate) dst: A,
    /// Offset of the UDP header in the frame.
    pub(crate) start: usize,
    /// End of the IP packet in the frame.
    pub(crate) end: usize,
    /// Sent to a broadcast address or a group.
    pub(crate) to_group: bool,
    /// The device's verdict on the UDP checksum.
    pub(crate) l4_checksum: ChecksumStatus,
}

/// An address family as UDP sees it (`Ipv4Addr` or `Ipv6Addr`). See the
/// module documentation.
pub(crate) trait UdpFamily: NextHopAddr + Into<core::net::IpAddr> {
    /// A socket address of the family.
    type SocketAddr: Copy;

    /// Datagrams of this family are marked so ([`crate::udp::Datagram`]).
    const V6: bool;
    /// Length of the IP header the stack writes (no options, no
    /// extension headers).
    const IP_LEN: usize;
    /// Longest UDP datagram the IP length field can carry.
    const MAX_UDP_LEN: usize;
    /// A zero UDP checksum means "none sent" (IPv4, RFC 768); over IPv6 it
    /// is refused (RFC 8200 8.1).
    const ZERO_CHECKSUM_IS_NONE: bool;

    /// A socket address's address and port.
    fn split(addr: Self::SocketAddr) -> (Self, u16);

    /// The MTU a datagram to `dst` over a link of `link_mtu` is sized
    /// against: over IPv4, a learned path MTU (DF is set only on what fits
    /// it, and what does not is fragmented to it); over IPv6, whose
    /// transmit fragments to the path MTU itself, the link's.
    fn send_mtu<B: Buf>(core: &Core<B>, dst: Self, link_mtu: usize) -> usize;

    /// The sum of the UDP pseudo-header for `udp_len` bytes from `src` to
    /// `dst`.
    fn pseudo_header(src: Self, dst: Self, udp_len: u16) -> u64;

    /// The socket a datagram from `src` to `dst` on `link` goes to.
    fn lookup<B: Buf>(
        core: &Core<B>,
        src: (Self, u16),
        dst: (Self, u16),
        link: usize,
    ) -> Option<SocketId>;

    /// Answers a datagram for a closed port, received `at` (link, time),
    /// with the family's port unreachable, reusing its buffer (never for
    /// one sent to a group).
    fn port_unreachable<P: Port>(
        poll: &mut Poll<'_, '_, P>,
        buf: P::Buf,
        arrival: Arrival,
        datagram: &UdpIn<Self>,
    );

    /// The addresses and ports of a received frame whose UDP payload starts
    /// at `payload_start`: ((peer, ours), (peer port, our port)).
    fn addresses(frame: &[u8], payload_start: usize) -> ((Self, Self), (u16, u16));

    /// Our address on `link` to answer `peer` from, when the request went
    /// to a broadcast address or a group.
    fn reply_source(link: &Link, peer: Self) -> Option<Self>;

    /// The address and port `socket` speaks from to this family's peers.
    fn local<B: Buf>(core: &Core<B>, socket: SocketId) -> Result<(Self, u16), SendError>;

    /// The route `socket` keeps to `dst`, if still valid under
    /// `generation`.
    fn kept_route<B: Buf>(
        core: &Core<B>,
        socket: SocketId,
        dst: &Self::SocketAddr,
        generation: u64,
    ) -> Option<CachedRoute<Self>>;

    /// Lets `socket` keep `route` to its latest destination.
    fn keep_route<B: Buf>(core: &mut Core<B>, socket: SocketId, route: CachedRoute<Self>);

    /// The route to `dst`: (link, next hop, the route's source address),
    /// counted as a lookup.
    fn route<B: Buf>(
        core: &mut Core<B>,
        dst: &Self::SocketAddr,
        generation: u64,
    ) -> Option<(usize, Self, Self)>;

    /// The source address of a datagram from a socket bound to `local` to
    /// `dst`, on a route whose source is `route_source`.
    fn source(local: Self, dst: Self, route_source: Self) -> Self;

    /// The Ethernet address of `dst` if it is a group (broadcast, a
    /// subnet's broadcast address, or multicast): no neighbour to resolve.
    fn group_mac<B: Buf>(core: &Core<B>, dst: Self) -> Option<MacAddr>;

    /// Writes the Ethernet source and type, the IP header and the UDP
    /// header with its checksum, from `addresses` ((source, port),
    /// (destination, port)), in front of the payload that fills the rest of
    /// `frame` (the caller sets the Ethernet destination); `link` is our
    /// MAC and the MTU.
    fn write_headers<B: Buf>(
        core: &mut Core<B>,
        frame: &mut [u8],
        addresses: ((Self, u16), (Self, u16)),
        link: (MacAddr, usize),
        tos: u8,
    );

    /// Rewrites the headers of a plain frame (a fixed IP header right
    /// after Ethernet, a verified UDP checksum, no padding) for `src` to
    /// `dst`, updating the UDP checksum incrementally; false, touching
    /// nothing, if `frame` is shorter than the headers.
    fn readdress_plain<B: Buf>(
        core: &mut Core<B>,
        frame: &mut [u8],
        addresses: ((Self, u16), (Self, u16)),
        link: (MacAddr, usize),
        tos: u8,
    ) -> bool;
}
