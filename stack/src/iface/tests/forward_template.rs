//! The IPv4 forward's header template (`iface::udp::template`): once a
//! socket forwards to a destination, the headers come from its template;
//! every change the template depends on is seen on the next packet: the
//! route (link, next hop, source address, the link's MTU), the next hop's
//! MAC, the socket's TOS (a new bind) and the destination. Frames over
//! the MTU still go the general way (fragments). Every frame is checked
//! whole: both checksums, lengths, DF, TTL, addresses, payload.

use super::links::{links_with_mtus, FAR, GATEWAY_B, GATEWAY_B_MAC, IP_B, MAC_B, MTU_B};
use super::*;

/// [`FAR`]'s network.
const FAR_NET: Ipv4Cidr = Ipv4Cidr {
    addr: Ipv4Addr::new(198, 51, 100, 0),
    len: 24,
};
/// DSCP EF (46) in the TOS byte.
const EF: u8 = 0xb8;
/// The port of the socket datagrams arrive at.
const IN_PORT: u16 = 30000;
/// The port of the socket they leave from.
const OUT_PORT: u16 = 30002;

/// `links_with_mtus` with link 1's gateway known and 198.51.100.0/24
/// ([`FAR`]'s network) routed through the peer on link 0.
fn two_links() -> (Interface<MemBuf>, [MemPort; 2]) {
    let (mut iface, ports) = links_with_mtus((GATEWAY_B_MAC, GATEWAY_B));
    iface.add_route(FAR_NET, PEER_IP).unwrap();
    (iface, ports)
}

/// What a forwarded frame says, its checksums and lengths checked.
#[derive(Debug, PartialEq, Eq)]
struct Sent {
    macs: (MacAddr, MacAddr),
    tos: u8,
    dont_fragment: bool,
    from: SocketAddrV4,
    to: SocketAddrV4,
    payload: Vec<u8>,
}

fn parse(frame: &[u8]) -> Sent {
    let eth = EthernetFrame::new_checked(frame).unwrap();
    assert_eq!(eth.ethertype(), EtherType::Ipv4);
    let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
    assert!(ip.verify_checksum(), "IPv4 header checksum");
    assert_eq!(usize::from(ip.total_len()), frame.len() - 14, "no padding");
    assert_eq!(
        (ip.header_len(), ip.protocol(), ip.ttl()),
        (20, protocol::UDP, 64)
    );
    assert_eq!(ip.fragment_offset(), 0);
    let udp = UdpPacket::new_checked(ip.payload()).unwrap();
    assert_eq!(usize::from(udp.len()), ip.payload().len());
    assert_ne!(udp.checksum(), 0, "a checksum is sent");
    assert!(
        crate::wire::udp::checksum_holds_v4(&udp, ip.src(), ip.dst()),
        "UDP checksum"
    );
    Sent {
        macs: (eth.dst(), eth.src()),
        tos: ip.tos(),
        dont_fragment: ip.dont_fragment(),
        from: SocketAddrV4::new(ip.src(), udp.src_port()),
        to: SocketAddrV4::new(ip.dst(), udp.dst_port()),
        payload: udp.payload().to_vec(),
    }
}

/// A datagram from the peer to our `IN_PORT` with `payload`, received on
/// link 0.
fn arriving(payload: &[u8]) -> Vec<u8> {
    udp_frame(40000, IN_PORT, payload)
}

fn payload(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(7) ^ seed).collect()
}

/// Sends `frame` in on link 0 and returns what left each link.
fn forward_one(
    iface: &mut Interface<MemBuf>,
    ports: &mut [MemPort; 2],
    handler: &mut ForwardTo<SocketAddrV4>,
    frame: &[u8],
) -> [Vec<Vec<u8>>; 2] {
    ports[0].push_rx(frame);
    iface.poll_ports(ports, Instant::from_nanos(1_000_000), handler);
    assert_eq!(handler.results.pop(), Some(Ok(())));
    [ports[0].take_tx(), ports[1].take_tx()]
}

