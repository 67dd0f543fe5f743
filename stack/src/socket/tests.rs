//! Queue-mode sockets used from other threads while a test thread plays the
//! lcore.

use super::*;
use crate::counters::{DropReason, Stat};
use crate::iface::{DropDatagrams, Interface, InterfaceConfig};
use crate::port::memory::{MemBuf, MemPool, MemPort, MemPortConfig};
use crate::port::MacAddr;
use crate::route::Ipv4Cidr;
use crate::time::Instant;
use crate::udp::PeerError;
use crate::wire::arp::{ArpOperation, ArpRepr};
use crate::wire::ethernet::{EtherType, EthernetFrame};
use crate::wire::ipv4::{protocol, Ipv4Header, Ipv4Packet};
use crate::wire::udp::UdpPacket;
use core::net::{Ipv4Addr, SocketAddrV4};
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::thread;

const OUR_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);
const PEER_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 2]);
const OUR_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const PEER_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

fn frame_to(port: u16, payload: &[u8]) -> Vec<u8> {
    let mut udp = vec![0u8; 8 + payload.len()];
    udp[8..].copy_from_slice(payload);
    UdpPacket::new_unchecked(&mut udp[..]).emit_header(
        (PEER_IP, 9000),
        (OUR_IP, port),
        payload.len() as u16,
    );
    let mut ip = vec![0u8; 20 + udp.len()];
    ip[20..].copy_from_slice(&udp);
    Ipv4Packet::new_unchecked(&mut ip[..]).emit_header(&Ipv4Header {
        src: PEER_IP,
        dst: OUR_IP,
        protocol: protocol::UDP,
        payload_len: udp.len() as u16,
        ttl: 64,
        ident: 1,
        dont_fragment: true,
        tos: 0,
    });
    let mut frame = vec![0u8; 14 + ip.len()];
    let mut eth = EthernetFrame::new_unchecked(&mut frame[..]);
    eth.set_dst(OUR_MAC);
    eth.set_src(PEER_MAC);
    eth.set_ethertype(EtherType::Ipv4);
    eth.payload_mut().copy_from_slice(&ip);
    frame
}

/// An interface and its port, polled by a background "lcore" thread until
/// dropped; frames can be injected and read through the shared port.
struct Lcore {
    port: Arc<Mutex<MemPort>>,
    handle: StackHandle<MemPool>,
    counters: Arc<crate::counters::Counters>,
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Lcore {
    fn start(queue_len: usize) -> Lcore {
        let mut config = InterfaceConfig::new(OUR_MAC, Ipv4Cidr::new(OUR_IP, 24).unwrap());
        config.dad_transmits = 0; // only IPv4 frames in these tests
        config.mld = false;
        let mut iface: Interface<MemBuf> = Interface::new(config).unwrap();
        let port = MemPort::new(MemPortConfig {
            mac: OUR_MAC,
            ..MemPortConfig::default()
        });
        let handle = iface.handle(port.pool(), queue_len);
        let counters = Arc::clone(iface.counters());
        let port = Arc::new(Mutex::new(port));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (port, stop) = (Arc::clone(&port), Arc::clone(&stop));
            thread::spawn(move || {
                let mut ticks = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    ticks += 1;
                    iface.poll(
                        &mut *port.lock().unwrap(),
                        Instant::from_nanos(ticks * 1000),
                        &mut DropDatagrams,
                    );
                    thread::yield_now();
                }
            })
        };
        Lcore {
            port,
            handle,
            counters,
            stop,
            thread: Some(thread),
        }
    }

    /// Injects frames so that they are all received in one poll.
    fn inject(&self, frames: &[Vec<u8>]) {
        let mut port = self.port.lock().unwrap();
        for f in frames {
            port.push_rx(f);
        }
    }

    fn wait_for_tx(&self, count: usize) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for _ in 0..2000 {
            out.extend(self.port.lock().unwrap().take_tx());
            if out.len() >= count {
                break;
            }
            thread::sleep(Duration::from_millis(1));
        }
        out
    }
}

