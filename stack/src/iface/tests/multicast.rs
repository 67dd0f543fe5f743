//! Sockets joining multicast groups: the join API's checks, delivery to
//! the members only (and every member, in its own buffer), a closed
//! socket's memberships left; IGMPv3 (RFC 3376) reports on join and leave,
//! answers to queries, IGMPv2 compatibility, hostile IGMP counted; MLD
//! reporting sockets' IPv6 groups. Every report is parsed from its bytes.

use super::ipv6::{frame6, ip6_udp, stack6, PEER_LL};
use super::*;
use crate::wire::checksum;
use crate::wire::ipv6::multicast_mac;
use core::net::Ipv6Addr;

const GROUP: Ipv4Addr = Ipv4Addr::new(239, 1, 2, 3);
const OTHER_GROUP: Ipv4Addr = Ipv4Addr::new(239, 9, 9, 9);
const ALL_SYSTEMS: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 1);
const ALL_IGMPV3_ROUTERS: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 22);
const ALL_ROUTERS: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 2);
const MODE_IS_EXCLUDE: u8 = 2;
const CHANGE_TO_INCLUDE: u8 = 3;
const CHANGE_TO_EXCLUDE: u8 = 4;

fn at(millis: u64) -> Instant {
    Instant::from_nanos(millis * 1_000_000)
}

fn mac4(group: Ipv4Addr) -> MacAddr {
    let [_, b, c, d] = group.octets();
    MacAddr([0x01, 0x00, 0x5e, b & 0x7f, c, d])
}

/// A stack with IGMP on (the default) and test keys, past its first poll.
fn stack_with_igmp() -> (Interface<MemBuf>, MemPort) {
    let mut config = InterfaceConfig::new(OUR_MAC, Ipv4Cidr::new(OUR_IP, 24).unwrap());
    config.mld = false;
    config.keys = Some(Keys::for_testing(11));
    let mut iface = Interface::new(config).unwrap();
    let mut port = MemPort::new(MemPortConfig {
        mac: OUR_MAC,
        ..MemPortConfig::default()
    });
    iface.poll(&mut port, Instant::ZERO, &mut DropDatagrams);
    port.take_tx();
    (iface, port)
}

/// Shared ports, as media servers bind them (`SO_REUSEPORT`).
const SHARED: BindOptions = BindOptions {
    reuse_port: true,
    device: None,
    v6_only: false,
    tos: 0,
    incoming_lcore: None,
};

fn bind4(iface: &mut Interface<MemBuf>, ip: Ipv4Addr, port: u16) -> SocketId {
    iface.udp_bind(SocketAddrV4::new(ip, port), SHARED).unwrap()
}

fn join(iface: &mut Interface<MemBuf>, socket: SocketId, group: Ipv4Addr) {
    assert_eq!(
        iface.udp_join(socket, group.into(), GroupLink::Default),
        Ok(0)
    );
}

/// A datagram from the peer to `group`:`port` in a multicast frame.
fn group_frame(group: Ipv4Addr, port: u16, payload: &[u8]) -> Vec<u8> {
    let (src, dst) = (
        SocketAddrV4::new(PEER_IP, 5000),
        SocketAddrV4::new(group, port),
    );
    let ip = ipv4(PEER_IP, group, protocol::UDP, &udp(src, dst, payload));
    ethernet(mac4(group), PEER_MAC, EtherType::Ipv4, &ip)
}

/// The sockets that got `payload`, once per copy, sorted.
fn receivers(recorder: &Recorder, payload: &[u8]) -> Vec<SocketId> {
    let mut got: Vec<SocketId> = (recorder.calls.iter())
        .flat_map(|(s, batch)| batch.iter().filter(|p| *p == payload).map(move |_| *s))
        .collect();
    got.sort();
    got
}

fn sorted(mut sockets: Vec<SocketId>) -> Vec<SocketId> {
    sockets.sort();
    sockets
}