/// The socket keeps a template that holds now.
fn has_template(iface: &Interface<MemBuf>, socket: SocketId) -> bool {
    let generation = iface.core.generation();
    iface
        .core
        .lcore
        .udp_routes
        .template(socket, generation)
        .is_some()
}

/// Binds the receiving socket and the sending one (on `out_ip`, with
/// `tos`) and forwards three datagrams to `dst` (the general way, the kept
/// route, the template), checking that each left `link` to `next_hop`.
fn warmed_up(
    out_ip: Ipv4Addr,
    tos: u8,
    dst: SocketAddrV4,
    (link, next_hop): (usize, MacAddr),
) -> (Interface<MemBuf>, [MemPort; 2], ForwardTo<SocketAddrV4>) {
    let (mut iface, mut ports) = two_links();
    iface
        .udp_bind(SocketAddrV4::new(OUR_IP, IN_PORT), BindOptions::default())
        .unwrap();
    let options = BindOptions {
        tos,
        ..BindOptions::default()
    };
    let from = iface
        .udp_bind(SocketAddrV4::new(out_ip, OUT_PORT), options)
        .unwrap();
    let mut handler = ForwardTo::new(from, dst);
    let ours = [OUR_MAC, MAC_B][link];
    let source = [OUR_IP, IP_B][link];
    for i in 0..3 {
        let data = payload(160, i);
        let out = forward_one(&mut iface, &mut ports, &mut handler, &arriving(&data));
        assert!(out[1 - link].is_empty(), "packet {i}: only link {link}");
        assert_eq!(out[link].len(), 1, "packet {i}");
        let sent = parse(&out[link][0]);
        assert_eq!(sent.macs, (next_hop, ours), "packet {i}");
        assert_eq!(sent.from, SocketAddrV4::new(source, OUT_PORT), "packet {i}");
        assert_eq!(
            (sent.to, sent.tos, sent.payload),
            (dst, tos, data),
            "packet {i}"
        );
        assert!(sent.dont_fragment, "packet {i}");
    }
    assert!(
        has_template(&iface, from),
        "the third packet used a template"
    );
    (iface, ports, handler)
}

#[test]
fn the_template_writes_what_the_general_way_writes() {
    // Up to the identification and the header checksum, byte for byte,
    // and with a zero (absent) UDP checksum kept zero.
    let dst = SocketAddrV4::new(PEER_IP, 7078);
    for out_ip in [OUR_IP, Ipv4Addr::UNSPECIFIED] {
        let (mut iface, mut ports, mut handler) = warmed_up(out_ip, EF, dst, (0, PEER_MAC));
        let mut general = two_links();
        general
            .0
            .udp_bind(SocketAddrV4::new(OUR_IP, IN_PORT), BindOptions::default())
            .unwrap();
        for (len, seed) in [(160, 9), (0, 1), (1, 2), (1471, 3)] {
            let data = payload(len, seed);
            let by_template = forward_one(&mut iface, &mut ports, &mut handler, &arriving(&data));
            assert!(has_template(&iface, handler.from));
            // A fresh stack: its first forward goes the general way.
            let (stack, general_ports) = &mut general;
            let options = BindOptions {
                tos: EF,
                ..BindOptions::default()
            };
            let from = stack
                .udp_bind(SocketAddrV4::new(out_ip, OUT_PORT), options)
                .unwrap();
            let mut first = ForwardTo::new(from, dst);
            let by_lookup = forward_one(stack, general_ports, &mut first, &arriving(&data));
            stack.udp_close(from);
            let without_ident = |frame: &[u8]| {
                let mut f = frame.to_vec();
                f[18..20].fill(0); // identification
                f[24..26].fill(0); // header checksum
                f
            };
            assert_eq!(
                without_ident(&by_template[0][0]),
                without_ident(&by_lookup[0][0]),
                "{len} bytes from {out_ip}"
            );
            assert_eq!(parse(&by_template[0][0]).payload, data);
        }
        let mut unsummed = arriving(b"no checksum");
        unsummed[40..42].fill(0);
        let out = forward_one(&mut iface, &mut ports, &mut handler, &unsummed);
        let frame = &out[0][0];
        assert_eq!(&frame[40..42], &[0, 0], "no checksum stays none");
        assert_eq!(&frame[42..], b"no checksum");
        assert!(Ipv4Packet::new_checked(&frame[14..])
            .unwrap()
            .verify_checksum());
    }
}

