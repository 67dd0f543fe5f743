//! TCP: random listener sets (specific, wildcard, IPv4-mapped, dual-stack
//! and v6-only, SO_REUSEPORT) and connections from the remote namespace.
//! The kernel's answer is the listener whose accept() returns; dpstack's is
//! the listener a SYN starts a handshake on, seen through
//! `Interface::tcp_listeners` of an in-memory interface that holds the
//! local namespace's addresses (a fresh one per case).

use super::{KernelAnswer, Mismatch, OracleCase, Rng, Sock, LOCAL4, LOCAL6, REMOTE4, REMOTE6};
use dpstack_stack::iface::{DropDatagrams, Interface, InterfaceConfig, ListenError, ListenOptions};
use dpstack_stack::port::memory::{MemBuf, MemPort, MemPortConfig};
use dpstack_stack::port::MacAddr;
use dpstack_stack::route::{Ipv4Cidr, Ipv6Cidr};
use dpstack_stack::time::Instant;
use dpstack_stack::wire::checksum::pseudo_header_v4;
use dpstack_stack::wire::ethernet::{EtherType, EthernetFrame};
use dpstack_stack::wire::ipv4::{protocol, Ipv4Header, Ipv4Packet};
use dpstack_stack::wire::ipv6::{Ipv6Header, Ipv6Packet};
use dpstack_stack::wire::tcp::{flags, TcpOptions, TcpPacket, TcpRepr};
use serde::Serialize;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

const OUR_MAC: MacAddr = MacAddr([2, 0, 0, 0, 9, 1]);
const PEER_MAC: MacAddr = MacAddr([2, 0, 0, 0, 9, 2]);

/// Listeners and the connections made to them.
#[derive(Debug, Clone, Serialize)]
pub struct Case {
    sockets: Vec<Sock>,
    conns: Vec<super::Flow>,
}

impl Case {
    /// Case `index`: its two ports, and its connections' source ports, are
    /// its own (no 4-tuple of one case meets another's leftovers).
    pub fn random(rng: &mut Rng, index: usize) -> Case {
        let base = 28_000 + (index % 2000) as u16 * 2;
        let ports = [base, base + 1];
        let sockets = (0..1 + rng.below(5))
            .map(|_| {
                let v6 = rng.chance(50);
                let ip = if v6 {
                    rng.pick(&["::", "::", "::", "fd09::1", "fd09::2", "::ffff:10.9.0.1"])
                } else {
                    rng.pick(&["0.0.0.0", "0.0.0.0", "10.9.0.1", "10.9.0.2"])
                };
                Sock {
                    v6,
                    ip: ip.to_owned(),
                    port: if rng.chance(80) { ports[0] } else { ports[1] },
                    v6only: v6 && rng.chance(25),
                    reuseport: rng.chance(60),
                    connect: None,
                }
            })
            .collect();
        let conns = (0..4)
            .map(|n| {
                let (src, dst) = if rng.chance(50) {
                    (rng.pick(&REMOTE6), rng.pick(&LOCAL6))
                } else {
                    (rng.pick(&REMOTE4), rng.pick(&LOCAL4))
                };
                let port = if rng.chance(85) { ports[0] } else { ports[1] };
                let src_port = 40_000 + ((index % 2000) * 4 + n) as u16;
                (src.to_owned(), src_port, dst.to_owned(), port)
            })
            .collect();
        Case { sockets, conns }
    }
}

fn socket_addr(v6: bool, ip: &str, port: u16) -> SocketAddr {
    let ip: IpAddr = ip.parse().expect("generated addresses parse");
    match (v6, ip) {
        (true, IpAddr::V6(ip)) => SocketAddr::new(IpAddr::V6(ip), port),
        (false, IpAddr::V4(ip)) => SocketAddr::new(IpAddr::V4(ip), port),
        _ => panic!("{ip} is not of the socket's family"),
    }
}

