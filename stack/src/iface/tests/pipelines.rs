//! Two pipelines of one stack (`Interface::pipeline`), each with its own
//! in-memory port standing for its own rx/tx queue pair of one device:
//! flows spread over them by a Toeplitz hash as a NIC's RSS would, and
//! what one pipeline learns or is told (neighbours, routes, sockets) the
//! other uses.

use super::*;
use crate::rss::{FlowInput, RedirectionTable, MICROSOFT_KEY};
use std::sync::mpsc;
use std::thread;

/// The queue (pipeline) a frame from the peer lands on: RSS over IPv4
/// addresses and UDP ports with the common key, a 128-entry table over two
/// queues; anything else (ARP) on queue 0, as NICs do.
fn queue_of(frame: &[u8]) -> usize {
    let Ok(eth) = EthernetFrame::new_checked(frame) else {
        return 0;
    };
    if eth.ethertype() != EtherType::Ipv4 {
        return 0;
    }
    let ip = eth.payload();
    let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
    let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
    let ports = (
        u16::from_be_bytes([ip[20], ip[21]]),
        u16::from_be_bytes([ip[22], ip[23]]),
    );
    let hash = FlowInput::v4(src, dst, Some(ports)).hash(&MICROSOFT_KEY);
    usize::from(RedirectionTable::round_robin(128, 2).queue(hash))
}

fn our_port() -> MemPort {
    MemPort::new(MemPortConfig {
        mac: OUR_MAC,
        ..MemPortConfig::default()
    })
}

/// A pipeline on its own thread: polls its port with an echo handler,
/// takes frames from `frames` and hands what it sent to `sent`; stops when
/// `frames` closes (or after 10 s without a frame), handing the interface
/// back.
fn run(
    mut iface: Interface<MemBuf>,
    frames: mpsc::Receiver<Vec<u8>>,
    sent: mpsc::Sender<Vec<u8>>,
) -> thread::JoinHandle<Interface<MemBuf>> {
    thread::spawn(move || {
        let mut port = our_port();
        let mut ticks = 1u64;
        while let Ok(frame) = frames.recv_timeout(std::time::Duration::from_secs(10)) {
            port.push_rx(&frame);
            while let Ok(more) = frames.try_recv() {
                port.push_rx(&more);
            }
            ticks += 1;
            iface.poll(&mut port, Instant::from_nanos(ticks * 1000), &mut Echo);
            for out in port.take_tx() {
                if sent.send(out).is_err() {
                    break;
                }
            }
        }
        iface
    })
}

#[test]
fn udp_flows_spread_over_two_pipelines_on_threads_are_all_echoed_by_one_socket() {
    let (mut first, _) = stack_knowing_peer();
    first
        .udp_bind(SocketAddrV4::new(OUR_IP, 7), BindOptions::default())
        .unwrap();
    let second = first.pipeline().unwrap();
    assert_eq!((first.index(), second.index()), (0, 1));
    let (sent, replies) = mpsc::channel();
    let mut inputs = Vec::new();
    let mut threads = Vec::new();
    for iface in [first, second] {
        let (to_pipeline, frames) = mpsc::channel();
        inputs.push(to_pipeline);
        threads.push(run(iface, frames, sent.clone()));
    }
    drop(sent);
    let flows: Vec<u16> = (5000..5064).collect();
    let mut per_queue = [0usize; 2];
    for &port in &flows {
        let frame = udp_frame(port, 7, &port.to_be_bytes());
        let queue = queue_of(&frame);
        per_queue[queue] += 1;
        inputs[queue].send(frame).unwrap();
    }
    assert!(
        per_queue.iter().all(|&n| n > 0),
        "RSS spreads: {per_queue:?}"
    );
    let mut answered = Vec::new();
    for _ in &flows {
        let frame = replies
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("every flow is answered");
        let (src, dst, sport, dport, payload) = parse_reply(&frame);
        assert_eq!((src, dst, sport), (OUR_IP, PEER_IP, 7));
        assert_eq!(payload, dport.to_be_bytes());
        answered.push(dport);
    }
    drop(inputs);
    let pipelines: Vec<Interface<MemBuf>> =
        threads.into_iter().map(|t| t.join().unwrap()).collect();
    answered.sort_unstable();
    assert_eq!(answered, flows);
    for (queue, iface) in pipelines.iter().enumerate() {
        let counters = iface.counters();
        assert_eq!(
            counters.get(Stat::UdpInDatagrams),
            per_queue[queue] as u64,
            "pipeline {queue} counts its own datagrams"
        );
        assert_eq!(counters.get(Stat::UdpOutDatagrams), per_queue[queue] as u64);
    }
}

