//! Route changes on the shared state, written once for the two ways in:
//! an [`Interface`](super::Interface) (its own thread) and a
//! [`StackControl`] (any thread). Each runs under the shared tables' lock
//! on the authoritative copy, so the link it picks and the route it adds
//! are checked against the same state, which no other writer changes
//! meanwhile; the change is published when the lock is let go.

use super::config::ConfigError;
use super::state::{Master, SharedState};
use super::tables::Tables;
use crate::port::Buf;
use crate::route::{Ipv4Cidr, Ipv6Cidr, Route, Route6};
use core::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

/// Adds (or replaces) a static route to `prefix` through `gateway`, which
/// must be on a link's connected network (that link carries it) and not
/// one of our own addresses.
pub(super) fn add_route<B: Buf>(
    shared: &mut SharedState<B>,
    prefix: Ipv4Cidr,
    gateway: Ipv4Addr,
) -> Result<(), ConfigError> {
    if shared.local.contains(&gateway) {
        return Err(ConfigError::GatewayIsOurs(gateway.into()));
    }
    let link = (shared.links.iter())
        .position(|l| l.on_link(gateway))
        .ok_or(ConfigError::GatewayNotOnLink(gateway))?;
    let source = shared.links[link].source_for(gateway);
    shared.ip.v4.routes.add(Route {
        prefix,
        gateway: Some(gateway),
        port: link as u16,
        source,
    });
    Ok(())
}

/// Adds (or replaces) a route that sends `prefix` straight out of `link`.
pub(super) fn add_link_route<B: Buf>(
    shared: &mut SharedState<B>,
    prefix: Ipv4Cidr,
    link: usize,
) -> Result<(), ConfigError> {
    let source = (shared.links.get(link))
        .ok_or(ConfigError::NoSuchLink(link))?
        .source_for(prefix.addr);
    shared.ip.v4.routes.add(Route {
        prefix,
        gateway: None,
        port: link as u16,
        source,
    });
    Ok(())
}

/// Adds (or replaces) a static IPv6 route to `prefix` through `gateway`: a
/// global gateway must be on a link's prefix (that link carries it); a
/// link-local one needs its `link` unless only one link runs IPv6. Either
/// must be another host's address, not one of that link's own.
pub(super) fn add_route6<B: Buf>(
    shared: &mut SharedState<B>,
    prefix: Ipv6Cidr,
    gateway: Ipv6Addr,
    link: Option<usize>,
) -> Result<(), ConfigError> {
    let links = &shared.links;
    if let Some(l) = link {
        if links.get(l).is_none_or(|k| !k.ipv6) {
            return Err(ConfigError::NoSuchLink(l));
        }
    }
    let link = if gateway.is_unicast_link_local() {
        let mut ipv6 = (0..links.len()).filter(|&l| links[l].ipv6);
        match (link, ipv6.next(), ipv6.next()) {
            (Some(l), _, _) => l,
            (None, Some(only), None) => only,
            _ => return Err(ConfigError::Gateway6NotOnLink(gateway)),
        }
    } else {
        let on = (0..links.len())
            .find(|&l| links[l].on_link6(gateway) && link.is_none_or(|given| given == l));
        on.ok_or(ConfigError::Gateway6NotOnLink(gateway))?
    };
    if links[link].has_address6(gateway) || links[link].is_tentative6(gateway) {
        return Err(ConfigError::GatewayIsOurs(gateway.into()));
    }
    let source = links[link]
        .route_source6()
        .ok_or(ConfigError::Gateway6NotOnLink(gateway))?;
    if prefix.len == 0 {
        shared.ra_default = None; // a static default beats advertised ones
    }
    shared.ip.v6.routes.add(Route6 {
        prefix,
        gateway: Some(gateway),
        port: link as u16,
        source,
    });
    Ok(())
}

/// Adds (or replaces) an IPv6 route that sends `prefix` straight out of
/// `link`.
pub(super) fn add_link_route6<B: Buf>(
    shared: &mut SharedState<B>,
    prefix: Ipv6Cidr,
    link: usize,
) -> Result<(), ConfigError> {
    let source = (shared.links.get(link))
        .filter(|l| l.ipv6)
        .ok_or(ConfigError::NoSuchLink(link))?
        .route_source6()
        .ok_or(ConfigError::BadAddress6(prefix.addr))?;
    if prefix.len == 0 {
        shared.ra_default = None; // a static default beats advertised ones
    }
    shared.ip.v6.routes.add(Route6 {
        prefix,
        gateway: None,
        port: link as u16,
        source,
    });
    Ok(())
}

