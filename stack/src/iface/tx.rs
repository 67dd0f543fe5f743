//! The IPv4 send path: ICMP replies built in the received buffer, and the
//! hand-off of a finished IPv4 frame to its link, fragmented to the MTU
//! ([`transmit_ipv4`]). UDP's replies and sends are in `udp`.
//!
//! Replies reuse the request's buffer: an ICMP echo is rewritten in
//! place; an ICMP port-unreachable grows the datagram's headroom by 28
//! bytes to put new Ethernet, IPv4 and ICMP headers in front of the
//! original IP header.

use super::config::DEFAULT_HOP_LIMIT;
use super::ip::{transmit_ipv4, turn_around_ethernet, turn_around_ipv4};
use super::transmit::Out;
use super::Core;
use crate::counters::{DropReason, Stat};
use crate::port::{Buf, MacAddr, Port};
use crate::time::Instant;
use crate::wire::ethernet::{EtherType, EthernetFrame, HEADER_LEN as ETH_LEN};
use crate::wire::icmpv4::{msg_type, Icmpv4Packet, CODE_PORT_UNREACHABLE, HEADER_LEN as ICMP_LEN};
use crate::wire::ipv4::{protocol, Ipv4Header, Ipv4Packet, HEADER_LEN as IP_LEN};

/// Bytes of the offending datagram quoted in an ICMP error (576-byte limit).
const ICMP_QUOTE_MAX: usize = 576 - IP_LEN - ICMP_LEN;

/// Turns an echo request into its reply, in place.
pub(crate) fn reply_echo_in_place<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    mut buf: P::Buf,
    eth_src: MacAddr,
    ip_total_len: usize,
) {
    let padding = buf.len().saturating_sub(ETH_LEN + ip_total_len);
    if padding > 0 {
        buf.trim(padding);
    }
    let Some((mac, mtu)) = core.shared.links.get(link).map(|l| (l.mac, l.mtu)) else {
        return core.lcore.counters.count_drop(DropReason::TxNoRoute);
    };
    turn_around_ipv4(core, &mut buf, mtu);
    turn_around_ethernet(&mut buf, mac, eth_src);
    let Some(ip_bytes) = buf.data_mut().get_mut(ETH_LEN..) else {
        return;
    };
    let header_len = Ipv4Packet::new_unchecked(&*ip_bytes).header_len();
    let mut icmp = Icmpv4Packet::new_unchecked(&mut ip_bytes[header_len..]);
    icmp.set_type_code(msg_type::ECHO_REPLY, 0);
    icmp.fill_checksum();
    core.lcore.counters.count(Stat::IcmpOutEchoReps);
    transmit_ipv4(core, out, link, buf);
}

/// Answers a datagram for a closed port with ICMP port unreachable, reusing
/// its buffer, within the ICMP error rate limit.
pub(crate) fn port_unreachable_in_place<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
    mut buf: P::Buf,
    eth_src: MacAddr,
    ip_total_len: usize,
) {
    if !core.lcore.icmp_limit.take(now) {
        return core.lcore.counters.count_drop(DropReason::IcmpRateLimited);
    }
    let Some(mac) = core.shared.links.get(link).map(|l| l.mac) else {
        return core.lcore.counters.count_drop(DropReason::TxNoRoute);
    };
    let (src, dst) = {
        let ip = Ipv4Packet::new_unchecked(&buf.data()[ETH_LEN..]);
        (ip.src(), ip.dst())
    };
    let quoted = ip_total_len.min(ICMP_QUOTE_MAX);
    let keep = ETH_LEN + quoted;
    let excess = buf.len().saturating_sub(keep);
    buf.trim(excess);
    // New headers: Ethernet + IPv4 + ICMP in front of the quoted IP header,
    // which today sits right after the old Ethernet header.
    if buf.prepend(IP_LEN + ICMP_LEN).is_none() {
        return core.lcore.counters.count_drop(DropReason::TxNoBuffer);
    }
    let ident = core.ident();
    let data = buf.data_mut();
    let mut eth = EthernetFrame::new_unchecked(&mut *data);
    eth.set_dst(eth_src);
    eth.set_src(mac);
    eth.set_ethertype(EtherType::Ipv4);
    Ipv4Packet::new_unchecked(&mut data[ETH_LEN..]).emit_header(&Ipv4Header {
        src: dst,
        dst: src,
        protocol: protocol::ICMP,
        payload_len: (ICMP_LEN + quoted) as u16,
        ttl: DEFAULT_HOP_LIMIT,
        ident,
        dont_fragment: false,
        tos: 0,
    });
    let mut icmp = Icmpv4Packet::new_unchecked(&mut data[ETH_LEN + IP_LEN..]);
    icmp.set_type_code(msg_type::DEST_UNREACHABLE, CODE_PORT_UNREACHABLE);
    icmp.set_rest(0, 0);
    icmp.fill_checksum();
    core.lcore.counters.count(Stat::IcmpOutDestUnreachs);
    transmit_ipv4(core, out, link, buf);
}
