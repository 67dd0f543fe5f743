//! Hostile frames from the wire, one test per defect a barrage from a tap's
//! kernel side found: each sends the frames, asserts the drop by reason,
//! and that nothing (or only the right thing) went out.

use super::ipv6::{echo6, frame6, ip6_icmp, ip6_udp, stack6, GLOBAL, PEER6, PEER_LL};
use super::*;
use crate::wire::icmpv6::{msg_type as icmp6, Icmpv6Packet};
use crate::wire::ipv6::{multicast_mac, next_header, Ipv6Packet};
use core::net::{Ipv6Addr, SocketAddrV6};

/// `frame` with its Ethernet source replaced.
fn from_mac(mut frame: Vec<u8>, src: MacAddr) -> Vec<u8> {
    frame[6..12].copy_from_slice(&src.0);
    frame
}

#[test]
fn frames_from_a_group_source_mac_are_dropped_whatever_they_carry() {
    let (mut iface, mut port) = stack6();
    iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 7), BindOptions::default())
        .unwrap();
    iface
        .udp_bind(SocketAddrV6::new(GLOBAL, 7, 0, 0), BindOptions::default())
        .unwrap();
    let group_sources = [MacAddr::BROADCAST, MacAddr([0x01, 0x00, 0x5e, 0, 0, 1])];
    // Each would be answered from a unicast source: a UDP echo (fast path),
    // a ping, a UDP/IPv6 echo (IPv6 fast path), a ping6, an ARP request.
    let frames = [
        udp_frame(40000, 7, b"echo me"),
        echo_request(1, b"ping"),
        frame6(OUR_MAC, &ip6_udp((PEER6, 40000), (GLOBAL, 7), b"six", None)),
        frame6(OUR_MAC, &ip6_icmp(PEER6, GLOBAL, 64, &[], &echo6(1, b"p6"))),
        arp(
            ArpOperation::Request,
            (PEER_MAC, PEER_IP),
            (MacAddr::default(), OUR_IP),
        ),
    ];
    for source in group_sources {
        for frame in &frames {
            port.push_rx(&from_mac(frame.clone(), source));
        }
    }
    poll(&mut iface, &mut port, &mut Echo);
    assert!(port.take_tx().is_empty(), "nothing answered");
    let sent = (group_sources.len() * frames.len()) as u64;
    assert_eq!(iface.counters().dropped(DropReason::EthGroupSource), sent);
    assert_eq!(iface.counters().total_dropped(), sent);
    assert_eq!(iface.neighbor(PEER_IP), None, "nothing learned");
    // The same frames from the peer's own MAC are answered.
    for frame in &frames {
        port.push_rx(frame);
    }
    poll(&mut iface, &mut port, &mut Echo);
    assert_eq!(port.take_tx().len(), frames.len());
    assert_eq!(port.buffers_in_use(), 0);
}

/// Puts the IPv6 fragments we sent back together, checking each fits
/// the 1500-byte MTU and carries one identification: (source,
/// destination, upper-layer protocol, payload).
fn reassemble_sent6(frames: &[Vec<u8>]) -> (Ipv6Addr, Ipv6Addr, u8, Vec<u8>) {
    let mut pieces = Vec::new();
    let mut idents = Vec::new();
    let mut addresses = None;
    for frame in frames {
        assert!(frame.len() <= 14 + 1500, "{} bytes", frame.len());
        let ip = Ipv6Packet::new_checked(&frame[14..]).unwrap();
        assert_eq!(ip.next_header(), next_header::FRAGMENT, "a fragment");
        addresses = Some((ip.src(), ip.dst()));
        let header = &ip.payload()[..8];
        let field = u16::from_be_bytes([header[2], header[3]]);
        idents.push(u32::from_be_bytes([
            header[4], header[5], header[6], header[7],
        ]));
        let (offset, more) = (usize::from(field & !7), field & 1 == 1);
        pieces.push((offset, more, header[0], ip.payload()[8..].to_vec()));
    }
    idents.dedup();
    assert_eq!(idents.len(), 1, "one datagram");
    pieces.sort_by_key(|p| p.0);
    let mut payload = Vec::new();
    for (offset, _, _, bytes) in &pieces {
        assert_eq!(*offset, payload.len(), "no hole, no overlap");
        payload.extend_from_slice(bytes);
    }
    assert!(pieces.iter().rev().skip(1).all(|p| p.1) && !pieces.last().unwrap().1);
    let (src, dst) = addresses.unwrap();
    (src, dst, pieces[0].2, payload)
}

