//! What TCP's endpoint asks of the IP layer below it: [`SegmentOut`].
//!
//! The endpoint frames segments (TCP header and checksum) and hands them
//! down; the layer below adds the IP and Ethernet headers, picks the link by
//! route and the next hop's MAC by neighbour cache. The endpoint never sees
//! a link's configuration or the route tables: it learns a route's link and
//! our address on it ([`PeerRoute`]), the MTU towards a peer, and keeps an
//! opaque next hop per connection ([`SegmentOut::Hop`]) that lets its later
//! segments skip both lookups while it stays valid.
//!
//! The endpoint is generic over the implementation (monomorphised): no
//! segment goes through a `dyn` call. The implementation lives in
//! `iface/ip_out.rs`.

use crate::counters::Counters;
use crate::port::{Buf, ChecksumStatus};
use crate::time::Instant;
use crate::wire::Ecn;
use core::net::IpAddr;

/// Where the route to a peer leaves, and from which of our addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PeerRoute {
    /// The link (port) packets to the peer leave through.
    pub(crate) link: usize,
    /// Our address on that route.
    pub(crate) source: IpAddr,
}

/// The IP layer as TCP's endpoint uses it (see the module documentation).
pub(crate) trait SegmentOut {
    /// The packet buffers of the links.
    type Buf: Buf;
    /// A next hop a connection remembers: its link and the neighbour's MAC,
    /// valid until a route or neighbour changes.
    type Hop: Copy;

    /// The lcore's counters.
    fn counters(&self) -> &Counters;

    /// Whether a received segment's checksum is accepted: the device's
    /// verdict in `offload` where the interface's policy trusts it, else
    /// `verify()`.
    fn checksum_ok(&self, offload: ChecksumStatus, verify: impl FnOnce() -> bool) -> bool;

    /// The route from `local` to `remote` (`scope`: the link of a
    /// link-local IPv6 peer); an unspecified `local` takes the route's own
    /// source address. `None` without a route.
    fn route(&mut self, local: IpAddr, remote: IpAddr, scope: u32) -> Option<PeerRoute>;

    /// The MTU towards `remote` over `link`: the link's, or the path MTU
    /// learned to the peer if smaller. `None` for no such link.
    fn path_mtu(&self, link: usize, remote: IpAddr) -> Option<usize>;

    /// Records a path MTU to `remote` (from an ICMP error about a segment).
    fn learn_path_mtu(&mut self, remote: IpAddr, mtu: usize, now: Instant);

    /// A fresh buffer from `link`'s pool, or, with no link (no route), from
    /// any pool: a segment that cannot leave is still made, so the
    /// connection's timers run.
    fn alloc(&mut self, link: Option<usize>) -> Option<Self::Buf>;

    /// The link `hop` leaves through.
    fn hop_link(hop: &Self::Hop) -> usize;

    /// Sends the segment that is all of `buf` (checksum filled) from
    /// `ends.0` to `ends.1` (`ends.2`: a link-local peer's scope) by route
    /// and neighbour, `ecn` in its IP header's ECN field; returns the next
    /// hop to remember when its MAC was known (`None` too when the send
    /// failed, counted).
    fn send(
        &mut self,
        now: Instant,
        ends: (IpAddr, IpAddr, u32),
        ecn: Ecn,
        buf: Self::Buf,
    ) -> Option<Self::Hop>;

    /// Sends the segment in `buf` (checksum filled) from `ends.0` to
    /// `ends.1` through `hop` if it is still valid, with no route or neighbour lookup, `ecn` in its
    /// IP header's ECN field; hands `buf` back if it is not.
    fn send_cached(
        &mut self,
        hop: Self::Hop,
        ends: (IpAddr, IpAddr),
        ecn: Ecn,
        buf: Self::Buf,
    ) -> Result<(), Self::Buf>;
}