impl Lcore {
    /// Teaches the interface the peer's MAC (an ARP request from it) and
    /// waits for the reply.
    fn learn_peer(&self) {
        let mut arp = [0u8; 28];
        ArpRepr {
            operation: ArpOperation::Request,
            sender_mac: PEER_MAC,
            sender_ip: PEER_IP,
            target_mac: MacAddr::default(),
            target_ip: OUR_IP,
        }
        .emit(&mut arp);
        let mut frame = vec![0u8; 42];
        let mut eth = EthernetFrame::new_unchecked(&mut frame[..]);
        eth.set_dst(MacAddr::BROADCAST);
        eth.set_src(PEER_MAC);
        eth.set_ethertype(EtherType::Arp);
        eth.payload_mut().copy_from_slice(&arp);
        self.inject(&[frame]);
        self.wait_for_tx(2);
    }
}

impl Drop for Lcore {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Returns once `readers` (a socket's or group's `blocked_readers`) says
/// a thread is blocked in a receive (bounded: a test whose reader never
/// blocks fails on its own assertions later).
fn wait_until_blocked(readers: impl Fn() -> usize) {
    for _ in 0..5000 {
        if readers() > 0 {
            return;
        }
        thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_blocked_receiver_gets_a_whole_burst_with_one_wakeup() {
    let lcore = Lcore::start(64);
    let socket = lcore
        .handle
        .udp_bind(SocketAddrV4::new(OUR_IP, 5000))
        .unwrap();
    lcore.wait_for_tx(1); // the announcement
    let socket = Arc::new(socket);
    let receiver = {
        let socket = Arc::clone(&socket);
        thread::spawn(move || {
            let mut got = Vec::new();
            while got.len() < 10 {
                socket
                    .recv_batch(&mut got, 64, Some(Duration::from_secs(5)))
                    .unwrap();
            }
            let texts: Vec<Vec<u8>> = got.iter().map(|d| d.payload().to_vec()).collect();
            (texts, socket.wakeups())
        })
    };
    wait_until_blocked(|| socket.blocked_readers());
    let frames: Vec<Vec<u8>> = (0..10u8).map(|i| frame_to(5000, &[i; 3])).collect();
    lcore.inject(&frames);
    let (texts, wakeups) = receiver.join().unwrap();
    assert_eq!(texts, (0..10u8).map(|i| vec![i; 3]).collect::<Vec<_>>());
    assert_eq!(wakeups, 1, "one wakeup for the burst, not one per datagram");
}

#[test]
fn a_full_queue_drops_and_counts_without_blocking_the_lcore() {
    let lcore = Lcore::start(4);
    let socket = lcore
        .handle
        .udp_bind(SocketAddrV4::new(OUR_IP, 5000))
        .unwrap();
    let frames: Vec<Vec<u8>> = (0..10u8).map(|i| frame_to(5000, &[i])).collect();
    lcore.inject(&frames);
    // Read only once the lcore has handled the whole burst.
    for _ in 0..5000 {
        if lcore.counters.get(Stat::UdpInDatagrams) == 10 {
            break;
        }
        thread::sleep(Duration::from_millis(1));
    }
    let mut got = Vec::new();
    socket
        .recv_batch(&mut got, 64, Some(Duration::from_secs(5)))
        .unwrap();
    assert_eq!(got.len(), 4);
    assert_eq!(socket.dropped(), 6);
    assert_eq!(lcore.counters.dropped(DropReason::UdpQueueFull), 6);
}

#[test]
fn recv_from_copies_and_times_out() {
    let lcore = Lcore::start(16);
    let socket = lcore
        .handle
        .udp_bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0))
        .unwrap();
    let port = socket.local_addr().port();
    assert!(port >= 32768, "ephemeral port {port}");
    let mut buf = [0u8; 4];
    assert_eq!(
        socket.recv_from(&mut buf, Some(Duration::from_millis(20))),
        Err(SocketError::TimedOut)
    );
    lcore.inject(&[frame_to(port, b"truncated!")]);
    let (n, from) = socket
        .recv_from(&mut buf, Some(Duration::from_secs(5)))
        .unwrap();
    assert_eq!(
        (n, &buf, from),
        (4, b"trun", SocketAddrV4::new(PEER_IP, 9000).into())
    );
}

#[test]
fn send_to_from_an_app_thread_leaves_through_the_lcore() {
    let lcore = Lcore::start(16);
    let socket = lcore
        .handle
        .udp_bind(SocketAddrV4::new(OUR_IP, 6000))
        .unwrap();
    lcore.learn_peer();
    let sender = thread::spawn(move || {
        socket
            .send_to(b"from a thread", SocketAddrV4::new(PEER_IP, 7777))
            .unwrap()
    });
    assert_eq!(sender.join().unwrap(), 13);
    let out = lcore.wait_for_tx(1);
    assert_eq!(out.len(), 1, "counters: {:?}", lcore.counters.nonzero());
    let eth = EthernetFrame::new_checked(&out[0][..]).unwrap();
    assert_eq!(eth.dst(), PEER_MAC);
    let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
    let udp = UdpPacket::new_checked(ip.payload()).unwrap();
    assert!(crate::wire::udp::checksum_holds_v4(&udp, OUR_IP, PEER_IP));
    assert_eq!(
        (udp.src_port(), udp.dst_port(), udp.payload()),
        (6000, 7777, &b"from a thread"[..])
    );
    assert_eq!(lcore.counters.get(Stat::UdpOutDatagrams), 1);

    // A payload bigger than one buffer takes a large one and leaves in
    // MTU-sized fragments.
    let big = lcore
        .handle
        .udp_bind(SocketAddrV4::new(OUR_IP, 6001))
        .unwrap();
    assert_eq!(
        big.send_to(&[7u8; 4000], SocketAddrV4::new(PEER_IP, 7777)),
        Ok(4000)
    );
    let fragments = lcore.wait_for_tx(3);
    assert_eq!(fragments.len(), 3);
    assert!(fragments.iter().all(|f| f.len() <= 14 + 1500));
    assert_eq!(lcore.counters.get(Stat::IpFragCreates), 3);
}

#[test]
fn a_send_or_forward_to_port_zero_is_refused_on_the_callers_thread() {
    let lcore = Lcore::start(16);
    let socket = lcore
        .handle
        .udp_bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 6000))
        .unwrap();
    lcore.learn_peer();
    let port_zero = SocketAddrV4::new(PEER_IP, 0);
    assert_eq!(socket.send_to(b"x", port_zero), Err(SocketError::PortZero));
    assert_eq!(
        socket.send_batch([(port_zero.into(), &b"x"[..])]),
        Err(SocketError::PortZero)
    );
    lcore.inject(&[frame_to(6000, b"forward me")]);
    let mut got = Vec::new();
    socket
        .recv_batch(&mut got, 1, Some(Duration::from_secs(5)))
        .unwrap();
    let datagram = got.pop().expect("one datagram");
    assert_eq!(
        socket.forward(datagram, port_zero),
        Err(SocketError::PortZero)
    );
    thread::sleep(Duration::from_millis(20));
    assert_eq!(lcore.counters.get(Stat::UdpOutDatagrams), 0);
}

