//! A UDP datagram to a broadcast address or a group reaches every socket
//! that hears it, each in its own buffer (Linux's
//! `__udp4_lib_mcast_deliver` and `__udp6_lib_mcast_deliver`), reuseport
//! members included; a unicast one still reaches one socket.

use super::ipv6::{frame6, ip6_udp, stack6, PEER_LL};
use super::*;
use crate::udp::table::BROADCAST_RECEIVERS;
use crate::wire::ipv6::multicast_mac;
use core::net::{Ipv6Addr, SocketAddrV6};

/// A datagram from the peer to `dst`:`port`, sent to the Ethernet
/// broadcast address.
fn broadcast_frame(dst: Ipv4Addr, port: u16, payload: &[u8]) -> Vec<u8> {
    let (src, to) = (SocketAddrV4::new(PEER_IP, 68), SocketAddrV4::new(dst, port));
    let ip = ipv4(PEER_IP, dst, protocol::UDP, &udp(src, to, payload));
    ethernet(MacAddr::BROADCAST, PEER_MAC, EtherType::Ipv4, &ip)
}

/// The sockets that got `payload`, once per copy, sorted.
fn receivers(recorder: &Recorder, payload: &[u8]) -> Vec<SocketId> {
    let mut got: Vec<SocketId> = (recorder.calls.iter())
        .flat_map(|(s, batch)| batch.iter().filter(|p| *p == payload).map(move |_| *s))
        .collect();
    got.sort();
    got
}

#[test]
fn a_broadcast_or_group_datagram_reaches_every_socket_that_hears_it() {
    let (mut iface, mut port) = stack6();
    let reuse = BindOptions {
        reuse_port: true,
        ..BindOptions::default()
    };
    let v6_only = BindOptions {
        v6_only: true,
        ..reuse
    };
    let mut bind = |local: SocketAddr, options| iface.udp_bind(local, options).unwrap();
    // A reuseport group on the IPv4 wildcard, a dual-stack wildcard, an
    // IPv6-only one, and one bound to our unicast address (which hears no
    // broadcast, as in Linux: its address is not the destination).
    let group_a = bind((Ipv4Addr::UNSPECIFIED, 67).into(), reuse);
    let group_b = bind((Ipv4Addr::UNSPECIFIED, 67).into(), reuse);
    let dual = bind((Ipv6Addr::UNSPECIFIED, 67).into(), reuse);
    let six = bind((Ipv6Addr::UNSPECIFIED, 67).into(), v6_only);
    let unicast = bind((OUR_IP, 67).into(), reuse);
    let other_port = bind((Ipv4Addr::UNSPECIFIED, 68).into(), BindOptions::default());
    let all_nodes: Ipv6Addr = "ff02::1".parse().unwrap();
    let frames = [
        broadcast_frame(Ipv4Addr::BROADCAST, 67, b"limited"),
        broadcast_frame(Ipv4Addr::new(10, 0, 0, 255), 67, b"directed"),
        frame6(
            multicast_mac(all_nodes),
            &ip6_udp((PEER_LL, 546), (all_nodes, 67), b"group", None),
        ),
        udp_frame(40000, 67, b"unicast"),
    ];
    for frame in &frames {
        port.push_rx(frame);
    }
    let mut recorder = Recorder::default();
    poll(&mut iface, &mut port, &mut recorder);
    let mut ipv4_hearers = vec![group_a, group_b, dual];
    ipv4_hearers.sort();
    assert_eq!(receivers(&recorder, b"limited"), ipv4_hearers);
    assert_eq!(receivers(&recorder, b"directed"), ipv4_hearers);
    let mut ipv6_hearers = vec![dual, six];
    ipv6_hearers.sort();
    assert_eq!(receivers(&recorder, b"group"), ipv6_hearers);
    // Unicast: one socket, the most specific.
    assert_eq!(receivers(&recorder, b"unicast"), vec![unicast]);
    assert!(recorder.calls.iter().all(|(s, _)| *s != other_port));
    let c = iface.counters();
    assert_eq!(c.get(Stat::UdpInDatagrams), 3 + 3 + 2 + 1);
    assert_eq!(c.total_dropped(), 0, "{:?}", c.nonzero());
    assert_eq!(port.buffers_in_use(), 0, "copies freed");
}

