//! IPv6 routes with gateways (static, and the default route router
//! advertisements give when asked to): the next hop is resolved with
//! Neighbor Discovery on the gateway's link. A socket keeps its route to
//! its latest destination for sends and forwards until a route changes.

use super::ipv6::{ip6_icmp, ip6_udp, parse6, parse_udp6, stack6, GLOBAL, PEER6, PEER_LL};
use super::*;
use crate::route::Ipv6Cidr;
use crate::wire::icmpv6::{msg_type as icmp6, NdpRepr};
use crate::wire::ipv6::{multicast_mac, solicited_node};
use core::net::{Ipv6Addr, SocketAddrV4, SocketAddrV6};

fn ip(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn cidr(s: &str) -> Ipv6Cidr {
    s.parse().unwrap()
}

#[test]
fn a_static_route_sends_through_its_gateway() {
    let (mut iface, mut port) = stack6();
    let far = ip("2001:db8:99::5");
    let socket = iface
        .udp_bind(SocketAddrV6::new(GLOBAL, 0, 0, 0), BindOptions::default())
        .unwrap();
    assert_eq!(
        iface.add_route6(cidr("2001:db8:99::/48"), ip("2001:db9::1"), None),
        Err(ConfigError::Gateway6NotOnLink(ip("2001:db9::1"))),
        "a gateway off every prefix"
    );
    assert_eq!(
        iface.add_route6(cidr("2001:db8:99::/48"), PEER_LL, Some(3)),
        Err(ConfigError::NoSuchLink(3))
    );
    iface
        .add_route6(cidr("2001:db8:99::/48"), PEER_LL, None)
        .unwrap();
    assert_eq!(iface.route_to6(far), Some((0, PEER_LL, GLOBAL)));
    iface
        .send_to(
            &mut port,
            Instant::ZERO,
            socket,
            SocketAddrV6::new(far, 9, 0, 0),
            b"far",
        )
        .unwrap();
    // The gateway is solicited, not the far host.
    let out = port.take_tx();
    assert_eq!(out.len(), 1);
    let (eth_dst, _, dst, _, message) = parse6(&out[0]);
    assert_eq!(
        (eth_dst, dst),
        (
            multicast_mac(solicited_node(PEER_LL)),
            solicited_node(PEER_LL)
        )
    );
    assert!(matches!(
        NdpRepr::parse(&message).unwrap(),
        NdpRepr::Solicitation {
            target: PEER_LL,
            ..
        }
    ));
    // The gateway solicits us (as a router answering would), which
    // releases the parked datagram.
    let ours = super::ipv6::our_ll();
    port.push_rx(&super::ipv6::frame6(
        OUR_MAC,
        &ip6_icmp(
            PEER_LL,
            ours,
            255,
            &[],
            &super::ipv6::ns(ours, Some(PEER_MAC)),
        ),
    ));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    iface
        .send_to(
            &mut port,
            Instant::ZERO,
            socket,
            SocketAddrV6::new(far, 9, 0, 0),
            b"far",
        )
        .unwrap();
    let out = port.take_tx();
    let sent: Vec<_> = out.iter().filter(|f| f[14 + 6] == 17).collect();
    assert_eq!(sent.len(), 2, "the parked datagram and the new one");
    for frame in sent {
        let (from, to, payload) = parse_udp6(frame);
        assert_eq!((from.0, to.0, payload), (GLOBAL, far, b"far".to_vec()));
    }
    assert!(iface.remove_route6(cidr("2001:db8:99::/48")));
    assert_eq!(
        iface.send_to(
            &mut port,
            Instant::ZERO,
            socket,
            SocketAddrV6::new(far, 9, 0, 0),
            b"x"
        ),
        Err(SendError::NoRoute),
        "the cached route went with the table's generation"
    );
}

/// A router advertisement from `PEER_LL` to all nodes.
fn router_advert(lifetime: u16) -> Vec<u8> {
    let mut m = vec![
        icmp6::ROUTER_ADVERTISEMENT,
        0,
        0,
        0,
        64,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
    ];
    m[6..8].copy_from_slice(&lifetime.to_be_bytes());
    m.extend_from_slice(&[1, 1]);
    m.extend_from_slice(&PEER_MAC.0);
    let all_nodes = ip("ff02::1");
    super::ipv6::frame6(
        multicast_mac(all_nodes),
        &ip6_icmp(PEER_LL, all_nodes, 255, &[], &m),
    )
}

fn stack_accepting_ra() -> (Interface<MemBuf>, MemPort, Vec<Vec<u8>>) {
    let mut link = LinkConfig::new(OUR_MAC, Ipv4Cidr::new(OUR_IP, 24).unwrap());
    link.addresses6.push(Ipv6Cidr::new(GLOBAL, 64).unwrap());
    let mut config = InterfaceConfig::with_links(vec![link]);
    config.dad_transmits = 0;
    config.accept_ra = true;
    let mut iface = Interface::new(config).unwrap();
    let mut port = MemPort::new(MemPortConfig {
        mac: OUR_MAC,
        ..MemPortConfig::default()
    });
    iface.poll(&mut port, Instant::ZERO, &mut DropDatagrams);
    let sent = port.take_tx();
    (iface, port, sent)
}

#[test]
fn router_advertisements_give_a_default_route_only_when_asked() {
    // Off by default: ignored.
    let (mut iface, mut port) = stack6();
    port.push_rx(&router_advert(1800));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert_eq!(iface.route_to6(ip("2001:db9::1")), None);
    assert_eq!(iface.counters().dropped(DropReason::Icmp6Unhandled), 1);
    // Asked for: a solicitation at start, then the route for its lifetime.
    let (mut iface, mut port, sent) = stack_accepting_ra();
    let solicitation = sent
        .iter()
        .find(|f| f.len() > 54 && f[54] == icmp6::ROUTER_SOLICITATION);
    let (eth_dst, src, dst, hop, _) = parse6(solicitation.expect("a router solicitation"));
    assert_eq!((src, dst, hop), (super::ipv6::our_ll(), ip("ff02::2"), 255));
    assert_eq!(eth_dst, multicast_mac(ip("ff02::2")));
    port.push_rx(&router_advert(60));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert_eq!(
        iface.route_to6(ip("2001:db9::1")),
        Some((0, PEER_LL, GLOBAL))
    );
    assert_eq!(iface.neighbors6()[0].1, PEER_LL, "the router's MAC learned");
    iface.poll(
        &mut port,
        Instant::from_nanos(61_000_000_000),
        &mut DropDatagrams,
    );
    assert_eq!(iface.route_to6(ip("2001:db9::1")), None, "expired");
    // Lifetime zero withdraws it at once.
    port.push_rx(&router_advert(60));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert!(iface.route_to6(ip("2001:db9::1")).is_some());
    port.push_rx(&router_advert(0));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert_eq!(iface.route_to6(ip("2001:db9::1")), None);
    // A static default route is not replaced.
    iface
        .add_route6(Ipv6Cidr::DEFAULT, ip("2001:db8::fe"), None)
        .unwrap();
    port.push_rx(&router_advert(60));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert_eq!(
        iface.route_to6(ip("2001:db9::1")).map(|r| r.1),
        Some(ip("2001:db8::fe"))
    );
    // Not from a link-local source, or forwarded: invalid.
    let mut forwarded = router_advert(60);
    forwarded[14 + 7] = 254;
    port.push_rx(&forwarded);
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert_eq!(iface.counters().dropped(DropReason::NdInvalid), 1);
}

#[test]
fn a_static_default_link_route_outlives_the_advertised_route_it_replaced() {
    // A static default route beats advertised ones, however it was added:
    // the advertising router's lifetime ending, or its withdrawal, must not
    // take the operator's route with it.
    let (mut iface, mut port, _) = stack_accepting_ra();
    port.push_rx(&router_advert(60));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert_eq!(
        iface.route_to6(ip("2001:db9::1")).map(|r| r.1),
        Some(PEER_LL)
    );
    iface.add_link_route6(Ipv6Cidr::DEFAULT, 0).unwrap();
    let direct = Some(ip("2001:db9::1"));
    assert_eq!(iface.route_to6(ip("2001:db9::1")).map(|r| r.1), direct);
    port.push_rx(&router_advert(0));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert_eq!(iface.route_to6(ip("2001:db9::1")).map(|r| r.1), direct);
    port.push_rx(&router_advert(60));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    iface.poll(
        &mut port,
        Instant::from_nanos(61_000_000_000),
        &mut DropDatagrams,
    );
    assert_eq!(iface.route_to6(ip("2001:db9::1")).map(|r| r.1), direct);
    // Removed, static or advertised, the default comes back with the
    // router's next advertisement (as Linux installs it again).
    for _ in 0..2 {
        assert!(iface.remove_route6(Ipv6Cidr::DEFAULT));
        port.push_rx(&router_advert(60));
        iface.poll(
            &mut port,
            Instant::from_nanos(62_000_000_000),
            &mut DropDatagrams,
        );
        let via = iface.route_to6(ip("2001:db9::1")).map(|r| r.1);
        assert_eq!(via, Some(PEER_LL));
    }
}

/// The stack of [`stack6`] knowing `PEER6` (at `PEER_MAC`), with a socket
/// bound to our global address, port 5000.
fn stack_knowing_peer6() -> (Interface<MemBuf>, MemPort, SocketId) {
    let (mut iface, mut port) = stack6();
    super::ipv6::learn_peer(&mut iface, &mut port, PEER6, GLOBAL);
    let socket = iface
        .udp_bind(
            SocketAddrV6::new(GLOBAL, 5000, 0, 0),
            BindOptions::default(),
        )
        .unwrap();
    (iface, port, socket)
}

/// Runs `one`, which makes the socket of [`stack_knowing_peer6`] send
/// `payload` to `PEER6` port 53, over and over: after a warm-up (the first
/// sends move the neighbour on from STALE, a neighbour change) the
/// socket's kept route spares every lookup, and the datagrams leave for
/// `PEER_MAC` with valid checksums. Then a more specific route to the peer
/// through the gateway `PEER_LL` appears, and the next datagram follows it
/// at once: the only frame out is the solicitation for the gateway.
fn assert_route_kept_until_it_changes(
    (iface, port): (&mut Interface<MemBuf>, &mut MemPort),
    payload: &[u8],
    mut one: impl FnMut(&mut Interface<MemBuf>, &mut MemPort),
) {
    let lookups = |iface: &Interface<MemBuf>| iface.counters().get(Stat::RouteLookups);
    one(iface, port);
    one(iface, port);
    let warm = lookups(iface);
    assert!(warm <= 2, "{warm} lookups to warm up");
    for _ in 0..5 {
        one(iface, port);
    }
    assert_eq!(lookups(iface), warm, "kept by the socket: no lookup");
    let out = port.take_tx();
    assert_eq!(out.len(), 7);
    for frame in &out {
        let (from, to, sent) = parse_udp6(frame);
        assert_eq!(
            (from, to, &sent[..]),
            ((GLOBAL, 5000), (PEER6, 53), payload)
        );
    }
    iface
        .add_route6(cidr("2001:db8::2/128"), PEER_LL, None)
        .unwrap();
    one(iface, port);
    assert_eq!(lookups(iface), warm + 1, "a route change invalidates it");
    let out = port.take_tx();
    assert_eq!(out.len(), 1, "the new route's gateway is solicited");
    let (_, _, dst, _, message) = parse6(&out[0]);
    assert_eq!(dst, solicited_node(PEER_LL));
    assert!(matches!(
        NdpRepr::parse(&message).unwrap(),
        NdpRepr::Solicitation {
            target: PEER_LL,
            ..
        }
    ));
}

#[test]
fn an_ipv6_socket_keeps_its_route_until_a_route_changes() {
    let (mut iface, mut port, socket) = stack_knowing_peer6();
    let peer = SocketAddrV6::new(PEER6, 53, 0, 0);
    assert_route_kept_until_it_changes((&mut iface, &mut port), b"rtp", |iface, port| {
        iface
            .send_to(port, Instant::ZERO, socket, peer, b"rtp")
            .unwrap()
    });
}

#[test]
fn an_ipv6_forward_keeps_the_sending_socket_s_route_until_a_route_changes() {
    let (mut iface, mut port, from) = stack_knowing_peer6();
    let relayed = SocketAddrV6::new(GLOBAL, 7000, 0, 0);
    iface.udp_bind(relayed, BindOptions::default()).unwrap();
    let mut relay = ForwardTo::new(from, SocketAddrV6::new(PEER6, 53, 0, 0));
    assert_route_kept_until_it_changes((&mut iface, &mut port), b"media", |iface, port| {
        let datagram = ip6_udp((PEER6, 4000), (GLOBAL, 7000), b"media", None);
        port.push_rx(&super::ipv6::frame6(OUR_MAC, &datagram));
        poll(iface, port, &mut relay);
    });
    assert!(relay.results.iter().all(Result::is_ok));
    // Seven sent, the eighth waiting for the gateway: all in their own
    // buffers.
    assert_eq!(iface.counters().get(Stat::UdpForwardedInPlace), 8);
}

/// A router advertisement from `PEER_LL` (lifetime 60 s) with an MTU
/// option of `mtu`.
fn router_advert_mtu(mtu: u32) -> Vec<u8> {
    let mut m = vec![icmp6::ROUTER_ADVERTISEMENT, 0, 0, 0, 64, 0, 0, 60];
    m.extend_from_slice(&[0; 8]);
    m.extend_from_slice(&[5, 1, 0, 0]);
    m.extend_from_slice(&mtu.to_be_bytes());
    let all_nodes = ip("ff02::1");
    super::ipv6::frame6(
        multicast_mac(all_nodes),
        &ip6_icmp(PEER_LL, all_nodes, 255, &[], &m),
    )
}

#[test]
fn an_advertised_mtu_becomes_the_link_s_ipv6_mtu_within_bounds() {
    // RFC 4861 6.3.4: the MTU option sets the link's IPv6 MTU if it is at
    // least 1280 and at most what the link carries; otherwise ignored.
    let (mut iface, mut port, _) = stack_accepting_ra();
    super::ipv6::learn_peer(&mut iface, &mut port, PEER6, GLOBAL);
    let socket = iface
        .udp_bind(
            SocketAddrV6::new(GLOBAL, 5000, 0, 0),
            BindOptions::default(),
        )
        .unwrap();
    let v4 = iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 5000), BindOptions::default())
        .unwrap();
    let payload = [7u8; 1400];
    let frames_of_a_send = |iface: &mut Interface<MemBuf>, port: &mut MemPort, mtu: u32| {
        port.push_rx(&router_advert_mtu(mtu));
        poll(iface, port, &mut DropDatagrams);
        port.take_tx();
        let to = SocketAddrV6::new(PEER6, 53, 0, 0);
        iface.send_to(port, at_ms(1), socket, to, &payload).unwrap();
        let sent = port.take_tx();
        assert!(sent.iter().all(|f| f.len() <= 14 + 1500));
        (sent.len(), sent.iter().map(Vec::len).max().unwrap_or(0))
    };
    assert_eq!(
        frames_of_a_send(&mut iface, &mut port, 1500),
        (1, 14 + 40 + 8 + 1400)
    );
    let (fragments, largest) = frames_of_a_send(&mut iface, &mut port, 1280);
    assert_eq!(fragments, 2, "1448 bytes over an MTU of 1280");
    assert!(largest <= 14 + 1280, "{largest}");
    // TCP sizes its segments to it too.
    let to = SocketAddrV6::new(PEER6, 80, 0, 0);
    iface
        .tcp_connect(core::slice::from_mut(&mut port), at_ms(1), to)
        .unwrap();
    let syn = port.take_tx();
    let options = &syn[0][14 + 40 + 20..];
    assert_eq!(options[..2], [2, 4], "the MSS option first");
    let mss = u16::from_be_bytes([options[2], options[3]]);
    assert_eq!(mss, 1280 - 40 - 20);
    assert_eq!(iface.counters().get(Stat::Icmp6InRaMtuIgnored), 0);
    // Below the minimum, or above the link's own: ignored (and counted).
    assert_eq!(frames_of_a_send(&mut iface, &mut port, 1200).0, 2);
    assert_eq!(frames_of_a_send(&mut iface, &mut port, 9000).0, 2);
    assert_eq!(iface.counters().get(Stat::Icmp6InRaMtuIgnored), 2);
    // IPv6's alone: IPv4 still sends 1428 bytes whole.
    learn_peer4(&mut iface, &mut port);
    let to = SocketAddrV4::new(PEER_IP, 53);
    iface
        .send_to(&mut port, at_ms(1), v4, to, &payload)
        .unwrap();
    assert_eq!(port.take_tx().len(), 1);
    // Back up to the link's MTU.
    assert_eq!(frames_of_a_send(&mut iface, &mut port, 1500).0, 1);
}

fn at_ms(millis: u64) -> Instant {
    Instant::from_nanos(millis * 1_000_000)
}

/// Teaches the stack `PEER_IP` at `PEER_MAC` (its ARP request).
fn learn_peer4(iface: &mut Interface<MemBuf>, port: &mut MemPort) {
    port.push_rx(&arp(
        crate::wire::arp::ArpOperation::Request,
        (PEER_MAC, PEER_IP),
        (MacAddr::default(), OUR_IP),
    ));
    poll(iface, port, &mut DropDatagrams);
    port.take_tx();
}
