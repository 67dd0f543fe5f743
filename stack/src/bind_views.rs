//! Which traffic a bound address hears, and when two bindings of one port
//! collide: Linux's rules for IPv4, IPv6, dual-stack `[::]`, IPV6_V6ONLY
//! and IPv4-mapped addresses, shared by UDP binds and TCP listens (the
//! kernel applies one rule, `inet_rcv_saddr_equal`, to both).
//!
//! Invariants: addresses are compared as keys ([`key_of`]): IPv4 in its
//! IPv4-mapped IPv6 form, the unspecified address of either family as 0;
//! [`overlap`] is symmetric (as this kernel's binds are, checked by the
//! lookup oracle).

use core::net::IpAddr;

/// An address as the table compares it: IPv4 in its IPv4-mapped IPv6 form,
/// the unspecified address of either family as 0 (ANY).
#[inline]
pub(crate) fn key_of(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) if v4.is_unspecified() => 0,
        IpAddr::V4(v4) => v4.to_ipv6_mapped().to_bits(),
        IpAddr::V6(v6) => v6.to_bits(),
    }
}

/// True for an IPv4-mapped key (`::ffff:a.b.c.d`).
#[inline]
pub(crate) fn is_mapped(key: u128) -> bool {
    key >> 32 == 0xffff
}

/// The traffic a binding receives: IPv4 at one key (0: ANY) and/or IPv6 at
/// one key. An IPv4 socket hears IPv4 only; an IPv6 socket bound to `::`
/// hears both unless v6-only; one bound to an IPv4-mapped address hears
/// IPv4 only; one bound to any other IPv6 address hears IPv6 only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Views {
    pub(crate) v4: Option<u128>,
    pub(crate) v6: Option<u128>,
}

pub(crate) fn views(local: u128, v6_socket: bool, v6_only: bool) -> Views {
    match (v6_socket, local) {
        (false, _) => Views {
            v4: Some(local),
            v6: None,
        },
        (true, 0) => Views {
            v4: (!v6_only).then_some(0),
            v6: Some(0),
        },
        (true, l) if is_mapped(l) => Views {
            v4: Some(l),
            v6: None,
        },
        (true, l) => Views {
            v4: None,
            v6: Some(l),
        },
    }
}

/// True if two bindings of one port claim some of the same traffic.
pub(crate) fn overlap(a: Views, b: Views) -> bool {
    let same = |x: Option<u128>, y: Option<u128>| match (x, y) {
        (Some(x), Some(y)) => x == y || x == 0 || y == 0,
        _ => false,
    };
    same(a.v4, b.v4) || same(a.v6, b.v6)
}
