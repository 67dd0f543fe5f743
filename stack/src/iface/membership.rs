//! Sockets' multicast group memberships (Linux's `IP_ADD_MEMBERSHIP`,
//! `IPV6_JOIN_GROUP` and their leaves): which socket joined which group on
//! which link, kept per link in `Link::groups4` and
//! `Link::socket_groups6`.
//!
//! - A membership is reference-counted per link by its sockets: the first
//!   join of a group on a link makes the link join it (IGMP or MLD reports
//!   it at the next timer run, `igmp`, `mld`), the last leave makes the
//!   link leave it. Closing a socket leaves all its groups ([`forget`]).
//! - Receive: a datagram to a group goes to the sockets bound to its port
//!   (wildcard or the group address) that joined the group on the link it
//!   came in on (`Link::group_members`, Linux's `inet->mc_list` check with
//!   `IP_MULTICAST_ALL` off). The link's own IPv6 groups (all-nodes,
//!   solicited-node) are heard by every socket on the port, as before.
//! - Bounds: `MAX_GROUPS_PER_SOCKET` per socket (Linux's
//!   `igmp_max_memberships` default), `MAX_GROUPS_PER_LINK` per link and
//!   family: the per-frame MAC filter and the reports stay small.
//!
//! Control path only (joins, leaves, closes), under the shared tables'
//! lock; nothing here runs per packet.

use super::state::{Link, Membership, SharedState};
use crate::port::Buf;
use crate::udp::membership::{GroupLink, JoinError};
use crate::udp::membership::{MAX_GROUPS_PER_LINK, MAX_GROUPS_PER_SOCKET};
use crate::udp::SocketId;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Socket `socket` joins `group` on `on`; returns the link.
pub(crate) fn join<B: Buf>(
    shared: &mut SharedState<B>,
    socket: SocketId,
    group: IpAddr,
    on: GroupLink,
) -> Result<usize, JoinError> {
    let link = resolve(shared, socket, group, on)?;
    let joined: usize = (shared.links.iter())
        .map(|l| count(&l.groups4, socket) + count(&l.socket_groups6, socket))
        .sum();
    let here = &mut shared.links[link];
    let result = match group {
        IpAddr::V4(group) => add(&mut here.groups4, group, socket, joined),
        IpAddr::V6(group) => add(&mut here.socket_groups6, group, socket, joined),
    };
    result.map(|()| link)
}

/// Socket `socket` leaves `group` on `on`; returns the link.
pub(crate) fn leave<B: Buf>(
    shared: &mut SharedState<B>,
    socket: SocketId,
    group: IpAddr,
    on: GroupLink,
) -> Result<usize, JoinError> {
    let link = resolve(shared, socket, group, on)?;
    let here = &mut shared.links[link];
    let left = match group {
        IpAddr::V4(group) => remove(&mut here.groups4, group, socket),
        IpAddr::V6(group) => remove(&mut here.socket_groups6, group, socket),
    };
    left.then_some(link).ok_or(JoinError::NotJoined)
}

/// A closed socket's memberships, all left (before its id is reused).
pub(crate) fn forget<B: Buf>(shared: &mut SharedState<B>, socket: SocketId) {
    for link in &mut shared.links {
        if count(&link.groups4, socket) + count(&link.socket_groups6, socket) == 0 {
            continue; // the common close: no group, no copy of the lists
        }
        forget_in(&mut link.groups4, socket);
        forget_in(&mut link.socket_groups6, socket);
    }
}

/// The groups `socket` joined, with their links (for inspection).
pub(crate) fn groups_of(links: &[Link], socket: SocketId) -> Vec<(usize, IpAddr)> {
    let mut groups = Vec::new();
    for (index, link) in links.iter().enumerate() {
        let v4 = (link.groups4.iter()).filter(|m| m.sockets.contains(&socket));
        groups.extend(v4.map(|m| (index, IpAddr::V4(m.group))));
        let v6 = (link.socket_groups6.iter()).filter(|m| m.sockets.contains(&socket));
        groups.extend(v6.map(|m| (index, IpAddr::V6(m.group))));
    }
    groups
}

