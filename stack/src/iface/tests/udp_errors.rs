//! Which ICMP errors about its datagrams a connected UDP socket hears: as
//! Linux without IP_RECVERR (`__udp4_lib_err` with `icmp_err_convert`,
//! `__udp6_lib_err` with `icmpv6_err_convert`), only the "hard" ones; a
//! soft one (a network or host unreachable, a time exceeded) may pass and
//! is not the socket's business.

use super::ipv6::{frame6, ip6_icmp, ip6_udp, stack6, GLOBAL, PEER6};
use super::*;
use crate::udp::PeerError;
use crate::wire::icmpv6::msg_type as icmp6;
use core::net::SocketAddrV6;

/// ICMPv4 `kind`/`code` (second word `word`) from the peer, quoting a UDP
/// datagram we sent from port 5000 to its port 53.
fn error4(kind: u8, code: u8, word: u32) -> Vec<u8> {
    let (ours, theirs) = (
        SocketAddrV4::new(OUR_IP, 5000),
        SocketAddrV4::new(PEER_IP, 53),
    );
    let quoted = ipv4(OUR_IP, PEER_IP, protocol::UDP, &udp(ours, theirs, b"lost"));
    let mut icmp = vec![kind, code, 0, 0];
    icmp.extend_from_slice(&word.to_be_bytes());
    icmp.extend_from_slice(&quoted);
    Icmpv4Packet::new_unchecked(&mut icmp[..]).fill_checksum();
    let ip = ipv4(PEER_IP, OUR_IP, protocol::ICMP, &icmp);
    ethernet(OUR_MAC, PEER_MAC, EtherType::Ipv4, &ip)
}

/// The ICMPv6 twin of [`error4`].
fn error6(kind: u8, code: u8, word: u32) -> Vec<u8> {
    let quoted = ip6_udp((GLOBAL, 5000), (PEER6, 53), b"lost", None);
    let mut icmp = vec![kind, code, 0, 0];
    icmp.extend_from_slice(&word.to_be_bytes());
    icmp.extend_from_slice(&quoted);
    frame6(OUR_MAC, &ip6_icmp(PEER6, GLOBAL, 64, &[], &icmp))
}

