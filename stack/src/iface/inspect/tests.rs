//! Two interfaces wired to each other: addresses, routes, neighbours,
//! sockets and echo requests seen through the inspection views.

use super::*;
use crate::counters::Stat;
use crate::iface::{ConfigError, DropDatagrams, Interface, InterfaceConfig, SendError};
use crate::port::memory::{MemBuf, MemPort, MemPortConfig};
use crate::port::{Buf, MacAddr, Port};
use crate::time::Instant;
use crate::wire::icmpv4::{msg_type, Icmpv4Packet};
use crate::wire::ipv4::protocol;
use crate::wire::ipv6::solicited_node;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

const MAC_A: MacAddr = MacAddr([2, 0, 0, 0, 0, 0xa]);
const MAC_B: MacAddr = MacAddr([2, 0, 0, 0, 0, 0xb]);

fn v4(s: &str) -> Prefix {
    s.parse().expect("a prefix")
}

/// Two interfaces whose ports are wired to each other.
struct Pair {
    a: Interface<MemBuf>,
    b: Interface<MemBuf>,
    pa: MemPort,
    pb: MemPort,
    now: Instant,
}

impl Pair {
    fn new() -> Pair {
        let node = |mac, ip: &str| {
            let Prefix::V4(cidr) = v4(ip) else {
                unreachable!()
            };
            let mut config = InterfaceConfig::new(mac, cidr);
            config.dad_transmits = 0;
            let port = MemPort::new(MemPortConfig {
                mac,
                ..MemPortConfig::default()
            });
            (Interface::new(config).expect("valid"), port)
        };
        let (a, pa) = node(MAC_A, "10.9.0.1/24");
        let (b, pb) = node(MAC_B, "10.9.0.2/24");
        Pair {
            a,
            b,
            pa,
            pb,
            now: Instant::ZERO,
        }
    }

    /// Polls both sides until the wire is quiet; returns the echo
    /// replies A received.
    fn settle(&mut self) -> Vec<EchoReply> {
        let mut replies = Vec::new();
        for _ in 0..6 {
            self.now = self.now + crate::time::Duration::from_millis(1);
            self.pa.deliver_to(&mut self.pb);
            self.b.poll(&mut self.pb, self.now, &mut DropDatagrams);
            self.pb.deliver_to(&mut self.pa);
            let frames = self.pa.take_rx_frames();
            replies.extend(frames.iter().filter_map(|f| parse_echo_reply(f)));
            for f in &frames {
                self.pa.push_rx(f);
            }
            self.a.poll(&mut self.pa, self.now, &mut DropDatagrams);
        }
        replies
    }

    fn ping(&mut self, dst: &str, seq: u16) -> Result<Vec<EchoReply>, SendError> {
        let dst: IpAddr = dst.parse().expect("an address");
        let ports = core::slice::from_mut(&mut self.pa);
        self.a
            .send_echo_request(ports, self.now, dst, (0x77, seq), &[0x5a; 56])?;
        Ok(self.settle())
    }
}

trait TakeRx {
    fn take_rx_frames(&mut self) -> Vec<Vec<u8>>;
}

impl TakeRx for MemPort {
    /// Everything waiting on the receive side, as bytes.
    fn take_rx_frames(&mut self) -> Vec<Vec<u8>> {
        let mut burst: arrayvec::ArrayVec<MemBuf, 64> = arrayvec::ArrayVec::new();
        self.rx_burst(&mut burst, 64);
        burst.iter().map(|b| b.data().to_vec()).collect()
    }
}

#[test]
fn an_echo_request_resolves_the_peer_and_its_reply_is_recognised() {
    let mut p = Pair::new();
    p.settle();
    let replies = p.ping("10.9.0.2", 1).expect("sent");
    let expected = EchoReply {
        src: "10.9.0.2".parse().expect("ip"),
        ident: 0x77,
        seq: 1,
        ttl: 64,
        len: 64,
    };
    assert_eq!(replies, [expected], "one reply, after ARP resolved B");
    assert_eq!(
        p.b.counter_snapshot().stats[Stat::IcmpInEchos as usize].1,
        1
    );
    let neighbors = p.a.neighbor_list();
    assert_eq!(neighbors.len(), 1);
    assert_eq!(
        (neighbors[0].ip, neighbors[0].mac),
        ("10.9.0.2".parse().expect("ip"), Some(MAC_B))
    );
    assert_eq!(
        p.ping("10.8.0.9", 2).expect_err("no route"),
        SendError::NoRoute
    );
}

