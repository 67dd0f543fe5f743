//! IPv6 legs over the in-memory port: relaying IPv6 to IPv6 (in place)
//! and IPv4 to IPv6 and back (`LcoreContext::forward` copies on a change of
//! family), echo over IPv6, and receiver reports to an IPv6 peer. The
//! peers are 2001:db8::2 (A) and ::3 (B); they answer Neighbor
//! Discovery.

use super::*;
use dpstack_stack::wire::icmpv6::{msg_type, Icmpv6Packet, NdpRepr};
use dpstack_stack::wire::ipv6::{next_header, pseudo_header, Ipv6Header, Ipv6Packet};
use std::net::{Ipv6Addr, SocketAddrV6};

pub(super) const RELAY6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
const A6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2);
const B6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 3);

/// A UDP datagram over IPv6 the relay sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Sent6 {
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub payload: Vec<u8>,
}

fn at6(ip: Ipv6Addr, port: u16) -> SocketAddr {
    SocketAddr::V6(SocketAddrV6::new(ip, port, 0, 0))
}

fn mac_of(ip: Ipv6Addr) -> Option<MacAddr> {
    match ip {
        A6 => Some(A_MAC),
        B6 => Some(B_MAC),
        _ => None,
    }
}

/// An IPv6 packet of `next` with `payload` (UDP or ICMPv6: checksum
/// filled) in an Ethernet frame to the relay.
fn frame6(src: Ipv6Addr, dst: Ipv6Addr, next: u8, payload: &[u8]) -> Vec<u8> {
    let mut packet = vec![0u8; 40 + payload.len()];
    Ipv6Packet::new_unchecked(&mut packet[..]).emit_header(&Ipv6Header {
        src,
        dst,
        next_header: next,
        payload_len: payload.len() as u16,
        hop_limit: 255,
    });
    packet[40..].copy_from_slice(payload);
    if next == next_header::ICMPV6 {
        Icmpv6Packet::new_unchecked(&mut packet[40..]).fill_checksum(src, dst);
    } else {
        let sum = pseudo_header(src, dst, next, payload.len() as u32);
        let check = !fold(accumulate(sum, &packet[40..]));
        packet[46..48].copy_from_slice(&check.to_be_bytes());
    }
    let mac = mac_of(src).unwrap_or(A_MAC);
    ethernet(RELAY_MAC, mac, EtherType::Ipv6, &packet)
}

use dpstack_stack::wire::checksum::{accumulate, fold};

fn ndp(repr: NdpRepr) -> Vec<u8> {
    let mut m = vec![0u8; repr.len()];
    repr.emit(&mut m);
    m
}

/// The peers solicit the relay's address with their MACs: it learns them.
pub(super) fn announce(net: &mut Net) {
    for (ip, mac) in [(A6, A_MAC), (B6, B_MAC)] {
        let ns = ndp(NdpRepr::Solicitation {
            target: RELAY6,
            source_mac: Some(mac),
        });
        net.port
            .push_rx(&frame6(ip, RELAY6, next_header::ICMPV6, &ns));
    }
    net.poll();
    assert_eq!(net.port.take_tx().len(), 2, "two advertisements");
}

/// A peer's advertisement answering the relay's solicitation for A6/B6.
pub(super) fn nd_reply(frame: &[u8]) -> Option<Vec<u8>> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    if eth.ethertype() != EtherType::Ipv6 {
        return None;
    }
    let ip = Ipv6Packet::new_checked(eth.payload()).ok()?;
    if ip.next_header() != next_header::ICMPV6
        || ip.payload().first() != Some(&msg_type::NEIGHBOR_SOLICITATION)
    {
        return None;
    }
    let NdpRepr::Solicitation { target, .. } = NdpRepr::parse(ip.payload()).ok()? else {
        return None;
    };
    let mac = mac_of(target)?;
    let na = ndp(NdpRepr::Advertisement {
        router: false,
        solicited: true,
        override_: true,
        target,
        target_mac: Some(mac),
    });
    Some(frame6(target, ip.src(), next_header::ICMPV6, &na))
}