#[test]
fn dropping_a_socket_closes_it() {
    let lcore = Lcore::start(16);
    let socket = lcore
        .handle
        .udp_bind(SocketAddrV4::new(OUR_IP, 5000))
        .unwrap();
    assert_eq!(
        lcore.handle.udp_bind(SocketAddrV4::new(OUR_IP, 5000)).err(),
        Some(SocketError::Bind(BindError::AddrInUse))
    );
    drop(socket);
    let mut rebound = None;
    for _ in 0..1000 {
        if let Ok(s) = lcore.handle.udp_bind(SocketAddrV4::new(OUR_IP, 5000)) {
            rebound = Some(s);
            break;
        }
        thread::sleep(Duration::from_millis(1));
    }
    assert!(rebound.is_some(), "the address is free again");
}

/// An ICMP error from the peer about a datagram OUR_IP:`ours` ->
/// PEER_IP:`theirs`.
fn icmp_error_frame(kind: u8, code: u8, ours: u16, theirs: u16) -> Vec<u8> {
    let quoted = {
        let mut udp = vec![0u8; 8];
        UdpPacket::new_unchecked(&mut udp[..]).emit_header((OUR_IP, ours), (PEER_IP, theirs), 0);
        let mut ip = vec![0u8; 28];
        ip[20..].copy_from_slice(&udp);
        Ipv4Packet::new_unchecked(&mut ip[..]).emit_header(&Ipv4Header {
            src: OUR_IP,
            dst: PEER_IP,
            protocol: protocol::UDP,
            payload_len: 8,
            ttl: 64,
            ident: 7,
            dont_fragment: true,
            tos: 0,
        });
        ip
    };
    let mut icmp = vec![kind, code, 0, 0, 0, 0, 0, 0];
    icmp.extend_from_slice(&quoted);
    crate::wire::icmpv4::Icmpv4Packet::new_unchecked(&mut icmp[..]).fill_checksum();
    let mut ip = vec![0u8; 20 + icmp.len()];
    ip[20..].copy_from_slice(&icmp);
    Ipv4Packet::new_unchecked(&mut ip[..]).emit_header(&Ipv4Header {
        src: PEER_IP,
        dst: OUR_IP,
        protocol: protocol::ICMP,
        payload_len: icmp.len() as u16,
        ttl: 64,
        ident: 2,
        dont_fragment: false,
        tos: 0,
    });
    let mut frame = vec![0u8; 14 + ip.len()];
    let mut eth = EthernetFrame::new_unchecked(&mut frame[..]);
    eth.set_dst(OUR_MAC);
    eth.set_src(PEER_MAC);
    eth.set_ethertype(EtherType::Ipv4);
    eth.payload_mut().copy_from_slice(&ip);
    frame
}

