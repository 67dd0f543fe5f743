//! ICMP and ICMPv6 echo requests sent on behalf of a `ping` command, and
//! [`parse_echo_reply`] to recognise the answers on the receive side.

use crate::counters::DropReason;
use crate::iface::{ip_out, transmit::Out, udp, Interface, SendError};
use crate::port::{Buf, Port};
use crate::time::Instant;
use crate::wire::ethernet::HEADER_LEN as ETH_LEN;
use crate::wire::icmpv4::{msg_type, Icmpv4Packet, HEADER_LEN as ICMP_LEN};
use crate::wire::icmpv6::{msg_type as msg_type6, Icmpv6Packet};
use crate::wire::ipv4::protocol;
use crate::wire::ipv6::next_header;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddrV6};

/// An ICMP or ICMPv6 echo reply seen on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EchoReply {
    /// Who answered.
    pub src: IpAddr,
    /// The identifier of the request it answers.
    pub ident: u16,
    /// Its sequence number.
    pub seq: u16,
    /// The TTL (hop limit) it arrived with.
    pub ttl: u8,
    /// Bytes of ICMP message (header and data), as `ping` counts them.
    pub len: usize,
}

/// The echo reply in Ethernet `frame`, if it carries one (an IPv4 packet
/// without options fragments, or an IPv6 packet without extension headers).
/// Checksums are not verified: this only recognises answers.
pub fn parse_echo_reply(frame: &[u8]) -> Option<EchoReply> {
    let ip = frame.get(ETH_LEN..)?;
    match u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]) {
        0x0800 => {
            let header = usize::from(ip.first()? & 0x0f) * 4;
            let total = usize::from(u16::from_be_bytes([*ip.get(2)?, *ip.get(3)?]));
            let fragment = u16::from_be_bytes([*ip.get(6)?, *ip.get(7)?]) & 0x3fff;
            if ip[0] >> 4 != 4 || header < 20 || *ip.get(9)? != protocol::ICMP || fragment != 0 {
                return None;
            }
            let icmp = Icmpv4Packet::new_checked(ip.get(header..total)?).ok()?;
            (icmp.msg_type() == msg_type::ECHO_REPLY).then(|| EchoReply {
                src: IpAddr::V4(Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15])),
                ident: icmp.echo_ident(),
                seq: icmp.echo_seq(),
                ttl: ip[8],
                len: total - header,
            })
        }
        0x86dd => {
            let len = usize::from(u16::from_be_bytes([*ip.get(4)?, *ip.get(5)?]));
            if *ip.get(6)? != next_header::ICMPV6 {
                return None;
            }
            let icmp = Icmpv6Packet::new_checked(ip.get(40..40 + len)?).ok()?;
            let src: [u8; 16] = ip.get(8..24)?.try_into().ok()?;
            (icmp.msg_type() == msg_type6::ECHO_REPLY).then(|| EchoReply {
                src: IpAddr::V6(Ipv6Addr::from(src)),
                ident: icmp.echo_ident(),
                seq: icmp.echo_seq(),
                ttl: ip[7],
                len,
            })
        }
        _ => None,
    }
}

impl<B: Buf> Interface<B> {
    /// Sends an ICMP (or ICMPv6) echo request to `dst` with `ident`, `seq`
    /// and `data` as its payload, from the address the route to `dst`
    /// names, through `ports` (in link order). It waits in the neighbour's
    /// queue while the next hop is being resolved.
    pub fn send_echo_request<P: Port<Buf = B>>(
        &mut self,
        ports: &mut [P],
        now: Instant,
        dst: IpAddr,
        (ident, seq): (u16, u16),
        data: &[u8],
    ) -> Result<(), SendError> {
        let links = ports.len().min(self.batches.len());
        let core = &mut self.core;
        let mut out = Out::new(&mut ports[..links], &mut self.batches[..links]);
        let sent = match dst {
            IpAddr::V4(dst) => {
                let Some(hop) = core.shared.ip.v4.routes.next_hop(dst) else {
                    core.lcore.counters.count_drop(DropReason::TxNoRoute);
                    return Err(SendError::NoRoute);
                };
                let buf = echo_buffer(&mut out, usize::from(hop.port), (ident, seq), data, None)?;
                let ends = (hop.source, dst);
                ip_out::send_ipv4(core, &mut out, now, ends, (protocol::ICMP, 0), buf).map(|_| ())
            }
            IpAddr::V6(dst) => {
                let target = SocketAddrV6::new(dst, 0, 0, 0);
                let Some(path) = udp::path6(core, Ipv6Addr::UNSPECIFIED, &target) else {
                    core.lcore.counters.count_drop(DropReason::TxNoRoute);
                    return Err(SendError::NoRoute);
                };
                let ends = Some((path.source, dst));
                let buf = echo_buffer(&mut out, path.link, (ident, seq), data, ends)?;
                let ends = (path.source, dst, 0);
                ip_out::send_ipv6(core, &mut out, now, ends, (next_header::ICMPV6, 0), buf)
                    .map(|_| ())
            }
        };
        out.flush(&core.lcore.counters);
        sent
    }
}

/// A buffer from `link`'s pool holding an echo request (ICMPv6 when `v6`
/// gives the addresses its checksum covers).
fn echo_buffer<P: Port>(
    out: &mut Out<'_, P>,
    link: usize,
    (ident, seq): (u16, u16),
    data: &[u8],
    v6: Option<(Ipv6Addr, Ipv6Addr)>,
) -> Result<P::Buf, SendError> {
    let mut buf = out.alloc(link).ok_or(SendError::NoBuffer)?;
    let message = buf
        .append(ICMP_LEN + data.len())
        .ok_or(SendError::NoBuffer)?;
    message[ICMP_LEN..].copy_from_slice(data);
    match v6 {
        None => {
            let mut icmp = Icmpv4Packet::new_unchecked(message);
            icmp.set_type_code(msg_type::ECHO_REQUEST, 0);
            icmp.set_rest(ident, seq);
            icmp.fill_checksum();
        }
        Some((src, dst)) => {
            let mut icmp = Icmpv6Packet::new_unchecked(message);
            icmp.set_type_code(msg_type6::ECHO_REQUEST, 0);
            let (i, s) = (ident.to_be_bytes(), seq.to_be_bytes());
            icmp.set_body_word([i[0], i[1], s[0], s[1]]);
            icmp.fill_checksum(src, dst);
        }
    }
    Ok(buf)
}