#[test]
fn a_neighbour_learned_on_one_pipeline_is_used_by_the_other_and_a_change_is_seen() {
    let (mut first, mut port0) = stack();
    let mut second = first.pipeline().unwrap();
    let mut port1 = our_port();
    let socket = first
        .udp_bind(SocketAddrV4::new(OUR_IP, 4000), BindOptions::default())
        .unwrap();
    // The peer's ARP request arrives on the first pipeline only.
    port0.push_rx(&arp(
        ArpOperation::Request,
        (PEER_MAC, PEER_IP),
        (MacAddr::default(), OUR_IP),
    ));
    poll(&mut first, &mut port0, &mut DropDatagrams);
    port0.take_tx();
    poll(&mut second, &mut port1, &mut DropDatagrams);
    assert_eq!(second.neighbor(PEER_IP), Some(PEER_MAC));
    let dst = SocketAddrV4::new(PEER_IP, 53);
    second
        .send_to(&mut port1, Instant::ZERO, socket, dst, b"one")
        .unwrap();
    let out = port1.take_tx();
    assert_eq!(out.len(), 1, "sent at once, without asking");
    assert_eq!(
        EthernetFrame::new_checked(&out[0][..]).unwrap().dst(),
        PEER_MAC
    );
    assert_eq!(second.counters().get(Stat::ArpOutRequests), 0);
    // The peer moves to another MAC, announced on the first pipeline: the
    // second sends there from its next poll on, though its socket kept the
    // old next hop.
    let moved = MacAddr([2, 0, 0, 0, 0, 9]);
    port0.push_rx(&arp(
        ArpOperation::Request,
        (moved, PEER_IP),
        (MacAddr::default(), OUR_IP),
    ));
    poll(&mut first, &mut port0, &mut DropDatagrams);
    poll(&mut second, &mut port1, &mut DropDatagrams);
    second
        .send_to(&mut port1, Instant::ZERO, socket, dst, b"two")
        .unwrap();
    let out = port1.take_tx();
    assert_eq!(out.len(), 1);
    assert_eq!(
        EthernetFrame::new_checked(&out[0][..]).unwrap().dst(),
        moved
    );
}

#[test]
fn a_route_and_a_socket_added_through_one_pipeline_serve_the_other() {
    let (mut first, _port0) = stack_knowing_peer();
    let mut second = first.pipeline().unwrap();
    let mut port1 = our_port();
    let far = Ipv4Addr::new(192, 0, 2, 9);
    assert_eq!(second.route_to(far), None);
    first
        .add_route(
            Ipv4Cidr::new(Ipv4Addr::new(192, 0, 2, 0), 24).unwrap(),
            PEER_IP,
        )
        .unwrap();
    let socket = first
        .udp_bind(SocketAddrV4::new(OUR_IP, 4001), BindOptions::default())
        .unwrap();
    // Before its next poll the second pipeline reads its old snapshot; the
    // poll takes the new one.
    poll(&mut second, &mut port1, &mut DropDatagrams);
    assert_eq!(second.route_to(far), Some((0, PEER_IP, OUR_IP)));
    second
        .send_to(&mut port1, Instant::ZERO, socket, (far, 9), b"far")
        .unwrap();
    let out = port1.take_tx();
    assert_eq!(out.len(), 1);
    let (src, dst, sport, dport, payload) = parse_reply(&out[0]);
    assert_eq!((src, dst, sport, dport), (OUR_IP, far, 4001, 9));
    assert_eq!(payload, b"far");
    // A datagram for the socket arriving on the second pipeline reaches the
    // second pipeline's handler.
    port1.push_rx(&udp_frame(6000, 4001, b"in"));
    let mut recorder = Recorder::default();
    poll(&mut second, &mut port1, &mut recorder);
    assert_eq!(recorder.calls, vec![(socket, vec![b"in".to_vec()])]);
    // Removing the route on the second pipeline is seen by the first.
    assert!(second.remove_route(Ipv4Cidr::new(Ipv4Addr::new(192, 0, 2, 0), 24).unwrap()));
    let mut port0 = our_port();
    poll(&mut first, &mut port0, &mut DropDatagrams);
    assert_eq!(first.route_to(far), None);
}

