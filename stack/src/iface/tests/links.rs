//! One interface over two ports: one route table, a neighbour cache and a
//! transmit batch per link, replies through the arrival port, sends through
//! the routed port, TCP's MSS from the routed port's MTU.

use super::sending::iface_lookups;
use super::tcp_input::{tcp_frame, PEER_PORT, PORT};
use super::*;
use crate::wire::tcp::{flags, TcpOptions, TcpPacket, TcpRepr};
use core::net::IpAddr;

pub(super) const MAC_B: MacAddr = MacAddr([2, 0, 0, 0, 1, 1]);
pub(super) const IP_B: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 1);
pub(super) const GATEWAY_B: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 2);
pub(super) const GATEWAY_B_MAC: MacAddr = MacAddr([2, 0, 0, 0, 1, 2]);
pub(super) const FAR: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 7);

/// Link 0: 10.0.0.1/24 (OUR_MAC); link 1: 10.1.0.1/24 (MAC_B), with
/// 198.51.100.0/24 routed through 10.1.0.2 on link 1.
fn two_links() -> (Interface<MemBuf>, [MemPort; 2]) {
    let config = InterfaceConfig::with_links(vec![
        LinkConfig::new(OUR_MAC, Ipv4Cidr::new(OUR_IP, 24).unwrap()),
        LinkConfig::new(MAC_B, Ipv4Cidr::new(IP_B, 24).unwrap()),
    ]);
    let mut iface = Interface::new(config).unwrap();
    iface
        .add_route(
            Ipv4Cidr::new(Ipv4Addr::new(198, 51, 100, 0), 24).unwrap(),
            GATEWAY_B,
        )
        .unwrap();
    let port = |mac| {
        MemPort::new(MemPortConfig {
            mac,
            ..MemPortConfig::default()
        })
    };
    let mut ports = [port(OUR_MAC), port(MAC_B)];
    iface.poll_ports(&mut ports, Instant::ZERO, &mut DropDatagrams);
    for port in &mut ports {
        port.take_tx();
    }
    (iface, ports)
}

fn poll_both<H: InlineHandler<MemBuf>>(
    iface: &mut Interface<MemBuf>,
    ports: &mut [MemPort; 2],
    handler: &mut H,
) {
    iface.poll_ports(ports, Instant::from_nanos(1_000_000), handler);
}

#[test]
fn the_first_poll_announces_each_address_on_its_own_port() {
    let mut config = InterfaceConfig::with_links(vec![
        LinkConfig::new(OUR_MAC, Ipv4Cidr::new(OUR_IP, 24).unwrap()),
        LinkConfig::new(MAC_B, Ipv4Cidr::new(IP_B, 24).unwrap()),
    ]);
    config.mld = false; // no MLD reports among the frames (MLD has its own tests)
    let mut iface: Interface<MemBuf> = Interface::new(config).unwrap();
    let mut ports = [
        MemPort::new(MemPortConfig::default()),
        MemPort::new(MemPortConfig::default()),
    ];
    iface.poll_ports(&mut ports, Instant::ZERO, &mut DropDatagrams);
    for (port, (mac, ip)) in ports.iter_mut().zip([(OUR_MAC, OUR_IP), (MAC_B, IP_B)]) {
        let out = port.take_tx();
        assert_eq!(out.len(), 2, "gratuitous ARP, then DAD");
        let garp = ArpRepr::parse(&out[0][14..]).unwrap();
        assert_eq!(
            (garp.sender_mac, garp.sender_ip, garp.target_ip),
            (mac, ip, ip)
        );
    }
}

#[test]
fn a_udp_echo_leaves_through_the_port_it_came_in_on() {
    let (mut iface, mut ports) = two_links();
    iface
        .udp_bind(
            SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 7),
            BindOptions::default(),
        )
        .unwrap();
    let peer = Ipv4Addr::new(10, 1, 0, 9);
    let src = SocketAddrV4::new(peer, 4000);
    let dst = SocketAddrV4::new(IP_B, 7);
    let ip = ipv4(peer, IP_B, protocol::UDP, &udp(src, dst, b"on b"));
    ports[1].push_rx(&ethernet(MAC_B, PEER_MAC, EtherType::Ipv4, &ip));
    poll_both(&mut iface, &mut ports, &mut Echo);
    assert!(ports[0].take_tx().is_empty(), "nothing leaves link 0");
    let out = ports[1].take_tx();
    assert_eq!(out.len(), 1);
    let eth = EthernetFrame::new_checked(&out[0][..]).unwrap();
    assert_eq!((eth.dst(), eth.src()), (PEER_MAC, MAC_B));
    let (from, to, _, to_port, payload) = parse_reply(&out[0]);
    assert_eq!(
        (from, to, to_port, payload),
        (IP_B, peer, 4000, b"on b".to_vec())
    );
}

