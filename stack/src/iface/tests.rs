//! Whole-stack tests over the in-memory port: frames in, frames out, as a
//! packet trace, with a virtual clock.

use super::*;
use crate::counters::{DropReason, Stat};
use crate::port::memory::{MemBuf, MemPort, MemPortConfig};
use crate::wire::arp::{ArpOperation, ArpRepr};
use crate::wire::ethernet::{EtherType, EthernetFrame};
use crate::wire::icmpv4::{msg_type, Icmpv4Packet};
use crate::wire::ipv4::{protocol, Ipv4Header, Ipv4Packet};
use crate::wire::udp::UdpPacket;

const OUR_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);
const PEER_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 2]);
const OUR_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const PEER_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

fn stack() -> (Interface<MemBuf>, MemPort) {
    let mut config = InterfaceConfig::new(OUR_MAC, Ipv4Cidr::new(OUR_IP, 24).unwrap());
    config.mld = false; // no MLD reports among the frames (MLD has its own tests)
    let mut iface = Interface::new(config).unwrap();
    let mut port = MemPort::new(MemPortConfig {
        mac: OUR_MAC,
        ..MemPortConfig::default()
    });
    // The first poll announces our address; tests start after it.
    iface.poll(&mut port, Instant::ZERO, &mut DropDatagrams);
    port.take_tx();
    (iface, port)
}

/// [`stack`] with the peer's MAC learned (from its ARP request).
fn stack_knowing_peer() -> (Interface<MemBuf>, MemPort) {
    let (mut iface, mut port) = stack();
    port.push_rx(&arp(
        ArpOperation::Request,
        (PEER_MAC, PEER_IP),
        (MacAddr::default(), OUR_IP),
    ));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    port.take_tx();
    (iface, port)
}

fn ethernet(dst: MacAddr, src: MacAddr, ethertype: EtherType, payload: &[u8]) -> Vec<u8> {
    let mut frame = vec![0u8; 14 + payload.len()];
    let mut eth = EthernetFrame::new_unchecked(&mut frame[..]);
    eth.set_dst(dst);
    eth.set_src(src);
    eth.set_ethertype(ethertype);
    eth.payload_mut().copy_from_slice(payload);
    frame
}

fn ipv4(src: Ipv4Addr, dst: Ipv4Addr, proto: u8, payload: &[u8]) -> Vec<u8> {
    let mut packet = vec![0u8; 20 + payload.len()];
    packet[20..].copy_from_slice(payload);
    Ipv4Packet::new_unchecked(&mut packet[..]).emit_header(&Ipv4Header {
        src,
        dst,
        protocol: proto,
        payload_len: payload.len() as u16,
        ttl: 64,
        ident: 7,
        dont_fragment: true,
        tos: 0,
    });
    packet
}

fn udp(src: SocketAddrV4, dst: SocketAddrV4, payload: &[u8]) -> Vec<u8> {
    let mut bytes = vec![0u8; 8 + payload.len()];
    bytes[8..].copy_from_slice(payload);
    UdpPacket::new_unchecked(&mut bytes[..]).emit_header(
        (*src.ip(), src.port()),
        (*dst.ip(), dst.port()),
        payload.len() as u16,
    );
    bytes
}

fn udp_frame(src_port: u16, dst_port: u16, payload: &[u8]) -> Vec<u8> {
    let src = SocketAddrV4::new(PEER_IP, src_port);
    let dst = SocketAddrV4::new(OUR_IP, dst_port);
    let ip = ipv4(PEER_IP, OUR_IP, protocol::UDP, &udp(src, dst, payload));
    ethernet(OUR_MAC, PEER_MAC, EtherType::Ipv4, &ip)
}

fn echo_request(seq: u16, payload: &[u8]) -> Vec<u8> {
    let mut icmp = vec![0u8; 8 + payload.len()];
    let mut p = Icmpv4Packet::new_unchecked(&mut icmp[..]);
    p.set_type_code(msg_type::ECHO_REQUEST, 0);
    p.set_rest(0x4242, seq);
    p.payload_mut().copy_from_slice(payload);
    p.fill_checksum();
    ethernet(
        OUR_MAC,
        PEER_MAC,
        EtherType::Ipv4,
        &ipv4(PEER_IP, OUR_IP, protocol::ICMP, &icmp),
    )
}

fn arp(
    operation: ArpOperation,
    sender: (MacAddr, Ipv4Addr),
    target: (MacAddr, Ipv4Addr),
) -> Vec<u8> {
    let mut body = [0u8; 28];
    ArpRepr {
        operation,
        sender_mac: sender.0,
        sender_ip: sender.1,
        target_mac: target.0,
        target_ip: target.1,
    }
    .emit(&mut body);
    let dst = if operation == ArpOperation::Request {
        MacAddr::BROADCAST
    } else {
        target.0
    };
    ethernet(dst, sender.0, EtherType::Arp, &body)
}