#[test]
fn a_queue_mode_socket_takes_datagrams_from_both_pipelines() {
    let (mut first, mut port0) = stack_knowing_peer();
    let handle = first.handle(port0.pool(), 64);
    let mut second = first.pipeline().unwrap();
    let mut port1 = our_port();
    let binder = thread::spawn(move || {
        let socket = handle.udp_bind(SocketAddrV4::new(OUR_IP, 4002)).unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 16];
        for _ in 0..2 {
            let (n, _) = socket
                .recv_from(&mut buf, Some(std::time::Duration::from_secs(10)))
                .expect("both datagrams arrive");
            seen.push(buf[..n].to_vec());
        }
        seen.sort();
        seen
    });
    // The bind is a command the first pipeline applies at a poll.
    let mut bound = false;
    for tick in 1..=10_000u64 {
        first.poll(&mut port0, Instant::from_nanos(tick), &mut DropDatagrams);
        if first.udp_sockets().iter().any(|s| s.local.port() == 4002) {
            bound = true;
            break;
        }
        thread::sleep(std::time::Duration::from_millis(1));
    }
    assert!(bound, "the bind was applied");
    port0.push_rx(&udp_frame(6000, 4002, b"zero"));
    port1.push_rx(&udp_frame(6001, 4002, b"one"));
    poll(&mut first, &mut port0, &mut DropDatagrams);
    poll(&mut second, &mut port1, &mut DropDatagrams);
    let seen = binder.join().unwrap();
    assert_eq!(seen, vec![b"one".to_vec(), b"zero".to_vec()]);
}

#[test]
fn a_connection_placed_by_rss_whose_segments_land_on_the_other_pipeline_is_carried_by_steering() {
    use super::tcp::{host, Client, EchoTcp};
    use crate::rss::RssPlacement;
    let (first, port0) = host(OUR_MAC, OUR_IP, "2001:db8::1");
    let mut second = first.pipeline().unwrap();
    // RSS-aware connect defeated on purpose: the second pipeline places its
    // port for queue 1 of a Toeplitz device, but every answer lands on the
    // first pipeline (a device that spreads otherwise).
    let reta = RedirectionTable::round_robin(128, 2);
    second.set_tcp_rss(Some(RssPlacement::new(&MICROSOFT_KEY, reta, 1)));
    let mut ours = [(first, port0), (second, our_port())];
    let mut peer = host(PEER_MAC, PEER_IP, "2001:db8::2");
    peer.0
        .tcp_listen("0.0.0.0:7".parse::<SocketAddr>().unwrap(), 16)
        .unwrap();
    // The second pipeline connects; every answer lands on the first.
    let mut client = Client {
        data: (0..100_000).map(|i| (i * 7 % 251) as u8).collect(),
        ..Client::default()
    };
    let (iface, port) = &mut ours[1];
    iface
        .tcp_connect(
            core::slice::from_mut(port),
            Instant::ZERO,
            SocketAddr::from((PEER_IP, 7)),
        )
        .unwrap();
    let mut now = Instant::ZERO;
    for _ in 0..200_000 {
        now = now + crate::time::Duration::from_millis(1);
        ours[0].0.poll(&mut ours[0].1, now, &mut DropDatagrams);
        ours[1].0.poll(&mut ours[1].1, now, &mut client);
        for (_, port) in ours.iter_mut() {
            port.deliver_to(&mut peer.1);
        }
        peer.0.poll(&mut peer.1, now, &mut EchoTcp);
        peer.1.deliver_to(&mut ours[0].1);
        if client.closed.is_some() {
            break;
        }
    }
    assert!(client.connected);
    assert!(client.got == client.data, "the echo came back whole");
    assert_eq!(client.closed, Some(None), "an orderly close");
    let (first, second) = (ours[0].0.counters(), ours[1].0.counters());
    let handed = first.get(Stat::TcpSteeredOut);
    assert!(handed > 10, "the first pipeline handed the segments over");
    assert_eq!(second.get(Stat::TcpSteeredIn), handed);
    assert_eq!(
        first.get(Stat::TcpOutRsts) + second.get(Stat::TcpOutRsts),
        0
    );
    assert_eq!(first.dropped(DropReason::TcpSteerRingFull), 0);
    assert_eq!(second.get(Stat::TcpActiveOpens), 1);
    assert_eq!(
        second.get(Stat::TcpConnectRssPlaced),
        1,
        "the port was placed"
    );
    assert_eq!(
        (first.get(Stat::TcpInSegs), second.get(Stat::TcpInSegs)),
        (handed, 0),
        "counted once, where received"
    );
}

