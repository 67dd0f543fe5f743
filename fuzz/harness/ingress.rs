//! The whole ingress: frames decoded from the input go into one
//! `Interface` over the in-memory port, which has an IPv4 and an IPv6
//! address, UDP sockets (IPv4 and dual-stack IPv6), a TCP listener and an
//! established TCP connection with a known peer. Most frames are built
//! from templates with valid lengths and checksums (so they reach UDP, TCP,
//! ICMP, ND and reassembly), with fields from the input and an optional
//! corruption; some are raw bytes.
//!
//! Invariants:
//! - every frame is counted as received once (`EthInFrames`), and its fate
//!   is counted exactly once: one drop reason, or one outcome (delivered to
//!   a socket, ARP or echo answered, ND or RA taken), or it was taken by a
//!   stage that may end silently (a TCP segment accepted, an ICMP error
//!   handled, a fragment held for reassembly); a poll without frames
//!   counts no fate;
//! - every datagram counted as delivered reaches the handler or is counted
//!   as a full queue;
//! - every frame the stack sends parses, comes from our MAC, and has valid
//!   IP and transport checksums;
//! - once the clock has run past every timeout and the queues are drained,
//!   the pool holds as many buffers as before the first frame.

use super::input::{debug, Input};
use dpstack_stack::counters::{Counters, DropReason, Stat};
use dpstack_stack::iface::Interface;
use dpstack_stack::iface::{
    Batch, ConnId, InlineHandler, InterfaceConfig, LcoreContext, LinkConfig, TcpEvent,
};
use dpstack_stack::port::memory::{MemBuf, MemPort, MemPortConfig};
use dpstack_stack::port::{MacAddr, Port};
use dpstack_stack::route::{Ipv4Cidr, Ipv6Cidr};
use dpstack_stack::time::{Duration, Instant};
use dpstack_stack::udp::table::BindOptions;
use dpstack_stack::udp::SocketId;
use dpstack_stack::wire::arp::{ArpOperation, ArpRepr};
use dpstack_stack::wire::checksum;
use dpstack_stack::wire::ethernet::{EtherType, EthernetFrame};
use dpstack_stack::wire::icmpv4::Icmpv4Packet;
use dpstack_stack::wire::icmpv6::Icmpv6Packet;
use dpstack_stack::wire::ipv4::Ipv4Packet;
use dpstack_stack::wire::ipv6::{self, Ipv6Header, Ipv6Packet};
use dpstack_stack::wire::tcp::{flags, TcpOptions, TcpPacket, TcpRepr};
use dpstack_stack::wire::udp::UdpPacket;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

const OUR_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);
const PEER_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 2]);
const OUR4: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const PEER4: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
const OUR6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
const PEER6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2);
const PEER_LL: Ipv6Addr = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 2);
const UDP4_PORT: u16 = 9;
const UDP6_PORT: u16 = 5000;
const TCP_PORT: u16 = 7;
const PEER_PORT: u16 = 40_000;
const PEER_ISN: u32 = 0xffff_f000;

const SOURCES4: [Ipv4Addr; 8] = [
    PEER4,
    Ipv4Addr::new(10, 0, 0, 3),
    Ipv4Addr::new(10, 0, 0, 255),
    Ipv4Addr::UNSPECIFIED,
    Ipv4Addr::LOCALHOST,
    Ipv4Addr::new(224, 0, 0, 1),
    Ipv4Addr::new(192, 0, 2, 9),
    OUR4,
];
const DESTS4: [Ipv4Addr; 6] = [
    OUR4,
    OUR4,
    Ipv4Addr::new(10, 0, 0, 255),
    Ipv4Addr::BROADCAST,
    PEER4,
    Ipv4Addr::new(224, 0, 0, 1),
];
const SOURCES6: [Ipv6Addr; 6] = [
    PEER6,
    PEER_LL,
    Ipv6Addr::UNSPECIFIED,
    Ipv6Addr::LOCALHOST,
    Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1),
    OUR6,
];
const DESTS6: [Ipv6Addr; 6] = [
    OUR6,
    OUR6,
    Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0xff, 0xfe00, 1),
    Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1),
    Ipv6Addr::new(0xff02, 0, 0, 0, 0, 1, 0xff00, 1),
    PEER6,
];
const MACS: [MacAddr; 5] = [
    OUR_MAC,
    OUR_MAC,
    MacAddr::BROADCAST,
    MacAddr([0x33, 0x33, 0xff, 0, 0, 1]),
    MacAddr([2, 0, 0, 0, 0, 9]),
];

/// Drops that concern the frame received (the transmit-side ones, the
/// timeouts and full socket queues are about other packets).
fn is_rx_drop(reason: DropReason) -> bool {
    !matches!(
        reason,
        DropReason::TxNoRoute
            | DropReason::TxNeighborUnresolved
            | DropReason::TxOwnAddress
            | DropReason::TxPortZero
            | DropReason::TxDeviceFull
            | DropReason::TxNoBuffer
            | DropReason::TxTooBig
            | DropReason::TxNoSocket
            | DropReason::Ipv4ReassemblyTimeout
            | DropReason::Ipv6ReassemblyTimeout
            | DropReason::UdpQueueFull
            | DropReason::IcmpRateLimited
    )
}

