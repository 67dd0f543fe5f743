//! Table tests: each row is a set of sockets, a datagram, and the socket that
//! must receive it, pinning Linux's UDP lookup semantics.

use super::*;
use core::net::Ipv4Addr;
use core::net::{Ipv6Addr, SocketAddrV6};

const HOST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const HOST2: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 5);
const PEER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
const OTHER_PEER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 3);

const HOST6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);

fn local(ip: IpAddr) -> bool {
    ip == HOST || ip == HOST2 || ip == HOST6
}

fn addr(ip: Ipv4Addr, port: u16) -> SocketAddrV4 {
    SocketAddrV4::new(ip, port)
}

fn key(src: SocketAddrV4, dst: SocketAddrV4) -> FlowKey {
    FlowKey {
        src,
        dst,
        device: 0,
        lcore: 0,
    }
}

const REUSE: BindOptions = BindOptions {
    reuse_port: true,
    device: None,
    v6_only: false,
    tos: 0,
    incoming_lcore: None,
};

#[test]
fn specific_address_beats_wildcard() {
    let mut t = UdpTable::new(1);
    let any = t
        .bind(addr(Ipv4Addr::UNSPECIFIED, 53), REUSE, local)
        .unwrap();
    let specific = t.bind(addr(HOST, 53), REUSE, local).unwrap();
    let rows = [
        (addr(HOST, 53), Some(specific)),
        (addr(HOST2, 53), Some(any)),
        (addr(HOST, 54), None),
    ];
    for (dst, expected) in rows {
        assert_eq!(t.lookup(&key(addr(PEER, 1000), dst)), expected, "dst {dst}");
    }
}

#[test]
fn a_connected_socket_only_hears_its_peer() {
    let mut t = UdpTable::new(1);
    let s = t
        .bind(addr(HOST, 5000), BindOptions::default(), local)
        .unwrap();
    assert!(t.connect(s, addr(PEER, 7000)));
    let rows = [
        (addr(PEER, 7000), Some(s)),
        (addr(PEER, 7001), None),
        (addr(OTHER_PEER, 7000), None),
    ];
    for (src, expected) in rows {
        assert_eq!(t.lookup(&key(src, addr(HOST, 5000))), expected, "src {src}");
    }
}

#[test]
fn bind_conflicts_follow_so_reuseport() {
    let mut t = UdpTable::new(1);
    let plain = BindOptions::default();
    t.bind(addr(HOST, 80), plain, local).unwrap();
    assert_eq!(
        t.bind(addr(HOST, 80), plain, local),
        Err(BindError::AddrInUse)
    );
    assert_eq!(
        t.bind(addr(HOST, 80), REUSE, local),
        Err(BindError::AddrInUse)
    );
    assert_eq!(
        t.bind(addr(Ipv4Addr::UNSPECIFIED, 80), plain, local),
        Err(BindError::AddrInUse),
        "ANY overlaps every address"
    );
    assert!(
        t.bind(addr(HOST2, 80), plain, local).is_ok(),
        "another address is free"
    );
    assert_eq!(
        t.bind(addr(Ipv4Addr::new(192, 0, 2, 1), 80), plain, local),
        Err(BindError::AddrNotAvailable)
    );
    t.bind(addr(HOST, 81), REUSE, local).unwrap();
    assert!(
        t.bind(addr(HOST, 81), REUSE, local).is_ok(),
        "both set SO_REUSEPORT"
    );
}

#[test]
fn port_zero_picks_distinct_ephemeral_ports() {
    let mut t = UdpTable::new(1);
    let a = t
        .bind(addr(HOST, 0), BindOptions::default(), local)
        .unwrap();
    let b = t
        .bind(addr(HOST, 0), BindOptions::default(), local)
        .unwrap();
    let (pa, pb) = (
        t.local_addr(a).unwrap().port(),
        t.local_addr(b).unwrap().port(),
    );
    assert!(EPHEMERAL_PORTS.contains(&pa) && EPHEMERAL_PORTS.contains(&pb));
    assert_ne!(pa, pb);
}

#[test]
fn ephemeral_ports_are_not_predictable_from_the_last_one() {
    // RFC 6056 (and Linux): a peer that saw one port-0 bind's port must
    // not guess the next (a DNS client's replies would be easy to forge),
    // nor the first from the range.
    let ports = |key: u64| {
        let mut t = UdpTable::new(key);
        (0..4)
            .map(|_| {
                let id = t.bind(addr(HOST, 0), BindOptions::default(), local);
                t.local_addr(id.unwrap()).unwrap().port()
            })
            .collect::<Vec<u16>>()
    };
    let firsts: std::collections::BTreeSet<u16> = (1..=8).map(|key| ports(key)[0]).collect();
    assert!(firsts.len() > 4, "first ports {firsts:?}");
    for key in 1..=8 {
        let drawn = ports(key);
        assert!(drawn.iter().all(|p| EPHEMERAL_PORTS.contains(p)));
        let steps = drawn
            .windows(2)
            .filter(|w| w[1] == w[0].wrapping_add(1))
            .count();
        assert_eq!(steps, 0, "key {key}: {drawn:?}");
    }
}