#[test]
fn added_addresses_are_answered_and_removed_ones_are_not() {
    let mut p = Pair::new();
    p.settle();
    p.b.add_address(0, v4("10.9.0.3/24")).expect("added");
    assert_eq!(
        p.b.add_address(0, v4("10.9.0.3/24")),
        Err(ConfigError::DuplicateAddress(
            "10.9.0.3".parse().expect("ip")
        ))
    );
    assert_eq!(p.ping("10.9.0.3", 1).expect("sent").len(), 1);
    let listed: Vec<Prefix> = p.b.ip_addresses().iter().map(|a| a.prefix).collect();
    assert!(listed.contains(&v4("10.9.0.3/24")), "{listed:?}");
    let removed = p.b.remove_address(None, "10.9.0.3".parse().expect("ip"));
    assert_eq!(removed, Some(v4("10.9.0.3/24")));
    assert!(p.ping("10.9.0.3", 2).expect("queued").is_empty());
    assert_eq!(
        p.ping("10.9.0.2", 3).expect("sent").len(),
        1,
        "still answers"
    );
    let routes = p.b.route_list();
    assert_eq!(routes.len(), 1, "the shared /24 route stays: {routes:?}");
    assert_eq!(routes[0].source, "10.9.0.2".parse::<IpAddr>().expect("ip"));
}

#[test]
fn a_new_network_gets_a_connected_route_that_leaves_with_its_address() {
    let mut p = Pair::new();
    p.a.add_address(0, v4("192.0.2.1/28")).expect("added");
    p.a.add_route(
        "198.51.100.0/24".parse().expect("cidr"),
        "10.9.0.2".parse().expect("ip"),
    )
    .expect("route");
    let routes = p.a.route_list();
    let shown: Vec<String> = routes
        .iter()
        .map(|r| format!("{} {:?} {} {}", r.prefix, r.gateway, r.source, r.connected))
        .collect();
    assert_eq!(
        shown,
        [
            "10.9.0.0/24 None 10.9.0.1 true",
            "192.0.2.0/28 None 192.0.2.1 true",
            "198.51.100.0/24 Some(10.9.0.2) 10.9.0.1 false",
        ]
    );
    p.a.remove_address(Some(0), "192.0.2.1".parse().expect("ip"));
    let left: Vec<String> = (p.a.route_list().iter())
        .map(|r| r.prefix.to_string())
        .collect();
    assert_eq!(
        left,
        ["10.9.0.0/24", "198.51.100.0/24"],
        "its connected route left too"
    );
}

#[test]
fn ipv6_addresses_go_through_dad_and_join_their_group() {
    let mut p = Pair::new();
    p.a.core
        .shared
        .edit(|shared| shared.config.dad_transmits = 1);
    let ip: Ipv6Addr = "2001:db8::1".parse().expect("ip");
    p.a.add_address(0, "2001:db8::1/64".parse().expect("prefix"))
        .expect("added");
    let state = |iface: &Interface<MemBuf>| {
        iface
            .ip_addresses()
            .into_iter()
            .find(|a| a.prefix.addr() == IpAddr::V6(ip))
            .map(|a| a.state)
    };
    assert_eq!(state(&p.a), Some(AddressState::Tentative));
    assert!(p.a.core.shared.links[0].joined(solicited_node(ip)));
    for _ in 0..3 {
        p.now = p.now + crate::time::Duration::from_millis(600);
        p.settle();
    }
    assert_eq!(state(&p.a), Some(AddressState::Preferred));
    let routes = p.a.route_list();
    assert!(
        routes
            .iter()
            .any(|r| r.prefix == "2001:db8::/64".parse().expect("p")),
        "{routes:?}"
    );
    assert!(p.a.remove_address(Some(0), IpAddr::V6(ip)).is_some());
    assert_eq!(state(&p.a), None);
    assert!(!p.a.core.shared.links[0].joined(solicited_node(ip)));
    assert!(p.a.route_list().iter().all(|r| r.prefix.addr().is_ipv4()));
    assert_eq!(
        p.a.add_address(0, "ff02::1/64".parse().expect("prefix")),
        Err(ConfigError::BadAddress6("ff02::1".parse().expect("ip")))
    );
}

#[test]
fn echo_replies_are_parsed_from_frames_and_nothing_else_is() {
    let mut icmp = [0u8; 12];
    let mut packet = Icmpv4Packet::new_unchecked(&mut icmp[..]);
    packet.set_type_code(msg_type::ECHO_REPLY, 0);
    packet.set_rest(9, 4);
    let mut frame = vec![0u8; 14 + 20];
    frame[12..14].copy_from_slice(&[0x08, 0x00]);
    frame[14] = 0x45;
    frame[16..18].copy_from_slice(&32u16.to_be_bytes());
    frame[22] = 61;
    frame[23] = protocol::ICMP;
    frame[26..30].copy_from_slice(&[192, 0, 2, 7]);
    frame.extend_from_slice(&icmp);
    let reply = parse_echo_reply(&frame).expect("a reply");
    assert_eq!(
        (reply.ident, reply.seq, reply.ttl, reply.len),
        (9, 4, 61, 12)
    );
    assert_eq!(reply.src, "192.0.2.7".parse::<IpAddr>().expect("ip"));
    frame[34] = msg_type::ECHO_REQUEST;
    assert_eq!(parse_echo_reply(&frame), None, "a request is not a reply");
    assert_eq!(parse_echo_reply(&frame[..30]), None, "truncated");
    assert_eq!(parse_echo_reply(&[]), None);
}

mod listing;