#[test]
fn ipv6_echo_replies_over_the_mtu_leave_in_fragments() {
    // `ping -6 -s 1453` (the reply is one byte over a 1500-byte MTU) and
    // `-s 1480`: the requests come fragmented, as the kernel sends them.
    for size in [1453, 1480, 4000] {
        let (mut iface, mut port) = stack6();
        let data: Vec<u8> = (0..size).map(|i| (i * 7 % 251) as u8).collect();
        let request = ip6_icmp(PEER6, GLOBAL, 64, &[], &echo6(5, &data));
        for frame in super::ipv6_frag::fragments(&request, 1448, 77) {
            port.push_rx(&frame);
        }
        poll(&mut iface, &mut port, &mut DropDatagrams);
        let out = port.take_tx();
        assert!(out.len() >= 2, "-s {size}: {} frames", out.len());
        assert!(out
            .iter()
            .all(|f| f[..6] == PEER_MAC.0 && f[6..12] == OUR_MAC.0));
        let (src, dst, protocol, message) = reassemble_sent6(&out);
        assert_eq!((src, dst, protocol), (GLOBAL, PEER6, next_header::ICMPV6));
        let icmp = Icmpv6Packet::new_checked(&message[..]).unwrap();
        assert!(icmp.verify_checksum(src, dst), "-s {size}");
        assert_eq!(message[0], icmp6::ECHO_REPLY);
        assert_eq!(&message[4..], &echo6(5, &data)[4..], "-s {size}");
        let c = iface.counters();
        assert_eq!(c.get(Stat::Icmp6OutEchoReplies), 1);
        assert_eq!(c.get(Stat::Ip6FragOKs), 1);
        assert_eq!(c.get(Stat::Ip6OutRequests), out.len() as u64);
        assert_eq!(port.buffers_in_use(), 0);
    }
}

#[test]
fn a_plain_udp6_echo_over_the_mtu_leaves_in_fragments() {
    // A peer with a larger MTU sent one unfragmented 1600-byte frame: the
    // in-place turnaround must not send it back whole.
    let (mut iface, mut port) = stack6();
    iface
        .udp_bind(SocketAddrV6::new(GLOBAL, 7, 0, 0), BindOptions::default())
        .unwrap();
    let data: Vec<u8> = (0..1538).map(|i| (i * 3 % 251) as u8).collect();
    port.push_rx(&frame6(
        OUR_MAC,
        &ip6_udp((PEER6, 40000), (GLOBAL, 7), &data, None),
    ));
    poll(&mut iface, &mut port, &mut Echo);
    let out = port.take_tx();
    assert_eq!(out.len(), 2);
    let (src, dst, protocol, udp) = reassemble_sent6(&out);
    assert_eq!((src, dst, protocol), (GLOBAL, PEER6, next_header::UDP));
    assert_eq!(udp, ip6_udp((GLOBAL, 7), (PEER6, 40000), &data, None)[40..]);
    assert_eq!(iface.counters().get(Stat::UdpOutDatagrams), 1);
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn a_plain_udp_echo_over_the_mtu_leaves_in_fragments() {
    // The IPv4 twin of the test above: a 1600-byte frame from a peer with
    // a larger MTU is plain in every other way, but its reply must not go
    // back whole over our 1500-byte link.
    let (mut iface, mut port) = stack();
    iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 7), BindOptions::default())
        .unwrap();
    let data: Vec<u8> = (0..1558).map(|i| (i * 5 % 251) as u8).collect();
    port.push_rx(&udp_frame(40000, 7, &data));
    poll(&mut iface, &mut port, &mut Echo);
    let out = port.take_tx();
    assert_eq!(out.len(), 2);
    let mut datagram = Vec::new();
    for (i, frame) in out.iter().enumerate() {
        assert!(frame.len() <= 14 + 1500, "{} bytes", frame.len());
        assert!(frame[..6] == PEER_MAC.0 && frame[6..12] == OUR_MAC.0);
        let ip = Ipv4Packet::new_checked(&frame[14..]).unwrap();
        assert!(ip.verify_checksum());
        let field = u16::from_be_bytes([frame[14 + 6], frame[14 + 7]]);
        assert_eq!(usize::from(field & 0x1fff) * 8, datagram.len());
        assert_eq!(field & 0x2000 != 0, i == 0, "more fragments on the first");
        datagram.extend_from_slice(ip.payload());
    }
    let expected = udp(
        SocketAddrV4::new(OUR_IP, 7),
        SocketAddrV4::new(PEER_IP, 40000),
        &data,
    );
    assert_eq!(datagram[..6], expected[..6], "ports and length");
    assert_eq!(datagram[8..], expected[8..], "payload");
    assert_eq!(iface.counters().get(Stat::UdpOutDatagrams), 1);
    assert_eq!(port.buffers_in_use(), 0);
}

/// Records each datagram's source, then replies to it.
#[derive(Default)]
struct EchoRecording {
    sources: Vec<SocketAddr>,
}

impl InlineHandler<MemBuf> for EchoRecording {
    fn on_datagrams<P: Port<Buf = MemBuf>>(
        &mut self,
        _: SocketId,
        batch: &mut Batch<MemBuf>,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        for datagram in batch.drain(..) {
            self.sources.push(datagram.src());
            ctx.reply(datagram);
        }
    }
}

