//! The listings read the stack's own tables: routes nobody named to the
//! view, sockets bound by application threads, connections in every state.

use super::*;
use crate::iface::ListenError;
use crate::tcp::State;
use crate::wire::ethernet::{EtherType, EthernetFrame};
use crate::wire::ipv4::{Ipv4Header, Ipv4Packet};
use crate::wire::udp::UdpPacket;
use core::net::SocketAddrV4;

const A: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 2);

/// A UDP datagram from B to A's `port`, as a frame on the wire.
fn udp_frame_to_a(port: u16, payload: &[u8]) -> Vec<u8> {
    let mut udp = vec![0u8; 8 + payload.len()];
    udp[8..].copy_from_slice(payload);
    UdpPacket::new_unchecked(&mut udp[..]).emit_header((B, 9000), (A, port), payload.len() as u16);
    let mut ip = vec![0u8; 20 + udp.len()];
    ip[20..].copy_from_slice(&udp);
    Ipv4Packet::new_unchecked(&mut ip[..]).emit_header(&Ipv4Header {
        src: B,
        dst: A,
        protocol: protocol::UDP,
        payload_len: udp.len() as u16,
        ttl: 64,
        ident: 1,
        dont_fragment: true,
        tos: 0,
    });
    let mut frame = vec![0u8; 14 + ip.len()];
    let mut eth = EthernetFrame::new_unchecked(&mut frame[..]);
    eth.set_dst(MAC_A);
    eth.set_src(MAC_B);
    eth.set_ethertype(EtherType::Ipv4);
    eth.payload_mut().copy_from_slice(&ip);
    frame
}

#[test]
fn every_route_of_both_tables_is_listed_defaults_first() {
    let mut p = Pair::new();
    let cidr = |s: &str| s.parse().expect("cidr");
    p.a.add_route(cidr("198.51.100.0/24"), B).expect("route");
    p.a.add_route(cidr("0.0.0.0/0"), B).expect("default");
    p.a.add_link_route(cidr("203.0.113.0/24"), 0)
        .expect("on-link route");
    p.a.add_address(0, "2001:db8::1/64".parse().expect("prefix"))
        .expect("v6 address");
    let gw6: Ipv6Addr = "2001:db8::fe".parse().expect("ip");
    p.a.add_route6(cidr6("2001:db8:5::/48"), gw6, None)
        .expect("v6 route");
    p.a.add_route6(cidr6("::/0"), gw6, None)
        .expect("v6 default");
    let shown: Vec<String> =
        p.a.route_list()
            .iter()
            .map(|r| {
                let via = r
                    .gateway
                    .map_or("on-link".to_owned(), |g| format!("via {g}"));
                let kind = if r.connected { " connected" } else { "" };
                format!("{} {via} link {}{kind}", r.prefix, r.link)
            })
            .collect();
    assert_eq!(
        shown,
        [
            "0.0.0.0/0 via 10.9.0.2 link 0",
            "10.9.0.0/24 on-link link 0 connected",
            "198.51.100.0/24 via 10.9.0.2 link 0",
            "203.0.113.0/24 on-link link 0",
            "::/0 via 2001:db8::fe link 0",
            "2001:db8::/64 on-link link 0 connected",
            "2001:db8:5::/48 via 2001:db8::fe link 0",
        ]
    );
    assert!(p.a.remove_route(cidr("198.51.100.0/24")));
    assert_eq!(p.a.route_list().len(), shown.len() - 1);
}

fn cidr6(s: &str) -> crate::route::Ipv6Cidr {
    s.parse().expect("cidr")
}

#[test]
fn every_udp_socket_is_listed_with_its_queue_depth() {
    let mut p = Pair::new();
    let inline = p.a.udp_bind(SocketAddrV4::new(A, 5000), Default::default());
    let inline = inline.expect("bound");
    // An application thread binds a queue-mode socket; the test thread
    // plays the lcore meanwhile.
    let handle = p.a.handle(p.pa.pool(), 8);
    let app = std::thread::spawn(move || handle.udp_bind(SocketAddrV4::new(A, 6000)));
    while !app.is_finished() {
        p.now = p.now + crate::time::Duration::from_millis(1);
        p.a.poll(&mut p.pa, p.now, &mut DropDatagrams);
    }
    let queued_socket = app.join().expect("no panic").expect("bound");
    for _ in 0..3 {
        p.pa.push_rx(&udp_frame_to_a(6000, b"hello"));
    }
    p.pa.push_rx(&udp_frame_to_a(5000, b"inline"));
    p.a.poll(&mut p.pa, p.now, &mut DropDatagrams);
    let listed: Vec<(SocketAddr, bool, usize)> = (p.a.udp_sockets().iter())
        .map(|s| (s.local, s.queue_mode, s.queued))
        .collect();
    assert_eq!(
        listed,
        [
            (SocketAddr::from((A, 5000)), false, 0),
            (SocketAddr::from((A, 6000)), true, 3),
        ]
    );
    assert_eq!(p.a.udp_sockets()[0].id, inline);
    drop(queued_socket);
}

#[test]
fn every_tcp_connection_and_listener_is_listed_in_each_state() {
    let mut p = Pair::new();
    p.settle();
    p.ping("10.9.0.2", 1).expect("ARP resolved both ways");
    let listener = p.a.tcp_listen(SocketAddrV4::new(A, 7), 4).expect("listen");
    assert_eq!(
        p.a.tcp_listen(SocketAddrV4::new(A, 7), 4),
        Err(ListenError::AddrInUse)
    );
    let ports = core::slice::from_mut(&mut p.pb);
    p.b.tcp_connect(ports, p.now, SocketAddrV4::new(A, 7))
        .expect("SYN sent");
    // The SYN reaches A, the SYN-ACK does not reach B yet.
    p.pb.deliver_to(&mut p.pa);
    p.a.poll(&mut p.pa, p.now, &mut DropDatagrams);
    let states = |iface: &Interface<MemBuf>| -> Vec<State> {
        iface.tcp_connections().iter().map(|c| c.state).collect()
    };
    assert_eq!(states(&p.a), [State::SynReceived]);
    assert_eq!(states(&p.b), [State::SynSent]);
    let waiting = p.a.tcp_listeners();
    assert_eq!(waiting.len(), 1);
    assert_eq!(
        (waiting[0].local, waiting[0].backlog, waiting[0].handshakes),
        (SocketAddr::from((A, 7)), 4, 1)
    );
    p.settle();
    assert_eq!(states(&p.a), [State::Established]);
    assert_eq!(states(&p.b), [State::Established]);
    let conn = p.a.tcp_connections()[0];
    assert_eq!(conn.local, SocketAddr::from((A, 7)));
    assert_eq!(conn.remote, p.b.tcp_connections()[0].local);
    assert_eq!(p.a.tcp_listeners()[0].handshakes, 0);
    assert!(p.a.tcp_unlisten(listener));
    assert!(p.a.tcp_listeners().is_empty(), "a closed listener is gone");
    assert_eq!(states(&p.a), [State::Established], "its connection stays");
}