#[test]
fn reuseport_spreads_flows_and_keeps_each_flow_on_one_member() {
    let mut t = UdpTable::new(0x1234_5678);
    let members: Vec<SocketId> = (0..4)
        .map(|_| t.bind(addr(HOST, 9000), REUSE, local).unwrap())
        .collect();
    let mut hits = [0usize; 4];
    for src_port in 1000..3000 {
        let k = key(addr(PEER, src_port), addr(HOST, 9000));
        let chosen = t.lookup(&k).unwrap();
        assert_eq!(t.lookup(&k), Some(chosen), "same flow, same member");
        hits[members.iter().position(|&m| m == chosen).unwrap()] += 1;
    }
    for h in hits {
        assert!((350..650).contains(&h), "uneven spread {hits:?}");
    }
}

#[test]
fn a_connected_socket_in_a_reuseport_group_wins_its_flow() {
    // Seed 000's case: a reuseport group that also holds a connected socket
    // must re-score, so the connected socket gets its peer's datagrams.
    let mut t = UdpTable::new(7);
    let unconnected: Vec<SocketId> = (0..3)
        .map(|_| t.bind(addr(HOST, 4000), REUSE, local).unwrap())
        .collect();
    let connected = t.bind(addr(HOST, 4000), REUSE, local).unwrap();
    assert!(t.connect(connected, addr(PEER, 6000)));
    for _ in 0..10 {
        assert_eq!(
            t.lookup(&key(addr(PEER, 6000), addr(HOST, 4000))),
            Some(connected)
        );
    }
    let mut hits = [0usize; 3];
    for src_port in 1..600 {
        let chosen = t.lookup(&key(addr(OTHER_PEER, src_port), addr(HOST, 4000)));
        let index = unconnected.iter().position(|&u| Some(u) == chosen);
        hits[index.expect("others go to unconnected members")] += 1;
    }
    assert!(
        hits.iter().all(|&h| h > 100),
        "still spread by hash: {hits:?}"
    );
    assert!(t.close(connected));
    let chosen = t.lookup(&key(addr(PEER, 6000), addr(HOST, 4000)));
    assert!(
        chosen.is_some_and(|c| unconnected.contains(&c)),
        "group hashing again"
    );
}

#[test]
fn bound_device_must_match() {
    let mut t = UdpTable::new(1);
    let on_port_1 = BindOptions {
        reuse_port: false,
        device: Some(1),
        v6_only: false,
        tos: 0,
        incoming_lcore: None,
    };
    let s = t.bind(addr(HOST, 700), on_port_1, local).unwrap();
    let mut k = key(addr(PEER, 1), addr(HOST, 700));
    assert_eq!(t.lookup(&k), None);
    k.device = 1;
    assert_eq!(t.lookup(&k), Some(s));
}

#[test]
fn close_frees_the_address_and_the_slot() {
    let mut t = UdpTable::new(1);
    let s = t
        .bind(addr(HOST, 53), BindOptions::default(), local)
        .unwrap();
    assert!(t.close(s));
    assert!(!t.close(s));
    assert!(t.is_empty());
    let again = t
        .bind(addr(HOST, 53), BindOptions::default(), local)
        .unwrap();
    assert_eq!(again, s, "slot reused");
    assert_eq!(t.lookup(&key(addr(PEER, 1), addr(HOST, 53))), Some(again));
}

#[test]
fn sockets_lists_the_bound_ones_with_their_peers() {
    let mut t = UdpTable::new(1);
    let a = t
        .bind(addr(HOST, 53), BindOptions::default(), local)
        .unwrap();
    let b = t
        .bind(addr(HOST2, 5000), BindOptions::default(), local)
        .unwrap();
    let c = t
        .bind(addr(HOST, 6000), BindOptions::default(), local)
        .unwrap();
    assert!(t.connect(b, addr(PEER, 7000)));
    assert!(t.close(a));
    let listed: Vec<_> = t.sockets().collect();
    assert_eq!(
        listed,
        [
            (b, addr(HOST2, 5000).into(), Some(addr(PEER, 7000).into())),
            (c, addr(HOST, 6000).into(), None),
        ]
    );
}

#[test]
fn lookup_does_not_depend_on_how_many_sockets_exist() {
    let mut t = UdpTable::new(1);
    for port in 10_000..20_000 {
        t.bind(addr(HOST, port), BindOptions::default(), local)
            .unwrap();
    }
    assert_eq!(t.len(), 10_000);
    let k = key(addr(PEER, 1), addr(HOST, 15_000));
    assert_eq!(
        t.local_addr(t.lookup(&k).unwrap()),
        Some(addr(HOST, 15_000))
    );
}

