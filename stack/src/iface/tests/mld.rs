//! Multicast Listener Discovery (RFC 3810): the solicited-node groups of
//! our addresses reported when joined and left, queries answered within
//! their maximum response delay, invalid queries dropped and counted.
//! Every report is parsed from its bytes.

use super::ipv6::{PEER6, PEER_LL};
use super::*;
use crate::wire::icmpv6::Icmpv6Packet;
use crate::wire::ipv6::{
    link_local_from_mac, multicast_mac, next_header, solicited_node, Ipv6Header, Ipv6Packet,
};
use core::net::Ipv6Addr;

const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
const ALL_MLDV2_ROUTERS: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 0x16);
/// Our global address, its solicited-node group not the link-local one's.
const GLOBAL: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0x12, 0x3456);
const MODE_IS_EXCLUDE: u8 = 2;
const CHANGE_TO_INCLUDE: u8 = 3;
const CHANGE_TO_EXCLUDE: u8 = 4;

fn at(millis: u64) -> Instant {
    Instant::from_nanos(millis * 1_000_000)
}

/// A stack with a global address, DAD and MLD on (the defaults), test
/// keys; nothing polled yet.
fn stack_with_mld() -> (Interface<MemBuf>, MemPort) {
    let mut link = LinkConfig::new(OUR_MAC, Ipv4Cidr::new(OUR_IP, 24).unwrap());
    link.addresses6
        .push(crate::route::Ipv6Cidr::new(GLOBAL, 64).unwrap());
    let mut config = InterfaceConfig::with_links(vec![link]);
    config.keys = Some(Keys::for_testing(7));
    let iface = Interface::new(config).unwrap();
    let port = MemPort::new(MemPortConfig {
        mac: OUR_MAC,
        ..MemPortConfig::default()
    });
    (iface, port)
}

/// An MLDv2 report as sent: its source and its records (type, group).
type Report = (Ipv6Addr, Vec<(u8, Ipv6Addr)>);

/// Parses `frame` as an MLD message, checking what RFC 3810 5 and RFC
/// 2710 3 ask of every one: hop limit 1, a hop-by-hop header with the
/// Router Alert option (MLD), the destination's MAC, a valid ICMPv6
/// checksum. Returns its source, destination and message; `None` if it is
/// no MLD message at all.
fn parse_mld(frame: &[u8]) -> Option<(Ipv6Addr, Ipv6Addr, Vec<u8>)> {
    let eth = EthernetFrame::new_checked(frame).unwrap();
    if eth.ethertype() != EtherType::Ipv6 {
        return None;
    }
    let ip = Ipv6Packet::new_checked(eth.payload()).unwrap();
    if ip.next_header() != next_header::HOP_BY_HOP {
        return None;
    }
    assert_eq!(eth.dst(), multicast_mac(ip.dst()));
    assert_eq!(ip.hop_limit(), 1);
    let payload = ip.payload();
    assert_eq!(payload[0], next_header::ICMPV6);
    let hop_by_hop = (usize::from(payload[1]) + 1) * 8;
    let options = &payload[2..hop_by_hop];
    assert!(
        options.windows(4).any(|o| o == [5, 2, 0, 0]),
        "Router Alert (MLD) in {options:?}"
    );
    let message = &payload[hop_by_hop..];
    let icmp = Icmpv6Packet::new_checked(message).unwrap();
    assert!(icmp.verify_checksum(ip.src(), ip.dst()), "ICMPv6 checksum");
    Some((ip.src(), ip.dst(), message.to_vec()))
}

/// Parses `frame` as an MLDv2 report ([`parse_mld`]): to ff02::16,
/// ICMPv6 type 143, records without sources. `None` if it is no MLD
/// message at all.
fn parse_report(frame: &[u8]) -> Option<Report> {
    let (src, dst, message) = parse_mld(frame)?;
    assert_eq!(dst, ALL_MLDV2_ROUTERS);
    assert_eq!((message[0], message[1]), (143, 0), "an MLDv2 report");
    let count = usize::from(u16::from_be_bytes([message[6], message[7]]));
    assert_eq!(message.len(), 8 + 20 * count, "records without sources");
    let records = message[8..]
        .chunks_exact(20)
        .map(|r| {
            assert_eq!(r[1..4], [0, 0, 0], "no auxiliary data, no source");
            let group = Ipv6Addr::from(<[u8; 16]>::try_from(&r[4..]).unwrap());
            (r[0], group)
        })
        .collect();
    Some((src, records))
}

