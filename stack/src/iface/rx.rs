//! ICMP and UDP over IPv4: what the IP layer (`ip::input`) hands up.
//!
//! Per packet, owning lcore only: no allocation, no lookup beyond the UDP
//! table's hash probes, no panic (every view is checked before it is read).
//! A frame ends in exactly one of: a reply pushed to the tx batch, a
//! datagram handed back in `delivered`, or a counted drop.

use super::ip::Delivered;
use super::transmit::Out;
use super::tx;
use super::{tcp, Core};
use crate::counters::{DropReason, Stat};
use crate::port::{Buf, ChecksumStatus, MacAddr, Port};
use crate::time::Instant;
use crate::udp::table::FlowKey;
use crate::udp::{Datagram, PeerError};
use crate::wire::checksum;
use crate::wire::ethernet::HEADER_LEN as ETH_LEN;
use crate::wire::icmpv4::{
    msg_type, Icmpv4Packet, CODE_FRAGMENTATION_NEEDED, CODE_PORT_UNREACHABLE,
};
use crate::wire::ipv4::{protocol, Ipv4Packet};
use crate::wire::udp::{UdpPacket, HEADER_LEN as UDP_LEN};
use core::net::{IpAddr, Ipv4Addr, SocketAddrV4};

#[allow(clippy::too_many_arguments)]
pub(super) fn icmp_input<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
    buf: P::Buf,
    eth_src: MacAddr,
    header_len: usize,
    total_len: usize,
    broadcast: bool,
) {
    let start = ETH_LEN + header_len;
    let end = ETH_LEN + total_len;
    let icmp = match Icmpv4Packet::new_checked(&buf.data()[start..end]) {
        Ok(icmp) if icmp.verify_checksum() => icmp,
        _ => return core.lcore.counters.count_drop(DropReason::IcmpMalformed),
    };
    let kind = icmp.msg_type();
    if !broadcast
        && matches!(
            kind,
            msg_type::DEST_UNREACHABLE | msg_type::TIME_EXCEEDED | msg_type::PARAMETER_PROBLEM
        )
    {
        return icmp_error_input(core, out, link, now, &buf.data()[start..end]);
    }
    if kind != msg_type::ECHO_REQUEST || icmp.code() != 0 || broadcast {
        // Echo replies, other types and broadcast pings (ignored, as Linux
        // does).
        return core.lcore.counters.count_drop(DropReason::IcmpUnhandled);
    }
    core.lcore.counters.count(Stat::IcmpInEchos);
    tx::reply_echo_in_place(core, out, link, buf, eth_src, total_len);
}

/// An ICMP error about a packet we sent (RFC 1122 3.2.2): one about a TCP
/// segment goes to its connection ([`tcp::icmp_error`], which checks the
/// quote first); one about a UDP datagram is recorded for the socket that
/// sent it if that socket is connected to the datagram's destination (as
/// the kernel does without IP_RECVERR).
fn icmp_error_input<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
    message: &[u8],
) {
    core.lcore.counters.count(Stat::IcmpInErrors);
    // The quote: the IPv4 header and at least 8 bytes of its payload.
    let quoted = &message[8..];
    let header_len = usize::from(quoted.first().map_or(0, |b| b & 0x0f)) * 4;
    let (Some(head), true) = (quoted.get(header_len..header_len + 8), header_len >= 20) else {
        return core.lcore.counters.count_drop(DropReason::IcmpMalformed);
    };
    let ip = Ipv4Packet::new_unchecked(quoted);
    let (ours, peer) = (ip.src(), ip.dst());
    if !core.is_local(ours) {
        return core.lcore.counters.count_drop(DropReason::IcmpBadQuote);
    }
    let error = match (message[0], message[1]) {
        (msg_type::DEST_UNREACHABLE, CODE_PORT_UNREACHABLE) => PeerError::Refused,
        (msg_type::DEST_UNREACHABLE, CODE_FRAGMENTATION_NEEDED) => PeerError::TooBig {
            mtu: u32::from(u16::from_be_bytes([message[6], message[7]])),
        },
        (msg_type::DEST_UNREACHABLE, _) => PeerError::Unreachable,
        (msg_type::TIME_EXCEEDED, _) => PeerError::TimeExceeded,
        _ => PeerError::ParameterProblem,
    };
    if ip.protocol() == protocol::TCP {
        let sent = usize::from(ip.total_len());
        let quote = tcp::IcmpQuote::new((IpAddr::V4(ours), IpAddr::V4(peer)), head, sent);
        return tcp::icmp_error(core, out, now, quote, tcp::IcmpKind::from(error));
    }
    if ip.protocol() != protocol::UDP {
        return;
    }
    let ports = &head[..4];
    let our_port = u16::from_be_bytes([ports[0], ports[1]]);
    let peer_port = u16::from_be_bytes([ports[2], ports[3]]);
    let peer_addr = SocketAddrV4::new(peer, peer_port);
    let key = FlowKey {
        src: peer_addr,
        dst: SocketAddrV4::new(ours, our_port),
        device: link as u16,
    };
    let Some(socket) = core.shared.udp.lookup(&key) else {
        return;
    };
    // IPv4-mapped peers of IPv6 sockets included.
    if core.shared.udp.peer_addr(socket) == Some(peer_addr) {
        let _ = core.lcore.socket_errors.try_push((socket, error));
    }
}

/// What the IPv4 layer found out for UDP.
pub(super) struct UdpInput {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub header_len: usize,
    pub total_len: usize,
    pub broadcast: bool,
    pub l4_checksum: ChecksumStatus,
}

#[allow(clippy::too_many_arguments)]
pub(super) fn udp_input<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
    buf: P::Buf,
    eth_src: MacAddr,
    l4: UdpInput,
    delivered: &mut Delivered<P::Buf>,
) {
    let start = ETH_LEN + l4.header_len;
    let end = ETH_LEN + l4.total_len;
    let udp = match UdpPacket::new_checked(&buf.data()[start..end]) {
        Ok(udp) => udp,
        Err(_) => return core.lcore.counters.count_drop(DropReason::UdpMalformed),
    };
    let pseudo = || checksum::pseudo_header_v4(l4.src, l4.dst, protocol::UDP, udp.len());
    // Over IPv4 a zero checksum field means none was sent (RFC 768).
    if !core.shared.config.checksum.accepts(l4.l4_checksum, || {
        udp.checksum() == 0 || udp.verify_checksum(pseudo())
    }) {
        return core.lcore.counters.count_drop(DropReason::UdpBadChecksum);
    }
    if udp.src_port() == 0 {
        // Port 0 is no destination: an answer (an echo, a port
        // unreachable) could only go nowhere.
        return core
            .lcore
            .counters
            .count_drop(DropReason::UdpSourcePortZero);
    }
    let src = SocketAddrV4::new(l4.src, udp.src_port());
    let dst = SocketAddrV4::new(l4.dst, udp.dst_port());
    let payload = start + UDP_LEN..start + usize::from(udp.len());
    let key = FlowKey {
        src,
        dst,
        device: link as u16,
    };
    let Some(socket) = core.shared.udp.lookup(&key) else {
        core.lcore.counters.count_drop(DropReason::UdpNoSocket);
        if !l4.broadcast {
            tx::port_unreachable_in_place(core, out, link, now, buf, eth_src, l4.total_len);
        }
        return;
    };
    core.lcore.counters.count(Stat::UdpInDatagrams);
    let datagram = Datagram::new(buf, payload, l4.broadcast, link as u16);
    *delivered = Some((socket, datagram));
}