#[test]
fn reuseport_groups_are_per_device() {
    let mut t = UdpTable::new(3);
    let on = |device| BindOptions {
        reuse_port: true,
        device: Some(device),
        v6_only: false,
        tos: 0,
        incoming_lcore: None,
    };
    let a = t
        .bind(addr(Ipv4Addr::UNSPECIFIED, 53), on(0), local)
        .unwrap();
    let b = t
        .bind(addr(Ipv4Addr::UNSPECIFIED, 53), on(1), local)
        .unwrap();
    for src_port in 1..200 {
        let mut k = key(addr(PEER, src_port), addr(HOST, 53));
        assert_eq!(
            t.lookup(&k),
            Some(a),
            "port 0 traffic stays on port 0's socket"
        );
        k.device = 1;
        assert_eq!(t.lookup(&k), Some(b));
    }
}

/// A small deterministic generator for the randomized test below.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % bound
    }
}

#[test]
fn the_sole_socket_shortcut_answers_as_the_full_walk_would() {
    // Random binds, connects and closes over three ports; after each step,
    // every datagram shape gets the same answer from `lookup` (which takes
    // the shortcut on marked slots) and from the walk itself.
    let ips = [Ipv4Addr::UNSPECIFIED, HOST, HOST2];
    let peers = [PEER, OTHER_PEER];
    let mut rng = Lcg(7);
    let mut t = UdpTable::new(3);
    let mut open: Vec<SocketId> = Vec::new();
    let mut shortcuts = 0;
    let mut shortcuts6 = 0;
    for _ in 0..400 {
        match rng.next(4) {
            0 | 1 => {
                let options = BindOptions {
                    reuse_port: rng.next(3) == 0,
                    device: (rng.next(4) == 0).then_some(rng.next(2) as u16),
                    v6_only: rng.next(2) == 0,
                    tos: 0,
                    incoming_lcore: None,
                };
                let port = 5000 + rng.next(3) as u16;
                // A third of the sockets are IPv6: dual-stack or v6-only
                // wildcards, a global address, or an IPv4-mapped one.
                let local_addr: SocketAddr = match rng.next(6) {
                    0 => v6(Ipv6Addr::UNSPECIFIED, port),
                    1 => v6([HOST6, HOST.to_ipv6_mapped()][rng.next(2) as usize], port),
                    _ => SocketAddr::V4(addr(ips[rng.next(3) as usize], port)),
                };
                if let Ok(id) = t.bind(local_addr, options, local) {
                    open.push(id);
                }
            }
            2 if !open.is_empty() => {
                let id = open[rng.next(open.len() as u64) as usize];
                let peer = addr(peers[rng.next(2) as usize], rng.next(2) as u16 * 9);
                // IPv6 sockets take the IPv4 peer in its mapped form.
                if !t.connect(id, peer) {
                    t.connect(
                        id,
                        SocketAddrV6::new(peer.ip().to_ipv6_mapped(), peer.port(), 0, 0),
                    );
                }
            }
            _ if !open.is_empty() => {
                let id = open.swap_remove(rng.next(open.len() as u64) as usize);
                assert!(t.close(id));
            }
            _ => {}
        }
        for port in 5000..5003u16 {
            let slot = t.ports[usize::from(port)];
            shortcuts += usize::from(slot & SOLE != 0);
            for dst in [HOST, HOST2] {
                for src in peers {
                    for device in 0..2 {
                        let k = FlowKey {
                            src: addr(src, 9),
                            dst: addr(dst, port),
                            device,
                            lcore: 0,
                        };
                        let walked = t.lookup_chain(&Probe::of_v4(&k), head_of(slot));
                        assert_eq!(t.lookup(&k), walked, "{k:?}");
                    }
                }
            }
            shortcuts6 += usize::from(slot & SOLE6 != 0);
            for dst in [HOST6, Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 9)] {
                for device in 0..2 {
                    let k = FlowKey6 {
                        src: SocketAddrV6::new(PEER6, 9, 0, 0),
                        dst: SocketAddrV6::new(dst, port, 0, 0),
                        device,
                        lcore: 0,
                    };
                    let probe = Probe {
                        v4: false,
                        src: PEER6.to_bits(),
                        dst: dst.to_bits(),
                        src_port: 9,
                        dst_port: port,
                        device: u32::from(device),
                        lcore: 0,
                    };
                    let walked = t.lookup_chain(&probe, head_of(slot));
                    assert_eq!(t.lookup6(&k), walked, "{k:?}");
                }
            }
        }
    }
    assert!(shortcuts > 50, "the shortcut was exercised ({shortcuts})");
    assert!(
        shortcuts6 > 10,
        "the IPv6 shortcut was exercised ({shortcuts6})"
    );
}

#[test]
fn sole_sockets_on_more_addresses_than_slots_can_name_still_match() {
    // 40 addresses, one socket each on its own port: the slot names at most
    // 31 addresses, the rest take the walk; all answer the same.
    let ip = |i: u32| Ipv4Addr::from(0x0a00_0100 + i);
    let mut t = UdpTable::new(5);
    let ids: Vec<SocketId> = (0..40)
        .map(|i| {
            t.bind(addr(ip(i), 6000 + i as u16), BindOptions::default(), |_| {
                true
            })
            .unwrap()
        })
        .collect();
    let shortcut = (0..40u16)
        .filter(|&i| t.ports[usize::from(6000 + i)] & SOLE != 0)
        .count();
    assert_eq!(shortcut, 31);
    for (i, id) in ids.into_iter().enumerate() {
        let port = 6000 + i as u16;
        let to = |dst| key(addr(PEER, 9), addr(dst, port));
        assert_eq!(t.lookup(&to(ip(i as u32))), Some(id));
        assert_eq!(t.lookup(&to(ip(i as u32 + 1))), None, "another address");
    }
}

