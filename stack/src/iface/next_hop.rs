//! Sending a finished frame to its next hop on a link, IPv4 and IPv6
//! alike: the link's neighbour cache gives the MAC, or keeps the frame in
//! the neighbour's bounded queue while a request (ARP, or a Neighbor
//! Discovery solicitation) is out; once the neighbour answers, the frames
//! that waited for it leave. A next hop that is one of our own addresses
//! is refused (`SendError::OwnAddress`): the stack has no loopback, and no
//! request ever asks the link for our own MAC.
//!
//! The packet path reads the link's neighbour view in the shared snapshot;
//! only a neighbour that is unknown, unresolved or stale takes the shared
//! tables' lock, where the cache itself decides (and keeps the frame).
//!
//! The family-specific parts (which cache, how to ask, how to transmit)
//! are the [`NextHopAddr`] implementations of `Ipv4Addr` (in `arp`) and
//! `Ipv6Addr` (in `nd`), beside the ARP request and the solicitation they
//! send, so that this module depends on neither family.
//! Not per packet in the steady state: a socket or connection remembers
//! its next hop's MAC and sends without asking the cache.

use super::transmit::{set_destination_mac, Out, SendError};
use super::LinkNeighbors;
use super::{Core, Link};
use crate::counters::DropReason;
use crate::neighbor::{NeighborAddr, NeighborCache, NeighborState, NeighborView, Resolution};
use crate::port::{Buf, MacAddr, Port};
use crate::time::Instant;

/// An address family whose next hops a link's neighbour cache resolves.
pub(super) trait NextHopAddr: NeighborAddr {
    /// The link's neighbour cache for this family.
    fn cache<B>(caches: &mut LinkNeighbors<B>) -> &mut NeighborCache<B, Self>;

    /// What the packet path reads of the link's neighbours of this family.
    fn view(link: &Link) -> &NeighborView<Self>;

    /// True if `ip` is one of our addresses, as seen from `link`.
    fn is_ours<B: Buf>(core: &Core<B>, link: usize, ip: Self) -> bool;

    /// Asks the link who has `target`: an ARP request from `source`, or a
    /// neighbour solicitation (whose source follows the target's prefix,
    /// RFC 4861 7.2.2).
    fn ask<P: Port>(
        core: &mut Core<P::Buf>,
        out: &mut Out<'_, P>,
        link: usize,
        source: Self,
        target: Self,
    );

    /// Sends a frame whose Ethernet header is complete out of `link`
    /// (fragmented if it exceeds the MTU).
    fn transmit<P: Port>(
        core: &mut Core<P::Buf>,
        out: &mut Out<'_, P>,
        link: usize,
        buf: P::Buf,
    ) -> Result<(), SendError>;
}

/// Sends the frame in `buf` to the neighbour `via` on `link`, asking for
/// its MAC (from our `source`) if the cache does not know it. Returns the
/// MAC when the frame left now (for the caller to remember), `None` when
/// it waits; a full wait queue drops it, counted.
pub(super) fn send_to_neighbor<P: Port, A: NextHopAddr>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    link: usize,
    (source, via): (A, A),
    buf: P::Buf,
) -> Result<Option<MacAddr>, SendError> {
    if let Some((Some(mac), state)) = A::view(&core.shared.links[link]).get(via) {
        if state != NeighborState::Stale {
            let mut buf = buf;
            set_destination_mac(&mut buf, mac);
            A::transmit(core, out, link, buf)?;
            return Ok(Some(mac));
        }
    }
    // Only an unknown next hop gets here, so the test costs the steady
    // state nothing.
    if A::is_ours(core, link, via) {
        core.lcore.counters.count_drop(DropReason::TxOwnAddress);
        return Err(SendError::OwnAddress);
    }
    let resolution = core
        .shared
        .edit_neighbors(|shared| A::cache(&mut shared.neighbors[link]).resolve(via, buf, now));
    match resolution {
        Resolution::Ready(mut buf, mac) => {
            set_destination_mac(&mut buf, mac);
            A::transmit(core, out, link, buf)?;
            Ok(Some(mac))
        }
        Resolution::QueuedSendRequest => {
            A::ask(core, out, link, source, via);
            Ok(None)
        }
        Resolution::Queued => Ok(None),
        Resolution::Full(_) => {
            core.lcore
                .counters
                .count_drop(DropReason::TxNeighborUnresolved);
            Err(SendError::NeighborUnresolved)
        }
    }
}

/// Sends the frames that waited for a neighbour of family `A` on `link`,
/// now that its MAC is known.
pub(super) fn release_waiting<P: Port, A: NextHopAddr>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    waiting: impl IntoIterator<Item = P::Buf>,
    mac: MacAddr,
) {
    for mut buf in waiting {
        set_destination_mac(&mut buf, mac);
        let _ = A::transmit(core, out, link, buf); // failures are counted inside
    }
}
