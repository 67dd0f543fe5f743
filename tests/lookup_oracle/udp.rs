//! UDP: random socket sets (specific, wildcard, IPv4-mapped, dual-stack and
//! v6-only binds on two shared ports, SO_REUSEPORT, connected sockets) and
//! datagrams from the remote namespace; dpstack's answer comes from its
//! `UdpTable`, the structure the receive path asks.
//!
//! Not generated: SO_BINDTODEVICE (the kernel side would need one device
//! per dpstack link, and dpstack's device is a port number, not an
//! interface: a test of its own), SO_REUSEADDR (dpstack has no such
//! option), port 0 (the ephemeral pick is not lookup).

use super::{KernelAnswer, Mismatch, OracleCase, Rng, Sock, LOCAL4, LOCAL6, REMOTE4, REMOTE6};
use dpstack_stack::udp::table::{FlowKey, FlowKey6};
use dpstack_stack::udp::{BindError, BindOptions, SocketId, UdpTable};
use serde::Serialize;
use std::net::{IpAddr, SocketAddr, SocketAddrV4, SocketAddrV6};

/// Source ports of the senders (a connected socket names one of them).
const SOURCE_PORTS: [u16; 3] = [5000, 5001, 5002];

/// Sockets and the datagrams sent to them.
#[derive(Debug, Clone, Serialize)]
pub struct Case {
    sockets: Vec<Sock>,
    datagrams: Vec<super::Flow>,
}

impl Case {
    /// Case `index` of a run: its two ports are its own, so nothing of one
    /// case can reach another.
    pub fn random(rng: &mut Rng, index: usize) -> Case {
        let base = 20_000 + (index % 4000) as u16 * 2;
        let ports = [base, base + 1];
        let mut remotes = Vec::new();
        let sockets = (0..1 + rng.below(6))
            .map(|_| {
                let v6 = rng.chance(50);
                let ip = if v6 {
                    rng.pick(&["::", "::", "::", "fd09::1", "fd09::2", "::ffff:10.9.0.1"])
                } else {
                    rng.pick(&["0.0.0.0", "0.0.0.0", "10.9.0.1", "10.9.0.2"])
                };
                let connect = rng.chance(30).then(|| {
                    let ip = match (v6, rng.chance(50)) {
                        (false, _) => rng.pick(&REMOTE4).to_owned(),
                        (true, true) => format!("::ffff:{}", rng.pick(&REMOTE4)),
                        (true, false) => rng.pick(&REMOTE6).to_owned(),
                    };
                    (ip, rng.pick(&SOURCE_PORTS))
                });
                // Two sockets connected to one peer would tie, and Linux
                // breaks that tie by the CPU that last fed each socket
                // (compute_score's sk_incoming_cpu point): no oracle.
                let connect = connect.filter(|(ip, port)| {
                    let peer = (canonical(ip), *port);
                    let fresh = !remotes.contains(&peer);
                    remotes.push(peer);
                    fresh
                });
                Sock {
                    v6,
                    ip: ip.to_owned(),
                    port: if rng.chance(75) { ports[0] } else { ports[1] },
                    v6only: v6 && rng.chance(35),
                    reuseport: rng.chance(55),
                    connect,
                }
            })
            .collect();
        let datagrams = (0..8)
            .map(|_| {
                let (src, dst) = if rng.chance(50) {
                    (rng.pick(&REMOTE6), rng.pick(&LOCAL6))
                } else {
                    (rng.pick(&REMOTE4), rng.pick(&LOCAL4))
                };
                let port = if rng.chance(80) { ports[0] } else { ports[1] };
                (
                    src.to_owned(),
                    rng.pick(&SOURCE_PORTS),
                    dst.to_owned(),
                    port,
                )
            })
            .collect();
        Case { sockets, datagrams }
    }
}

/// An address with IPv4-mapped IPv6 written as IPv4.
fn canonical(ip: &str) -> IpAddr {
    let ip: IpAddr = ip.parse().expect("generated addresses parse");
    ip.to_canonical()
}

fn socket_addr(v6: bool, ip: &str, port: u16) -> SocketAddr {
    let ip: IpAddr = ip.parse().expect("generated addresses parse");
    match (v6, ip) {
        (true, IpAddr::V6(ip)) => SocketAddr::V6(SocketAddrV6::new(ip, port, 0, 0)),
        (false, IpAddr::V4(ip)) => SocketAddr::V4(SocketAddrV4::new(ip, port)),
        _ => panic!("{ip} is not of the socket's family"),
    }
}

