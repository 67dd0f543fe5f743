//! Socket groups ([`UdpGroup`]): receive across members in one call, batch
//! send, zero-copy forward, membership, errors naming their socket; and
//! `UdpSocket::send_batch`.

use super::*;

fn udp_of(frame: &[u8]) -> (u16, u16, Vec<u8>) {
    let eth = EthernetFrame::new_checked(frame).unwrap();
    let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
    let udp = UdpPacket::new_checked(ip.payload()).unwrap();
    let pseudo = crate::wire::checksum::pseudo_header_v4(
        ip.src(),
        ip.dst(),
        crate::wire::ipv4::protocol::UDP,
        udp.len(),
    );
    assert!(udp.verify_checksum(pseudo), "valid checksum");
    (udp.src_port(), udp.dst_port(), udp.payload().to_vec())
}

#[test]
fn a_group_receives_across_its_members_in_one_call_with_socket_and_time() {
    let lcore = Lcore::start(16);
    let group = lcore.handle.udp_group(64);
    let members: Vec<SocketId> = (0..3)
        .map(|i| {
            group
                .bind(SocketAddrV4::new(OUR_IP, 5000 + i), BindOptions::default())
                .unwrap()
                .0
        })
        .collect();
    let outsider = lcore
        .handle
        .udp_bind(SocketAddrV4::new(OUR_IP, 5003))
        .unwrap();
    lcore.wait_for_tx(1); // the announcement
    let group = Arc::new(group);
    let receiver = {
        let group = Arc::clone(&group);
        thread::spawn(move || {
            let mut got = Vec::new();
            while got.len() < 4 {
                group
                    .recv_batch(&mut got, 64, Some(Duration::from_secs(5)))
                    .unwrap();
            }
            let seen: Vec<(SocketId, Vec<u8>, Instant)> = got
                .iter()
                .map(|d| (d.socket(), d.payload().to_vec(), d.received_at()))
                .collect();
            seen
        })
    };
    wait_until_blocked(|| group.blocked_readers());
    lcore.inject(&[
        frame_to(5002, b"c"),
        frame_to(5000, b"a"),
        frame_to(5003, b"outsider"),
        frame_to(5001, b"b"),
        frame_to(5000, b"a2"),
    ]);
    let seen = receiver.join().unwrap();
    let order: Vec<(SocketId, Vec<u8>)> = seen.iter().map(|(s, p, _)| (*s, p.clone())).collect();
    assert_eq!(
        order,
        vec![
            (members[2], b"c".to_vec()),
            (members[0], b"a".to_vec()),
            (members[1], b"b".to_vec()),
            (members[0], b"a2".to_vec()),
        ]
    );
    let stamp = seen[0].2;
    assert!(stamp > Instant::ZERO, "stamped with the poll's time");
    assert!(seen.iter().all(|s| s.2 == stamp), "one burst, one time");
    assert_eq!(group.queued(), 0);
    let mut own = Vec::new();
    outsider
        .recv_batch(&mut own, 8, Some(Duration::from_secs(5)))
        .unwrap();
    assert_eq!(
        own[0].payload(),
        b"outsider",
        "other sockets keep their queue"
    );
}

#[test]
fn a_group_sends_batches_and_forwards_without_copying() {
    let lcore = Lcore::start(16);
    lcore.learn_peer();
    let group = lcore.handle.udp_group(64);
    let (a, _) = group
        .bind(SocketAddrV4::new(OUR_IP, 6000), BindOptions::default())
        .unwrap();
    let (b, _) = group
        .bind(SocketAddrV4::new(OUR_IP, 6002), BindOptions::default())
        .unwrap();
    let peer = |p| SocketAddr::V4(SocketAddrV4::new(PEER_IP, p));
    let batch: [(SocketId, SocketAddr, &[u8]); 3] = [
        (a, peer(7000), b"one"),
        (b, peer(7002), b"two"),
        (a, peer(7004), b"three"),
    ];
    assert_eq!(group.send_batch(batch), Ok(3));
    let out: Vec<_> = lcore.wait_for_tx(3).iter().map(|f| udp_of(f)).collect();
    assert_eq!(
        out,
        vec![
            (6000, 7000, b"one".to_vec()),
            (6002, 7002, b"two".to_vec()),
            (6000, 7004, b"three".to_vec()),
        ]
    );

    // A received datagram forwarded from the other member, as a relay does.
    lcore.inject(&[frame_to(6000, b"media")]);
    let mut got = Vec::new();
    group
        .recv_batch(&mut got, 8, Some(Duration::from_secs(5)))
        .unwrap();
    let datagram = got.pop().unwrap();
    assert_eq!(group.forward(datagram, b, peer(7002)), Ok(5));
    let out = lcore.wait_for_tx(1);
    assert_eq!(udp_of(&out[0]), (6002, 7002, b"media".to_vec()));
    assert_eq!(lcore.counters.get(Stat::UdpOutDatagrams), 4);
    assert_eq!(lcore.port.lock().unwrap().buffers_in_use(), 0);
}