/// A frame's outcomes other than a drop.
const OUTCOMES: [Stat; 10] = [
    Stat::ArpInReplies,
    Stat::ArpInRequests,
    Stat::ArpInGratuitous,
    Stat::IcmpInEchos,
    Stat::Icmp6InEchos,
    Stat::UdpInDatagrams,
    Stat::Icmp6InNeighborSolicits,
    Stat::Icmp6InNeighborAdvertisements,
    Stat::Icmp6InRouterAdvertisements,
    Stat::Icmp6InGroupMembQueries,
];

/// Stages a frame may end in without a counter of its own.
const SILENT_ENDS: [Stat; 5] = [
    Stat::TcpInSegs,
    Stat::IcmpInErrors,
    Stat::Icmp6InErrors,
    Stat::IpReasmReqds,
    Stat::Ip6ReasmReqds,
];

/// Every counter, for before/after comparisons.
#[derive(Clone, PartialEq)]
struct Snapshot {
    drops: Vec<u64>,
    stats: Vec<u64>,
}

impl Snapshot {
    fn of(counters: &Counters) -> Snapshot {
        Snapshot {
            drops: DropReason::ALL
                .iter()
                .map(|&r| counters.dropped(r))
                .collect(),
            stats: Stat::ALL.iter().map(|&s| counters.get(s)).collect(),
        }
    }

    fn stat(&self, stat: Stat) -> u64 {
        self.stats[stat as usize]
    }

    /// How many fates (rx drops and outcomes) happened since `before`,
    /// named.
    fn fates_since(&self, before: &Snapshot) -> Vec<String> {
        let mut fates = Vec::new();
        for &reason in DropReason::ALL {
            let n = self.drops[reason as usize] - before.drops[reason as usize];
            if is_rx_drop(reason) && n > 0 {
                fates.push(format!("{}x drop_{}", n, reason.name()));
            }
        }
        for stat in OUTCOMES {
            let n = self.stat(stat) - before.stat(stat);
            if n > 0 {
                fates.push(format!("{}x {}", n, stat.name()));
            }
        }
        fates
    }
}

/// The application: counts datagrams and echoes some; accepts and echoes
/// TCP.
#[derive(Default)]
struct App {
    datagrams: u64,
    accepted: Vec<ConnId>,
}

impl InlineHandler<MemBuf> for App {
    fn on_datagrams<P: Port<Buf = MemBuf>>(
        &mut self,
        _: SocketId,
        batch: &mut Batch<MemBuf>,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        self.datagrams += batch.len() as u64;
        for datagram in batch.drain(..) {
            if datagram.payload().first().is_some_and(|b| b & 1 == 1) {
                ctx.reply(datagram);
            }
        }
    }

    fn on_tcp<P: Port<Buf = MemBuf>>(
        &mut self,
        conn: ConnId,
        event: TcpEvent,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        match event {
            TcpEvent::Accepted(_) => self.accepted.push(conn),
            TcpEvent::Readable => {
                let mut buf = [0u8; 2048];
                if let Ok(n) = ctx.tcp_recv(conn, &mut buf) {
                    let _ = ctx.tcp_send(conn, &buf[..n / 2]);
                }
                if ctx.tcp_at_eof(conn) {
                    ctx.tcp_close(conn);
                }
            }
            _ => {}
        }
    }
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

/// An IPv4 packet; `frag` is the flags and fragment offset word.
struct V4<'a> {
    src: Ipv4Addr,
    dst: Ipv4Addr,
    protocol: u8,
    ttl: u8,
    ident: u16,
    frag: u16,
    options: &'a [u8],
}

fn ipv4(h: &V4<'_>, payload: &[u8]) -> Vec<u8> {
    let options = &h.options[..h.options.len().min(40) / 4 * 4];
    let header_len = 20 + options.len();
    let mut p = vec![0u8; header_len + payload.len()];
    p[0] = 0x40 | (header_len / 4) as u8;
    p[2..4].copy_from_slice(&((header_len + payload.len()) as u16).to_be_bytes());
    p[4..6].copy_from_slice(&h.ident.to_be_bytes());
    p[6..8].copy_from_slice(&h.frag.to_be_bytes());
    p[8] = h.ttl;
    p[9] = h.protocol;
    p[12..16].copy_from_slice(&h.src.octets());
    p[16..20].copy_from_slice(&h.dst.octets());
    p[20..header_len].copy_from_slice(options);
    p[header_len..].copy_from_slice(payload);
    Ipv4Packet::new_unchecked(&mut p[..]).fill_checksum();
    p
}

fn ipv6(src: Ipv6Addr, dst: Ipv6Addr, next: u8, hop: u8, payload: &[u8]) -> Vec<u8> {
    let mut p = vec![0u8; 40 + payload.len()];
    Ipv6Packet::new_unchecked(&mut p[..]).emit_header(&Ipv6Header {
        src,
        dst,
        next_header: next,
        payload_len: payload.len() as u16,
        hop_limit: hop,
    });
    p[40..].copy_from_slice(payload);
    p
}