/// What dpstack did with a case.
struct Ours {
    bind: Vec<Result<SocketId, BindError>>,
    connect: Vec<Option<bool>>,
    /// Per datagram: the index of the socket that got it.
    got: Vec<Option<usize>>,
}

fn is_local(ip: IpAddr) -> bool {
    let ip = ip.to_string();
    LOCAL4.contains(&ip.as_str()) || LOCAL6.contains(&ip.as_str())
}

impl Case {
    /// dpstack's answers. A connect uses the source address the kernel's
    /// routing picked (its getsockname() after connect): source address
    /// selection is not what this test is about, and dpstack's differs for
    /// IPv6 (first address of the link, not RFC 6724's longest match).
    fn dpstack(&self, kernel: &KernelAnswer) -> Ours {
        let mut table = UdpTable::new(0x0dd5_eed5);
        let bind: Vec<_> = (self.sockets.iter())
            .map(|s| {
                let options = BindOptions {
                    reuse_port: s.reuseport,
                    v6_only: s.v6only,
                    ..BindOptions::default()
                };
                table.bind(socket_addr(s.v6, &s.ip, s.port), options, is_local)
            })
            .collect();
        let connect = (self.sockets.iter().zip(&bind).enumerate())
            .map(|(i, (s, b))| {
                let (id, (ip, port)) = (b.ok()?, s.connect.as_ref()?);
                let remote = socket_addr(s.v6, ip, *port);
                let source = kernel.local.get(i).cloned().flatten();
                Some(match source {
                    Some((source, _)) => table.connect_from(id, remote, canonical(&source)),
                    None => table.connect(id, remote),
                })
            })
            .collect();
        let got = (self.datagrams.iter())
            .map(|(src_ip, src_port, dst_ip, dst_port)| {
                let found = match (canonical(src_ip), canonical(dst_ip)) {
                    (IpAddr::V4(src), IpAddr::V4(dst)) => table.lookup(&FlowKey {
                        src: SocketAddrV4::new(src, *src_port),
                        dst: SocketAddrV4::new(dst, *dst_port),
                        device: 0,
                        lcore: 0,
                    }),
                    (IpAddr::V6(src), IpAddr::V6(dst)) => table.lookup6(&FlowKey6 {
                        src: SocketAddrV6::new(src, *src_port, 0, 0),
                        dst: SocketAddrV6::new(dst, *dst_port, 0, 0),
                        device: 0,
                        lcore: 0,
                    }),
                    _ => unreachable!("a datagram stays in its family"),
                }?;
                bind.iter().position(|b| *b == Ok(found))
            })
            .collect();
        Ours { bind, connect, got }
    }

    /// True if sockets `a` and `b` are members of one reuseport group as
    /// Linux forms them (same family, address, port and v6-only state;
    /// Linux makes every socket bound to a specific IPv6 address v6-only),
    /// neither connected: a datagram for the group may go to either.
    fn same_group(&self, a: usize, b: usize, kernel: &KernelAnswer) -> bool {
        let (x, y) = (&self.sockets[a], &self.sockets[b]);
        let v6only = |s: &Sock| {
            let ip: IpAddr = s.ip.parse().expect("generated addresses parse");
            s.v6 && (s.v6only || !(ip.is_unspecified() || ip.to_canonical().is_ipv4()))
        };
        let connected = |i: usize| {
            kernel
                .connect
                .get(i)
                .is_some_and(|c| c.as_deref() == Some("ok"))
        };
        x.reuseport
            && y.reuseport
            && x.v6 == y.v6
            && canonical(&x.ip) == canonical(&y.ip)
            && x.port == y.port
            && v6only(x) == v6only(y)
            && !connected(a)
            && !connected(b)
    }
}

/// docs/TESTING.md: Linux's UDP bind check (`udp_lib_lport_inuse`) walks
/// the port's sockets newest first and accepts at the first overlapping one
/// that shares by SO_REUSEPORT, never looking at older ones that do not.
const FIRST_SHARER: &str = "Linux accepts a reuseport bind at the first socket it can share with";

