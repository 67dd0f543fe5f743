//! Addresses: the [`Prefix`] type of either family, the list of every
//! link's addresses with their state, and addresses added and removed at
//! run time.
//!
//! Invariant: an address change keeps the interface's derived state
//! consistent (the local-address set and broadcast classes, connected
//! routes, IPv6 groups and duplicate address detection), exactly as if the
//! address had been in the configuration from the start.

use crate::iface::{
    add_on_link_route6, special_addresses, special_bit, ConfigError, Interface, Link, SharedState,
    Tentative, ALL_NODES,
};
use crate::port::Buf;
use crate::route::{Ipv4Cidr, Ipv6Cidr, Route};
use crate::wire::ipv6::solicited_node;
use core::net::{IpAddr, Ipv6Addr};

/// An address with its prefix length, of either family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prefix {
    /// IPv4.
    V4(Ipv4Cidr),
    /// IPv6.
    V6(Ipv6Cidr),
}

impl Prefix {
    /// The address.
    pub fn addr(self) -> IpAddr {
        match self {
            Prefix::V4(c) => IpAddr::V4(c.addr),
            Prefix::V6(c) => IpAddr::V6(c.addr),
        }
    }

    /// The prefix length.
    pub fn prefix_len(self) -> u8 {
        match self {
            Prefix::V4(c) => c.len,
            Prefix::V6(c) => c.len,
        }
    }

    /// The prefix with the host bits cleared (`10.0.0.0/24` for
    /// `10.0.0.1/24`).
    pub fn network(self) -> Prefix {
        match self {
            Prefix::V4(c) => Prefix::V4(Ipv4Cidr {
                addr: c.network(),
                len: c.len,
            }),
            Prefix::V6(c) => Prefix::V6(Ipv6Cidr {
                addr: Ipv6Addr::from_bits(c.addr.to_bits() & c.mask()),
                len: c.len,
            }),
        }
    }
}

impl core::fmt::Display for Prefix {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Prefix::V4(c) => c.fmt(f),
            Prefix::V6(c) => c.fmt(f),
        }
    }
}

impl core::str::FromStr for Prefix {
    type Err = String;

    /// `ADDR/LEN` of either family.
    fn from_str(s: &str) -> Result<Prefix, String> {
        if s.contains(':') {
            s.parse().map(Prefix::V6)
        } else {
            s.parse().map(Prefix::V4)
        }
    }
}

/// Where an address stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressState {
    /// In use.
    Preferred,
    /// IPv6, under duplicate address detection: not used yet.
    Tentative,
    /// IPv6, found in use by another node: never used.
    Duplicate,
}

/// One address of one link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressInfo {
    /// The link (port index).
    pub link: usize,
    /// The address and its prefix length.
    pub prefix: Prefix,
    /// Whether it is in use.
    pub state: AddressState,
}

impl<B: Buf> Interface<B> {
    /// Every address of every link, IPv4 first, with its state.
    pub fn ip_addresses(&self) -> Vec<AddressInfo> {
        let mut all = Vec::new();
        for (link, l) in self.core.shared.latest().links.iter().enumerate() {
            let v4 = l
                .addresses
                .iter()
                .map(|&c| (Prefix::V4(c), AddressState::Preferred));
            let v6 = l.addresses6.iter().map(|&c| (c, AddressState::Preferred));
            let tentative = l
                .tentative6
                .iter()
                .map(|t| (t.cidr, AddressState::Tentative));
            let duplicate = l.duplicates6.iter().map(|&c| (c, AddressState::Duplicate));
            let v6 = v6
                .chain(tentative)
                .chain(duplicate)
                .map(|(c, state)| (Prefix::V6(c), state));
            all.extend(v4.chain(v6).map(|(prefix, state)| AddressInfo {
                link,
                prefix,
                state,
            }));
        }
        all
    }

    /// Adds an address to `link`, with its connected (IPv4) or on-link
    /// (IPv6, once duplicate address detection passed) route. IPv4
    /// addresses are announced with gratuitous ARP on the next poll.
    pub fn add_address(&mut self, link: usize, prefix: Prefix) -> Result<(), ConfigError> {
        self.core.shared.refresh();
        let added_v4 = self
            .core
            .shared
            .edit(|shared| add_address(shared, link, prefix))?;
        if added_v4 {
            self.announced = false;
        }
        Ok(())
    }

    /// Removes address `ip` from `link` (any link if `None`), with the
    /// connected route of its prefix unless another address still has that
    /// prefix. Returns the prefix removed, or `None` if no link had it.
    pub fn remove_address(&mut self, link: Option<usize>, ip: IpAddr) -> Option<Prefix> {
        self.core.shared.refresh();
        self.core
            .shared
            .edit(|shared| remove_address(shared, link, ip))
    }
}

