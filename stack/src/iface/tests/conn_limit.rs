//! The stack-wide connection cap (`TcpConfig::max_connections`): at the
//! cap a SYN is dropped and counted and a connect fails with a typed
//! error; once a connection ends, both work again.

use super::tcp_input::{Peer, PORT};
use super::*;
use crate::tcp::TcpError;
use crate::wire::tcp::{flags, TcpOptions, TcpRepr};

fn capped_at_two() -> Peer {
    let mut config = InterfaceConfig::new(OUR_MAC, Ipv4Cidr::new(OUR_IP, 24).unwrap());
    config.tcp.max_connections = 2;
    let mut iface = Interface::new(config).unwrap();
    let mut port = MemPort::new(MemPortConfig {
        mac: OUR_MAC,
        ..MemPortConfig::default()
    });
    iface.poll(&mut port, Instant::ZERO, &mut DropDatagrams);
    port.push_rx(&arp(
        ArpOperation::Request,
        (PEER_MAC, PEER_IP),
        (MacAddr::default(), OUR_IP),
    ));
    iface.poll(&mut port, Instant::ZERO, &mut DropDatagrams);
    port.take_tx();
    iface
        .tcp_listen(SocketAddrV4::new(OUR_IP, PORT), 8)
        .unwrap();
    Peer::on(iface, port)
}

fn segment(from: u16, seq: u32, ack: u32, bits: u8) -> TcpRepr {
    TcpRepr {
        src_port: from,
        dst_port: PORT,
        seq,
        ack,
        flags: bits,
        window: 8000,
        options: TcpOptions::default(),
    }
}

#[test]
fn at_the_connection_cap_syns_are_dropped_and_connects_fail_until_one_ends() {
    let mut peer = capped_at_two();
    for from in [1, 2] {
        let out = peer.send_to(&segment(from, 100, 0, flags::SYN), &[], &mut DropDatagrams);
        assert_eq!(out.len(), 1, "port {from} gets a SYN-ACK");
    }
    let out = peer.send_to(&segment(3, 100, 0, flags::SYN), &[], &mut DropDatagrams);
    assert!(out.is_empty(), "a third SYN is dropped: {out:?}");
    let connect = peer.iface.tcp_connect(
        core::slice::from_mut(&mut peer.port),
        peer.now,
        SocketAddrV4::new(PEER_IP, 9),
    );
    assert_eq!(connect, Err(TcpError::ConnectionLimit));
    let counters = peer.iface.counters();
    assert_eq!(counters.dropped(DropReason::TcpConnLimit), 1);
    assert_eq!(counters.get(Stat::TcpConnLimitReached), 2);
    assert_eq!(peer.iface.tcp_connections().len(), 2);

    // Port 1's handshake is reset: room for one again.
    let from_port = |peer: &Peer, from: u16| {
        peer.iface
            .tcp_connections()
            .iter()
            .any(|c| c.remote.port() == from)
    };
    assert!(from_port(&peer, 1));
    let reset = segment(1, 101, 0, flags::RST);
    peer.send_to(&reset, &[], &mut DropDatagrams);
    assert_eq!(peer.iface.tcp_connections().len(), 1);
    let out = peer.send_to(&segment(4, 100, 0, flags::SYN), &[], &mut DropDatagrams);
    assert_eq!(out.len(), 1, "a SYN is taken again");
}
