//! IPv6 fragments both ways (reassembly on receive with RFC 5722 and RFC
//! 7112 rules, fragmentation on send), parameter problems, and ICMPv6
//! errors: packet too big lowering the path MTU, errors reaching the
//! connected sockets they concern.

use super::ipv6::{
    echo6, ip6_icmp, ip6_udp, learn_peer, parse6, parse_udp6, stack6, GLOBAL, PEER6,
};
use super::*;
use crate::udp::PeerError;
use crate::wire::icmpv6::msg_type as icmp6;
use crate::wire::ipv6::{multicast_mac, next_header, solicited_node, Ipv6Header, Ipv6Packet};
use core::net::{Ipv6Addr, SocketAddrV6};

/// Splits an IPv6 packet without extension headers into fragments of
/// `chunk` payload bytes (a multiple of 8), as Ethernet frames to us.
pub(super) fn fragments(packet: &[u8], chunk: usize, ident: u32) -> Vec<Vec<u8>> {
    let ip = Ipv6Packet::new_checked(packet).unwrap();
    let payload = ip.payload();
    let pieces = payload.len().div_ceil(chunk);
    payload
        .chunks(chunk)
        .enumerate()
        .map(|(i, piece)| {
            let mut p = vec![0u8; 48 + piece.len()];
            Ipv6Packet::new_unchecked(&mut p[..]).emit_header(&Ipv6Header {
                src: ip.src(),
                dst: ip.dst(),
                next_header: next_header::FRAGMENT,
                payload_len: (8 + piece.len()) as u16,
                hop_limit: 64,
            });
            let field = (i * chunk) as u16 | u16::from(i + 1 < pieces);
            p[40] = ip.next_header();
            p[42..44].copy_from_slice(&field.to_be_bytes());
            p[44..48].copy_from_slice(&ident.to_be_bytes());
            p[48..].copy_from_slice(piece);
            super::ipv6::frame6(OUR_MAC, &p)
        })
        .collect()
}

fn message(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 13 % 251) as u8).collect()
}