#[test]
fn udp_from_source_port_zero_is_delivered_on_every_path_but_never_answered_to_port_zero() {
    // Linux delivers a datagram from source port 0 (nothing in
    // __udp4_lib_rcv looks at it) and answers a closed port with port
    // unreachable; only a send to port 0 is refused (EINVAL).
    let (mut iface, mut port) = stack6();
    iface
        .udp_bind(
            SocketAddrV6::new(Ipv6Addr::UNSPECIFIED, 7, 0, 0),
            BindOptions::default(),
        )
        .unwrap();
    let all_nodes: Ipv6Addr = "ff02::1".parse().unwrap();
    let broadcast = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 255), 7);
    let to_bound = [
        // IPv4 fast path's frame, and the general path (a broadcast).
        udp_frame(0, 7, b"fast"),
        ethernet(
            MacAddr::BROADCAST,
            PEER_MAC,
            EtherType::Ipv4,
            &ipv4(
                PEER_IP,
                *broadcast.ip(),
                protocol::UDP,
                &udp(SocketAddrV4::new(PEER_IP, 0), broadcast, b"general"),
            ),
        ),
        // IPv6 fast path's frame, and the general path (to a group).
        frame6(OUR_MAC, &ip6_udp((PEER6, 0), (GLOBAL, 7), b"fast6", None)),
        frame6(
            multicast_mac(all_nodes),
            &ip6_udp((PEER_LL, 0), (all_nodes, 7), b"general6", None),
        ),
    ];
    let to_closed = [
        udp_frame(0, 9999, b"closed"),
        frame6(
            OUR_MAC,
            &ip6_udp((PEER6, 0), (GLOBAL, 9999), b"closed", None),
        ),
    ];
    for frame in to_bound.iter().chain(&to_closed) {
        port.push_rx(frame);
    }
    let mut echo = EchoRecording::default();
    poll(&mut iface, &mut port, &mut echo);
    assert_eq!(echo.sources.len(), to_bound.len());
    assert!(
        echo.sources.iter().all(|s| s.port() == 0),
        "{:?}",
        echo.sources
    );
    let c = iface.counters();
    assert_eq!(c.get(Stat::UdpInDatagrams), to_bound.len() as u64);
    // The echoes to port 0 are refused; the closed ports answer.
    assert_eq!(c.dropped(DropReason::TxPortZero), to_bound.len() as u64);
    assert_eq!(c.dropped(DropReason::UdpNoSocket), to_closed.len() as u64);
    assert_eq!(c.total_dropped(), (to_bound.len() + to_closed.len()) as u64);
    let sent = port.take_tx();
    assert_eq!(sent.len(), to_closed.len(), "port unreachables only");
    assert_eq!(c.get(Stat::UdpOutDatagrams), 0);
    // From any other port, the same datagrams are echoed (the closed
    // ports answered with port unreachable as before).
    for frame in to_bound.iter().chain(&to_closed) {
        let mut frame = frame.clone();
        let ipv6 = frame[12..14] == [0x86, 0xdd];
        let udp_at = if ipv6 { 14 + 40 } else { 14 + 20 };
        frame[udp_at + 1] = 9; // source port 9: the checksum sum gains 9
        let check = u16::from_be_bytes([frame[udp_at + 6], frame[udp_at + 7]]);
        let check = !crate::wire::checksum::fold(u64::from(!check) + 9);
        frame[udp_at + 6..udp_at + 8].copy_from_slice(&check.to_be_bytes());
        port.push_rx(&frame);
    }
    poll(&mut iface, &mut port, &mut Echo);
    assert_eq!(port.take_tx().len(), to_bound.len() + to_closed.len());
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn a_send_to_port_zero_is_refused_with_a_typed_error() {
    let (mut iface, mut port) = stack6();
    let socket = iface
        .udp_bind(
            SocketAddrV6::new(Ipv6Addr::UNSPECIFIED, 7, 0, 0),
            BindOptions::default(),
        )
        .unwrap();
    let destinations: [SocketAddr; 3] = [
        SocketAddrV4::new(PEER_IP, 0).into(),
        SocketAddrV6::new(PEER6, 0, 0, 0).into(),
        SocketAddrV6::new(PEER_IP.to_ipv6_mapped(), 0, 0, 0).into(),
    ];
    for dst in destinations {
        assert_eq!(
            iface.send_to(&mut port, Instant::ZERO, socket, dst, b"x"),
            Err(SendError::PortZero),
            "{dst}"
        );
    }
    // A forward to port 0 (IPv4 in place, IPv6, and across families).
    for (frame, dst) in [
        (udp_frame(40000, 7, b"fwd"), destinations[0]),
        (
            frame6(
                OUR_MAC,
                &ip6_udp((PEER6, 40000), (GLOBAL, 7), b"fwd6", None),
            ),
            destinations[1],
        ),
        (udp_frame(40001, 7, b"fwd"), destinations[1]),
    ] {
        port.push_rx(&frame);
        let mut forward = ForwardTo::new(socket, dst);
        poll(&mut iface, &mut port, &mut forward);
        assert_eq!(forward.results, [Err(SendError::PortZero)], "{dst}");
    }
    assert!(port.take_tx().is_empty(), "nothing sent to port 0");
    let c = iface.counters();
    assert_eq!(c.dropped(DropReason::TxPortZero), 6);
    assert_eq!(c.get(Stat::UdpOutDatagrams), 0);
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn ipv6_loopback_from_the_wire_is_a_martian() {
    let (mut iface, mut port) = stack6();
    iface
        .udp_bind(SocketAddrV6::new(GLOBAL, 7, 0, 0), BindOptions::default())
        .unwrap();
    let loopback = Ipv6Addr::LOCALHOST;
    let frames = [
        // From ::1: a ping, a UDP echo request (IPv6 fast path).
        frame6(
            OUR_MAC,
            &ip6_icmp(loopback, GLOBAL, 64, &[], &echo6(1, b"lo")),
        ),
        frame6(
            OUR_MAC,
            &ip6_udp((loopback, 4000), (GLOBAL, 7), b"lo", None),
        ),
        // To ::1.
        frame6(
            OUR_MAC,
            &ip6_icmp(PEER6, loopback, 64, &[], &echo6(2, b"lo")),
        ),
    ];
    for frame in &frames {
        port.push_rx(frame);
    }
    poll(&mut iface, &mut port, &mut Echo);
    assert!(port.take_tx().is_empty(), "nothing sent to ::1");
    let c = iface.counters();
    assert_eq!(c.dropped(DropReason::Ipv6Martian), frames.len() as u64);
    assert_eq!(c.total_dropped(), frames.len() as u64);
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn ipv6_from_an_ipv4_mapped_source_is_a_martian() {
    // No node sends from ::ffff:a.b.c.d; a dual-stack socket would take
    // such a sender for an IPv4 peer (::ffff:127.0.0.1 for this host), and
    // a send to it leaves over IPv4. Linux drops these in ip6_rcv_core.
    let (mut iface, mut port) = stack6();
    iface
        .udp_bind(
            SocketAddrV6::new(Ipv6Addr::UNSPECIFIED, 7, 0, 0),
            BindOptions::default(),
        )
        .unwrap();
    let mapped = [
        Ipv4Addr::new(127, 0, 0, 1).to_ipv6_mapped(),
        Ipv4Addr::new(10, 0, 0, 2).to_ipv6_mapped(),
    ];
    let mut frames = Vec::new();
    for source in mapped {
        // A UDP echo request (IPv6 fast path) and a ping.
        frames.push(frame6(
            OUR_MAC,
            &ip6_udp((source, 4000), (GLOBAL, 7), b"v4?", None),
        ));
        frames.push(frame6(
            OUR_MAC,
            &ip6_icmp(source, GLOBAL, 64, &[], &echo6(1, b"v4?")),
        ));
    }
    for frame in &frames {
        port.push_rx(frame);
    }
    poll(&mut iface, &mut port, &mut Echo);
    assert!(port.take_tx().is_empty(), "nothing answered");
    let c = iface.counters();
    assert_eq!(c.dropped(DropReason::Ipv6Martian), frames.len() as u64);
    assert_eq!(c.total_dropped(), frames.len() as u64);
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn arp_from_martian_senders_is_refused_and_our_address_claimed_is_a_conflict() {
    let (mut iface, mut port) = stack();
    let martians = [
        Ipv4Addr::new(10, 0, 0, 255), // the subnet's broadcast address
        Ipv4Addr::new(10, 0, 0, 0),   // its network address
        Ipv4Addr::BROADCAST,
        Ipv4Addr::new(224, 0, 0, 1),
        Ipv4Addr::new(127, 0, 0, 1),
    ];
    let ask = |sender: (MacAddr, Ipv4Addr)| {
        arp(ArpOperation::Request, sender, (MacAddr::default(), OUR_IP))
    };
    let answer = |sender: (MacAddr, Ipv4Addr)| arp(ArpOperation::Reply, sender, (OUR_MAC, OUR_IP));
    for ip in martians {
        port.push_rx(&ask((PEER_MAC, ip)));
        port.push_rx(&answer((PEER_MAC, ip)));
    }
    // Our own address looped back from our own MAC is no neighbour either.
    port.push_rx(&ask((OUR_MAC, OUR_IP)));
    // Another MAC claiming our address: a request, an announcement, a reply.
    port.push_rx(&ask((PEER_MAC, OUR_IP)));
    port.push_rx(&arp(
        ArpOperation::Request,
        (PEER_MAC, OUR_IP),
        (MacAddr::default(), OUR_IP),
    ));
    port.push_rx(&answer((PEER_MAC, OUR_IP)));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert!(port.take_tx().is_empty(), "no martian answered");
    for ip in martians.into_iter().chain([OUR_IP]) {
        assert_eq!(iface.neighbor(ip), None, "{ip} not learned");
    }
    let c = iface.counters();
    assert_eq!(c.dropped(DropReason::ArpMartianSender), 11);
    assert_eq!(c.dropped(DropReason::ArpAddressConflict), 3);
    assert_eq!(c.total_dropped(), 14);
    assert_eq!(
        (c.get(Stat::ArpInRequests), c.get(Stat::ArpInReplies)),
        (0, 0)
    );
    // A real neighbour is still answered and learned.
    port.push_rx(&ask((PEER_MAC, PEER_IP)));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert_eq!(port.take_tx().len(), 1);
    assert_eq!(iface.neighbor(PEER_IP), Some(PEER_MAC));
}

#[test]
fn neighbor_discovery_refuses_group_link_layer_addresses() {
    let (mut iface, mut port) = stack6();
    super::ipv6::learn_peer(&mut iface, &mut port, PEER6, GLOBAL);
    let group_macs = [MacAddr::BROADCAST, MacAddr([0x33, 0x33, 0, 0, 0, 1])];
    for mac in group_macs {
        // A solicitation for our address from a new neighbour, and one
        // from the known one, each with a group source link-layer address.
        let sender: Ipv6Addr = "2001:db8::77".parse().unwrap();
        for from in [sender, PEER6] {
            let ns = super::ipv6::ns(GLOBAL, Some(mac));
            port.push_rx(&frame6(OUR_MAC, &ip6_icmp(from, GLOBAL, 255, &[], &ns)));
        }
        // An advertisement moving the known neighbour to a group MAC.
        let na = super::ipv6::na(PEER6, mac);
        port.push_rx(&frame6(OUR_MAC, &ip6_icmp(PEER6, GLOBAL, 255, &[], &na)));
    }
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert!(port.take_tx().is_empty(), "no advertisement to a group MAC");
    let neighbors = iface.neighbors6();
    assert_eq!(neighbors.len(), 1, "{neighbors:?}");
    assert_eq!((neighbors[0].1, neighbors[0].2), (PEER6, Some(PEER_MAC)));
    assert_eq!(iface.counters().dropped(DropReason::NdGroupLinkAddress), 6);
    assert_eq!(iface.counters().total_dropped(), 6);

    // A router advertisement's source link-layer address, with RAs taken.
    let mut link = LinkConfig::new(OUR_MAC, Ipv4Cidr::new(OUR_IP, 24).unwrap());
    link.addresses6
        .push(crate::route::Ipv6Cidr::new(GLOBAL, 64).unwrap());
    let mut config = InterfaceConfig::with_links(vec![link]);
    config.dad_transmits = 0;
    config.accept_ra = true;
    let mut iface = Interface::new(config).unwrap();
    iface.poll(&mut port, Instant::ZERO, &mut DropDatagrams);
    port.take_tx();
    let all_nodes: Ipv6Addr = "ff02::1".parse().unwrap();
    let mut ra = vec![icmp6::ROUTER_ADVERTISEMENT, 0, 0, 0, 64, 0, 0x07, 0x08];
    ra.extend_from_slice(&[0; 8]); // reachable time, retransmit timer
    ra.extend_from_slice(&[1, 1]); // source link-layer address option
    ra.extend_from_slice(&MacAddr::BROADCAST.0);
    port.push_rx(&frame6(
        multicast_mac(all_nodes),
        &ip6_icmp(PEER_LL, all_nodes, 255, &[], &ra),
    ));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert!(iface.neighbors6().is_empty(), "the router not learned");
    assert_eq!(iface.counters().dropped(DropReason::NdGroupLinkAddress), 1);
    assert_eq!(port.buffers_in_use(), 0);
}

/// Splits a UDP datagram from `src` to us into IPv4 fragments of `chunk`
/// bytes (a multiple of 8), as Ethernet frames.
fn fragments4(src: Ipv4Addr, datagram: &[u8], chunk: usize, ident: u16) -> Vec<Vec<u8>> {
    datagram
        .chunks(chunk)
        .enumerate()
        .map(|(i, piece)| {
            let mut ip = ipv4(src, OUR_IP, protocol::UDP, piece);
            let more = (i + 1) * chunk < datagram.len();
            let field = ((i * chunk / 8) as u16) | if more { 0x2000 } else { 0 };
            ip[4..6].copy_from_slice(&ident.to_be_bytes());
            ip[6..8].copy_from_slice(&field.to_be_bytes());
            Ipv4Packet::new_unchecked(&mut ip[..]).fill_checksum();
            ethernet(OUR_MAC, PEER_MAC, EtherType::Ipv4, &ip)
        })
        .collect()
}

fn payload(len: usize, seed: usize) -> Vec<u8> {
    (0..len).map(|i| ((i + seed) * 13 % 251) as u8).collect()
}

#[test]
fn a_duplicated_fragment_is_dropped_alone_and_its_datagram_completes() {
    let (mut iface, mut port) = stack6();
    iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 7), BindOptions::default())
        .unwrap();
    iface
        .udp_bind(SocketAddrV6::new(GLOBAL, 7, 0, 0), BindOptions::default())
        .unwrap();
    let data = payload(3000, 0);
    let datagram = udp(
        SocketAddrV4::new(PEER_IP, 4000),
        SocketAddrV4::new(OUR_IP, 7),
        &data,
    );
    let v4 = fragments4(PEER_IP, &datagram, 1480, 11);
    let packet6 = ip6_udp((PEER6, 4000), (GLOBAL, 7), &data, None);
    let v6 = super::ipv6_frag::fragments(&packet6, 1448, 11);
    // Each family: the first fragment, the middle one twice (a network
    // duplicated it), the first again, then the last.
    for frames in [&v4, &v6] {
        for i in [0, 1, 1, 0, 2] {
            port.push_rx(&frames[i]);
        }
    }
    let mut got = Recorder::default();
    poll(&mut iface, &mut port, &mut got);
    let c = iface.counters();
    assert_eq!(c.dropped(DropReason::Ipv4ReassemblyDuplicate), 2);
    assert_eq!(c.dropped(DropReason::Ipv6ReassemblyDuplicate), 2);
    assert_eq!(c.total_dropped(), 4, "{:?}", c.nonzero());
    assert_eq!((c.get(Stat::IpReasmOKs), c.get(Stat::Ip6ReasmOKs)), (1, 1));
    assert_eq!(got.calls.len(), 2);
    assert!(got
        .calls
        .iter()
        .all(|(_, d)| d == std::slice::from_ref(&data)));
    // At the same place with other bytes, it is an overlap (RFC 5722: the
    // datagram is gone, and so is its last fragment).
    let v6 = super::ipv6_frag::fragments(&packet6, 1448, 12);
    let mut forged = v6[1].clone();
    let last = forged.len() - 1;
    forged[last] ^= 0xff;
    for frame in [&v6[0], &v6[1], &forged, &v6[2]] {
        port.push_rx(frame);
    }
    poll(&mut iface, &mut port, &mut got);
    let c = iface.counters();
    assert_eq!(c.dropped(DropReason::Ipv6ReassemblyOverlap), 2);
    assert_eq!(c.dropped(DropReason::Ipv6ReassemblyDuplicate), 2);
    assert_eq!((got.calls.len(), c.get(Stat::Ip6ReasmOKs)), (2, 1));
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn an_ipv4_overlap_drops_its_datagram_without_poisoning_the_key_as_linux() {
    let (mut iface, mut port) = stack();
    iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 7), BindOptions::default())
        .unwrap();
    let data = payload(3000, 1);
    let datagram = udp(
        SocketAddrV4::new(PEER_IP, 4000),
        SocketAddrV4::new(OUR_IP, 7),
        &data,
    );
    let frames = fragments4(PEER_IP, &datagram, 1480, 21);
    // The second fragment again, 8 bytes early: a real overlap.
    let mut overlapping = frames[1].clone();
    overlapping[14 + 7] -= 1;
    Ipv4Packet::new_unchecked(&mut overlapping[14..]).fill_checksum();
    port.push_rx(&frames[0]);
    port.push_rx(&overlapping);
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert_eq!(
        iface.counters().dropped(DropReason::Ipv4ReassemblyOverlap),
        1
    );
    assert_eq!(port.buffers_in_use(), 0, "the datagram is gone");
    // Its identification is free again (RFC 5722's poisoning is IPv6's):
    // the datagram sent again with it reassembles.
    for frame in &frames {
        port.push_rx(frame);
    }
    let mut got = Recorder::default();
    poll(&mut iface, &mut port, &mut got);
    assert_eq!(got.calls.len(), 1);
    assert_eq!(got.calls[0].1, [data]);
    assert_eq!(
        iface.counters().dropped(DropReason::Ipv4ReassemblyOverlap),
        1
    );
}