fn key6(src: Ipv6Addr, dst: Ipv6Addr, port: u16) -> FlowKey6 {
    FlowKey6 {
        src: SocketAddrV6::new(src, 9, 0, 0),
        dst: SocketAddrV6::new(dst, port, 0, 0),
        device: 0,
        lcore: 0,
    }
}

const PEER6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2);

fn v6(ip: Ipv6Addr, port: u16) -> SocketAddr {
    SocketAddr::V6(SocketAddrV6::new(ip, port, 0, 0))
}

const V6_ONLY: BindOptions = BindOptions {
    reuse_port: false,
    device: None,
    v6_only: true,
    tos: 0,
    incoming_lcore: None,
};

#[test]
fn a_dual_stack_wildcard_socket_hears_both_families() {
    let mut t = UdpTable::new(1);
    let any6 = t
        .bind(v6(Ipv6Addr::UNSPECIFIED, 53), BindOptions::default(), local)
        .unwrap();
    assert_eq!(t.lookup(&key(addr(PEER, 9), addr(HOST, 53))), Some(any6));
    assert_eq!(t.lookup6(&key6(PEER6, HOST6, 53)), Some(any6));
    assert_eq!(t.local_addr(any6), Some(addr(Ipv4Addr::UNSPECIFIED, 53)));
    // It holds the IPv4 wildcard too (Linux: EADDRINUSE).
    assert_eq!(
        t.bind(
            addr(Ipv4Addr::UNSPECIFIED, 53),
            BindOptions::default(),
            local
        ),
        Err(BindError::AddrInUse)
    );
    assert_eq!(
        t.bind(addr(HOST, 53), BindOptions::default(), local),
        Err(BindError::AddrInUse)
    );
}

#[test]
fn a_v6_only_socket_leaves_ipv4_to_an_ipv4_socket() {
    let mut t = UdpTable::new(1);
    let only6 = t
        .bind(v6(Ipv6Addr::UNSPECIFIED, 53), V6_ONLY, local)
        .unwrap();
    let any4 = t
        .bind(
            addr(Ipv4Addr::UNSPECIFIED, 53),
            BindOptions::default(),
            local,
        )
        .unwrap();
    assert_eq!(t.lookup(&key(addr(PEER, 9), addr(HOST, 53))), Some(any4));
    assert_eq!(t.lookup6(&key6(PEER6, HOST6, 53)), Some(only6));
    assert_eq!(t.local_addr(only6), None, "speaks no IPv4");
}

#[test]
fn families_never_cross_and_specific_addresses_coexist() {
    let mut t = UdpTable::new(1);
    let host6 = t
        .bind(v6(HOST6, 53), BindOptions::default(), local)
        .unwrap();
    let any4 = t
        .bind(
            addr(Ipv4Addr::UNSPECIFIED, 53),
            BindOptions::default(),
            local,
        )
        .unwrap();
    assert_eq!(t.lookup6(&key6(PEER6, HOST6, 53)), Some(host6));
    assert_eq!(t.lookup(&key(addr(PEER, 9), addr(HOST, 53))), Some(any4));
    let other6 = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 7);
    assert_eq!(t.lookup6(&key6(PEER6, other6, 53)), None);
    // An address that is not ours cannot be bound.
    assert_eq!(
        t.bind(v6(other6, 54), BindOptions::default(), local),
        Err(BindError::AddrNotAvailable)
    );
}

#[test]
fn an_ipv4_mapped_binding_hears_ipv4_only() {
    let mut t = UdpTable::new(1);
    let mapped = t
        .bind(v6(HOST.to_ipv6_mapped(), 53), BindOptions::default(), local)
        .unwrap();
    assert_eq!(t.lookup(&key(addr(PEER, 9), addr(HOST, 53))), Some(mapped));
    assert_eq!(t.lookup(&key(addr(PEER, 9), addr(HOST2, 53))), None);
    assert_eq!(t.lookup6(&key6(PEER6, HOST6, 53)), None);
    assert_eq!(
        t.bind(v6(HOST.to_ipv6_mapped(), 54), V6_ONLY, local),
        Err(BindError::AddrNotAvailable),
        "v6-only cannot bind an IPv4-mapped address"
    );
}

