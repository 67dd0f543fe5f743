//! Hostile frames from the wire, one test per defect a barrage from a tap's
//! kernel side found: each sends the frames, asserts the drop by reason,
//! and that nothing (or only the right thing) went out.

use super::ipv6::{echo6, frame6, ip6_icmp, ip6_udp, stack6, GLOBAL, PEER6};
use super::*;
use core::net::SocketAddrV6;

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