/// An IGMP message as sent, its headers checked as RFC 3376 4 asks of
/// every one: the group MAC of its destination, TTL 1, TOS 0xc0, the
/// Router Alert option, correct IP and IGMP checksums. Returns (source,
/// destination, message); `None` for a frame that is no IGMP.
fn parse_igmp(frame: &[u8]) -> Option<(Ipv4Addr, Ipv4Addr, Vec<u8>)> {
    let eth = EthernetFrame::new_checked(frame).unwrap();
    if eth.ethertype() != EtherType::Ipv4 || eth.payload()[9] != 2 {
        return None;
    }
    let ip = eth.payload();
    let header_len = usize::from(ip[0] & 0x0f) * 4;
    assert_eq!(header_len, 24, "20 bytes and the Router Alert option");
    assert_eq!(&ip[20..24], &[0x94, 0x04, 0, 0], "Router Alert");
    assert_eq!(checksum::checksum(&ip[..header_len]), 0, "IP checksum");
    assert_eq!(ip[8], 1, "TTL 1");
    assert_eq!(ip[1], 0xc0, "Internetwork Control");
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
    let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
    assert_eq!(eth.dst(), mac4(dst));
    let message = &ip[header_len..total];
    assert_eq!(checksum::checksum(message), 0, "IGMP checksum");
    Some((src, dst, message.to_vec()))
}

/// An IGMPv3 report's records (type, group), checked: from our address
/// to 224.0.0.22, type 0x22, records without sources.
fn parse_report(frame: &[u8]) -> Option<Vec<(u8, Ipv4Addr)>> {
    let (src, dst, message) = parse_igmp(frame)?;
    assert_eq!((src, dst), (OUR_IP, ALL_IGMPV3_ROUTERS));
    assert_eq!(message[0], 0x22, "an IGMPv3 report");
    let count = usize::from(u16::from_be_bytes([message[6], message[7]]));
    assert_eq!(message.len(), 8 + 8 * count, "records without sources");
    let records = (message[8..].chunks_exact(8))
        .map(|r| {
            assert_eq!(r[1..4], [0, 0, 0], "no auxiliary data, no source");
            (r[0], Ipv4Addr::new(r[4], r[5], r[6], r[7]))
        })
        .collect();
    Some(records)
}

/// Polls every 100 ms over `from..to` (ms): each IGMP message sent, with
/// the time it left (source, destination, message).
fn igmp_between(
    iface: &mut Interface<MemBuf>,
    port: &mut MemPort,
    (from, to): (u64, u64),
) -> Vec<(u64, Vec<u8>)> {
    let mut sent = Vec::new();
    for millis in (from..to).step_by(100) {
        iface.poll(port, at(millis), &mut DropDatagrams);
        for frame in port.take_tx() {
            if parse_igmp(&frame).is_some() {
                sent.push((millis, frame));
            }
        }
    }
    sent
}