#[test]
fn a_segment_for_no_connection_and_no_listener_here_goes_to_the_first_pipelines_listener() {
    use super::tcp::{host, Client, EchoTcp};
    let (mut first, port0) = host(OUR_MAC, OUR_IP, "2001:db8::1");
    first
        .tcp_listen("0.0.0.0:7".parse::<SocketAddr>().unwrap(), 16)
        .unwrap();
    let second = first.pipeline().unwrap();
    let mut ours = [(first, port0), (second, our_port())];
    let mut peer = host(PEER_MAC, PEER_IP, "2001:db8::2");
    let mut client = Client {
        data: b"to the listener on the first pipeline".to_vec(),
        ..Client::default()
    };
    peer.0
        .tcp_connect(
            core::slice::from_mut(&mut peer.1),
            Instant::ZERO,
            SocketAddr::from((OUR_IP, 7)),
        )
        .unwrap();
    // ARP goes to the first pipeline (non-IP), TCP to the second.
    let mut now = Instant::ZERO;
    for _ in 0..20_000 {
        now = now + crate::time::Duration::from_millis(1);
        ours[0].0.poll(&mut ours[0].1, now, &mut EchoTcp);
        ours[1].0.poll(&mut ours[1].1, now, &mut EchoTcp);
        for (_, port) in ours.iter_mut() {
            port.deliver_to(&mut peer.1);
        }
        peer.0.poll(&mut peer.1, now, &mut client);
        while let Some(frame) = peer.1.pop_tx() {
            let to = usize::from(is_tcp(frame.data()));
            ours[to].1.push_rx(frame.data());
        }
        if client.closed.is_some() {
            break;
        }
    }
    assert!(client.connected);
    assert_eq!(client.got, client.data);
    let (first, second) = (ours[0].0.counters(), ours[1].0.counters());
    assert_eq!(
        first.get(Stat::TcpPassiveOpens),
        1,
        "the first pipeline accepted"
    );
    assert!(second.get(Stat::TcpSteeredOut) > 0);
    assert_eq!(
        first.get(Stat::TcpSteeredIn),
        second.get(Stat::TcpSteeredOut)
    );
    assert_eq!(
        first.get(Stat::TcpOutRsts) + second.get(Stat::TcpOutRsts),
        0
    );
}

/// True for an IPv4 TCP frame.
fn is_tcp(frame: &[u8]) -> bool {
    frame.len() > 23 && frame[12..14] == [0x08, 0x00] && frame[23] == 6
}

#[test]
fn many_connections_from_both_pipelines_survive_replies_landing_by_the_peers_hash() {
    use super::tcp::{host, EchoTcp};
    let (first, port0) = host(OUR_MAC, OUR_IP, "2001:db8::1");
    let second = first.pipeline().unwrap();
    let mut ours = [(first, port0), (second, our_port())];
    let mut peer = host(PEER_MAC, PEER_IP, "2001:db8::2");
    peer.0
        .tcp_listen("0.0.0.0:7".parse::<SocketAddr>().unwrap(), 64)
        .unwrap();
    let data: Vec<u8> = (0..50_000).map(|i| (i * 13 % 251) as u8).collect();
    let mut clients: Vec<Many> = (0..2).map(|_| Many::new(&data)).collect();
    for (lane, (iface, port)) in ours.iter_mut().enumerate() {
        for _ in 0..8 {
            let conn = iface
                .tcp_connect(
                    core::slice::from_mut(port),
                    Instant::ZERO,
                    SocketAddr::from((PEER_IP, 7)),
                )
                .unwrap();
            clients[lane].open(conn);
        }
    }
    let mut now = Instant::ZERO;
    for _ in 0..200_000 {
        now = now + crate::time::Duration::from_millis(1);
        for (lane, (iface, port)) in ours.iter_mut().enumerate() {
            iface.poll(port, now, &mut clients[lane]);
            port.deliver_to(&mut peer.1);
        }
        peer.0.poll(&mut peer.1, now, &mut EchoTcp);
        while let Some(frame) = peer.1.pop_tx() {
            // ARP on the first queue, TCP by a hash of its ports.
            let lane = if is_tcp(frame.data()) {
                let ports = &frame.data()[34..38];
                usize::from((ports[0] ^ ports[1] ^ ports[2] ^ ports[3]) & 1)
            } else {
                0
            };
            ours[lane].1.push_rx(frame.data());
        }
        if clients.iter().all(Many::finished) {
            break;
        }
    }
    for (lane, client) in clients.iter().enumerate() {
        assert_eq!(client.intact, 8, "lane {lane}: {:?}", client.failures);
    }
    let counters = [ours[0].0.counters(), ours[1].0.counters()];
    let handed: u64 = counters.iter().map(|c| c.get(Stat::TcpSteeredOut)).sum();
    assert!(handed > 0);
    for c in counters {
        assert_eq!(c.get(Stat::TcpOutRsts), 0);
        assert_eq!(c.dropped(DropReason::TcpNoSocket), 0);
    }
}