#[test]
fn the_ipv4_mapped_wildcard_hears_every_ipv4_address_and_no_ipv6() {
    // ::ffff:0.0.0.0 is an IPv6 socket's IPv4 wildcard (Linux): not `::`,
    // so it hears no IPv6 and leaves a v6-only `::` room beside it.
    let mut t = UdpTable::new(1);
    let any4 = Ipv4Addr::UNSPECIFIED.to_ipv6_mapped();
    let mapped = t.bind(v6(any4, 53), BindOptions::default(), local).unwrap();
    assert_eq!(t.lookup(&key(addr(PEER, 9), addr(HOST, 53))), Some(mapped));
    assert_eq!(t.lookup(&key(addr(PEER, 9), addr(HOST2, 53))), Some(mapped));
    assert_eq!(t.lookup6(&key6(PEER6, HOST6, 53)), None);
    let only6 = t
        .bind(v6(Ipv6Addr::UNSPECIFIED, 53), V6_ONLY, local)
        .unwrap();
    assert_eq!(t.lookup6(&key6(PEER6, HOST6, 53)), Some(only6));
    assert_eq!(t.lookup(&key(addr(PEER, 9), addr(HOST, 53))), Some(mapped));
    assert_eq!(
        t.bind(
            addr(Ipv4Addr::UNSPECIFIED, 53),
            BindOptions::default(),
            local
        ),
        Err(BindError::AddrInUse),
        "the IPv4 wildcard is taken"
    );
    // It connects to IPv4 peers, given IPv4-mapped, and to no IPv6 one.
    assert!(!t.connect(mapped, v6(PEER6, 9)));
    assert!(t.connect(mapped, v6(PEER.to_ipv6_mapped(), 9)));
    assert_eq!(t.lookup(&key(addr(PEER, 9), addr(HOST, 53))), Some(mapped));
    assert_eq!(t.lookup(&key(addr(OTHER_PEER, 9), addr(HOST, 53))), None);
}

#[test]
fn for_ipv4_an_ipv4_socket_beats_a_dual_stack_one() {
    let mut t = UdpTable::new(1);
    let dual = t.bind(v6(Ipv6Addr::UNSPECIFIED, 53), REUSE, local).unwrap();
    let plain4 = t
        .bind(addr(Ipv4Addr::UNSPECIFIED, 53), REUSE, local)
        .unwrap();
    assert_eq!(t.lookup(&key(addr(PEER, 9), addr(HOST, 53))), Some(plain4));
    assert_eq!(t.lookup6(&key6(PEER6, HOST6, 53)), Some(dual));
}

#[test]
fn a_connected_dual_stack_socket_hears_only_its_ipv4_mapped_peer() {
    let mut t = UdpTable::new(1);
    let dual = t
        .bind(v6(Ipv6Addr::UNSPECIFIED, 53), BindOptions::default(), local)
        .unwrap();
    let peer = SocketAddrV6::new(PEER.to_ipv6_mapped(), 9, 0, 0);
    assert!(t.connect(dual, peer));
    assert_eq!(t.lookup(&key(addr(PEER, 9), addr(HOST, 53))), Some(dual));
    assert_eq!(t.lookup(&key(addr(OTHER_PEER, 9), addr(HOST, 53))), None);
    assert_eq!(t.peer_addr(dual), Some(addr(PEER, 9)));
    // An IPv4 socket cannot connect to an IPv6 peer.
    let four = t
        .bind(addr(HOST, 60), BindOptions::default(), local)
        .unwrap();
    assert!(!t.connect(four, SocketAddrV6::new(PEER6, 9, 0, 0)));
}

#[test]
fn ipv6_only_neighbours_keep_the_ipv4_shortcut() {
    let mut t = UdpTable::new(1);
    let four = t
        .bind(addr(HOST, 7), BindOptions::default(), local)
        .unwrap();
    let six = t.bind(v6(HOST6, 7), BindOptions::default(), local).unwrap();
    assert_ne!(t.ports[7] & SOLE, 0, "the IPv6 socket hears no IPv4");
    assert_eq!(t.lookup(&key(addr(PEER, 9), addr(HOST, 7))), Some(four));
    assert_eq!(t.lookup6(&key6(PEER6, HOST6, 7)), Some(six));
    // A dual-stack wildcard also hears IPv4: the walk decides again.
    let dual = t
        .bind(v6(Ipv6Addr::UNSPECIFIED, 7), REUSE, local)
        .map_err(|e| e.to_string());
    assert!(dual.is_err(), "overlaps the IPv4 socket without reuseport");
    let other = t
        .bind(v6(Ipv6Addr::UNSPECIFIED, 8), BindOptions::default(), local)
        .unwrap();
    let four8 = t.bind(addr(HOST2, 8), BindOptions::default(), local);
    assert_eq!(four8, Err(BindError::AddrInUse));
    assert_ne!(t.ports[8] & SOLE, 0);
    assert_eq!(t.lookup(&key(addr(PEER, 9), addr(HOST2, 8))), Some(other));
}

