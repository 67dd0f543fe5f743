//! Duplicate address detection (RFC 4862 5.4): addresses stay tentative
//! (unused, unanswered) while solicitations from the unspecified address
//! ask the link, and are taken into use unless another node claims them.

use super::ipv6::{echo6, frame6, ip6_icmp, na, ns, parse6, GLOBAL, PEER6};
use super::*;
use crate::wire::icmpv6::NdpRepr;
use crate::wire::ipv6::{link_local_from_mac, multicast_mac, solicited_node};
use core::net::Ipv6Addr;

fn at(millis: u64) -> Instant {
    Instant::from_nanos(millis * 1_000_000)
}

/// A stack with a global address and DAD on (one solicitation, the
/// default), after its first poll; returns what that poll sent.
fn stack_under_dad() -> (Interface<MemBuf>, MemPort, Vec<Vec<u8>>) {
    let mut link = LinkConfig::new(OUR_MAC, Ipv4Cidr::new(OUR_IP, 24).unwrap());
    link.addresses6
        .push(crate::route::Ipv6Cidr::new(GLOBAL, 64).unwrap());
    let mut config = InterfaceConfig::with_links(vec![link]);
    config.mld = false; // no MLD reports among the frames (MLD has its own tests)
    let mut iface = Interface::new(config).unwrap();
    let mut port = MemPort::new(MemPortConfig {
        mac: OUR_MAC,
        ..MemPortConfig::default()
    });
    iface.poll(&mut port, Instant::ZERO, &mut DropDatagrams);
    let sent = port.take_tx();
    (iface, port, sent)
}

#[test]
fn addresses_are_probed_then_taken_into_use() {
    let (mut iface, mut port, sent) = stack_under_dad();
    let ll = link_local_from_mac(OUR_MAC);
    let probes: Vec<Ipv6Addr> = sent
        .iter()
        .filter(|f| f[12..14] == [0x86, 0xdd])
        .map(|f| {
            let (eth_dst, src, dst, hop, message) = parse6(f);
            let NdpRepr::Solicitation { target, source_mac } = NdpRepr::parse(&message).unwrap()
            else {
                panic!("not a solicitation");
            };
            assert_eq!(src, Ipv6Addr::UNSPECIFIED);
            assert_eq!((dst, eth_dst), (solicited_node(target), multicast_mac(dst)));
            assert_eq!((hop, source_mac), (255, None));
            target
        })
        .collect();
    assert_eq!(probes, [ll, GLOBAL]);
    assert!(iface.dad_pending());
    assert!(iface.addresses6(0).is_empty());
    // Tentative: a ping to it is not for us, a solicitation not answered.
    port.push_rx(&frame6(
        OUR_MAC,
        &ip6_icmp(PEER6, GLOBAL, 64, &[], &echo6(1, b"x")),
    ));
    let group = solicited_node(GLOBAL);
    port.push_rx(&frame6(
        multicast_mac(group),
        &ip6_icmp(PEER6, group, 255, &[], &ns(GLOBAL, Some(PEER_MAC))),
    ));
    iface.poll(&mut port, at(500), &mut DropDatagrams);
    assert!(port.take_tx().is_empty());
    assert_eq!(iface.counters().dropped(DropReason::Ipv6NotForUs), 1);
    // Nobody objected within a second: in use, answering.
    iface.poll(&mut port, at(1000), &mut DropDatagrams);
    assert!(!iface.dad_pending());
    let in_use: Vec<Ipv6Addr> = iface.addresses6(0).iter().map(|a| a.addr).collect();
    assert_eq!(in_use, [ll, GLOBAL]);
    port.push_rx(&frame6(
        OUR_MAC,
        &ip6_icmp(PEER6, GLOBAL, 64, &[], &echo6(2, b"x")),
    ));
    iface.poll(&mut port, at(1100), &mut DropDatagrams);
    assert_eq!(port.take_tx().len(), 1, "the echo reply");
    assert!(iface.duplicates6().is_empty());
}

#[test]
fn an_address_another_node_defends_or_probes_is_never_used() {
    let (mut iface, mut port, _) = stack_under_dad();
    let ll = link_local_from_mac(OUR_MAC);
    // The owner of GLOBAL defends it (an advertisement to all nodes) ...
    let all_nodes: Ipv6Addr = "ff02::1".parse().unwrap();
    let mut defend = na(GLOBAL, PEER_MAC);
    defend[4] = 0x20; // override only: unsolicited
    port.push_rx(&frame6(
        multicast_mac(all_nodes),
        &ip6_icmp(PEER6, all_nodes, 255, &[], &defend),
    ));
    // ... and another node runs its own detection for our link-local.
    let group = solicited_node(ll);
    port.push_rx(&frame6(
        multicast_mac(group),
        &ip6_icmp(Ipv6Addr::UNSPECIFIED, group, 255, &[], &ns(ll, None)),
    ));
    iface.poll(&mut port, at(200), &mut DropDatagrams);
    iface.poll(&mut port, at(1500), &mut DropDatagrams);
    assert!(!iface.dad_pending());
    let duplicates: Vec<Ipv6Addr> = iface.duplicates6().iter().map(|d| d.1.addr).collect();
    assert_eq!(duplicates, [GLOBAL, ll]);
    assert!(iface.addresses6(0).is_empty());
    assert_eq!(iface.counters().get(Stat::Ip6DadDuplicates), 2);
    // Never answered for.
    port.push_rx(&frame6(
        OUR_MAC,
        &ip6_icmp(PEER6, GLOBAL, 64, &[], &echo6(1, b"x")),
    ));
    iface.poll(&mut port, at(1600), &mut DropDatagrams);
    assert!(port.take_tx().is_empty());
}

#[test]
fn more_transmits_take_longer() {
    let mut link = LinkConfig::new(OUR_MAC, Ipv4Cidr::new(OUR_IP, 24).unwrap());
    link.addresses6
        .push(crate::route::Ipv6Cidr::new(GLOBAL, 64).unwrap());
    let mut config = InterfaceConfig::with_links(vec![link]);
    config.dad_transmits = 3;
    config.mld = false; // no MLD reports among the frames (MLD has its own tests)
    let mut iface: Interface<MemBuf> = Interface::new(config).unwrap();
    let mut port = MemPort::new(MemPortConfig::default());
    let mut solicitations = 0;
    for millis in (0..=3000).step_by(100) {
        iface.poll(&mut port, at(millis), &mut DropDatagrams);
        solicitations += port
            .take_tx()
            .iter()
            .filter(|f| f[12..14] == [0x86, 0xdd])
            .count();
        if millis == 2900 {
            assert!(iface.dad_pending());
        }
    }
    assert_eq!(solicitations, 6, "three for each of two addresses");
    assert!(!iface.dad_pending());
}

#[test]
fn our_own_solicitation_looped_back_is_not_a_duplicate() {
    let (mut iface, mut port, sent) = stack_under_dad();
    // Every DAD solicitation we sent comes back (a tap's kernel side with
    // our MAC does the same for our link-local address).
    for frame in &sent {
        port.push_rx(frame);
    }
    iface.poll(&mut port, at(100), &mut DropDatagrams);
    iface.poll(&mut port, at(1000), &mut DropDatagrams);
    assert!(iface.duplicates6().is_empty());
    assert_eq!(iface.addresses6(0).len(), 2, "both in use");
}
