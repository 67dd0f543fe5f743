//! Broadcast and multicast fan-out: a datagram to a broadcast address or a
//! group reaches every socket that hears it (Linux's
//! `__udp4_lib_mcast_deliver`, `__udp6_lib_mcast_deliver`), not only the
//! one the lookup picked: [`other_hearers`] lists the others, each of which
//! gets a copy of the frame in a buffer of its own ([`copy`]), so each
//! socket may keep, reply with or forward its datagram.
//!
//! A group that sockets join (every IPv4 group; IPv6 groups but the
//! link's own) is heard only by the sockets that joined it on the link the
//! datagram came in on ([`first_member`] is the one delivery picks).
//!
//! Never on the unicast path. Bounded: at most
//! [`BROADCAST_RECEIVERS`] sockets per datagram, whatever shares the port.

use super::super::state::Core;
use crate::port::{Buf, Port};
use crate::udp::table::{FlowKey, FlowKey6, BROADCAST_RECEIVERS};
use crate::udp::{addresses, addresses6, Datagram, SocketId};
use arrayvec::ArrayVec;
use core::net::{SocketAddrV4, SocketAddrV6};

/// The sockets other than `picked` that hear `datagram` (received for a
/// broadcast address or a group), in the port's chain order, as many as
/// get a copy ([`BROADCAST_RECEIVERS`] with `picked`), and how many more
/// hear it but are left out.
pub(crate) fn other_hearers<B: Buf>(
    core: &Core<B>,
    datagram: &Datagram<B>,
    picked: SocketId,
) -> (ArrayVec<SocketId, { BROADCAST_RECEIVERS - 1 }>, usize) {
    let mut others = ArrayVec::new();
    let mut left_out = 0;
    each_hearer(core, datagram, |socket| {
        if socket != picked && others.try_push(socket).is_err() {
            left_out += 1;
        }
    });
    (others, left_out)
}

/// The first socket, in the port's chain order, that hears `datagram`
/// (received for a group sockets join) among `members`, the group's
/// members on its link.
pub(crate) fn first_member<B: Buf>(
    core: &Core<B>,
    datagram: &Datagram<B>,
    members: &[SocketId],
) -> Option<SocketId> {
    let mut first = None;
    hearers_of(core, datagram, |socket| {
        if first.is_none() && members.contains(&socket) {
            first = Some(socket);
        }
    });
    first
}

/// Calls `take` with each socket that hears `datagram`: every one the
/// table lets hear it, and for a group sockets join, only its members on
/// the datagram's link (`Link::group_members`).
fn each_hearer<B: Buf>(core: &Core<B>, datagram: &Datagram<B>, mut take: impl FnMut(SocketId)) {
    let link = core.shared.links.get(usize::from(datagram.link));
    match link.and_then(|l| l.group_members(datagram.dst().ip())) {
        Some(members) => hearers_of(core, datagram, |socket| {
            if members.contains(&socket) {
                take(socket);
            }
        }),
        None => hearers_of(core, datagram, take),
    }
}

/// Calls `take` with each socket the table lets hear `datagram`.
fn hearers_of<B: Buf>(core: &Core<B>, datagram: &Datagram<B>, mut take: impl FnMut(SocketId)) {
    let (frame, payload) = (datagram.frame(), datagram.payload_range().start);
    let (device, lcore) = (datagram.link, core.lcore.index);
    let table = &core.shared.udp;
    if datagram.v6 {
        let ((src, dst), (src_port, dst_port)) = addresses6(frame, payload);
        let key = FlowKey6 {
            src: SocketAddrV6::new(src, src_port, 0, 0),
            dst: SocketAddrV6::new(dst, dst_port, 0, 0),
            device,
            lcore,
        };
        table.hearers6(&key).for_each(&mut take);
    } else {
        let ((src, dst), (src_port, dst_port)) = addresses(frame, payload);
        let key = FlowKey {
            src: SocketAddrV4::new(src, src_port),
            dst: SocketAddrV4::new(dst, dst_port),
            device,
            lcore,
        };
        table.hearers(&key).for_each(&mut take);
    }
}

/// A copy of `datagram` in a fresh buffer from `port` (a large one for a
/// reassembled datagram that does not fit a regular one), or `None` if the
/// pool has none.
pub(crate) fn copy<P: Port>(port: &mut P, datagram: &Datagram<P::Buf>) -> Option<Datagram<P::Buf>> {
    let frame = datagram.frame();
    if frame.len() != datagram.buf.len() {
        return None; // not a frame of one segment, as the receive path makes
    }
    let mut buf = port.alloc()?;
    if buf.tailroom() < frame.len() {
        buf = port.alloc_large()?;
    }
    buf.append(frame.len())?.copy_from_slice(frame);
    Some(Datagram {
        buf,
        payload_start: datagram.payload_start,
        payload_end: datagram.payload_end,
        plain: false,
        to_broadcast: datagram.to_broadcast,
        link: datagram.link,
        v6: datagram.v6,
        socket: datagram.socket,
        received_at: datagram.received_at,
    })
}
