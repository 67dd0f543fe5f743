//! The `wire` parsers (stack/src/wire): each harness parses the input, reads
//! every accessor (no accessor may panic after `check_len`), and where an
//! emitter exists checks parse -> emit -> parse gives the same value, and
//! that the checksum helpers agree with each other (an incremental update
//! leaves a valid checksum valid; a filled one verifies).

use dpstack_stack::port::MacAddr;
use dpstack_stack::wire::arp::{ArpRepr, PACKET_LEN};
use dpstack_stack::wire::ethernet::{EtherType, EthernetFrame};
use dpstack_stack::wire::icmpv4::Icmpv4Packet;
use dpstack_stack::wire::icmpv6::{self, Icmpv6Packet, NdpRepr, RouterAdvert};
use dpstack_stack::wire::ipv4::{Ipv4Header, Ipv4Packet};
use dpstack_stack::wire::ipv6::{self, Ipv6Header, Ipv6Packet};
use dpstack_stack::wire::tcp::{TcpOptions, TcpPacket, TcpRepr};
use dpstack_stack::wire::udp::UdpPacket;
use std::net::{Ipv4Addr, Ipv6Addr};

const SRC4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const DST4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 7);
const SRC6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
const DST6: Ipv6Addr = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 2);

/// Ethernet: the fields written back into a fresh frame give the same bytes.
pub fn ethernet(data: &[u8]) {
    let Ok(frame) = EthernetFrame::new_checked(data) else {
        assert!(data.len() < 14);
        return;
    };
    let (dst, src, ethertype) = (frame.dst(), frame.src(), frame.ethertype());
    assert_eq!(EtherType::from(u16::from(ethertype)), ethertype);
    let _ = (dst.is_broadcast(), dst.is_multicast());
    let mut copy = vec![0u8; data.len()];
    let mut out = EthernetFrame::new_unchecked(&mut copy[..]);
    out.set_dst(dst);
    out.set_src(src);
    out.set_ethertype(ethertype);
    out.payload_mut().copy_from_slice(frame.payload());
    assert_eq!(copy, data);
}

/// ARP: an accepted packet emits back to the same 28 bytes and repr.
pub fn arp(data: &[u8]) {
    let Ok(repr) = ArpRepr::parse(data) else {
        return;
    };
    let mut bytes = [0u8; PACKET_LEN];
    repr.emit(&mut bytes);
    assert_eq!(&bytes[..], &data[..PACKET_LEN], "ARP emit differs");
    assert_eq!(ArpRepr::parse(&bytes), Ok(repr));
}

/// IPv4 with options: accessors stay in bounds; the fixed header
/// round-trips through `emit_header` when it has no options or fragment
/// bits; the checksum helpers agree (fill then verify; the incremental
/// `set_tos` and `reverse_for_reply` keep a valid checksum valid).
pub fn ipv4(data: &[u8]) {
    let Ok(ip) = Ipv4Packet::new_checked(data) else {
        return;
    };
    let header_len = ip.header_len();
    let total = usize::from(ip.total_len());
    assert!(header_len >= 20 && header_len <= total && total <= data.len());
    assert_eq!(ip.header().len(), header_len);
    assert_eq!(ip.payload().len(), total - header_len);
    let valid = ip.verify_checksum();
    let _ = (
        ip.ident(),
        ip.fragment_offset(),
        ip.is_fragment(),
        ip.checksum(),
    );
    assert_eq!(
        ip.is_fragment(),
        ip.more_fragments() || ip.fragment_offset() != 0
    );

    let header = Ipv4Header {
        src: ip.src(),
        dst: ip.dst(),
        protocol: ip.protocol(),
        payload_len: (total - header_len) as u16,
        ttl: ip.ttl(),
        ident: ip.ident(),
        dont_fragment: ip.dont_fragment(),
        tos: ip.tos(),
    };
    // emit_header writes the 20-byte header with only DF among the flags.
    if header_len == 20 && !ip.is_fragment() && data[6] & 0x80 == 0 {
        let mut copy = data[..total].to_vec();
        Ipv4Packet::new_unchecked(&mut copy[..]).emit_header(&header);
        let again = Ipv4Packet::new_checked(&copy[..]).expect("emitted header parses");
        assert!(again.verify_checksum(), "emit_header's checksum is wrong");
        // The checksum may differ in its representation of zero (0x0000
        // and 0xffff both verify), nothing else may.
        assert_eq!(&copy[..10], &data[..10], "emit_header differs");
        assert_eq!(&copy[12..], &data[12..total], "emit_header differs");
    }

    let mut copy = data[..total].to_vec();
    let mut packet = Ipv4Packet::new_unchecked(&mut copy[..]);
    packet.fill_checksum();
    assert!(packet.verify_checksum(), "fill_checksum does not verify");
    let (tos, ttl) = (ip.tos() ^ data[total - 1], ip.ttl().wrapping_add(3));
    let mut copy = data[..total].to_vec();
    let mut packet = Ipv4Packet::new_unchecked(&mut copy[..]);
    packet.set_tos(tos);
    assert_eq!(packet.tos(), tos);
    assert_eq!(
        packet.verify_checksum(),
        valid,
        "set_tos broke the checksum"
    );
    packet.reverse_for_reply(ttl);
    assert_eq!(
        packet.verify_checksum(),
        valid,
        "reverse_for_reply broke the checksum"
    );
    assert_eq!(
        (packet.src(), packet.dst(), packet.ttl()),
        (ip.dst(), ip.src(), ttl)
    );
    assert!(packet.dont_fragment() && !packet.is_fragment());
    assert_eq!(packet.payload(), ip.payload());
}

