//! The relay over the in-memory port, without DPDK: frames in,
//! frames out, a virtual clock. Peers A (10.9.0.2) and B (10.9.0.3) are
//! on the relay's network and announce themselves by ARP first.

use super::report::{self, Snapshot, StatsLink};
use super::spec::{self as config, LegSpec, LocalPort, SessionSpec};
use super::{Relay, RelayDrop, RelayOptions, SpecError, StartError};
use crate::rtp::{write_sender_report, RtpHeader, SenderInfo};
use dpstack_stack::counters::{DropReason, Stat};
use dpstack_stack::iface::{Interface, InterfaceConfig};
use dpstack_stack::port::memory::{MemBuf, MemPort, MemPortConfig};
use dpstack_stack::port::MacAddr;
use dpstack_stack::route::Ipv4Cidr;
use dpstack_stack::time::{Duration, Instant};
use dpstack_stack::wire::arp::{ArpOperation, ArpRepr};
use dpstack_stack::wire::checksum::pseudo_header_v4;
use dpstack_stack::wire::ethernet::{EtherType, EthernetFrame};
use dpstack_stack::wire::ipv4::{protocol, Ipv4Header, Ipv4Packet};
use dpstack_stack::wire::udp::UdpPacket;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const RELAY_MAC: MacAddr = MacAddr([2, 0, 0, 0, 9, 1]);
const A_MAC: MacAddr = MacAddr([2, 0, 0, 0, 9, 2]);
const B_MAC: MacAddr = MacAddr([2, 0, 0, 0, 9, 3]);
const RELAY_IP: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 1);
const A_IP: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 2);
const B_IP: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 3);

/// A relay on an in-memory port, with its virtual time.
struct Net {
    iface: Interface<MemBuf>,
    port: MemPort,
    relay: Relay,
    now: Instant,
    /// UDP over IPv6 the relay sent (`run` collects it here).
    sent6: Vec<ipv6::Sent6>,
}

/// A UDP datagram the relay sent.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Sent {
    src: SocketAddrV4,
    dst: SocketAddrV4,
    payload: Vec<u8>,
}

/// The relay's defaults; each test overrides what it is about.
fn options() -> RelayOptions {
    RelayOptions::default()
}

fn at(ip: Ipv4Addr, port: u16) -> SocketAddrV4 {
    SocketAddrV4::new(ip, port)
}

/// One session "call": leg A on 30000/30001, leg B on 30002/30003, B's
/// peer signalled at 10.9.0.3:6000.
fn one_call(mux: bool) -> Vec<SessionSpec> {
    vec![SessionSpec {
        name: "call".into(),
        legs: [
            LegSpec::new(LocalPort::Fixed(30000), None),
            LegSpec::new(
                LocalPort::Fixed(30002),
                Some(SocketAddr::V4(at(B_IP, 6000))),
            ),
        ],
        mux,
    }]
}

impl Net {
    fn new(specs: &[SessionSpec], options: RelayOptions, pool_size: usize) -> Net {
        Net::build(specs, options, pool_size, false)
    }

    /// With `v6`, the relay also has [`ipv6::RELAY6`] and the peers
    /// announce their IPv6 addresses too.
    fn build(specs: &[SessionSpec], options: RelayOptions, pool_size: usize, v6: bool) -> Net {
        let cidr = Ipv4Cidr::new(RELAY_IP, 24).unwrap();
        let mut config = InterfaceConfig::new(RELAY_MAC, cidr);
        if v6 {
            let cidr6 = dpstack_stack::route::Ipv6Cidr::new(ipv6::RELAY6, 64).unwrap();
            config.links[0].addresses6.push(cidr6);
            config.dad_transmits = 0;
        }
        let mut iface = Interface::new(config).unwrap();
        let mut relay = Relay::new(options);
        let local = super::LocalAddrs {
            v4: Some(RELAY_IP),
            v6: v6.then_some(ipv6::RELAY6),
        };
        relay
            .start(&mut iface, local, specs, 30000..=39999)
            .unwrap();
        let port = MemPort::new(MemPortConfig {
            mac: RELAY_MAC,
            pool_size,
            tx_ring_size: 4096,
            ..MemPortConfig::default()
        });
        let mut net = Net {
            iface,
            port,
            relay,
            now: Instant::ZERO,
            sent6: Vec::new(),
        };
        net.poll();
        net.port.take_tx();
        // The peers announce themselves: the relay learns their MACs.
        for (mac, ip) in [(A_MAC, A_IP), (B_MAC, B_IP)] {
            net.port.push_rx(&arp_request(mac, ip));
        }
        net.poll();
        assert_eq!(net.port.take_tx().len(), 2, "two ARP replies");
        if v6 {
            ipv6::announce(&mut net);
        }
        net
    }

    fn poll(&mut self) {
        self.iface.poll(&mut self.port, self.now, &mut self.relay);
    }

    /// Polls until every pushed frame is taken; returns the UDP datagrams
    /// sent. The peers answer the relay's ARP requests (in the next poll).
    fn run(&mut self) -> Vec<Sent> {
        let mut sent = Vec::new();
        loop {
            self.poll();
            for frame in self.port.take_tx() {
                if let Some(reply) = arp_reply(&frame).or_else(|| ipv6::nd_reply(&frame)) {
                    self.port.push_rx(&reply);
                }
                sent.extend(parse(&frame));
                self.sent6.extend(ipv6::parse6(&frame));
            }
            if self.port.rx_pending() == 0 {
                return sent;
            }
        }
    }

