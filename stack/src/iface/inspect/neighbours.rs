//! Neighbours: the ARP and Neighbor Discovery caches of every link.

use crate::iface::Interface;
use crate::neighbor::NeighborState;
use crate::port::{Buf, MacAddr};
use core::net::IpAddr;

/// One neighbour cache entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NeighborInfo {
    /// The link whose cache holds it.
    pub link: usize,
    /// Its address.
    pub ip: IpAddr,
    /// Its MAC, once resolved.
    pub mac: Option<MacAddr>,
    /// Its state.
    pub state: NeighborState,
}

impl<B: Buf> Interface<B> {
    /// Every neighbour cache entry, IPv4 then IPv6, by link.
    pub fn neighbor_list(&self) -> Vec<NeighborInfo> {
        let v4 = self
            .neighbors()
            .into_iter()
            .map(|(link, ip, mac, state)| NeighborInfo {
                link,
                ip: IpAddr::V4(ip),
                mac,
                state,
            });
        let v6 = self
            .neighbors6()
            .into_iter()
            .map(|(link, ip, mac, state)| NeighborInfo {
                link,
                ip: IpAddr::V6(ip),
                mac,
                state,
            });
        v4.chain(v6).collect()
    }
}