/// An IGMP message from the peer router to `dst` (TTL `ttl`, the Router
/// Alert option), its checksum filled.
fn igmp_frame(dst: Ipv4Addr, ttl: u8, message: &[u8]) -> Vec<u8> {
    let mut message = message.to_vec();
    message[2..4].copy_from_slice(&[0, 0]);
    let sum = checksum::checksum(&message);
    message[2..4].copy_from_slice(&sum.to_be_bytes());
    let total = 24 + message.len();
    let mut ip = vec![0x46, 0xc0];
    ip.extend_from_slice(&(total as u16).to_be_bytes());
    ip.extend_from_slice(&[0, 1, 0, 0, ttl, 2, 0, 0]);
    ip.extend_from_slice(&Ipv4Addr::new(10, 0, 0, 254).octets());
    ip.extend_from_slice(&dst.octets());
    ip.extend_from_slice(&[0x94, 0x04, 0, 0]);
    let sum = checksum::checksum(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    ip.extend_from_slice(&message);
    ethernet(mac4(dst), PEER_MAC, EtherType::Ipv4, &ip)
}

/// An IGMPv3 query about `group` (0.0.0.0: general) with Max Resp Code
/// `code` (tenths of a second below 128).
fn query_v3(group: Ipv4Addr, code: u8) -> Vec<u8> {
    let mut message = vec![0x11, code, 0, 0];
    message.extend_from_slice(&group.octets());
    message.extend_from_slice(&[2, 125, 0, 0]); // QRV 2, QQIC 125 s, no source
    let dst = if group.is_unspecified() {
        ALL_SYSTEMS
    } else {
        group
    };
    igmp_frame(dst, 1, &message)
}

/// An IGMPv2 query (8 bytes, Max Resp Time `code` tenths).
fn query_v2(group: Ipv4Addr, code: u8) -> Vec<u8> {
    let mut message = vec![0x11, code, 0, 0];
    message.extend_from_slice(&group.octets());
    igmp_frame(ALL_SYSTEMS, 1, &message)
}

#[test]
fn joins_are_checked() {
    let (mut iface, _port) = stack6();
    let v4 = bind4(&mut iface, Ipv4Addr::UNSPECIFIED, 5004);
    let v6_only = iface
        .udp_bind(
            (Ipv6Addr::UNSPECIFIED, 5004),
            BindOptions {
                v6_only: true,
                ..BindOptions::default()
            },
        )
        .unwrap();
    let group6: Ipv6Addr = "ff15::1234".parse().unwrap();
    let g = |ip: Ipv4Addr| IpAddr::V4(ip);
    let join = |iface: &mut Interface<MemBuf>, s, group, on| iface.udp_join(s, group, on);
    assert_eq!(
        join(&mut iface, v4, g(OUR_IP), GroupLink::Default),
        Err(JoinError::NotMulticast)
    );
    assert_eq!(
        join(&mut iface, v4, g(GROUP), GroupLink::Link(1)),
        Err(JoinError::NoSuchLink)
    );
    let nobody = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 99));
    assert_eq!(
        join(&mut iface, v4, g(GROUP), GroupLink::Address(nobody)),
        Err(JoinError::NoSuchLink)
    );
    assert_eq!(
        join(&mut iface, v4, group6.into(), GroupLink::Default),
        Err(JoinError::WrongFamily)
    );
    assert_eq!(
        join(&mut iface, v6_only, g(GROUP), GroupLink::Default),
        Err(JoinError::WrongFamily)
    );
    let on_ours = GroupLink::Address(IpAddr::V4(OUR_IP));
    assert_eq!(join(&mut iface, v4, g(GROUP), on_ours), Ok(0));
    assert_eq!(
        join(&mut iface, v4, g(GROUP), GroupLink::Link(0)),
        Err(JoinError::AlreadyJoined)
    );
    assert_eq!(
        join(&mut iface, v6_only, group6.into(), GroupLink::Link(0)),
        Ok(0)
    );
    // Up to the bound per socket, then no more.
    for i in 1..MAX_GROUPS_PER_SOCKET {
        let group = Ipv4Addr::new(239, 2, 0, i as u8);
        assert_eq!(join(&mut iface, v4, g(group), GroupLink::Default), Ok(0));
    }
    assert_eq!(
        join(&mut iface, v4, g(OTHER_GROUP), GroupLink::Default),
        Err(JoinError::TooManyGroups)
    );
    assert_eq!(iface.udp_groups(v4).len(), MAX_GROUPS_PER_SOCKET);
    assert_eq!(
        iface.udp_leave(v4, g(OTHER_GROUP), GroupLink::Default),
        Err(JoinError::NotJoined)
    );
    assert_eq!(iface.udp_leave(v4, g(GROUP), GroupLink::Default), Ok(0));
    assert_eq!(
        iface.udp_leave(v4, g(GROUP), GroupLink::Default),
        Err(JoinError::NotJoined)
    );
    iface.udp_close(v4);
    assert_eq!(
        join(&mut iface, v4, g(GROUP), GroupLink::Default),
        Err(JoinError::NoSocket)
    );
}