/// A first fragment of 8 bytes (more to come) of datagram `ident`.
fn tiny_first_fragment4(src: Ipv4Addr, ident: u16) -> Vec<u8> {
    let mut ip = ipv4(src, OUR_IP, protocol::UDP, &[0x55; 8]);
    ip[4..6].copy_from_slice(&ident.to_be_bytes());
    ip[6..8].copy_from_slice(&0x2000u16.to_be_bytes());
    Ipv4Packet::new_unchecked(&mut ip[..]).fill_checksum();
    ethernet(OUR_MAC, PEER_MAC, EtherType::Ipv4, &ip)
}

/// The same for IPv6 (the 8 bytes are the UDP header: RFC 7112 is met).
fn tiny_first_fragment6(src: Ipv6Addr, ident: u32) -> Vec<u8> {
    let mut p = vec![0u8; 40 + 8 + 8];
    Ipv6Packet::new_unchecked(&mut p[..]).emit_header(&crate::wire::ipv6::Ipv6Header {
        src,
        dst: GLOBAL,
        next_header: next_header::FRAGMENT,
        payload_len: 16,
        hop_limit: 64,
    });
    p[40] = next_header::UDP;
    p[42..44].copy_from_slice(&1u16.to_be_bytes()); // offset 0, more
    p[44..48].copy_from_slice(&ident.to_be_bytes());
    frame6(OUR_MAC, &p)
}

