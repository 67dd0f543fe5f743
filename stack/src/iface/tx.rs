//! The IPv4 send path: ICMP replies built in the received buffer, and the
//! hand-off of a finished IPv4 frame to its link, fragmented to the MTU
//! ([`transmit_ipv4`]). UDP's replies and sends are in `udp`.
//!
//! Replies reuse the request's buffer: an ICMP echo is rewritten in
//! place; an ICMP port-unreachable grows the datagram's headroom by 28
//! bytes to put new Ethernet, IPv4 and ICMP headers in front of the
//! original IP header.

use super::buffers::new_frame;
use super::config::DEFAULT_HOP_LIMIT;
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

/// Swaps the Ethernet addresses: the reply goes back to the previous hop.
fn turn_around_ethernet<B: Buf>(buf: &mut B, our_mac: MacAddr, eth_src: MacAddr) {
    let mut eth = EthernetFrame::new_unchecked(buf.data_mut());
    eth.set_dst(eth_src);
    eth.set_src(our_mac);
}

/// Turns the IPv4 header around for a reply. A plain 20-byte header is
/// rewritten in place with an incremental checksum update (the common case);
/// a header with options is rebuilt without them, right before the payload.
fn turn_around_ipv4<B: Buf>(core: &mut Core<B>, buf: &mut B, mtu: usize) {
    let Some(bytes) = buf.data_mut().get_mut(ETH_LEN..) else {
        return;
    };
    let ip = Ipv4Packet::new_unchecked(&*bytes);
    let header_len = ip.header_len();
    let fits = usize::from(ip.total_len()) <= mtu;
    if header_len == IP_LEN && fits {
        return Ipv4Packet::new_unchecked(bytes).reverse_for_reply(DEFAULT_HOP_LIMIT);
    }
    let (src, dst, proto, payload_len) = (
        ip.src(),
        ip.dst(),
        ip.protocol(),
        ip.total_len().saturating_sub(header_len as u16),
    );
    let start = header_len - IP_LEN;
    let ident = core.ident();
    Ipv4Packet::new_unchecked(&mut bytes[start..]).emit_header(&Ipv4Header {
        src: dst,
        dst: src,
        protocol: proto,
        payload_len,
        ttl: DEFAULT_HOP_LIMIT,
        ident,
        dont_fragment: false,
        tos: 0,
    });
    if start > 0 {
        // Move the Ethernet header up to the new IP header.
        let data = buf.data_mut();
        data.copy_within(0..ETH_LEN, start);
        buf.adjust(start);
    }
}

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
    let Some((mac, mtu)) = core.links.get(link).map(|l| (l.mac, l.mtu)) else {
        return core.counters.count_drop(DropReason::TxNoRoute);
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
    core.counters.count(Stat::IcmpOutEchoReps);
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
    if !core.icmp_limit.take(now) {
        return core.counters.count_drop(DropReason::IcmpRateLimited);
    }
    let Some(mac) = core.links.get(link).map(|l| l.mac) else {
        return core.counters.count_drop(DropReason::TxNoRoute);
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
        return core.counters.count_drop(DropReason::TxNoBuffer);
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
    core.counters.count(Stat::IcmpOutDestUnreachs);
    transmit_ipv4(core, out, link, buf);
}

/// Sends a finished IPv4 frame out of `link`, fragmenting it if it exceeds
/// the link's MTU.
pub(crate) fn transmit_ipv4<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    buf: P::Buf,
) {
    core.counters.count(Stat::IpOutRequests);
    let Some(mtu) = core.links.get(link).map(|l| l.mtu) else {
        return core.counters.count_drop(DropReason::TxNoRoute);
    };
    if buf.len() <= ETH_LEN + mtu {
        return out.push(link, buf, &core.counters);
    }
    fragment(core, out, link, mtu, &buf);
}

/// Splits an oversized IPv4 frame into fragments in new buffers (slow path).
fn fragment<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    mtu: usize,
    whole: &P::Buf,
) {
    let data = whole.data();
    let ip = Ipv4Packet::new_unchecked(&data[ETH_LEN..]);
    let header = Ipv4Header {
        src: ip.src(),
        dst: ip.dst(),
        protocol: ip.protocol(),
        payload_len: 0,
        ttl: ip.ttl(),
        ident: ip.ident(),
        dont_fragment: false,
        tos: ip.tos(),
    };
    let start = ETH_LEN + ip.header_len();
    let end = (ETH_LEN + usize::from(ip.total_len())).min(data.len());
    let payload = &data[start.min(end)..end];
    let chunk = (mtu.saturating_sub(IP_LEN) & !7).max(8);
    let pieces = payload.len().div_ceil(chunk);
    for (i, piece) in payload.chunks(chunk).enumerate() {
        let len = ETH_LEN + IP_LEN + piece.len();
        let Some(mut buf) = new_frame(&core.counters, out, link, len) else {
            return;
        };
        let frame = buf.data_mut();
        frame[..ETH_LEN].copy_from_slice(&data[..ETH_LEN]);
        frame[ETH_LEN + IP_LEN..].copy_from_slice(piece);
        let mut ip = Ipv4Packet::new_unchecked(&mut frame[ETH_LEN..]);
        ip.emit_header(&Ipv4Header {
            payload_len: piece.len() as u16,
            ..header
        });
        ip.set_fragment(i * chunk, i + 1 < pieces);
        ip.fill_checksum();
        core.counters.count(Stat::IpFragCreates);
        out.push(link, buf, &core.counters);
    }
    core.counters.count(Stat::IpFragOKs);
}
