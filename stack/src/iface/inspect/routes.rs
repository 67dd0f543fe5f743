//! Routes: every route of the IPv4 and IPv6 tables as [`RouteInfo`], and
//! on-link IPv6 routes added at run time.

use super::Prefix;
use crate::iface::{routes, ConfigError, Core, Interface};
use crate::port::Buf;
use crate::route::{Ipv4Cidr, Ipv6Cidr};
use core::net::IpAddr;

/// One route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteInfo {
    /// The destination prefix (host bits clear).
    pub prefix: Prefix,
    /// The next hop, or `None` for an on-link prefix.
    pub gateway: Option<IpAddr>,
    /// The link packets leave through.
    pub link: usize,
    /// The source address packets taking it get.
    pub source: IpAddr,
    /// The prefix of one of the interface's own addresses (installed with
    /// it, removed with it).
    pub connected: bool,
}

impl<B: Buf> Interface<B> {
    /// Adds (or replaces) an IPv6 route that sends `prefix` straight out of
    /// `link` (its hosts answer Neighbor Discovery there).
    pub fn add_link_route6(&mut self, prefix: Ipv6Cidr, link: usize) -> Result<(), ConfigError> {
        (self.core.shared).edit(|shared| routes::add_link_route6(shared, prefix, link))
    }

    /// Every route of the IPv4 and IPv6 tables: IPv4 first, each family's
    /// default first, then by destination and prefix length.
    pub fn route_list(&self) -> Vec<RouteInfo> {
        let core = &self.core;
        let v4 = core.shared.ip.v4.routes.iter().map(|r| {
            let prefix = Ipv4Cidr {
                addr: r.prefix.network(),
                len: r.prefix.len,
            };
            RouteInfo {
                prefix: Prefix::V4(prefix),
                gateway: r.gateway.map(IpAddr::V4),
                link: usize::from(r.port),
                source: IpAddr::V4(r.source),
                connected: r.gateway.is_none() && connected4(core, usize::from(r.port), prefix),
            }
        });
        let v6 = core.shared.ip.v6.routes.iter().map(|r| {
            let prefix = Prefix::V6(r.prefix).network();
            RouteInfo {
                prefix,
                gateway: r.gateway.map(IpAddr::V6),
                link: usize::from(r.port),
                source: IpAddr::V6(r.source),
                connected: r.gateway.is_none() && connected6(core, usize::from(r.port), prefix),
            }
        });
        let mut routes: Vec<RouteInfo> = v4.chain(v6).collect();
        routes.sort_by_key(|r| {
            let bits = match r.prefix.addr() {
                IpAddr::V4(a) => u128::from(a.to_bits()),
                IpAddr::V6(a) => a.to_bits(),
            };
            let len = r.prefix.prefix_len();
            (r.prefix.addr().is_ipv6(), len != 0, bits, len)
        });
        routes
    }
}

/// True if `prefix` is the network of one of `link`'s IPv4 addresses.
fn connected4<B: Buf>(core: &Core<B>, link: usize, prefix: Ipv4Cidr) -> bool {
    (core.shared.links.get(link)).is_some_and(|l| {
        (l.addresses.iter()).any(|a| a.len == prefix.len && a.network() == prefix.addr)
    })
}

/// True if `prefix` is the network of one of `link`'s IPv6 addresses.
fn connected6<B: Buf>(core: &Core<B>, link: usize, prefix: Prefix) -> bool {
    (core.shared.links.get(link))
        .is_some_and(|l| (l.addresses6.iter()).any(|&a| Prefix::V6(a).network() == prefix))
}