    fn advance(&mut self, ms: u64) {
        self.now = self.now + Duration::from_millis(ms);
    }

    fn send(&mut self, from: SocketAddrV4, to_port: u16, payload: &[u8]) {
        let mac = if *from.ip() == B_IP { B_MAC } else { A_MAC };
        assert!(self.port.push_rx(&udp_frame(mac, from, to_port, payload)));
    }

    fn report(&self) -> String {
        report::render(&self.relay.snapshot(), &["call".to_owned()])
    }
}

fn arp_request(mac: MacAddr, ip: Ipv4Addr) -> Vec<u8> {
    let mut body = [0u8; 28];
    ArpRepr {
        operation: ArpOperation::Request,
        sender_mac: mac,
        sender_ip: ip,
        target_mac: MacAddr::default(),
        target_ip: RELAY_IP,
    }
    .emit(&mut body);
    ethernet(MacAddr::BROADCAST, mac, EtherType::Arp, &body)
}

/// A peer's answer to an ARP request from the relay for A or B.
fn arp_reply(frame: &[u8]) -> Option<Vec<u8>> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    if eth.ethertype() != EtherType::Arp {
        return None;
    }
    let request = ArpRepr::parse(eth.payload()).ok()?;
    let mac = match request.target_ip {
        ip if ip == A_IP => A_MAC,
        ip if ip == B_IP => B_MAC,
        _ => return None,
    };
    if request.operation != ArpOperation::Request {
        return None;
    }
    let mut body = [0u8; 28];
    ArpRepr {
        operation: ArpOperation::Reply,
        sender_mac: mac,
        sender_ip: request.target_ip,
        target_mac: request.sender_mac,
        target_ip: request.sender_ip,
    }
    .emit(&mut body);
    Some(ethernet(request.sender_mac, mac, EtherType::Arp, &body))
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

fn udp_frame(mac: MacAddr, from: SocketAddrV4, to_port: u16, payload: &[u8]) -> Vec<u8> {
    let mut udp = vec![0u8; 8 + payload.len()];
    udp[8..].copy_from_slice(payload);
    UdpPacket::new_unchecked(&mut udp[..]).emit_header(
        (*from.ip(), from.port()),
        (RELAY_IP, to_port),
        payload.len() as u16,
    );
    let mut ip = vec![0u8; 20 + udp.len()];
    ip[20..].copy_from_slice(&udp);
    Ipv4Packet::new_unchecked(&mut ip[..]).emit_header(&Ipv4Header {
        src: *from.ip(),
        dst: RELAY_IP,
        protocol: protocol::UDP,
        payload_len: udp.len() as u16,
        ttl: 64,
        ident: 1,
        dont_fragment: true,
        tos: 0,
    });
    ethernet(RELAY_MAC, mac, EtherType::Ipv4, &ip)
}

/// The UDP datagram in a transmitted frame, if it is one.
fn parse(frame: &[u8]) -> Option<Sent> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    if eth.ethertype() != EtherType::Ipv4 {
        return None;
    }
    let ip = Ipv4Packet::new_checked(eth.payload()).ok()?;
    if ip.protocol() != protocol::UDP {
        return None;
    }
    let udp = UdpPacket::new_checked(ip.payload()).ok()?;
    // A zero field is no checksum, which IPv4 allows (RFC 768).
    let pseudo = pseudo_header_v4(ip.src(), ip.dst(), protocol::UDP, udp.len());
    assert!(
        udp.checksum() == 0 || udp.verify_checksum(pseudo),
        "UDP checksum"
    );
    Some(Sent {
        src: at(ip.src(), udp.src_port()),
        dst: at(ip.dst(), udp.dst_port()),
        payload: udp.payload().to_vec(),
    })
}

/// A G.711 packet: 160 bytes of payload, timestamp 160 per sequence step.
fn rtp(ssrc: u32, seq: u16) -> Vec<u8> {
    let mut packet = vec![0u8; 12 + 160];
    RtpHeader {
        payload_type: 0,
        seq,
        timestamp: u32::from(seq).wrapping_mul(160),
        ssrc,
        ..RtpHeader::default()
    }
    .emit(&mut packet)
    .unwrap();
    packet[12..].fill(seq as u8);
    packet
}

fn sender_report(ssrc: u32) -> Vec<u8> {
    let mut buf = [0u8; 128];
    let info = SenderInfo {
        ntp_timestamp: 0x83aa_7e80_8000_0000,
        rtp_timestamp: 1234,
        packet_count: 10,
        octet_count: 1600,
    };
    let n = write_sender_report(&mut buf, ssrc, &info, &[]).unwrap();
    buf[..n].to_vec()
}

fn field(report: &str, prefix: &str, name: &str) -> i64 {
    report::field(report, prefix, name)
        .unwrap_or_else(|| panic!("no {name} after {prefix:?} in:\n{report}"))
}

fn drops(snapshot: &Snapshot, reason: RelayDrop) -> u64 {
    snapshot.drops[reason as usize]
}

mod ipv6;
mod lanes;
mod relaying;
mod reports;
mod scale;
