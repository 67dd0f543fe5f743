//! The relay on two lanes: two pipelines of one stack, each with its own
//! in-memory port (its own queue pair of one device) and its own relay
//! from [`Relay::into_lanes`], polled in turn (and in one test each on its
//! own thread, polling without pause as lcores do). Each test says which
//! lane a peer's frames land on, as RSS would.

use super::*;

/// A lane: its pipeline, its port and its relay.
struct Lane {
    iface: Interface<MemBuf>,
    port: MemPort,
    relay: Relay,
}

/// Two lanes of one stack, with their virtual time.
struct Lanes {
    lanes: Vec<Lane>,
    now: Instant,
}

fn port() -> MemPort {
    MemPort::new(MemPortConfig {
        mac: RELAY_MAC,
        pool_size: 4096,
        tx_ring_size: 4096,
        ..MemPortConfig::default()
    })
}

impl Lanes {
    fn new(specs: &[SessionSpec], options: RelayOptions) -> Lanes {
        let cidr = Ipv4Cidr::new(RELAY_IP, 24).unwrap();
        let mut first = Interface::new(InterfaceConfig::new(RELAY_MAC, cidr)).unwrap();
        let mut relay = Relay::new(options);
        relay
            .start(&mut first, RELAY_IP.into(), specs, 30000..=39999)
            .unwrap();
        let second = first.pipeline().unwrap();
        let relays = relay.into_lanes(2);
        assert_eq!(relays.len(), 2);
        let lanes = [first, second]
            .into_iter()
            .zip(relays)
            .map(|(iface, relay)| Lane {
                iface,
                port: port(),
                relay,
            })
            .collect();
        let mut net = Lanes {
            lanes,
            now: Instant::ZERO,
        };
        // The peers announce themselves (ARP lands on queue 0, as on NICs).
        for (mac, ip) in [(A_MAC, A_IP), (B_MAC, B_IP)] {
            net.lanes[0].port.push_rx(&arp_request(mac, ip));
        }
        net.run();
        net
    }

    /// A datagram from `from` to our `to_port`, landing on `lane`.
    fn send(&mut self, lane: usize, from: SocketAddrV4, to_port: u16, payload: &[u8]) {
        let mac = if *from.ip() == B_IP { B_MAC } else { A_MAC };
        let frame = udp_frame(mac, from, to_port, payload);
        assert!(self.lanes[lane].port.push_rx(&frame));
    }

    /// Polls the lanes in turn until both are quiet; returns the UDP
    /// datagrams each lane sent. ARP replies land on lane 0.
    fn run(&mut self) -> [Vec<Sent>; 2] {
        let mut sent = [Vec::new(), Vec::new()];
        loop {
            let mut busy = false;
            for (n, sent) in sent.iter_mut().enumerate() {
                let lane = &mut self.lanes[n];
                busy |= lane.port.rx_pending() > 0;
                lane.iface.poll(&mut lane.port, self.now, &mut lane.relay);
                let mut replies = Vec::new();
                for frame in lane.port.take_tx() {
                    busy = true;
                    replies.extend(arp_reply(&frame));
                    sent.extend(parse(&frame));
                }
                for reply in replies {
                    self.lanes[0].port.push_rx(&reply);
                }
            }
            if !busy {
                return sent;
            }
        }
    }

    fn advance(&mut self, ms: u64) {
        self.now = self.now + Duration::from_millis(ms);
    }

    /// The lanes' snapshots, merged.
    fn snapshot(&self) -> Snapshot {
        let mut snapshot = self.lanes[0].relay.snapshot();
        snapshot.merge(&self.lanes[1].relay.snapshot());
        snapshot
    }

    fn report(&self) -> String {
        report::render(&self.snapshot(), &["call".to_owned()])
    }
}