#[test]
fn a_route_change_is_seen_on_the_next_packet() {
    // Bound to ANY: the source address comes from the route too.
    let dst = SocketAddrV4::new(FAR, 7078);
    let (mut iface, mut ports, mut handler) =
        warmed_up(Ipv4Addr::UNSPECIFIED, EF, dst, (0, PEER_MAC));
    assert!(iface.remove_route(FAR_NET));
    iface.add_route(FAR_NET, GATEWAY_B).unwrap();
    let data = payload(160, 4);
    let out = forward_one(&mut iface, &mut ports, &mut handler, &arriving(&data));
    assert!(out[0].is_empty(), "nothing through the old link");
    assert_eq!(out[1].len(), 1);
    let sent = parse(&out[1][0]);
    assert_eq!(sent.macs, (GATEWAY_B_MAC, MAC_B));
    assert_eq!(
        (sent.from, sent.to),
        (SocketAddrV4::new(IP_B, OUT_PORT), dst)
    );
    assert_eq!(sent.payload, data);
    // And the next ones from the new route's template.
    for seed in 5..7 {
        let data = payload(160, seed);
        let out = forward_one(&mut iface, &mut ports, &mut handler, &arriving(&data));
        assert_eq!((out[0].len(), out[1].len()), (0, 1));
        assert_eq!(parse(&out[1][0]).payload, data);
    }
    assert!(has_template(&iface, handler.from));
}

#[test]
fn a_neighbour_s_new_mac_is_seen_on_the_next_packet() {
    let dst = SocketAddrV4::new(FAR, 7078);
    let (mut iface, mut ports, mut handler) = warmed_up(OUR_IP, EF, dst, (0, PEER_MAC));
    let moved = MacAddr([2, 0, 0, 0, 0, 0x42]);
    ports[0].push_rx(&arp(
        ArpOperation::Request,
        (moved, PEER_IP),
        (MacAddr::default(), OUR_IP),
    ));
    iface.poll_ports(&mut ports, Instant::from_nanos(1_000_000), &mut handler);
    assert_eq!(ports[0].take_tx().len(), 1, "our ARP reply");
    assert_eq!(iface.neighbor(PEER_IP), Some(moved));
    for seed in 0..3 {
        let data = payload(160, seed);
        let out = forward_one(&mut iface, &mut ports, &mut handler, &arriving(&data));
        assert_eq!(out[0].len(), 1, "packet {seed}");
        let sent = parse(&out[0][0]);
        assert_eq!(sent.macs, (moved, OUR_MAC), "packet {seed}");
        assert_eq!((sent.to, sent.payload), (dst, data), "packet {seed}");
    }
}

