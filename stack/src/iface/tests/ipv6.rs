//! IPv6 over the in-memory port: Neighbor Discovery both as responder and
//! learner, ICMPv6 echo to link-local and global addresses, and hostile or
//! malformed packets dropped by reason with the stack still answering.

use super::sending::requests_until_given_up;
use super::*;
use crate::wire::icmpv6::{msg_type as icmp6, Icmpv6Packet, NdpRepr};
use crate::wire::ipv6::{
    link_local_from_mac, multicast_mac, next_header, solicited_node, Ipv6Header, Ipv6Packet,
};
use core::net::Ipv6Addr;

pub(super) const GLOBAL: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
pub(super) const PEER6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2);
pub(super) const PEER_LL: Ipv6Addr = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 2);

pub(super) fn our_ll() -> Ipv6Addr {
    link_local_from_mac(OUR_MAC)
}

pub(super) fn stack6() -> (Interface<MemBuf>, MemPort) {
    let mut link = LinkConfig::new(OUR_MAC, Ipv4Cidr::new(OUR_IP, 24).unwrap());
    link.addresses6
        .push(crate::route::Ipv6Cidr::new(GLOBAL, 64).unwrap());
    let mut config = InterfaceConfig::with_links(vec![link]);
    config.dad_transmits = 0; // addresses in use at once (DAD has its own tests)
    config.mld = false; // no MLD reports among the frames (MLD has its own tests)
    let mut iface = Interface::new(config).unwrap();
    let mut port = MemPort::new(MemPortConfig {
        mac: OUR_MAC,
        ..MemPortConfig::default()
    });
    iface.poll(&mut port, Instant::ZERO, &mut DropDatagrams);
    port.take_tx();
    (iface, port)
}

/// An IPv6 packet whose upper-layer message is ICMPv6 (checksum filled),
/// after `extensions` (raw extension headers; the first byte of each is
/// rewritten to chain them).
pub(super) fn ip6_icmp(
    src: Ipv6Addr,
    dst: Ipv6Addr,
    hop: u8,
    extensions: &[Vec<u8>],
    message: &[u8],
) -> Vec<u8> {
    let ext_len: usize = extensions.iter().map(Vec::len).sum();
    let mut packet = vec![0u8; 40 + ext_len + message.len()];
    let mut at = 40;
    for (i, ext) in extensions.iter().enumerate() {
        packet[at..at + ext.len()].copy_from_slice(ext);
        packet[at] = if i + 1 < extensions.len() {
            next_header::DEST_OPTIONS
        } else {
            next_header::ICMPV6
        };
        at += ext.len();
    }
    packet[at..].copy_from_slice(message);
    let first = if extensions.is_empty() {
        next_header::ICMPV6
    } else {
        next_header::DEST_OPTIONS
    };
    Ipv6Packet::new_unchecked(&mut packet[..]).emit_header(&Ipv6Header {
        src,
        dst,
        next_header: first,
        payload_len: (ext_len + message.len()) as u16,
        hop_limit: hop,
    });
    Icmpv6Packet::new_unchecked(&mut packet[at..]).fill_checksum(src, dst);
    packet
}

pub(super) fn frame6(dst_mac: MacAddr, packet: &[u8]) -> Vec<u8> {
    ethernet(dst_mac, PEER_MAC, EtherType::Ipv6, packet)
}

pub(super) fn echo6(seq: u8, payload: &[u8]) -> Vec<u8> {
    let mut m = vec![icmp6::ECHO_REQUEST, 0, 0, 0, 0x12, 0x34, 0, seq];
    m.extend_from_slice(payload);
    m
}

pub(super) fn ns(target: Ipv6Addr, source_mac: Option<MacAddr>) -> Vec<u8> {
    let repr = NdpRepr::Solicitation { target, source_mac };
    let mut m = vec![0u8; repr.len()];
    repr.emit(&mut m);
    m
}

/// Parses a sent IPv6 frame: (eth dst, src, dst, hop limit, ICMPv6 message),
/// checking the ICMPv6 checksum.
pub(super) fn parse6(frame: &[u8]) -> (MacAddr, Ipv6Addr, Ipv6Addr, u8, Vec<u8>) {
    let eth = EthernetFrame::new_checked(frame).unwrap();
    assert_eq!(eth.ethertype(), EtherType::Ipv6);
    let ip = Ipv6Packet::new_checked(eth.payload()).unwrap();
    assert_eq!(ip.next_header(), next_header::ICMPV6);
    let icmp = Icmpv6Packet::new_checked(ip.payload()).unwrap();
    assert!(icmp.verify_checksum(ip.src(), ip.dst()), "ICMPv6 checksum");
    assert_eq!(
        eth.payload().len(),
        40 + ip.payload().len(),
        "no trailing bytes"
    );
    (
        eth.dst(),
        ip.src(),
        ip.dst(),
        ip.hop_limit(),
        ip.payload().to_vec(),
    )
}