#[test]
fn a_send_takes_the_routed_port_and_resolves_the_gateway_there() {
    let (mut iface, mut ports) = two_links();
    let socket = iface
        .udp_bind(
            SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0),
            BindOptions::default(),
        )
        .unwrap();
    let far = SocketAddrV4::new(FAR, 53);
    iface
        .send_to_ports(&mut ports, Instant::ZERO, socket, far, b"q")
        .unwrap();
    assert!(ports[0].take_tx().is_empty(), "link 0 is not on the route");
    let out = ports[1].take_tx();
    assert_eq!(out.len(), 1, "an ARP request for the gateway");
    let eth = EthernetFrame::new_checked(&out[0][..]).unwrap();
    assert_eq!(eth.src(), MAC_B);
    let request = ArpRepr::parse(eth.payload()).unwrap();
    assert_eq!(
        (request.sender_mac, request.sender_ip, request.target_ip),
        (MAC_B, IP_B, GATEWAY_B)
    );
    // The gateway answers on link 1: the parked datagram leaves there.
    ports[1].push_rx(&arp(
        ArpOperation::Reply,
        (GATEWAY_B_MAC, GATEWAY_B),
        (MAC_B, IP_B),
    ));
    poll_both(&mut iface, &mut ports, &mut DropDatagrams);
    assert!(ports[0].take_tx().is_empty());
    let out = ports[1].take_tx();
    assert_eq!(out.len(), 1);
    let eth = EthernetFrame::new_checked(&out[0][..]).unwrap();
    assert_eq!((eth.dst(), eth.src()), (GATEWAY_B_MAC, MAC_B));
    let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
    assert_eq!(
        (ip.src(), ip.dst()),
        (IP_B, FAR),
        "the routed link's address"
    );
    assert_eq!(iface.route_to(FAR), Some((1, GATEWAY_B, IP_B)));
    assert_eq!(iface.neighbors().len(), 1);
    assert_eq!(iface.neighbors()[0].0, 1, "learned on link 1");
}

/// Answers every datagram with a new one to [`FAR`] (routed via link 1).
struct Forward;

impl InlineHandler<MemBuf> for Forward {
    fn on_datagrams<P: Port<Buf = MemBuf>>(
        &mut self,
        socket: SocketId,
        batch: &mut Batch<MemBuf>,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        for datagram in batch.drain(..) {
            let far = SocketAddrV4::new(FAR, 9);
            ctx.send_to(socket, far, datagram.payload()).unwrap();
        }
    }
}

#[test]
fn a_handler_on_one_port_can_send_through_another() {
    let (mut iface, mut ports) = two_links();
    ports[1].push_rx(&arp(
        ArpOperation::Request,
        (GATEWAY_B_MAC, GATEWAY_B),
        (MacAddr::default(), IP_B),
    ));
    poll_both(&mut iface, &mut ports, &mut DropDatagrams);
    ports[1].take_tx();
    iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 5000), BindOptions::default())
        .unwrap();
    ports[0].push_rx(&udp_frame(4000, 5000, b"relay me"));
    poll_both(&mut iface, &mut ports, &mut Forward);
    assert!(ports[0].take_tx().is_empty());
    let out = ports[1].take_tx();
    assert_eq!(out.len(), 1);
    let eth = EthernetFrame::new_checked(&out[0][..]).unwrap();
    assert_eq!((eth.dst(), eth.src()), (GATEWAY_B_MAC, MAC_B));
    let (from, to, from_port, to_port, payload) = parse_reply(&out[0]);
    assert_eq!((from, to, from_port, to_port), (OUR_IP, FAR, 5000, 9));
    assert_eq!(payload, b"relay me");
}

#[test]
fn arp_is_answered_only_for_the_links_own_addresses() {
    let (mut iface, mut ports) = two_links();
    // On link 0, asking for link 1's address.
    ports[0].push_rx(&arp(
        ArpOperation::Request,
        (PEER_MAC, PEER_IP),
        (MacAddr::default(), IP_B),
    ));
    poll_both(&mut iface, &mut ports, &mut DropDatagrams);
    assert!(ports[0].take_tx().is_empty() && ports[1].take_tx().is_empty());
    assert_eq!(iface.counters().dropped(DropReason::ArpNotForUs), 1);
    // A ping to link 1's address that arrives on link 0 is still ours
    // (weak host model) and is answered on link 0.
    ports[0].push_rx(&ethernet(
        OUR_MAC,
        PEER_MAC,
        EtherType::Ipv4,
        &ipv4(PEER_IP, IP_B, protocol::ICMP, &echo_request(1, b"x")[34..]),
    ));
    poll_both(&mut iface, &mut ports, &mut DropDatagrams);
    let out = ports[0].take_tx();
    assert_eq!(out.len(), 1);
    assert!(ports[1].take_tx().is_empty());
    let ip = Ipv4Packet::new_checked(&out[0][14..]).unwrap();
    assert_eq!((ip.src(), ip.dst()), (IP_B, PEER_IP));
}

