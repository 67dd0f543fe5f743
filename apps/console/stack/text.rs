//! Text of the stack's `show` commands, in the layouts of the Linux tools
//! people already read: `ip addr`, `ip route`, `ip neigh`, `ss`. (`show
//! counters` is the apps' counters printer, `dpstack::app::counters_text`,
//! with a column per lcore when the stack runs on several.) Ports are
//! named by their DPDK port id (`port 0` where Linux says `dev eth0`);
//! MACs are lower-case, as iproute2 prints them. Per-pipeline parts
//! (sockets, counters) are merged here; TCP connections name their owner
//! by DPDK lcore.

use super::lanes::SocketsPart;
use dpstack::stack::counters::{DropReason, Stat};
use dpstack::stack::iface::{
    AddressInfo, AddressState, CounterSnapshot, NeighborInfo, Prefix, RouteInfo, TcpBufferMemory,
    TcpConnInfo, TcpListenerInfo,
};
use dpstack::stack::neighbor::NeighborState;
use dpstack::stack::port::MacAddr;
use dpstack::stack::tcp::State;
use std::fmt::Write;
use std::net::SocketAddr;

/// What `show ip addr` says about one port besides its addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkLine {
    /// Its DPDK port id.
    pub port: u16,
    /// Its MAC.
    pub mac: MacAddr,
    /// Its MTU.
    pub mtu: usize,
}

/// `aa:bb:cc:dd:ee:ff`.
pub fn mac(mac: MacAddr) -> String {
    mac.to_string().to_lowercase()
}

/// `show ip addr`: each port, then its addresses (`ip addr`'s layout).
pub fn addresses(links: &[LinkLine], addresses: &[AddressInfo]) -> String {
    let mut out = String::new();
    for (link, l) in links.iter().enumerate() {
        let _ = writeln!(out, "port {}: mtu {}", l.port, l.mtu);
        let _ = writeln!(out, "    link/ether {}", mac(l.mac));
        for a in addresses.iter().filter(|a| a.link == link) {
            let p = a.prefix;
            let line = match p {
                Prefix::V4(c) if c.len < 31 => format!("inet {p} brd {}", c.broadcast()),
                Prefix::V4(_) => format!("inet {p}"),
                Prefix::V6(_) => format!("inet6 {p}"),
            };
            let scope = match p {
                Prefix::V6(c) if c.addr.is_unicast_link_local() => "link",
                _ => "global",
            };
            let state = match a.state {
                AddressState::Preferred => "",
                AddressState::Tentative => " tentative",
                AddressState::Duplicate => " dadfailed",
            };
            let _ = writeln!(out, "    {line} scope {scope}{state}");
        }
    }
    out
}

/// `show route` (`ip route`'s layout, IPv4 then IPv6).
pub fn routes(routes: &[RouteInfo], ports: &[u16]) -> String {
    let mut out = String::new();
    for r in routes {
        if r.prefix.prefix_len() == 0 {
            out.push_str("default");
        } else {
            let _ = write!(out, "{}", r.prefix);
        }
        if let Some(gateway) = r.gateway {
            let _ = write!(out, " via {gateway}");
        }
        let _ = write!(out, " port {}", port_id(ports, r.link));
        if r.connected {
            out.push_str(" proto kernel scope link");
        }
        let _ = writeln!(out, " src {}", r.source);
    }
    out
}

/// `show neigh` (`ip neigh`'s layout).
pub fn neighbors(neighbors: &[NeighborInfo], ports: &[u16]) -> String {
    let mut out = String::new();
    for n in neighbors {
        let _ = write!(out, "{} port {}", n.ip, port_id(ports, n.link));
        if let Some(m) = n.mac {
            let _ = write!(out, " lladdr {}", mac(m));
        }
        let state = match n.state {
            NeighborState::Incomplete => "INCOMPLETE",
            NeighborState::Reachable => "REACHABLE",
            NeighborState::Stale => "STALE",
            NeighborState::Delay => "DELAY",
            NeighborState::Probe => "PROBE",
        };
        let _ = writeln!(out, " {state}");
    }
    out
}

