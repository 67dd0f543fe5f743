//! A socket's TOS byte (`BindOptions::tos`) on everything it sends, the
//! zero-copy forward of a received datagram to another peer, and connecting
//! a socket from the lcore. Frames are checked with the stack's own wire
//! parsers: header and UDP checksums, lengths, addresses, the payload.

use super::ipv6::{frame6, ip6_udp, learn_peer, parse_udp6, stack6, GLOBAL, PEER6};
use super::*;
use crate::wire::ipv6::Ipv6Packet;
use core::net::{Ipv6Addr, SocketAddrV6};

/// DSCP EF (46) in the TOS byte.
const EF: u8 = 0xb8;

const PEER2_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 3]);
const PEER2_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 3);

fn with_tos(tos: u8) -> BindOptions {
    BindOptions {
        tos,
        ..BindOptions::default()
    }
}

/// What the handler does with each datagram.
enum Action {
    Reply,
    /// Forward from this socket to this peer.
    Forward(SocketId, core::net::SocketAddr),
    /// Connect the receiving socket to the datagram's sender.
    Connect,
}

struct Handler {
    action: Action,
    results: Vec<Result<(), SendError>>,
    connected: Vec<bool>,
}

impl Handler {
    fn new(action: Action) -> Handler {
        Handler {
            action,
            results: Vec::new(),
            connected: Vec::new(),
        }
    }
}

impl InlineHandler<MemBuf> for Handler {
    fn on_datagrams<P: Port<Buf = MemBuf>>(
        &mut self,
        socket: SocketId,
        batch: &mut Batch<MemBuf>,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        for datagram in batch.drain(..) {
            assert_eq!(datagram.socket(), socket);
            match self.action {
                Action::Reply => ctx.reply(datagram),
                Action::Forward(from, dst) => self.results.push(ctx.forward(datagram, from, dst)),
                Action::Connect => {
                    let peer = datagram.src();
                    self.connected.push(ctx.udp_connect(socket, peer));
                }
            }
        }
    }
}

/// (TOS, source, destination, payload) of a sent UDP/IPv4 frame, after
/// checking its IPv4 header checksum, lengths and UDP checksum.
fn parse_udp4(frame: &[u8]) -> (u8, SocketAddrV4, SocketAddrV4, Vec<u8>) {
    let eth = EthernetFrame::new_checked(frame).unwrap();
    assert_eq!((eth.ethertype(), eth.src()), (EtherType::Ipv4, OUR_MAC));
    let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
    assert!(ip.verify_checksum(), "IPv4 header checksum");
    assert_eq!(usize::from(ip.total_len()), frame.len() - 14, "no padding");
    assert_eq!((ip.protocol(), ip.ttl()), (protocol::UDP, 64));
    let udp = UdpPacket::new_checked(ip.payload()).unwrap();
    assert_eq!(usize::from(udp.len()), ip.payload().len());
    assert_ne!(udp.checksum(), 0, "a checksum is sent");
    assert!(
        crate::wire::udp::checksum_holds_v4(&udp, ip.src(), ip.dst()),
        "UDP checksum"
    );
    (
        ip.tos(),
        SocketAddrV4::new(ip.src(), udp.src_port()),
        SocketAddrV4::new(ip.dst(), udp.dst_port()),
        udp.payload().to_vec(),
    )
}

/// Teaches the stack `ip`'s MAC (an ARP request from it).
fn learn(iface: &mut Interface<MemBuf>, port: &mut MemPort, mac: MacAddr, ip: Ipv4Addr) {
    port.push_rx(&arp(
        ArpOperation::Request,
        (mac, ip),
        (MacAddr::default(), OUR_IP),
    ));
    poll(iface, port, &mut DropDatagrams);
    assert_eq!(port.take_tx().len(), 1, "our ARP reply");
}

#[test]
fn send_to_marks_ipv4_with_the_socket_tos_and_a_valid_header_checksum() {
    let (mut iface, mut port) = stack();
    learn(&mut iface, &mut port, PEER_MAC, PEER_IP);
    let ef = iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 5000), with_tos(EF))
        .unwrap();
    let plain = iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 5001), BindOptions::default())
        .unwrap();
    let dst = SocketAddrV4::new(PEER_IP, 9);
    for (socket, tos) in [(ef, EF), (plain, 0)] {
        iface
            .send_to(&mut port, Instant::ZERO, socket, dst, b"media")
            .unwrap();
        let out = port.take_tx();
        assert_eq!(out.len(), 1);
        let (got, _, to, payload) = parse_udp4(&out[0]);
        assert_eq!((got, to, &payload[..]), (tos, dst, &b"media"[..]));
    }
}

