//! Path MTU and ICMP errors for TCP: a "fragmentation needed" quoting a
//! segment in flight lowers the connection's MSS and what was lost goes
//! again at once at the new size; quotes naming no connection or no segment
//! in flight are dropped and counted; a destination unreachable aborts a
//! connect and is a soft error afterwards. IPv6's packet too big likewise.

use super::ipv6::{frame6, ip6_icmp, learn_peer, stack6, GLOBAL, PEER6};
use super::tcp_input::{tcp_frame, Peer, PEER_PORT};
use super::*;
use crate::tcp::{State, TcpError};
use crate::wire::icmpv4::CODE_FRAGMENTATION_NEEDED;
use crate::wire::icmpv6::msg_type as icmp6;
use crate::wire::ipv6::{next_header, Ipv6Packet};
use crate::wire::tcp::{flags, TcpPacket, TcpRepr};
use core::net::IpAddr;

/// The router that reports a smaller MTU on the way to the peer.
const ROUTER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 254);

/// A segment the stack sent: its header, payload and IP total length.
#[derive(Debug)]
struct Sent {
    repr: TcpRepr,
    payload: Vec<u8>,
    ip_len: usize,
    frame: Vec<u8>,
}

fn segments(frames: Vec<Vec<u8>>) -> Vec<Sent> {
    frames
        .into_iter()
        .filter_map(|frame| {
            let ip = Ipv4Packet::new_checked(&frame[14..]).ok()?;
            if ip.protocol() != protocol::TCP {
                return None;
            }
            let ip_len = usize::from(ip.total_len());
            let tcp = TcpPacket::new_checked(&frame[14 + ip.header_len()..14 + ip_len]).ok()?;
            let repr = TcpRepr::parse(&tcp).expect("our segments parse");
            let payload = tcp.payload().to_vec();
            Some(Sent {
                repr,
                payload,
                ip_len,
                frame,
            })
        })
        .collect()
}

/// `ROUTER > us: ICMP type/code` quoting the IP header and the first 28
/// bytes of the payload of `quoted` (a frame we sent), with `word` as the
/// second header word (the next-hop MTU for "fragmentation needed").
fn icmp_about(kind: u8, code: u8, word: u32, quoted: &[u8]) -> Vec<u8> {
    let quote = &quoted[14..14 + 20 + 28];
    let mut icmp = vec![0u8; 8 + quote.len()];
    icmp[0] = kind;
    icmp[1] = code;
    icmp[4..8].copy_from_slice(&word.to_be_bytes());
    icmp[8..].copy_from_slice(quote);
    Icmpv4Packet::new_unchecked(&mut icmp[..]).fill_checksum();
    ethernet(
        OUR_MAC,
        PEER_MAC,
        EtherType::Ipv4,
        &ipv4(ROUTER, OUR_IP, protocol::ICMP, &icmp),
    )
}

fn frag_needed(mtu: u16, quoted: &[u8]) -> Vec<u8> {
    let code = CODE_FRAGMENTATION_NEEDED;
    icmp_about(msg_type::DEST_UNREACHABLE, code, u32::from(mtu), quoted)
}

/// Writes `data` into each connection as room opens; records closes.
#[derive(Default)]
struct Writer {
    data: Vec<u8>,
    sent: usize,
    closed: Vec<Option<TcpError>>,
}

impl InlineHandler<MemBuf> for Writer {
    fn on_tcp<P: Port<Buf = MemBuf>>(
        &mut self,
        conn: ConnId,
        event: TcpEvent,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        if let TcpEvent::Closed(error) = event {
            return self.closed.push(error);
        }
        while self.sent < self.data.len() {
            match ctx.tcp_send(conn, &self.data[self.sent..]) {
                Ok(n) if n > 0 => self.sent += n,
                _ => break,
            }
        }
    }
}

/// Pushes `frame` to the stack and polls: the segments it sent.
fn exchange(peer: &mut Peer, frame: &[u8], writer: &mut Writer) -> Vec<Sent> {
    peer.port.push_rx(frame);
    peer.iface.poll(&mut peer.port, peer.now, writer);
    segments(peer.port.take_tx())
}