#[test]
fn closing_a_member_and_dropping_the_group_unbind_their_ports() {
    let lcore = Lcore::start(16);
    let group = lcore.handle.udp_group(16);
    let (a, _) = group
        .bind(SocketAddrV4::new(OUR_IP, 5000), BindOptions::default())
        .unwrap();
    let (b, _) = group
        .bind(SocketAddrV4::new(OUR_IP, 5001), BindOptions::default())
        .unwrap();
    assert_eq!(
        group
            .bind(SocketAddrV4::new(OUR_IP, 5001), BindOptions::default())
            .err(),
        Some(SocketError::Bind(BindError::AddrInUse))
    );
    assert!(group.close(a));
    assert!(!group.close(a), "not a member any more");
    assert_eq!(group.members(), vec![b]);
    assert_eq!(
        group.connect(a, SocketAddrV4::new(PEER_IP, 1)),
        Err(SocketError::NotMember)
    );
    let rebind = |port| {
        (0..1000).any(|_| {
            let ok = lcore
                .handle
                .udp_bind(SocketAddrV4::new(OUR_IP, port))
                .is_ok();
            if !ok {
                thread::sleep(Duration::from_millis(1));
            }
            ok
        })
    };
    assert!(rebind(5000), "a closed member's port is free");
    drop(group);
    assert!(rebind(5001), "a dropped group's ports are free");
}

#[test]
fn an_icmp_error_for_a_connected_member_names_it() {
    let lcore = Lcore::start(16);
    let group = lcore.handle.udp_group(16);
    let (_, _) = group
        .bind(SocketAddrV4::new(OUR_IP, 4999), BindOptions::default())
        .unwrap();
    let (member, _) = group
        .bind(SocketAddrV4::new(OUR_IP, 5000), BindOptions::default())
        .unwrap();
    group
        .connect(member, SocketAddrV4::new(PEER_IP, 53))
        .unwrap();
    // No wait for the lcore to apply the connect: a poll runs the queued
    // commands before it receives, and the connect is queued first.
    lcore.inject(&[icmp_error_frame(3, 3, 5000, 53)]);
    let mut got = Vec::new();
    assert_eq!(
        group.recv_batch(&mut got, 8, Some(Duration::from_secs(5))),
        Err(SocketError::PeerOn(member, PeerError::Refused))
    );
}