/// Echoes every datagram back to its sender.
struct Echo;

impl InlineHandler<MemBuf> for Echo {
    fn on_datagrams<P: Port<Buf = MemBuf>>(
        &mut self,
        _: SocketId,
        batch: &mut Batch<MemBuf>,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        for datagram in batch.drain(..) {
            ctx.reply(datagram);
        }
    }
}

/// Forwards every datagram from socket `from` to `dst` (either family),
/// keeping each forward's result.
struct ForwardTo<A> {
    from: SocketId,
    dst: A,
    results: Vec<Result<(), SendError>>,
}

impl<A> ForwardTo<A> {
    fn new(from: SocketId, dst: A) -> Self {
        ForwardTo {
            from,
            dst,
            results: Vec::new(),
        }
    }
}

impl<A: Into<SocketAddr> + Copy> InlineHandler<MemBuf> for ForwardTo<A> {
    fn on_datagrams<P: Port<Buf = MemBuf>>(
        &mut self,
        _: SocketId,
        batch: &mut Batch<MemBuf>,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        for datagram in batch.drain(..) {
            self.results
                .push(ctx.forward(datagram, self.from, self.dst));
        }
    }
}

/// Records what each socket got.
#[derive(Default)]
struct Recorder {
    calls: Vec<(SocketId, Vec<Vec<u8>>)>,
}

impl InlineHandler<MemBuf> for Recorder {
    fn on_datagrams<P: Port<Buf = MemBuf>>(
        &mut self,
        socket: SocketId,
        batch: &mut Batch<MemBuf>,
        _: &mut LcoreContext<'_, P>,
    ) {
        self.calls
            .push((socket, batch.iter().map(|d| d.payload().to_vec()).collect()));
    }
}

/// Records the ICMP errors connected sockets were told of.
#[derive(Default)]
struct Errors {
    got: Vec<(SocketId, crate::udp::PeerError)>,
}

impl InlineHandler<MemBuf> for Errors {
    fn on_error<P: Port<Buf = MemBuf>>(
        &mut self,
        socket: SocketId,
        error: crate::udp::PeerError,
        _: &mut LcoreContext<'_, P>,
    ) {
        self.got.push((socket, error));
    }
}

fn poll<H: InlineHandler<MemBuf>>(
    iface: &mut Interface<MemBuf>,
    port: &mut MemPort,
    handler: &mut H,
) {
    iface.poll(port, Instant::from_nanos(1_000_000), handler);
}

#[test]
fn the_first_poll_announces_our_address() {
    let mut config = InterfaceConfig::new(OUR_MAC, Ipv4Cidr::new(OUR_IP, 24).unwrap());
    config.mld = false; // no MLD reports among the frames (MLD has its own tests)
    let mut iface: Interface<MemBuf> = Interface::new(config).unwrap();
    let mut port = MemPort::new(MemPortConfig::default());
    iface.poll(&mut port, Instant::ZERO, &mut DropDatagrams);
    let out = port.take_tx();
    assert_eq!(out.len(), 2, "a gratuitous ARP, and DAD for the link-local");
    let garp = ArpRepr::parse(&out[0][14..]).unwrap();
    assert_eq!((garp.sender_ip, garp.target_ip), (OUR_IP, OUR_IP));
    assert!(EthernetFrame::new_checked(&out[0][..])
        .unwrap()
        .dst()
        .is_broadcast());
    assert_eq!(&out[1][12..14], &[0x86, 0xdd]);
}

#[test]
fn arp_requests_for_us_are_answered_and_teach_us_the_sender() {
    let (mut iface, mut port) = stack();
    port.push_rx(&arp(
        ArpOperation::Request,
        (PEER_MAC, PEER_IP),
        (MacAddr::default(), OUR_IP),
    ));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    let out = port.take_tx();
    assert_eq!(out.len(), 1);
    let eth = EthernetFrame::new_checked(&out[0][..]).unwrap();
    assert_eq!(
        (eth.dst(), eth.src(), eth.ethertype()),
        (PEER_MAC, OUR_MAC, EtherType::Arp)
    );
    let reply = ArpRepr::parse(eth.payload()).unwrap();
    assert_eq!(
        reply,
        ArpRepr {
            operation: ArpOperation::Reply,
            sender_mac: OUR_MAC,
            sender_ip: OUR_IP,
            target_mac: PEER_MAC,
            target_ip: PEER_IP,
        }
    );
    assert_eq!(iface.neighbor(PEER_IP), Some(PEER_MAC));
    assert_eq!(iface.counters().get(Stat::ArpOutReplies), 1);
}