#[test]
fn reply_sets_the_receiving_socket_tos_whatever_the_request_carried() {
    let (mut iface, mut port) = stack();
    iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 7), with_tos(EF))
        .unwrap();
    iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 8), BindOptions::default())
        .unwrap();
    // (socket port, TOS of the request, TOS of the reply)
    for (to_port, request_tos, reply_tos) in [
        (7, 0, EF),
        (7, EF, EF),
        (7, 0x01, EF),
        (8, EF, 0),
        (8, 0, 0),
    ] {
        let mut frame = udp_frame(40000, to_port, b"ping");
        Ipv4Packet::new_unchecked(&mut frame[14..]).set_tos(request_tos);
        port.push_rx(&frame);
        poll(&mut iface, &mut port, &mut Handler::new(Action::Reply));
        let out = port.take_tx();
        assert_eq!(out.len(), 1, "port {to_port} tos {request_tos:#x}");
        let (tos, from, to, payload) = parse_udp4(&out[0]);
        assert_eq!(tos, reply_tos, "port {to_port} tos {request_tos:#x}");
        assert_eq!(
            (from, to),
            (
                SocketAddrV4::new(OUR_IP, to_port),
                SocketAddrV4::new(PEER_IP, 40000)
            )
        );
        assert_eq!(payload, b"ping");
    }
    // A reply rebuilt from scratch (the payload was changed) carries it too.
    let mut frame = udp_frame(40000, 7, b"ping");
    frame.extend_from_slice(&[0; 6]); // Ethernet padding: not turned around
    port.push_rx(&frame);
    poll(&mut iface, &mut port, &mut Handler::new(Action::Reply));
    let out = port.take_tx();
    assert_eq!(parse_udp4(&out[0]).0, EF);
}

#[test]
fn ipv6_sockets_send_and_reply_with_their_traffic_class() {
    let (mut iface, mut port) = stack6();
    learn_peer(&mut iface, &mut port, PEER6, GLOBAL);
    let ef = iface
        .udp_bind(SocketAddrV6::new(GLOBAL, 5000, 0, 0), with_tos(EF))
        .unwrap();
    let class = |frame: &[u8]| {
        Ipv6Packet::new_checked(&frame[14..])
            .unwrap()
            .traffic_class()
    };
    iface
        .send_to(
            &mut port,
            Instant::ZERO,
            ef,
            SocketAddrV6::new(PEER6, 9, 0, 0),
            b"six",
        )
        .unwrap();
    let out = port.take_tx();
    assert_eq!(out.len(), 1);
    assert_eq!(class(&out[0]), EF);
    assert_eq!(parse_udp6(&out[0]).2, b"six");
    // The reply path, turned around in place.
    let request = ip6_udp((PEER6, 40000), (GLOBAL, 5000), b"echo", None);
    port.push_rx(&frame6(OUR_MAC, &request));
    poll(&mut iface, &mut port, &mut Handler::new(Action::Reply));
    let out = port.take_tx();
    assert_eq!(out.len(), 1);
    assert_eq!(class(&out[0]), EF);
    assert_eq!(
        parse_udp6(&out[0]),
        ((GLOBAL, 5000), (PEER6, 40000), b"echo".to_vec())
    );
}

