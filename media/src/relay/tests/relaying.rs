//! Relaying and echo over the in-memory port: rewriting, latching, the
//! statistics' figures, RTCP and rtcp-mux, every drop reason, probation,
//! snapshots, `auto` ports, DSCP and in-place forwarding,
//! connect-on-latch.

use super::*;

#[test]
fn rtp_is_relayed_both_ways_with_addresses_and_ports_rewritten() {
    let mut net = Net::new(&one_call(false), options(), 4096);
    let a = at(A_IP, 5004);
    for seq in 100..110 {
        net.send(a, 30000, &rtp(0xaaaa, seq));
        net.advance(20);
    }
    let sent = net.run();
    assert_eq!(sent.len(), 10);
    for (i, s) in sent.iter().enumerate() {
        assert_eq!(s.src, at(RELAY_IP, 30002), "from leg B's port");
        assert_eq!(s.dst, at(B_IP, 6000), "to leg B's signalled peer");
        assert_eq!(s.payload, rtp(0xaaaa, 100 + i as u16), "untouched");
    }
    // B answers from another port than signalled (a NAT): B latches onto
    // it, and the answer goes to where A sends from.
    let b = at(B_IP, 6100);
    net.send(b, 30002, &rtp(0xbbbb, 7));
    let sent = net.run();
    assert_eq!(sent.len(), 1);
    assert_eq!((sent[0].src, sent[0].dst), (at(RELAY_IP, 30000), a));
    net.send(a, 30000, &rtp(0xaaaa, 110));
    assert_eq!(net.run()[0].dst, b, "B's latched address now");
    let report = net.report();
    let a_stream = "session call leg A ssrc 0x0000aaaa";
    assert_eq!(field(&report, a_stream, "packets"), 11);
    assert_eq!(field(&report, a_stream, "bytes"), 11 * 160);
    assert_eq!(field(&report, a_stream, "lost"), 0);
    assert_eq!(field(&report, "session call leg A peer", "forwarded"), 11);
    assert_eq!(field(&report, "session call leg B peer", "forwarded"), 1);
    assert!(report.contains("session call leg B peer 10.9.0.3:6100 latched yes"));
    assert!(report.contains("relay drops: none"), "{report}");
}

#[test]
fn loss_reordering_and_duplicates_show_in_the_statistics() {
    let mut net = Net::new(&one_call(false), options(), 4096);
    let a = at(A_IP, 5004);
    // 1..=20 with 5 and 6 lost, 9 late (after 10) and 12 twice.
    let mut order: Vec<u16> = (1..=20).filter(|s| ![5, 6, 9].contains(s)).collect();
    let ten = order.iter().position(|&s| s == 10).unwrap();
    order.insert(ten + 1, 9);
    let twelve = order.iter().position(|&s| s == 12).unwrap();
    order.insert(twelve + 1, 12);
    for &seq in &order {
        net.send(a, 30000, &rtp(0x1234, seq));
        net.run();
        net.advance(20);
    }
    let report = net.report();
    let stream = "session call leg A ssrc 0x00001234";
    assert_eq!(field(&report, stream, "packets"), 19);
    // Probation takes packet 1; counts start at 2: 2..=20 expected.
    assert_eq!(field(&report, stream, "expected"), 19);
    assert_eq!(field(&report, stream, "lost"), 1, "2 lost, 1 duplicate");
    assert_eq!(field(&report, stream, "out-of-order"), 1);
    assert_eq!(field(&report, stream, "duplicates"), 1);
    assert_eq!(
        field(&report, "session call leg A peer", "forwarded"),
        19,
        "a relay forwards duplicates and late packets too"
    );
}

#[test]
fn jitter_follows_the_arrival_times() {
    let mut net = Net::new(&one_call(false), options(), 4096);
    let a = at(A_IP, 5004);
    // Packets 20 ms apart in RTP time arriving alternately 10 and 30 ms
    // apart: |D| is 10 ms = 80 units each time from the third packet on.
    for seq in 0..200u16 {
        net.send(a, 30000, &rtp(7, seq));
        net.run();
        net.advance(if seq % 2 == 0 { 10 } else { 30 });
    }
    let report = net.report();
    let jitter = field(
        &report,
        "session call leg A ssrc 0x00000007",
        "jitter-units",
    );
    assert!(
        (75..=80).contains(&jitter),
        "jitter {jitter} units:\n{report}"
    );
}