#[test]
fn arp_requests_for_others_are_counted_and_ignored() {
    let (mut iface, mut port) = stack();
    let other = Ipv4Addr::new(10, 0, 0, 77);
    port.push_rx(&arp(
        ArpOperation::Request,
        (PEER_MAC, PEER_IP),
        (MacAddr::default(), other),
    ));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert!(port.take_tx().is_empty());
    assert_eq!(iface.counters().dropped(DropReason::ArpNotForUs), 1);
    assert_eq!(
        iface.neighbor(PEER_IP),
        None,
        "not learned: it was not for us"
    );
}

#[test]
fn ping_gets_an_echo_reply() {
    let (mut iface, mut port) = stack();
    // Whatever the request's TTL, 0 included: a host does not discard a
    // datagram for a TTL under 2 (RFC 1122 3.2.1.7); the reply has ours.
    let mut request = echo_request(9, b"ping payload");
    let mut ip = Ipv4Packet::new_unchecked(&mut request[14..]);
    ip.set_ttl(0);
    ip.fill_checksum();
    port.push_rx(&request);
    poll(&mut iface, &mut port, &mut DropDatagrams);
    let out = port.take_tx();
    assert_eq!(out.len(), 1);
    let eth = EthernetFrame::new_checked(&out[0][..]).unwrap();
    assert_eq!((eth.dst(), eth.src()), (PEER_MAC, OUR_MAC));
    let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
    assert!(ip.verify_checksum());
    assert_eq!((ip.src(), ip.dst(), ip.ttl()), (OUR_IP, PEER_IP, 64));
    let icmp = Icmpv4Packet::new_checked(ip.payload()).unwrap();
    assert!(icmp.verify_checksum());
    assert_eq!(
        (icmp.msg_type(), icmp.echo_ident(), icmp.echo_seq()),
        (msg_type::ECHO_REPLY, 0x4242, 9)
    );
    assert_eq!(icmp.payload(), b"ping payload");
    assert_eq!(
        port.buffers_in_use(),
        0,
        "the request's buffer became the reply"
    );
}

#[test]
fn udp_echo_in_inline_mode_replies_from_the_same_buffer() {
    let (mut iface, mut port) = stack();
    iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 7), BindOptions::default())
        .unwrap();
    port.push_rx(&udp_frame(40000, 7, b"hello"));
    poll(&mut iface, &mut port, &mut Echo);
    let out = port.take_tx();
    assert_eq!(out.len(), 1);
    let eth = EthernetFrame::new_checked(&out[0][..]).unwrap();
    assert_eq!(eth.dst(), PEER_MAC);
    let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
    assert!(ip.verify_checksum());
    assert_eq!((ip.src(), ip.dst()), (OUR_IP, PEER_IP));
    let udp = UdpPacket::new_checked(ip.payload()).unwrap();
    assert!(crate::wire::udp::checksum_holds_v4(&udp, OUR_IP, PEER_IP));
    assert_eq!((udp.src_port(), udp.dst_port()), (7, 40000));
    assert_eq!(udp.payload(), b"hello");
    assert_eq!(iface.counters().get(Stat::UdpInDatagrams), 1);
    assert_eq!(iface.counters().get(Stat::UdpOutDatagrams), 1);
}

#[test]
fn an_echo_resets_ttl_and_sets_df_with_a_correct_header_checksum() {
    let (mut iface, mut port) = stack();
    iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 7), BindOptions::default())
        .unwrap();
    for (ttl, flags) in [(3u8, 0x00u8), (255, 0x00), (1, 0x40)] {
        let mut frame = udp_frame(40000, 7, b"ttl");
        frame[14 + 6] = flags;
        frame[14 + 8] = ttl;
        Ipv4Packet::new_unchecked(&mut frame[14..]).fill_checksum();
        port.push_rx(&frame);
        poll(&mut iface, &mut port, &mut Echo);
        let out = port.take_tx();
        assert_eq!(out.len(), 1, "ttl {ttl}");
        let ip = Ipv4Packet::new_checked(&out[0][14..]).unwrap();
        assert!(ip.verify_checksum(), "ttl {ttl} flags {flags:#x}");
        assert_eq!((ip.ttl(), out[0][14 + 6]), (64, 0x40));
    }
}

/// Records each datagram's addresses as the handler sees them.
#[derive(Default)]
struct Addresses(Vec<(core::net::SocketAddr, core::net::SocketAddr, Vec<u8>)>);

