//! IPv4 in: one packet that `ethernet` found addressed to us, through IPv4
//! and UDP (ICMP messages go on to `icmp4`, TCP segments to `tcp`).
//!
//! Per packet, owning lcore only: no allocation, no lookup beyond the UDP
//! table's hash probes, no panic (every view is checked before it is read).
//! A frame ends in exactly one of: a reply pushed to the tx batch, a
//! datagram handed back in `delivered`, or a counted drop. The step that
//! hands a fragment to reassembly ([`reassemble`]) serves IPv6 too.

use super::fast::is_martian;
use super::icmp::IcmpIn;
use super::icmp4::{icmp_input, port_unreachable_in_place};
use super::transmit::Out;
use super::Core;
use crate::counters::{Counters, DropReason, Stat};
use crate::port::{Buf, ChecksumStatus, MacAddr, Port};
use crate::reassembly::{Fragment, FragmentKey, Key4, Reassembler, Reassembly};
use crate::time::Instant;
use crate::udp::table::FlowKey;
use crate::udp::{Datagram, SocketId};
use crate::wire::ethernet::HEADER_LEN as ETH_LEN;
use crate::wire::ipv4::{protocol, Ipv4Packet, HEADER_LEN as IP_LEN};
use crate::wire::udp::{UdpPacket, HEADER_LEN as UDP_LEN};
use crate::wire::{checksum, WireError};
use core::net::{IpAddr, Ipv4Addr, SocketAddrV4};

/// A datagram the receive path accepted, with its socket.
pub(super) type Delivered<B> = Option<(SocketId, Datagram<B>)>;

pub(super) fn ipv4_input<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
    buf: P::Buf,
    eth_src: MacAddr,
    delivered: &mut Delivered<P::Buf>,
) {
    core.counters.count(Stat::IpInReceives);
    let offload = buf.rx_offload();
    let ip = match Ipv4Packet::new_checked(&buf.data()[ETH_LEN..]) {
        Ok(ip) => ip,
        Err(WireError::Truncated) => return core.counters.count_drop(DropReason::Ipv4Truncated),
        Err(_) => return core.counters.count_drop(DropReason::Ipv4Malformed),
    };
    if !core
        .config
        .checksum
        .accepts(offload.ip_checksum, || ip.verify_checksum())
    {
        return core.counters.count_drop(DropReason::Ipv4BadChecksum);
    }
    let (src, dst) = (ip.src(), ip.dst());
    if is_martian(core, src) {
        return core.counters.count_drop(DropReason::Ipv4MartianSource);
    }
    let broadcast = core.is_broadcast(dst);
    if !broadcast && !core.is_local(dst) {
        return core.counters.count_drop(DropReason::Ipv4NotForUs);
    }
    if ip.ttl() == 0 {
        return core.counters.count_drop(DropReason::Ipv4TtlExpired);
    }
    let local = Local {
        src,
        dst,
        header_len: ip.header_len(),
        total_len: usize::from(ip.total_len()),
        protocol: ip.protocol(),
        broadcast,
        l4_checksum: offload.l4_checksum,
    };
    if !ip.is_fragment() {
        return deliver_local(core, out, link, now, buf, eth_src, local, delivered);
    }
    core.counters.count(Stat::IpReasmReqds);
    let fragment = Fragment {
        key: Key4 {
            src,
            dst,
            protocol: local.protocol,
            ident: ip.ident(),
        },
        protocol: local.protocol,
        offset: ip.fragment_offset(),
        more: ip.more_fragments(),
        payload_start: ETH_LEN + local.header_len,
        payload_len: local.total_len - local.header_len,
        ttl: ip.ttl(),
    };
    let reassembler = &mut core.reassembler;
    let piece = (&buf, fragment);
    let Some(whole) = reassemble(reassembler, &core.counters, out, link, now, piece) else {
        return;
    };
    core.counters.count(Stat::IpReasmOKs);
    let local = Local {
        header_len: IP_LEN,
        total_len: whole.len() - ETH_LEN,
        l4_checksum: ChecksumStatus::Unknown,
        ..local
    };
    deliver_local(core, out, link, now, whole, eth_src, local, delivered);
}