#[test]
fn a_group_datagram_reaches_the_members_only_and_a_closed_member_leaves() {
    let (mut iface, mut port) = stack_with_igmp();
    // Members on the wildcard and on the group address; a wildcard socket
    // that joined nothing, one that joined another group, one on another
    // port that joined the group.
    let member = bind4(&mut iface, Ipv4Addr::UNSPECIFIED, 5004);
    let on_group = bind4(&mut iface, GROUP, 5004);
    let _bystander = bind4(&mut iface, Ipv4Addr::UNSPECIFIED, 5004);
    let elsewhere = bind4(&mut iface, Ipv4Addr::UNSPECIFIED, 5004);
    let other_port = bind4(&mut iface, Ipv4Addr::UNSPECIFIED, 6000);
    join(&mut iface, member, GROUP);
    join(&mut iface, on_group, GROUP);
    join(&mut iface, elsewhere, OTHER_GROUP);
    join(&mut iface, other_port, GROUP);
    port.push_rx(&group_frame(GROUP, 5004, b"media"));
    port.push_rx(&group_frame(OTHER_GROUP, 5004, b"other"));
    // Unicast to the port still reaches one socket (the lookup's pick).
    port.push_rx(&udp_frame(4000, 5004, b"unicast"));
    let mut recorder = Recorder::default();
    poll(&mut iface, &mut port, &mut recorder);
    assert_eq!(
        receivers(&recorder, b"media"),
        sorted(vec![member, on_group])
    );
    assert_eq!(receivers(&recorder, b"other"), vec![elsewhere]);
    assert_eq!(receivers(&recorder, b"unicast").len(), 1);
    let c = iface.counters();
    assert_eq!(c.total_dropped(), 0, "{:?}", c.nonzero());
    // Nobody joined it: dropped at the link layer (its MAC not listened
    // to); a group joined but not at that port: counted.
    port.push_rx(&group_frame(Ipv4Addr::new(239, 5, 5, 5), 5004, b"none"));
    port.push_rx(&group_frame(GROUP, 7000, b"no port"));
    let mut recorder = Recorder::default();
    poll(&mut iface, &mut port, &mut recorder);
    assert!(recorder.calls.is_empty());
    let c = iface.counters();
    assert_eq!(c.dropped(DropReason::EthNotForUs), 1);
    assert_eq!(c.dropped(DropReason::UdpNotMember), 1);
    assert!(
        port.take_tx().iter().all(|f| parse_igmp(f).is_some()),
        "no ICMP error"
    );
    // A closed member's membership goes with it (and its id, reused, has
    // none).
    iface.udp_close(member);
    let reused = bind4(&mut iface, Ipv4Addr::UNSPECIFIED, 5004);
    assert!(iface.udp_groups(reused).is_empty());
    port.push_rx(&group_frame(GROUP, 5004, b"after close"));
    let mut recorder = Recorder::default();
    poll(&mut iface, &mut port, &mut recorder);
    assert_eq!(receivers(&recorder, b"after close"), vec![on_group]);
    assert_eq!(port.buffers_in_use(), 0, "copies freed");
}

#[test]
fn the_first_join_and_the_last_leave_are_reported_twice() {
    let (mut iface, mut port) = stack_with_igmp();
    let a = bind4(&mut iface, Ipv4Addr::UNSPECIFIED, 5004);
    let b = bind4(&mut iface, Ipv4Addr::UNSPECIFIED, 5006);
    join(&mut iface, a, GROUP);
    join(&mut iface, b, GROUP); // the same group: no second report
    let sent = igmp_between(&mut iface, &mut port, (200, 3000));
    let records: Vec<_> = sent.iter().map(|(_, f)| parse_report(f).unwrap()).collect();
    assert_eq!(
        records,
        vec![vec![(CHANGE_TO_EXCLUDE, GROUP)]; 2],
        "{sent:?}"
    );
    assert_eq!(sent[0].0, 200, "at the next timer run");
    assert!(sent[1].0 <= 200 + 1000, "repeated within a second");
    // One socket leaves: the group stays joined, nothing is sent.
    assert_eq!(iface.udp_leave(a, GROUP.into(), GroupLink::Default), Ok(0));
    assert!(igmp_between(&mut iface, &mut port, (3000, 5000)).is_empty());
    // The last closes: the leave, twice.
    iface.udp_close(b);
    let sent = igmp_between(&mut iface, &mut port, (5000, 8000));
    let records: Vec<_> = sent.iter().map(|(_, f)| parse_report(f).unwrap()).collect();
    assert_eq!(records, vec![vec![(CHANGE_TO_INCLUDE, GROUP)]; 2]);
    assert_eq!(iface.counters().get(Stat::IgmpOutV3Reports), 4);
    assert!(igmp_between(&mut iface, &mut port, (8000, 12000)).is_empty());
}