#[test]
fn a_solicitation_for_our_address_is_answered_and_teaches_us_the_solicitor() {
    let (mut iface, mut port) = stack6();
    for target in [our_ll(), GLOBAL] {
        let group = solicited_node(target);
        let packet = ip6_icmp(PEER_LL, group, 255, &[], &ns(target, Some(PEER_MAC)));
        port.push_rx(&frame6(multicast_mac(group), &packet));
        poll(&mut iface, &mut port, &mut DropDatagrams);
        let out = port.take_tx();
        assert_eq!(out.len(), 1, "target {target}");
        let (eth_dst, src, dst, hop, message) = parse6(&out[0]);
        assert_eq!((eth_dst, src, dst, hop), (PEER_MAC, target, PEER_LL, 255));
        assert_eq!(
            NdpRepr::parse(&message).unwrap(),
            NdpRepr::Advertisement {
                router: false,
                solicited: true,
                override_: true,
                target,
                target_mac: Some(OUR_MAC),
            }
        );
    }
    let learned = iface.neighbors6();
    assert_eq!(learned.len(), 1);
    assert_eq!((learned[0].1, learned[0].2), (PEER_LL, Some(PEER_MAC)));
    assert_eq!(
        iface.counters().get(Stat::Icmp6OutNeighborAdvertisements),
        2
    );
}

#[test]
fn duplicate_address_detection_for_our_address_is_answered_to_all_nodes() {
    let (mut iface, mut port) = stack6();
    let group = solicited_node(GLOBAL);
    let packet = ip6_icmp(Ipv6Addr::UNSPECIFIED, group, 255, &[], &ns(GLOBAL, None));
    port.push_rx(&frame6(multicast_mac(group), &packet));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    let out = port.take_tx();
    assert_eq!(out.len(), 1);
    let (eth_dst, src, dst, _, message) = parse6(&out[0]);
    assert_eq!(eth_dst, MacAddr([0x33, 0x33, 0, 0, 0, 1]));
    assert_eq!((src, dst), (GLOBAL, "ff02::1".parse().unwrap()));
    assert!(matches!(
        NdpRepr::parse(&message).unwrap(),
        NdpRepr::Advertisement {
            solicited: false,
            override_: true,
            ..
        }
    ));
    assert!(iface.neighbors6().is_empty(), "nothing to learn from ::");
}

#[test]
fn advertisements_update_but_never_create_neighbours() {
    let (mut iface, mut port) = stack6();
    // RFC 4861 7.2.5: an advertisement for an address we have no entry for
    // is ignored, solicited or not.
    port.push_rx(&frame6(
        OUR_MAC,
        &ip6_icmp(PEER6, GLOBAL, 255, &[], &na(PEER6, PEER_MAC)),
    ));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert!(port.take_tx().is_empty());
    assert!(iface.neighbors6().is_empty());
    // Known from its solicitation (stale), then confirmed by an answer.
    learn_peer(&mut iface, &mut port, PEER6, GLOBAL);
    assert_eq!(iface.neighbors6()[0].3, NeighborState::Stale);
    port.push_rx(&frame6(
        OUR_MAC,
        &ip6_icmp(PEER6, GLOBAL, 255, &[], &na(PEER6, PEER_MAC)),
    ));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert_eq!(iface.neighbors6()[0].3, NeighborState::Reachable);
}

/// The peer solicits `ours` from `peer`, which teaches us its MAC (a stale
/// entry); our advertisement is discarded.
pub(super) fn learn_peer(
    iface: &mut Interface<MemBuf>,
    port: &mut MemPort,
    peer: Ipv6Addr,
    ours: Ipv6Addr,
) {
    port.push_rx(&frame6(
        OUR_MAC,
        &ip6_icmp(peer, ours, 255, &[], &ns(ours, Some(PEER_MAC))),
    ));
    poll(iface, port, &mut DropDatagrams);
    assert_eq!(port.take_tx().len(), 1, "our advertisement");
}

#[test]
fn ping6_to_link_local_global_and_all_nodes_is_answered() {
    let (mut iface, mut port) = stack6();
    let all_nodes: Ipv6Addr = "ff02::1".parse().unwrap();
    let cases = [
        (PEER_LL, our_ll(), OUR_MAC, our_ll()),
        (PEER6, GLOBAL, OUR_MAC, GLOBAL),
        (PEER_LL, all_nodes, multicast_mac(all_nodes), our_ll()),
    ];
    for (seq, (src, dst, mac, reply_from)) in cases.into_iter().enumerate() {
        let request = echo6(seq as u8, b"ping six");
        let mut frame = frame6(mac, &ip6_icmp(src, dst, 64, &[], &request));
        frame.extend_from_slice(&[0; 6]); // Ethernet padding
        port.push_rx(&frame);
        poll(&mut iface, &mut port, &mut DropDatagrams);
        let out = port.take_tx();
        assert_eq!(out.len(), 1, "to {dst}");
        let (eth_dst, from, to, hop, message) = parse6(&out[0]);
        assert_eq!((eth_dst, from, to, hop), (PEER_MAC, reply_from, src, 64));
        assert_eq!(message[0], icmp6::ECHO_REPLY);
        assert_eq!(
            message[4..],
            request[4..],
            "ident, sequence and data echoed"
        );
    }
    assert_eq!(iface.counters().get(Stat::Icmp6OutEchoReplies), 3);
}