/// Removes the IPv6 route to `prefix`; the default route, if a router
/// advertised it, is then forgotten as advertised (the router's next
/// advertisement installs it again, its expiry removes nothing else).
pub(super) fn remove_route6<B: Buf>(shared: &mut SharedState<B>, prefix: Ipv6Cidr) -> bool {
    if prefix.len == 0 {
        shared.ra_default = None;
    }
    shared.ip.v6.routes.remove(prefix)
}

/// Changes the routes of a running stack from any thread (an application's,
/// a control plane's), as the console changes them through its lcore: each
/// change takes the shared tables' lock and publishes at once; every
/// pipeline follows it from its next poll, without a stop. Made by
/// [`Interface::control`](super::Interface::control); clone it freely.
#[derive(Debug)]
pub struct StackControl<B: Buf> {
    tables: Arc<Tables<Master<B>>>,
}

impl<B: Buf> Clone for StackControl<B> {
    fn clone(&self) -> Self {
        StackControl {
            tables: Arc::clone(&self.tables),
        }
    }
}

impl<B: Buf> StackControl<B> {
    pub(super) fn new(tables: Arc<Tables<Master<B>>>) -> StackControl<B> {
        StackControl { tables }
    }

    fn edit<R>(&self, write: impl FnOnce(&mut SharedState<B>) -> R) -> R {
        self.tables.edit(|master| write(master)).0
    }

    /// [`Interface::add_route`](super::Interface::add_route).
    pub fn add_route(&self, prefix: Ipv4Cidr, gateway: Ipv4Addr) -> Result<(), ConfigError> {
        self.edit(|shared| add_route(shared, prefix, gateway))
    }

    /// [`Interface::add_link_route`](super::Interface::add_link_route).
    pub fn add_link_route(&self, prefix: Ipv4Cidr, link: usize) -> Result<(), ConfigError> {
        self.edit(|shared| add_link_route(shared, prefix, link))
    }

    /// [`Interface::remove_route`](super::Interface::remove_route).
    pub fn remove_route(&self, prefix: Ipv4Cidr) -> bool {
        self.edit(|shared| shared.ip.v4.routes.remove(prefix))
    }

    /// [`Interface::add_route6`](super::Interface::add_route6).
    pub fn add_route6(
        &self,
        prefix: Ipv6Cidr,
        gateway: Ipv6Addr,
        link: Option<usize>,
    ) -> Result<(), ConfigError> {
        self.edit(|shared| add_route6(shared, prefix, gateway, link))
    }

    /// [`Interface::remove_route6`](super::Interface::remove_route6).
    pub fn remove_route6(&self, prefix: Ipv6Cidr) -> bool {
        self.edit(|shared| remove_route6(shared, prefix))
    }

    /// A number that moves on whenever the published shared state changes
    /// (routes, neighbours, sockets, group memberships): one atomic load,
    /// for a control thread that polls [`StackControl::multicast_macs`] to
    /// skip the read while nothing changed.
    pub fn generation(&self) -> u64 {
        self.tables.published_generation()
    }

    /// [`Interface::multicast_macs`](super::Interface::multicast_macs), as
    /// published now: what a device's multicast filter should pass on
    /// link `link` (from any thread; a driver's control thread compares it
    /// with what it programmed).
    pub fn multicast_macs(&self, link: usize) -> Vec<crate::port::MacAddr> {
        let shared = self.tables.latest();
        (shared.links.get(link)).map_or_else(Vec::new, |l| l.multicast_macs())
    }

    /// The route `dst` takes now: (link, next hop, source address).
    pub fn route_to(&self, dst: Ipv4Addr) -> Option<(usize, Ipv4Addr, Ipv4Addr)> {
        let shared = self.tables.latest();
        let hop = shared.ip.v4.routes.next_hop(dst)?;
        Some((usize::from(hop.port), hop.via, hop.source))
    }
}