#[test]
fn a_flood_of_tiny_fragments_does_not_lock_real_traffic_out_of_reassembly() {
    let (mut iface, mut port) = stack6();
    iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 7), BindOptions::default())
        .unwrap();
    iface
        .udp_bind(SocketAddrV6::new(GLOBAL, 7, 0, 0), BindOptions::default())
        .unwrap();
    // One source sending 40, then eight more sending 10 each: over a
    // source's share, then over the table. (IPv6 sources in one /64 count
    // as one: a host has the whole prefix.)
    let flood4 = |round: u16| -> Vec<Vec<u8>> {
        let heavy = (0..40).map(|i| tiny_first_fragment4(Ipv4Addr::new(192, 0, 2, 1), round + i));
        let many = (0..80).map(|i| {
            let src = Ipv4Addr::new(198, 51, 100, 1 + (i % 8) as u8);
            tiny_first_fragment4(src, round + i)
        });
        heavy.chain(many).collect()
    };
    let flood6 = |round: u32| -> Vec<Vec<u8>> {
        let heavy = (0..40).map(|i| {
            let src = Ipv6Addr::new(0x2001, 0xdb8, 0xa, 0, 0, 0, 0, 1 + i as u16);
            tiny_first_fragment6(src, round + i)
        });
        let many = (0..80).map(|i| {
            let src = Ipv6Addr::new(0x2001, 0xdb8, 0xb0 + (i % 8) as u16, 0, 0, 0, 0, 1);
            tiny_first_fragment6(src, round + i)
        });
        heavy.chain(many).collect()
    };
    let data = payload(3000, 2);
    let datagram = udp(
        SocketAddrV4::new(PEER_IP, 4000),
        SocketAddrV4::new(OUR_IP, 7),
        &data,
    );
    let real4 = fragments4(PEER_IP, &datagram, 1480, 999);
    let packet6 = ip6_udp((PEER6, 4000), (GLOBAL, 7), &data, None);
    let real6 = super::ipv6_frag::fragments(&packet6, 1448, 999);
    let mut got = Recorder::default();
    let mut send = |frames: &[Vec<u8>], got: &mut Recorder| {
        for frame in frames {
            port.push_rx(frame);
            poll(&mut iface, &mut port, got);
        }
    };
    // The flood; then a real datagram from another source, its first
    // fragment, more flood, and the rest: it reassembles.
    send(&flood4(0), &mut got);
    send(&flood6(0), &mut got);
    send(&real4[..1], &mut got);
    send(&real6[..1], &mut got);
    send(&flood4(1000), &mut got);
    send(&flood6(1000), &mut got);
    send(&real4[1..], &mut got);
    send(&real6[1..], &mut got);
    assert_eq!(got.calls.len(), 2, "{:?}", iface.counters().nonzero());
    assert!(got
        .calls
        .iter()
        .all(|(_, d)| d == std::slice::from_ref(&data)));
    let c = iface.counters();
    for (share, memory, full, held, name) in [
        (
            DropReason::Ipv4ReassemblyEvictedShare,
            DropReason::Ipv4ReassemblyEvictedMemory,
            DropReason::Ipv4ReassemblyFull,
            iface.core.lcore.ip.v4.reassembler.len(),
            "IPv4",
        ),
        (
            DropReason::Ipv6ReassemblyEvictedShare,
            DropReason::Ipv6ReassemblyEvictedMemory,
            DropReason::Ipv6ReassemblyFull,
            iface.core.lcore.ip.v6.reassembler.len(),
            "IPv6",
        ),
    ] {
        let (share, memory) = (c.dropped(share), c.dropped(memory));
        assert!(share > 0 && memory > 0, "{name}: {share} {memory}");
        assert_eq!(c.dropped(full), 0, "{name}: no fragment refused");
        // Every flood datagram is still held or was evicted (once).
        assert_eq!(held as u64 + share + memory, 240, "{name}");
    }
    assert_eq!(port.take_tx().len(), 0);
}