#[test]
fn the_mtu_of_the_new_route_s_link_is_seen_on_the_next_packet() {
    // 1300 bytes of payload fit link 0's MTU (1500) but not link 1's
    // (1280): once the route moves to link 1 they leave in fragments, and
    // shorter ones still whole, with DF.
    let dst = SocketAddrV4::new(FAR, 7078);
    let (mut iface, mut ports, mut handler) = warmed_up(OUR_IP, EF, dst, (0, PEER_MAC));
    let long = payload(1300, 8);
    let out = forward_one(&mut iface, &mut ports, &mut handler, &arriving(&long));
    assert_eq!(out[0].len(), 1, "fits link 0 whole");
    let sent = parse(&out[0][0]);
    assert!(sent.dont_fragment);
    assert_eq!(sent.payload, long);
    assert!(iface.remove_route(FAR_NET));
    iface.add_route(FAR_NET, GATEWAY_B).unwrap();
    for round in 0..2 {
        let short = payload(160, round);
        let out = forward_one(&mut iface, &mut ports, &mut handler, &arriving(&short));
        assert_eq!((out[0].len(), out[1].len()), (0, 1), "round {round}");
        let sent = parse(&out[1][0]);
        assert!(sent.dont_fragment);
        assert_eq!((sent.macs, sent.payload), ((GATEWAY_B_MAC, MAC_B), short));
        let out = forward_one(&mut iface, &mut ports, &mut handler, &arriving(&long));
        // Made from the kept route by now (the short one of round 1 uses
        // it), but not for this one.
        assert!(has_template(&iface, handler.from));
        assert!(out[0].is_empty());
        assert_eq!(out[1].len(), 2, "round {round}: fragments on link 1");
        let mut reassembled = Vec::new();
        for (i, frame) in out[1].iter().enumerate() {
            assert!(
                frame.len() <= 14 + MTU_B,
                "round {round}: fragment {i} fits"
            );
            let ip = Ipv4Packet::new_checked(&frame[14..]).unwrap();
            assert!(ip.verify_checksum());
            assert!(!ip.dont_fragment(), "round {round}: a fragment has no DF");
            assert_eq!(ip.more_fragments(), i == 0);
            assert_eq!(ip.fragment_offset(), reassembled.len());
            reassembled.extend_from_slice(ip.payload());
        }
        let udp = UdpPacket::new_checked(&reassembled[..]).unwrap();
        // From the socket's own address (it is bound to one).
        assert!(crate::wire::udp::checksum_holds_v4(&udp, OUR_IP, FAR));
        assert_eq!(udp.payload(), &long[..], "round {round}");
    }
}

#[test]
fn a_new_bind_with_another_tos_is_seen_on_the_next_packet() {
    let dst = SocketAddrV4::new(PEER_IP, 7078);
    let (mut iface, mut ports, mut handler) = warmed_up(OUR_IP, EF, dst, (0, PEER_MAC));
    let old = handler.from;
    assert!(iface.udp_close(old));
    let options = BindOptions {
        tos: 0x20,
        ..BindOptions::default()
    };
    let again = iface
        .udp_bind(SocketAddrV4::new(OUR_IP, OUT_PORT), options)
        .unwrap();
    assert_eq!(again.index(), old.index(), "the same slot of the memo");
    handler.from = again;
    for seed in 0..3 {
        let data = payload(160, seed);
        let out = forward_one(&mut iface, &mut ports, &mut handler, &arriving(&data));
        let sent = parse(&out[0][0]);
        assert_eq!(
            (sent.tos, sent.to, sent.payload),
            (0x20, dst, data),
            "packet {seed}"
        );
    }
}

#[test]
fn another_destination_gets_its_own_headers() {
    // A relay leg that re-latches: the same socket to a new peer, and back.
    let first = SocketAddrV4::new(PEER_IP, 7078);
    let (mut iface, mut ports, mut handler) = warmed_up(OUR_IP, EF, first, (0, PEER_MAC));
    let other_port = SocketAddrV4::new(PEER_IP, 7080);
    let far = SocketAddrV4::new(FAR, 7078);
    for dst in [other_port, other_port, far, far, first, first] {
        handler.dst = dst;
        let data = payload(100, dst.port() as u8);
        let out = forward_one(&mut iface, &mut ports, &mut handler, &arriving(&data));
        let sent = parse(&out[0][0]);
        assert_eq!(sent.from, SocketAddrV4::new(OUR_IP, OUT_PORT));
        assert_eq!((sent.to, sent.payload), (dst, data));
    }
}