/// What a socket hears as bound (before any connect): IPv4 at an address
/// (0: ANY) and IPv6 at an address, as the table's `Views`.
fn hears(s: &Sock) -> (Option<u128>, Option<u128>) {
    let ip: IpAddr = s.ip.parse().expect("generated addresses parse");
    let key = match ip.to_canonical() {
        IpAddr::V4(v4) => u128::from(v4.to_bits()),
        IpAddr::V6(v6) => v6.to_bits(),
    };
    match (s.v6, ip.to_canonical()) {
        (false, _) => (Some(key), None),
        (true, _) if ip.is_unspecified() => ((!s.v6only).then_some(0), Some(0)),
        (true, IpAddr::V4(_)) => (Some(key), None),
        (true, IpAddr::V6(_)) => (None, Some(key)),
    }
}

fn overlap(a: &Sock, b: &Sock) -> bool {
    let same = |x: Option<u128>, y: Option<u128>| match (x, y) {
        (Some(x), Some(y)) => x == y || x == 0 || y == 0,
        _ => false,
    };
    let (a, b) = (hears(a), hears(b));
    same(a.0, b.0) || same(a.1, b.1)
}

impl Case {
    /// True if Linux's first-sharer shortcut explains accepting bind `i`:
    /// walking the earlier bound sockets of its port newest first, the
    /// first overlapping one shares by SO_REUSEPORT.
    fn linux_stops_at_a_sharer(&self, i: usize, binds: &[String]) -> bool {
        let new = &self.sockets[i];
        let first = (0..i).rev().find(|&j| {
            let old = &self.sockets[j];
            binds[j] == "ok" && old.port == new.port && overlap(old, new)
        });
        first.is_some_and(|j| new.reuseport && self.sockets[j].reuseport)
    }
}

fn bind_verdict(ours: &Result<SocketId, BindError>) -> &'static str {
    match ours {
        Ok(_) => "ok",
        Err(BindError::AddrInUse) => "EADDRINUSE",
        Err(_) => "refused",
    }
}

fn kernel_verdict(errno: &str) -> &str {
    match errno {
        "ok" | "EADDRINUSE" => errno,
        _ => "refused",
    }
}

impl OracleCase for Case {
    fn judge(&self, kernel: &KernelAnswer) -> Vec<Mismatch> {
        let ours = self.dpstack(kernel);
        let mismatch = |what: String| Mismatch { what, known: None };
        // A socket set that differs makes every later answer differ too:
        // the first difference is the one to report.
        for (i, (k, o)) in kernel.bind.iter().zip(&ours.bind).enumerate() {
            if kernel_verdict(k) != bind_verdict(o) {
                let known = (k == "ok" && self.linux_stops_at_a_sharer(i, &kernel.bind))
                    .then_some(FIRST_SHARER);
                let what = format!("bind #{i}: kernel {k}, dpstack {o:?}");
                return vec![Mismatch { what, known }];
            }
        }
        for (i, (k, o)) in kernel.connect.iter().zip(&ours.connect).enumerate() {
            if k.as_deref().map(|k| k == "ok") != *o {
                return vec![mismatch(format!(
                    "connect #{i}: kernel {k:?}, dpstack {o:?}"
                ))];
            }
        }
        let mut found = Vec::new();
        for (n, (&k, &o)) in kernel.got.iter().zip(&ours.got).enumerate() {
            let k = usize::try_from(k).ok();
            let agreed = match (k, o) {
                (Some(k), Some(o)) => k == o || self.same_group(k, o, kernel),
                (k, o) => k == o,
            };
            if !agreed {
                let (src_ip, src_port, dst_ip, dst_port) = &self.datagrams[n];
                let name = |s: Option<usize>| s.map_or("none".to_owned(), |s| format!("#{s}"));
                found.push(mismatch(format!(
                    "datagram {src_ip} port {src_port} -> {dst_ip} port {dst_port}: kernel {}, \
                     dpstack {} (kernel's local addresses after connect: {:?})",
                    name(k),
                    name(o),
                    kernel.local
                )));
            }
        }
        found
    }

    fn smaller(&self) -> Vec<Case> {
        super::smaller_parts(&self.sockets, &self.datagrams)
            .into_iter()
            .map(|(sockets, datagrams)| Case { sockets, datagrams })
            .collect()
    }

    fn flows(&self) -> usize {
        self.datagrams.len()
    }
}

impl std::fmt::Display for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        super::write_case(f, ("udp", &self.sockets), ("datagram", &self.datagrams))
    }
}