#[test]
fn queries_are_answered_within_their_max_response_time() {
    let (mut iface, mut port) = stack_with_igmp();
    let a = bind4(&mut iface, Ipv4Addr::UNSPECIFIED, 5004);
    join(&mut iface, a, GROUP);
    join(&mut iface, a, OTHER_GROUP);
    igmp_between(&mut iface, &mut port, (100, 3000)); // the joins' reports
                                                      // A general query (Max Resp 2 s): one report of every group.
    port.push_rx(&query_v3(Ipv4Addr::UNSPECIFIED, 20));
    let sent = igmp_between(&mut iface, &mut port, (3000, 6000));
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(sent[0].0 <= 3000 + 2000 + 100);
    let mut records = parse_report(&sent[0].1).unwrap();
    records.sort();
    assert_eq!(
        records,
        vec![(MODE_IS_EXCLUDE, GROUP), (MODE_IS_EXCLUDE, OTHER_GROUP)]
    );
    // A group-specific one: that group alone; one for a group we did not
    // join: nothing (its frame is not even for our MAC filter).
    port.push_rx(&query_v3(GROUP, 10));
    port.push_rx(&query_v3(Ipv4Addr::new(239, 7, 7, 7), 10));
    let sent = igmp_between(&mut iface, &mut port, (6000, 8000));
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(
        parse_report(&sent[0].1).unwrap(),
        vec![(MODE_IS_EXCLUDE, GROUP)]
    );
    assert_eq!(iface.counters().get(Stat::IgmpInQueries), 2);
    assert_eq!(iface.counters().dropped(DropReason::EthNotForUs), 1);
}

#[test]
fn an_igmpv2_querier_makes_reports_v2_and_leaves_one_leave() {
    let (mut iface, mut port) = stack_with_igmp();
    port.push_rx(&query_v2(Ipv4Addr::UNSPECIFIED, 10));
    igmp_between(&mut iface, &mut port, (100, 2000)); // nothing to answer
    let a = bind4(&mut iface, Ipv4Addr::UNSPECIFIED, 5004);
    join(&mut iface, a, GROUP);
    let sent = igmp_between(&mut iface, &mut port, (2000, 4000));
    assert_eq!(sent.len(), 2, "robustness 2: {sent:?}");
    for (_, frame) in &sent {
        let (src, dst, message) = parse_igmp(frame).unwrap();
        assert_eq!(
            (src, dst),
            (OUR_IP, GROUP),
            "an IGMPv2 report goes to its group"
        );
        assert_eq!(message.len(), 8);
        assert_eq!(message[0], 0x16);
        assert_eq!(&message[4..8], &GROUP.octets());
    }
    // A v2 group-specific query is answered with a v2 report too.
    port.push_rx(&query_v2(GROUP, 10));
    let sent = igmp_between(&mut iface, &mut port, (4000, 6000));
    assert_eq!(sent.len(), 1);
    assert_eq!(parse_igmp(&sent[0].1).unwrap().2[0], 0x16);
    iface.udp_close(a);
    let sent = igmp_between(&mut iface, &mut port, (6000, 9000));
    assert_eq!(sent.len(), 1, "IGMPv2 leaves once: {sent:?}");
    let (_, dst, message) = parse_igmp(&sent[0].1).unwrap();
    assert_eq!(dst, ALL_ROUTERS);
    assert_eq!(message[0], 0x17);
    assert_eq!(&message[4..8], &GROUP.octets());
    let c = iface.counters();
    assert_eq!(c.get(Stat::IgmpOutV2Reports), 3);
    assert_eq!(c.get(Stat::IgmpOutLeaves), 1);
    assert_eq!(c.get(Stat::IgmpOutV3Reports), 0);
    // The querier's timeout (260 s) past, IGMPv3 again.
    let b = bind4(&mut iface, Ipv4Addr::UNSPECIFIED, 5004);
    join(&mut iface, b, GROUP);
    let sent = igmp_between(&mut iface, &mut port, (300_000, 302_000));
    assert!(parse_report(&sent[0].1).is_some());
}