#[test]
fn a_connected_socket_hears_icmp_errors_on_its_next_receive() {
    let lcore = Lcore::start(16);
    let connected = lcore
        .handle
        .udp_bind(SocketAddrV4::new(OUR_IP, 5000))
        .unwrap();
    connected.connect(SocketAddrV4::new(PEER_IP, 53)).unwrap();
    let unconnected = lcore
        .handle
        .udp_bind(SocketAddrV4::new(OUR_IP, 5001))
        .unwrap();
    // A receiver already waiting is woken by the error.
    let connected = Arc::new(connected);
    let waiter = {
        let started = std::time::Instant::now();
        let connected = Arc::clone(&connected);
        thread::spawn(move || {
            let mut buf = [0u8; 16];
            let result = connected.recv_from(&mut buf, Some(Duration::from_secs(5)));
            (result, started.elapsed())
        })
    };
    wait_until_blocked(|| connected.blocked_readers());
    lcore.inject(&[
        icmp_error_frame(3, 3, 5000, 53),
        icmp_error_frame(3, 3, 5001, 53),
    ]);
    let (result, waited) = waiter.join().unwrap();
    assert_eq!(
        result,
        Err(SocketError::Peer(PeerError::Refused)),
        "counters: {:?}",
        lcore.counters.nonzero()
    );
    assert!(waited < Duration::from_secs(4), "woken, not timed out");
    // Reported once; the unconnected socket hears nothing.
    let mut buf = [0u8; 16];
    for socket in [&*connected, &unconnected] {
        assert_eq!(
            socket.recv_from(&mut buf, Some(Duration::from_millis(20))),
            Err(SocketError::TimedOut)
        );
    }
    // Fragmentation needed carries the next-hop MTU.
    let mut too_big = icmp_error_frame(3, 4, 5000, 53);
    too_big[14 + 20 + 6..14 + 20 + 8].copy_from_slice(&1400u16.to_be_bytes());
    // (Re-checksum after the edit.)
    let icmp_len = too_big.len() - 34;
    let mut icmp = too_big[34..].to_vec();
    icmp[2..4].copy_from_slice(&[0, 0]);
    crate::wire::icmpv4::Icmpv4Packet::new_unchecked(&mut icmp[..]).fill_checksum();
    too_big[34..34 + icmp_len].copy_from_slice(&icmp);
    lcore.inject(&[too_big]);
    assert_eq!(
        connected.recv_from(&mut buf, Some(Duration::from_secs(5))),
        Err(SocketError::Peer(PeerError::TooBig { mtu: 1400 }))
    );
    assert_eq!(lcore.counters.get(Stat::IcmpErrorsToSockets), 2);
}