#[test]
fn a_socket_connects_only_to_peers_of_a_family_it_hears() {
    // Found by tests/lookup_oracle: Linux refuses both connects.
    let mut t = UdpTable::new(1);
    let peer6 = SocketAddrV6::new(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2), 9, 0, 0);
    let peer4 = SocketAddrV6::new(PEER.to_ipv6_mapped(), 9, 0, 0);
    // Bound to an IPv4-mapped address: IPv4 only (EAFNOSUPPORT for IPv6).
    let mapped = t
        .bind(
            v6(HOST.to_ipv6_mapped(), 4000),
            BindOptions::default(),
            local,
        )
        .unwrap();
    assert!(!t.connect(mapped, peer6));
    assert!(t.connect(mapped, peer4));
    // Bound to a specific IPv6 address: IPv6 only, v6-only flag or not
    // (ENETUNREACH for an IPv4-mapped peer).
    let specific = t
        .bind(v6(HOST6, 4001), BindOptions::default(), local)
        .unwrap();
    assert!(!t.connect(specific, peer4));
    assert!(t.connect(specific, peer6));
}

#[test]
fn connect_binds_a_wildcard_socket_to_the_route_source() {
    // Found by tests/lookup_oracle: Linux's connect binds a socket bound to
    // ANY to the source address of the route to its peer (and rehashes it),
    // so it no longer hears its peer at our other addresses.
    let mut t = UdpTable::new(1);
    let any = Ipv4Addr::UNSPECIFIED;
    let connected = t.bind(addr(any, 4000), REUSE, local).unwrap();
    let member = t.bind(addr(any, 4000), REUSE, local).unwrap();
    assert!(t.connect_from(connected, addr(PEER, 7000), IpAddr::V4(HOST)));
    assert_eq!(
        t.local_socket_addr(connected),
        Some(addr(HOST, 4000).into())
    );
    let from_peer = |dst| key(addr(PEER, 7000), addr(dst, 4000));
    assert_eq!(t.lookup(&from_peer(HOST)), Some(connected));
    // At another address the peer meets the group, which it left (Linux's
    // udp_lib_rehash detaches it): the remaining member.
    assert_eq!(t.lookup(&from_peer(HOST2)), Some(member));
    // Later binds conflict with the narrowed address only.
    assert!(t.close(member));
    let plain = BindOptions::default();
    assert_eq!(
        t.bind(addr(HOST, 4000), plain, local),
        Err(BindError::AddrInUse)
    );
    assert!(t.bind(addr(HOST2, 4000), plain, local).is_ok());
}

#[test]
fn connect_binds_a_dual_stack_socket_to_the_mapped_route_source() {
    let mut t = UdpTable::new(1);
    let dual = t
        .bind(
            v6(Ipv6Addr::UNSPECIFIED, 4000),
            BindOptions::default(),
            local,
        )
        .unwrap();
    let peer = SocketAddrV6::new(PEER.to_ipv6_mapped(), 7000, 0, 0);
    assert!(t.connect_from(dual, peer, IpAddr::V4(HOST)));
    assert_eq!(
        t.local_socket_addr(dual),
        Some(v6(HOST.to_ipv6_mapped(), 4000))
    );
    assert_eq!(
        t.lookup(&key(addr(PEER, 7000), addr(HOST, 4000))),
        Some(dual)
    );
    assert_eq!(t.lookup(&key(addr(PEER, 7000), addr(HOST2, 4000))), None);
    // Bound to an IPv4-mapped address now: no IPv6 traffic.
    assert_eq!(t.lookup6(&key6(HOST6, HOST6, 4000)), None);
}

#[test]
fn a_narrowed_connected_socket_is_met_before_a_group_at_its_new_address() {
    // Found by tests/lookup_oracle: a dual-stack socket connected to an
    // IPv4 peer is narrowed to an IPv4-mapped address where an IPv4
    // reuseport group sits. Linux's rehash puts it at the head of that
    // chain, so it scores before the group can answer for its peer.
    let mut t = UdpTable::new(1);
    let dual = t
        .bind(v6(Ipv6Addr::UNSPECIFIED, 4000), REUSE, local)
        .unwrap();
    let group = t.bind(addr(HOST, 4000), REUSE, local).unwrap();
    let peer = SocketAddrV6::new(PEER.to_ipv6_mapped(), 7000, 0, 0);
    assert!(t.connect_from(dual, peer, IpAddr::V4(HOST)));
    assert_eq!(
        t.lookup(&key(addr(PEER, 7000), addr(HOST, 4000))),
        Some(dual)
    );
    assert_eq!(
        t.lookup(&key(addr(PEER, 7001), addr(HOST, 4000))),
        Some(group)
    );
}

#[test]
fn a_connected_socket_takes_its_4_tuple_before_another_family_s_group() {
    // Found by tests/lookup_oracle: Linux 6.13+ looks connected sockets up
    // by their 4-tuple first (udp4_lib_lookup4), so an IPv4 reuseport group
    // at the same address, met first and answering at once, does not take
    // a connected IPv4-mapped socket's flow.
    let mut t = UdpTable::new(1);
    let mapped = t
        .bind(v6(HOST.to_ipv6_mapped(), 4000), REUSE, local)
        .unwrap();
    let group = t.bind(addr(HOST, 4000), REUSE, local).unwrap();
    let peer = SocketAddrV6::new(PEER.to_ipv6_mapped(), 7000, 0, 0);
    assert!(t.connect(mapped, peer));
    assert_eq!(
        t.lookup(&key(addr(PEER, 7000), addr(HOST, 4000))),
        Some(mapped)
    );
    assert_eq!(
        t.lookup(&key(addr(PEER, 7001), addr(HOST, 4000))),
        Some(group)
    );
}

