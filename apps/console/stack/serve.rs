//! The answers of the stack commands that answer at once (everything but
//! `ping`): snapshots of the interface turned into text, and the changes
//! `ip addr`, `route` and the echo services make. Runs on the home
//! pipeline's lcore, between two polls; `show sockets`, `show tcp` and
//! `show counters` here show the home pipeline's part only (the console
//! asks every pipeline for them, see `session/stack.rs`).

use super::text;
use super::{lanes, Request, StackState};
use dpstack::stack::iface::{Interface, Prefix};
use dpstack::stack::port::Buf;
use dpstack::stack::route::Ipv6Cidr;
use std::net::IpAddr;

impl<B: Buf> StackState<B> {
    /// The text of a request that answers at once.
    pub(super) fn answer(&mut self, request: Request) -> String {
        let ids = self.port_ids();
        let iface = &mut self.iface;
        let done =
            |r: Result<(), String>| r.map_or_else(|e| format!("Error: {e}\n"), |()| String::new());
        match request {
            Request::ShowAddr => text::addresses(&self.links, &iface.ip_addresses()),
            Request::AddrAdd { link, prefix } => {
                done(iface.add_address(link, prefix).map_err(|e| e.to_string()))
            }
            Request::AddrDel { link, addr } => match iface.remove_address(link, addr) {
                Some(_) => String::new(),
                None => format!("Error: {addr} is not an address of the port\n"),
            },
            Request::ShowRoute => text::routes(&iface.route_list(), &ids),
            Request::RouteAdd { prefix, via, link } => {
                done(add_route(iface, prefix, via, link, &ids).map(|_| ()))
            }
            Request::RouteDel { prefix } => {
                let network = prefix.network();
                let removed = match network {
                    Prefix::V4(c) => iface.remove_route(c),
                    Prefix::V6(c) => iface.remove_route6(c),
                };
                done(
                    removed
                        .then_some(())
                        .ok_or(format!("no route to {network}")),
                )
            }
            Request::ShowNeigh => text::neighbors(&iface.neighbor_list(), &ids),
            Request::ShowSockets => {
                text::sockets(&text::socket_lines(&[lanes::sockets_part(iface)]))
            }
            Request::ShowTcp => text::tcp(
                &[lanes::sockets_part(iface)],
                &iface.counter_snapshot(),
                &self.lcore_ids,
            ),
            Request::ShowCounters => dpstack::app::counters_text(&self.iface.counter_snapshot()),
            Request::Echo { proto, port, start } => {
                lanes::echo(iface, &mut self.services, proto, port, start)
                    .unwrap_or_else(|unchanged| unchanged)
            }
            Request::Rtp(request) => self.rtp(request),
            Request::Ping { .. } => String::new(),
        }
    }
}

/// Adds the route of `route add`; returns its prefix (host bits clear).
fn add_route<B: Buf>(
    iface: &mut Interface<B>,
    prefix: Prefix,
    via: Option<IpAddr>,
    link: Option<usize>,
    ids: &[u16],
) -> Result<Prefix, String> {
    // `default` reads as IPv4's; an IPv6 gateway makes it IPv6's.
    let prefix = match (prefix, via) {
        (Prefix::V4(c), Some(IpAddr::V6(_))) if c.len == 0 => Prefix::V6(Ipv6Cidr::DEFAULT),
        _ => prefix,
    }
    .network();
    let id = |l: usize| ids.get(l).copied().unwrap_or(l as u16);
    match (prefix, via, link) {
        (Prefix::V4(p), Some(IpAddr::V4(gw)), link) => {
            let on = iface
                .route_to(gw)
                .filter(|&(_, hop, _)| hop == gw)
                .map(|(l, _, _)| l);
            if let (Some(l), Some(on)) = (link, on) {
                if l != on {
                    return Err(format!("gateway {gw} is not on port {}", id(l)));
                }
            }
            iface.add_route(p, gw).map_err(|e| e.to_string())?;
        }
        (Prefix::V6(p), Some(IpAddr::V6(gw)), link) => {
            iface.add_route6(p, gw, link).map_err(|e| e.to_string())?;
        }
        (Prefix::V4(p), None, Some(l)) => iface.add_link_route(p, l).map_err(|e| e.to_string())?,
        (Prefix::V6(p), None, Some(l)) => iface.add_link_route6(p, l).map_err(|e| e.to_string())?,
        (_, None, None) => return Err("route add needs via GATEWAY or port N".into()),
        (_, Some(gw), _) => return Err(format!("gateway {gw} is not of {prefix}'s family")),
    }
    Ok(prefix)
}