/// One line of `show sockets`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketLine {
    /// `udp` or `tcp`.
    pub netid: &'static str,
    /// `ss`'s state name.
    pub state: &'static str,
    /// TCP: bytes received and not read; a listener: handshakes and
    /// accepted connections waiting; UDP: datagrams waiting in its queue.
    pub recv_q: usize,
    /// TCP: bytes not yet sent or acknowledged; a listener: its backlog.
    pub send_q: usize,
    /// Our address.
    pub local: SocketAddr,
    /// The peer's, if connected.
    pub peer: Option<SocketAddr>,
}

/// The lines of `show sockets` from every pipeline's `parts`: every UDP
/// socket of the stack (Recv-Q: datagrams waiting in a queue-mode socket's
/// queue), every TCP listener (Recv-Q: handshakes in progress and
/// accepted connections not yet taken; Send-Q: the backlog, as `ss` shows
/// listeners), then every TCP connection (Recv-Q and Send-Q: bytes in its
/// buffers). A TCP echo listens on every pipeline, so it has a line per
/// pipeline, as a reuseport group has in `ss`.
pub fn socket_lines(parts: &[SocketsPart]) -> Vec<SocketLine> {
    let udp = parts.iter().flat_map(|p| &p.udp).map(|s| SocketLine {
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
    let mut listeners: Vec<&TcpListenerInfo> =
        parts.iter().flat_map(|p| p.listeners.iter()).collect();
    listeners.sort_by_key(|l| l.local);
    let listeners = listeners.into_iter().map(|l| SocketLine {
        netid: "tcp",
        state: "LISTEN",
        recv_q: l.handshakes + l.accept_queued,
        send_q: l.backlog,
        local: l.local,
        peer: None,
    });
    let mut connections: Vec<&TcpConnInfo> =
        parts.iter().flat_map(|p| p.connections.iter()).collect();
    connections.sort_by_key(|c| (c.local, c.remote));
    let connections = connections.into_iter().map(|c| SocketLine {
        netid: "tcp",
        state: ss_state(c.state),
        recv_q: c.recv_queued,
        send_q: c.send_queued,
        local: c.local,
        peer: Some(c.remote),
    });
    udp.chain(listeners).chain(connections).collect()
}

/// `show sockets` (`ss -uatn`'s layout).
pub fn sockets(lines: &[SocketLine]) -> String {
    let mut out = format!(
        "{:<6}{:<11}{:>6} {:>6} {:<27}{}\n",
        "Netid", "State", "Recv-Q", "Send-Q", "Local Address:Port", "Peer Address:Port"
    );
    for l in lines {
        let peer = l.peer.map_or("*:*".to_owned(), |p| p.to_string());
        let _ = writeln!(
            out,
            "{:<6}{:<11}{:>6} {:>6} {:<27}{}",
            l.netid,
            l.state,
            l.recv_q,
            l.send_q,
            l.local.to_string(),
            peer
        );
    }
    out
}

/// `ss`'s name of a TCP state.
pub fn ss_state(state: State) -> &'static str {
    match state {
        State::SynSent => "SYN-SENT",
        State::SynReceived => "SYN-RECV",
        State::Established => "ESTAB",
        State::FinWait1 => "FIN-WAIT-1",
        State::FinWait2 => "FIN-WAIT-2",
        State::CloseWait => "CLOSE-WAIT",
        State::Closing => "CLOSING",
        State::LastAck => "LAST-ACK",
        State::TimeWait => "TIME-WAIT",
        State::Closed => "CLOSED",
    }
}

/// RFC 9293's name of a TCP state: `ss`'s but for the two `ss` shortens.
pub fn rfc_state(state: State) -> &'static str {
    match state {
        State::SynReceived => "SYN-RECEIVED",
        State::Established => "ESTABLISHED",
        other => ss_state(other),
    }
}