#[test]
fn a_call_whose_legs_land_on_two_lanes_is_relayed_both_ways_and_latches_across_lanes() {
    let mut net = Lanes::new(&one_call(false), options());
    assert_eq!(net.lanes[1].relay.lane(), (1, 2));
    let a = at(A_IP, 5004);
    for seq in 100..110 {
        net.send(0, a, 30000, &rtp(0xaaaa, seq));
        net.advance(20);
    }
    let [on_0, on_1] = net.run();
    assert!(on_1.is_empty(), "leg A's flow is lane 0's");
    assert_eq!(on_0.len(), 10);
    for s in &on_0 {
        assert_eq!((s.src, s.dst), (at(RELAY_IP, 30002), at(B_IP, 6000)));
    }
    // B answers from a NAT'd port, on lane 1: lane 1 latches leg B and
    // forwards to where A sends from, which lane 0 latched.
    let b = at(B_IP, 6100);
    net.send(1, b, 30002, &rtp(0xbbbb, 7));
    let [on_0, on_1] = net.run();
    assert!(on_0.is_empty());
    assert_eq!(on_1.len(), 1, "{:?}", net.snapshot().drops);
    assert_eq!((on_1[0].src, on_1[0].dst), (at(RELAY_IP, 30000), a));
    // Lane 0 took lane 1's news: A's media goes to B's latched port now.
    net.send(0, a, 30000, &rtp(0xaaaa, 110));
    let [on_0, _] = net.run();
    assert_eq!(on_0.len(), 1);
    assert_eq!(on_0[0].dst, b, "B's latched address, learned on lane 1");
    // A foreign source for leg A that lands on lane 1 is foreign there too.
    net.send(1, at(A_IP, 7777), 30000, &rtp(0xeeee, 1));
    let [on_0, on_1] = net.run();
    assert!(on_0.is_empty() && on_1.is_empty());
    // Each lane wrote only the leg it receives.
    let lane0 = net.lanes[0].relay.snapshot();
    let lane1 = net.lanes[1].relay.snapshot();
    assert_eq!(lane0.sessions[0].legs[0].streams.len(), 1);
    assert!(lane0.sessions[0].legs[1].streams.is_empty());
    assert!(lane1.sessions[0].legs[0].streams.is_empty());
    assert_eq!(lane1.sessions[0].legs[1].streams.len(), 1);
    assert_eq!(drops(&lane1, RelayDrop::Foreign), 1);
    // The merged report is the session's as one lane would give it.
    let report = net.report();
    let a_stream = "session call leg A ssrc 0x0000aaaa";
    assert_eq!(field(&report, a_stream, "packets"), 11);
    assert_eq!(field(&report, a_stream, "lost"), 0);
    assert_eq!(field(&report, "session call leg A peer", "forwarded"), 11);
    assert_eq!(field(&report, "session call leg A peer", "foreign"), 1);
    assert_eq!(field(&report, "session call leg B peer", "forwarded"), 1);
    assert!(report.contains("session call leg A peer 10.9.0.2:5004 latched yes"));
    assert!(report.contains("session call leg B peer 10.9.0.3:6100 latched yes"));
    assert_eq!(drops(&net.snapshot(), RelayDrop::Foreign), 1);
    let news = net.lanes[0].relay.news_counters();
    assert_eq!((news.sent, news.taken), (1, 1), "one latch each way");
}

#[test]
fn rtcp_goes_to_the_peers_another_lane_learned() {
    let mut net = Lanes::new(&one_call(false), options());
    let (a, b) = (at(A_IP, 5004), at(B_IP, 6100));
    net.send(0, a, 30000, &rtp(0xaaaa, 1));
    net.send(1, b, 30002, &rtp(0xbbbb, 1));
    net.run();
    // B's RTCP from a port of its own, on lane 1: to next to A's latched
    // RTP peer, from A's RTCP port.
    let b_rtcp = at(B_IP, 6555);
    net.send(1, b_rtcp, 30003, &sender_report(0xbbbb));
    let [_, on_1] = net.run();
    assert_eq!(on_1.len(), 1);
    assert_eq!(
        (on_1[0].src, on_1[0].dst),
        (at(RELAY_IP, 30001), at(A_IP, 5005))
    );
    // A's RTCP, on lane 0, goes where lane 1 latched B's RTCP.
    net.send(0, at(A_IP, 5005), 30001, &sender_report(0xaaaa));
    let [on_0, _] = net.run();
    assert_eq!(on_0.len(), 1);
    assert_eq!((on_0[0].src, on_0[0].dst), (at(RELAY_IP, 30003), b_rtcp));
    let report = net.report();
    assert_eq!(
        field(&report, "session call leg B peer", "rtcp-forwarded"),
        1
    );
    assert_eq!(
        field(&report, "session call leg A peer", "rtcp-forwarded"),
        1
    );
}