/// [`key`] for a datagram that arrived on pipeline `lcore`.
fn key_on(src: SocketAddrV4, dst: SocketAddrV4, lcore: u16) -> FlowKey {
    FlowKey {
        lcore,
        ..key(src, dst)
    }
}

/// [`REUSE`] pinned to pipeline `lcore`.
fn pinned(lcore: u16) -> BindOptions {
    BindOptions {
        incoming_lcore: Some(lcore),
        ..REUSE
    }
}

/// Who receives 600 flows from `PEER` to `dst` arriving on `lcore`.
fn receivers(t: &UdpTable, dst: SocketAddrV4, lcore: u16) -> Vec<Option<SocketId>> {
    (1000..1600)
        .map(|src_port| t.lookup(&key_on(addr(PEER, src_port), dst, lcore)))
        .collect()
}

#[test]
fn reuseport_members_pinned_to_lcores_receive_their_lcore_s_flows() {
    let mut t = UdpTable::new(0x1234_5678);
    let dst = addr(HOST, 9000);
    let on_0 = t.bind(dst, pinned(0), local).unwrap();
    let on_1 = t.bind(dst, pinned(1), local).unwrap();
    assert_eq!(t.options(on_1).unwrap().incoming_lcore, Some(1));
    assert!(receivers(&t, dst, 0).iter().all(|&r| r == Some(on_0)));
    assert!(receivers(&t, dst, 1).iter().all(|&r| r == Some(on_1)));
    // An unpinned member: the pinned ones keep their lcores' flows, and on
    // an lcore nobody is pinned to the group's hash spreads over all three.
    let free = t.bind(dst, REUSE, local).unwrap();
    assert!(receivers(&t, dst, 0).iter().all(|&r| r == Some(on_0)));
    assert!(receivers(&t, dst, 1).iter().all(|&r| r == Some(on_1)));
    let elsewhere = receivers(&t, dst, 2);
    for member in [on_0, on_1, free] {
        let n = elsewhere.iter().filter(|&&r| r == Some(member)).count();
        assert!((100..300).contains(&n), "{member:?} got {n} of 600");
    }
    assert_eq!(
        receivers(&t, dst, 2),
        elsewhere,
        "a flow stays on its member"
    );
}

#[test]
fn members_pinned_to_one_lcore_share_its_flows_by_hash() {
    let mut t = UdpTable::new(99);
    let dst = addr(HOST, 9001);
    let a = t.bind(dst, pinned(1), local).unwrap();
    let b = t.bind(dst, pinned(1), local).unwrap();
    let c = t.bind(dst, pinned(0), local).unwrap();
    let got = receivers(&t, dst, 1);
    for member in [a, b] {
        let n = got.iter().filter(|&&r| r == Some(member)).count();
        assert!((200..400).contains(&n), "{member:?} got {n} of 600");
    }
    assert!(receivers(&t, dst, 0).iter().all(|&r| r == Some(c)));
}

#[test]
fn a_connected_member_takes_its_flow_on_every_lcore() {
    let mut t = UdpTable::new(7);
    let dst = addr(HOST, 4000);
    let on_0 = t.bind(dst, pinned(0), local).unwrap();
    let on_1 = t.bind(dst, pinned(1), local).unwrap();
    let connected = t.bind(dst, pinned(1), local).unwrap();
    assert!(t.connect(connected, addr(OTHER_PEER, 6000)));
    for lcore in 0..3 {
        assert_eq!(
            t.lookup(&key_on(addr(OTHER_PEER, 6000), dst, lcore)),
            Some(connected),
            "lcore {lcore}"
        );
    }
    // Connected, it is no longer picked for its lcore's other flows.
    assert!(receivers(&t, dst, 0).iter().all(|&r| r == Some(on_0)));
    assert!(receivers(&t, dst, 1).iter().all(|&r| r == Some(on_1)));
    assert!(receivers(&t, dst, 2)
        .iter()
        .all(|&r| r == Some(on_0) || r == Some(on_1)));
}