/// The peer completes the handshake; the stack writes 20,000 bytes and
/// sends what the peer's 8000-byte window takes: five full segments of
/// 1448 bytes (MSS 1460 less timestamps), 1500-byte packets, and a tail.
fn sending() -> (Peer, Writer, Vec<Sent>) {
    let mut peer = Peer::syn_received();
    let mut writer = Writer {
        data: (0..20_000u32).map(|i| (i % 251) as u8).collect(),
        ..Writer::default()
    };
    let ack = peer.repr(flags::ACK);
    let frame = tcp_frame(IpAddr::V4(PEER_IP), IpAddr::V4(OUR_IP), &ack, &[]);
    let out = exchange(&mut peer, &frame, &mut writer);
    assert_eq!(peer.state(), State::Established);
    let sizes: Vec<usize> = out.iter().map(|s| s.payload.len()).collect();
    assert_eq!(sizes, [1448, 1448, 1448, 1448, 1448, 760]);
    assert!(out[..5].iter().all(|s| s.ip_len == 1500));
    assert_eq!(out[0].repr.seq, peer.iss.wrapping_add(1));
    (peer, writer, out)
}

fn mss(peer: &Peer) -> u16 {
    peer.iface.tcp_connections()[0].stats.mss
}

#[test]
fn a_fragmentation_needed_lowers_the_mss_and_the_lost_segment_goes_again_at_once() {
    let (mut peer, mut writer, flight) = sending();
    // ROUTER > us: ICMP 3/4 mtu 1400, quoting the first full segment.
    let icmp = frag_needed(1400, &flight[0].frame);
    let out = exchange(&mut peer, &icmp, &mut writer);
    let c = peer.iface.counters();
    assert_eq!(c.get(Stat::TcpIcmpTooBigs), 1);
    assert_eq!(c.get(Stat::TcpMssLowered), 1);
    assert_eq!(c.get(Stat::TcpRetransTimeouts), 0);
    assert_eq!(c.total_dropped(), 0);
    // 1400 less 40 bytes of headers and 12 of timestamps.
    assert_eq!(mss(&peer), 1348);
    // At the same instant, no timeout: everything from SND.UNA again, in
    // segments that fit 1400 bytes, the window's worth.
    let first = &out[0];
    assert_eq!(first.repr.seq, flight[0].repr.seq);
    assert_eq!(first.payload, writer.data[..1348]);
    let sizes: Vec<usize> = out.iter().map(|s| s.payload.len()).collect();
    assert_eq!(sizes, [1348, 1348, 1348, 1348, 1348, 1260]);
    assert!(out.iter().all(|s| s.ip_len <= 1400), "{out:?}");
    // The peer takes them all; new data leaves at the new size too.
    let mut ack = peer.repr(flags::ACK);
    ack.ack = peer.iss.wrapping_add(1 + 8000);
    let frame = tcp_frame(IpAddr::V4(PEER_IP), IpAddr::V4(OUR_IP), &ack, &[]);
    let out = exchange(&mut peer, &frame, &mut writer);
    assert!(!out.is_empty());
    assert_eq!(out[0].repr.seq, peer.iss.wrapping_add(1 + 8000));
    assert_eq!(out[0].payload, writer.data[8000..8000 + 1348]);
    assert!(out.iter().all(|s| s.ip_len <= 1400), "{out:?}");
    // The path MTU is remembered for the peer.
    assert_eq!(
        peer.iface.core.path_mtu4(PEER_IP, 1500),
        1400,
        "recorded for new connections"
    );
}

#[test]
fn icmp_errors_quoting_nothing_in_flight_are_dropped_and_counted() {
    let (mut peer, mut writer, flight) = sending();
    let with_seq = |seq: u32| {
        let mut frame = flight[0].frame.clone();
        frame[14 + 20 + 4..14 + 20 + 8].copy_from_slice(&seq.to_be_bytes());
        frame
    };
    let iss = peer.iss;
    let mut other_port = flight[0].frame.clone();
    other_port[14 + 20 + 2..14 + 20 + 4].copy_from_slice(&(PEER_PORT + 1).to_be_bytes());
    let cases = [
        // Beyond SND.NXT (8000 bytes sent).
        (
            frag_needed(1400, &with_seq(iss.wrapping_add(1 + 8000))),
            DropReason::TcpIcmpOutOfWindow,
        ),
        // Before SND.UNA: the SYN, acknowledged.
        (
            frag_needed(1400, &with_seq(iss)),
            DropReason::TcpIcmpOutOfWindow,
        ),
        // Far outside the window.
        (
            frag_needed(1400, &with_seq(iss.wrapping_add(1 << 30))),
            DropReason::TcpIcmpOutOfWindow,
        ),
        // An MTU the quoted 1500-byte packet would have fitted.
        (
            frag_needed(1500, &flight[0].frame),
            DropReason::TcpIcmpOutOfWindow,
        ),
        // No connection to that port of the peer.
        (
            frag_needed(1400, &other_port),
            DropReason::TcpIcmpNoConnection,
        ),
    ];
    for (i, (icmp, reason)) in cases.iter().enumerate() {
        let before = peer.iface.counters().dropped(*reason);
        let out = exchange(&mut peer, icmp, &mut writer);
        assert!(out.is_empty(), "case {i}: {out:?}");
        assert_eq!(
            peer.iface.counters().dropped(*reason),
            before + 1,
            "case {i}"
        );
    }
    let c = peer.iface.counters();
    assert_eq!(c.get(Stat::TcpIcmpTooBigs), 0);
    assert_eq!(c.get(Stat::TcpMssLowered), 0);
    assert_eq!(mss(&peer), 1448);
    assert_eq!(peer.iface.core.path_mtu4(PEER_IP, 1500), 1500);
}