#[test]
fn no_icmp_error_answers_a_link_layer_broadcast_or_multicast() {
    // RFC 1122 3.2.2 and RFC 4443 2.4 (e.2, e.4): a packet sent as a
    // link-layer broadcast or multicast gets no error, whatever its IP
    // destination (one spoofed frame would have every host on the link
    // answer its claimed source); Linux answers only frames to its MAC.
    let (mut iface, mut port) = stack6();
    let mut closed4 = udp_frame(40000, 9999, b"anyone?");
    closed4[..6].copy_from_slice(&MacAddr::BROADCAST.0);
    let all_nodes = multicast_mac(crate::iface::ALL_NODES);
    let closed6 = frame6(
        all_nodes,
        &ip6_udp((PEER6, 4000), (GLOBAL, 9999), b"x", None),
    );
    let mut unknown = ip6_icmp(PEER6, GLOBAL, 64, &[], &[0u8; 8]);
    unknown[6] = 253;
    for frame in [closed4, closed6, frame6(all_nodes, &unknown)] {
        port.push_rx(&frame);
    }
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert!(port.take_tx().is_empty());
    let c = iface.counters();
    assert_eq!(c.dropped(DropReason::UdpNoSocket), 2);
    assert_eq!(c.dropped(DropReason::Ipv6UnknownNextHeader), 1);
    assert_eq!(
        (
            c.get(Stat::IcmpOutDestUnreachs),
            c.get(Stat::Icmp6OutDestUnreachs)
        ),
        (0, 0)
    );
    assert_eq!(c.get(Stat::Icmp6OutParmProblems), 0);
    // The same packets to our MAC are answered.
    port.push_rx(&udp_frame(40000, 9999, b"anyone?"));
    port.push_rx(&frame6(OUR_MAC, &unknown));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert_eq!(port.take_tx().len(), 2);
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn in_a_link_layer_multicast_only_an_option_of_type_10_is_reported() {
    // RFC 4443 2.4 (e.2, e.3): a link-layer multicast is answered only by
    // a parameter problem code 2 about an option whose type starts with
    // the bits 10; one starting with 11 ("unless multicast") is not.
    let (mut iface, mut port) = stack6();
    let all_nodes = multicast_mac(crate::iface::ALL_NODES);
    for (kind, answered) in [(0xc0u8, 0), (0x80, 1)] {
        let option = vec![0, 0, kind, 2, 0, 0, 1, 0];
        let packet = ip6_icmp(PEER6, GLOBAL, 64, &[option], &echo6(1, b"x"));
        port.push_rx(&frame6(all_nodes, &packet));
        poll(&mut iface, &mut port, &mut DropDatagrams);
        assert_eq!(port.take_tx().len(), answered, "option type {kind:#x}");
    }
    assert_eq!(iface.counters().dropped(DropReason::Ipv6BadOption), 2);
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn a_reassembly_timeout_is_answered_only_when_fragment_zero_came_to_us() {
    // RFC 1122 3.3.2: time exceeded once fragment zero came; never about a
    // datagram to a broadcast address or in a link-layer broadcast, nor
    // about an ICMP error.
    let (mut iface, mut port) = stack6();
    port.push_rx(&fragments4(PEER_IP, &payload(3000, 1), 1480, 11)[1]);
    let mut to_broadcast = tiny_first_fragment4(PEER_IP, 12);
    to_broadcast[14 + 16..14 + 20].copy_from_slice(&[10, 0, 0, 255]);
    Ipv4Packet::new_unchecked(&mut to_broadcast[14..]).fill_checksum();
    let mut link_broadcast = tiny_first_fragment4(PEER_IP, 13);
    link_broadcast[..6].copy_from_slice(&MacAddr::BROADCAST.0);
    // Nor about an ICMP error (RFC 1122 3.2.2): a destination unreachable.
    let mut icmp_error = tiny_first_fragment4(PEER_IP, 15);
    icmp_error[14 + 9] = protocol::ICMP;
    icmp_error[14 + 20] = 3;
    Ipv4Packet::new_unchecked(&mut icmp_error[14..]).fill_checksum();
    let to_us = tiny_first_fragment4(PEER_IP, 14);
    for frame in [to_broadcast, link_broadcast, icmp_error, to_us.clone()] {
        port.push_rx(&frame);
    }
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert_eq!(port.buffers_in_use(), 5, "all five wait");
    iface.poll(
        &mut port,
        Instant::from_nanos(31_000_000_000),
        &mut DropDatagrams,
    );
    let c = iface.counters();
    assert_eq!(c.dropped(DropReason::Ipv4ReassemblyTimeout), 5);
    assert_eq!(c.get(Stat::IcmpOutTimeExcds), 1);
    let out = port.take_tx();
    assert_eq!(out.len(), 1);
    let error = Ipv4Packet::new_checked(&out[0][14..]).unwrap();
    assert_eq!(
        (error.dst(), error.payload()[..2].to_vec()),
        (PEER_IP, vec![11, 1])
    );
    assert_eq!(error.payload()[8..], to_us[14..]);
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn an_unknown_ipv4_protocol_is_answered_with_protocol_unreachable() {
    // RFC 1122 3.2.2.1, as Linux (and as IPv6 answers an unknown next
    // header): destination unreachable, code 2, quoting the datagram; not
    // for a broadcast.
    let (mut iface, mut port) = stack6();
    let unknown = ipv4(PEER_IP, OUR_IP, 253, b"who speaks 253?");
    port.push_rx(&ethernet(OUR_MAC, PEER_MAC, EtherType::Ipv4, &unknown));
    let broadcast = ipv4(PEER_IP, Ipv4Addr::new(10, 0, 0, 255), 253, b"all?");
    port.push_rx(&ethernet(
        MacAddr::BROADCAST,
        PEER_MAC,
        EtherType::Ipv4,
        &broadcast,
    ));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    let out = port.take_tx();
    assert_eq!(out.len(), 1);
    let error = Ipv4Packet::new_checked(&out[0][14..]).unwrap();
    assert_eq!((error.src(), error.dst()), (OUR_IP, PEER_IP));
    let icmp = Icmpv4Packet::new_checked(error.payload()).unwrap();
    assert!(icmp.verify_checksum());
    assert_eq!((icmp.msg_type(), icmp.code()), (3, 2));
    assert_eq!(icmp.payload(), &unknown[..]);
    let c = iface.counters();
    assert_eq!(c.dropped(DropReason::Ipv4UnknownProtocol), 2);
    assert_eq!(c.get(Stat::IcmpOutDestUnreachs), 1);
    assert_eq!(port.buffers_in_use(), 0);
}