#[test]
fn a_closed_or_narrowed_pinned_member_leaves_its_lcore_to_the_hash() {
    let mut t = UdpTable::new(3);
    let dst = addr(HOST, 4100);
    let on_0 = t
        .bind(addr(Ipv4Addr::UNSPECIFIED, 4100), pinned(0), local)
        .unwrap();
    let on_1 = t
        .bind(addr(Ipv4Addr::UNSPECIFIED, 4100), pinned(1), local)
        .unwrap();
    let free = t
        .bind(addr(Ipv4Addr::UNSPECIFIED, 4100), REUSE, local)
        .unwrap();
    assert!(t.close(on_1));
    let got = receivers(&t, dst, 1);
    assert!(
        got.contains(&Some(on_0)) && got.contains(&Some(free)),
        "by hash"
    );
    assert!(got.iter().all(|&r| r == Some(on_0) || r == Some(free)));
    // Connected from HOST, the lcore-0 member is narrowed out of the group:
    // it keeps its peer, and lcore 0's other flows go to who is left.
    assert!(t.connect_from(on_0, addr(OTHER_PEER, 53), IpAddr::V4(HOST)));
    assert_eq!(t.lookup(&key_on(addr(OTHER_PEER, 53), dst, 1)), Some(on_0));
    assert!(receivers(&t, dst, 0).iter().all(|&r| r == Some(free)));
}

#[test]
fn a_pinned_socket_outside_a_group_hears_every_lcore() {
    let mut t = UdpTable::new(1);
    let options = BindOptions {
        incoming_lcore: Some(1),
        ..BindOptions::default()
    };
    let s = t.bind(addr(HOST, 4200), options, local).unwrap();
    for lcore in 0..3 {
        let k = key_on(addr(PEER, 1000), addr(HOST, 4200), lcore);
        assert_eq!(t.lookup(&k), Some(s));
    }
}

#[test]
fn ipv6_members_pinned_to_lcores_receive_their_lcore_s_flows() {
    let mut t = UdpTable::new(5);
    let on_0 = t.bind(v6(HOST6, 9000), pinned(0), local).unwrap();
    let on_1 = t.bind(v6(HOST6, 9000), pinned(1), local).unwrap();
    for lcore in [0, 1] {
        let want = [on_0, on_1][usize::from(lcore)];
        for src_port in 1000..1100 {
            let k = FlowKey6 {
                src: SocketAddrV6::new(PEER6, src_port, 0, 0),
                lcore,
                ..key6(PEER6, HOST6, 9000)
            };
            assert_eq!(t.lookup6(&k), Some(want));
        }
    }
}

/// True if the flows arriving on `lcore` go to `members` only, and each
/// of them gets some.
fn only(t: &UdpTable, lcore: u16, members: &[SocketId]) -> bool {
    let got = receivers(t, addr(HOST, 4300), lcore);
    got.iter().all(|r| r.is_some_and(|r| members.contains(&r)))
        && members.iter().all(|&m| got.contains(&Some(m)))
}

#[test]
fn pins_on_scattered_lcores_survive_members_coming_and_going() {
    let mut t = UdpTable::new(11);
    let dst = addr(HOST, 4300);
    let on_3 = t.bind(dst, pinned(3), local).unwrap();
    let on_1 = t.bind(dst, pinned(1), local).unwrap();
    let also_on_3 = t.bind(dst, pinned(3), local).unwrap();
    let on_0 = t.bind(dst, pinned(0), local).unwrap();
    assert!(only(&t, 0, &[on_0]));
    assert!(only(&t, 1, &[on_1]));
    assert!(only(&t, 3, &[on_3, also_on_3]));
    assert!(only(&t, 2, &[on_0, on_1, on_3, also_on_3]), "nobody on 2");
    assert!(t.close(on_1));
    assert!(t.close(on_3));
    assert!(only(&t, 0, &[on_0]));
    assert!(
        only(&t, 1, &[on_0, also_on_3]),
        "by hash once 1's member left"
    );
    assert!(only(&t, 3, &[also_on_3]));
    assert!(t.close(also_on_3));
    let back = t.bind(dst, pinned(2), local).unwrap();
    assert!(only(&t, 2, &[back]));
    assert!(only(&t, 3, &[on_0, back]));
}

#[test]
fn a_group_its_last_member_left_is_reused_not_kept() {
    // Servers open and close reuseport sockets for as long as they run;
    // the table is cloned on every change, so dead groups would cost each
    // bind, connect and close more.
    let mut t = UdpTable::new(1);
    for round in 0..1000u16 {
        let port = 5000 + round % 7;
        let a = t.bind(addr(HOST, port), REUSE, local).unwrap();
        let b = t.bind(addr(HOST, port), REUSE, local).unwrap();
        assert!(t.close(a) && t.close(b));
        // A member narrowed by connect leaves its group too.
        let c = t
            .bind(addr(Ipv4Addr::UNSPECIFIED, port), REUSE, local)
            .unwrap();
        assert!(t.connect_from(c, addr(PEER, 9), IpAddr::V4(HOST)));
        assert!(t.close(c));
    }
    assert!(
        t.groups.len() <= 2,
        "{} groups for 2 live at most",
        t.groups.len()
    );
    // A reused group serves as a new one.
    let a = t.bind(addr(HOST, 53), REUSE, local).unwrap();
    let b = t.bind(addr(HOST, 53), REUSE, local).unwrap();
    let picked: std::collections::BTreeSet<_> = (0..64)
        .filter_map(|p| t.lookup(&key(addr(PEER, 1000 + p), addr(HOST, 53))))
        .collect();
    assert_eq!(picked, [a, b].into_iter().collect());
}