impl InlineHandler<MemBuf> for Addresses {
    fn on_datagrams<P: Port<Buf = MemBuf>>(
        &mut self,
        _: SocketId,
        batch: &mut Batch<MemBuf>,
        _: &mut LcoreContext<'_, P>,
    ) {
        for d in batch.iter() {
            self.0.push((d.src(), d.dst(), d.payload().to_vec()));
        }
    }
}

#[test]
fn a_datagram_reports_its_addresses_with_or_without_ip_options() {
    let (mut iface, mut port) = stack();
    iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 7), BindOptions::default())
        .unwrap();
    port.push_rx(&udp_frame(40000, 7, b"plain"));
    // The same datagram with a 4-byte IPv4 option (NOPs): the general path.
    let plain = udp_frame(40001, 7, b"options");
    let mut with_options = plain[..34].to_vec();
    with_options.extend_from_slice(&[1, 1, 1, 1]);
    with_options.extend_from_slice(&plain[34..]);
    with_options[14] = 0x46;
    let total = u16::from_be_bytes([with_options[16], with_options[17]]) + 4;
    with_options[16..18].copy_from_slice(&total.to_be_bytes());
    Ipv4Packet::new_unchecked(&mut with_options[14..]).fill_checksum();
    port.push_rx(&with_options);
    let mut seen = Addresses::default();
    poll(&mut iface, &mut port, &mut seen);
    let ours = SocketAddrV4::new(OUR_IP, 7);
    assert_eq!(
        seen.0,
        [
            (
                SocketAddrV4::new(PEER_IP, 40000).into(),
                ours.into(),
                b"plain".to_vec()
            ),
            (
                SocketAddrV4::new(PEER_IP, 40001).into(),
                ours.into(),
                b"options".to_vec()
            ),
        ]
    );
}

#[test]
fn datagrams_arrive_in_order_with_consecutive_ones_batched_per_socket() {
    let (mut iface, mut port) = stack();
    let a = iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 1000), BindOptions::default())
        .unwrap();
    let b = iface
        .udp_bind(
            SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 2000),
            BindOptions::default(),
        )
        .unwrap();
    for (port_no, text) in [
        (2000, "b1"),
        (1000, "a1"),
        (2000, "b2"),
        (1000, "a2"),
        (1000, "a3"),
    ] {
        port.push_rx(&udp_frame(5555, port_no, text.as_bytes()));
    }
    let mut recorder = Recorder::default();
    poll(&mut iface, &mut port, &mut recorder);
    let calls: Vec<(SocketId, Vec<String>)> = recorder
        .calls
        .iter()
        .map(|(s, v)| {
            (
                *s,
                v.iter()
                    .map(|p| String::from_utf8(p.clone()).unwrap())
                    .collect(),
            )
        })
        .collect();
    let expected = [
        (b, vec!["b1"]),
        (a, vec!["a1"]),
        (b, vec!["b2"]),
        (a, vec!["a2", "a3"]),
    ];
    assert_eq!(calls.len(), expected.len());
    for ((socket, texts), (want_socket, want_texts)) in calls.iter().zip(expected) {
        assert_eq!(
            (socket, texts),
            (
                &want_socket,
                &want_texts.iter().map(|t| t.to_string()).collect::<Vec<_>>()
            )
        );
    }
    assert_eq!(port.buffers_in_use(), 0, "undrained datagrams are freed");
}

#[test]
fn a_closed_port_answers_icmp_port_unreachable_quoting_the_datagram() {
    let (mut iface, mut port) = stack();
    let request = udp_frame(40000, 9999, b"anyone?");
    port.push_rx(&request);
    poll(&mut iface, &mut port, &mut DropDatagrams);
    let out = port.take_tx();
    assert_eq!(out.len(), 1);
    let eth = EthernetFrame::new_checked(&out[0][..]).unwrap();
    assert_eq!(eth.dst(), PEER_MAC);
    let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
    assert!(ip.verify_checksum());
    assert_eq!(
        (ip.src(), ip.dst(), ip.protocol()),
        (OUR_IP, PEER_IP, protocol::ICMP)
    );
    let icmp = Icmpv4Packet::new_checked(ip.payload()).unwrap();
    assert!(icmp.verify_checksum());
    assert_eq!((icmp.msg_type(), icmp.code()), (3, 3));
    assert_eq!(
        icmp.payload(),
        &request[14..],
        "the whole offending datagram is quoted"
    );
    assert_eq!(iface.counters().dropped(DropReason::UdpNoSocket), 1);
}

#[test]
fn icmp_errors_are_rate_limited() {
    let (mut iface, mut port) = stack();
    for _ in 0..1200 {
        port.push_rx(&udp_frame(40000, 9999, b"x"));
    }
    let now = Instant::from_nanos(1_000_000);
    while port.rx_pending() > 0 {
        iface.poll(&mut port, now, &mut DropDatagrams);
    }
    assert_eq!(port.take_tx().len(), 1000, "the burst allowance");
    assert_eq!(iface.counters().dropped(DropReason::IcmpRateLimited), 200);
}