#[test]
fn rtcp_goes_between_the_odd_ports_and_sender_reports_are_noted() {
    let mut net = Net::new(&one_call(false), options(), 4096);
    let a = at(A_IP, 5004);
    net.send(a, 30000, &rtp(0x55, 1));
    net.run();
    net.send(at(A_IP, 5005), 30001, &sender_report(0x55));
    let sent = net.run();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].src, at(RELAY_IP, 30003), "from leg B's RTCP port");
    assert_eq!(sent[0].dst, at(B_IP, 6001), "to B's RTP port + 1");
    assert_eq!(sent[0].payload, sender_report(0x55));
    // RTP sent to an RTCP port is not RTCP.
    net.send(a, 30001, &rtp(0x55, 2));
    assert!(net.run().is_empty());
    let snapshot = net.relay.snapshot();
    assert_eq!(drops(&snapshot, RelayDrop::BadRtcp), 1);
    let leg = &snapshot.sessions[0].legs[0].counters;
    assert_eq!((leg.rtcp, leg.rtcp_forwarded, leg.dropped), (1, 1, 1));
}

#[test]
fn rtcp_on_a_non_mux_legs_rtp_port_is_relayed_as_rtcp() {
    // Implicit rtcp-mux: the RTP port tells RTCP by its packet type
    // (RFC 5761 4) even on a leg that has an RTCP port of its own.
    let mut net = Net::new(&one_call(false), options(), 4096);
    let a = at(A_IP, 5004);
    net.send(a, 30000, &rtp(0x77, 1));
    assert_eq!(net.run().len(), 1);
    net.send(a, 30000, &sender_report(0x77));
    let sent = net.run();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].src, at(RELAY_IP, 30003), "from leg B's RTCP port");
    assert_eq!(sent[0].dst, at(B_IP, 6001), "to B's RTCP port");
    assert_eq!(sent[0].payload, sender_report(0x77));
    let snapshot = net.relay.snapshot();
    assert_eq!(drops(&snapshot, RelayDrop::BadRtp), 0);
    let leg = &snapshot.sessions[0].legs[0].counters;
    assert_eq!(
        (leg.forwarded, leg.rtcp, leg.rtcp_forwarded, leg.dropped),
        (1, 1, 1, 0)
    );
    let report = net.report();
    assert!(report.contains(" rtcp 1 rtcp-forwarded 1 "), "{report}");
    // A's RTCP came from its RTP port, so RTCP for A goes back there, and
    // from A's RTP port: the pair A sends on is the one a NAT lets in.
    net.send(at(B_IP, 6001), 30003, &sender_report(0x88));
    let sent = net.run();
    assert_eq!(sent.len(), 1);
    assert_eq!((sent[0].src, sent[0].dst), (at(RELAY_IP, 30000), a));
    // Once A sends RTCP to the RTCP port again, it gets it there.
    net.send(at(A_IP, 5005), 30001, &sender_report(0x77));
    assert_eq!(net.run().len(), 1);
    net.send(at(B_IP, 6001), 30003, &sender_report(0x88));
    let sent = net.run();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        (sent[0].src, sent[0].dst),
        (at(RELAY_IP, 30001), at(A_IP, 5005))
    );
}

#[test]
fn implicitly_muxed_rtcp_does_not_connect_the_rtcp_socket() {
    let mut opts = options();
    opts.connect_on_latch = true;
    let mut net = Net::new(&one_call(false), opts, 4096);
    let a = at(A_IP, 5004);
    net.send(a, 30000, &rtp(0x77, 1));
    net.send(a, 30000, &sender_report(0x77));
    assert_eq!(net.run().len(), 2);
    // A's RTCP port still hears A's usual RTCP port.
    net.send(at(A_IP, 5005), 30001, &sender_report(0x77));
    assert_eq!(net.run().len(), 1, "relayed, not refused");
    assert_eq!(net.iface.counters().dropped(DropReason::UdpNoSocket), 0);
}