#[test]
fn a_connected_socket_remembers_the_link_of_its_route() {
    let (mut iface, mut ports) = two_links();
    ports[1].push_rx(&arp(
        ArpOperation::Request,
        (GATEWAY_B_MAC, GATEWAY_B),
        (MacAddr::default(), IP_B),
    ));
    poll_both(&mut iface, &mut ports, &mut DropDatagrams);
    ports[1].take_tx();
    let socket = iface
        .udp_bind(
            SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0),
            BindOptions::default(),
        )
        .unwrap();
    let far = SocketAddrV4::new(FAR, 53);
    assert!(iface.udp_connect(socket, far));
    for _ in 0..3 {
        iface
            .send_to_ports(&mut ports, Instant::ZERO, socket, far, b"q")
            .unwrap();
    }
    assert_eq!(iface_lookups(&iface), 1, "looked up once");
    assert!(ports[0].take_tx().is_empty());
    assert_eq!(ports[1].take_tx().len(), 3, "every one through link 1");
}

#[test]
fn bad_configurations_are_refused_with_a_reason() {
    let link = |mac, ip, len| LinkConfig::new(mac, Ipv4Cidr::new(ip, len).unwrap());
    let new = |config| Interface::<MemBuf>::new(config).map(|_| ());
    assert_eq!(
        new(InterfaceConfig::with_links(vec![])),
        Err(ConfigError::LinkCount(0))
    );
    assert_eq!(
        new(InterfaceConfig::with_links(vec![
            link(OUR_MAC, OUR_IP, 24);
            MAX_LINKS + 1
        ])),
        Err(ConfigError::LinkCount(MAX_LINKS + 1))
    );
    assert_eq!(
        new(InterfaceConfig::with_links(vec![
            link(OUR_MAC, OUR_IP, 24),
            link(MAC_B, OUR_IP, 16)
        ])),
        Err(ConfigError::DuplicateAddress(OUR_IP))
    );
    for bad in [
        Ipv4Cidr::new(Ipv4Addr::new(224, 0, 0, 1), 24).unwrap(),
        Ipv4Cidr::new(Ipv4Addr::new(10, 0, 0, 0), 24).unwrap(),
        Ipv4Cidr::new(Ipv4Addr::new(10, 0, 0, 255), 24).unwrap(),
    ] {
        assert_eq!(
            new(InterfaceConfig::new(OUR_MAC, bad)),
            Err(ConfigError::BadAddress(bad))
        );
    }
    let (mut iface, _) = two_links();
    let network = Ipv4Cidr::new(Ipv4Addr::new(10, 9, 0, 0), 16).unwrap();
    assert_eq!(
        iface.add_address(0, Prefix::V4(network)),
        Err(ConfigError::BadAddress(network))
    );
    let mut config = InterfaceConfig::new(OUR_MAC, Ipv4Cidr::new(OUR_IP, 24).unwrap());
    config.gateway = Some(GATEWAY_B);
    assert_eq!(new(config), Err(ConfigError::GatewayNotOnLink(GATEWAY_B)));
    let mut config = InterfaceConfig::new(OUR_MAC, Ipv4Cidr::new(OUR_IP, 24).unwrap());
    config.links[0].mtu = 60;
    assert_eq!(new(config), Err(ConfigError::BadMtu { link: 0, mtu: 60 }));
    let (mut iface, _) = two_links();
    assert_eq!(
        iface.add_link_route(Ipv4Cidr::DEFAULT, 2),
        Err(ConfigError::NoSuchLink(2))
    );
    assert!(ConfigError::GatewayNotOnLink(GATEWAY_B)
        .to_string()
        .contains("10.1.0.2"));
}

#[test]
fn a_default_gateway_picks_the_link_that_reaches_it() {
    let mut config = InterfaceConfig::with_links(vec![
        LinkConfig::new(OUR_MAC, Ipv4Cidr::new(OUR_IP, 24).unwrap()),
        LinkConfig::new(MAC_B, Ipv4Cidr::new(IP_B, 24).unwrap()),
    ]);
    config.gateway = Some(GATEWAY_B);
    let iface: Interface<MemBuf> = Interface::new(config).unwrap();
    assert_eq!(
        iface.route_to(Ipv4Addr::new(203, 0, 113, 1)),
        Some((1, GATEWAY_B, IP_B))
    );
    assert_eq!(iface.route_to(PEER_IP), Some((0, PEER_IP, OUR_IP)));
}