#[test]
fn malformed_frames_are_dropped_by_reason_and_the_stack_keeps_answering() {
    let (mut iface, mut port) = stack();
    let good_ping = echo_request(1, b"ok");
    let mut bad_ip_sum = good_ping.clone();
    bad_ip_sum[14 + 10] ^= 0xff;
    let mut bad_version = good_ping.clone();
    bad_version[14] = 0x65;
    let mut long_total = good_ping.clone();
    long_total[14 + 3] = 0xff;
    let mut bad_icmp_sum = good_ping.clone();
    bad_icmp_sum[14 + 20 + 2] ^= 0xff;
    let mut udp_bad_sum = udp_frame(1, 7, b"data");
    udp_bad_sum[14 + 20 + 6] ^= 0xff;
    let mut udp_bad_len = udp_frame(1, 7, b"data");
    udp_bad_len[14 + 20 + 5] = 3;
    let mut martian = echo_request(1, b"ok");
    martian[14 + 12..14 + 16].copy_from_slice(&[127, 0, 0, 1]);
    let mut fix = Ipv4Packet::new_unchecked(&mut martian[14..]);
    fix.fill_checksum();
    let not_ours = ethernet(
        MacAddr([2, 9, 9, 9, 9, 9]),
        PEER_MAC,
        EtherType::Ipv4,
        &good_ping[14..],
    );
    let other_ip = ethernet(
        OUR_MAC,
        PEER_MAC,
        EtherType::Ipv4,
        &ipv4(
            PEER_IP,
            Ipv4Addr::new(10, 0, 0, 50),
            protocol::ICMP,
            &good_ping[34..],
        ),
    );
    let mut fragment = echo_request(1, b"ok");
    fragment[14 + 6] = 0x20; // more fragments
    let mut fix = Ipv4Packet::new_unchecked(&mut fragment[14..]);
    fix.fill_checksum();
    let rows: Vec<(&str, Vec<u8>, DropReason)> = vec![
        ("runt", vec![1, 2, 3], DropReason::EthTruncated),
        ("other MAC", not_ours, DropReason::EthNotForUs),
        (
            "ipv6 version 0",
            ethernet(OUR_MAC, PEER_MAC, EtherType::Ipv6, &[0; 40]),
            DropReason::Ipv6Malformed,
        ),
        (
            "unknown ethertype",
            ethernet(OUR_MAC, PEER_MAC, EtherType::Unknown(0x88b5), &[0; 40]),
            DropReason::EthUnknownType,
        ),
        (
            "short arp",
            ethernet(OUR_MAC, PEER_MAC, EtherType::Arp, &[0; 10]),
            DropReason::ArpMalformed,
        ),
        (
            "short ipv4",
            ethernet(OUR_MAC, PEER_MAC, EtherType::Ipv4, &[0x45; 10]),
            DropReason::Ipv4Truncated,
        ),
        ("ip checksum", bad_ip_sum, DropReason::Ipv4BadChecksum),
        ("ip version", bad_version, DropReason::Ipv4Malformed),
        ("total length", long_total, DropReason::Ipv4Truncated),
        ("martian", martian, DropReason::Ipv4MartianSource),
        ("not our ip", other_ip, DropReason::Ipv4NotForUs),
        ("odd fragment", fragment, DropReason::Ipv4FragmentMalformed),
        ("icmp checksum", bad_icmp_sum, DropReason::IcmpMalformed),
        ("udp checksum", udp_bad_sum, DropReason::UdpBadChecksum),
        ("udp length", udp_bad_len, DropReason::UdpMalformed),
    ];
    iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 7), BindOptions::default())
        .unwrap();
    for (name, frame, reason) in rows {
        let before = iface.counters().dropped(reason);
        port.push_rx(&frame);
        poll(&mut iface, &mut port, &mut Echo);
        assert_eq!(iface.counters().dropped(reason), before + 1, "{name}");
        assert!(port.take_tx().is_empty(), "{name}: no reply");
    }
    port.push_rx(&good_ping);
    poll(&mut iface, &mut port, &mut Echo);
    assert_eq!(port.take_tx().len(), 1, "still answering");
    assert_eq!(port.buffers_in_use(), 0, "every dropped buffer was freed");
}