/// The UDP datagram in a transmitted IPv6 frame, if it is one (checksum
/// checked).
pub(super) fn parse6(frame: &[u8]) -> Option<Sent6> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    if eth.ethertype() != EtherType::Ipv6 {
        return None;
    }
    let ip = Ipv6Packet::new_checked(eth.payload()).ok()?;
    if ip.next_header() != next_header::UDP {
        return None;
    }
    let udp = ip.payload();
    let sum = pseudo_header(ip.src(), ip.dst(), next_header::UDP, udp.len() as u32);
    assert_eq!(fold(accumulate(sum, udp)), 0xffff, "UDP checksum");
    assert_eq!(ip.traffic_class(), 46 << 2, "DSCP EF");
    assert_eq!(Some(eth.dst()), mac_of(ip.dst()), "to the peer's MAC");
    let port = |at: usize| u16::from_be_bytes([udp[at], udp[at + 1]]);
    Some(Sent6 {
        src: at6(ip.src(), port(0)),
        dst: at6(ip.dst(), port(2)),
        payload: udp[8..].to_vec(),
    })
}

impl Net {
    fn send6(&mut self, from: SocketAddr, to_port: u16, payload: &[u8]) {
        let SocketAddr::V6(from) = from else {
            panic!("an IPv6 source")
        };
        let mut udp = vec![0u8; 8 + payload.len()];
        udp[0..2].copy_from_slice(&from.port().to_be_bytes());
        udp[2..4].copy_from_slice(&to_port.to_be_bytes());
        let len = udp.len() as u16;
        udp[4..6].copy_from_slice(&len.to_be_bytes());
        udp[8..].copy_from_slice(payload);
        let frame = frame6(*from.ip(), RELAY6, next_header::UDP, &udp);
        assert!(self.port.push_rx(&frame));
    }
}

fn session(a: LegSpec, b: LegSpec) -> Vec<SessionSpec> {
    vec![SessionSpec {
        name: "call".into(),
        legs: [a, b],
        mux: false,
    }]
}

#[test]
fn ipv6_to_ipv6_is_relayed_in_place_both_ways() {
    let specs = session(
        LegSpec::new(LocalPort::Fixed(30000), None),
        LegSpec::new(LocalPort::Fixed(30002), Some(at6(B6, 6000))),
    );
    // A has no peer yet: `a-ip6` makes it IPv6.
    let mut specs = specs;
    specs[0].legs[0].ipv6 = true;
    let mut net = Net::build(&specs, options(), 4096, true);
    let a = at6(A6, 5004);
    for seq in 1..=5 {
        net.send6(a, 30000, &rtp(0x66, seq));
    }
    assert!(net.run().is_empty(), "nothing over IPv4");
    let sent: Vec<Sent6> = net.sent6.drain(..).collect();
    assert_eq!(sent.len(), 5);
    for (i, s) in sent.iter().enumerate() {
        assert_eq!((s.src, s.dst), (at6(RELAY6, 30002), at6(B6, 6000)));
        assert_eq!(s.payload, rtp(0x66, 1 + i as u16));
    }
    net.send6(at6(B6, 6000), 30002, &rtp(0x77, 1));
    net.send6(at6(A6, 5005), 30001, &sender_report(0x66));
    net.run();
    let sent: Vec<Sent6> = net.sent6.drain(..).collect();
    assert_eq!(
        sent.iter().map(|s| (s.src, s.dst)).collect::<Vec<_>>(),
        [(at6(RELAY6, 30000), a), (at6(RELAY6, 30003), at6(B6, 6001)),]
    );
    let counters = net.iface.counters();
    assert_eq!(counters.get(Stat::UdpForwardedInPlace), 7);
    assert_eq!(counters.get(Stat::UdpForwardCopies), 0);
    let report = net.report();
    assert!(report.contains("session call leg A peer [2001:db8::2]:5004 latched yes"));
    assert_eq!(
        field(&report, "session call leg A ssrc 0x00000066", "packets"),
        5
    );
    assert!(report.contains("relay drops: none"), "{report}");
}