/// The first TCP segment among `frames` (IPv4).
fn tcp_sent(frames: Vec<Vec<u8>>) -> TcpRepr {
    frames
        .iter()
        .find_map(|frame| {
            let ip = Ipv4Packet::new_checked(&frame[14..]).ok()?;
            let tcp = (ip.protocol() == protocol::TCP)
                .then(|| TcpPacket::new_checked(&frame[14 + ip.header_len()..]).ok())??;
            Some(TcpRepr::parse(&tcp).expect("our segments parse"))
        })
        .expect("a TCP segment")
}

const PEER_B: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 9);
const PEER_B_MAC: MacAddr = MacAddr([2, 0, 0, 0, 1, 9]);

/// Link 1's MTU in [`links_with_mtus`] (link 0 has 1500).
pub(super) const MTU_B: usize = 1280;

/// Link 0: 10.0.0.1/24, MTU 1500; link 1: 10.1.0.1/24, MTU [`MTU_B`]; the
/// peer on link 0 and `neighbour_b` (MAC, address) on link 1 known.
pub(super) fn links_with_mtus(
    neighbour_b: (MacAddr, Ipv4Addr),
) -> (Interface<MemBuf>, [MemPort; 2]) {
    let mut small = LinkConfig::new(MAC_B, Ipv4Cidr::new(IP_B, 24).unwrap());
    small.mtu = MTU_B;
    let config = InterfaceConfig::with_links(vec![
        LinkConfig::new(OUR_MAC, Ipv4Cidr::new(OUR_IP, 24).unwrap()),
        small,
    ]);
    let mut iface = Interface::new(config).unwrap();
    let port = |mac| {
        MemPort::new(MemPortConfig {
            mac,
            ..MemPortConfig::default()
        })
    };
    let mut ports = [port(OUR_MAC), port(MAC_B)];
    let request = |mac, ip, ours| arp(ArpOperation::Request, (mac, ip), (MacAddr::default(), ours));
    ports[0].push_rx(&request(PEER_MAC, PEER_IP, OUR_IP));
    ports[1].push_rx(&request(neighbour_b.0, neighbour_b.1, IP_B));
    iface.poll_ports(&mut ports, Instant::ZERO, &mut DropDatagrams);
    for port in &mut ports {
        port.take_tx();
    }
    (iface, ports)
}

#[test]
fn the_mss_comes_from_the_link_the_route_to_the_peer_leaves_through() {
    let now = Instant::from_nanos(1_000_000);
    // Active opens: the SYN's MSS option from its own link's MTU.
    let (mut iface, mut ports) = links_with_mtus((PEER_B_MAC, PEER_B));
    for (peer, link, mss) in [(PEER_B, 1, 1240), (PEER_IP, 0, 1460)] {
        iface
            .tcp_connect(&mut ports, now, SocketAddrV4::new(peer, 80))
            .unwrap();
        let syn = tcp_sent(ports[link].take_tx());
        assert_eq!(syn.options.mss, Some(mss), "to {peer}");
    }
    // Passive opens: the SYN-ACK's likewise, and the MSS the connection
    // sends with is at most its link's.
    let (mut iface, mut ports) = links_with_mtus((PEER_B_MAC, PEER_B));
    iface
        .tcp_listen(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, PORT), 8)
        .unwrap();
    for (peer, ours, mac, link, mss) in [
        (PEER_B, IP_B, MAC_B, 1, 1240),
        (PEER_IP, OUR_IP, OUR_MAC, 0, 1460),
    ] {
        let syn = TcpRepr {
            src_port: PEER_PORT,
            dst_port: PORT,
            seq: 1000,
            ack: 0,
            flags: flags::SYN,
            window: 8000,
            options: TcpOptions {
                mss: Some(1460),
                ..Default::default()
            },
        };
        let mut frame = tcp_frame(IpAddr::V4(peer), IpAddr::V4(ours), &syn, &[]);
        frame[..6].copy_from_slice(&mac.0);
        ports[link].push_rx(&frame);
        iface.poll_ports(&mut ports, now, &mut DropDatagrams);
        let reply = tcp_sent(ports[link].take_tx());
        assert_eq!(reply.flags, flags::SYN | flags::ACK);
        assert_eq!(reply.options.mss, Some(mss), "from {peer}");
        let info = iface
            .tcp_connections()
            .into_iter()
            .find(|c| c.remote.ip() == IpAddr::V4(peer))
            .unwrap();
        assert_eq!(info.stats.mss, mss);
    }
}
