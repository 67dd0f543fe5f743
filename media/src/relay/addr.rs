//! A socket address in 18 bytes and a family byte kept beside it, for the
//! per-packet cache line of a leg: `SocketAddr` takes 32, and a leg's
//! line 0 holds two addresses (its own peer, to compare sources with, and
//! where its packets go: the other leg's peer) beside its counters.
//!
//! Invariants: [`Compact::new`] refuses what it cannot give back exactly
//! (an IPv6 address with a flow label or a scope id: [`Family::Other`]),
//! so [`Compact::get`] always returns the address it was made from, and
//! two compact addresses with their families are equal exactly when their
//! socket addresses are. The family is kept (an IPv4-mapped IPv6 address
//! is not the IPv4 one).

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

/// What a [`Compact`] holds (a byte, stored beside it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Family {
    /// No address.
    None,
    /// An IPv4 address in the first 4 bytes.
    V4,
    /// An IPv6 address.
    V6,
    /// An address a `Compact` cannot hold (kept elsewhere).
    Other,
}

/// A socket address without its family. See the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct Compact {
    ip: [u8; 16],
    port: u16,
}

impl Compact {
    /// No address.
    pub const NONE: Compact = Compact {
        ip: [0; 16],
        port: 0,
    };

    /// `addr` compacted, and its family.
    #[inline]
    pub fn new(addr: Option<SocketAddr>) -> (Compact, Family) {
        let mut ip = [0u8; 16];
        match addr {
            None => (Compact::NONE, Family::None),
            Some(SocketAddr::V4(a)) => {
                ip[..4].copy_from_slice(&a.ip().octets());
                (Compact { ip, port: a.port() }, Family::V4)
            }
            Some(SocketAddr::V6(a)) if a.flowinfo() == 0 && a.scope_id() == 0 => {
                let c = Compact {
                    ip: a.ip().octets(),
                    port: a.port(),
                };
                (c, Family::V6)
            }
            Some(SocketAddr::V6(_)) => (Compact::NONE, Family::Other),
        }
    }

    /// True if this, of `family`, holds exactly `source`.
    #[inline]
    pub fn is(&self, family: Family, source: &SocketAddr) -> bool {
        // An IPv4 address leaves the other 12 bytes zero (`new`). By
        // reference: a by-value copy of a just-built address reloaded it
        // wider than it was stored (a store-forwarding stall per packet).
        match source {
            SocketAddr::V4(a) => {
                family == Family::V4 && self.port == a.port() && self.ip[..4] == a.ip().octets()
            }
            SocketAddr::V6(a) => {
                family == Family::V6
                    && self.port == a.port()
                    && self.ip == a.ip().octets()
                    && a.flowinfo() == 0
                    && a.scope_id() == 0
            }
        }
    }

    /// True if this, of `family`, holds exactly the IPv4 `source`
    /// ([`Compact::is`] for an IPv4 source, without building a
    /// `SocketAddr`: per packet).
    #[inline]
    pub fn is_v4(&self, family: Family, source: SocketAddrV4) -> bool {
        family == Family::V4 && self.port == source.port() && self.ip[..4] == source.ip().octets()
    }

    /// The address, of `family`, if it is an IPv4 one ([`Compact::get`]
    /// without building a `SocketAddr`: per packet).
    #[inline]
    pub fn get_v4(&self, family: Family) -> Option<SocketAddrV4> {
        if family != Family::V4 {
            return None;
        }
        let [a, b, c, d, ..] = self.ip;
        Some(SocketAddrV4::new(Ipv4Addr::new(a, b, c, d), self.port))
    }

    /// The address, of `family`.
    #[inline]
    pub fn get(&self, family: Family) -> Stored {
        match family {
            Family::V4 => {
                let [a, b, c, d, ..] = self.ip;
                let ip = Ipv4Addr::new(a, b, c, d);
                Stored::Here(Some(SocketAddr::V4(SocketAddrV4::new(ip, self.port))))
            }
            Family::V6 => {
                let ip = Ipv6Addr::from(self.ip);
                Stored::Here(Some(SocketAddr::V6(SocketAddrV6::new(ip, self.port, 0, 0))))
            }
            Family::Other => Stored::Elsewhere,
            Family::None => Stored::Here(None),
        }
    }
}

/// What a [`Compact`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// This address, or none.
    Here(Option<SocketAddr>),
    /// An address it cannot hold: ask where the full one is kept.
    Elsewhere,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_come_back_exactly() {
        let addrs: [SocketAddr; 4] = [
            "10.0.0.2:5004".parse().unwrap(),
            "[2001:db8::2]:6000".parse().unwrap(),
            "[::ffff:10.0.0.2]:5004".parse().unwrap(),
            "0.0.0.0:0".parse().unwrap(),
        ];
        for a in addrs {
            let (c, f) = Compact::new(Some(a));
            assert_eq!(c.get(f), Stored::Here(Some(a)));
            let v4 = match a {
                SocketAddr::V4(v4) => Some(v4),
                SocketAddr::V6(_) => None,
            };
            assert_eq!(c.get_v4(f), v4);
            assert!(c.is(f, &a));
            if let SocketAddr::V4(v4) = a {
                assert!(c.is_v4(f, v4));
            }
            for b in addrs.iter().filter(|b| **b != a) {
                assert!(!c.is(f, b), "{a} is not {b}");
                if let SocketAddr::V4(v4) = b {
                    assert!(!c.is_v4(f, *v4), "{a} is not {b}");
                }
            }
        }
        let (none, f) = Compact::new(None);
        assert_eq!(none.get(f), Stored::Here(None));
        assert_eq!(none.get_v4(f), None);
        assert!(!none.is(f, &addrs[3]));
        let scoped = SocketAddr::V6(SocketAddrV6::new("fe80::1".parse().unwrap(), 5004, 0, 3));
        let (c, f) = Compact::new(Some(scoped));
        assert_eq!((c.get(f), f), (Stored::Elsewhere, Family::Other));
        assert!(!c.is(f, &scoped), "compared elsewhere");
        assert_eq!(std::mem::size_of::<Compact>(), 18);
        assert_eq!(std::mem::align_of::<Compact>(), 2);
    }
}