#[test]
fn ipv4_and_ipv6_legs_are_bridged_by_copying() {
    // Leg A IPv4 (10.9.0.2), leg B IPv6 (signalled at [B6]:6000).
    let specs = session(
        LegSpec::new(LocalPort::Fixed(30000), None),
        LegSpec::new(LocalPort::Fixed(30002), Some(at6(B6, 6000))),
    );
    assert!(specs[0].legs[1].ipv6 && !specs[0].legs[0].ipv6);
    let mut net = Net::build(&specs, options(), 4096, true);
    let a = at(A_IP, 5004);
    for seq in 1..=3 {
        net.send(a, 30000, &rtp(0xa4, seq));
    }
    assert!(net.run().is_empty());
    let to_b: Vec<Sent6> = net.sent6.drain(..).collect();
    assert_eq!(to_b.len(), 3);
    assert!(to_b
        .iter()
        .all(|s| s.src == at6(RELAY6, 30002) && s.dst == at6(B6, 6000)));
    assert_eq!(to_b[2].payload, rtp(0xa4, 3));
    // And back: IPv6 in, IPv4 out, from leg A's IPv4 port.
    net.send6(at6(B6, 6000), 30002, &rtp(0xb6, 9));
    let to_a = net.run();
    assert!(net.sent6.is_empty());
    assert_eq!(to_a.len(), 1);
    assert_eq!((to_a[0].src, to_a[0].dst), (at(RELAY_IP, 30000), a));
    assert_eq!(to_a[0].payload, rtp(0xb6, 9));
    let counters = net.iface.counters();
    assert_eq!(
        counters.get(Stat::UdpForwardCopies),
        4,
        "a copy per family change"
    );
    assert_eq!(net.relay.snapshot().drops, [0; RelayDrop::ALL.len()]);
}

#[test]
fn echo_and_reports_work_over_ipv6() {
    let mut specs = session(
        LegSpec::new(LocalPort::Fixed(30000), None),
        LegSpec::new(LocalPort::Fixed(30002), None),
    );
    specs[0].legs[0].ipv6 = true;
    let opts = RelayOptions {
        echo: true,
        ..options()
    };
    let mut net = Net::build(&specs, opts, 4096, true);
    let a = at6(A6, 5004);
    net.send6(a, 30000, &rtp(5, 1));
    net.send6(a, 30000, &rtp(5, 2));
    net.run();
    let echoed: Vec<Sent6> = net.sent6.drain(..).collect();
    assert_eq!(echoed.len(), 2);
    assert!(echoed
        .iter()
        .all(|s| s.src == at6(RELAY6, 30000) && s.dst == a));
    while net.now < Instant::ZERO + Duration::from_secs(8) {
        net.advance(50);
        net.run();
    }
    let reports: Vec<Sent6> = net.sent6.drain(..).collect();
    assert!(!reports.is_empty());
    for r in &reports {
        assert_eq!((r.src, r.dst), (at6(RELAY6, 30001), at6(A6, 5005)));
        let compound = crate::rtp::Compound::new_checked(&r.payload).unwrap();
        let Some(crate::rtp::RtcpPacket::ReceiverReport(rr)) = compound.packets().next() else {
            panic!("an RR first");
        };
        assert_eq!(rr.report_blocks().next().map(|b| b.ssrc), Some(5));
    }
}

#[test]
fn an_ipv6_leg_needs_an_ipv6_address() {
    let specs = session(
        LegSpec::new(LocalPort::Fixed(30000), None),
        LegSpec::new(LocalPort::Fixed(30002), Some(at6(B6, 6000))),
    );
    let cidr = Ipv4Cidr::new(RELAY_IP, 24).unwrap();
    let mut iface: Interface<MemBuf> =
        Interface::new(InterfaceConfig::new(RELAY_MAC, cidr)).unwrap();
    let error = Relay::build(&mut iface, RELAY_IP, &specs, 30000..=39999, options()).unwrap_err();
    assert_eq!(
        error,
        StartError::NoAddress {
            session: "call".into(),
            ipv6: true
        }
    );
    assert!(error.to_string().contains("IPv6"), "{error}");
    // Nothing was left bound: the same ports bind again.
    let v4 = session(
        LegSpec::new(LocalPort::Fixed(30000), None),
        LegSpec::new(LocalPort::Fixed(30002), None),
    );
    assert!(Relay::build(&mut iface, RELAY_IP, &v4, 30000..=39999, options()).is_ok());
}