#[test]
fn rtcp_mux_shares_the_rtp_ports() {
    let mut net = Net::new(&one_call(true), options(), 4096);
    let a = at(A_IP, 5004);
    net.send(a, 30000, &rtp(0x66, 1));
    net.send(a, 30000, &sender_report(0x66));
    let sent = net.run();
    assert_eq!(sent.len(), 2);
    for s in &sent {
        assert_eq!((s.src, s.dst), (at(RELAY_IP, 30002), at(B_IP, 6000)));
    }
    // Nothing listens on the odd ports.
    net.send(a, 30001, &sender_report(0x66));
    net.run();
    assert_eq!(net.relay.snapshot().sessions[0].legs[0].counters.rtcp, 1);
}

#[test]
fn under_rtcp_mux_the_rtp_peer_owns_rtcp_too() {
    // RFC 5761: muxed RTCP comes from the RTP transport address. Once A's
    // RTP is latched, RTCP from another source on A's port is foreign: it
    // must not latch RTCP onto itself and take the RTCP meant for A.
    for mux in [true, false] {
        let mut net = Net::new(&one_call(mux), options(), 4096);
        let (a, other) = (at(A_IP, 5004), at(A_IP, 5008));
        net.send(a, 30000, &rtp(0x66, 1));
        assert_eq!(net.run().len(), 1);
        net.send(other, 30000, &sender_report(0x99));
        assert!(net.run().is_empty(), "mux {mux}: foreign RTCP relayed");
        assert_eq!(drops(&net.relay.snapshot(), RelayDrop::Foreign), 1);
        // B's RTCP goes to A (its RTP port under mux, else the next one).
        let (b_rtcp, to_b) = if mux { (6000, 30002) } else { (6001, 30003) };
        net.send(at(B_IP, b_rtcp), to_b, &sender_report(0x88));
        let sent = net.run();
        let to_a = if mux { a } else { at(A_IP, 5005) };
        assert_eq!(sent.len(), 1, "mux {mux}");
        assert_eq!(sent[0].dst, to_a, "mux {mux}");
        // A's own RTCP still passes.
        net.send(a, 30000, &sender_report(0x66));
        assert_eq!(net.run().len(), 1, "mux {mux}");
    }
}

#[test]
fn foreign_sources_garbage_and_missing_peers_are_dropped_by_reason() {
    let mut specs = one_call(false);
    specs[0].legs[1].peer = None;
    let mut net = Net::new(&specs, options(), 4096);
    let a = at(A_IP, 5004);
    // B has neither sent nor been signalled: nowhere to relay to.
    net.send(a, 30000, &rtp(1, 1));
    // Another source on A's port once A is latched.
    net.send(at(A_IP, 5008), 30000, &rtp(2, 1));
    // STUN-ish, RTP version 1, a CSRC list past the end.
    net.send(a, 30000, &[0, 1, 0, 0, 0x21, 0x12, 0xa4, 0x42]);
    let mut v1 = rtp(1, 2);
    v1[0] = 0x40;
    net.send(a, 30000, &v1);
    let mut csrcs = rtp(1, 3);
    csrcs.truncate(20);
    csrcs[0] = 0x8f;
    net.send(a, 30000, &csrcs);
    assert!(net.run().is_empty());
    let snapshot = net.relay.snapshot();
    assert_eq!(drops(&snapshot, RelayDrop::NoPeer), 1);
    assert_eq!(drops(&snapshot, RelayDrop::Foreign), 1);
    assert_eq!(drops(&snapshot, RelayDrop::NotRtp), 2);
    assert_eq!(drops(&snapshot, RelayDrop::BadRtp), 1);
    let leg = &snapshot.sessions[0].legs[0].counters;
    assert_eq!((leg.foreign, leg.dropped, leg.forwarded), (1, 5, 0));
    let report = net.report();
    assert!(
        report.contains("relay drops: not_rtp 2 bad_rtp 1 foreign_source 1 no_peer 1"),
        "{report}"
    );
}

#[test]
fn probation_holds_media_until_the_source_is_learned() {
    let mut opts = options();
    opts.latch.probation = 3;
    let mut net = Net::new(&one_call(false), opts, 4096);
    let a = at(A_IP, 5004);
    for seq in 1..=5 {
        net.send(a, 30000, &rtp(9, seq));
    }
    assert_eq!(net.run().len(), 3, "the third packet latches");
    let snapshot = net.relay.snapshot();
    assert_eq!(drops(&snapshot, RelayDrop::Learning), 2);
}