fn count<A>(memberships: &[Membership<A>], socket: SocketId) -> usize {
    (memberships.iter())
        .filter(|m| m.sockets.contains(&socket))
        .count()
}

fn forget_in<A>(memberships: &mut Vec<Membership<A>>, socket: SocketId) {
    for m in memberships.iter_mut() {
        m.sockets.retain(|&s| s != socket);
    }
    memberships.retain(|m| !m.sockets.is_empty());
}

fn add<A: PartialEq>(
    memberships: &mut Vec<Membership<A>>,
    group: A,
    socket: SocketId,
    joined: usize,
) -> Result<(), JoinError> {
    let existing = memberships.iter().position(|m| m.group == group);
    if existing.is_some_and(|at| memberships[at].sockets.contains(&socket)) {
        return Err(JoinError::AlreadyJoined);
    }
    if joined >= MAX_GROUPS_PER_SOCKET
        || existing.is_none() && memberships.len() >= MAX_GROUPS_PER_LINK
    {
        return Err(JoinError::TooManyGroups);
    }
    match existing {
        Some(at) => memberships[at].sockets.push(socket),
        None => memberships.push(Membership {
            group,
            sockets: vec![socket],
        }),
    }
    Ok(())
}

fn remove<A: PartialEq>(memberships: &mut Vec<Membership<A>>, group: A, socket: SocketId) -> bool {
    let Some(at) = memberships.iter().position(|m| m.group == group) else {
        return false;
    };
    let sockets = &mut memberships[at].sockets;
    let Some(mine) = sockets.iter().position(|&s| s == socket) else {
        return false;
    };
    sockets.remove(mine);
    if sockets.is_empty() {
        memberships.remove(at);
    }
    true
}

/// Checks a join or leave's arguments and finds its link.
fn resolve<B: Buf>(
    shared: &SharedState<B>,
    socket: SocketId,
    group: IpAddr,
    on: GroupLink,
) -> Result<usize, JoinError> {
    if !group.is_multicast() {
        return Err(JoinError::NotMulticast);
    }
    let local = shared.udp.local_socket_addr(socket);
    let options = shared.udp.options(socket);
    let (Some(local), Some(options)) = (local, options) else {
        return Err(JoinError::NoSocket);
    };
    let hears = match (local, group) {
        (SocketAddr::V4(_), IpAddr::V4(_)) | (SocketAddr::V6(_), IpAddr::V6(_)) => true,
        (SocketAddr::V6(_), IpAddr::V4(_)) => !options.v6_only,
        (SocketAddr::V4(_), IpAddr::V6(_)) => false,
    };
    if !hears {
        return Err(JoinError::WrongFamily);
    }
    let links = &shared.links;
    let runs = |link: &Link| match group {
        IpAddr::V4(_) => true,
        IpAddr::V6(_) => link.ipv6,
    };
    let link = match on {
        GroupLink::Link(link) => link,
        GroupLink::Address(IpAddr::V4(ip)) => (links.iter())
            .position(|l| l.addresses.iter().any(|a| a.addr == ip))
            .ok_or(JoinError::NoSuchLink)?,
        GroupLink::Address(IpAddr::V6(ip)) => (links.iter())
            .position(|l| l.has_address6(ip) || l.is_tentative6(ip))
            .ok_or(JoinError::NoSuchLink)?,
        GroupLink::Default => {
            let routed = match group {
                IpAddr::V4(ip) => route4(shared, ip),
                IpAddr::V6(ip) => route6(shared, ip),
            };
            routed
                .filter(|&l| links.get(l).is_some_and(runs))
                .or_else(|| links.iter().position(runs))
                .ok_or(JoinError::NoSuchLink)?
        }
    };
    match links.get(link) {
        Some(l) if runs(l) => Ok(link),
        _ => Err(JoinError::NoSuchLink),
    }
}

fn route4<B: Buf>(shared: &SharedState<B>, group: Ipv4Addr) -> Option<usize> {
    let hop = shared.ip.v4.routes.next_hop(group)?;
    Some(usize::from(hop.port))
}

fn route6<B: Buf>(shared: &SharedState<B>, group: Ipv6Addr) -> Option<usize> {
    let hop = shared.ip.v6.routes.next_hop(group)?;
    Some(usize::from(hop.port))
}