#[test]
fn a_flow_that_moves_lanes_keeps_its_peer_and_its_figures_add_up() {
    let mut net = Lanes::new(&one_call(false), options());
    let a = at(A_IP, 5004);
    for seq in 1..=5 {
        net.send(0, a, 30000, &rtp(0xaaaa, seq));
        net.advance(20);
    }
    net.run();
    // The same flow now lands on lane 1 (a queue moved): the latch lane 1
    // adopted knows the peer, and lane 1 records from then on.
    for seq in 6..=10 {
        net.send(1, a, 30000, &rtp(0xaaaa, seq));
        net.advance(20);
    }
    let [_, on_1] = net.run();
    assert_eq!(on_1.len(), 5);
    assert!(on_1.iter().all(|s| s.dst == at(B_IP, 6000)));
    let report = net.report();
    let a_stream = "session call leg A ssrc 0x0000aaaa";
    assert_eq!(field(&report, a_stream, "packets"), 10);
    assert_eq!(field(&report, "session call leg A peer", "forwarded"), 10);
    assert_eq!(field(&report, "session call leg A peer", "foreign"), 0);
    assert!(report.contains("relay drops: none"), "{report}");
}

#[test]
fn many_sessions_spread_over_two_lanes_are_all_relayed() {
    let specs = config::generate(8, 30000, false, [None, None]).unwrap();
    let mut net = Lanes::new(&specs, options());
    // Session i: A's flow on lane i % 2, B's on the other lane.
    for i in 0..8u16 {
        let lane = usize::from(i % 2);
        let (a, b) = (at(A_IP, 5000 + 2 * i), at(B_IP, 6000 + 2 * i));
        net.send(lane, a, 30000 + 4 * i, &rtp(u32::from(i), 1));
        net.send(1 - lane, b, 30002 + 4 * i, &rtp(0x100 + u32::from(i), 1));
    }
    net.run();
    // Both peers latched everywhere now: each direction goes through.
    for i in 0..8u16 {
        let lane = usize::from(i % 2);
        let (a, b) = (at(A_IP, 5000 + 2 * i), at(B_IP, 6000 + 2 * i));
        net.send(lane, a, 30000 + 4 * i, &rtp(u32::from(i), 2));
        net.send(1 - lane, b, 30002 + 4 * i, &rtp(0x100 + u32::from(i), 2));
    }
    let sent = net.run();
    assert_eq!(sent[0].len() + sent[1].len(), 16);
    for (lane, sent) in sent.iter().enumerate() {
        assert_eq!(sent.len(), 8, "lane {lane}");
        for s in sent {
            let to_a = s.dst.ip() == &A_IP;
            let i = if to_a {
                (s.dst.port() - 5000) / 2
            } else {
                (s.dst.port() - 6000) / 2
            };
            let from = if to_a { 30000 } else { 30002 } + 4 * i;
            assert_eq!(s.src, at(RELAY_IP, from));
        }
    }
    let snapshot = net.snapshot();
    for session in &snapshot.sessions {
        for leg in &session.legs {
            assert!(leg.latched);
            assert_eq!(leg.streams[0].counters.packets, 2);
        }
    }
}