/// The transport checksum over `segment` at `at` (2 bytes), with the
/// pseudo-header of either family.
fn fill_l4(src: IpAddr, dst: IpAddr, protocol: u8, segment: &mut [u8], at: usize, udp: bool) {
    segment[at..at + 2].fill(0);
    let pseudo = match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            checksum::pseudo_header_v4(s, d, protocol, segment.len() as u16)
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => ipv6::pseudo_header(s, d, protocol, segment.len() as u32),
        _ => 0,
    };
    let value = !checksum::fold(checksum::accumulate(pseudo, segment));
    let value = if udp && value == 0 { 0xffff } else { value };
    segment[at..at + 2].copy_from_slice(&value.to_be_bytes());
}

fn udp(src: IpAddr, dst: IpAddr, ports: (u16, u16), payload: &[u8], checksum: u8) -> Vec<u8> {
    let mut d = vec![0u8; 8 + payload.len()];
    d[0..2].copy_from_slice(&ports.0.to_be_bytes());
    d[2..4].copy_from_slice(&ports.1.to_be_bytes());
    let len = d.len() as u16;
    d[4..6].copy_from_slice(&len.to_be_bytes());
    d[8..].copy_from_slice(payload);
    match checksum % 4 {
        // No checksum (IPv4 only; IPv6 must drop it), or a wrong one.
        0 => {}
        1 => d[6..8].copy_from_slice(&[0x12, 0x34]),
        _ => fill_l4(src, dst, 17, &mut d, 6, true),
    }
    d
}

fn tcp(src: IpAddr, dst: IpAddr, repr: &TcpRepr, payload: &[u8]) -> Vec<u8> {
    let mut s = vec![0u8; repr.header_len() + payload.len()];
    repr.emit(&mut s);
    s[repr.header_len()..].copy_from_slice(payload);
    fill_l4(src, dst, 6, &mut s, 16, false);
    s
}

fn icmp4(msg_type: u8, code: u8, rest: u32, body: &[u8]) -> Vec<u8> {
    let mut m = vec![0u8; 8 + body.len()];
    m[8..].copy_from_slice(body);
    let mut p = Icmpv4Packet::new_unchecked(&mut m[..]);
    p.set_type_code(msg_type, code);
    p.set_rest((rest >> 16) as u16, rest as u16);
    p.fill_checksum();
    m
}

fn icmp6(
    src: Ipv6Addr,
    dst: Ipv6Addr,
    msg_type: u8,
    code: u8,
    word: [u8; 4],
    body: &[u8],
) -> Vec<u8> {
    let mut m = vec![0u8; 8 + body.len()];
    m[8..].copy_from_slice(body);
    let mut p = Icmpv6Packet::new_unchecked(&mut m[..]);
    p.set_type_code(msg_type, code);
    p.set_body_word(word);
    p.fill_checksum(src, dst);
    m
}

/// The payload of a datagram or segment: `len` bytes from the input,
/// padded with a pattern.
fn payload(input: &mut Input<'_>, len: usize) -> Vec<u8> {
    let mut bytes = input.bytes(len.min(64)).to_vec();
    bytes.extend((bytes.len()..len).map(|i| (i * 7) as u8));
    bytes
}

struct Harness {
    iface: Interface<MemBuf>,
    port: MemPort,
    app: App,
    now: Instant,
    frames: u64,
    /// The established connection's next sequence numbers: the peer's,
    /// and the end of what we sent.
    peer_next: u32,
    our_end: u32,
}