#[test]
fn forward_rewrites_the_headers_in_place_with_the_sending_socket_tos() {
    let (mut iface, mut port) = stack();
    learn(&mut iface, &mut port, PEER2_MAC, PEER2_IP);
    let _leg_a = iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 30000), BindOptions::default())
        .unwrap();
    let leg_b = iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 30002), with_tos(EF))
        .unwrap();
    let dst = SocketAddrV4::new(PEER2_IP, 7078);
    let payload: Vec<u8> = (0..160u8).collect();
    let mut handler = Handler::new(Action::Forward(leg_b, dst.into()));
    // A plain frame (incremental checksum update), a padded one, and one
    // with IPv4 options (headers rebuilt before the payload, summed afresh).
    let plain = udp_frame(40000, 30000, &payload);
    let mut padded = udp_frame(40000, 30000, &payload[..20]);
    padded.extend_from_slice(&[0xee; 6]);
    let mut with_options = {
        let src = SocketAddrV4::new(PEER_IP, 40000);
        let to = SocketAddrV4::new(OUR_IP, 30000);
        let mut ip = ipv4(PEER_IP, OUR_IP, protocol::UDP, &udp(src, to, &payload));
        ip.splice(20..20, [1, 1, 1, 0]); // NOP NOP NOP EOL
        ip[0] = 0x46;
        ip[3] += 4;
        Ipv4Packet::new_unchecked(&mut ip[..]).fill_checksum();
        ethernet(OUR_MAC, PEER_MAC, EtherType::Ipv4, &ip)
    };
    with_options[14 + 1] = 0x20; // a TOS the forward must replace
    Ipv4Packet::new_unchecked(&mut with_options[14..]).fill_checksum();
    let cases = [
        (plain, &payload[..]),
        (padded, &payload[..20]),
        (with_options, &payload[..]),
    ];
    for (i, (frame, sent)) in cases.iter().enumerate() {
        port.push_rx(frame);
        poll(&mut iface, &mut port, &mut handler);
        let out = port.take_tx();
        assert_eq!(out.len(), 1, "case {i}");
        assert_eq!(
            out[0].len(),
            42 + sent.len(),
            "case {i}: headers and payload only"
        );
        assert_eq!(
            EthernetFrame::new_checked(&out[0][..]).unwrap().dst(),
            PEER2_MAC
        );
        let (tos, from, to, got) = parse_udp4(&out[0]);
        assert_eq!(
            (tos, from, to),
            (EF, SocketAddrV4::new(OUR_IP, 30002), dst),
            "case {i}"
        );
        assert_eq!(&got[..], *sent, "case {i}");
    }
    assert_eq!(handler.results, vec![Ok(()); 3]);
    let counters = iface.counters();
    assert_eq!(counters.get(Stat::UdpForwardedInPlace), 3);
    assert_eq!(counters.get(Stat::UdpForwardCopies), 0);
    assert_eq!(counters.get(Stat::UdpOutDatagrams), 3);
    assert_eq!(
        port.buffers_in_use(),
        0,
        "every buffer went back to the pool"
    );
}

#[test]
fn forward_writes_the_same_headers_with_and_without_a_kept_route() {
    // The first forward from a socket looks up its route and neighbour (the
    // general way); the socket then keeps them and the next forwards write
    // the headers from what it kept. Both must put the same bytes out but
    // the IPv4 identification (and so the header checksum).
    for bound_to in [OUR_IP, Ipv4Addr::UNSPECIFIED] {
        let (mut iface, mut port) = stack();
        learn(&mut iface, &mut port, PEER2_MAC, PEER2_IP);
        iface
            .udp_bind(SocketAddrV4::new(OUR_IP, 30000), BindOptions::default())
            .unwrap();
        let out_socket = iface
            .udp_bind(SocketAddrV4::new(bound_to, 30002), with_tos(EF))
            .unwrap();
        let dst = SocketAddrV4::new(PEER2_IP, 7078);
        let mut handler = Handler::new(Action::Forward(out_socket, dst.into()));
        let payload: Vec<u8> = (0..160u8).rev().collect();
        let mut sent = Vec::new();
        for _ in 0..3 {
            port.push_rx(&udp_frame(40000, 30000, &payload));
            poll(&mut iface, &mut port, &mut handler);
            let out = port.take_tx();
            assert_eq!(out.len(), 1, "bound to {bound_to}");
            let (tos, from, to, got) = parse_udp4(&out[0]);
            assert_eq!((tos, from, to), (EF, SocketAddrV4::new(OUR_IP, 30002), dst));
            assert_eq!(got, payload);
            sent.push(out[0].clone());
        }
        let ident = |frame: &[u8]| u16::from_be_bytes([frame[18], frame[19]]);
        assert_eq!(ident(&sent[1]), ident(&sent[0]).wrapping_add(1));
        let without_ident = |frame: &[u8]| {
            let mut f = frame.to_vec();
            f[18..20].fill(0); // identification
            f[24..26].fill(0); // header checksum
            f
        };
        for later in &sent[1..] {
            assert_eq!(
                without_ident(later),
                without_ident(&sent[0]),
                "bound to {bound_to}"
            );
        }
        assert_eq!(handler.results, vec![Ok(()); 3]);
        assert_eq!(iface.counters().get(Stat::UdpForwardedInPlace), 3);
    }
}

#[test]
fn forward_keeps_the_payload_in_the_received_buffer() {
    // The forwarded frame is the received one: with a pool of one buffer,
    // a copy would have nothing to allocate.
    let config = InterfaceConfig::new(OUR_MAC, Ipv4Cidr::new(OUR_IP, 24).unwrap());
    let mut iface = Interface::new(config).unwrap();
    let mut port = MemPort::new(MemPortConfig {
        mac: OUR_MAC,
        pool_size: 1,
        ..MemPortConfig::default()
    });
    iface.poll(&mut port, Instant::ZERO, &mut DropDatagrams);
    port.take_tx();
    learn(&mut iface, &mut port, PEER2_MAC, PEER2_IP);
    iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 30000), BindOptions::default())
        .unwrap();
    let out_socket = iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 30002), with_tos(EF))
        .unwrap();
    let dst = SocketAddrV4::new(PEER2_IP, 7078);
    let mut handler = Handler::new(Action::Forward(out_socket, dst.into()));
    port.push_rx(&udp_frame(40000, 30000, b"zero-copy"));
    poll(&mut iface, &mut port, &mut handler);
    assert_eq!(handler.results, vec![Ok(())]);
    let out = port.take_tx();
    assert_eq!(out.len(), 1);
    assert_eq!(parse_udp4(&out[0]).3, b"zero-copy");
    // A copy would have failed for want of a buffer.
    assert_eq!(iface.counters().get(Stat::UdpForwardedInPlace), 1);
}

