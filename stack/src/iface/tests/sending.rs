//! Sending to neighbours and routes: ARP resolution before the first
//! datagram, giving up on a silent neighbour, no route, and the route a
//! socket keeps (connected or not) until the route table or a neighbour
//! changes.

use super::*;

#[test]
fn sending_to_an_unknown_neighbour_resolves_it_first() {
    let (mut iface, mut port) = stack();
    let socket = iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 0), BindOptions::default())
        .unwrap();
    let dst = SocketAddrV4::new(PEER_IP, 53);
    iface
        .send_to(&mut port, Instant::ZERO, socket, dst, b"query")
        .unwrap();
    let out = port.take_tx();
    assert_eq!(out.len(), 1, "only the ARP request goes out");
    let request = ArpRepr::parse(&out[0][14..]).unwrap();
    assert_eq!(
        (request.operation, request.target_ip),
        (ArpOperation::Request, PEER_IP)
    );
    port.push_rx(&arp(
        ArpOperation::Reply,
        (PEER_MAC, PEER_IP),
        (OUR_MAC, OUR_IP),
    ));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    let out = port.take_tx();
    assert_eq!(out.len(), 1, "the parked datagram leaves");
    let eth = EthernetFrame::new_checked(&out[0][..]).unwrap();
    assert_eq!(eth.dst(), PEER_MAC);
    let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
    let udp = UdpPacket::new_checked(ip.payload()).unwrap();
    assert!(crate::wire::udp::checksum_holds_v4(&udp, OUR_IP, PEER_IP));
    assert_eq!((udp.dst_port(), udp.payload()), (53, &b"query"[..]));
    iface
        .send_to(&mut port, Instant::ZERO, socket, dst, b"again")
        .unwrap();
    assert_eq!(port.take_tx().len(), 1, "resolved: straight out");
}

#[test]
fn unanswered_arp_gives_up_and_counts_the_parked_packets() {
    let (mut iface, mut port) = stack();
    let socket = iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 0), BindOptions::default())
        .unwrap();
    let dst = SocketAddrV4::new(PEER_IP, 53);
    let requests = requests_until_given_up(&mut iface, &mut port, socket, dst);
    assert_eq!(requests, 3, "three requests, then give up");
    assert_eq!(
        iface.counters().dropped(DropReason::TxNeighborUnresolved),
        1
    );
    assert_eq!(port.buffers_in_use(), 0);
}

/// Sends to a neighbour that never answers and polls five virtual seconds;
/// returns how many resolution requests went out in all.
pub(super) fn requests_until_given_up(
    iface: &mut Interface<MemBuf>,
    port: &mut MemPort,
    socket: SocketId,
    dst: impl Into<core::net::SocketAddr>,
) -> usize {
    iface
        .send_to(port, Instant::ZERO, socket, dst, b"q")
        .unwrap();
    let mut requests = port.take_tx().len();
    for second in 1..=5 {
        iface.poll(
            port,
            Instant::from_nanos(second * 1_000_000_000),
            &mut DropDatagrams,
        );
        requests += port.take_tx().len();
    }
    requests
}

#[test]
fn a_destination_without_a_route_is_an_error() {
    let (mut iface, mut port) = stack();
    let socket = iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 0), BindOptions::default())
        .unwrap();
    let far = SocketAddrV4::new(Ipv4Addr::new(192, 0, 2, 1), 53);
    assert_eq!(
        iface.send_to(&mut port, Instant::ZERO, socket, far, b"q"),
        Err(SendError::NoRoute)
    );
    iface
        .add_route(Ipv4Cidr::new(Ipv4Addr::UNSPECIFIED, 0).unwrap(), PEER_IP)
        .unwrap();
    iface
        .send_to(&mut port, Instant::ZERO, socket, far, b"q")
        .unwrap();
    let out = port.take_tx();
    let request = ArpRepr::parse(&out[0][14..]).unwrap();
    assert_eq!(
        request.target_ip, PEER_IP,
        "resolves the gateway, not the destination"
    );
}

#[test]
fn a_connected_socket_keeps_its_route_until_something_changes() {
    let (mut iface, mut port) = stack_knowing_peer();
    let socket = iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 0), BindOptions::default())
        .unwrap();
    let peer = SocketAddrV4::new(PEER_IP, 53);
    assert!(iface.udp_connect(socket, peer));
    for _ in 0..3 {
        iface
            .send_to(&mut port, Instant::ZERO, socket, peer, b"q")
            .unwrap();
    }
    assert_eq!(
        iface_lookups(&iface),
        1,
        "looked up once, then kept by the socket"
    );
    iface
        .add_route(
            Ipv4Cidr::new(Ipv4Addr::new(192, 0, 2, 0), 24).unwrap(),
            PEER_IP,
        )
        .unwrap();
    iface
        .send_to(&mut port, Instant::ZERO, socket, peer, b"q")
        .unwrap();
    assert_eq!(iface_lookups(&iface), 2, "a route change invalidates it");
    let out = port.take_tx();
    assert_eq!(out.len(), 4);
    assert!(out
        .iter()
        .all(|f| EthernetFrame::new_checked(&f[..]).unwrap().dst() == PEER_MAC));
}

