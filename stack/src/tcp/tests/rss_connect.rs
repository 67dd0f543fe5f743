//! The endpoint's RSS-aware connect, through an interface: with a known
//! placement (`TcpConfig::rss`) each connect is counted as placed on the
//! connecting lcore's queue or as missed (no fitting port was free);
//! without one, neither is counted.

use crate::counters::Stat;
use crate::iface::{Interface, InterfaceConfig};
use crate::port::memory::{MemBuf, MemPort, MemPortConfig};
use crate::port::MacAddr;
use crate::route::Ipv4Cidr;
use crate::rss::{RedirectionTable, RssPlacement, MICROSOFT_KEY};
use crate::time::Instant;
use core::net::{IpAddr, Ipv4Addr, SocketAddr};

const OUR_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);
const OUR_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const SERVER: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)), 443);
const RANGE: (u16, u16) = (40000, 40015);

/// Connects once per port of [`RANGE`] and returns the (placed, missed)
/// counts.
fn connect_the_whole_range(rss: Option<RssPlacement>) -> (u64, u64) {
    let mut config = InterfaceConfig::new(OUR_MAC, Ipv4Cidr::new(OUR_IP, 24).expect("cidr"));
    config.tcp.ephemeral_ports = RANGE;
    config.tcp.rss = rss;
    let mut iface: Interface<MemBuf> = Interface::new(config).expect("interface");
    let mut ports = [MemPort::new(MemPortConfig {
        mac: OUR_MAC,
        ..MemPortConfig::default()
    })];
    for i in RANGE.0..=RANGE.1 {
        iface
            .tcp_connect(&mut ports, Instant::ZERO, SERVER)
            .unwrap_or_else(|e| panic!("connect {i}: {e:?}"));
    }
    let counters = iface.counters();
    assert_eq!(counters.get(Stat::TcpActiveOpens), 16);
    (
        counters.get(Stat::TcpConnectRssPlaced),
        counters.get(Stat::TcpConnectRssMissed),
    )
}

#[test]
fn rss_connects_are_counted_as_placed_until_no_fitting_port_is_left() {
    let placement = RssPlacement::new(&MICROSOFT_KEY, RedirectionTable::round_robin(128, 4), 2);
    let returns = placement.towards(IpAddr::V4(OUR_IP), SERVER);
    let fitting = (RANGE.0..=RANGE.1).filter(|&p| returns.fits(p)).count() as u64;
    assert!(fitting > 0 && fitting < 16, "{fitting} of 16 ports fit");
    assert_eq!(
        connect_the_whole_range(Some(placement)),
        (fitting, 16 - fitting)
    );
}

#[test]
fn connects_without_a_placement_count_neither() {
    assert_eq!(connect_the_whole_range(None), (0, 0));
}
