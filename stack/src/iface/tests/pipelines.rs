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
    let second = first.pipeline();
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
    let mut second = first.pipeline();
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
    let mut second = first.pipeline();
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
    let mut second = first.pipeline();
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
