//! IPv4 in: one packet that `ethernet` found addressed to us, through IPv4
//! and ICMP (UDP datagrams go on to `udp`, TCP segments to `tcp`).
//!
//! Per packet, owning lcore only: no allocation, no lookup beyond the UDP
//! table's hash probes, no panic (every view is checked before it is read).
//! A frame ends in exactly one of: a reply pushed to the tx batch, a
//! datagram handed back in `delivered`, or a counted drop. The step that
//! hands a fragment to reassembly ([`reassemble`]) serves IPv6 too.

use super::transmit::Out;
use super::tx;
use super::{tcp, Core};
use crate::counters::{DropReason, Stat};
use crate::port::{Buf, MacAddr, Port};
use crate::time::Instant;
use crate::udp::table::FlowKey;
use crate::udp::PeerError;
use crate::wire::ethernet::HEADER_LEN as ETH_LEN;
use crate::wire::icmpv4::{
    msg_type, Icmpv4Packet, CODE_FRAGMENTATION_NEEDED, CODE_PORT_UNREACHABLE,
};
use crate::wire::ipv4::{protocol, Ipv4Packet};
use core::net::{IpAddr, SocketAddrV4};

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