/// `show tcp`: the count per state, the buffer memory, the TCP counters,
/// then each connection with its queues and figures.
/// Every pipeline's `parts` are merged (connections sorted by address,
/// listeners and buffer memory summed: each pipeline has its own);
/// `counters` are the total of every pipeline's; each connection's owner
/// is shown by its DPDK lcore (`lcores[pipeline]`).
pub fn tcp(parts: &[SocketsPart], counters: &CounterSnapshot, lcores: &[u32]) -> String {
    let listeners: usize = parts.iter().map(|p| p.listeners.len()).sum();
    let mut connections: Vec<&TcpConnInfo> =
        parts.iter().flat_map(|p| p.connections.iter()).collect();
    connections.sort_by_key(|c| (c.local, c.remote));
    let memory = TcpBufferMemory {
        used: parts.iter().map(|p| p.memory.used).sum(),
        limit: parts.iter().map(|p| p.memory.limit).sum(),
    };
    let states: Vec<State> = connections.iter().map(|c| c.state).collect();
    let mut order: Vec<State> = Vec::new();
    for s in &states {
        if !order.contains(s) {
            order.push(*s);
        }
    }
    let counts: Vec<String> = order
        .iter()
        .map(|s| {
            format!(
                "{} {}",
                rfc_state(*s),
                states.iter().filter(|t| *t == s).count()
            )
        })
        .collect();
    let mut out = format!(
        "TCP: {listeners} listening, {} connections{}{}\n",
        states.len(),
        if counts.is_empty() { "" } else { ": " },
        counts.join(", ")
    );
    let _ = writeln!(
        out,
        "Buffer memory: {} of {} bytes",
        memory.used, memory.limit
    );
    let stats = [
        Stat::TcpActiveOpens,
        Stat::TcpPassiveOpens,
        Stat::TcpInSegs,
        Stat::TcpOutSegs,
        Stat::TcpOutRsts,
    ];
    let line: Vec<String> = stats
        .iter()
        .map(|&s| format!("{} {}", s.name(), value(counters, s)))
        .collect();
    let _ = writeln!(out, "{}", line.join("  "));
    if connections.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "{:<13}{:<27}{:<27}{:>7}{:>7}{:>8}{:>8}{:>6}  RTT",
        "State",
        "Local Address:Port",
        "Peer Address:Port",
        "Send-Q",
        "Recv-Q",
        "Retrans",
        "Cwnd",
        "Lcore"
    );
    for c in connections {
        let lcore = lcores.get(c.lcore).map_or(c.lcore as u32, |&id| id);
        let rtt = c.stats.srtt.map_or("-".to_owned(), |d| {
            format!("{:.3} ms", d.as_nanos() as f64 / 1e6)
        });
        let _ = writeln!(
            out,
            "{:<13}{:<27}{:<27}{:>7}{:>7}{:>8}{:>8}{lcore:>6}  {rtt}",
            rfc_state(c.state),
            c.local.to_string(),
            c.remote.to_string(),
            c.send_queued,
            c.recv_queued,
            c.stats.retransmits,
            c.stats.cwnd
        );
    }
    out
}

/// The sum of every pipeline's counters.
pub fn total(pipelines: &[CounterSnapshot]) -> CounterSnapshot {
    let mut total = CounterSnapshot {
        stats: Stat::ALL.iter().map(|&s| (s, 0)).collect(),
        drops: DropReason::ALL.iter().map(|&r| (r, 0)).collect(),
    };
    for p in pipelines {
        for (sum, (_, v)) in total.stats.iter_mut().zip(&p.stats) {
            sum.1 += v;
        }
        for (sum, (_, v)) in total.drops.iter_mut().zip(&p.drops) {
            sum.1 += v;
        }
    }
    total
}