/// The MLD reports among `frames`, in order.
fn reports(frames: &[Vec<u8>]) -> Vec<Report> {
    frames.iter().filter_map(|f| parse_report(f)).collect()
}

/// Polls every 100 ms over `from..to` (ms), returning each report with the
/// time it left.
fn reports_between(
    iface: &mut Interface<MemBuf>,
    port: &mut MemPort,
    (from, to): (u64, u64),
) -> Vec<(u64, Report)> {
    let mut sent = Vec::new();
    for millis in (from..to).step_by(100) {
        iface.poll(port, at(millis), &mut DropDatagrams);
        sent.extend(reports(&port.take_tx()).into_iter().map(|r| (millis, r)));
    }
    sent
}

/// A multicast listener query from `src` to `dst` with hop limit `hop`,
/// asking about `group` within `max_response_ms`; behind a hop-by-hop
/// header with the Router Alert option if `alert`.
fn query(
    (src, dst, hop): (Ipv6Addr, Ipv6Addr, u8),
    group: Ipv6Addr,
    max_response_ms: u16,
    alert: bool,
) -> Vec<u8> {
    let mut v1 = query_v1((src, dst, hop), group, max_response_ms, alert);
    let at = v1.len();
    v1.extend_from_slice(&[0x02, 125, 0, 0]); // QRV 2, QQIC 125 s, no source
    let ip = &mut v1[14..];
    let payload_len = u16::from_be_bytes([ip[4], ip[5]]) + 4;
    ip[4..6].copy_from_slice(&payload_len.to_be_bytes());
    let message_at = at - 24;
    Icmpv6Packet::new_unchecked(&mut v1[message_at..]).fill_checksum(src, dst);
    v1
}

/// [`query`] as MLDv1 sends it (24 bytes, RFC 2710 3).
fn query_v1(
    (src, dst, hop): (Ipv6Addr, Ipv6Addr, u8),
    group: Ipv6Addr,
    max_response_ms: u16,
    alert: bool,
) -> Vec<u8> {
    let mut message = vec![130, 0, 0, 0];
    message.extend_from_slice(&max_response_ms.to_be_bytes());
    message.extend_from_slice(&[0, 0]);
    message.extend_from_slice(&group.octets());
    let hop_by_hop: &[u8] = if alert {
        &[next_header::ICMPV6, 0, 5, 2, 0, 0, 1, 0]
    } else {
        &[]
    };
    let mut packet = vec![0u8; 40];
    packet.extend_from_slice(hop_by_hop);
    let at = packet.len();
    packet.extend_from_slice(&message);
    let payload_len = (packet.len() - 40) as u16;
    Ipv6Packet::new_unchecked(&mut packet[..]).emit_header(&Ipv6Header {
        src,
        dst,
        next_header: if alert {
            next_header::HOP_BY_HOP
        } else {
            next_header::ICMPV6
        },
        payload_len,
        hop_limit: hop,
    });
    Icmpv6Packet::new_unchecked(&mut packet[at..]).fill_checksum(src, dst);
    ethernet(multicast_mac(dst), PEER_MAC, EtherType::Ipv6, &packet)
}