impl Harness {
    fn new() -> Harness {
        let mut link = LinkConfig::new(OUR_MAC, Ipv4Cidr::new(OUR4, 24).unwrap());
        link.addresses6.push(Ipv6Cidr::new(OUR6, 64).unwrap());
        let mut config = InterfaceConfig::with_links(vec![link]);
        config.dad_transmits = 0;
        config.accept_ra = true;
        config.reassembly.max_datagrams = 4;
        config.tcp.send_buffer = 8 * 1024;
        config.tcp.recv_buffer = 8 * 1024;
        config.tcp.max_retries = 3;
        config.tcp.max_syn_retries = 2;
        config.tcp.time_wait = Duration::from_secs(5);
        config.tcp.conn_buckets = 64;
        let mut iface = Interface::new(config).expect("a valid configuration");
        let port = MemPort::new(MemPortConfig {
            mac: OUR_MAC,
            pool_size: 256,
            tx_ring_size: 64,
            ..MemPortConfig::default()
        });
        iface
            .udp_bind(
                SocketAddr::new(OUR4.into(), UDP4_PORT),
                BindOptions::default(),
            )
            .expect("bind UDP/IPv4");
        iface
            .udp_bind(
                SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), UDP6_PORT),
                BindOptions::default(),
            )
            .expect("bind UDP/IPv6");
        iface
            .tcp_listen(SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), TCP_PORT), 4)
            .expect("listen");
        let mut h = Harness {
            iface,
            port,
            app: App::default(),
            now: Instant::from_nanos(1_000_000_000),
            frames: 0,
            peer_next: PEER_ISN.wrapping_add(1),
            our_end: 0,
        };
        h.poll();
        h.drain_tx();
        // The peer makes itself known, then opens a connection.
        h.receive(&h.peer_arp());
        let syn = TcpRepr {
            src_port: PEER_PORT,
            dst_port: TCP_PORT,
            seq: PEER_ISN,
            flags: flags::SYN,
            window: 65_535,
            options: TcpOptions {
                mss: Some(1460),
                ..TcpOptions::default()
            },
            ..TcpRepr::default()
        };
        h.receive(&h.tcp4(&syn, &[]));
        let ack = TcpRepr {
            seq: PEER_ISN.wrapping_add(1),
            ack: h.our_end,
            flags: flags::ACK,
            options: TcpOptions::default(),
            ..syn
        };
        h.receive(&h.tcp4(&ack, &[]));
        assert_eq!(h.app.accepted.len(), 1, "setup: the connection is accepted");
        h
    }

    /// The peer's ARP request for our address.
    fn peer_arp(&self) -> Vec<u8> {
        let arp = ArpRepr {
            operation: ArpOperation::Request,
            sender_mac: PEER_MAC,
            sender_ip: PEER4,
            target_mac: MacAddr::default(),
            target_ip: OUR4,
        };
        let mut body = [0u8; 28];
        arp.emit(&mut body);
        ethernet(MacAddr::BROADCAST, PEER_MAC, EtherType::Arp, &body)
    }

    fn tcp4(&self, repr: &TcpRepr, payload: &[u8]) -> Vec<u8> {
        let segment = tcp(PEER4.into(), OUR4.into(), repr, payload);
        let ip = ipv4(
            &V4 {
                src: PEER4,
                dst: OUR4,
                protocol: 6,
                ttl: 64,
                ident: 1,
                frag: 0x4000,
                options: &[],
            },
            &segment,
        );
        ethernet(OUR_MAC, PEER_MAC, EtherType::Ipv4, &ip)
    }

    fn poll(&mut self) {
        self.iface.poll(&mut self.port, self.now, &mut self.app);
    }

    /// One frame in, one poll, its fate checked.
    fn receive(&mut self, frame: &[u8]) {
        let before = Snapshot::of(self.iface.counters());
        assert!(self.port.push_rx(frame), "the rx ring takes the frame");
        self.frames += 1;
        self.poll();
        let after = Snapshot::of(self.iface.counters());
        assert_eq!(
            after.stat(Stat::EthInFrames) - before.stat(Stat::EthInFrames),
            1,
            "a frame counted as received other than once"
        );
        let fates = after.fates_since(&before);
        let silent = SILENT_ENDS.iter().any(|&s| after.stat(s) > before.stat(s));
        assert!(
            fates.len() <= 1 && fates.iter().all(|f| f.starts_with("1x")),
            "a frame with several fates: {fates:?}\nframe: {frame:02x?}"
        );
        assert!(
            !fates.is_empty() || silent,
            "a frame with no fate counted\nframe: {frame:02x?}"
        );
        self.drain_tx();
    }

    /// Time passes: polls without frames count no fate.
    fn advance(&mut self, by: Duration) {
        self.now = self.now + by;
        let before = Snapshot::of(self.iface.counters());
        self.poll();
        let after = Snapshot::of(self.iface.counters());
        let fates = after.fates_since(&before);
        assert!(fates.is_empty(), "a poll without frames counted {fates:?}");
        self.drain_tx();
    }

    /// Takes what the stack sent; checks every frame.
    fn drain_tx(&mut self) {
        while let Some(buf) = self.port.pop_tx() {
            use dpstack_stack::port::Buf;
            self.check_out(buf.data());
        }
    }

    fn check_out(&mut self, frame: &[u8]) {
        let eth = EthernetFrame::new_checked(frame).expect("we send a whole Ethernet header");
        assert_eq!(eth.src(), OUR_MAC, "a frame from another MAC");
        match eth.ethertype() {
            EtherType::Arp => {
                let arp = ArpRepr::parse(eth.payload()).expect("our ARP parses");
                assert_eq!(arp.sender_mac, OUR_MAC);
            }
            EtherType::Ipv4 => {
                let ip = Ipv4Packet::new_checked(eth.payload()).expect("our IPv4 parses");
                assert!(ip.verify_checksum(), "our IPv4 header checksum");
                assert_eq!(ip.src(), OUR4, "an IPv4 packet from another address");
                if ip.is_fragment() {
                    return;
                }
                let l4 = ip.payload();
                let (src, dst) = (IpAddr::V4(ip.src()), IpAddr::V4(ip.dst()));
                match ip.protocol() {
                    1 => {
                        let icmp = Icmpv4Packet::new_checked(l4).expect("our ICMP parses");
                        assert!(icmp.verify_checksum(), "our ICMP checksum");
                    }
                    6 => self.check_tcp(src, dst, l4),
                    17 => {
                        let udp = UdpPacket::new_checked(l4).expect("our UDP parses");
                        assert!(
                            (udp.checksum() == 0
                                || udp.verify_checksum(
                                    dpstack_stack::wire::checksum::pseudo_header_v4(
                                        ip.src(),
                                        ip.dst(),
                                        dpstack_stack::wire::ipv4::protocol::UDP,
                                        udp.len()
                                    )
                                )),
                            "our UDP checksum"
                        );
                    }
                    other => panic!("we sent IPv4 protocol {other}"),
                }
            }
            EtherType::Ipv6 => {
                let ip = Ipv6Packet::new_checked(eth.payload()).expect("our IPv6 parses");
                let ext = ipv6::walk_extensions(ip.next_header(), ip.payload())
                    .expect("our extension headers walk");
                if ext.fragment.is_some() {
                    return;
                }
                let l4 = &ip.payload()[ext.offset..];
                let (src, dst) = (ip.src(), ip.dst());
                let sum = checksum::accumulate(
                    ipv6::pseudo_header(src, dst, ext.protocol, l4.len() as u32),
                    l4,
                );
                match ext.protocol {
                    6 => self.check_tcp(src.into(), dst.into(), l4),
                    17 | 58 => assert_eq!(checksum::fold(sum), 0xffff, "our IPv6 L4 checksum"),
                    other => panic!("we sent IPv6 next header {other}"),
                }
            }
            other => panic!("we sent ethertype {other:?}"),
        }
    }

    fn check_tcp(&mut self, src: IpAddr, dst: IpAddr, segment: &[u8]) {
        let packet = TcpPacket::new_checked(segment).expect("our TCP parses");
        let pseudo = match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                checksum::pseudo_header_v4(s, d, 6, segment.len() as u16)
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => ipv6::pseudo_header(s, d, 6, segment.len() as u32),
            _ => unreachable!(),
        };
        assert!(packet.verify_checksum(pseudo), "our TCP checksum");
        let repr = TcpRepr::parse(&packet).expect("our TCP options parse");
        if dst == IpAddr::V4(PEER4) && repr.dst_port == PEER_PORT && repr.flags & flags::RST == 0 {
            let syn = u32::from(repr.flags & flags::SYN != 0);
            let fin = u32::from(repr.flags & flags::FIN != 0);
            let end = repr
                .seq
                .wrapping_add(packet.payload().len() as u32 + syn + fin);
            if self.our_end == 0 || end.wrapping_sub(self.our_end) as i32 > 0 {
                self.our_end = end;
            }
        }
    }

    /// One step decoded from the input.
    fn step(&mut self, input: &mut Input<'_>) {
        let op = input.u8();
        let mut frames = match op % 16 {
            0 => {
                let len = usize::from(input.u8()) * 2;
                vec![input.bytes(len).to_vec()]
            }
            1 => vec![self.arp(input)],
            2 | 3 => vec![self.udp4(input)],
            4 | 5 => vec![self.tcp_conn(input)],
            6 => vec![self.tcp_listener(input)],
            7 => vec![self.icmp4(input)],
            8 => self.fragments4(input),
            9 => vec![self.udp6(input)],
            10 => vec![self.icmp6(input)],
            11 => vec![self.nd(input)],
            12 => vec![self.extensions6(input)],
            13 => self.fragments6(input),
            14 => vec![self.options4(input)],
            _ => {
                let by = match input.u8() {
                    0xff => Duration::from_secs(31),
                    n => Duration::from_millis(u64::from(n) * 20),
                };
                self.advance(by);
                return;
            }
        };
        for frame in &mut frames {
            corrupt(input, frame);
            self.receive(frame);
        }
    }

    fn arp(&mut self, input: &mut Input<'_>) -> Vec<u8> {
        let pick = input.u8();
        let repr = ArpRepr {
            operation: if pick & 1 == 0 {
                ArpOperation::Request
            } else {
                ArpOperation::Reply
            },
            sender_mac: if pick & 2 == 0 {
                PEER_MAC
            } else {
                MACS[usize::from(pick >> 5) % 5]
            },
            sender_ip: SOURCES4[usize::from(input.u8()) % 8],
            target_mac: MacAddr::default(),
            target_ip: SOURCES4[usize::from(input.u8()) % 8],
        };
        let mut body = [0u8; 28];
        repr.emit(&mut body);
        ethernet(
            MACS[usize::from(pick >> 2) % 5],
            PEER_MAC,
            EtherType::Arp,
            &body,
        )
    }

    fn v4_frame(
        &mut self,
        input: &mut Input<'_>,
        protocol: u8,
        l4: &[u8],
        dst: Ipv4Addr,
    ) -> Vec<u8> {
        let pick = input.u8();
        let src = if pick & 0x70 == 0 {
            SOURCES4[usize::from(pick) % 8]
        } else {
            PEER4
        };
        let ip = ipv4(
            &V4 {
                src,
                dst,
                protocol,
                ttl: if pick & 0x80 != 0 { 0 } else { 64 },
                ident: 1,
                frag: 0x4000,
                options: &[],
            },
            l4,
        );
        let mac = if dst.is_broadcast() || dst.octets()[3] == 255 {
            MacAddr::BROADCAST
        } else {
            OUR_MAC
        };
        ethernet(mac, PEER_MAC, EtherType::Ipv4, &ip)
    }

    fn udp4(&mut self, input: &mut Input<'_>) -> Vec<u8> {
        let pick = input.u8();
        let dst = DESTS4[usize::from(pick) % 6];
        let port = match pick >> 4 {
            0..=11 => UDP4_PORT,
            12 | 13 => UDP6_PORT,
            _ => input.u16(),
        };
        let len = usize::from(input.u8()) * 4;
        let data = payload(input, len);
        let d = udp(
            PEER4.into(),
            dst.into(),
            (PEER_PORT, port),
            &data,
            input.u8() | 2,
        );
        self.v4_frame(input, 17, &d, dst)
    }

    /// A segment on the established connection, near where it belongs.
    fn tcp_conn(&mut self, input: &mut Input<'_>) -> Vec<u8> {
        let bits = input.u8();
        let seq_delta = i32::from(input.u8() as i8) * if bits & 0x40 != 0 { 97 } else { 1 };
        let ack_delta = i32::from(input.u8() as i8);
        let len = usize::from(input.u8()) * 4;
        let data = payload(input, len);
        let repr = TcpRepr {
            src_port: PEER_PORT,
            dst_port: TCP_PORT,
            seq: self.peer_next.wrapping_add(seq_delta as u32),
            ack: self.our_end.wrapping_add(ack_delta as u32),
            flags: bits & 0x3f | if bits & 0x80 == 0 { flags::ACK } else { 0 },
            window: u16::from(input.u8()) << 8,
            options: TcpOptions::default(),
        };
        if seq_delta == 0 && repr.flags & (flags::RST | flags::SYN) == 0 {
            let fin = u32::from(repr.flags & flags::FIN != 0);
            self.peer_next = self.peer_next.wrapping_add(data.len() as u32 + fin);
        }
        self.tcp4(&repr, &data)
    }

    /// A segment to the listener (IPv4 or IPv6) from another port.
    fn tcp_listener(&mut self, input: &mut Input<'_>) -> Vec<u8> {
        let pick = input.u8();
        let options = TcpOptions::parse(input.bytes(usize::from(pick >> 4))).unwrap_or_default();
        let repr = TcpRepr {
            src_port: 1024 + u16::from(input.u8()),
            dst_port: if pick & 8 == 0 { TCP_PORT } else { 8 },
            seq: input.u32(),
            ack: input.u32(),
            flags: input.u8() & 0x3f | if pick & 4 == 0 { flags::SYN } else { 0 },
            window: input.u16(),
            options,
        };
        if pick & 1 == 0 {
            let segment = tcp(PEER4.into(), OUR4.into(), &repr, &[]);
            self.v4_frame(input, 6, &segment, OUR4)
        } else {
            let segment = tcp(PEER6.into(), OUR6.into(), &repr, &[]);
            let ip = ipv6(PEER6, OUR6, 6, 64, &segment);
            ethernet(OUR_MAC, PEER_MAC, EtherType::Ipv6, &ip)
        }
    }

    fn icmp4(&mut self, input: &mut Input<'_>) -> Vec<u8> {
        let pick = input.u8();
        let dst = DESTS4[usize::from(pick >> 4) % 6];
        let message = if pick & 1 == 0 {
            let len = usize::from(input.u8());
            let data = payload(input, len);
            icmp4(8, pick >> 1 & 1, input.u32(), &data)
        } else {
            // An error quoting something we sent: UDP from our socket, or
            // TCP from the connection.
            let (protocol, l4) = if pick & 2 == 0 {
                (
                    17,
                    udp(
                        OUR4.into(),
                        PEER4.into(),
                        (UDP4_PORT, PEER_PORT),
                        &[1, 2],
                        2,
                    ),
                )
            } else {
                let repr = TcpRepr {
                    src_port: TCP_PORT,
                    dst_port: PEER_PORT,
                    seq: self.our_end,
                    ..TcpRepr::default()
                };
                (6, tcp(OUR4.into(), PEER4.into(), &repr, &[]))
            };
            let quote = ipv4(
                &V4 {
                    src: if pick & 4 == 0 { OUR4 } else { PEER4 },
                    dst: PEER4,
                    protocol,
                    ttl: 1,
                    ident: 3,
                    frag: 0,
                    options: &[],
                },
                &l4,
            );
            let cut = quote.len().saturating_sub(usize::from(input.u8() % 32));
            let msg_type = [3, 11, 12, 5][usize::from(pick >> 3) % 4];
            icmp4(msg_type, input.u8() % 6, input.u32(), &quote[..cut])
        };
        self.v4_frame(input, 1, &message, dst)
    }

    /// A UDP datagram to our socket in 2-4 fragments, offsets and lengths
    /// from the input.
    fn fragments4(&mut self, input: &mut Input<'_>) -> Vec<Vec<u8>> {
        let count = 2 + usize::from(input.u8() % 3);
        let ident = u16::from(input.u8() % 4);
        let len = 8 * (1 + usize::from(input.u8() % 64));
        let data = payload(input, len);
        let d = udp(PEER4.into(), OUR4.into(), (PEER_PORT, UDP4_PORT), &data, 2);
        let mut frames = Vec::new();
        let piece = (d.len() / count).div_ceil(8) * 8;
        for i in 0..count {
            let tweak = input.u8();
            let start = (i * piece + usize::from(tweak >> 6) * 8).min(d.len());
            let end = if i + 1 == count {
                d.len()
            } else {
                (start + piece).min(d.len())
            };
            let more = i + 1 < count || tweak & 1 != 0;
            let frag = (start / 8) as u16 | if more { 0x2000 } else { 0 };
            let ip = ipv4(
                &V4 {
                    src: PEER4,
                    dst: OUR4,
                    protocol: 17,
                    ttl: 64,
                    ident,
                    frag,
                    options: &[],
                },
                &d[start..end],
            );
            frames.push(ethernet(OUR_MAC, PEER_MAC, EtherType::Ipv4, &ip));
        }
        if input.bool() {
            frames.reverse();
        }
        frames
    }

    fn v6_frame(
        &mut self,
        input: &mut Input<'_>,
        next: u8,
        l4: &[u8],
        src: Ipv6Addr,
        dst: Ipv6Addr,
    ) -> Vec<u8> {
        let hop = match input.u8() {
            0 => 0,
            1 => 1,
            _ => 255,
        };
        let ip = ipv6(src, dst, next, hop, l4);
        let mac = if dst.is_multicast() {
            let o = dst.octets();
            MacAddr([0x33, 0x33, o[12], o[13], o[14], o[15]])
        } else {
            OUR_MAC
        };
        ethernet(mac, PEER_MAC, EtherType::Ipv6, &ip)
    }

    fn udp6(&mut self, input: &mut Input<'_>) -> Vec<u8> {
        let pick = input.u8();
        let src = SOURCES6[usize::from(pick) % 6];
        let dst = DESTS6[usize::from(pick >> 3) % 6];
        let port = if pick & 0x80 == 0 {
            UDP6_PORT
        } else {
            input.u16()
        };
        let len = usize::from(input.u8()) * 4;
        let data = payload(input, len);
        let d = udp(src.into(), dst.into(), (PEER_PORT, port), &data, input.u8());
        self.v6_frame(input, 17, &d, src, dst)
    }

    fn icmp6(&mut self, input: &mut Input<'_>) -> Vec<u8> {
        let pick = input.u8();
        let src = SOURCES6[usize::from(pick) % 6];
        let dst = DESTS6[usize::from(pick >> 3) % 6];
        let (msg_type, body) = if pick & 0x40 == 0 {
            let len = usize::from(input.u8());
            (128, payload(input, len))
        } else {
            let d = udp(
                OUR6.into(),
                PEER6.into(),
                (UDP6_PORT, PEER_PORT),
                &[1, 2, 3],
                2,
            );
            let quote = ipv6(OUR6, PEER6, 17, 64, &d);
            let cut = quote.len().saturating_sub(usize::from(input.u8() % 64));
            (
                [1, 2, 3, 4][usize::from(input.u8() % 4)],
                quote[..cut].to_vec(),
            )
        };
        let word = input.u32().to_be_bytes();
        let m = icmp6(src, dst, msg_type, input.u8() % 5, word, &body);
        self.v6_frame(input, 58, &m, src, dst)
    }

    /// Neighbour solicitations and advertisements, router advertisements.
    fn nd(&mut self, input: &mut Input<'_>) -> Vec<u8> {
        let pick = input.u8();
        let src = SOURCES6[usize::from(pick) % 6];
        let dst = DESTS6[usize::from(pick >> 3) % 6];
        let targets = [OUR6, DESTS6[2], PEER6, DESTS6[3]];
        let target = targets[usize::from(input.u8() % 4)];
        let mut body = target.octets().to_vec();
        let option_len = usize::from(input.u8() % 4);
        let (msg_type, word) = match pick >> 6 {
            0 | 1 => (135, [0; 4]),
            2 => (136, [input.u8() & 0xe0, 0, 0, 0]),
            _ => {
                // RA: hop limit, flags, lifetime; then reachable and
                // retransmit timers in place of the target.
                body = input.bytes(8).to_vec();
                body.resize(8, 0);
                (134, [64, 0, 0, 30])
            }
        };
        if option_len > 0 {
            let kind = [1, 2, 5][usize::from(input.u8() % 3)];
            let mut option = vec![kind, option_len as u8];
            option.extend_from_slice(&PEER_MAC.0);
            option.resize(option_len * 8, 0);
            body.extend_from_slice(&option);
        }
        let code = u8::from(input.u8() == 0xff);
        let m = icmp6(src, dst, msg_type, code, word, &body);
        let ip = ipv6(src, dst, 58, 255, &m);
        let mac = if dst.is_multicast() {
            let o = dst.octets();
            MacAddr([0x33, 0x33, o[12], o[13], o[14], o[15]])
        } else {
            OUR_MAC
        };
        ethernet(mac, PEER_MAC, EtherType::Ipv6, &ip)
    }

    /// A chain of extension headers (kinds, lengths and options from the
    /// input) before UDP or ICMPv6.
    fn extensions6(&mut self, input: &mut Input<'_>) -> Vec<u8> {
        let count = usize::from(input.u8() % 5);
        let upper = if input.bool() { 17 } else { 58 };
        let l4 = if upper == 17 {
            udp(
                PEER6.into(),
                OUR6.into(),
                (PEER_PORT, UDP6_PORT),
                &[2, 4, 6],
                2,
            )
        } else {
            icmp6(PEER6, OUR6, 128, 0, [0, 1, 0, 1], &[9; 8])
        };
        let kinds: Vec<u8> = (0..count)
            .map(|_| [0, 43, 60, 44, 0x3b, 60][usize::from(input.u8() % 6)])
            .collect();
        let mut chain = l4;
        for (i, &kind) in kinds.iter().enumerate().rev() {
            let next = kinds.get(i + 1).copied().unwrap_or(upper);
            let mut header = if kind == 44 {
                let word = input.u16() & 0xfff9;
                let mut h = vec![next, 0];
                h.extend_from_slice(&word.to_be_bytes());
                h.extend_from_slice(&input.u32().to_be_bytes());
                h
            } else {
                let units = usize::from(input.u8() % 3);
                let mut h = vec![next, units as u8];
                let options = input.bytes(6 + units * 8).to_vec();
                h.extend_from_slice(&options);
                // Pad1s fill what the input did not.
                h.resize(8 + units * 8, 0);
                h
            };
            header.extend_from_slice(&chain);
            chain = header;
        }
        let first = kinds.first().copied().unwrap_or(upper);
        self.v6_frame(input, first, &chain, PEER6, OUR6)
    }

    /// A UDP datagram over IPv6 in 2-3 fragments.
    fn fragments6(&mut self, input: &mut Input<'_>) -> Vec<Vec<u8>> {
        let count = 2 + usize::from(input.u8() % 2);
        let ident = u32::from(input.u8() % 4);
        let len = 8 * (1 + usize::from(input.u8() % 64));
        let data = payload(input, len);
        let d = udp(PEER6.into(), OUR6.into(), (PEER_PORT, UDP6_PORT), &data, 2);
        let piece = (d.len() / count).div_ceil(8) * 8;
        let mut frames = Vec::new();
        for i in 0..count {
            let tweak = input.u8();
            let start = (i * piece + usize::from(tweak >> 6) * 8).min(d.len());
            let end = if i + 1 == count {
                d.len()
            } else {
                (start + piece).min(d.len())
            };
            let more = i + 1 < count || tweak & 1 != 0;
            let mut f = vec![17, 0];
            f.extend_from_slice(&((start as u16) | u16::from(more)).to_be_bytes());
            f.extend_from_slice(&ident.to_be_bytes());
            f.extend_from_slice(&d[start..end]);
            let ip = ipv6(PEER6, OUR6, 44, 64, &f);
            frames.push(ethernet(OUR_MAC, PEER_MAC, EtherType::Ipv6, &ip));
        }
        if input.bool() {
            frames.reverse();
        }
        frames
    }

    /// IPv4 with options (bytes from the input) before UDP or ICMP.
    fn options4(&mut self, input: &mut Input<'_>) -> Vec<u8> {
        let len = usize::from(input.u8() % 11) * 4;
        let options = input.bytes(len).to_vec();
        let (protocol, l4) = if input.bool() {
            (
                17,
                udp(
                    PEER4.into(),
                    OUR4.into(),
                    (PEER_PORT, UDP4_PORT),
                    &[3, 5],
                    2,
                ),
            )
        } else {
            (1, icmp4(8, 0, 0x0001_0002, &[7; 16]))
        };
        let ip = ipv4(
            &V4 {
                src: PEER4,
                dst: OUR4,
                protocol,
                ttl: 64,
                ident: 9,
                frag: 0,
                options: &options,
            },
            &l4,
        );
        ethernet(OUR_MAC, PEER_MAC, EtherType::Ipv4, &ip)
    }

    /// Time runs out every timer; the queues drain; every buffer is back.
    fn finish(&mut self, baseline: usize) {
        // The peer stays reachable (it asks for our address now and then):
        // packets that wait for its MAC are sent, not held at the end.
        for _ in 0..12 {
            self.advance(Duration::from_secs(10));
            self.receive(&self.peer_arp());
        }
        let counters = Snapshot::of(self.iface.counters());
        assert_eq!(
            counters.stat(Stat::EthInFrames),
            self.frames,
            "frames received"
        );
        assert_eq!(
            counters.stat(Stat::UdpInDatagrams),
            self.app.datagrams + counters.drops[DropReason::UdpQueueFull as usize],
            "datagrams delivered but neither handed over nor counted as dropped"
        );
        if debug() {
            eprintln!(
                "{:?} state {:?}",
                self.iface.counters().nonzero(),
                self.iface.tcp_state(self.app.accepted[0])
            );
        }
        assert_eq!(self.port.buffers_in_use(), baseline, "buffers leaked");
    }
}

/// Corrupts a frame as the input says: a byte changed, the frame cut
/// short, or bytes added.
fn corrupt(input: &mut Input<'_>, frame: &mut Vec<u8>) {
    let how = input.u8();
    if frame.is_empty() {
        return;
    }
    match how >> 6 {
        1 => {
            let at = usize::from(input.u16()) % frame.len();
            frame[at] ^= input.u8() | 1;
        }
        2 => {
            let keep = usize::from(input.u16()) % frame.len();
            frame.truncate(keep);
        }
        3 => {
            let extra = usize::from(how & 0x3f);
            frame.extend(std::iter::repeat_n(0xa5, extra));
        }
        _ => {}
    }
}

/// The fuzz target.
pub fn ingress(data: &[u8]) {
    let mut input = Input::new(data);
    let mut h = Harness::new();
    let baseline = h.port.buffers_in_use();
    let mut steps = 0;
    while !input.is_empty() && steps < 64 {
        steps += 1;
        h.step(&mut input);
    }
    h.finish(baseline);
}