#[test]
fn fuzzed_frames_never_panic_and_every_frame_is_accounted_for() {
    let (mut iface, mut port) = stack();
    iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 7), BindOptions::default())
        .unwrap();
    let group = crate::wire::ipv6::solicited_node(ipv6::our_ll());
    let seeds = [
        echo_request(1, b"abc"),
        udp_frame(1, 7, b"xyz"),
        arp(
            ArpOperation::Request,
            (PEER_MAC, PEER_IP),
            (MacAddr::default(), OUR_IP),
        ),
        ipv6::frame6(
            OUR_MAC,
            &ipv6::ip6_icmp(
                ipv6::PEER_LL,
                ipv6::our_ll(),
                64,
                &[],
                &ipv6::echo6(1, b"six"),
            ),
        ),
        ipv6::frame6(
            crate::wire::ipv6::multicast_mac(group),
            &ipv6::ip6_icmp(
                ipv6::PEER_LL,
                group,
                255,
                &[],
                &ipv6::ns(ipv6::our_ll(), Some(PEER_MAC)),
            ),
        ),
    ];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut frames = 0u64;
    for round in 0..3000 {
        let mut frame = seeds[round % seeds.len()].clone();
        for _ in 0..(round % 4) + 1 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let at = (state as usize) % frame.len();
            frame[at] = (state >> 32) as u8;
        }
        frame.truncate(((state >> 40) as usize % (frame.len() + 1)).max(frame.len() / 2));
        port.push_rx(&frame);
        frames += 1;
        poll(&mut iface, &mut port, &mut Echo);
        port.take_tx();
    }
    // Every frame ends in exactly one receive outcome; a fragment's outcome
    // is reassembly, and a reassembled datagram has an outcome of its own.
    let c = iface.counters();
    let handled = [
        Stat::IpReasmReqds,
        Stat::ArpInRequests,
        Stat::ArpInReplies,
        Stat::ArpInGratuitous,
        Stat::IcmpInEchos,
        Stat::UdpInDatagrams,
        Stat::Icmp6InEchos,
        Stat::Icmp6InNeighborSolicits,
        Stat::Icmp6InNeighborAdvertisements,
    ]
    .iter()
    .map(|&s| c.get(s))
    .sum::<u64>();
    let not_receive_drops = [
        DropReason::Ipv4FragmentMalformed,
        DropReason::Ipv4ReassemblyFull,
        DropReason::Ipv4ReassemblyOverlap,
        DropReason::Ipv4ReassemblyDuplicate,
        DropReason::Ipv4ReassemblyTooBig,
        DropReason::Ipv4ReassemblyTimeout,
        DropReason::Ipv4ReassemblyEvictedShare,
        DropReason::Ipv4ReassemblyEvictedMemory,
        DropReason::IcmpRateLimited,
        DropReason::TxNoRoute,
        DropReason::TxNeighborUnresolved,
        DropReason::TxDeviceFull,
        DropReason::TxNoBuffer,
    ]
    .iter()
    .map(|&r| c.dropped(r))
    .sum::<u64>();
    assert_eq!(c.get(Stat::EthInFrames), frames);
    assert_eq!(
        handled + c.total_dropped() - not_receive_drops - c.get(Stat::IpReasmOKs),
        frames
    );
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn two_stacks_talk_over_a_wire() {
    let (mut server, mut server_port) = stack();
    server
        .udp_bind(SocketAddrV4::new(OUR_IP, 7), BindOptions::default())
        .unwrap();
    let client_config = InterfaceConfig::new(PEER_MAC, Ipv4Cidr::new(PEER_IP, 24).unwrap());
    let mut client: Interface<MemBuf> = Interface::new(client_config).unwrap();
    let mut client_port = MemPort::new(MemPortConfig {
        mac: PEER_MAC,
        ..MemPortConfig::default()
    });
    let socket = client
        .udp_bind(SocketAddrV4::new(PEER_IP, 0), BindOptions::default())
        .unwrap();
    client
        .send_to(
            &mut client_port,
            Instant::ZERO,
            socket,
            SocketAddrV4::new(OUR_IP, 7),
            b"over the wire",
        )
        .unwrap();
    let mut recorder = Recorder::default();
    for step in 0..10u64 {
        let now = Instant::from_nanos(step * 1_000_000);
        client_port.deliver_to(&mut server_port);
        server.poll(&mut server_port, now, &mut Echo);
        server_port.deliver_to(&mut client_port);
        client.poll(&mut client_port, now, &mut recorder);
    }
    assert_eq!(recorder.calls.len(), 1);
    assert_eq!(recorder.calls[0].0, socket);
    assert_eq!(recorder.calls[0].1, [b"over the wire".to_vec()]);
}