#[test]
fn hostile_igmp_is_counted_and_changes_nothing() {
    let (mut iface, mut port) = stack_with_igmp();
    let a = bind4(&mut iface, Ipv4Addr::UNSPECIFIED, 5004);
    join(&mut iface, a, GROUP);
    igmp_between(&mut iface, &mut port, (100, 3000));
    let general = [0x11, 10, 0, 0, 0, 0, 0, 0, 2, 125, 0, 0];
    let mut bad_checksum = query_v3(Ipv4Addr::UNSPECIFIED, 10);
    let last = bad_checksum.len() - 1;
    bad_checksum[last] ^= 0xff;
    let mut not_a_group = general;
    not_a_group[4..8].copy_from_slice(&[10, 0, 0, 1]);
    let mut too_many_sources = general;
    too_many_sources[11] = 9;
    let frames = [
        bad_checksum,
        igmp_frame(ALL_SYSTEMS, 2, &general), // TTL 2
        igmp_frame(ALL_SYSTEMS, 1, &general[..6]),
        igmp_frame(ALL_SYSTEMS, 1, &general[..10]),
        igmp_frame(ALL_SYSTEMS, 1, &not_a_group),
        igmp_frame(ALL_SYSTEMS, 1, &too_many_sources),
    ];
    for frame in &frames {
        port.push_rx(frame);
    }
    // Another member's report to the group: nothing for us to do.
    let mut report = vec![0x16, 0, 0, 0];
    report.extend_from_slice(&GROUP.octets());
    port.push_rx(&igmp_frame(GROUP, 1, &report));
    let sent = igmp_between(&mut iface, &mut port, (3000, 15000));
    assert!(sent.is_empty(), "no query accepted: {sent:?}");
    let c = iface.counters();
    assert_eq!(c.dropped(DropReason::IgmpInvalid), frames.len() as u64);
    assert_eq!(c.dropped(DropReason::IgmpIgnored), 1);
    assert_eq!(c.get(Stat::IgmpInQueries), 0);
}

#[test]
fn sockets_ipv6_groups_are_received_by_members_and_reported_by_mld() {
    let (mut iface, mut port) = stack6();
    let group: Ipv6Addr = "ff15::1234".parse().unwrap();
    let member = (iface.udp_bind((Ipv6Addr::UNSPECIFIED, 5004), SHARED)).unwrap();
    let _bystander = (iface.udp_bind((Ipv6Addr::UNSPECIFIED, 5004), SHARED)).unwrap();
    let frame = frame6(
        multicast_mac(group),
        &ip6_udp((PEER_LL, 5000), (group, 5004), b"media6", None),
    );
    // Not joined yet: not for us.
    port.push_rx(&frame);
    let mut recorder = Recorder::default();
    poll(&mut iface, &mut port, &mut recorder);
    assert!(recorder.calls.is_empty());
    assert_eq!(iface.counters().dropped(DropReason::EthNotForUs), 1);
    assert_eq!(
        iface.udp_join(member, group.into(), GroupLink::Default),
        Ok(0)
    );
    port.push_rx(&frame);
    let mut recorder = Recorder::default();
    poll(&mut iface, &mut port, &mut recorder);
    assert_eq!(receivers(&recorder, b"media6"), vec![member]);
}
