//! The answers of the stack commands that answer at once (everything but
//! `ping`): snapshots of the interface turned into text, and the changes
//! `ip addr`, `route` and the echo services make. Runs on the stack lcore,
//! between two polls.

use super::services::Service;
use super::text::{self, SocketLine};
use super::{Proto, Request, StackState};
use dpstack::stack::iface::{Interface, Prefix};
use dpstack::stack::port::Buf;
use dpstack::stack::route::Ipv6Cidr;
use dpstack::stack::udp::BindOptions;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

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
            Request::ShowSockets => text::sockets(&self.socket_lines()),
            Request::ShowTcp => self.tcp_text(),
            Request::ShowCounters => dpstack::app::counters_text(&self.iface.counter_snapshot()),
            Request::Echo { proto, port, start } => self.echo(proto, port, start),
            Request::Rtp(request) => self.rtp(request),
            Request::Ping { .. } => String::new(),
        }
    }

    /// `udp-echo|tcp-echo start|stop PORT`.
    fn echo(&mut self, proto: Proto, port: u16, start: bool) -> String {
        let name = match proto {
            Proto::Udp => "UDP",
            Proto::Tcp => "TCP",
        };
        let found = self.services.started.iter().position(|s| {
            s.port() == port
                && matches!(
                    (s, proto),
                    (Service::Udp(..), Proto::Udp) | (Service::Tcp(..), Proto::Tcp)
                )
        });
        let local = SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), port);
        match (start, found) {
            (true, Some(_)) => format!("{name} echo already runs on port {port}\n"),
            (true, None) => {
                let started = match proto {
                    Proto::Udp => (self.iface.udp_bind(local, BindOptions::default()))
                        .map(|id| Service::Udp(id, local))
                        .map_err(|e| e.to_string()),
                    Proto::Tcp => (self.iface.tcp_listen(local, 128))
                        .map(|id| Service::Tcp(id, local))
                        .map_err(|e| e.to_string()),
                };
                match started {
                    Ok(service) => {
                        self.services.started.push(service);
                        format!("{name} echo started on {local}\n")
                    }
                    Err(e) => format!("Error: cannot start {name} echo on {local}: {e}\n"),
                }
            }
            (false, Some(at)) => {
                match self.services.started.remove(at) {
                    Service::Udp(id, _) => self.iface.udp_close(id),
                    Service::Tcp(id, _) => self.iface.tcp_unlisten(id),
                };
                format!("{name} echo stopped on port {port}\n")
            }
            (false, None) => format!("No {name} echo runs on port {port}\n"),
        }
    }

    /// The lines of `show sockets`: every UDP socket of the stack (Recv-Q:
    /// datagrams waiting in a queue-mode socket's queue), every TCP
    /// listener (Recv-Q: handshakes in progress and accepted connections
    /// not yet taken; Send-Q: the backlog, as `ss` shows listeners), then
    /// every TCP connection (Recv-Q and Send-Q: bytes in its buffers).
    fn socket_lines(&self) -> Vec<SocketLine> {
        let udp = self.iface.udp_sockets().into_iter().map(|s| SocketLine {
            netid: "udp",
            state: if s.remote.is_some() {
                "ESTAB"
            } else {
                "UNCONN"
            },
            recv_q: s.queued,
            send_q: 0,
            local: s.local,
            peer: s.remote,
        });
        let listeners = self.iface.tcp_listeners().into_iter().map(|l| SocketLine {
            netid: "tcp",
            state: "LISTEN",
            recv_q: l.handshakes + l.accept_queued,
            send_q: l.backlog,
            local: l.local,
            peer: None,
        });
        let connections = self
            .iface
            .tcp_connections()
            .into_iter()
            .map(|c| SocketLine {
                netid: "tcp",
                state: text::ss_state(c.state),
                recv_q: c.recv_queued,
                send_q: c.send_queued,
                local: c.local,
                peer: Some(c.remote),
            });
        udp.chain(listeners).chain(connections).collect()
    }

    fn tcp_text(&self) -> String {
        let listeners = self.iface.tcp_listeners().len();
        let connections = self.iface.tcp_connections();
        let memory = self.iface.tcp_buffer_memory();
        text::tcp(
            listeners,
            &connections,
            memory,
            &self.iface.counter_snapshot(),
        )
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