#[test]
fn a_fragmentation_needed_below_576_lowers_the_mss_to_536_only() {
    let (mut peer, mut writer, flight) = sending();
    // Old routers report 0; forged errors anything.
    let out = exchange(&mut peer, &frag_needed(0, &flight[1].frame), &mut writer);
    assert_eq!(mss(&peer), 536 - 12);
    assert!(out.iter().all(|s| s.ip_len <= 576), "{out:?}");
    assert_eq!(out[0].repr.seq, flight[0].repr.seq, "from SND.UNA");
}

#[test]
fn a_destination_unreachable_aborts_a_connect_and_is_soft_once_open() {
    for (code, error) in [
        (1, TcpError::Unreachable), // host unreachable
        (3, TcpError::Refused),     // port unreachable
    ] {
        let (mut iface, mut port) = stack_knowing_peer();
        let now = Instant::from_nanos(1_000_000);
        let conn = iface
            .tcp_connect(
                core::slice::from_mut(&mut port),
                now,
                SocketAddrV4::new(PEER_IP, 80),
            )
            .unwrap();
        let syn = segments(port.take_tx()).remove(0);
        assert_eq!(syn.repr.flags, flags::SYN);
        let mut writer = Writer::default();
        let icmp = icmp_about(msg_type::DEST_UNREACHABLE, code, 0, &syn.frame);
        port.push_rx(&icmp);
        iface.poll(&mut port, now, &mut writer);
        assert_eq!(iface.tcp_state(conn), None, "code {code}");
        assert_eq!(writer.closed, [Some(error)]);
        assert_eq!(iface.counters().get(Stat::TcpIcmpAborts), 1);
        assert!(
            segments(port.take_tx()).is_empty(),
            "no reset from SYN-SENT"
        );
    }
    // Once open, the same errors change nothing (RFC 1122 4.2.3.9).
    let (mut peer, mut writer, flight) = sending();
    for (kind, code) in [
        (msg_type::DEST_UNREACHABLE, 1),
        (msg_type::DEST_UNREACHABLE, 3),
        (msg_type::TIME_EXCEEDED, 0),
    ] {
        let out = exchange(
            &mut peer,
            &icmp_about(kind, code, 0, &flight[2].frame),
            &mut writer,
        );
        assert!(out.is_empty());
        assert_eq!(peer.state(), State::Established);
    }
    let c = peer.iface.counters();
    assert_eq!(c.get(Stat::TcpIcmpSoftErrors), 3);
    assert_eq!(c.get(Stat::TcpIcmpAborts), 0);
    assert!(writer.closed.is_empty());
}

/// The TCP segments among `frames` over IPv6 (no extension headers): their
/// headers, payload lengths and IPv6 packet lengths.
fn segments6(frames: Vec<Vec<u8>>) -> Vec<(TcpRepr, usize, usize)> {
    frames
        .iter()
        .filter_map(|frame| {
            let ip = Ipv6Packet::new_checked(&frame[14..]).ok()?;
            if frame[12..14] != [0x86, 0xdd] || ip.next_header() != next_header::TCP {
                return None;
            }
            let len = usize::from(ip.payload_len());
            let tcp = TcpPacket::new_checked(&frame[14 + 40..14 + 40 + len]).ok()?;
            let repr = TcpRepr::parse(&tcp).expect("our segments parse");
            Some((repr, tcp.payload().len(), 40 + len))
        })
        .collect()
}