/// IPv6 with extension-header chains: the fixed header round-trips; the
/// walk ends inside the payload, at a next-header field that holds the
/// protocol it reports.
pub fn ipv6(data: &[u8]) {
    let Ok(ip) = Ipv6Packet::new_checked(data) else {
        return;
    };
    let payload = ip.payload();
    assert_eq!(payload.len(), usize::from(ip.payload_len()));
    let header = Ipv6Header {
        src: ip.src(),
        dst: ip.dst(),
        next_header: ip.next_header(),
        payload_len: ip.payload_len(),
        hop_limit: ip.hop_limit(),
    };
    let end = ipv6::HEADER_LEN + payload.len();
    let mut copy = data[..end].to_vec();
    let mut out = Ipv6Packet::new_unchecked(&mut copy[..]);
    out.emit_header(&header);
    out.set_traffic_class(ip.traffic_class());
    let again = Ipv6Packet::new_checked(&copy[..]).expect("emitted header parses");
    assert_eq!(again.traffic_class(), ip.traffic_class());
    // Everything but the flow label (emit_header writes zero) is the same.
    assert_eq!(copy[0], data[0]);
    assert_eq!(copy[1] & 0xf0, data[1] & 0xf0);
    assert_eq!(&copy[4..], &data[4..end]);

    let Ok(ext) = ipv6::walk_extensions(ip.next_header(), payload) else {
        return;
    };
    assert!(ext.offset <= payload.len(), "the walk ran past the payload");
    assert_eq!(ext.fragment.is_some(), ext.fragment_at.is_some());
    if let (Some(fragment), Some(at)) = (ext.fragment, ext.fragment_at) {
        assert_eq!(fragment.offset % 8, 0);
        assert!(at + 8 <= ext.offset);
    }
    match ext.bad_option {
        Some(bad) => {
            assert!(bad.at < end && (1..=3).contains(&bad.action));
        }
        None => {
            assert!(ext.protocol_at < end);
            assert_eq!(
                data[ext.protocol_at], ext.protocol,
                "protocol_at does not point at the protocol"
            );
        }
    }
}

/// ICMPv4: accessors in bounds; a filled checksum verifies; type, code and
/// the rest of the header are written back as read.
pub fn icmpv4(data: &[u8]) {
    let Ok(icmp) = Icmpv4Packet::new_checked(data) else {
        return;
    };
    let _ = icmp.verify_checksum();
    let mut copy = data.to_vec();
    let mut out = Icmpv4Packet::new_unchecked(&mut copy[..]);
    out.set_type_code(icmp.msg_type(), icmp.code());
    out.set_rest(icmp.echo_ident(), icmp.echo_seq());
    out.fill_checksum();
    assert!(
        out.verify_checksum(),
        "ICMPv4 fill_checksum does not verify"
    );
    assert_eq!(out.payload(), icmp.payload());
    assert_eq!(&copy[..2], &data[..2]);
    assert_eq!(&copy[4..], &data[4..]);
}

