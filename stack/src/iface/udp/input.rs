//! UDP in, the general path, both families ([`Poll::udp_input`]): what the IP
//! layer handed over is checked (length, checksum) and looked up; a
//! datagram for a closed port is answered with the family's port
//! unreachable. A datagram from source port 0 is delivered, as Linux does
//! (only a send to port 0 is refused, `SendError::PortZero`).
//!
//! Per packet, owning lcore only: no allocation, no panic. A datagram ends
//! in exactly one of: handed back in `delivered`, or a counted drop (with
//! perhaps an ICMP error sent).

use super::super::poll::{Arrival, Poll};
use super::family::{UdpFamily, UdpIn};
use super::fanout::first_member;
use super::Delivered;
use crate::counters::{DropReason, Stat};
use crate::port::{Buf, Port};
use crate::udp::Datagram;
use crate::wire::udp::{UdpPacket, HEADER_LEN as UDP_LEN};

impl<P: Port> Poll<'_, '_, P> {
    /// Receives the UDP datagram at `l4.start..l4.end` of `buf`: length and
    /// checksum checked (a zero checksum is "none" over IPv4 only), the
    /// socket looked up, the datagram handed back for delivery.
    pub(crate) fn udp_input<A: UdpFamily>(
        &mut self,
        buf: P::Buf,
        arrival: Arrival,
        l4: UdpIn<A>,
        delivered: &mut Delivered<P::Buf>,
    ) {
        let (core, link) = (&mut *self.core, arrival.link);
        let Some(segment) = buf.data().get(l4.start..l4.end) else {
            return core.lcore.counters.count_drop(DropReason::UdpMalformed);
        };
        let Ok(udp) = UdpPacket::new_checked(segment) else {
            return core.lcore.counters.count_drop(DropReason::UdpMalformed);
        };
        let udp_len = udp.len();
        let checksum = udp.checksum();
        // Over IPv6 a zero checksum is refused whatever the device said: a
        // device may take it for "none", as over IPv4.
        let refused_zero = checksum == 0 && !A::ZERO_CHECKSUM_IS_NONE;
        let verify = || match checksum {
            0 => A::ZERO_CHECKSUM_IS_NONE,
            _ => udp.verify_checksum(A::pseudo_header(l4.src, l4.dst, udp_len)),
        };
        if refused_zero || !core.shared.config.checksum.accepts(l4.l4_checksum, verify) {
            return core.lcore.counters.count_drop(DropReason::UdpBadChecksum);
        }
        let (src, dst) = ((l4.src, udp.src_port()), (l4.dst, udp.dst_port()));
        let payload = l4.start + UDP_LEN..l4.start + usize::from(udp_len);
        if l4.to_group {
            let here = core.shared.links.get(link);
            if let Some(members) = here.and_then(|l| l.group_members(l4.dst.into())) {
                // A group sockets join: only its members on this link
                // hear it, never answered with an error.
                let mut datagram = Datagram::new(buf, payload, true, link as u16);
                datagram.v6 = A::V6;
                let Some(socket) = first_member(core, &datagram, members) else {
                    return core.lcore.counters.count_drop(DropReason::UdpNotMember);
                };
                core.lcore.counters.count(Stat::UdpInDatagrams);
                *delivered = Some((socket, datagram));
                return;
            }
        }
        let Some(socket) = A::lookup(core, src, dst, link) else {
            core.lcore.counters.count_drop(DropReason::UdpNoSocket);
            return A::port_unreachable(self, buf, arrival, &l4);
        };
        core.lcore.counters.count(Stat::UdpInDatagrams);
        let mut datagram = Datagram::new(buf, payload, l4.to_group, link as u16);
        datagram.v6 = A::V6;
        *delivered = Some((socket, datagram));
    }
}