/// Adds the fragment in `buf` to its datagram, IPv4 and IPv6 alike: the
/// whole datagram once its last piece came, `None` while pieces are
/// missing or when the fragment was dropped (counted).
pub(super) fn reassemble<P: Port, K: FragmentKey>(
    reassembler: &mut Reassembler<P::Buf, K>,
    counters: &Counters,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
    (buf, fragment): (&P::Buf, Fragment<K>),
) -> Option<P::Buf> {
    let Some(port) = out.port(link) else {
        counters.count_drop(DropReason::EthNotForUs);
        return None;
    };
    match reassembler.add(port, buf, fragment, now, counters) {
        Reassembly::Pending => None,
        Reassembly::Dropped(reason) => {
            counters.count_drop(reason);
            None
        }
        Reassembly::Complete(whole) => Some(whole),
    }
}

/// A datagram for us, validated (and reassembled if it was fragmented).
#[derive(Debug, Clone, Copy)]
struct Local {
    src: Ipv4Addr,
    dst: Ipv4Addr,
    header_len: usize,
    total_len: usize,
    protocol: u8,
    broadcast: bool,
    l4_checksum: ChecksumStatus,
}

#[allow(clippy::too_many_arguments)]
fn deliver_local<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
    buf: P::Buf,
    eth_src: MacAddr,
    local: Local,
    delivered: &mut Delivered<P::Buf>,
) {
    core.counters.count(Stat::IpInDelivers);
    match local.protocol {
        protocol::ICMP => {
            let message = IcmpIn {
                eth_src,
                src: local.src,
                dst: local.dst,
                to_group: local.broadcast,
                start: ETH_LEN + local.header_len,
                end: ETH_LEN + local.total_len,
            };
            icmp_input(core, out, link, now, buf, message)
        }
        protocol::UDP => {
            let l4 = UdpInput {
                src: local.src,
                dst: local.dst,
                header_len: local.header_len,
                total_len: local.total_len,
                broadcast: local.broadcast,
                l4_checksum: local.l4_checksum,
            };
            udp_input(core, out, link, now, buf, eth_src, l4, delivered)
        }
        protocol::TCP if !local.broadcast => {
            let start = ETH_LEN + local.header_len;
            let end = ETH_LEN + local.total_len;
            let addresses = (IpAddr::V4(local.src), IpAddr::V4(local.dst));
            super::tcp::input(
                core,
                out,
                now,
                buf,
                addresses,
                start..end,
                0,
                local.l4_checksum,
            )
        }
        _ => core.counters.count_drop(DropReason::Ipv4UnknownProtocol),
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
fn udp_input<P: Port>(
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
        Err(_) => return core.counters.count_drop(DropReason::UdpMalformed),
    };
    let pseudo = || checksum::pseudo_header_v4(l4.src, l4.dst, protocol::UDP, udp.len());
    // Over IPv4 a zero checksum field means none was sent (RFC 768).
    if !core.config.checksum.accepts(l4.l4_checksum, || {
        udp.checksum() == 0 || udp.verify_checksum(pseudo())
    }) {
        return core.counters.count_drop(DropReason::UdpBadChecksum);
    }
    if udp.src_port() == 0 {
        // Port 0 is no destination: an answer (an echo, a port
        // unreachable) could only go nowhere.
        return core.counters.count_drop(DropReason::UdpSourcePortZero);
    }
    let src = SocketAddrV4::new(l4.src, udp.src_port());
    let dst = SocketAddrV4::new(l4.dst, udp.dst_port());
    let payload = start + UDP_LEN..start + usize::from(udp.len());
    let key = FlowKey {
        src,
        dst,
        device: link as u16,
    };
    let Some(socket) = core.udp.lookup(&key) else {
        core.counters.count_drop(DropReason::UdpNoSocket);
        if !l4.broadcast {
            port_unreachable_in_place(core, out, link, now, buf, eth_src, l4.total_len);
        }
        return;
    };
    core.counters.count(Stat::UdpInDatagrams);
    let datagram = Datagram::new(buf, payload, l4.broadcast, link as u16);
    *delivered = Some((socket, datagram));
}
