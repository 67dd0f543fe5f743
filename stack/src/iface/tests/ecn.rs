//! ECN (RFC 3168) through the whole stack: the IP layer hands TCP each
//! segment's ECN field, from IPv4's TOS byte and IPv6's traffic class
//! alike, and writes the one TCP asks for on what it sends; a listener
//! agrees to ECN only on a SYN that asks for it and is not itself marked,
//! also when it answers with a SYN cookie.

use super::ipv6::{learn_peer, stack6, GLOBAL, PEER6};
use super::tcp::EchoTcp;
use super::tcp_input::tcp_frame;
use super::*;
use crate::wire::ipv6::{next_header, Ipv6Packet};
use crate::wire::tcp::{flags, TcpOptions, TcpPacket, TcpRepr};
use crate::wire::Ecn;
use core::net::IpAddr;

const PORT: u16 = 7;
const PEER_PORT: u16 = 40000;
const PEER_ISN: u32 = 1000;

/// `frame` (Ethernet, then IPv4 or IPv6) with `field` in its IP header's
/// ECN bits (the IPv4 header checksum kept right).
fn marked(mut frame: Vec<u8>, field: Ecn) -> Vec<u8> {
    let ip = &mut frame[14..];
    if ip[0] >> 4 == 4 {
        let mut packet = Ipv4Packet::new_unchecked(ip);
        let tos = packet.tos();
        packet.set_tos(tos & !3 | field as u8);
    } else {
        let mut packet = Ipv6Packet::new_unchecked(ip);
        let class = packet.traffic_class();
        packet.set_traffic_class(class & !3 | field as u8);
    }
    frame
}

/// The TCP segments the stack sent: each one's IP ECN field and header.
pub(super) fn sent_marked(port: &mut MemPort) -> Vec<(Ecn, TcpRepr)> {
    port.take_tx()
        .iter()
        .filter_map(|frame| {
            let ip = frame.get(14..)?;
            let (field, segment) = match ip.first()? >> 4 {
                4 => {
                    let packet = Ipv4Packet::new_checked(ip).ok()?;
                    let tcp = packet.protocol() == protocol::TCP;
                    (packet.tos(), tcp.then(|| packet.payload().to_vec())?)
                }
                _ => {
                    let packet = Ipv6Packet::new_checked(ip).ok()?;
                    let tcp = packet.next_header() == next_header::TCP;
                    (
                        packet.traffic_class(),
                        tcp.then(|| packet.payload().to_vec())?,
                    )
                }
            };
            let tcp = TcpPacket::new_checked(&segment[..]).ok()?;
            Some((Ecn::from_bits(field), TcpRepr::parse(&tcp).ok()?))
        })
        .collect()
}

/// A stack listening on `[::]:7` with a backlog of `backlog` handshakes
/// that knows the peer's MAC over both families.
fn listening(backlog: usize) -> (Interface<MemBuf>, MemPort) {
    let (mut iface, mut port) = stack6();
    port.push_rx(&arp(
        ArpOperation::Request,
        (PEER_MAC, PEER_IP),
        (MacAddr::default(), OUR_IP),
    ));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    port.take_tx();
    learn_peer(&mut iface, &mut port, PEER6, GLOBAL);
    iface
        .tcp_listen("[::]:7".parse::<core::net::SocketAddr>().unwrap(), backlog)
        .unwrap();
    (iface, port)
}

/// The peer's side of one connection, over one family.
struct Peer {
    iface: Interface<MemBuf>,
    port: MemPort,
    ends: (IpAddr, IpAddr),
    /// The peer's port.
    from: u16,
    /// The peer's next sequence number, and what it acknowledges.
    next: u32,
    ack: u32,
    /// The timestamps option the peer sends, if any (TSval, TSecr).
    timestamps: Option<(u32, u32)>,
    now: Instant,
}

impl Peer {
    fn new(ends: (IpAddr, IpAddr)) -> Peer {
        Peer::with_backlog(ends, 8)
    }

    /// [`Peer::new`], the listener's backlog `backlog`.
    fn with_backlog(ends: (IpAddr, IpAddr), backlog: usize) -> Peer {
        let (iface, port) = listening(backlog);
        Peer {
            iface,
            port,
            ends,
            from: PEER_PORT,
            next: PEER_ISN,
            ack: 0,
            timestamps: None,
            now: Instant::from_nanos(1_000_000),
        }
    }

    /// Sends a segment with `bits` and `payload` in an IP header marked
    /// `field`, 1 ms after the last; what the stack answered.
    fn send(&mut self, bits: u8, payload: &[u8], field: Ecn) -> Vec<(Ecn, TcpRepr)> {
        self.send_to(bits, payload, field, &mut DropDatagrams)
    }