#[test]
fn a_copy_without_a_buffer_is_a_counted_drop_and_the_others_still_get_theirs() {
    let config = InterfaceConfig::new(OUR_MAC, Ipv4Cidr::new(OUR_IP, 24).unwrap());
    let mut iface = Interface::new(config).unwrap();
    // Room for the received frame and one copy.
    let mut port = MemPort::new(MemPortConfig {
        mac: OUR_MAC,
        pool_size: 2,
        ..MemPortConfig::default()
    });
    iface.poll(&mut port, Instant::ZERO, &mut DropDatagrams);
    port.take_tx();
    let reuse = BindOptions {
        reuse_port: true,
        ..BindOptions::default()
    };
    for _ in 0..3 {
        iface
            .udp_bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 67), reuse)
            .unwrap();
    }
    port.push_rx(&broadcast_frame(Ipv4Addr::BROADCAST, 67, b"offer"));
    let mut recorder = Recorder::default();
    poll(&mut iface, &mut port, &mut recorder);
    assert_eq!(receivers(&recorder, b"offer").len(), 2);
    let c = iface.counters();
    assert_eq!(c.dropped(DropReason::UdpCopyNoBuffer), 1);
    assert_eq!(c.get(Stat::UdpInDatagrams), 2);
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn a_broadcast_reaches_at_most_the_bound_number_of_sockets_the_rest_counted() {
    let (mut iface, mut port) = stack();
    let reuse = BindOptions {
        reuse_port: true,
        ..BindOptions::default()
    };
    let extra = 3;
    for _ in 0..BROADCAST_RECEIVERS + extra {
        iface
            .udp_bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 67), reuse)
            .unwrap();
    }
    port.push_rx(&broadcast_frame(Ipv4Addr::BROADCAST, 67, b"offer"));
    let mut recorder = Recorder::default();
    poll(&mut iface, &mut port, &mut recorder);
    let mut got = receivers(&recorder, b"offer");
    assert_eq!(got.len(), BROADCAST_RECEIVERS);
    got.dedup();
    assert_eq!(got.len(), BROADCAST_RECEIVERS, "one copy per socket");
    let c = iface.counters();
    assert_eq!(c.dropped(DropReason::UdpFanoutLimit), extra as u64);
    assert_eq!(port.buffers_in_use(), 0);
}

/// Takes each burst's datagrams in one call, as a media server does.
#[derive(Default)]
struct Bursts {
    datagrams: usize,
}

impl InlineHandler<MemBuf> for Bursts {
    const WHOLE_BURSTS: bool = true;

    fn on_burst<P: Port<Buf = MemBuf>>(
        &mut self,
        batch: &mut Batch<MemBuf>,
        _: &mut LcoreContext<'_, P>,
    ) {
        self.datagrams += batch.len();
    }
}

#[test]
fn copies_that_outnumber_a_burst_all_reach_a_whole_burst_handler() {
    let (mut iface, mut port) = stack();
    let reuse = BindOptions {
        reuse_port: true,
        ..BindOptions::default()
    };
    for _ in 0..2 {
        iface
            .udp_bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 67), reuse)
            .unwrap();
    }
    for _ in 0..RX_BURST {
        port.push_rx(&broadcast_frame(Ipv4Addr::BROADCAST, 67, b"offer"));
    }
    let mut handler = Bursts::default();
    poll(&mut iface, &mut port, &mut handler);
    assert_eq!(handler.datagrams, 2 * RX_BURST);
    let c = iface.counters();
    assert_eq!(c.total_dropped(), 0, "{:?}", c.nonzero());
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn a_datagram_to_a_group_reaches_ipv6_sockets_bound_to_it_or_the_wildcard_only() {
    let (mut iface, mut port) = stack6();
    let reuse = BindOptions {
        reuse_port: true,
        ..BindOptions::default()
    };
    let wildcard = iface
        .udp_bind(SocketAddrV6::new(Ipv6Addr::UNSPECIFIED, 547, 0, 0), reuse)
        .unwrap();
    let global = iface
        .udp_bind(SocketAddrV6::new(super::ipv6::GLOBAL, 547, 0, 0), reuse)
        .unwrap();
    let all_nodes: Ipv6Addr = "ff02::1".parse().unwrap();
    port.push_rx(&frame6(
        multicast_mac(all_nodes),
        &ip6_udp((PEER_LL, 546), (all_nodes, 547), b"solicit", None),
    ));
    let mut recorder = Recorder::default();
    poll(&mut iface, &mut port, &mut recorder);
    assert_eq!(receivers(&recorder, b"solicit"), vec![wildcard]);
    assert!(recorder.calls.iter().all(|(s, _)| *s != global));
    assert_eq!(port.buffers_in_use(), 0);
}