#[test]
fn echo_mode_reflects_media_to_its_sender() {
    let mut opts = options();
    opts.echo = true;
    let mut net = Net::new(&one_call(false), opts, 4096);
    let a = at(A_IP, 5004);
    let b = at(B_IP, 7000);
    net.send(a, 30000, &rtp(1, 1));
    net.send(b, 30002, &rtp(2, 1));
    net.send(at(A_IP, 5005), 30001, &sender_report(1));
    let sent = net.run();
    let pairs: Vec<_> = sent.iter().map(|s| (s.src, s.dst)).collect();
    assert_eq!(
        pairs,
        [
            (at(RELAY_IP, 30000), a),
            (at(RELAY_IP, 30002), b),
            (at(RELAY_IP, 30001), at(A_IP, 5005)),
        ]
    );
    assert_eq!(sent[0].payload, rtp(1, 1));
}

#[test]
fn statistics_requests_are_served_from_the_poll() {
    let mut net = Net::new(&one_call(false), options(), 4096);
    let requested = Arc::new(AtomicBool::new(false));
    let (requests_tx, requests_rx) = crossbeam_channel::bounded(1);
    let (replies_tx, replies_rx) = crossbeam_channel::bounded(1);
    net.relay.set_stats_link(StatsLink {
        requested: Arc::clone(&requested),
        requests: requests_rx,
        replies: replies_tx,
    });
    net.send(at(A_IP, 5004), 30000, &rtp(3, 1));
    net.run();
    net.poll();
    assert!(replies_rx.try_recv().is_err(), "nothing unasked");
    requests_tx
        .send(Snapshot {
            sessions: Vec::with_capacity(1),
            drops: Default::default(),
        })
        .unwrap();
    requested.store(true, Ordering::Release);
    net.poll();
    let snapshot = replies_rx.try_recv().expect("answered in one poll");
    assert_eq!(snapshot.sessions.len(), 1);
    assert_eq!(snapshot.sessions[0].legs[0].streams[0].counters.packets, 1);
    assert!(!requested.load(Ordering::Acquire));
}

#[test]
fn auto_ports_come_from_the_range_around_fixed_ones() {
    let specs = config::parse(
        "session one auto auto\nsession two 40000 auto mux\nsession three auto 40002",
    )
    .unwrap();
    let cidr = Ipv4Cidr::new(RELAY_IP, 24).unwrap();
    let mut iface: Interface<MemBuf> =
        Interface::new(InterfaceConfig::new(RELAY_MAC, cidr)).unwrap();
    let (_, ports) = Relay::build(&mut iface, RELAY_IP, &specs, 40000..=40011, options()).unwrap();
    assert_eq!(ports, [[40004, 40006], [40000, 40008], [40010, 40002]]);
    let mut iface: Interface<MemBuf> =
        Interface::new(InterfaceConfig::new(RELAY_MAC, cidr)).unwrap();
    let error = Relay::build(&mut iface, RELAY_IP, &specs, 40000..=40009, options()).unwrap_err();
    assert!(
        matches!(&error, StartError::Spec(SpecError::Auto { session, .. }) if session == "three"),
        "{error}"
    );
    assert!(error.to_string().contains("session three"), "{error}");
}

#[test]
fn a_peer_at_the_relay_s_own_address_is_refused() {
    let cidr = Ipv4Cidr::new(RELAY_IP, 24).unwrap();
    let mut iface: Interface<MemBuf> =
        Interface::new(InterfaceConfig::new(RELAY_MAC, cidr)).unwrap();
    for peer in [
        format!("{RELAY_IP}:6000"),
        format!("[::ffff:{RELAY_IP}]:6000"),
    ] {
        let specs = config::parse(&format!("session loop 30000 30002 b-peer={peer}")).unwrap();
        let error =
            Relay::build(&mut iface, RELAY_IP, &specs, 30000..=39999, options()).unwrap_err();
        assert!(
            matches!(error, StartError::PeerIsUs { ref session, .. } if session == "loop"),
            "{error}"
        );
    }
    // Nothing was bound: a good peer on the same ports starts.
    let specs = config::parse("session ok 30000 30002 b-peer=10.0.0.3:6000").unwrap();
    assert!(Relay::build(&mut iface, RELAY_IP, &specs, 30000..=39999, options()).is_ok());
}

