//! Cost of the IPv4/UDP echo pipeline alone, without a device: a port that
//! recycles its buffers feeds `Interface::poll` the same 64-byte UDP frame
//! and takes the replies back. Prints nanoseconds per packet; run it under
//! `valgrind --tool=callgrind` for instruction counts that do not depend on
//! the machine's noise:
//!
//! `cargo run --release -p dpstack-stack --example pipeline_cost -- 200000`

use dpstack_stack::iface::{Batch, InlineHandler, Interface, InterfaceConfig, LcoreContext};
use dpstack_stack::port::memory::{MemBuf, MemPort, MemPortConfig};
use dpstack_stack::port::{MacAddr, Port};
use dpstack_stack::route::Ipv4Cidr;
use dpstack_stack::time::Instant;
use dpstack_stack::udp::{BindOptions, SocketId};
use dpstack_stack::wire::ethernet::{EtherType, EthernetFrame};
use dpstack_stack::wire::ipv4::{protocol, Ipv4Header, Ipv4Packet};
use dpstack_stack::wire::udp::UdpPacket;
use std::net::{Ipv4Addr, SocketAddrV4};

const OUR_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);
const OUR_IP: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
const PEER_IP: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);

#[path = "common/recycling.rs"]
mod recycling;
use recycling::{Frames, RecyclingPort};

/// The same frame every time.
struct SameFrame(Vec<u8>);

impl Frames for SameFrame {
    fn next_frame(&mut self) -> &[u8] {
        &self.0
    }
}

struct Echo;

impl InlineHandler<MemBuf> for Echo {
    fn on_datagrams<P: Port<Buf = MemBuf>>(
        &mut self,
        _: SocketId,
        batch: &mut Batch<MemBuf>,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        for d in batch.drain(..) {
            ctx.reply(d);
        }
    }
}

fn frame() -> Vec<u8> {
    let payload = [0u8; 18];
    let mut udp = vec![0u8; 8 + payload.len()];
    UdpPacket::new_unchecked(&mut udp[..]).emit_header(
        (PEER_IP, 1024),
        (OUR_IP, 7),
        payload.len() as u16,
    );
    let mut frame = vec![0u8; 14 + 20 + udp.len()];
    frame[34..].copy_from_slice(&udp);
    Ipv4Packet::new_unchecked(&mut frame[14..]).emit_header(&Ipv4Header {
        src: PEER_IP,
        dst: OUR_IP,
        protocol: protocol::UDP,
        payload_len: udp.len() as u16,
        ttl: 64,
        ident: 0,
        dont_fragment: true,
        tos: 0,
    });
    let mut eth = EthernetFrame::new_unchecked(&mut frame[..]);
    eth.set_dst(OUR_MAC);
    eth.set_src(MacAddr([2, 0, 0, 0, 0, 2]));
    eth.set_ethertype(EtherType::Ipv4);
    frame
}

fn main() {
    let packets: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2_000_000);
    let mut pool = MemPort::new(MemPortConfig::default());
    let free: Vec<MemBuf> = (0..256).filter_map(|_| pool.alloc()).collect();
    let mut port = RecyclingPort {
        free,
        frames: SameFrame(frame()),
        sent: 0,
        mac: OUR_MAC,
    };
    let mut iface: Interface<MemBuf> = Interface::new(InterfaceConfig::new(
        OUR_MAC,
        Ipv4Cidr::new(OUR_IP, 24).unwrap(),
    ))
    .expect("a valid configuration");
    iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 7), BindOptions::default())
        .unwrap();
    iface.poll(&mut port, Instant::ZERO, &mut Echo); // announcement
    let start = std::time::Instant::now();
    let mut now = 1;
    while port.sent < packets {
        iface.poll(&mut port, Instant::from_nanos(now), &mut Echo);
        now += 1;
    }
    let elapsed = start.elapsed();
    println!(
        "{} packets echoed, {:.1} ns/packet",
        port.sent,
        elapsed.as_nanos() as f64 / port.sent as f64
    );
}