#[test]
fn an_echo_after_extension_headers_is_answered_without_them() {
    let (mut iface, mut port) = stack6();
    let pad = vec![0, 0, 1, 4, 0, 0, 0, 0]; // dest options: PadN
    let request = echo6(9, b"ext");
    port.push_rx(&frame6(
        OUR_MAC,
        &ip6_icmp(PEER6, GLOBAL, 64, &[pad.clone(), pad], &request),
    ));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    let out = port.take_tx();
    assert_eq!(out.len(), 1);
    let (_, from, to, _, message) = parse6(&out[0]);
    assert_eq!((from, to), (GLOBAL, PEER6));
    assert_eq!(message[4..], request[4..]);
}

#[test]
fn hostile_and_malformed_ipv6_is_dropped_by_reason_and_the_stack_still_answers() {
    let (mut iface, mut port) = stack6();
    let group = solicited_node(GLOBAL);
    let pad = vec![0, 0, 1, 4, 0, 0, 0, 0];
    let mut bad_checksum = ip6_icmp(PEER6, GLOBAL, 64, &[], &echo6(1, b"x"));
    bad_checksum[42] ^= 0xff;
    let mut truncated = ip6_icmp(PEER6, GLOBAL, 64, &[], &echo6(1, b"x"));
    truncated[5] += 40; // payload length past the frame
    let mut version = ip6_icmp(PEER6, GLOBAL, 64, &[], &echo6(1, b"x"));
    version[0] = 0x40;
    let cases: Vec<(Vec<u8>, MacAddr, DropReason)> = vec![
        (
            ip6_icmp(PEER6, GLOBAL, 64, &vec![pad; 9], &echo6(1, b"x")),
            OUR_MAC,
            DropReason::Ipv6BadExtensions,
        ),
        (
            ip6_icmp("ff02::5".parse().unwrap(), GLOBAL, 64, &[], &echo6(1, b"x")),
            OUR_MAC,
            DropReason::Ipv6BadSource,
        ),
        (
            ip6_icmp(Ipv6Addr::UNSPECIFIED, GLOBAL, 64, &[], &echo6(1, b"x")),
            OUR_MAC,
            DropReason::Ipv6BadSource,
        ),
        (
            ip6_icmp(PEER6, PEER6, 64, &[], &echo6(1, b"x")),
            OUR_MAC,
            DropReason::Ipv6NotForUs,
        ),
        (
            ip6_icmp(PEER6, "ff02::9".parse().unwrap(), 64, &[], &echo6(1, b"x")),
            OUR_MAC,
            DropReason::Ipv6NotForUs,
        ),
        (bad_checksum, OUR_MAC, DropReason::Icmp6Malformed),
        (truncated, OUR_MAC, DropReason::Ipv6Truncated),
        (version, OUR_MAC, DropReason::Ipv6Malformed),
        (
            ip6_icmp(PEER_LL, group, 254, &[], &ns(GLOBAL, Some(PEER_MAC))),
            multicast_mac(group),
            DropReason::NdInvalid,
        ),
        (
            ip6_icmp(
                Ipv6Addr::UNSPECIFIED,
                group,
                255,
                &[],
                &ns(GLOBAL, Some(PEER_MAC)),
            ),
            multicast_mac(group),
            DropReason::NdInvalid,
        ),
        (
            ip6_icmp(PEER_LL, GLOBAL, 255, &[], &ns(PEER6, Some(PEER_MAC))),
            OUR_MAC,
            DropReason::NdNotForUs,
        ),
        (
            ip6_icmp(PEER6, GLOBAL, 64, &[], &[200, 0, 0, 0, 0, 0, 0, 0]),
            OUR_MAC,
            DropReason::Icmp6Unhandled,
        ),
    ];
    for (packet, mac, reason) in cases {
        let before = iface.counters().dropped(reason);
        port.push_rx(&frame6(mac, &packet));
        poll(&mut iface, &mut port, &mut DropDatagrams);
        assert!(port.take_tx().is_empty(), "{reason:?}: nothing answered");
        assert_eq!(iface.counters().dropped(reason), before + 1, "{reason:?}");
    }
    // A frame to a multicast MAC we did not join never reaches IPv6.
    port.push_rx(&frame6(
        MacAddr([0x33, 0x33, 0, 0, 0, 9]),
        &ip6_icmp(PEER6, GLOBAL, 64, &[], &echo6(1, b"x")),
    ));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert_eq!(iface.counters().dropped(DropReason::EthNotForUs), 1);
    // Still answering.
    port.push_rx(&frame6(
        OUR_MAC,
        &ip6_icmp(PEER6, GLOBAL, 64, &[], &echo6(2, b"ok")),
    ));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert_eq!(port.take_tx().len(), 1);
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn a_link_without_ipv6_ignores_it() {
    let mut link = LinkConfig::new(OUR_MAC, Ipv4Cidr::new(OUR_IP, 24).unwrap());
    link.ipv6 = false;
    let mut iface: Interface<MemBuf> =
        Interface::new(InterfaceConfig::with_links(vec![link])).unwrap();
    let mut port = MemPort::new(MemPortConfig::default());
    port.push_rx(&frame6(
        OUR_MAC,
        &ip6_icmp(PEER_LL, our_ll(), 64, &[], &echo6(1, b"x")),
    ));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert!(port.take_tx().iter().all(|f| f[12..14] != [0x86, 0xdd]));
    assert_eq!(iface.counters().dropped(DropReason::EthUnknownType), 1);
    assert!(iface.addresses6(0).is_empty());
}

#[test]
fn bad_ipv6_addresses_are_refused() {
    for bad in ["ff02::1", "::", "::1", "::ffff:10.0.0.1"] {
        let mut link = LinkConfig::new(OUR_MAC, Ipv4Cidr::new(OUR_IP, 24).unwrap());
        link.addresses6
            .push(crate::route::Ipv6Cidr::new(bad.parse().unwrap(), 64).unwrap());
        let result = Interface::<MemBuf>::new(InterfaceConfig::with_links(vec![link])).map(|_| ());
        assert_eq!(
            result,
            Err(ConfigError::BadAddress6(bad.parse().unwrap())),
            "{bad}"
        );
    }
}

/// A UDP-over-IPv6 packet with its checksum (or with `checksum` forced).
pub(super) fn ip6_udp(
    src: (Ipv6Addr, u16),
    dst: (Ipv6Addr, u16),
    payload: &[u8],
    checksum: Option<u16>,
) -> Vec<u8> {
    let udp_len = 8 + payload.len();
    let mut packet = vec![0u8; 40 + udp_len];
    Ipv6Packet::new_unchecked(&mut packet[..]).emit_header(&Ipv6Header {
        src: src.0,
        dst: dst.0,
        next_header: next_header::UDP,
        payload_len: udp_len as u16,
        hop_limit: 64,
    });
    let udp = &mut packet[40..];
    udp[0..2].copy_from_slice(&src.1.to_be_bytes());
    udp[2..4].copy_from_slice(&dst.1.to_be_bytes());
    udp[4..6].copy_from_slice(&(udp_len as u16).to_be_bytes());
    udp[8..].copy_from_slice(payload);
    let sum = crate::wire::ipv6::pseudo_header(src.0, dst.0, next_header::UDP, udp_len as u32);
    let computed = !crate::wire::checksum::fold(crate::wire::checksum::accumulate(sum, udp));
    udp[6..8].copy_from_slice(&checksum.unwrap_or(computed).to_be_bytes());
    packet
}

/// (source, destination, payload) of a sent UDP-over-IPv6 frame, checking
/// its checksum and lengths.
pub(super) fn parse_udp6(frame: &[u8]) -> ((Ipv6Addr, u16), (Ipv6Addr, u16), Vec<u8>) {
    let eth = EthernetFrame::new_checked(frame).unwrap();
    assert_eq!(
        (eth.ethertype(), eth.dst(), eth.src()),
        (EtherType::Ipv6, PEER_MAC, OUR_MAC)
    );
    let ip = Ipv6Packet::new_checked(eth.payload()).unwrap();
    assert_eq!(ip.next_header(), next_header::UDP);
    let udp = ip.payload();
    assert_eq!(usize::from(u16::from_be_bytes([udp[4], udp[5]])), udp.len());
    let sum =
        crate::wire::ipv6::pseudo_header(ip.src(), ip.dst(), next_header::UDP, udp.len() as u32);
    assert_eq!(
        crate::wire::checksum::fold(crate::wire::checksum::accumulate(sum, udp)),
        0xffff
    );
    let port = |at: usize| u16::from_be_bytes([udp[at], udp[at + 1]]);
    ((ip.src(), port(0)), (ip.dst(), port(2)), udp[8..].to_vec())
}

/// [`stack6`] with a dual-stack socket bound to port 7 of every address.
pub(super) fn stack6_echoing() -> (Interface<MemBuf>, MemPort) {
    let (mut iface, port) = stack6();
    iface
        .udp_bind(
            core::net::SocketAddrV6::new(Ipv6Addr::UNSPECIFIED, 7, 0, 0),
            BindOptions::default(),
        )
        .unwrap();
    (iface, port)
}

#[test]
fn a_dual_stack_socket_echoes_udp_over_both_families() {
    let (mut iface, mut port) = stack6_echoing();
    port.push_rx(&frame6(
        OUR_MAC,
        &ip6_udp((PEER6, 4000), (GLOBAL, 7), b"over six", None),
    ));
    poll(&mut iface, &mut port, &mut Echo);
    let out = port.take_tx();
    assert_eq!(out.len(), 1);
    assert_eq!(
        parse_udp6(&out[0]),
        ((GLOBAL, 7), (PEER6, 4000), b"over six".to_vec())
    );
    // With Ethernet padding (no in-place turn-around: the reply is rebuilt).
    let mut padded = frame6(OUR_MAC, &ip6_udp((PEER6, 4002), (GLOBAL, 7), b"pad", None));
    padded.extend_from_slice(&[0xee; 5]);
    port.push_rx(&padded);
    poll(&mut iface, &mut port, &mut Echo);
    let out = port.take_tx();
    assert_eq!(
        parse_udp6(&out[0]),
        ((GLOBAL, 7), (PEER6, 4002), b"pad".to_vec())
    );
    // The same socket hears IPv4, and answers it over IPv4.
    port.push_rx(&udp_frame(4001, 7, b"over four"));
    poll(&mut iface, &mut port, &mut Echo);
    let out = port.take_tx();
    assert_eq!(out.len(), 1);
    let (from, to, from_port, to_port, payload) = parse_reply(&out[0]);
    assert_eq!((from, to, from_port, to_port), (OUR_IP, PEER_IP, 7, 4001));
    assert_eq!(payload, b"over four");
    assert_eq!(iface.counters().get(Stat::UdpOutDatagrams), 3);
}

#[test]
fn udp_over_ipv6_to_link_local_and_after_extension_headers_is_echoed() {
    let (mut iface, mut port) = stack6();
    iface
        .udp_bind(
            core::net::SocketAddrV6::new(Ipv6Addr::UNSPECIFIED, 7, 0, 0),
            BindOptions {
                v6_only: true,
                ..BindOptions::default()
            },
        )
        .unwrap();
    port.push_rx(&frame6(
        OUR_MAC,
        &ip6_udp((PEER_LL, 5), (our_ll(), 7), b"ll", None),
    ));
    // With a destination-options header in front of UDP.
    let mut with_ext = ip6_udp((PEER6, 6), (GLOBAL, 7), b"ext", None);
    let udp = with_ext.split_off(40);
    with_ext.extend_from_slice(&[next_header::UDP, 0, 1, 4, 0, 0, 0, 0]);
    with_ext.extend_from_slice(&udp);
    with_ext[6] = next_header::DEST_OPTIONS;
    with_ext[5] += 8;
    port.push_rx(&frame6(OUR_MAC, &with_ext));
    poll(&mut iface, &mut port, &mut Echo);
    let out = port.take_tx();
    assert_eq!(out.len(), 2);
    assert_eq!(
        parse_udp6(&out[0]),
        ((our_ll(), 7), (PEER_LL, 5), b"ll".to_vec())
    );
    assert_eq!(
        parse_udp6(&out[1]),
        ((GLOBAL, 7), (PEER6, 6), b"ext".to_vec())
    );
    // v6-only: IPv4 to the port finds no socket (and gets port unreachable).
    port.push_rx(&udp_frame(4001, 7, b"four"));
    poll(&mut iface, &mut port, &mut Echo);
    assert_eq!(iface.counters().dropped(DropReason::UdpNoSocket), 1);
}

#[test]
fn udp_over_ipv6_with_a_zero_or_wrong_checksum_is_dropped() {
    let (mut iface, mut port) = stack6();
    iface
        .udp_bind(
            core::net::SocketAddrV6::new(GLOBAL, 7, 0, 0),
            BindOptions::default(),
        )
        .unwrap();
    for checksum in [0, 0x1234] {
        port.push_rx(&frame6(
            OUR_MAC,
            &ip6_udp((PEER6, 4000), (GLOBAL, 7), b"x", Some(checksum)),
        ));
        poll(&mut iface, &mut port, &mut Echo);
    }
    assert!(port.take_tx().is_empty());
    assert_eq!(iface.counters().dropped(DropReason::UdpBadChecksum), 2);
    // A port nobody bound.
    port.push_rx(&frame6(
        OUR_MAC,
        &ip6_udp((PEER6, 4000), (GLOBAL, 8), b"x", None),
    ));
    poll(&mut iface, &mut port, &mut Echo);
    assert_eq!(iface.counters().dropped(DropReason::UdpNoSocket), 1);
    assert_eq!(port.take_tx().len(), 1, "port unreachable");
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn udp_over_ipv6_with_a_zero_checksum_is_dropped_whatever_the_device_says() {
    // A device that checks UDP checksums may take zero for "none", as
    // over IPv4; over IPv6 zero is refused all the same (RFC 8200 8.1;
    // Linux drops it after any device verdict).
    let (mut iface, mut port) = stack6();
    iface
        .udp_bind(
            core::net::SocketAddrV6::new(GLOBAL, 7, 0, 0),
            BindOptions::default(),
        )
        .unwrap();
    let good = crate::port::RxOffload {
        l4_checksum: crate::port::ChecksumStatus::Good,
        ..crate::port::RxOffload::default()
    };
    port.push_rx_with(
        &frame6(OUR_MAC, &ip6_udp((PEER6, 4000), (GLOBAL, 7), b"x", Some(0))),
        good,
    );
    poll(&mut iface, &mut port, &mut Echo);
    assert!(port.take_tx().is_empty());
    assert_eq!(iface.counters().dropped(DropReason::UdpBadChecksum), 1);
}

#[test]
fn a_socket_bound_to_an_ipv4_mapped_address_sends_no_ipv6() {
    // Bound to ::ffff:a.b.c.d it speaks IPv4 only (as it hears it only):
    // an IPv6 destination gets nothing from the IPv4-mapped source, which
    // no packet on the wire may carry.
    let (mut iface, mut port) = stack6();
    learn_peer(&mut iface, &mut port, PEER6, GLOBAL);
    let mapped = core::net::SocketAddrV6::new(OUR_IP.to_ipv6_mapped(), 5000, 0, 0);
    let socket = iface.udp_bind(mapped, BindOptions::default()).unwrap();
    let to6 = core::net::SocketAddrV6::new(PEER6, 9, 0, 0);
    assert_eq!(
        iface.send_to(&mut port, Instant::ZERO, socket, to6, b"v6?"),
        Err(SendError::NoRoute)
    );
    assert!(port.take_tx().is_empty(), "nothing from ::ffff:{OUR_IP}");
    assert_eq!(iface.counters().dropped(DropReason::TxNoRoute), 1);
}

#[test]
fn a_closed_port_answers_icmpv6_port_unreachable_quoting_the_datagram() {
    let (mut iface, mut port) = stack6();
    let request = ip6_udp((PEER6, 4000), (GLOBAL, 9), b"anyone?", None);
    port.push_rx(&frame6(OUR_MAC, &request));
    poll(&mut iface, &mut port, &mut Echo);
    let out = port.take_tx();
    assert_eq!(out.len(), 1);
    let (eth_dst, src, dst, _, message) = parse6(&out[0]);
    assert_eq!((eth_dst, src, dst), (PEER_MAC, GLOBAL, PEER6));
    assert_eq!((message[0], message[1]), (icmp6::DEST_UNREACHABLE, 4));
    assert_eq!(&message[8..], &request[..], "the whole invoking packet");
    assert_eq!(iface.counters().get(Stat::Icmp6OutDestUnreachs), 1);
    // Nothing for a datagram sent to a group.
    let all_nodes: Ipv6Addr = "ff02::1".parse().unwrap();
    let to_group = ip6_udp((PEER_LL, 4000), (all_nodes, 9), b"all?", None);
    port.push_rx(&frame6(multicast_mac(all_nodes), &to_group));
    poll(&mut iface, &mut port, &mut Echo);
    assert!(port.take_tx().is_empty());
    assert_eq!(iface.counters().dropped(DropReason::UdpNoSocket), 2);
    // A big datagram is quoted only as far as 1280 bytes allow.
    let big = ip6_udp((PEER6, 4000), (GLOBAL, 9), &[7u8; 1400], None);
    port.push_rx(&frame6(OUR_MAC, &big));
    poll(&mut iface, &mut port, &mut Echo);
    let out = port.take_tx();
    assert_eq!(out[0].len(), 14 + 1280);
    let (_, _, _, _, message) = parse6(&out[0]);
    assert_eq!(&message[8..], &big[..1280 - 48]);
}

pub(super) fn na(target: Ipv6Addr, mac: MacAddr) -> Vec<u8> {
    let repr = NdpRepr::Advertisement {
        router: false,
        solicited: true,
        override_: true,
        target,
        target_mac: Some(mac),
    };
    let mut m = vec![0u8; repr.len()];
    repr.emit(&mut m);
    m
}

#[test]
fn sending_to_an_unknown_ipv6_neighbour_solicits_it_first() {
    let (mut iface, mut port) = stack6();
    let socket = iface
        .udp_bind(
            core::net::SocketAddrV6::new(Ipv6Addr::UNSPECIFIED, 0, 0, 0),
            BindOptions::default(),
        )
        .unwrap();
    let dst = core::net::SocketAddrV6::new(PEER6, 53, 0, 0);
    iface
        .send_to(&mut port, Instant::ZERO, socket, dst, b"query")
        .unwrap();
    let out = port.take_tx();
    assert_eq!(out.len(), 1, "only the solicitation goes out");
    let group = solicited_node(PEER6);
    let (eth_dst, src, dst_ip, hop, message) = parse6(&out[0]);
    assert_eq!(
        (eth_dst, src, dst_ip, hop),
        (multicast_mac(group), GLOBAL, group, 255)
    );
    assert_eq!(
        NdpRepr::parse(&message).unwrap(),
        NdpRepr::Solicitation {
            target: PEER6,
            source_mac: Some(OUR_MAC)
        }
    );
    // The neighbour answers: the parked datagram leaves, to its MAC.
    port.push_rx(&frame6(
        OUR_MAC,
        &ip6_icmp(PEER6, GLOBAL, 255, &[], &na(PEER6, PEER_MAC)),
    ));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    let out = port.take_tx();
    assert_eq!(out.len(), 1, "the parked datagram");
    let (from, to, payload) = parse_udp6(&out[0]);
    assert_eq!(
        (from.0, to, payload),
        (GLOBAL, (PEER6, 53), b"query".to_vec())
    );
    // Resolved: the next one goes straight out.
    iface
        .send_to(&mut port, Instant::ZERO, socket, dst, b"again")
        .unwrap();
    assert_eq!(port.take_tx().len(), 1);
    assert_eq!(iface.counters().get(Stat::Icmp6OutNeighborSolicits), 1);
}

#[test]
fn unanswered_solicitations_are_repeated_then_given_up() {
    let (mut iface, mut port) = stack6();
    let socket = iface
        .udp_bind(
            core::net::SocketAddrV6::new(GLOBAL, 0, 0, 0),
            BindOptions::default(),
        )
        .unwrap();
    let dst = core::net::SocketAddrV6::new(PEER6, 53, 0, 0);
    let solicitations = requests_until_given_up(&mut iface, &mut port, socket, dst);
    assert_eq!(solicitations, 3, "max_probes solicitations");
    assert_eq!(
        iface.counters().dropped(DropReason::TxNeighborUnresolved),
        1
    );
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn link_local_destinations_need_no_route_and_unknown_prefixes_have_none() {
    let (mut iface, mut port) = stack6();
    let socket = iface
        .udp_bind(
            core::net::SocketAddrV6::new(Ipv6Addr::UNSPECIFIED, 0, 0, 0),
            BindOptions::default(),
        )
        .unwrap();
    // Learn the peer first, then send to its link-local address.
    learn_peer(&mut iface, &mut port, PEER_LL, our_ll());
    let dst = core::net::SocketAddrV6::new(PEER_LL, 9, 0, 0);
    iface
        .send_to(&mut port, Instant::ZERO, socket, dst, b"ll")
        .unwrap();
    let out = port.take_tx();
    let (from, to, _) = parse_udp6(&out[0]);
    assert_eq!(
        (from.0, to.0),
        (our_ll(), PEER_LL),
        "from our link-local address"
    );
    let far = core::net::SocketAddrV6::new("2001:db9::1".parse().unwrap(), 9, 0, 0);
    assert_eq!(
        iface.send_to(&mut port, Instant::ZERO, socket, far, b"far"),
        Err(SendError::NoRoute)
    );
    // An IPv4-mapped destination leaves over IPv4 (ARP first).
    let mapped = core::net::SocketAddrV6::new(PEER_IP.to_ipv6_mapped(), 9, 0, 0);
    iface
        .send_to(&mut port, Instant::ZERO, socket, mapped, b"four")
        .unwrap();
    let out = port.take_tx();
    assert_eq!(&out[0][12..14], &[0x08, 0x06], "an ARP request");
}

#[test]
fn an_ipv6_datagram_over_the_mtu_is_fragmented_and_one_over_a_buffer_refused() {
    let (mut iface, mut port) = stack6();
    let socket = iface
        .udp_bind(
            core::net::SocketAddrV6::new(GLOBAL, 0, 0, 0),
            BindOptions::default(),
        )
        .unwrap();
    learn_peer(&mut iface, &mut port, PEER6, GLOBAL);
    let dst = core::net::SocketAddrV6::new(PEER6, 53, 0, 0);
    iface
        .send_to(&mut port, Instant::ZERO, socket, dst, &[0u8; 1500])
        .unwrap();
    let out = port.take_tx();
    assert_eq!(out.len(), 2, "two fragments");
    assert!(out.iter().all(|f| f.len() <= 14 + 1500 && f[14 + 6] == 44));
    assert_eq!(
        iface.send_to(&mut port, Instant::ZERO, socket, dst, &[0u8; 4000]),
        Err(SendError::TooLarge),
        "more than one buffer holds"
    );
    // A scope naming no IPv6 link has no way out.
    let scoped = core::net::SocketAddrV6::new(PEER_LL, 9, 0, 5);
    assert_eq!(
        iface.send_to(&mut port, Instant::ZERO, socket, scoped, b"x"),
        Err(SendError::NoRoute)
    );
    assert!(port.take_tx().is_empty());
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn traffic_to_a_stale_neighbour_is_confirmed_with_a_unicast_solicitation() {
    let (mut iface, mut port) = stack6();
    let socket = iface
        .udp_bind(
            core::net::SocketAddrV6::new(GLOBAL, 0, 0, 0),
            BindOptions::default(),
        )
        .unwrap();
    learn_peer(&mut iface, &mut port, PEER6, GLOBAL);
    let dst = core::net::SocketAddrV6::new(PEER6, 53, 0, 0);
    iface
        .send_to(&mut port, Instant::ZERO, socket, dst, b"q")
        .unwrap();
    assert_eq!(port.take_tx().len(), 1, "a stale entry is usable at once");
    assert_eq!(iface.neighbors6()[0].3, NeighborState::Delay);
    let at = |secs: u64| Instant::from_nanos(secs * 1_000_000_000);
    iface.poll(&mut port, at(6), &mut DropDatagrams);
    let out = port.take_tx();
    assert_eq!(out.len(), 1, "one probe after the delay");
    let (eth_dst, src, dst_ip, hop, message) = parse6(&out[0]);
    assert_eq!((eth_dst, src, dst_ip, hop), (PEER_MAC, GLOBAL, PEER6, 255));
    assert!(matches!(
        NdpRepr::parse(&message).unwrap(),
        NdpRepr::Solicitation { target: PEER6, .. }
    ));
    assert_eq!(iface.neighbors6()[0].3, NeighborState::Probe);
    // Unanswered probes end with the neighbour forgotten.
    for secs in 7..=9 {
        iface.poll(&mut port, at(secs), &mut DropDatagrams);
    }
    assert_eq!(port.take_tx().len(), 2, "three probes in all");
    assert!(iface.neighbors6().is_empty());
}

#[test]
fn the_fast_paths_count_a_mixed_burst_as_the_general_path_would_and_verify_long_datagrams() {
    let (mut iface, mut port) = stack6_echoing();
    let six = |port: u16, payload: &[u8], checksum| {
        frame6(
            OUR_MAC,
            &ip6_udp((PEER6, port), (GLOBAL, 7), payload, checksum),
        )
    };
    // One burst: three datagrams over IPv4 and three over IPv6, one of them
    // long enough for the checksum's wide loop (512 bytes or more), and a
    // long one whose checksum is wrong.
    for n in 0..3 {
        port.push_rx(&udp_frame(4000 + n, 7, b"four"));
    }
    port.push_rx(&six(5000, b"six", None));
    port.push_rx(&six(5001, &[0x6b; 700], None));
    port.push_rx(&six(5002, b"six again", None));
    port.push_rx(&six(5003, &[0x6b; 700], Some(0x1234)));
    poll(&mut iface, &mut port, &mut Echo);
    let out = port.take_tx();
    assert_eq!(out.len(), 6, "every datagram with a good checksum answered");
    let c = iface.counters();
    assert_eq!(c.get(Stat::EthInFrames), 7);
    assert_eq!(c.get(Stat::IpInReceives), 3);
    assert_eq!(c.get(Stat::IpInDelivers), 3);
    assert_eq!(c.get(Stat::Ip6InReceives), 4);
    // The bad one too: IPv6 delivered it up, UDP dropped it.
    assert_eq!(c.get(Stat::Ip6InDelivers), 4);
    assert_eq!(c.get(Stat::UdpInDatagrams), 6);
    assert_eq!(c.dropped(DropReason::UdpBadChecksum), 1);
}

#[test]
fn sending_to_our_own_ipv6_address_is_refused_without_a_solicitation() {
    let (mut iface, mut port) = stack6();
    let socket = iface
        .udp_bind(
            core::net::SocketAddrV6::new(Ipv6Addr::UNSPECIFIED, 0, 0, 0),
            BindOptions::default(),
        )
        .unwrap();
    for ours in [GLOBAL, our_ll()] {
        assert_eq!(
            iface.send_to(
                &mut port,
                Instant::ZERO,
                socket,
                core::net::SocketAddrV6::new(ours, 7, 0, 0),
                b"q"
            ),
            Err(SendError::OwnAddress),
            "{ours}"
        );
    }
    assert!(port.take_tx().is_empty(), "no solicitation for ourselves");
    assert_eq!(iface.counters().dropped(DropReason::TxOwnAddress), 2);
    assert_eq!(
        iface.add_route6(
            crate::route::Ipv6Cidr::new(Ipv6Addr::UNSPECIFIED, 0).unwrap(),
            GLOBAL,
            None
        ),
        Err(ConfigError::GatewayIsOurs(GLOBAL.into()))
    );
}

#[test]
fn a_datagram_to_a_group_stays_on_the_link() {
    // Hop limit 1 to a multicast group (Linux's IPV6_MULTICAST_HOPS
    // default), the group's MAC, no solicitation.
    let (mut iface, mut port) = stack6();
    let socket = iface
        .udp_bind(
            core::net::SocketAddrV6::new(Ipv6Addr::UNSPECIFIED, 0, 0, 0),
            BindOptions::default(),
        )
        .unwrap();
    let group: Ipv6Addr = "ff02::1:3".parse().unwrap();
    iface
        .send_to(
            &mut port,
            Instant::ZERO,
            socket,
            core::net::SocketAddrV6::new(group, 5355, 0, 0),
            b"all",
        )
        .unwrap();
    let out = port.take_tx();
    assert_eq!(out.len(), 1);
    let eth = EthernetFrame::new_checked(&out[0][..]).unwrap();
    assert_eq!(eth.dst(), multicast_mac(group));
    let ip = Ipv6Packet::new_checked(eth.payload()).unwrap();
    assert_eq!((ip.dst(), ip.hop_limit()), (group, 1));
}