#[test]
fn a_fragmented_udp6_datagram_is_reassembled_and_its_echo_fragmented() {
    let (mut iface, mut port) = stack6();
    iface
        .udp_bind(SocketAddrV6::new(GLOBAL, 7, 0, 0), BindOptions::default())
        .unwrap();
    let data = message(4000);
    let packet = ip6_udp((PEER6, 4000), (GLOBAL, 7), &data, None);
    // As a kernel with a 1500-byte MTU cuts it, delivered last first.
    let frames = fragments(&packet, 1448, 0x1234);
    assert_eq!(frames.len(), 3);
    for frame in frames.iter().rev() {
        port.push_rx(frame);
    }
    poll(&mut iface, &mut port, &mut Echo);
    assert_eq!(iface.counters().get(Stat::Ip6ReasmReqds), 3);
    assert_eq!(iface.counters().get(Stat::Ip6ReasmOKs), 1);
    let out = port.take_tx();
    assert_eq!(out.len(), 3, "the echo leaves in fragments");
    assert!(out.iter().all(|f| f.len() <= 14 + 1500));
    assert_eq!(iface.counters().get(Stat::Ip6FragCreates), 3);
    // A second stack (the peer) puts the echo back together.
    let mut link = LinkConfig::new(PEER_MAC, Ipv4Cidr::new(PEER_IP, 24).unwrap());
    link.addresses6
        .push(crate::route::Ipv6Cidr::new(PEER6, 64).unwrap());
    let mut config = InterfaceConfig::with_links(vec![link]);
    config.dad_transmits = 0;
    let mut peer: Interface<MemBuf> = Interface::new(config).unwrap();
    let mut peer_port = MemPort::new(MemPortConfig {
        mac: PEER_MAC,
        ..MemPortConfig::default()
    });
    peer.poll(&mut peer_port, Instant::ZERO, &mut DropDatagrams);
    peer_port.take_tx();
    peer.udp_bind(SocketAddrV6::new(PEER6, 4000, 0, 0), BindOptions::default())
        .unwrap();
    for frame in &out {
        peer_port.push_rx(frame);
    }
    let mut got = Recorder::default();
    poll(&mut peer, &mut peer_port, &mut got);
    assert_eq!(got.calls.len(), 1, "{:?}", peer.counters().nonzero());
    assert_eq!(got.calls[0].1, [data]);
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn overlapping_fragments_poison_the_whole_datagram() {
    let (mut iface, mut port) = stack6();
    iface
        .udp_bind(SocketAddrV6::new(GLOBAL, 7, 0, 0), BindOptions::default())
        .unwrap();
    let packet = ip6_udp((PEER6, 4000), (GLOBAL, 7), &message(3000), None);
    let mut frames = fragments(&packet, 1448, 9);
    // A copy of the second fragment that starts 8 bytes early.
    let mut overlapping = frames[1].clone();
    let field = (1440u16) | 1;
    overlapping[14 + 42..14 + 44].copy_from_slice(&field.to_be_bytes());
    port.push_rx(&frames[0]);
    port.push_rx(&overlapping);
    poll(&mut iface, &mut port, &mut Echo);
    assert_eq!(
        iface.counters().dropped(DropReason::Ipv6ReassemblyOverlap),
        1
    );
    // RFC 5722: the datagram's remaining fragments are dropped too.
    for frame in frames.drain(1..) {
        port.push_rx(&frame);
    }
    poll(&mut iface, &mut port, &mut Echo);
    assert!(port.take_tx().is_empty());
    assert_eq!(
        iface.counters().dropped(DropReason::Ipv6ReassemblyOverlap),
        3
    );
    assert_eq!(iface.counters().get(Stat::Ip6ReasmOKs), 0);
    assert_eq!(port.buffers_in_use(), 0, "no reassembly buffer kept");
}

#[test]
fn incomplete_ipv6_datagrams_time_out() {
    let (mut iface, mut port) = stack6();
    let packet = ip6_udp((PEER6, 4000), (GLOBAL, 7), &message(3000), None);
    let first = fragments(&packet, 1448, 5)[0].clone();
    port.push_rx(&first);
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert_eq!(port.buffers_in_use(), 1, "the reassembly buffer waits");
    iface.poll(
        &mut port,
        Instant::from_nanos(31_000_000_000),
        &mut DropDatagrams,
    );
    assert_eq!(
        iface.counters().dropped(DropReason::Ipv6ReassemblyTimeout),
        1
    );
    // RFC 8200 4.5: the first fragment came, so its source hears of the
    // timeout, the fragment quoted (up to the minimum MTU in all).
    let out = port.take_tx();
    assert_eq!(out.len(), 1);
    let (eth_dst, src, dst, _, message) = parse6(&out[0]);
    assert_eq!((eth_dst, src, dst), (PEER_MAC, GLOBAL, PEER6));
    assert_eq!((message[0], message[1]), (icmp6::TIME_EXCEEDED, 1));
    assert_eq!(message[8..], first[14..14 + 1280 - 48]);
    assert_eq!(iface.counters().get(Stat::Icmp6OutTimeExcds), 1);
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn a_timeout_without_the_first_fragment_sends_no_error() {
    // RFC 8200 4.5 (and RFC 1122 3.3.2 for IPv4): the error only once the
    // fragment with offset zero came; nor for a datagram to a group.
    let (mut iface, mut port) = stack6();
    let packet = ip6_udp((PEER6, 4000), (GLOBAL, 7), &message(3000), None);
    port.push_rx(&fragments(&packet, 1448, 6)[1]);
    let all_nodes = crate::iface::ALL_NODES;
    let to_group = ip6_udp((PEER6, 4000), (all_nodes, 7), &message(3000), None);
    let mut first = fragments(&to_group, 1448, 7)[0].clone();
    first[..6].copy_from_slice(&crate::wire::ipv6::multicast_mac(all_nodes).0);
    port.push_rx(&first);
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert_eq!(port.buffers_in_use(), 2, "both wait");
    iface.poll(
        &mut port,
        Instant::from_nanos(31_000_000_000),
        &mut DropDatagrams,
    );
    assert_eq!(
        iface.counters().dropped(DropReason::Ipv6ReassemblyTimeout),
        2
    );
    assert!(port.take_tx().is_empty());
    assert_eq!(port.buffers_in_use(), 0);
}

/// The (code, pointer) of a parameter problem we sent, checking that it
/// quotes the invoking packet.
fn parameter_problem(frame: &[u8], invoking: &[u8]) -> (u8, u32) {
    let (_, src, dst, _, message) = parse6(frame);
    assert_eq!((src, dst), (GLOBAL, PEER6));
    assert_eq!(message[0], icmp6::PARAMETER_PROBLEM);
    let quoted = &message[8..];
    assert_eq!(quoted, &invoking[..quoted.len()]);
    (
        message[1],
        u32::from_be_bytes([message[4], message[5], message[6], message[7]]),
    )
}

#[test]
fn malformed_packets_get_the_parameter_problems_rfc_4443_asks_for() {
    let (mut iface, mut port) = stack6();
    let mut answer = |packet: &[u8]| {
        port.push_rx(&super::ipv6::frame6(OUR_MAC, packet));
        poll(&mut iface, &mut port, &mut DropDatagrams);
        port.take_tx()
    };
    // Unknown upper-layer protocol: code 1, pointing at the next header.
    let mut unknown = ip6_icmp(PEER6, GLOBAL, 64, &[], &[0u8; 8]);
    unknown[6] = 253;
    let out = answer(&unknown);
    assert_eq!(parameter_problem(&out[0], &unknown), (1, 6));
    // An unknown option whose type says "discard and report": code 2,
    // pointing at the option (destination options right after the header).
    let option = vec![0, 0, 0x80, 2, 0, 0, 1, 0];
    let bad = ip6_icmp(
        PEER6,
        GLOBAL,
        64,
        std::slice::from_ref(&option),
        &[128, 0, 0, 0, 0, 0, 0, 1],
    );
    let out = answer(&bad);
    assert_eq!(parameter_problem(&out[0], &bad), (2, 42));
    // "Discard silently" (type 0x40): nothing sent, still counted.
    let mut silent_option = option;
    silent_option[2] = 0x40;
    let silent = ip6_icmp(
        PEER6,
        GLOBAL,
        64,
        &[silent_option],
        &[128, 0, 0, 0, 0, 0, 0, 1],
    );
    assert!(answer(&silent).is_empty());
    // A non-final fragment whose length is not a multiple of 8: code 0,
    // pointing at the payload length.
    let packet = ip6_udp((PEER6, 4000), (GLOBAL, 7), &message(100), None);
    let mut odd = fragments(&packet, 104, 1)[0].clone();
    odd.truncate(odd.len() - 4);
    let odd_len = (odd.len() - 14 - 40) as u16;
    odd[14 + 4..14 + 6].copy_from_slice(&odd_len.to_be_bytes());
    port.push_rx(&odd);
    poll(&mut iface, &mut port, &mut DropDatagrams);
    let out = port.take_tx();
    assert_eq!(parameter_problem(&out[0], &odd[14..]), (0, 4));
    // A first fragment that stops inside the UDP header (RFC 7112): code 3.
    // (Fragment header, then destination options naming UDP, whose header
    // would only come in the next fragment.)
    let tiny = {
        let mut p = vec![0u8; 40 + 8 + 8];
        Ipv6Packet::new_unchecked(&mut p[..]).emit_header(&Ipv6Header {
            src: PEER6,
            dst: GLOBAL,
            next_header: next_header::FRAGMENT,
            payload_len: 16,
            hop_limit: 64,
        });
        p[40] = next_header::DEST_OPTIONS;
        p[42..44].copy_from_slice(&1u16.to_be_bytes());
        p[44..48].copy_from_slice(&2u32.to_be_bytes());
        p[48..56].copy_from_slice(&[next_header::UDP, 0, 1, 4, 0, 0, 0, 0]);
        super::ipv6::frame6(OUR_MAC, &p)
    };
    port.push_rx(&tiny);
    poll(&mut iface, &mut port, &mut DropDatagrams);
    let out = port.take_tx();
    assert_eq!(parameter_problem(&out[0], &tiny[14..]).0, 3);
    for reason in [
        DropReason::Ipv6UnknownNextHeader,
        DropReason::Ipv6FragmentMalformed,
        DropReason::Ipv6FragmentIncomplete,
    ] {
        assert_eq!(iface.counters().dropped(reason), 1, "{reason:?}");
    }
    assert_eq!(iface.counters().dropped(DropReason::Ipv6BadOption), 2);
    assert_eq!(iface.counters().get(Stat::Icmp6OutParmProblems), 4);
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn hop_by_hop_options_after_the_first_header_are_an_unrecognized_next_header() {
    // RFC 8200 4.1: a next header of 0 in any header but the IPv6 header
    // gets the unrecognized next header problem (code 1), pointing at it.
    let (mut iface, mut port) = stack6();
    let pad = vec![0, 0, 1, 4, 0, 0, 0, 0];
    let mut late = ip6_icmp(PEER6, GLOBAL, 64, &[pad.clone(), pad], &echo6(1, b"x"));
    late[40] = next_header::HOP_BY_HOP;
    port.push_rx(&super::ipv6::frame6(OUR_MAC, &late));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    let out = port.take_tx();
    assert_eq!(out.len(), 1);
    assert_eq!(parameter_problem(&out[0], &late), (1, 40));
    // Right after the fragment header of a first fragment: reassembled, it
    // would pass as the first header, so the fragment is refused.
    let packet = ip6_udp((PEER6, 4000), (GLOBAL, 7), &message(100), None);
    let mut first = fragments(&packet, 48, 3)[0].clone();
    first[14 + 40] = next_header::HOP_BY_HOP;
    port.push_rx(&first);
    poll(&mut iface, &mut port, &mut DropDatagrams);
    let out = port.take_tx();
    assert_eq!(out.len(), 1);
    assert_eq!(parameter_problem(&out[0], &first[14..]), (1, 40));
    assert_eq!(
        iface.counters().dropped(DropReason::Ipv6UnknownNextHeader),
        2
    );
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn no_next_header_is_dropped_silently_not_answered_as_unknown() {
    // RFC 8200 4.7: next header 59 says nothing follows; it is no
    // unrecognized next header (Linux discards such a packet quietly).
    let (mut iface, mut port) = stack6();
    let mut nothing = ip6_icmp(PEER6, GLOBAL, 64, &[], &[0u8; 8]);
    nothing[6] = next_header::NONE;
    port.push_rx(&super::ipv6::frame6(OUR_MAC, &nothing));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert!(port.take_tx().is_empty());
    assert_eq!(iface.counters().get(Stat::Icmp6OutParmProblems), 0);
    assert_eq!(iface.counters().dropped(DropReason::Ipv6NoNextHeader), 1);
    assert_eq!(port.buffers_in_use(), 0);
}

/// An ICMPv6 error from `from` quoting a UDP datagram we sent from
/// `ours` to `peer`.
fn icmp6_error_about(
    from: Ipv6Addr,
    kind: u8,
    code: u8,
    word: u32,
    ours: (Ipv6Addr, u16),
    peer: (Ipv6Addr, u16),
) -> Vec<u8> {
    let quoted = ip6_udp(ours, peer, b"lost", None);
    let mut m = vec![kind, code, 0, 0];
    m.extend_from_slice(&word.to_be_bytes());
    m.extend_from_slice(&quoted);
    super::ipv6::frame6(OUR_MAC, &ip6_icmp(from, GLOBAL, 64, &[], &m))
}

#[test]
fn errors_reach_connected_sockets_and_packet_too_big_lowers_the_path_mtu() {
    let (mut iface, mut port) = stack6();
    let connected = iface
        .udp_bind(
            SocketAddrV6::new(GLOBAL, 5000, 0, 0),
            BindOptions::default(),
        )
        .unwrap();
    assert!(iface.udp_connect(connected, SocketAddrV6::new(PEER6, 53, 0, 0)));
    let unconnected = iface
        .udp_bind(
            SocketAddrV6::new(GLOBAL, 5001, 0, 0),
            BindOptions::default(),
        )
        .unwrap();
    let mut errors = Errors::default();
    port.push_rx(&icmp6_error_about(
        PEER6,
        icmp6::DEST_UNREACHABLE,
        4,
        0,
        (GLOBAL, 5000),
        (PEER6, 53),
    ));
    port.push_rx(&icmp6_error_about(
        PEER6,
        icmp6::DEST_UNREACHABLE,
        4,
        0,
        (GLOBAL, 5001),
        (PEER6, 53),
    ));
    let router: Ipv6Addr = "2001:db8::fe".parse().unwrap();
    port.push_rx(&icmp6_error_about(
        router,
        icmp6::PACKET_TOO_BIG,
        0,
        1300,
        (GLOBAL, 5000),
        (PEER6, 53),
    ));
    // Not about a packet of ours: refused.
    port.push_rx(&icmp6_error_about(
        PEER6,
        icmp6::DEST_UNREACHABLE,
        4,
        0,
        (PEER6, 5000),
        (PEER6, 53),
    ));
    poll(&mut iface, &mut port, &mut errors);
    assert_eq!(
        errors.got,
        [
            (connected, PeerError::Refused),
            (connected, PeerError::TooBig { mtu: 1300 })
        ],
        "only the connected socket hears; {unconnected:?} does not"
    );
    assert_eq!(iface.counters().dropped(DropReason::Icmp6BadQuote), 1);
    assert_eq!(iface.counters().get(Stat::Icmp6InErrors), 4);
    // Sends to that destination now fit 1300 bytes.
    learn_peer(&mut iface, &mut port, PEER6, GLOBAL);
    iface
        .send_to(
            &mut port,
            Instant::ZERO,
            unconnected,
            SocketAddrV6::new(PEER6, 9, 0, 0),
            &[7u8; 1400],
        )
        .unwrap();
    let out = port.take_tx();
    assert_eq!(out.len(), 2);
    assert!(out.iter().all(|f| f.len() <= 14 + 1300));
    // Other destinations keep the link MTU.
    assert_eq!(iface.counters().get(Stat::Ip6FragCreates), 2);
    let _ = parse_udp6;
}

#[test]
fn a_packet_too_big_never_raises_the_path_mtu() {
    // RFC 8201 4: a node must not increase its estimate of the path MTU
    // in response to a Packet Too Big (a late or forged one reporting
    // more than the path allows would bring back the losses).
    let (mut iface, mut port) = stack6();
    let router: Ipv6Addr = "2001:db8::fe".parse().unwrap();
    for mtu in [1300, 1400] {
        port.push_rx(&icmp6_error_about(
            router,
            icmp6::PACKET_TOO_BIG,
            0,
            mtu,
            (GLOBAL, 5000),
            (PEER6, 53),
        ));
        poll(&mut iface, &mut port, &mut DropDatagrams);
    }
    assert_eq!(iface.counters().get(Stat::Icmp6InPktTooBigs), 2);
    assert_eq!(iface.core.path_mtu6(PEER6, 1500), 1300);
}

#[test]
fn a_first_fragment_must_hold_the_whole_tcp_header() {
    // RFC 7112 / RFC 8200 4.5: the upper-layer header belongs in the
    // first fragment. Eight bytes of a TCP header (ports and sequence
    // number, the flags left to the next fragment) do not make one, as
    // Linux counts it (ipv6frag_thdr_truncated: the 20-byte header).
    let (mut iface, mut port) = stack6();
    let mut p = vec![0u8; 40 + 8 + 8];
    Ipv6Packet::new_unchecked(&mut p[..]).emit_header(&Ipv6Header {
        src: PEER6,
        dst: GLOBAL,
        next_header: next_header::FRAGMENT,
        payload_len: 16,
        hop_limit: 64,
    });
    p[40] = next_header::TCP;
    p[42..44].copy_from_slice(&1u16.to_be_bytes()); // offset 0, more
    p[44..48].copy_from_slice(&4u32.to_be_bytes());
    p[48..56].copy_from_slice(&[0x9c, 0x40, 0, 80, 0, 0, 0, 1]);
    let frame = super::ipv6::frame6(OUR_MAC, &p);
    port.push_rx(&frame);
    poll(&mut iface, &mut port, &mut DropDatagrams);
    let out = port.take_tx();
    assert_eq!(out.len(), 1);
    assert_eq!(parameter_problem(&out[0], &frame[14..]), (3, 0));
    assert_eq!(
        iface.counters().dropped(DropReason::Ipv6FragmentIncomplete),
        1
    );
    assert_eq!(port.buffers_in_use(), 0, "nothing kept in reassembly");
}

#[test]
fn no_parameter_problem_answers_an_icmpv6_error() {
    // RFC 4443 2.4 (e.1): no error message about an ICMPv6 error message,
    // even one whose headers are at fault (else two nodes could answer
    // each other's errors for ever); Linux looks past the extension
    // headers for it (is_ineligible).
    let (mut iface, mut port) = stack6();
    let option = vec![0, 0, 0x80, 2, 0, 0, 1, 0];
    let mut unreachable = vec![icmp6::DEST_UNREACHABLE, 4, 0, 0, 0, 0, 0, 0];
    unreachable.extend_from_slice(&ip6_udp((GLOBAL, 53), (PEER6, 4000), b"x", None));
    let error = ip6_icmp(
        PEER6,
        GLOBAL,
        64,
        std::slice::from_ref(&option),
        &unreachable,
    );
    port.push_rx(&super::ipv6::frame6(OUR_MAC, &error));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert!(port.take_tx().is_empty());
    assert_eq!(iface.counters().dropped(DropReason::Ipv6BadOption), 1);
    // An informational message with the same fault is answered.
    let echo = ip6_icmp(PEER6, GLOBAL, 64, &[option], &echo6(1, b"x"));
    port.push_rx(&super::ipv6::frame6(OUR_MAC, &echo));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    let out = port.take_tx();
    assert_eq!(out.len(), 1);
    assert_eq!(parameter_problem(&out[0], &echo), (2, 42));
    assert_eq!(iface.counters().get(Stat::Icmp6OutParmProblems), 1);
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn a_routing_header_with_segments_left_is_refused_with_a_parameter_problem() {
    // RFC 8200 4.4 (and RFC 5095 for type 0): we process no routing type,
    // so a routing header with segments left means the packet is not
    // ours to deliver: discarded, with a parameter problem code 0 pointing
    // at the routing type (as Linux). With none left it is skipped.
    let (mut iface, mut port) = stack6();
    // Routing header type 0, one address (16 bytes), segments left 1.
    let mut routing = vec![0u8; 24];
    routing[1] = 2;
    routing[3] = 1;
    routing[8..24].copy_from_slice(&PEER6.octets());
    let mut packet = ip6_icmp(
        PEER6,
        GLOBAL,
        64,
        std::slice::from_ref(&routing),
        &echo6(1, b"x"),
    );
    packet[6] = next_header::ROUTING;
    port.push_rx(&super::ipv6::frame6(OUR_MAC, &packet));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    let out = port.take_tx();
    assert_eq!(out.len(), 1);
    assert_eq!(parameter_problem(&out[0], &packet), (0, 42));
    assert_eq!(iface.counters().dropped(DropReason::Ipv6RoutingHeader), 1);
    assert_eq!(iface.counters().get(Stat::Icmp6InEchos), 0);
    // No segments left: the header is skipped and the echo answered.
    routing[3] = 0;
    let mut done = ip6_icmp(PEER6, GLOBAL, 64, &[routing], &echo6(2, b"x"));
    done[6] = next_header::ROUTING;
    port.push_rx(&super::ipv6::frame6(OUR_MAC, &done));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert_eq!(port.take_tx().len(), 1);
    assert_eq!(iface.counters().get(Stat::Icmp6InEchos), 1);
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn fragmented_neighbor_discovery_is_ignored() {
    // RFC 6980 5: ND messages are never fragmented, and a node must
    // silently ignore one that was (a fragmented router advertisement is
    // how RA-Guard is evaded); Linux's suppress_frag_ndisc, atomic
    // fragments included.
    let (mut iface, mut port) = stack6();
    let group = solicited_node(GLOBAL);
    let ns = super::ipv6::ns(GLOBAL, Some(PEER_MAC));
    let packet = ip6_icmp(PEER6, group, 255, &[], &ns);
    for chunk in [16, 64] {
        // Two fragments, then one atomic fragment.
        for mut frame in fragments(&packet, chunk, 40 + chunk as u32) {
            frame[14 + 7] = 255;
            frame[..6].copy_from_slice(&multicast_mac(group).0);
            port.push_rx(&frame);
        }
        poll(&mut iface, &mut port, &mut DropDatagrams);
        assert!(port.take_tx().is_empty(), "{chunk}-byte fragments");
    }
    assert_eq!(iface.counters().dropped(DropReason::NdInvalid), 2);
    assert!(iface.neighbors6().is_empty());
    // Whole, it is answered.
    port.push_rx(&super::ipv6::frame6(multicast_mac(group), &packet));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert_eq!(port.take_tx().len(), 1);
    assert_eq!(port.buffers_in_use(), 0);
}
