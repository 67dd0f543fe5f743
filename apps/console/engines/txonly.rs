//! `txonly`: send 64-byte UDP/IPv4 packets built from one template
//! (198.18.0.1:9 -> 198.18.0.2:9, as testpmd's txonly), receive nothing.
//!
//! The template is built once per start with smoltcp's wire emitters
//! (checksums included); per packet the engine only copies 64 bytes.

use super::{transmit, BurstContext, Engine};
use crate::forward::{Stream, StreamCounters};
use arrayvec::ArrayVec;
use dpstack::stack::port::{Buf, MacAddr, Port};
use smoltcp::phy::ChecksumCapabilities;
use smoltcp::wire::{
    EthernetAddress, EthernetFrame, EthernetProtocol, IpAddress, IpProtocol, Ipv4Address,
    Ipv4Packet, Ipv4Repr, UdpPacket, UdpRepr,
};

/// Frame length of every generated packet.
pub const FRAME_LEN: usize = 64;
const ETH_HEADER: usize = 14;
const IPV4_HEADER: usize = 20;
const UDP_HEADER: usize = 8;
const SRC_IP: Ipv4Address = Ipv4Address::new(198, 18, 0, 1);
const DST_IP: Ipv4Address = Ipv4Address::new(198, 18, 0, 2);
const UDP_PORT: u16 = 9;

/// The `txonly` engine: one template per stream (they differ in MACs).
#[derive(Debug, Default)]
pub struct TxOnly {
    templates: Vec<(usize, [u8; FRAME_LEN])>,
}

/// Builds the frame `src` sends to `dst`.
pub fn udp_template(src: MacAddr, dst: MacAddr) -> [u8; FRAME_LEN] {
    let mut frame = [0u8; FRAME_LEN];
    let mut eth = EthernetFrame::new_unchecked(&mut frame[..]);
    eth.set_src_addr(EthernetAddress(src.octets()));
    eth.set_dst_addr(EthernetAddress(dst.octets()));
    eth.set_ethertype(EthernetProtocol::Ipv4);
    let udp_payload = FRAME_LEN - ETH_HEADER - IPV4_HEADER - UDP_HEADER;
    let ip = Ipv4Repr {
        src_addr: SRC_IP,
        dst_addr: DST_IP,
        next_header: IpProtocol::Udp,
        payload_len: UDP_HEADER + udp_payload,
        hop_limit: 64,
    };
    let caps = ChecksumCapabilities::default();
    ip.emit(
        &mut Ipv4Packet::new_unchecked(&mut frame[ETH_HEADER..]),
        &caps,
    );
    let udp = UdpRepr {
        src_port: UDP_PORT,
        dst_port: UDP_PORT,
    };
    udp.emit(
        &mut UdpPacket::new_unchecked(&mut frame[ETH_HEADER + IPV4_HEADER..]),
        &IpAddress::Ipv4(SRC_IP),
        &IpAddress::Ipv4(DST_IP),
        udp_payload,
        |payload| payload.fill(0),
        &caps,
    );
    frame
}

impl TxOnly {
    fn template<P: Port>(&mut self, stream: &Stream, ports: &[P]) -> [u8; FRAME_LEN] {
        if let Some((_, t)) = self.templates.iter().find(|(p, _)| *p == stream.tx_port) {
            return *t;
        }
        let t = udp_template(ports[stream.tx_port].mac(), stream.peer_mac);
        self.templates.push((stream.tx_port, t));
        t
    }
}

impl Engine for TxOnly {
    #[inline]
    fn burst<P: Port>(
        &mut self,
        stream: &Stream,
        ctx: &mut BurstContext<'_, P>,
        counters: &mut StreamCounters,
    ) -> usize {
        let template = self.template(stream, ctx.ports);
        let mut burst = ArrayVec::new();
        if !ctx.ports[stream.tx_port].alloc_burst(&mut burst, ctx.burst) {
            counters.alloc_failed += 1;
            return 0;
        }
        for buf in burst.iter_mut() {
            if let Some(room) = buf.append(FRAME_LEN) {
                room.copy_from_slice(&template);
            }
        }
        let n = burst.len();
        transmit(stream, ctx, &mut burst, counters);
        n
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    #[test]
    fn the_template_is_a_valid_udp_datagram() {
        let src = MacAddr([2, 0, 0, 0, 0, 1]);
        let dst = MacAddr([2, 0, 0, 0, 0, 2]);
        let frame = udp_template(src, dst);
        let eth = EthernetFrame::new_checked(&frame[..]).expect("ethernet");
        assert_eq!(eth.src_addr(), EthernetAddress(src.octets()));
        assert_eq!(eth.dst_addr(), EthernetAddress(dst.octets()));
        let ip = Ipv4Packet::new_checked(eth.payload()).expect("ipv4");
        assert!(ip.verify_checksum());
        assert_eq!((ip.src_addr(), ip.dst_addr()), (SRC_IP, DST_IP));
        let udp = UdpPacket::new_checked(ip.payload()).expect("udp");
        assert!(udp.verify_checksum(&IpAddress::Ipv4(SRC_IP), &IpAddress::Ipv4(DST_IP)));
        assert_eq!((udp.src_port(), udp.dst_port()), (9, 9));
    }

    #[test]
    fn txonly_sends_a_burst_of_templates() {
        let mut ports = two_ports();
        let c = run_one(&mut TxOnly::default(), &mut ports);
        assert_eq!((c.rx_packets, c.tx_packets), (0, 32));
        let out = ports[1].take_tx();
        let expected = udp_template(ports[1].mac(), stream_0_to_1().peer_mac);
        assert!(out.iter().all(|f| f[..] == expected[..]));
    }
}