#[test]
fn forward_across_families_copies_and_counts_it() {
    let (mut iface, mut port) = stack6();
    learn(&mut iface, &mut port, PEER_MAC, PEER_IP);
    learn_peer(&mut iface, &mut port, PEER6, GLOBAL);
    iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 30000), BindOptions::default())
        .unwrap();
    let dual = iface
        .udp_bind(
            SocketAddrV6::new(Ipv6Addr::UNSPECIFIED, 30002, 0, 0),
            with_tos(EF),
        )
        .unwrap();
    let dst = SocketAddrV6::new(PEER6, 7078, 0, 0);
    let mut handler = Handler::new(Action::Forward(dual, dst.into()));
    port.push_rx(&udp_frame(40000, 30000, b"v4 to v6"));
    poll(&mut iface, &mut port, &mut handler);
    assert_eq!(handler.results, vec![Ok(())]);
    let out = port.take_tx();
    assert_eq!(out.len(), 1);
    assert_eq!(
        Ipv6Packet::new_checked(&out[0][14..])
            .unwrap()
            .traffic_class(),
        EF
    );
    assert_eq!(
        parse_udp6(&out[0]),
        ((GLOBAL, 30002), (PEER6, 7078), b"v4 to v6".to_vec())
    );
    assert_eq!(iface.counters().get(Stat::UdpForwardCopies), 1);
    assert_eq!(iface.counters().get(Stat::UdpForwardedInPlace), 0);
}

#[test]
fn forward_over_ipv6_updates_the_checksum_in_place() {
    let (mut iface, mut port) = stack6();
    learn_peer(&mut iface, &mut port, PEER6, GLOBAL);
    let peer2: Ipv6Addr = "2001:db8::3".parse().unwrap();
    iface
        .udp_bind(
            SocketAddrV6::new(GLOBAL, 30000, 0, 0),
            BindOptions::default(),
        )
        .unwrap();
    let out_socket = iface
        .udp_bind(SocketAddrV6::new(GLOBAL, 30002, 0, 0), with_tos(EF))
        .unwrap();
    // peer2 sits behind the same MAC as PEER6 for this test: learn it.
    learn_peer(&mut iface, &mut port, peer2, GLOBAL);
    let dst = SocketAddrV6::new(peer2, 7078, 0, 0);
    let mut handler = Handler::new(Action::Forward(out_socket, dst.into()));
    let payload: Vec<u8> = (0..200u8).rev().collect();
    port.push_rx(&frame6(
        OUR_MAC,
        &ip6_udp((PEER6, 40000), (GLOBAL, 30000), &payload, None),
    ));
    poll(&mut iface, &mut port, &mut handler);
    assert_eq!(handler.results, vec![Ok(())]);
    let out = port.take_tx();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].len(), 62 + payload.len());
    assert_eq!(
        Ipv6Packet::new_checked(&out[0][14..])
            .unwrap()
            .traffic_class(),
        EF
    );
    assert_eq!(
        parse_udp6(&out[0]),
        ((GLOBAL, 30002), (peer2, 7078), payload)
    );
    assert_eq!(iface.counters().get(Stat::UdpForwardedInPlace), 1);
}

#[test]
fn a_handler_connects_a_socket_on_the_lcore() {
    let (mut iface, mut port) = stack();
    iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 30000), BindOptions::default())
        .unwrap();
    let mut handler = Handler::new(Action::Connect);
    port.push_rx(&udp_frame(40000, 30000, b"latch me"));
    poll(&mut iface, &mut port, &mut handler);
    assert_eq!(handler.connected, vec![true]);
    // Connected: another source's datagram no longer reaches it.
    port.push_rx(&udp_frame(40001, 30000, b"someone else"));
    poll(&mut iface, &mut port, &mut handler);
    assert_eq!(handler.connected, vec![true], "not delivered");
    assert_eq!(iface.counters().get(Stat::UdpInDatagrams), 1);
}