#[test]
fn joining_and_leaving_solicited_node_groups_is_reported_twice() {
    let (mut iface, mut port) = stack_with_mld();
    let ll = link_local_from_mac(OUR_MAC);
    let groups = [solicited_node(ll), solicited_node(GLOBAL)];
    let joined: Vec<(u8, Ipv6Addr)> = groups.iter().map(|&g| (CHANGE_TO_EXCLUDE, g)).collect();
    // The first poll: the report (from ::, the link-local address still
    // tentative) before duplicate address detection asks in the groups.
    iface.poll(&mut port, Instant::ZERO, &mut DropDatagrams);
    let first = port.take_tx();
    let at_report = first.iter().position(|f| parse_report(f).is_some());
    let is_probe = |f: &Vec<u8>| f[12..14] == [0x86, 0xdd] && f[20] == next_header::ICMPV6;
    let at_probe = first.iter().position(is_probe);
    assert_eq!(
        reports(&first),
        [(Ipv6Addr::UNSPECIFIED, joined.clone())],
        "all-nodes is never reported"
    );
    assert!(at_report < at_probe, "the report leaves before the probes");
    // Repeated once (robustness 2) within the unsolicited report interval
    // (1 s), then no more.
    let again = reports_between(&mut iface, &mut port, (100, 5000));
    assert_eq!(again.len(), 1, "{again:?}");
    let (when, (_, records)) = &again[0];
    assert!((100..=1100).contains(when), "repeated at {when} ms");
    assert_eq!(*records, joined);
    assert_eq!(iface.counters().get(Stat::Icmp6OutMldv2Reports), 2);
    // Leaving a group (its address removed): reported twice as well, from
    // the link-local address now in use.
    iface.remove_address(None, GLOBAL.into()).unwrap();
    let left = reports_between(&mut iface, &mut port, (5000, 10_000));
    let left_records = vec![(CHANGE_TO_INCLUDE, solicited_node(GLOBAL))];
    assert_eq!(left.len(), 2, "{left:?}");
    assert_eq!(left[0], (5000, (ll, left_records.clone())));
    assert!(
        (5100..=6100).contains(&left[1].0),
        "repeated at {}",
        left[1].0
    );
    assert_eq!(left[1].1, (ll, left_records));
}

#[test]
fn queries_are_answered_within_their_maximum_response_delay() {
    let (mut iface, mut port) = stack_with_mld();
    let ll = link_local_from_mac(OUR_MAC);
    reports_between(&mut iface, &mut port, (0, 3000));
    // A general query, to all nodes: every group, once, after a random
    // delay up to the 2 s it allows.
    port.push_rx(&query(
        (PEER_LL, ALL_NODES, 1),
        Ipv6Addr::UNSPECIFIED,
        2000,
        true,
    ));
    let answers = reports_between(&mut iface, &mut port, (3000, 8000));
    let current = vec![
        (MODE_IS_EXCLUDE, solicited_node(ll)),
        (MODE_IS_EXCLUDE, solicited_node(GLOBAL)),
    ];
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert!((3000..=5100).contains(&answers[0].0), "at {}", answers[0].0);
    assert_eq!(answers[0].1, (ll, current));
    // A query for one group, to that group: that group alone.
    let group = solicited_node(GLOBAL);
    port.push_rx(&query((PEER_LL, group, 1), group, 500, true));
    let answers = reports_between(&mut iface, &mut port, (8000, 10_000));
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert!((8000..=8600).contains(&answers[0].0), "at {}", answers[0].0);
    assert_eq!(answers[0].1, (ll, vec![(MODE_IS_EXCLUDE, group)]));
    assert_eq!(iface.counters().get(Stat::Icmp6InGroupMembQueries), 2);
}

#[test]
fn invalid_queries_are_dropped_and_counted() {
    let (mut iface, mut port) = stack_with_mld();
    reports_between(&mut iface, &mut port, (0, 3000));
    let general = Ipv6Addr::UNSPECIFIED;
    for bad in [
        query((PEER6, ALL_NODES, 1), general, 1000, true), // not link-local
        query((PEER_LL, ALL_NODES, 255), general, 1000, true), // forwarded
        query((PEER_LL, ALL_NODES, 1), general, 1000, false), // no Router Alert
        query((PEER_LL, ALL_NODES, 1), PEER6, 1000, true), // no group asked
    ] {
        port.push_rx(&bad);
    }
    let answers = reports_between(&mut iface, &mut port, (3000, 6000));
    assert!(answers.is_empty(), "{answers:?}");
    assert_eq!(iface.counters().dropped(DropReason::MldInvalid), 4);
    assert_eq!(iface.counters().get(Stat::Icmp6InGroupMembQueries), 0);
}

#[test]
fn mld_turned_off_reports_nothing() {
    let (iface, mut port) = stack_with_mld();
    let mut config = iface.config().clone();
    config.mld = false;
    let mut iface = Interface::new(config).unwrap();
    port.push_rx(&query(
        (PEER_LL, ALL_NODES, 1),
        Ipv6Addr::UNSPECIFIED,
        100,
        true,
    ));
    assert!(reports_between(&mut iface, &mut port, (0, 3000)).is_empty());
    assert_eq!(iface.counters().dropped(DropReason::Icmp6Unhandled), 1);
}