#[test]
fn a_fragmented_datagram_is_reassembled_and_echoed() {
    let (mut iface, mut port) = stack();
    iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 7), BindOptions::default())
        .unwrap();
    let message: Vec<u8> = (0..3000u32).map(|i| (i % 253) as u8).collect();
    let datagram = udp(
        SocketAddrV4::new(PEER_IP, 4000),
        SocketAddrV4::new(OUR_IP, 7),
        &message,
    );
    // Split the UDP datagram into IPv4 fragments of 1480 bytes, as a kernel
    // with a 1500-byte MTU does, and send them last first.
    let mut frames = Vec::new();
    for (i, chunk) in datagram.chunks(1480).enumerate() {
        let mut ip = ipv4(PEER_IP, OUR_IP, protocol::UDP, chunk);
        let more = (i + 1) * 1480 < datagram.len();
        let field = ((i * 1480 / 8) as u16) | if more { 0x2000 } else { 0 };
        ip[6..8].copy_from_slice(&field.to_be_bytes());
        Ipv4Packet::new_unchecked(&mut ip[..]).fill_checksum();
        frames.push(ethernet(OUR_MAC, PEER_MAC, EtherType::Ipv4, &ip));
    }
    for frame in frames.iter().rev() {
        port.push_rx(frame);
    }
    let mut recorder = Recorder::default();
    poll(&mut iface, &mut port, &mut recorder);
    assert_eq!(recorder.calls.len(), 1);
    assert_eq!(recorder.calls[0].1, std::slice::from_ref(&message));
    assert_eq!(iface.counters().get(Stat::IpReasmReqds), 3);
    // Echoed, the 3000-byte datagram leaves in MTU-sized fragments that a
    // second stack puts back together.
    for frame in frames.iter().rev() {
        port.push_rx(frame);
    }
    poll(&mut iface, &mut port, &mut Echo);
    let out = port.take_tx();
    assert_eq!(out.len(), 3);
    assert!(out.iter().all(|f| f.len() <= 14 + 1500));
    let (mut client, mut client_port) = {
        let config = InterfaceConfig::new(PEER_MAC, Ipv4Cidr::new(PEER_IP, 24).unwrap());
        let mut client: Interface<MemBuf> = Interface::new(config).unwrap();
        let mut client_port = MemPort::new(MemPortConfig {
            mac: PEER_MAC,
            ..MemPortConfig::default()
        });
        client.poll(&mut client_port, Instant::ZERO, &mut DropDatagrams);
        client_port.take_tx();
        (client, client_port)
    };
    client
        .udp_bind(SocketAddrV4::new(PEER_IP, 4000), BindOptions::default())
        .unwrap();
    for frame in &out {
        client_port.push_rx(frame);
    }
    let mut got = Recorder::default();
    poll(&mut client, &mut client_port, &mut got);
    assert_eq!(got.calls[0].1, [message]);
    assert_eq!(iface.counters().get(Stat::IpReasmOKs), 2);
    assert_eq!(iface.counters().get(Stat::IpFragCreates), 3);
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn an_incomplete_datagram_times_out_and_is_counted() {
    let (mut iface, mut port) = stack();
    let mut ip = ipv4(PEER_IP, OUR_IP, protocol::UDP, &[0u8; 1480]);
    ip[6..8].copy_from_slice(&0x2000u16.to_be_bytes()); // first fragment, more to come
    Ipv4Packet::new_unchecked(&mut ip[..]).fill_checksum();
    port.push_rx(&ethernet(OUR_MAC, PEER_MAC, EtherType::Ipv4, &ip));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert_eq!(port.buffers_in_use(), 1, "the reassembly buffer waits");
    iface.poll(
        &mut port,
        Instant::from_nanos(31_000_000_000),
        &mut DropDatagrams,
    );
    assert_eq!(
        iface.counters().dropped(DropReason::Ipv4ReassemblyTimeout),
        1
    );
    // RFC 1122 3.3.2: fragment zero came, so its source hears of the
    // timeout, the fragment quoted as it came (up to 576 bytes in all).
    let out = port.take_tx();
    assert_eq!(out.len(), 1);
    let eth = EthernetFrame::new_checked(&out[0][..]).unwrap();
    assert_eq!(eth.dst(), PEER_MAC);
    let error = Ipv4Packet::new_checked(eth.payload()).unwrap();
    assert!(error.verify_checksum());
    assert_eq!(
        (
            error.src(),
            error.dst(),
            error.protocol(),
            error.total_len()
        ),
        (OUR_IP, PEER_IP, protocol::ICMP, 576)
    );
    let icmp = Icmpv4Packet::new_checked(error.payload()).unwrap();
    assert!(icmp.verify_checksum());
    assert_eq!((icmp.msg_type(), icmp.code()), (11, 1));
    assert_eq!(icmp.payload(), &ip[..576 - 28]);
    assert_eq!(iface.counters().get(Stat::IcmpOutTimeExcds), 1);
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn arp_from_off_link_senders_is_not_learned() {
    let (mut iface, mut port) = stack();
    let far = Ipv4Addr::new(192, 0, 2, 9);
    port.push_rx(&arp(
        ArpOperation::Request,
        (PEER_MAC, far),
        (MacAddr::default(), OUR_IP),
    ));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    assert_eq!(iface.neighbor(far), None);
}

/// Uppercases each payload in place, then replies.
struct Shout;

impl InlineHandler<MemBuf> for Shout {
    fn on_datagrams<P: Port<Buf = MemBuf>>(
        &mut self,
        _: SocketId,
        batch: &mut Batch<MemBuf>,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        for mut datagram in batch.drain(..) {
            datagram.payload_mut().make_ascii_uppercase();
            ctx.reply(datagram);
        }
    }
}

fn parse_reply(frame: &[u8]) -> (Ipv4Addr, Ipv4Addr, u16, u16, Vec<u8>) {
    let eth = EthernetFrame::new_checked(frame).unwrap();
    let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
    assert!(ip.verify_checksum());
    let udp = UdpPacket::new_checked(ip.payload()).unwrap();
    assert!(
        crate::wire::udp::checksum_holds_v4(&udp, ip.src(), ip.dst()),
        "UDP checksum"
    );
    assert_eq!(
        usize::from(ip.total_len()),
        20 + usize::from(udp.len()),
        "lengths agree"
    );
    (
        ip.src(),
        ip.dst(),
        udp.src_port(),
        udp.dst_port(),
        udp.payload().to_vec(),
    )
}

#[test]
fn replies_to_broadcasts_come_from_our_address() {
    let (mut iface, mut port) = stack();
    iface
        .udp_bind(
            SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 67),
            BindOptions::default(),
        )
        .unwrap();
    let src = SocketAddrV4::new(PEER_IP, 68);
    for dst_ip in [Ipv4Addr::BROADCAST, Ipv4Addr::new(10, 0, 0, 255)] {
        let dst = SocketAddrV4::new(dst_ip, 67);
        let ip = ipv4(PEER_IP, dst_ip, protocol::UDP, &udp(src, dst, b"discover"));
        port.push_rx(&ethernet(
            MacAddr::BROADCAST,
            PEER_MAC,
            EtherType::Ipv4,
            &ip,
        ));
        poll(&mut iface, &mut port, &mut Echo);
        let out = port.take_tx();
        assert_eq!(out.len(), 1, "to {dst_ip}");
        assert_eq!(
            parse_reply(&out[0]),
            (OUR_IP, PEER_IP, 67, 68, b"discover".to_vec())
        );
    }
}