#[test]
fn a_socket_sends_a_batch_and_reports_what_it_queued() {
    let lcore = Lcore::start(16);
    lcore.learn_peer();
    let socket = lcore
        .handle
        .udp_bind(SocketAddrV4::new(OUR_IP, 6000))
        .unwrap();
    let peer = |p| SocketAddr::V4(SocketAddrV4::new(PEER_IP, p));
    let batch: [(SocketAddr, &[u8]); 2] = [(peer(7000), b"x"), (peer(7001), b"yz")];
    assert_eq!(socket.send_batch(batch), Ok(2));
    let out: Vec<_> = lcore.wait_for_tx(2).iter().map(|f| udp_of(f)).collect();
    assert_eq!(
        out,
        vec![(6000, 7000, b"x".to_vec()), (6000, 7001, b"yz".to_vec())]
    );
    // Nothing queued yet; then one datagram waits.
    assert_eq!(socket.queued(), 0);
    lcore.inject(&[frame_to(6000, b"in")]);
    for _ in 0..2000 {
        if socket.queued() == 1 {
            break;
        }
        thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(socket.queued(), 1);
}

#[test]
fn a_send_from_a_member_closed_before_it_left_is_a_counted_drop() {
    // Queued sends are accepted before the lcore sees them: one from a
    // socket closed meanwhile is a drop, counted, not a datagram that
    // vanishes.
    let lcore = Lcore::start(16);
    lcore.learn_peer();
    let group = lcore.handle.udp_group(16);
    let (member, _) = group
        .bind(SocketAddrV4::new(OUR_IP, 5000), BindOptions::default())
        .unwrap();
    assert!(group.close(member));
    // Commands run in order: once a later one is answered, the close is
    // applied (a TCP listen takes no UDP socket id).
    let _barrier = lcore
        .handle
        .tcp_listen(SocketAddrV4::new(OUR_IP, 80), 1)
        .unwrap();
    let peer = SocketAddrV4::new(PEER_IP, 7777);
    assert_eq!(group.send_to(member, b"late", peer), Ok(4));
    for _ in 0..5000 {
        if lcore.counters.total_dropped() > 0 {
            break;
        }
        thread::sleep(Duration::from_millis(1));
    }
    let counters = lcore.counters.nonzero();
    assert_eq!(
        lcore.counters.dropped(DropReason::TxNoSocket),
        1,
        "{counters:?}"
    );
    assert_eq!(lcore.counters.total_dropped(), 1, "{counters:?}");
    assert!(
        lcore.port.lock().unwrap().take_tx().is_empty(),
        "nothing sent"
    );
}

#[test]
fn a_send_to_a_family_the_socket_cannot_speak_is_a_counted_drop() {
    let lcore = Lcore::start(16);
    let group = lcore.handle.udp_group(16);
    let (ipv4, _) = group
        .bind(SocketAddrV4::new(OUR_IP, 5000), BindOptions::default())
        .unwrap();
    let v6_only = BindOptions {
        v6_only: true,
        ..BindOptions::default()
    };
    let any6 = core::net::SocketAddrV6::new(core::net::Ipv6Addr::UNSPECIFIED, 5002, 0, 0);
    let (ipv6, _) = group.bind(any6, v6_only).unwrap();
    let peer6: core::net::Ipv6Addr = "2001:db8::2".parse().unwrap();
    let to6 = core::net::SocketAddrV6::new(peer6, 7777, 0, 0);
    assert_eq!(group.send_to(ipv4, b"to v6", to6), Ok(5));
    assert_eq!(
        group.send_to(ipv6, b"to v4", SocketAddrV4::new(PEER_IP, 7777)),
        Ok(5)
    );
    for _ in 0..5000 {
        if lcore.counters.total_dropped() >= 2 {
            break;
        }
        thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(
        lcore.counters.total_dropped(),
        2,
        "{:?}",
        lcore.counters.nonzero()
    );
}

#[test]
fn a_closed_members_queued_datagrams_go_with_it_not_to_a_member_bound_after() {
    // Linux frees a closed socket's queue with it. A group's queue outlives
    // its members, and a closed member's id names the next socket bound:
    // its datagrams must not come out under that new member's name.
    let lcore = Lcore::start(16);
    let group = lcore.handle.udp_group(64);
    let bind = |port| {
        group
            .bind(SocketAddrV4::new(OUR_IP, port), BindOptions::default())
            .unwrap()
            .0
    };
    let (closing, staying) = (bind(5000), bind(5001));
    lcore.inject(&[
        frame_to(5000, b"to the closed one"),
        frame_to(5001, b"kept"),
        frame_to(5000, b"to the closed one"),
    ]);
    for _ in 0..2000 {
        if group.queued() == 3 {
            break;
        }
        thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(group.queued(), 3);
    assert!(group.close(closing));
    // The bind waits for the lcore, which takes the close first.
    let newcomer = bind(5002);
    assert_eq!(newcomer, closing, "the closed member's id is reused");
    let mut got = Vec::new();
    group
        .recv_batch(&mut got, 8, Some(Duration::from_millis(100)))
        .unwrap();
    let seen: Vec<(SocketId, Vec<u8>)> = got
        .iter()
        .map(|d| (d.socket(), d.payload().to_vec()))
        .collect();
    assert_eq!(seen, [(staying, b"kept".to_vec())]);
    assert_eq!(group.queued(), 0);
}

#[test]
fn a_closed_members_pending_icmp_error_is_not_reported_for_a_member_bound_after() {
    // Linux's pending socket error (sk_err) goes with the closed socket;
    // the member bound after it takes its id and must not be named by it.
    let lcore = Lcore::start(16);
    let group = lcore.handle.udp_group(16);
    let (staying, _) = group
        .bind(SocketAddrV4::new(OUR_IP, 4999), BindOptions::default())
        .unwrap();
    let (closing, _) = group
        .bind(SocketAddrV4::new(OUR_IP, 5000), BindOptions::default())
        .unwrap();
    group
        .connect(closing, SocketAddrV4::new(PEER_IP, 53))
        .unwrap();
    lcore.inject(&[icmp_error_frame(3, 3, 5000, 53)]);
    let waited = (0..2000).any(|_| {
        let seen = lcore.counters.get(Stat::IcmpInErrors) == 1;
        if !seen {
            thread::sleep(Duration::from_millis(1));
        }
        seen
    });
    assert!(waited, "the error was received");
    // A later poll: the error's poll, which records it, has ended by then.
    lcore.inject(&[frame_to(4999, b"kept")]);
    let queued = (0..2000).any(|_| {
        let seen = group.queued() == 1;
        if !seen {
            thread::sleep(Duration::from_millis(1));
        }
        seen
    });
    assert!(queued, "the datagram was queued");
    assert!(group.close(closing));
    // The bind waits for the lcore, which takes the close first.
    let (newcomer, _) = group
        .bind(SocketAddrV4::new(OUR_IP, 5001), BindOptions::default())
        .unwrap();
    assert_eq!(newcomer, closing, "the closed member's id is reused");
    let mut got = Vec::new();
    assert_eq!(
        group.recv_batch(&mut got, 8, Some(Duration::from_millis(100))),
        Ok(1)
    );
    assert_eq!(got[0].socket(), staying);
    assert_eq!(
        group.recv_batch(&mut got, 8, Some(Duration::from_millis(50))),
        Err(SocketError::TimedOut),
        "the closed member's error is not the newcomer's"
    );
}