#[test]
fn an_mldv1_querier_is_answered_in_mldv1_until_it_is_gone() {
    let (mut iface, mut port) = stack_with_mld();
    let ll = link_local_from_mac(OUR_MAC);
    reports_between(&mut iface, &mut port, (0, 3000));
    let mld_between = |iface: &mut Interface<MemBuf>, port: &mut MemPort, from, to| {
        let mut sent = Vec::new();
        for millis in (from..to).step_by(100) {
            iface.poll(port, at(millis), &mut DropDatagrams);
            sent.extend(port.take_tx().iter().filter_map(|f| parse_mld(f)));
        }
        sent
    };
    // An MLDv1 general query: an MLDv1 report per group, to the group.
    port.push_rx(&query_v1(
        (PEER_LL, ALL_NODES, 1),
        Ipv6Addr::UNSPECIFIED,
        1000,
        true,
    ));
    let answers = mld_between(&mut iface, &mut port, 3000, 6000);
    let v1 = |kind: u8, group: Ipv6Addr| {
        let mut m = vec![kind, 0, 0, 0, 0, 0, 0, 0];
        m.extend_from_slice(&group.octets());
        m
    };
    let mut seen: Vec<(Ipv6Addr, Ipv6Addr, Vec<u8>)> = answers
        .into_iter()
        .map(|(src, dst, mut m)| {
            m[2..4].copy_from_slice(&[0, 0]); // the checksum, checked
            (src, dst, m)
        })
        .collect();
    seen.sort();
    let mut expected: Vec<_> = [solicited_node(ll), solicited_node(GLOBAL)]
        .into_iter()
        .map(|g| (ll, g, v1(131, g)))
        .collect();
    expected.sort();
    assert_eq!(seen, expected);
    assert_eq!(iface.counters().get(Stat::Icmp6OutGroupMembResponses), 2);
    // A leave while the MLDv1 querier is present: one done, to all-routers.
    iface.remove_address(None, GLOBAL.into()).unwrap();
    let left = mld_between(&mut iface, &mut port, 6000, 9000);
    let group = solicited_node(GLOBAL);
    let all_routers = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 2);
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!((left[0].0, left[0].1), (ll, all_routers));
    assert_eq!(left[0].2[..1], [132]);
    assert_eq!(left[0].2[8..], group.octets());
    // 260 s after the MLDv1 query (RFC 3810 9.12), MLDv2 again.
    let later = 3000 + 260_000;
    iface.poll(&mut port, at(later), &mut DropDatagrams);
    let prefix = crate::route::Ipv6Cidr::new(GLOBAL, 64).unwrap();
    iface.add_address(0, Prefix::V6(prefix)).unwrap();
    let joined = reports_between(&mut iface, &mut port, (later + 100, later + 200));
    assert_eq!(
        joined,
        [(later + 100, (ll, vec![(CHANGE_TO_EXCLUDE, group)]))]
    );
}

#[test]
fn a_group_a_socket_joins_is_reported_and_its_last_leave_too() {
    let (mut iface, mut port) = stack_with_mld();
    let ll = link_local_from_mac(OUR_MAC);
    reports_between(&mut iface, &mut port, (0, 3000));
    let group: Ipv6Addr = "ff15::1234".parse().unwrap();
    let shared = crate::udp::BindOptions {
        reuse_port: true,
        ..crate::udp::BindOptions::default()
    };
    let a = (iface.udp_bind((Ipv6Addr::UNSPECIFIED, 5004), shared)).unwrap();
    let b = (iface.udp_bind((Ipv6Addr::UNSPECIFIED, 5004), shared)).unwrap();
    for socket in [a, b] {
        assert_eq!(
            iface.udp_join(socket, group.into(), GroupLink::Link(0)),
            Ok(0)
        );
    }
    let joined = reports_between(&mut iface, &mut port, (3000, 6000));
    assert_eq!(joined.len(), 2, "one group, robustness 2: {joined:?}");
    for (_, report) in &joined {
        assert_eq!(*report, (ll, vec![(CHANGE_TO_EXCLUDE, group)]));
    }
    iface.udp_close(a);
    assert!(reports_between(&mut iface, &mut port, (6000, 8000)).is_empty());
    iface.udp_close(b);
    let left = reports_between(&mut iface, &mut port, (8000, 11_000));
    assert_eq!(left.len(), 2, "{left:?}");
    for (_, report) in &left {
        assert_eq!(*report, (ll, vec![(CHANGE_TO_INCLUDE, group)]));
    }
}