#[test]
fn a_reply_has_consistent_lengths_when_the_ip_packet_was_longer_than_udp() {
    let (mut iface, mut port) = stack();
    iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 7), BindOptions::default())
        .unwrap();
    let mut datagram = udp(
        SocketAddrV4::new(PEER_IP, 9),
        SocketAddrV4::new(OUR_IP, 7),
        b"abc",
    );
    datagram.extend_from_slice(&[0xee; 12]); // inside the IPv4 packet, after UDP
    let ip = ipv4(PEER_IP, OUR_IP, protocol::UDP, &datagram);
    port.push_rx(&ethernet(OUR_MAC, PEER_MAC, EtherType::Ipv4, &ip));
    poll(&mut iface, &mut port, &mut Echo);
    let out = port.take_tx();
    assert_eq!(
        parse_reply(&out[0]),
        (OUR_IP, PEER_IP, 7, 9, b"abc".to_vec())
    );
}

#[test]
fn a_payload_changed_in_place_is_replied_with_a_fresh_checksum() {
    let (mut iface, mut port) = stack();
    iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 7), BindOptions::default())
        .unwrap();
    port.push_rx(&udp_frame(40000, 7, b"quiet"));
    poll(&mut iface, &mut port, &mut Shout);
    let out = port.take_tx();
    assert_eq!(
        parse_reply(&out[0]),
        (OUR_IP, PEER_IP, 7, 40000, b"QUIET".to_vec())
    );
}

mod fanout;
mod links;

mod ipv6;
mod ipv6_frag;

mod dad;
mod mld;
mod multicast;

mod routes6;

mod ecn;
mod pmtu;
mod tcp;
mod tcp_input;

mod forward_template;
mod tos;

mod batch;

mod sending;

mod fast_gate;
mod hostile;

mod conn_limit;
mod pipelines;
mod reuseport_lcores;
mod soak;
mod syn_cookies;
mod tcp_memory;
mod transmit;
mod udp_errors;