    /// [`Peer::send`], with `handler` serving the stack's connections.
    fn send_to<H: InlineHandler<MemBuf>>(
        &mut self,
        bits: u8,
        payload: &[u8],
        field: Ecn,
        handler: &mut H,
    ) -> Vec<(Ecn, TcpRepr)> {
        let repr = TcpRepr {
            src_port: self.from,
            dst_port: PORT,
            seq: self.next,
            ack: self.ack,
            flags: bits,
            window: 8000,
            options: TcpOptions {
                mss: (bits & flags::SYN != 0).then_some(1460),
                timestamps: self.timestamps,
                ..TcpOptions::default()
            },
        };
        let frame = marked(tcp_frame(self.ends.0, self.ends.1, &repr, payload), field);
        self.port.push_rx(&frame);
        self.now = self.now + Duration::from_millis(1);
        self.iface.poll(&mut self.port, self.now, handler);
        self.next = self.next.wrapping_add(payload.len() as u32);
        self.next = self.next.wrapping_add(u32::from(bits & flags::SYN != 0));
        sent_marked(&mut self.port)
    }

    /// The handshake from a SYN with `bits` marked `field`: the SYN-ACK's
    /// flags.
    fn open(&mut self, bits: u8, field: Ecn) -> u8 {
        let out = self.send(bits, &[], field);
        let [(ecn, syn_ack)] = out.as_slice() else {
            panic!("one SYN-ACK: {out:?}");
        };
        assert_eq!(*ecn, Ecn::NotEct, "never ECT on a SYN-ACK");
        self.ack = syn_ack.seq.wrapping_add(1);
        assert!(self.send(flags::ACK, &[], Ecn::NotEct).is_empty());
        syn_ack.flags
    }
}