/// [`Interface::add_address`] on the shared state; true if an IPv4 address
/// was added (to be announced).
fn add_address<B: Buf>(
    shared: &mut SharedState<B>,
    link: usize,
    prefix: Prefix,
) -> Result<bool, ConfigError> {
    let l = shared
        .links
        .get(link)
        .ok_or(ConfigError::NoSuchLink(link))?;
    match prefix {
        Prefix::V4(cidr) => {
            if !cidr.is_host_address() {
                return Err(ConfigError::BadAddress(cidr));
            }
            if shared.local.contains(&cidr.addr) {
                return Err(ConfigError::DuplicateAddress(cidr.addr));
            }
            shared.links[link].addresses.push(cidr);
            shared.config.links[link].addresses.push(cidr);
            refresh_local(shared);
            shared.ip.v4.routes.add(Route {
                prefix: cidr,
                gateway: None,
                port: link as u16,
                source: cidr.addr,
            });
            return Ok(true);
        }
        Prefix::V6(cidr) => {
            let ip = cidr.addr;
            let bad = ip.is_multicast()
                || ip.is_unspecified()
                || ip.is_loopback()
                || ip.to_ipv4_mapped().is_some();
            if !l.ipv6 || bad {
                return Err(ConfigError::BadAddress6(ip));
            }
            let taken = |k: &Link| {
                k.has_address6(ip)
                    || k.is_tentative6(ip)
                    || k.duplicates6.iter().any(|d| d.addr == ip)
            };
            if shared.links.iter().any(taken) {
                return Err(ConfigError::DuplicateAddress6(ip));
            }
            shared.config.links[link].addresses6.push(cidr);
            let group = solicited_node(ip);
            let l = &mut shared.links[link];
            if !l.groups6.contains(&group) {
                l.groups6.push(group);
            }
            let dad = shared.config.dad_transmits;
            if dad > 0 {
                l.tentative6.push(Tentative {
                    cidr,
                    probes_left: dad,
                    deadline: None,
                });
            } else {
                l.addresses6.push(cidr);
                add_on_link_route6(shared, link, cidr);
            }
        }
    }
    Ok(false)
}

/// [`Interface::remove_address`] on the shared state.
fn remove_address<B: Buf>(
    shared: &mut SharedState<B>,
    link: Option<usize>,
    ip: IpAddr,
) -> Option<Prefix> {
    let on = |l: &usize| link.is_none_or(|given| given == *l);
    let link = (0..shared.links.len()).filter(on).find(|&l| {
        let k = &shared.links[l];
        match ip {
            IpAddr::V4(v4) => k.addresses.iter().any(|a| a.addr == v4),
            IpAddr::V6(v6) => {
                k.has_address6(v6)
                    || k.is_tentative6(v6)
                    || k.duplicates6.iter().any(|d| d.addr == v6)
            }
        }
    })?;
    match ip {
        IpAddr::V4(v4) => {
            let l = &mut shared.links[link];
            let at = l.addresses.iter().position(|a| a.addr == v4)?;
            let cidr = l.addresses.remove(at);
            shared.config.links[link].addresses.retain(|a| a.addr != v4);
            refresh_local(shared);
            let network = Ipv4Cidr {
                addr: cidr.network(),
                len: cidr.len,
            };
            let other = shared.links.iter().enumerate().find_map(|(i, k)| {
                let same = |a: &&Ipv4Cidr| a.len == cidr.len && a.network() == network.addr;
                k.addresses.iter().find(same).map(|a| (i, *a))
            });
            let connected =
                shared.ip.v4.routes.lookup(network.addr).is_some_and(|r| {
                    r.gateway.is_none() && r.prefix.len == cidr.len && r.source == v4
                });
            if connected {
                shared.ip.v4.routes.remove(network);
                if let Some((i, a)) = other {
                    shared.ip.v4.routes.add(Route {
                        prefix: a,
                        gateway: None,
                        port: i as u16,
                        source: a.addr,
                    });
                }
            }
            Some(Prefix::V4(cidr))
        }
        IpAddr::V6(v6) => {
            let l = &mut shared.links[link];
            let mut removed = None;
            let mut take = |list: &mut Vec<Ipv6Cidr>| {
                if let Some(at) = list.iter().position(|a| a.addr == v6) {
                    removed = Some(list.remove(at));
                }
            };
            take(&mut l.addresses6);
            take(&mut l.duplicates6);
            if let Some(at) = l.tentative6.iter().position(|t| t.cidr.addr == v6) {
                removed = Some(l.tentative6.remove(at).cidr);
            }
            let cidr = removed?;
            shared.config.links[link]
                .addresses6
                .retain(|a| a.addr != v6);
            let group = solicited_node(v6);
            let still = |a: &Ipv6Cidr| solicited_node(a.addr) == group;
            let l = &mut shared.links[link];
            let in_use =
                l.addresses6.iter().any(still) || l.tentative6.iter().any(|t| still(&t.cidr));
            if !in_use && group != ALL_NODES {
                l.groups6.retain(|&g| g != group);
            }
            let Prefix::V6(network) = Prefix::V6(cidr).network() else {
                return Some(Prefix::V6(cidr));
            };
            let prefix_shared = shared.links.iter().any(|k| {
                k.addresses6
                    .iter()
                    .any(|a| a.len == cidr.len && Prefix::V6(*a).network() == Prefix::V6(network))
            });
            let on_link = shared
                .ip
                .v6
                .routes
                .get(network)
                .is_some_and(|r| r.gateway.is_none());
            if on_link && !prefix_shared {
                shared.ip.v6.routes.remove(network);
            }
            Some(Prefix::V6(cidr))
        }
    }
}

/// Recomputes the local-address set and the address classes after the
/// IPv4 addresses changed.
fn refresh_local<B: Buf>(shared: &mut SharedState<B>) {
    shared.local = (shared.links.iter())
        .flat_map(|l| l.addresses.iter().map(|a| a.addr))
        .collect();
    shared.special = special_addresses(&shared.config.links);
    shared.special_filter =
        (shared.special.iter()).fold(0, |bits, &(ip, _)| bits | special_bit(ip));
}