#[test]
fn relayed_media_is_marked_ef_and_forwarded_in_its_own_buffer() {
    let mut net = Net::new(&one_call(false), options(), 4096);
    let a = at(A_IP, 5004);
    for seq in 1..=4 {
        net.send(a, 30000, &rtp(0xaaaa, seq));
    }
    net.send(at(A_IP, 5005), 30001, &sender_report(0xaaaa));
    net.poll();
    let frames = net.port.take_tx();
    assert_eq!(frames.len(), 5);
    for frame in &frames {
        let ip = Ipv4Packet::new_checked(&frame[14..]).unwrap();
        assert_eq!(ip.tos(), 46 << 2, "DSCP EF");
        assert!(ip.verify_checksum());
        assert!(parse(frame).is_some(), "a valid UDP checksum");
    }
    let counters = net.iface.counters();
    assert_eq!(counters.get(Stat::UdpForwardedInPlace), 5);
    assert_eq!(counters.get(Stat::UdpForwardCopies), 0);
}

#[test]
fn connect_on_latch_lets_the_stack_refuse_other_sources() {
    let mut opts = options();
    opts.connect_on_latch = true;
    let mut net = Net::new(&one_call(false), opts, 4096);
    let a = at(A_IP, 5004);
    net.send(a, 30000, &rtp(1, 1));
    assert_eq!(net.run().len(), 1, "latched and relayed");
    // Another source on A's port: the connected socket does not hear it
    // (the stack answers port unreachable and counts it), so the relay
    // never sees it.
    net.send(at(A_IP, 5008), 30000, &rtp(2, 1));
    assert!(net.run().is_empty(), "nothing relayed");
    let snapshot = net.relay.snapshot();
    assert_eq!(drops(&snapshot, RelayDrop::Foreign), 0);
    assert_eq!(net.iface.counters().dropped(DropReason::UdpNoSocket), 1);
    net.send(a, 30000, &rtp(1, 2));
    assert_eq!(net.run().len(), 1, "the peer still is");
}

/// Random datagrams (half of them with an RTP/RTCP-looking first byte and a
/// plausible second one) from each leg's peer and from a stranger, to every
/// port of a call, in relay and echo mode: nothing panics, and every
/// datagram is either sent on or dropped, counted once on its leg and once
/// by reason.
#[test]
fn random_datagrams_are_each_sent_on_or_counted_as_a_drop() {
    for (echo, mux) in [(false, false), (true, false), (false, true)] {
        let relay_options = RelayOptions { echo, ..options() };
        let mut net = Net::new(&one_call(mux), relay_options, 4096);
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let sources = [
            at(A_IP, 5004),
            at(A_IP, 5005),
            at(B_IP, 6000),
            at(B_IP, 6001),
        ];
        let ports: &[u16] = if mux {
            &[30000, 30002]
        } else {
            &[30000, 30001, 30002, 30003]
        };
        let mut sent_to = [0u64; 2];
        for i in 0..3000 {
            let r = next();
            let len = (r % 300) as usize;
            let mut payload: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if i % 2 == 0 && len >= 2 {
                payload[0] = 0x80 | (payload[0] & 0x3f);
                payload[1] = [0, 8, 96, 200, 201, 202, 203, 204][(r >> 32) as usize % 8];
            }
            let port = ports[(r >> 40) as usize % ports.len()];
            let from = if r >> 60 == 0 {
                at(A_IP, 7777) // a stranger
            } else {
                sources[(r >> 48) as usize % sources.len()]
            };
            net.send(from, port, &payload);
            sent_to[usize::from(port >= 30002)] += 1;
            if i % 16 == 15 {
                net.run();
                net.advance(20);
            }
        }
        net.run();
        let snapshot = net.relay.snapshot();
        let legs = &snapshot.sessions[0].legs;
        for (leg, sent) in legs.iter().zip(sent_to) {
            let c = &leg.counters;
            assert_eq!(
                c.forwarded + c.rtcp_forwarded + c.dropped,
                sent,
                "echo {echo} mux {mux}: {c:?}"
            );
        }
        let by_reason: u64 = snapshot.drops.iter().sum();
        assert_eq!(
            by_reason,
            legs[0].counters.dropped + legs[1].counters.dropped,
            "echo {echo} mux {mux}: {:?}",
            snapshot.drops
        );
        assert!(legs[0].counters.dropped > 0 && legs[0].counters.forwarded > 0);
    }
}