/// `show counters`: with one pipeline, the apps' counters text of its
/// counters; with several, the same lines with the total first, then a
/// column per pipeline, headed by its DPDK lcore (`lcores[pipeline]`), so
/// `NAME VALUE` still reads the total.
pub fn counters(pipelines: &[CounterSnapshot], lcores: &[u32]) -> String {
    if let [only] = pipelines {
        return dpstack::app::counters_text(only);
    }
    let total = total(pipelines);
    let named = |p: &CounterSnapshot, name: &str| -> u64 {
        let stat = || p.stats.iter().find(|(s, _)| s.name() == name).map(|s| s.1);
        let drop = |reason| {
            p.drops
                .iter()
                .find(|(r, _)| r.name() == reason)
                .map(|r| r.1)
        };
        name.strip_prefix("drop_")
            .map_or_else(stat, drop)
            .unwrap_or(0)
    };
    let mut out = format!("{:<36}{:<12}", "", "total");
    for (i, _) in pipelines.iter().enumerate() {
        let lcore = lcores.get(i).map_or(i as u32, |&id| id);
        let _ = write!(out, "{:<12}", format!("lcore {lcore}"));
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    for line in dpstack::app::counters_text(&total).lines() {
        if let Some(rest) = line.strip_prefix("    ") {
            let name = rest.split_whitespace().next().unwrap_or("");
            let _ = write!(out, "    {name:<32}{:<12}", named(&total, name));
            for p in pipelines {
                let _ = write!(out, "{:<12}", named(p, name));
            }
            out.truncate(out.trim_end().len());
        } else if line.starts_with("Dropped:") {
            let each: Vec<String> = (pipelines.iter().enumerate())
                .map(|(i, p)| {
                    let lcore = lcores.get(i).map_or(i as u32, |&id| id);
                    let dropped: u64 = p.drops.iter().map(|(_, v)| v).sum();
                    format!("lcore {lcore}: {dropped}")
                })
                .collect();
            let _ = write!(out, "{line} ({})", each.join(", "));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

fn value(counters: &CounterSnapshot, stat: Stat) -> u64 {
    counters
        .stats
        .iter()
        .find(|(s, _)| *s == stat)
        .map_or(0, |(_, v)| *v)
}

/// The DPDK id of link `link` (its index if unknown).
fn port_id(ports: &[u16], link: usize) -> u16 {
    ports.get(link).copied().unwrap_or(link as u16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr};

    #[test]
    fn tcp_states_have_rfc_9293_and_ss_names() {
        let names = [
            (State::SynSent, "SYN-SENT", "SYN-SENT"),
            (State::SynReceived, "SYN-RECEIVED", "SYN-RECV"),
            (State::Established, "ESTABLISHED", "ESTAB"),
            (State::FinWait1, "FIN-WAIT-1", "FIN-WAIT-1"),
            (State::FinWait2, "FIN-WAIT-2", "FIN-WAIT-2"),
            (State::CloseWait, "CLOSE-WAIT", "CLOSE-WAIT"),
            (State::Closing, "CLOSING", "CLOSING"),
            (State::LastAck, "LAST-ACK", "LAST-ACK"),
            (State::TimeWait, "TIME-WAIT", "TIME-WAIT"),
            (State::Closed, "CLOSED", "CLOSED"),
        ];
        for (state, rfc, ss) in names {
            assert_eq!((rfc_state(state), ss_state(state)), (rfc, ss));
        }
    }

    #[test]
    fn addresses_have_ip_addrs_layout() {
        let links = [LinkLine {
            port: 3,
            mac: MacAddr([2, 0, 0, 0, 0, 0xab]),
            mtu: 1500,
        }];
        let a = |prefix: &str, state| AddressInfo {
            link: 0,
            prefix: prefix.parse().expect("prefix"),
            state,
        };
        let text = addresses(
            &links,
            &[
                a("10.0.0.1/24", AddressState::Preferred),
                a("fe80::ff:fe00:ab/64", AddressState::Preferred),
                a("2001:db8::1/64", AddressState::Tentative),
            ],
        );
        assert_eq!(
            text,
            "port 3: mtu 1500
    link/ether 02:00:00:00:00:ab
    inet 10.0.0.1/24 brd 10.0.0.255 scope global
    inet6 fe80::ff:fe00:ab/64 scope link
    inet6 2001:db8::1/64 scope global tentative
"
        );
    }

    #[test]
    fn routes_and_neighbours_have_iproutes_layout() {
        let r = |prefix: &str, gateway: Option<&str>, connected| RouteInfo {
            prefix: prefix.parse().expect("prefix"),
            gateway: gateway.map(|g| g.parse().expect("ip")),
            link: 0,
            source: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            connected,
        };
        let text = routes(
            &[
                r("0.0.0.0/0", Some("10.0.0.254"), false),
                r("10.0.0.0/24", None, true),
            ],
            &[5],
        );
        assert_eq!(
            text,
            "default via 10.0.0.254 port 5 src 10.0.0.1
10.0.0.0/24 port 5 proto kernel scope link src 10.0.0.1
"
        );
        let n = |ip: &str, mac: Option<MacAddr>, state| NeighborInfo {
            link: 0,
            ip: ip.parse().expect("ip"),
            mac,
            state,
        };
        let text = neighbors(
            &[
                n(
                    "10.0.0.2",
                    Some(MacAddr([2, 0, 0, 0, 2, 2])),
                    NeighborState::Reachable,
                ),
                n("10.0.0.9", None, NeighborState::Incomplete),
            ],
            &[5],
        );
        assert_eq!(
            text,
            "10.0.0.2 port 5 lladdr 02:00:00:00:02:02 REACHABLE\n10.0.0.9 port 5 INCOMPLETE\n"
        );
    }

    #[test]
    fn sockets_have_sss_layout() {
        let text = sockets(&[SocketLine {
            netid: "udp",
            state: "UNCONN",
            recv_q: 0,
            send_q: 0,
            local: "[::]:7".parse().expect("addr"),
            peer: None,
        }]);
        assert_eq!(
            text,
            "Netid State      Recv-Q Send-Q Local Address:Port         Peer Address:Port
udp   UNCONN          0      0 [::]:7                     *:*
"
        );
    }

    #[test]
    fn counters_of_several_lcores_have_the_total_then_a_column_each() {
        let snapshot = |eth: u64, udp: u64, dropped: u64| {
            let mut c = total(&[]);
            for (stat, v) in c.stats.iter_mut() {
                match stat {
                    Stat::EthInFrames => *v = eth,
                    Stat::UdpInDatagrams => *v = udp,
                    _ => {}
                }
            }
            c.drops[0].1 = dropped;
            c
        };
        let one = snapshot(5, 2, 0);
        assert_eq!(
            counters(std::slice::from_ref(&one), &[1]),
            dpstack::app::counters_text(&one),
            "one lcore: the apps' counters, unchanged"
        );
        let drop_name = format!("drop_{}", DropReason::ALL[0].name());
        let text = counters(&[one, snapshot(7, 0, 3)], &[1, 2]);
        let want = format!(
            "{:<36}total       lcore 1     lcore 2\n\
             Ethernet:\n    EthInFrames                     12          5           7\n",
            ""
        );
        assert!(text.starts_with(&want), "{text}");
        assert!(
            text.contains("\n    UdpInDatagrams                  2           2           0\n"),
            "{text}"
        );
        assert!(
            text.contains(&format!("\n    {drop_name:<32}3           0           3\n")),
            "{text}"
        );
        assert!(
            text.ends_with("Dropped: 3 (lcore 1: 0, lcore 2: 3)\n"),
            "{text}"
        );
    }
}