/// Clients on one pipeline: each connection sends `data`, reads the echo,
/// closes.
struct Many {
    data: Vec<u8>,
    conns: Vec<(ConnId, usize, Vec<u8>, bool)>,
    intact: usize,
    failures: Vec<String>,
}

impl Many {
    fn new(data: &[u8]) -> Many {
        Many {
            data: data.to_vec(),
            conns: Vec::new(),
            intact: 0,
            failures: Vec::new(),
        }
    }

    fn open(&mut self, conn: ConnId) {
        self.conns.push((conn, 0, Vec::new(), false));
    }

    fn finished(&self) -> bool {
        self.conns.iter().all(|c| c.3)
    }
}

impl InlineHandler<MemBuf> for Many {
    fn on_tcp<P: Port<Buf = MemBuf>>(
        &mut self,
        conn: ConnId,
        event: TcpEvent,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        let Some(at) = self.conns.iter().position(|c| c.0 == conn) else {
            return;
        };
        let (_, sent, got, done) = &mut self.conns[at];
        if let TcpEvent::Closed(error) = event {
            if !*done {
                *done = true;
                if *got == self.data {
                    self.intact += 1;
                } else {
                    self.failures
                        .push(format!("closed {error:?} after {} bytes", got.len()));
                }
            }
            return;
        }
        let mut buf = [0u8; 8192];
        while let Ok(n @ 1..) = ctx.tcp_recv(conn, &mut buf) {
            got.extend_from_slice(&buf[..n]);
        }
        if *sent < self.data.len() {
            if let Ok(n) = ctx.tcp_send(conn, &self.data[*sent..]) {
                *sent += n;
                if *sent == self.data.len() {
                    ctx.tcp_close(conn);
                }
            }
        }
    }
}

/// What a sending pipeline's thread saw: per packet, the poll it was sent
/// in and the MAC it left for.
type Sent = Vec<(u64, MacAddr)>;

