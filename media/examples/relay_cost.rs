//! Cost of `media::relay` over 10,000 sessions without a device: a port
//! that recycles its buffers feeds `Interface::poll` one G.711 RTP packet
//! per session in turn (each session's sequence numbers and timestamps
//! advancing, so the statistics do their real work), and the relay
//! forwards each to its leg B peer. Prints nanoseconds per packet; the
//! sessions' state (about 10,000 x 2 legs) does not fit in the caches, as
//! in `scripts/bench rtp-10k`:
//!
//! `cargo run --release -p dpstack-media --example relay_cost -- 5000000`

use dpstack_media::relay::{generate, Relay, RelayOptions};
use dpstack_media::rtp::RtpHeader;
use dpstack_stack::iface::{Interface, InterfaceConfig};
use dpstack_stack::port::memory::{MemBuf, MemPort, MemPortConfig};
use dpstack_stack::port::{MacAddr, Port};
use dpstack_stack::route::Ipv4Cidr;
use dpstack_stack::time::Instant;
use dpstack_stack::wire::arp::{ArpOperation, ArpRepr};
use dpstack_stack::wire::ethernet::{EtherType, EthernetFrame};
use dpstack_stack::wire::ipv4::{protocol, Ipv4Header, Ipv4Packet};
use dpstack_stack::wire::udp::UdpPacket;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

const OUR_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);
const PEER_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 2]);
const OUR_IP: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
const PEER_IP: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);
const SESSIONS: u32 = 10_000;
const PORT_BASE: u16 = 20_000;
/// Where the RTP header starts in a frame.
const RTP_AT: usize = 14 + 20 + 8;

#[path = "../../stack/examples/common/recycling.rs"]
mod recycling;
use recycling::{Frames, RecyclingPort};

/// First an ARP request from the peer (so its MAC is known), then each
/// session's next packet in turn, sequence numbers and timestamps
/// advancing once per round.
struct SessionFrames {
    arp: Vec<u8>,
    arp_sent: bool,
    frames: Vec<Vec<u8>>,
    next: usize,
    seq: u16,
}

impl Frames for SessionFrames {
    fn next_frame(&mut self) -> &[u8] {
        if !self.arp_sent {
            self.arp_sent = true;
            return &self.arp;
        }
        let (at, seq) = (self.next, self.seq);
        self.next += 1;
        if self.next == self.frames.len() {
            self.next = 0;
            self.seq = self.seq.wrapping_add(1);
        }
        let frame = &mut self.frames[at];
        frame[RTP_AT + 2..RTP_AT + 4].copy_from_slice(&seq.to_be_bytes());
        let ts = u32::from(seq).wrapping_mul(160);
        frame[RTP_AT + 4..RTP_AT + 8].copy_from_slice(&ts.to_be_bytes());
        frame
    }
}

fn ethernet(payload: &[u8], ethertype: EtherType) -> Vec<u8> {
    let mut frame = vec![0u8; 14 + payload.len()];
    frame[14..].copy_from_slice(payload);
    let mut eth = EthernetFrame::new_unchecked(&mut frame[..]);
    eth.set_dst(OUR_MAC);
    eth.set_src(PEER_MAC);
    eth.set_ethertype(ethertype);
    frame
}

/// Session `i`'s leg A packet: from the peer's port 10000+2i to 20000+4i,
/// UDP checksum 0 (none, as IPv4 allows) so the seq can be patched.
fn rtp_frame(i: u32) -> Vec<u8> {
    let mut rtp = vec![0u8; 12 + 160];
    RtpHeader {
        payload_type: 0,
        ssrc: i,
        ..RtpHeader::default()
    }
    .emit(&mut rtp)
    .expect("fits");
    let mut udp = vec![0u8; 8 + rtp.len()];
    udp[8..].copy_from_slice(&rtp);
    let (src, dst) = (10_000 + 2 * i as u16, PORT_BASE + 4 * i as u16);
    UdpPacket::new_unchecked(&mut udp[..]).emit_header(
        (PEER_IP, src),
        (OUR_IP, dst),
        rtp.len() as u16,
    );
    udp[6..8].fill(0);
    let mut ip = vec![0u8; 20 + udp.len()];
    ip[20..].copy_from_slice(&udp);
    Ipv4Packet::new_unchecked(&mut ip[..]).emit_header(&Ipv4Header {
        src: PEER_IP,
        dst: OUR_IP,
        protocol: protocol::UDP,
        payload_len: udp.len() as u16,
        ttl: 64,
        ident: 0,
        dont_fragment: true,
        tos: 0,
    });
    ethernet(&ip, EtherType::Ipv4)
}

fn main() {
    let packets: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5_000_000);
    let mut pool = MemPort::new(MemPortConfig {
        pool_size: 1024,
        ..MemPortConfig::default()
    });
    let free: Vec<MemBuf> = (0..512).filter_map(|_| pool.alloc()).collect();
    let mut arp = [0u8; 28];
    ArpRepr {
        operation: ArpOperation::Request,
        sender_mac: PEER_MAC,
        sender_ip: PEER_IP,
        target_mac: MacAddr::default(),
        target_ip: OUR_IP,
    }
    .emit(&mut arp);
    let mut port = RecyclingPort {
        free,
        frames: SessionFrames {
            arp: ethernet(&arp, EtherType::Arp),
            arp_sent: false,
            frames: (0..SESSIONS).map(rtp_frame).collect(),
            next: 0,
            seq: 1,
        },
        sent: 0,
        mac: OUR_MAC,
    };
    let config = InterfaceConfig::new(OUR_MAC, Ipv4Cidr::new(OUR_IP, 24).expect("prefix"));
    let mut iface: Interface<MemBuf> = Interface::new(config).expect("a valid configuration");
    let b_peers = SocketAddr::V4(SocketAddrV4::new(PEER_IP, 40_000));
    let specs = generate(SESSIONS, PORT_BASE, false, [None, Some(b_peers)]).expect("sessions");
    let last = PORT_BASE + 4 * SESSIONS as u16 - 1;
    let (mut relay, _) = Relay::build(
        &mut iface,
        OUR_IP,
        &specs,
        PORT_BASE..=last,
        RelayOptions::default(),
    )
    .expect("the relay");
    let mut now = 1_000;
    // A round of warm-up: every session latches and passes probation.
    while port.sent < 2 * u64::from(SESSIONS) {
        iface.poll(&mut port, Instant::from_nanos(now), &mut relay);
        now += 20_000;
    }
    let sent_before = port.sent;
    let start = std::time::Instant::now();
    while port.sent - sent_before < packets {
        iface.poll(&mut port, Instant::from_nanos(now), &mut relay);
        now += 20_000;
    }
    let elapsed = start.elapsed();
    let relayed = port.sent - sent_before;
    let snapshot = relay.snapshot();
    let forwarded: u64 = snapshot
        .sessions
        .iter()
        .map(|s| s.legs[0].counters.forwarded)
        .sum();
    let lost: i64 = snapshot
        .sessions
        .iter()
        .flat_map(|s| s.legs[0].streams.iter())
        .map(|s| s.counters.lost)
        .sum();
    println!(
        "{relayed} packets relayed over {SESSIONS} sessions, {:.1} ns/packet \
         (forwarded {forwarded}, lost {lost}, drops {:?})",
        elapsed.as_nanos() as f64 / relayed as f64,
        snapshot.drops
    );
}