/// An interface holding the local namespace's addresses, DAD off (its
/// addresses are usable at once, as `nodad` makes the kernel's).
fn interface() -> (Interface<MemBuf>, MemPort) {
    let addr4 = |s: &str| Ipv4Cidr::new(s.parse().expect("address"), 24).expect("prefix");
    let addr6 = |s: &str| Ipv6Cidr::new(s.parse().expect("address"), 64).expect("prefix");
    let mut config = InterfaceConfig::new(OUR_MAC, addr4(LOCAL4[0]));
    config.links[0].addresses = LOCAL4.iter().map(|a| addr4(a)).collect();
    config.links[0].addresses6 = LOCAL6.iter().map(|a| addr6(a)).collect();
    config.dad_transmits = 0;
    let mut iface = Interface::new(config).expect("a valid configuration");
    // A small pool: a case needs a few frames, and a fresh interface per
    // case must stay cheap.
    let mut port = MemPort::new(MemPortConfig {
        mac: OUR_MAC,
        pool_size: 256,
        tx_ring_size: 256,
        large_buf_size: 2048,
        ..MemPortConfig::default()
    });
    iface.poll(&mut port, Instant::ZERO, &mut DropDatagrams);
    port.take_tx();
    (iface, port)
}

/// A SYN from `src` to `dst` in an Ethernet frame for us.
fn syn(src: SocketAddr, dst: SocketAddr) -> Vec<u8> {
    let repr = TcpRepr {
        src_port: src.port(),
        dst_port: dst.port(),
        seq: 1000,
        flags: flags::SYN,
        window: 65_535,
        options: TcpOptions {
            mss: Some(1460),
            ..TcpOptions::default()
        },
        ..TcpRepr::default()
    };
    let mut segment = vec![0u8; repr.header_len()];
    repr.emit(&mut segment);
    let len = segment.len();
    let (ethertype, packet) = match (src.ip(), dst.ip()) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            TcpPacket::new_unchecked(&mut segment[..]).fill_checksum(pseudo_header_v4(
                s,
                d,
                protocol::TCP,
                len as u16,
            ));
            let mut packet = vec![0u8; 20 + len];
            packet[20..].copy_from_slice(&segment);
            Ipv4Packet::new_unchecked(&mut packet[..]).emit_header(&Ipv4Header {
                src: s,
                dst: d,
                protocol: protocol::TCP,
                payload_len: len as u16,
                ttl: 64,
                ident: 1,
                dont_fragment: true,
                tos: 0,
            });
            (EtherType::Ipv4, packet)
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            let pseudo = dpstack_stack::wire::ipv6::pseudo_header(s, d, protocol::TCP, len as u32);
            TcpPacket::new_unchecked(&mut segment[..]).fill_checksum(pseudo);
            let mut packet = vec![0u8; 40 + len];
            packet[40..].copy_from_slice(&segment);
            Ipv6Packet::new_unchecked(&mut packet[..]).emit_header(&Ipv6Header {
                src: s,
                dst: d,
                next_header: protocol::TCP,
                payload_len: len as u16,
                hop_limit: 64,
            });
            (EtherType::Ipv6, packet)
        }
        _ => unreachable!("a connection stays in its family"),
    };
    let mut frame = vec![0u8; 14 + packet.len()];
    let mut eth = EthernetFrame::new_unchecked(&mut frame[..]);
    eth.set_dst(OUR_MAC);
    eth.set_src(PEER_MAC);
    eth.set_ethertype(ethertype);
    eth.payload_mut().copy_from_slice(&packet);
    frame
}

/// docs/TESTING.md: a reuseport bind that matches the port's "fast"
/// reuseport address (`tb->fastreuseport`) skips Linux's conflict check, so
/// it may overlap an older listener that does not share; that listener's
/// own `listen()` then fails. dpstack refuses the overlapping one instead.
const FAST_PATH: &str =
    "Linux's reuseport fast path admits an overlapping bind, then fails an older listen";

/// What dpstack did with a case.
struct Ours {
    listen: Vec<Result<(), ListenError>>,
    /// Per connection: the address of the listener that took its SYN.
    got: Vec<Option<SocketAddr>>,
}