fn families() -> [(&'static str, (IpAddr, IpAddr)); 2] {
    [
        ("ipv4", (IpAddr::V4(PEER_IP), IpAddr::V4(OUR_IP))),
        ("ipv6", (IpAddr::V6(PEER6), IpAddr::V6(GLOBAL))),
    ]
}

const ASK: u8 = flags::SYN | flags::ECE | flags::CWR;

#[test]
fn the_ip_layer_hands_tcp_the_ecn_field_of_both_families() {
    for (family, ends) in families() {
        let mut peer = Peer::new(ends);
        let agreed = flags::SYN | flags::ACK | flags::ECE;
        assert_eq!(peer.open(ASK, Ecn::NotEct), agreed, "{family}");
        // Data marked CE: ACKed at once, with ECE.
        let out = peer.send(flags::ACK | flags::PSH, &[1; 100], Ecn::Ce);
        let acks: Vec<u8> = out.iter().map(|(_, s)| s.flags).collect();
        assert_eq!(acks, [flags::ACK | flags::ECE], "{family}: {out:?}");
        assert_eq!(out[0].0, Ecn::NotEct, "{family}: never ECT on a pure ACK");
        // CWR ends the echo.
        let bits = flags::ACK | flags::PSH | flags::CWR;
        let out = peer.send(bits, &[2; 100], Ecn::Ect0);
        let acks: Vec<u8> = out.iter().map(|(_, s)| s.flags).collect();
        assert_eq!(acks, [flags::ACK], "{family}: {out:?}");
        assert_eq!(peer.iface.counters().get(Stat::TcpInCE), 1, "{family}");
        assert_eq!(peer.iface.counters().total_dropped(), 0, "{family}");
    }
}

#[test]
fn a_marked_syn_or_one_not_asking_gets_no_ecn_and_marks_are_then_ignored() {
    for (family, ends) in families() {
        for (bits, field) in [
            (ASK, Ecn::Ect0),
            (ASK, Ecn::Ce),
            (flags::SYN | flags::ECE, Ecn::NotEct),
            (flags::SYN, Ecn::NotEct),
        ] {
            let row = format!("{family}: SYN flags {bits:#x} marked {field:?}");
            let mut peer = Peer::new(ends);
            assert_eq!(peer.open(bits, field), flags::SYN | flags::ACK, "{row}");
            // Two full segments: an ACK at once, without ECE.
            let out = peer.send(flags::ACK, &[1; 1460], Ecn::Ce);
            assert!(out.is_empty(), "{row}: {out:?}");
            let out = peer.send(flags::ACK, &[1; 1460], Ecn::Ce);
            let acks: Vec<u8> = out.iter().map(|(_, s)| s.flags).collect();
            assert_eq!(acks, [flags::ACK], "{row}: {out:?}");
            assert_eq!(peer.iface.counters().get(Stat::TcpInCE), 0, "{row}");
        }
    }
}

#[test]
fn new_data_leaves_ect0_and_an_echo_reduces_the_window_in_both_families() {
    let data = flags::ACK | flags::PSH;
    for (family, ends) in families() {
        let mut peer = Peer::new(ends);
        peer.open(ASK, Ecn::NotEct);
        // The stack echoes the peer's data: new data, ECT(0).
        let out = peer.send_to(data, &[5; 100], Ecn::NotEct, &mut EchoTcp);
        let [(field, echo)] = out.as_slice() else {
            panic!("{family}: one echo: {out:?}");
        };
        assert_eq!((*field, echo.flags), (Ecn::Ect0, data), "{family}");
        // The peer echoes congestion: the window is reduced, nothing sent.
        peer.ack = echo.seq.wrapping_add(100);
        let out = peer.send(flags::ACK | flags::ECE, &[], Ecn::NotEct);
        assert!(out.is_empty(), "{family}: {out:?}");
        let reductions = peer.iface.counters().get(Stat::TcpEceReductions);
        assert_eq!(reductions, 1, "{family}");
        // The next new data carries CWR.
        let out = peer.send_to(data, &[6; 100], Ecn::NotEct, &mut EchoTcp);
        let sent: Vec<(Ecn, u8)> = out.iter().map(|(f, s)| (*f, s.flags)).collect();
        assert_eq!(sent, [(Ecn::Ect0, data | flags::CWR)], "{family}");
        assert_eq!(peer.iface.counters().total_dropped(), 0, "{family}");
    }
}

#[test]
fn a_syn_cookie_carries_the_agreement_to_ecn() {
    for (family, ends) in families() {
        let mut peer = Peer::with_backlog(ends, 1);
        // A handshake from another port takes the backlog.
        peer.from = PEER_PORT + 1;
        assert_eq!(peer.send(ASK, &[], Ecn::NotEct).len(), 1, "{family}");
        // The next SYN gets a cookie, which agrees to ECN; the agreement
        // rides in the TSval, with the window scale and SACK bits.
        for (bits, agreed) in [(flags::SYN, false), (ASK, true)] {
            peer.from += 1;
            peer.next = PEER_ISN;
            peer.timestamps = Some((100, 0));
            let out = peer.send(bits, &[], Ecn::NotEct);
            let [(_, syn_ack)] = out.as_slice() else {
                panic!("{family}: one SYN-ACK: {out:?}");
            };
            let ece = if agreed { flags::ECE } else { 0 };
            assert_eq!(syn_ack.flags, flags::SYN | flags::ACK | ece, "{family}");
            let (tsval, _) = syn_ack.options.timestamps.expect("timestamps");
            peer.ack = syn_ack.seq.wrapping_add(1);
            peer.timestamps = Some((101, tsval));
            assert!(peer.send(flags::ACK, &[], Ecn::NotEct).is_empty());
            // Data marked CE is echoed only where ECN was agreed.
            let out = peer.send(flags::ACK, &[1; 1460], Ecn::Ce);
            let out = [out, peer.send(flags::ACK, &[2; 1460], Ecn::NotEct)].concat();
            let acks: Vec<u8> = out.iter().map(|(_, s)| s.flags).collect();
            let row = format!("{family}, SYN flags {bits:#x}");
            let want = if agreed {
                vec![flags::ACK | ece]
            } else {
                vec![flags::ACK]
            };
            assert_eq!(acks, want, "{row}: {out:?}");
        }
        let counters = peer.iface.counters();
        assert_eq!(counters.get(Stat::TcpSyncookiesRecv), 2, "{family}");
        assert_eq!(counters.get(Stat::TcpInCE), 1, "{family}");
        assert_eq!(counters.total_dropped(), 0, "{family}");
    }
}

#[test]
fn ce_marked_data_on_the_ack_returning_a_cookie_is_echoed() {
    for (family, ends) in families() {
        let mut peer = Peer::with_backlog(ends, 1);
        peer.from = PEER_PORT + 1;
        assert_eq!(peer.send(ASK, &[], Ecn::NotEct).len(), 1, "{family}");
        peer.from += 1;
        peer.next = PEER_ISN;
        peer.timestamps = Some((100, 0));
        let out = peer.send(ASK, &[], Ecn::NotEct);
        let [(_, syn_ack)] = out.as_slice() else {
            panic!("{family}: one SYN-ACK: {out:?}");
        };
        let (tsval, _) = syn_ack.options.timestamps.expect("timestamps");
        peer.ack = syn_ack.seq.wrapping_add(1);
        peer.timestamps = Some((101, tsval));
        // The handshake's last ACK carries data, marked CE on the way.
        let out = peer.send(flags::ACK | flags::PSH, &[1; 100], Ecn::Ce);
        let acks: Vec<u8> = out.iter().map(|(_, s)| s.flags).collect();
        assert_eq!(acks, [flags::ACK | flags::ECE], "{family}: {out:?}");
        let counters = peer.iface.counters();
        assert_eq!(counters.get(Stat::TcpSyncookiesRecv), 1, "{family}");
        assert_eq!(counters.get(Stat::TcpInCE), 1, "{family}");
    }
}