mod group;

#[test]
fn datagrams_sent_before_a_close_leave_from_the_closed_socket() {
    let lcore = Lcore::start(16);
    let socket = lcore
        .handle
        .udp_bind(SocketAddrV4::new(OUR_IP, 5000))
        .unwrap();
    lcore.learn_peer();
    const SENT: usize = 300;
    let rebind = {
        // The lcore waits on the port while the socket sends more than one
        // poll takes, closes, and another socket is bound.
        let _paused = lcore.port.lock().unwrap();
        for i in 0..SENT {
            let payload = (i as u16).to_be_bytes();
            socket
                .send_to(&payload, SocketAddrV4::new(PEER_IP, 7777))
                .unwrap();
        }
        drop(socket);
        let handle = lcore.handle.clone();
        let rebind =
            thread::spawn(move || handle.udp_bind(SocketAddrV4::new(OUR_IP, 6000)).unwrap());
        thread::sleep(Duration::from_millis(50));
        rebind
    };
    let _other = rebind.join().unwrap();
    let out = lcore.wait_for_tx(SENT);
    let ports: Vec<(u16, u16)> = out
        .iter()
        .filter_map(|f| {
            let eth = EthernetFrame::new_checked(&f[..]).ok()?;
            let ip = Ipv4Packet::new_checked(eth.payload()).ok()?;
            let udp = UdpPacket::new_checked(ip.payload()).ok()?;
            Some((
                udp.src_port(),
                u16::from_be_bytes([udp.payload()[0], udp.payload()[1]]),
            ))
        })
        .collect();
    let from_others = ports.iter().filter(|&&(port, _)| port != 5000).count();
    assert_eq!(
        (ports.len(), from_others),
        (SENT, 0),
        "counters: {:?}",
        lcore.counters.nonzero()
    );
    let expected: Vec<(u16, u16)> = (0..SENT as u16).map(|i| (5000, i)).collect();
    assert_eq!(ports, expected);
}

#[test]
fn every_queue_that_got_datagrams_in_a_poll_wakes_its_reader() {
    // Two links: one poll takes a burst from each, here datagrams for 40
    // sockets, more than one burst holds.
    const MAC_B: MacAddr = MacAddr([2, 0, 0, 0, 1, 1]);
    const SOCKETS: u16 = 40;
    let mut config = InterfaceConfig::with_links(vec![
        crate::iface::LinkConfig::new(OUR_MAC, Ipv4Cidr::new(OUR_IP, 24).unwrap()),
        crate::iface::LinkConfig::new(
            MAC_B,
            Ipv4Cidr::new(Ipv4Addr::new(10, 1, 0, 1), 24).unwrap(),
        ),
    ]);
    config.dad_transmits = 0;
    let mut iface: Interface<MemBuf> = Interface::new(config).unwrap();
    let port = |mac| {
        MemPort::new(MemPortConfig {
            mac,
            ..MemPortConfig::default()
        })
    };
    let mut ports = [port(OUR_MAC), port(MAC_B)];
    let handle = iface.handle(ports[0].pool(), 4);
    let mut ticks = 0u64;
    let mut poll = |iface: &mut Interface<MemBuf>, ports: &mut [MemPort; 2]| {
        ticks += 1;
        iface.poll_ports(ports, Instant::from_nanos(ticks * 1000), &mut DropDatagrams);
    };
    let binder = thread::spawn(move || {
        (0..SOCKETS)
            .map(|i| {
                handle
                    .udp_bind(SocketAddrV4::new(OUR_IP, 5000 + i))
                    .unwrap()
            })
            .collect::<Vec<_>>()
    });
    while !binder.is_finished() {
        poll(&mut iface, &mut ports);
        thread::yield_now();
    }
    let sockets = Arc::new(binder.join().unwrap());
    let last = usize::from(SOCKETS) - 1;
    let reader = {
        let sockets = Arc::clone(&sockets);
        thread::spawn(move || {
            let mut got = Vec::new();
            let result = sockets[last].recv_batch(&mut got, 4, Some(Duration::from_secs(1)));
            (result, sockets[last].wakeups())
        })
    };
    wait_until_blocked(|| sockets[last].blocked_readers());
    for i in 0..SOCKETS {
        let mut frame = frame_to(5000 + i, b"x");
        let link = usize::from(i >= SOCKETS / 2);
        if link == 1 {
            EthernetFrame::new_unchecked(&mut frame[..]).set_dst(MAC_B);
        }
        ports[link].push_rx(&frame);
    }
    poll(&mut iface, &mut ports);
    let (result, wakeups) = reader.join().unwrap();
    assert_eq!(
        iface.counters().get(Stat::UdpInDatagrams),
        u64::from(SOCKETS)
    );
    assert_eq!(
        (result, wakeups),
        (Ok(1), 1),
        "woken by the poll that queued its datagram, not by its timeout"
    );
}