/// A pipeline on its own thread sending a datagram to `dst` from `socket`
/// after every poll, until `stop`; `polls` counts its polls as they end.
fn keep_sending(
    mut iface: Interface<MemBuf>,
    socket: SocketId,
    dst: SocketAddrV4,
    polls: Arc<std::sync::atomic::AtomicU64>,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> thread::JoinHandle<Sent> {
    use std::sync::atomic::Ordering;
    thread::spawn(move || {
        let mut port = our_port();
        let mut sent = Sent::new();
        for poll in 0..200_000u64 {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let now = Instant::from_nanos((poll + 1) * 1000);
            iface.poll(&mut port, now, &mut DropDatagrams);
            let _ = iface.send_to(&mut port, now, socket, dst, &poll.to_be_bytes());
            for frame in port.take_tx() {
                let eth = EthernetFrame::new_checked(&frame[..]).unwrap();
                if eth.ethertype() == EtherType::Ipv4 {
                    sent.push((poll, eth.dst()));
                }
            }
            polls.store(poll + 1, Ordering::Release);
        }
        sent
    })
}

#[test]
fn a_route_changed_from_another_thread_and_a_neighbour_changed_under_traffic_are_followed_at_once()
{
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let (first, _port0) = stack_knowing_peer();
    // A second gateway, known from its own ARP request.
    let (gateway2, mac2) = (Ipv4Addr::new(10, 0, 0, 3), MacAddr([2, 0, 0, 0, 0, 3]));
    let mut control = first.pipeline().unwrap();
    let mut control_port = our_port();
    let arp_from = |mac| {
        arp(
            ArpOperation::Request,
            (mac, gateway2),
            (MacAddr::default(), OUR_IP),
        )
    };
    control_port.push_rx(&arp_from(mac2));
    poll(&mut control, &mut control_port, &mut DropDatagrams);
    let far = Ipv4Cidr::new(Ipv4Addr::new(192, 0, 2, 0), 24).unwrap();
    control.add_route(far, PEER_IP).unwrap();
    let socket = control
        .udp_bind(SocketAddrV4::new(OUR_IP, 5000), BindOptions::default())
        .unwrap();
    let dst = SocketAddrV4::new(Ipv4Addr::new(192, 0, 2, 9), 9);
    let stop = Arc::new(AtomicBool::new(false));
    let second = first.pipeline().unwrap();
    let lanes: Vec<(Arc<AtomicU64>, thread::JoinHandle<Sent>)> = [first, second]
        .into_iter()
        .map(|iface| {
            let polls = Arc::new(AtomicU64::new(0));
            let thread = keep_sending(iface, socket, dst, Arc::clone(&polls), Arc::clone(&stop));
            (polls, thread)
        })
        .collect();
    // Waits (bounded) until every sender polled `more` times past `from`.
    let wait_past = |from: &[u64], more: u64| {
        for _ in 0..10_000 {
            let all =
                (lanes.iter().zip(from)).all(|((p, _), &f)| p.load(Ordering::Acquire) >= f + more);
            if all {
                return;
            }
            thread::sleep(std::time::Duration::from_millis(1));
        }
        panic!("the senders stalled");
    };
    let polls_now = || -> Vec<u64> {
        lanes
            .iter()
            .map(|(p, _)| p.load(Ordering::Acquire))
            .collect()
    };
    wait_past(&[0, 0], 200);
    // The route moves to the second gateway; then that gateway moves to
    // another MAC (its announcement arrives on the control pipeline).
    // The route changes from this thread, as an application's would,
    // through the stack's control handle.
    let routes = control.control();
    let before_route = polls_now();
    routes.add_route(far, gateway2).unwrap();
    let route_changed = polls_now();
    assert_eq!(
        routes.route_to(Ipv4Addr::new(192, 0, 2, 9)),
        Some((0, gateway2, OUR_IP))
    );
    wait_past(&route_changed, 200);
    let mac3 = MacAddr([2, 0, 0, 0, 0, 4]);
    control_port.push_rx(&arp_from(mac3));
    let before_neighbour = polls_now();
    poll(&mut control, &mut control_port, &mut DropDatagrams);
    let neighbour_changed = polls_now();
    wait_past(&neighbour_changed, 200);
    stop.store(true, Ordering::Relaxed);
    for (lane, (_, thread)) in lanes.into_iter().enumerate() {
        let sent = thread.join().unwrap();
        // The counters read before and after each change bound it: a poll
        // that ended before the change began sends the old way, one that
        // began after it was published (past the poll under way when the
        // counter was read) the new way; the few between may do either.
        let expected = |poll: u64| {
            if poll > neighbour_changed[lane] {
                Some(mac3)
            } else if poll > route_changed[lane] && poll < before_neighbour[lane] {
                Some(mac2)
            } else if poll < before_route[lane] {
                Some(PEER_MAC)
            } else {
                None
            }
        };
        for &(poll, mac) in &sent {
            if let Some(want) = expected(poll) {
                assert_eq!(mac, want, "pipeline {lane}, poll {poll}");
            }
        }
        for want in [PEER_MAC, mac2, mac3] {
            assert!(
                sent.iter().any(|&(_, m)| m == want),
                "pipeline {lane} sent to {want}"
            );
        }
    }
}

#[test]
fn a_stack_takes_sixty_four_pipelines_and_refuses_more_for_good() {
    let (first, _port) = stack();
    let more: Vec<Interface<MemBuf>> = (1..64).map(|_| first.pipeline().unwrap()).collect();
    assert_eq!(more.last().map(Interface::index), Some(63));
    for _ in 0..3 {
        assert!(matches!(
            first.pipeline(),
            Err(ConfigError::TooManyPipelines(64))
        ));
    }
}