#[test]
fn a_connected_udp_socket_hears_hard_icmp_errors_only() {
    let (mut iface, mut port) = stack6();
    let v4 = iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 5000), BindOptions::default())
        .unwrap();
    assert!(iface.udp_connect(v4, SocketAddrV4::new(PEER_IP, 53)));
    let v6 = iface
        .udp_bind(
            SocketAddrV6::new(GLOBAL, 5000, 0, 0),
            BindOptions::default(),
        )
        .unwrap();
    assert!(iface.udp_connect(v6, SocketAddrV6::new(PEER6, 53, 0, 0)));
    use msg_type::{DEST_UNREACHABLE, PARAMETER_PROBLEM, TIME_EXCEEDED};
    // Soft: network and host unreachable (also for the TOS), source route
    // failed, an unknown code, time exceeded; IPv6's no route, address
    // unreachable and time exceeded.
    let soft = [
        error4(DEST_UNREACHABLE, 0, 0),
        error4(DEST_UNREACHABLE, 1, 0),
        error4(DEST_UNREACHABLE, 5, 0),
        error4(DEST_UNREACHABLE, 11, 0),
        error4(DEST_UNREACHABLE, 12, 0),
        error4(DEST_UNREACHABLE, 16, 0),
        error4(TIME_EXCEEDED, 0, 0),
        error4(TIME_EXCEEDED, 1, 0),
        error6(icmp6::DEST_UNREACHABLE, 0, 0),
        error6(icmp6::DEST_UNREACHABLE, 3, 0),
        error6(icmp6::TIME_EXCEEDED, 0, 0),
    ];
    for frame in &soft {
        port.push_rx(frame);
    }
    let mut errors = Errors::default();
    poll(&mut iface, &mut port, &mut errors);
    assert_eq!(errors.got, [], "soft errors are not reported");
    let c = iface.counters();
    assert_eq!(c.get(Stat::IcmpInErrors) + c.get(Stat::Icmp6InErrors), 11);
    assert_eq!(c.get(Stat::IcmpErrorsToSockets), 0);
    // Hard: port and protocol unreachable, administratively prohibited,
    // fragmentation needed (Linux's default IP_PMTUDISC_WANT makes it
    // EMSGSIZE), parameter problem; IPv6's likewise.
    let hard = [
        (error4(DEST_UNREACHABLE, 3, 0), (v4, PeerError::Refused)),
        (error4(DEST_UNREACHABLE, 2, 0), (v4, PeerError::Unreachable)),
        (
            error4(DEST_UNREACHABLE, 13, 0),
            (v4, PeerError::Unreachable),
        ),
        (
            error4(DEST_UNREACHABLE, 4, 1400),
            (v4, PeerError::TooBig { mtu: 1400 }),
        ),
        (
            error4(PARAMETER_PROBLEM, 0, 0),
            (v4, PeerError::ParameterProblem),
        ),
        (
            error6(icmp6::DEST_UNREACHABLE, 4, 0),
            (v6, PeerError::Refused),
        ),
        (
            error6(icmp6::DEST_UNREACHABLE, 1, 0),
            (v6, PeerError::Unreachable),
        ),
        (
            error6(icmp6::PACKET_TOO_BIG, 0, 1400),
            (v6, PeerError::TooBig { mtu: 1400 }),
        ),
        (
            error6(icmp6::PARAMETER_PROBLEM, 0, 0),
            (v6, PeerError::ParameterProblem),
        ),
    ];
    for (frame, _) in &hard {
        port.push_rx(frame);
    }
    poll(&mut iface, &mut port, &mut errors);
    let expected: Vec<_> = hard.iter().map(|(_, reported)| *reported).collect();
    assert_eq!(errors.got, expected);
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn an_icmpv6_beyond_scope_unreachable_is_soft_as_in_linux() {
    // icmpv6_err_convert's table: code 2 (beyond the scope of the source
    // address, once "not a neighbour") is EHOSTUNREACH and not fatal, like
    // no route (0) and address unreachable (3); codes past the table are.
    let (mut iface, mut port) = stack6();
    let v6 = iface
        .udp_bind(
            SocketAddrV6::new(GLOBAL, 5000, 0, 0),
            BindOptions::default(),
        )
        .unwrap();
    assert!(iface.udp_connect(v6, SocketAddrV6::new(PEER6, 53, 0, 0)));
    port.push_rx(&error6(icmp6::DEST_UNREACHABLE, 2, 0));
    let mut errors = Errors::default();
    poll(&mut iface, &mut port, &mut errors);
    assert_eq!(errors.got, [], "beyond scope is soft");
    assert_eq!(iface.counters().get(Stat::Icmp6InErrors), 1);
    port.push_rx(&error6(icmp6::DEST_UNREACHABLE, 7, 0));
    poll(&mut iface, &mut port, &mut errors);
    assert_eq!(errors.got, [(v6, PeerError::Unreachable)], "past the table");
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn hard_errors_past_the_bursts_list_are_counted() {
    // More hard errors in one burst than the list holds until the burst's
    // end: the first SOCKET_ERRORS are handed over, the rest counted.
    let (mut iface, mut port) = stack6();
    let v4 = iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 5000), BindOptions::default())
        .unwrap();
    assert!(iface.udp_connect(v4, SocketAddrV4::new(PEER_IP, 53)));
    let extra = 3;
    for _ in 0..crate::iface::state::SOCKET_ERRORS + extra {
        port.push_rx(&error4(msg_type::DEST_UNREACHABLE, 3, 0));
    }
    let mut errors = Errors::default();
    poll(&mut iface, &mut port, &mut errors);
    assert_eq!(errors.got.len(), crate::iface::state::SOCKET_ERRORS);
    assert!(errors.got.iter().all(|e| *e == (v4, PeerError::Refused)));
    let c = iface.counters();
    assert_eq!(c.dropped(DropReason::IcmpSocketErrorOverflow), extra as u64);
    assert_eq!(port.buffers_in_use(), 0);
}