#[test]
fn an_unconnected_socket_keeps_the_route_to_its_latest_destination() {
    let (mut iface, mut port) = stack_knowing_peer();
    let socket = iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 0), BindOptions::default())
        .unwrap();
    let send = |iface: &mut Interface<MemBuf>, port: &mut MemPort, dst| {
        iface
            .send_to(port, Instant::ZERO, socket, dst, b"rtp")
            .unwrap()
    };
    let peer = SocketAddrV4::new(PEER_IP, 40000);
    for _ in 0..3 {
        send(&mut iface, &mut port, peer);
    }
    assert_eq!(iface_lookups(&iface), 1, "one peer: one lookup");
    send(&mut iface, &mut port, SocketAddrV4::new(PEER_IP, 40002));
    assert_eq!(iface_lookups(&iface), 1, "another port of the same host");
    let other = Ipv4Addr::new(10, 0, 0, 3);
    iface
        .send_to(
            &mut port,
            Instant::ZERO,
            socket,
            SocketAddrV4::new(other, 9),
            b"x",
        )
        .unwrap();
    assert_eq!(iface_lookups(&iface), 2, "another host: looked up");
    port.take_tx();
    // Its pending neighbour entry changed the neighbour generation: the
    // next send looks up again, then the route is kept once more.
    send(&mut iface, &mut port, peer);
    send(&mut iface, &mut port, peer);
    assert_eq!(iface_lookups(&iface), 3);
    let out = port.take_tx();
    assert_eq!(out.len(), 2);
    assert!(out
        .iter()
        .all(|f| EthernetFrame::new_checked(&f[..]).unwrap().dst() == PEER_MAC));
}

pub(super) fn iface_lookups(iface: &Interface<MemBuf>) -> u64 {
    iface.counters().get(Stat::RouteLookups)
}

/// dpstack has no loopback: a packet to one of its own addresses is
/// refused at the next hop, typed and counted, and no ARP request asks the
/// link who has our own address.
#[test]
fn sending_to_our_own_address_is_refused_without_asking_the_link() {
    let (mut iface, mut port) = stack();
    let socket = iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 0), BindOptions::default())
        .unwrap();
    let ours = SocketAddrV4::new(OUR_IP, 7);
    for _ in 0..2 {
        assert_eq!(
            iface.send_to(&mut port, Instant::ZERO, socket, ours, b"q"),
            Err(SendError::OwnAddress)
        );
    }
    assert_eq!(
        iface.send_echo_request(
            core::slice::from_mut(&mut port),
            Instant::ZERO,
            OUR_IP.into(),
            (1, 1),
            b"ping"
        ),
        Err(SendError::OwnAddress)
    );
    assert!(port.take_tx().is_empty(), "nothing asks for our own MAC");
    assert_eq!(iface.counters().dropped(DropReason::TxOwnAddress), 3);
    assert_eq!(port.buffers_in_use(), 0);
    assert!(
        iface
            .tcp_connect(core::slice::from_mut(&mut port), Instant::ZERO, ours)
            .is_err(),
        "a connection to ourselves fails at once, not after its retries"
    );
    assert!(port.take_tx().is_empty());
}

#[test]
fn a_gateway_must_not_be_our_own_address() {
    let (mut iface, _port) = stack();
    let default = Ipv4Cidr::new(Ipv4Addr::UNSPECIFIED, 0).unwrap();
    assert_eq!(
        iface.add_route(default, OUR_IP),
        Err(ConfigError::GatewayIsOurs(OUR_IP.into()))
    );
    iface.add_route(default, PEER_IP).unwrap();
}

#[test]
fn datagrams_to_a_subnet_broadcast_or_a_group_go_to_its_mac_without_arp() {
    // 10.0.0.255 on 10.0.0.0/24 is every station of the link: its frame
    // goes to the broadcast MAC (as 255.255.255.255's does, and as Linux
    // sends it), and a multicast group's to its MAC (RFC 1112 6.4), with
    // no ARP request for an address no station may claim (nor a unicast
    // frame to the gateway).
    let (mut iface, mut port) = stack();
    iface
        .add_route(Ipv4Cidr::new(Ipv4Addr::UNSPECIFIED, 0).unwrap(), PEER_IP)
        .unwrap();
    let socket = iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 0), BindOptions::default())
        .unwrap();
    // A group's datagram stays on the link (TTL 1, Linux's
    // IP_MULTICAST_TTL default); a subnet broadcast has the usual TTL.
    let rows = [
        (Ipv4Addr::new(10, 0, 0, 255), MacAddr::BROADCAST, 64),
        (
            Ipv4Addr::new(239, 129, 2, 3),
            MacAddr([0x01, 0x00, 0x5e, 0x01, 0x02, 0x03]),
            1,
        ),
    ];
    for (group, mac, ttl) in rows {
        let dst = SocketAddrV4::new(group, 9);
        iface
            .send_to(&mut port, Instant::ZERO, socket, dst, b"all")
            .unwrap();
        let out = port.take_tx();
        assert_eq!(out.len(), 1, "{group}");
        let eth = EthernetFrame::new_checked(&out[0][..]).unwrap();
        assert_eq!(eth.ethertype(), EtherType::Ipv4, "{group}: no ARP");
        assert_eq!(eth.dst(), mac, "{group}");
        let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
        assert_eq!((ip.src(), ip.dst(), ip.ttl()), (OUR_IP, group, ttl));
        assert!(ip.verify_checksum());
    }
}