#[test]
fn two_lanes_polling_on_their_own_threads_relay_every_session_both_ways() {
    use std::sync::atomic::AtomicU64;
    use std::sync::mpsc;
    use std::thread;
    use std::time::Duration as Wall;
    const SESSIONS: u16 = 16;
    let specs = config::generate(u32::from(SESSIONS), 30000, false, [None, None]).unwrap();
    let net = Lanes::new(&specs, options());
    let stop = Arc::new(AtomicBool::new(false));
    let taken: Arc<[AtomicU64; 2]> = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    let (sent_tx, sent) = mpsc::channel::<Sent>();
    let mut inputs = Vec::new();
    let mut threads = Vec::new();
    for (n, mut lane) in net.lanes.into_iter().enumerate() {
        let (input, frames) = mpsc::channel::<Vec<u8>>();
        inputs.push(input);
        let (stop, taken, sent_tx) = (Arc::clone(&stop), Arc::clone(&taken), sent_tx.clone());
        threads.push(thread::spawn(move || {
            let mut tick = 1u64;
            while !stop.load(Ordering::Acquire) {
                while let Ok(frame) = frames.try_recv() {
                    assert!(lane.port.push_rx(&frame));
                }
                tick += 1;
                let now = Instant::from_nanos(tick * 1000);
                lane.iface.poll(&mut lane.port, now, &mut lane.relay);
                for frame in lane.port.take_tx() {
                    if let Some(s) = parse(&frame) {
                        let _ = sent_tx.send(s);
                    }
                }
                let news = lane.relay.news_counters();
                taken[n].store(news.taken, Ordering::Release);
                thread::yield_now();
            }
            lane.relay
        }));
    }
    let round = |seq: u16| {
        for i in 0..SESSIONS {
            let lane = usize::from(i % 2);
            let (a, b) = (at(A_IP, 5000 + 2 * i), at(B_IP, 6000 + 2 * i));
            let frame = udp_frame(A_MAC, a, 30000 + 4 * i, &rtp(u32::from(i), seq));
            inputs[lane].send(frame).unwrap();
            let frame = udp_frame(B_MAC, b, 30002 + 4 * i, &rtp(0x100 + u32::from(i), seq));
            inputs[1 - lane].send(frame).unwrap();
        }
    };
    round(1);
    // Every leg latched on its lane, and the other lane took the news.
    let deadline = std::time::Instant::now() + Wall::from_secs(10);
    while taken.iter().map(|t| t.load(Ordering::Acquire)).sum::<u64>() < 2 * u64::from(SESSIONS) {
        assert!(std::time::Instant::now() < deadline, "news did not cross");
        thread::sleep(Wall::from_millis(1));
    }
    round(2);
    // The payload's bytes are the sequence number's low byte.
    let (mut first, mut second) = (0u64, Vec::new());
    while second.len() < 2 * usize::from(SESSIONS) {
        match sent.recv_timeout(Wall::from_secs(10)) {
            Ok(s) if s.payload[20] == 2 => second.push(s),
            Ok(s) => {
                assert_eq!(s.payload[20], 1, "{s:?}");
                first += 1;
            }
            Err(e) => panic!("{} of the second round: {e}", second.len()),
        }
    }
    stop.store(true, Ordering::Release);
    let relays: Vec<Relay> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    drop(sent_tx);
    first += sent.try_iter().filter(|s| s.payload[20] == 1).count() as u64;
    for s in &second {
        let to_a = s.dst.ip() == &A_IP;
        let i = (s.dst.port() - if to_a { 5000 } else { 6000 }) / 2;
        let from = if to_a { 30000 } else { 30002 } + 4 * i;
        assert_eq!(s.src, at(RELAY_IP, from), "{s:?}");
    }
    let mut snapshot = relays[0].snapshot();
    snapshot.merge(&relays[1].snapshot());
    let no_peer = drops(&snapshot, RelayDrop::NoPeer);
    // A first packet went through if the other leg had latched before it.
    assert_eq!(first + no_peer, 2 * u64::from(SESSIONS));
    for session in &snapshot.sessions {
        for leg in &session.legs {
            assert!(leg.latched);
            assert_eq!(leg.streams[0].counters.packets, 2);
        }
    }
}