/// ICMPv6 and ND: a filled checksum verifies; an accepted NS/NA emits back
/// to the same repr; router advertisements parse without panicking.
pub fn icmpv6(data: &[u8]) {
    if let Ok(icmp) = Icmpv6Packet::new_checked(data) {
        let _ = (icmp.body_word(), icmp.echo_ident(), icmp.echo_seq());
        let _ = icmp.verify_checksum(SRC6, DST6);
        let mut copy = data.to_vec();
        let mut out = Icmpv6Packet::new_unchecked(&mut copy[..]);
        out.set_type_code(icmp.msg_type(), icmp.code());
        out.set_body_word(icmp.body_word());
        out.fill_checksum(SRC6, DST6);
        assert!(
            out.verify_checksum(SRC6, DST6),
            "ICMPv6 fill_checksum does not verify"
        );
        assert_eq!(out.payload(), icmp.payload());
    }
    if let Ok(repr) = NdpRepr::parse(data) {
        let mut bytes = vec![0u8; repr.len()];
        repr.emit(&mut bytes);
        assert_eq!(
            NdpRepr::parse(&bytes),
            Ok(repr),
            "ND emit does not parse back"
        );
    }
    if let Ok(advert) = RouterAdvert::parse(data) {
        let _ = advert;
    }
    let mut solicitation = [0u8; icmpv6::ROUTER_SOLICITATION_LEN];
    let mac = MacAddr([2, data.first().copied().unwrap_or(0), 0, 0, 0, 1]);
    icmpv6::emit_router_solicitation(&mut solicitation, mac);
    assert!(Icmpv6Packet::new_checked(&solicitation[..]).is_ok());
}

/// UDP: header fields round-trip through `emit_header`, whose checksum
/// verifies.
pub fn udp(data: &[u8]) {
    let Ok(udp) = UdpPacket::new_checked(data) else {
        return;
    };
    let len = usize::from(udp.len());
    assert_eq!(udp.payload().len(), len - 8);
    let _ = udp.checksum() == 0
        || udp.verify_checksum(dpstack_stack::wire::checksum::pseudo_header_v4(
            SRC4,
            DST4,
            dpstack_stack::wire::ipv4::protocol::UDP,
            udp.len(),
        ));
    let mut copy = data[..len].to_vec();
    let mut out = UdpPacket::new_unchecked(&mut copy[..]);
    out.emit_header(
        (SRC4, udp.src_port()),
        (DST4, udp.dst_port()),
        (len - 8) as u16,
    );
    assert!(
        (out.checksum() == 0
            || out.verify_checksum(dpstack_stack::wire::checksum::pseudo_header_v4(
                SRC4,
                DST4,
                dpstack_stack::wire::ipv4::protocol::UDP,
                out.len()
            ))),
        "UDP emit_header's checksum"
    );
    assert_ne!(out.checksum(), 0, "a computed zero goes out as 0xffff");
    assert_eq!(&copy[..6], &data[..6]);
    assert_eq!(&copy[8..], &data[8..len]);
}

/// TCP with options: an accepted header emits back to the same repr, and
/// the options alone too; a filled checksum verifies.
pub fn tcp(data: &[u8]) {
    if let Ok(options) = TcpOptions::parse(data) {
        let mut bytes = vec![0u8; options.len()];
        options.emit(&mut bytes);
        assert_eq!(TcpOptions::parse(&bytes), Ok(options), "options round trip");
        assert_eq!(options.len() % 4, 0);
    }
    let Ok(packet) = TcpPacket::new_checked(data) else {
        return;
    };
    assert!(packet.header_len() >= 20 && packet.header_len() <= data.len());
    assert_eq!(
        packet.options().len() + packet.payload().len() + 20,
        data.len()
    );
    let pseudo = u64::from(data.len() as u32);
    let _ = packet.verify_checksum(pseudo);
    let Ok(repr) = TcpRepr::parse(&packet) else {
        return;
    };
    assert!(repr.header_len() <= 60, "options do not fit a TCP header");
    let mut bytes = vec![0u8; repr.header_len() + packet.payload().len()];
    repr.emit(&mut bytes);
    bytes[repr.header_len()..].copy_from_slice(packet.payload());
    let mut out = TcpPacket::new_unchecked(&mut bytes[..]);
    out.fill_checksum(pseudo);
    assert!(out.verify_checksum(pseudo));
    let again = TcpPacket::new_checked(&bytes[..]).expect("emitted segment parses");
    assert_eq!(TcpRepr::parse(&again), Ok(repr), "TCP round trip");
    assert_eq!(again.payload(), packet.payload());
}