#[test]
fn a_packet_too_big_lowers_an_ipv6_connection_to_the_new_mtu_at_once() {
    let (mut iface, mut port) = stack6();
    learn_peer(&mut iface, &mut port, PEER6, GLOBAL);
    let any: core::net::SocketAddr = "[::]:7".parse().unwrap();
    iface.tcp_listen(any, 8).unwrap();
    let now = Instant::from_nanos(1_000_000);
    let mut writer = Writer {
        data: vec![7; 20_000],
        ..Writer::default()
    };
    let (peer, ours) = (IpAddr::V6(PEER6), IpAddr::V6(GLOBAL));
    let mut exchange6 = |frame: &[u8], writer: &mut Writer| {
        port.push_rx(frame);
        iface.poll(&mut port, now, writer);
        segments6(port.take_tx())
    };
    // `< S 1000:1000(0) win 8000 <mss 1440>`, `> S.`, `< . ack`: then the
    // stack sends 1440-byte segments (1500-byte packets) into the window.
    let syn = TcpRepr {
        src_port: PEER_PORT,
        dst_port: 7,
        seq: 1000,
        flags: flags::SYN,
        window: 8000,
        options: crate::wire::tcp::TcpOptions {
            mss: Some(1440),
            ..Default::default()
        },
        ..TcpRepr::default()
    };
    let synack = exchange6(&tcp_frame(peer, ours, &syn, &[]), &mut writer)
        .remove(0)
        .0;
    let ack = TcpRepr {
        seq: 1001,
        ack: synack.seq.wrapping_add(1),
        flags: flags::ACK,
        options: Default::default(),
        ..syn
    };
    let flight = exchange6(&tcp_frame(peer, ours, &ack, &[]), &mut writer);
    let sizes: Vec<(usize, usize)> = flight.iter().map(|s| (s.1, s.2)).collect();
    assert_eq!(sizes[..5], [(1440, 1500); 5]);
    // A router: ICMPv6 packet too big, MTU 1280, quoting the first (its
    // header, rebuilt, and the start of its segment).
    let first = tcp_frame(ours, peer, &flight[0].0, &[0; 1440]);
    let mut message = vec![icmp6::PACKET_TOO_BIG, 0, 0, 0, 0, 0, 0x05, 0x00];
    message.extend_from_slice(&first[14..14 + 40 + 48]);
    let router: Ipv6Addr = "2001:db8::fe".parse().unwrap();
    let icmp = frame6(OUR_MAC, &ip6_icmp(router, GLOBAL, 64, &[], &message));
    let out = exchange6(&icmp, &mut writer);
    let c = iface.counters();
    assert_eq!(c.get(Stat::TcpIcmpTooBigs), 1);
    assert_eq!(c.get(Stat::TcpMssLowered), 1);
    assert_eq!(c.total_dropped(), 0);
    assert_eq!(out[0].0.seq, flight[0].0.seq, "SND.UNA again at once");
    assert!(out.iter().all(|s| s.1 <= 1220 && s.2 <= 1280), "{out:?}");
    assert_eq!(out[0].1, 1220);
    assert_eq!(iface.core.path_mtu6(PEER6, 1500), 1280);
}

/// The IP lengths and DF bits of the IPv4 frames `port` sent.
fn ip_lengths_and_df(port: &mut MemPort) -> Vec<(usize, bool)> {
    port.take_tx()
        .iter()
        .map(|f| {
            let ip = Ipv4Packet::new_checked(&f[14..]).unwrap();
            (usize::from(ip.total_len()), ip.dont_fragment())
        })
        .collect()
}

#[test]
fn a_fragmentation_needed_about_udp_lowers_what_udp_sends() {
    // UDP sets DF on what fits; a router's "fragmentation needed" about a
    // datagram teaches the path MTU, after which larger datagrams leave in
    // fragments that fit it (as Linux's IP_PMTUDISC_WANT) instead of being
    // lost on the path every time, and smaller ones keep DF.
    let (mut iface, mut port) = stack_knowing_peer();
    let socket = iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 5000), BindOptions::default())
        .unwrap();
    let to = SocketAddrV4::new(PEER_IP, 9);
    iface
        .send_to(&mut port, Instant::ZERO, socket, to, &[7u8; 1400])
        .unwrap();
    let out = port.take_tx();
    assert!(Ipv4Packet::new_checked(&out[0][14..])
        .unwrap()
        .dont_fragment());
    port.push_rx(&frag_needed(1300, &out[0]));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    iface
        .send_to(&mut port, Instant::ZERO, socket, to, &[7u8; 1400])
        .unwrap();
    let sent = ip_lengths_and_df(&mut port);
    assert!(
        sent.len() == 2 && sent.iter().all(|&(len, df)| len <= 1300 && !df),
        "{sent:?}"
    );
    iface
        .send_to(&mut port, Instant::ZERO, socket, to, &[7u8; 1200])
        .unwrap();
    assert_eq!(ip_lengths_and_df(&mut port), [(1228, true)]);
    // A forged report of a tiny MTU teaches no less than 576 bytes.
    let out = {
        iface
            .send_to(&mut port, Instant::ZERO, socket, to, &[7u8; 1200])
            .unwrap();
        port.take_tx()
    };
    port.push_rx(&frag_needed(68, &out[0]));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    iface
        .send_to(&mut port, Instant::ZERO, socket, to, &[7u8; 500])
        .unwrap();
    assert_eq!(ip_lengths_and_df(&mut port), [(528, true)]);
}