#[test]
fn a_connect_the_stack_refuses_is_an_error_not_a_silent_no() {
    // An IPv4 socket cannot connect to an IPv6 peer (Linux: EAFNOSUPPORT);
    // told Ok, the caller would take datagrams from anyone for its peer's.
    let lcore = Lcore::start(16);
    let socket = lcore
        .handle
        .udp_bind(SocketAddrV4::new(OUR_IP, 5000))
        .unwrap();
    let peer6: core::net::Ipv6Addr = "2001:db8::2".parse().unwrap();
    assert_eq!(
        socket.connect(core::net::SocketAddrV6::new(peer6, 53, 0, 0)),
        Err(SocketError::CannotConnect)
    );
    assert_eq!(socket.connect(SocketAddrV4::new(PEER_IP, 53)), Ok(()));
    // Connected: a datagram from another port of the peer is not its.
    lcore.inject(&[frame_to(5000, b"from 9000")]);
    let mut buf = [0u8; 16];
    assert_eq!(
        socket.recv_from(&mut buf, Some(Duration::from_millis(50))),
        Err(SocketError::TimedOut)
    );
}

#[test]
fn a_queue_mode_socket_joins_a_group_and_receives_it() {
    use crate::udp::{GroupLink, JoinError};
    let lcore = Lcore::start(16);
    let group = Ipv4Addr::new(239, 1, 2, 3);
    let socket = (lcore.handle)
        .udp_bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 5004))
        .unwrap();
    assert_eq!(
        socket.join(OUR_IP.into(), GroupLink::Default),
        Err(SocketError::Join(JoinError::NotMulticast))
    );
    assert_eq!(socket.join(group.into(), GroupLink::Default), Ok(0));
    assert_eq!(
        socket.join(group.into(), GroupLink::Link(0)),
        Err(SocketError::Join(JoinError::AlreadyJoined))
    );
    // The unicast frame, readdressed to the group (MAC and IP; the UDP
    // checksum is left out, 0 meaning none over IPv4).
    let mut frame = frame_to(5004, b"to the group");
    frame[..6].copy_from_slice(&[0x01, 0x00, 0x5e, 0x01, 0x02, 0x03]);
    frame[30..34].copy_from_slice(&group.octets());
    frame[24..26].copy_from_slice(&[0, 0]);
    let sum = crate::wire::checksum::checksum(&frame[14..34]);
    frame[24..26].copy_from_slice(&sum.to_be_bytes());
    frame[40..42].copy_from_slice(&[0, 0]);
    lcore.inject(&[frame]);
    let mut buf = [0u8; 64];
    let (n, from) = socket
        .recv_from(&mut buf, Some(Duration::from_secs(2)))
        .unwrap();
    assert_eq!(&buf[..n], b"to the group");
    assert_eq!(from, SocketAddr::from((PEER_IP, 9000)));
    assert_eq!(socket.leave(group.into(), GroupLink::Default), Ok(0));
    assert_eq!(
        socket.leave(group.into(), GroupLink::Default),
        Err(SocketError::Join(JoinError::NotJoined))
    );
}
