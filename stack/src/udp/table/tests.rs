//! Table tests: each row is a set of sockets, a datagram, and the socket that
//! must receive it, pinning Linux's UDP lookup semantics.

use super::*;

const HOST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const HOST2: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 5);
const PEER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
const OTHER_PEER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 3);

fn local(ip: Ipv4Addr) -> bool {
    ip == HOST || ip == HOST2
}

fn addr(ip: Ipv4Addr, port: u16) -> SocketAddrV4 {
    SocketAddrV4::new(ip, port)
}

fn key(src: SocketAddrV4, dst: SocketAddrV4) -> FlowKey {
    FlowKey {
        src,
        dst,
        device: 0,
    }
}

const REUSE: BindOptions = BindOptions {
    reuse_port: true,
    device: None,
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
    for _ in 0..400 {
        match rng.next(4) {
            0 | 1 => {
                let options = BindOptions {
                    reuse_port: rng.next(3) == 0,
                    device: (rng.next(4) == 0).then_some(rng.next(2) as u16),
                };
                let local_addr = addr(ips[rng.next(3) as usize], 5000 + rng.next(3) as u16);
                if let Ok(id) = t.bind(local_addr, options, local) {
                    open.push(id);
                }
            }
            2 if !open.is_empty() => {
                let id = open[rng.next(open.len() as u64) as usize];
                let peer = addr(peers[rng.next(2) as usize], rng.next(2) as u16 * 9);
                t.connect(id, peer);
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
                        };
                        assert_eq!(t.lookup(&k), t.lookup_chain(&k, head_of(slot)), "{k:?}");
                    }
                }
            }
        }
    }
    assert!(shortcuts > 50, "the shortcut was exercised ({shortcuts})");
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
