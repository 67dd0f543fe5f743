//! The types of a socket's multicast group memberships: where a socket
//! joins a group ([`GroupLink`]), why a join or leave fails
//! ([`JoinError`]) and the bounds on memberships. What joining does lives
//! with the links (`iface::membership`); these are here, below both the
//! interface and the queue-mode sockets, so that both can name them.

use core::net::IpAddr;

/// Most groups one socket may join (over all links and both families), as
/// Linux's default `net.ipv4.igmp_max_memberships`.
pub const MAX_GROUPS_PER_SOCKET: usize = 20;

/// Most groups sockets may join on one link, per family.
pub const MAX_GROUPS_PER_LINK: usize = 256;

/// Where a socket joins a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GroupLink {
    /// The link the route to the group leaves by, else the first link of
    /// the group's family (Linux's `imr_ifindex` 0 and `INADDR_ANY`).
    #[default]
    Default,
    /// This link (port index; Linux's interface index).
    Link(usize),
    /// The link that has this local address (Linux's `imr_address`).
    Address(IpAddr),
}

/// Why a join or leave failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinError {
    /// The group is not a multicast address (`EINVAL`).
    NotMulticast,
    /// No such link, no link has that address, or the link does not run
    /// the group's family (`ENODEV`).
    NoSuchLink,
    /// The socket is not bound (closed, or never was).
    NoSocket,
    /// The socket cannot hear the group's family: an IPv4 socket and an
    /// IPv6 group, an IPv6-only socket and an IPv4 group (`ENOPROTOOPT`,
    /// `EINVAL`).
    WrongFamily,
    /// The socket already joined [`MAX_GROUPS_PER_SOCKET`] groups, or the
    /// link [`MAX_GROUPS_PER_LINK`] (`ENOBUFS`).
    TooManyGroups,
    /// The socket already joined this group on this link (`EADDRINUSE`).
    AlreadyJoined,
    /// Leave of a group the socket did not join there (`EADDRNOTAVAIL`).
    NotJoined,
}

impl core::fmt::Display for JoinError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            JoinError::NotMulticast => "not a multicast address",
            JoinError::NoSuchLink => "no such interface (or it does not run that family)",
            JoinError::NoSocket => "no such socket",
            JoinError::WrongFamily => "the socket does not hear that family",
            JoinError::TooManyGroups => "too many groups joined",
            JoinError::AlreadyJoined => "already joined that group there",
            JoinError::NotJoined => "that group was not joined there",
        })
    }
}

impl std::error::Error for JoinError {}