impl Case {
    /// dpstack's answers, on an interface shared by [`REUSE`] evaluations
    /// (a fresh one per case costs more than the case in a debug build).
    /// Each evaluation moves the case to ports of its own, so nothing an
    /// earlier one left (closed listeners, handshakes in progress) is met.
    fn dpstack(&self) -> Ours {
        SHARED.with(|shared| {
            let mut shared = shared.borrow_mut();
            if shared.as_ref().is_none_or(|s| s.2 >= REUSE) {
                let (iface, port) = interface();
                *shared = Some((iface, port, 0));
            }
            let (iface, port, uses) = shared.as_mut().expect("just made");
            *uses += 1;
            let offset = 2000 + 2 * (EVALUATIONS.fetch_add(1, Relaxed) % 25_000) as u16;
            // Case ports come in even/odd pairs: the parity names which.
            let moved = |p: u16| offset + (p & 1);
            let mut ids = Vec::new();
            let listen = (self.sockets.iter())
                .map(|s| {
                    let local = socket_addr(s.v6, &s.ip, moved(s.port));
                    let options = ListenOptions {
                        reuse_port: s.reuseport,
                        v6_only: s.v6only,
                    };
                    let listening = iface.tcp_listen_with(local, 8, options);
                    listening.map(|id| ids.push(id)).map(|_| ())
                })
                .collect();
            let got = (self.conns.iter())
                .map(|(src_ip, src_port, dst_ip, dst_port)| {
                    let src = SocketAddr::new(ip(src_ip), *src_port);
                    let dst = SocketAddr::new(ip(dst_ip), moved(*dst_port));
                    let before = iface.tcp_listeners();
                    port.push_rx(&syn(src, dst));
                    iface.poll(port, Instant::ZERO, &mut DropDatagrams);
                    port.take_tx();
                    let after = iface.tcp_listeners();
                    (before.iter().zip(&after))
                        .find(|(b, a)| a.handshakes > b.handshakes)
                        // A listener takes only its own port: name it by the
                        // case's.
                        .map(|(_, a)| SocketAddr::new(a.local.ip(), *dst_port))
                })
                .collect();
            for id in ids {
                iface.tcp_unlisten(id);
            }
            Ours { listen, got }
        })
    }
}

/// Evaluations one interface serves before a fresh one replaces it (its
/// handshakes in progress pile up: they are never completed).
const REUSE: usize = 40;

thread_local! {
    static SHARED: std::cell::RefCell<Option<(Interface<MemBuf>, MemPort, usize)>> =
        const { std::cell::RefCell::new(None) };
}

static EVALUATIONS: AtomicUsize = AtomicUsize::new(0);

fn ip(s: &str) -> IpAddr {
    s.parse().expect("generated addresses parse")
}

/// The kernel's verdict on a listener: its bind's, else its listen's.
fn kernel_verdict(kernel: &KernelAnswer, i: usize) -> &str {
    let bind = kernel.bind[i].as_str();
    let step = match bind {
        "ok" => kernel.listen[i].as_deref().unwrap_or("ok"),
        e => e,
    };
    match step {
        "ok" | "EADDRINUSE" => step,
        _ => "refused",
    }
}

fn our_verdict(ours: &Result<(), ListenError>) -> &'static str {
    match ours {
        Ok(()) => "ok",
        Err(ListenError::AddrInUse) => "EADDRINUSE",
        Err(_) => "refused",
    }
}

impl OracleCase for Case {
    fn judge(&self, kernel: &KernelAnswer) -> Vec<Mismatch> {
        let ours = self.dpstack();
        for (i, o) in ours.listen.iter().enumerate() {
            let k = kernel_verdict(kernel, i);
            if k != our_verdict(o) {
                let late =
                    kernel.bind[i] == "ok" && kernel.listen[i].as_deref() == Some("EADDRINUSE");
                let known = (late && o.is_ok()).then_some(FAST_PATH);
                let what = format!("listen #{i}: kernel {k}, dpstack {o:?}");
                return vec![Mismatch { what, known }];
            }
        }
        let mut found = Vec::new();
        for (n, (&k, &o)) in kernel.got.iter().zip(&ours.got).enumerate() {
            // dpstack's listeners are told apart by address: a reuseport
            // group shares one, so the same address is the same group.
            let k_addr = usize::try_from(k).ok().map(|k| {
                socket_addr(
                    self.sockets[k].v6,
                    &self.sockets[k].ip,
                    self.sockets[k].port,
                )
            });
            if k_addr != o {
                let (src_ip, src_port, dst_ip, dst_port) = &self.conns[n];
                let name = |a: Option<SocketAddr>| a.map_or("none".to_owned(), |a| a.to_string());
                found.push(Mismatch {
                    known: None,
                    what: format!(
                    "connection {src_ip} port {src_port} -> {dst_ip} port {dst_port}: kernel {} \
                     (#{k}), dpstack {}",
                        name(k_addr),
                        name(o)
                    ),
                });
            }
        }
        found
    }

    fn smaller(&self) -> Vec<Case> {
        super::smaller_parts(&self.sockets, &self.conns)
            .into_iter()
            .map(|(sockets, conns)| Case { sockets, conns })
            .collect()
    }

    fn flows(&self) -> usize {
        self.conns.len()
    }
}

impl std::fmt::Display for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        super::write_case(f, ("tcp listen", &self.sockets), ("connect", &self.conns))
    }
}
