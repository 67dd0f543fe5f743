//! The fast paths' header tests, field by field. The fast paths test the
//! fixed header fields of a frame as masked 64-bit words; each case here
//! changes one field of a plain UDP echo request (or one bit the masks
//! leave out) and checks the outcome the general path gives that frame:
//! a frame the fast paths must not take is not echoed as plain UDP (and
//! its drop is counted where one is), and a frame whose change the masks
//! ignore on purpose (TOS, DF, traffic class) is still echoed.

use super::ipv6::{frame6, ip6_udp, our_ll, stack6_echoing, GLOBAL, PEER6};
use super::*;
use core::net::Ipv6Addr;

/// The frames the stack sent back to the peer's port 40000 over either
/// family, whatever their protocol field says (a frame the fast path took
/// by mistake is turned around with its header as it came), after one
/// poll with `frame`.
fn udp_replies_to(iface: &mut Interface<MemBuf>, mem: &mut MemPort, frame: &[u8]) -> usize {
    mem.push_rx(frame);
    poll(iface, mem, &mut Echo);
    mem.take_tx()
        .iter()
        .filter(|out| {
            let transport = match &out[12..14] {
                [0x08, 0x00] => 14 + usize::from(out[14] & 0xf) * 4,
                [0x86, 0xdd] => 14 + 40,
                _ => return false,
            };
            out.get(transport + 2..transport + 4) == Some(&40000u16.to_be_bytes())
        })
        .count()
}

/// A change to a frame: what it changes, the change, the replies it then
/// gets and the drop it is counted as, if one.
type Case = (&'static str, fn(&mut Vec<u8>), usize, Option<DropReason>);

/// Sends `plain` with each case's change (an IPv4 request's header
/// checksum filled again) and checks its replies and its drop.
fn try_each(iface: &mut Interface<MemBuf>, mem: &mut MemPort, plain: &[u8], cases: &[Case]) {
    for &(what, change, replies, drop) in cases {
        let mut frame = plain.to_vec();
        change(&mut frame);
        if plain[12..14] == [0x08, 0x00] && frame[12..14] == [0x08, 0x00] {
            Ipv4Packet::new_unchecked(&mut frame[14..]).fill_checksum();
        }
        let before = drop.map(|reason| iface.counters().dropped(reason));
        assert_eq!(udp_replies_to(iface, mem, &frame), replies, "{what}");
        if let (Some(reason), Some(before)) = (drop, before) {
            assert_eq!(iface.counters().dropped(reason), before + 1, "{what}");
        }
    }
}

#[test]
fn each_ipv4_field_the_fast_path_tests_sends_the_frame_the_general_way() {
    let (mut iface, mut mem) = stack();
    iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 7), BindOptions::default())
        .unwrap();
    let plain = udp_frame(40000, 7, b"gate");
    let cases: [Case; 12] = [
        ("nothing", |_| {}, 1, None),
        ("TOS (masked off)", |f| f[15] = 0xb8, 1, None),
        ("don't fragment (masked off)", |f| f[20] ^= 0x40, 1, None),
        // A host takes any TTL (RFC 1122 3.2.1.7); the reply has its own.
        ("TTL 0", |f| f[22] = 0, 1, None),
        ("more fragments", |f| f[20] |= 0x20, 0, None),
        ("fragment offset", |f| f[21] = 1, 0, None),
        (
            "protocol TCP (too short a segment)",
            |f| f[23] = protocol::TCP,
            0,
            None,
        ),
        ("version 6 in an IPv4 EtherType", |f| f[14] = 0x65, 0, None),
        ("destination MAC, last byte", |f| f[5] ^= 0x10, 0, None),
        ("destination MAC, first byte", |f| f[0] ^= 0x04, 0, None),
        ("group source MAC", |f| f[6] |= 1, 0, None),
        ("IPv6 EtherType", |f| f[13] = 0xdd, 0, None),
    ];
    try_each(&mut iface, &mut mem, &plain, &cases);
    // The stack still answers after all of them.
    assert_eq!(udp_replies_to(&mut iface, &mut mem, &plain), 1);
}

#[test]
fn each_ipv6_field_the_fast_path_tests_sends_the_frame_the_general_way() {
    let (mut iface, mut mem) = stack6_echoing();
    let plain = frame6(
        OUR_MAC,
        &ip6_udp((PEER6, 40000), (GLOBAL, 7), b"gate", None),
    );
    let cases: [Case; 8] = [
        ("nothing", |_| {}, 1, None),
        ("traffic class (masked off)", |f| f[14] = 0x6b, 1, None),
        // A destination takes any hop limit (RFC 8200 3).
        ("hop limit 0", |f| f[21] = 0, 1, None),
        (
            "next header TCP (too short a segment)",
            |f| f[20] = protocol::TCP,
            0,
            None,
        ),
        ("version 4 in an IPv6 EtherType", |f| f[14] = 0x40, 0, None),
        ("destination MAC, last byte", |f| f[5] ^= 0x10, 0, None),
        ("group source MAC", |f| f[6] |= 1, 0, None),
        (
            "IPv4 EtherType",
            |f| f[12..14].copy_from_slice(&[0x08, 0x00]),
            0,
            None,
        ),
    ];
    try_each(&mut iface, &mut mem, &plain, &cases);
    assert_eq!(udp_replies_to(&mut iface, &mut mem, &plain), 1);
    // The link's first global address is compared first; its other
    // addresses are found in its list, and another host's are not ours.
    let to = |dst| frame6(OUR_MAC, &ip6_udp((PEER6, 40000), (dst, 7), b"gate", None));
    assert_eq!(udp_replies_to(&mut iface, &mut mem, &to(our_ll())), 1);
    let elsewhere = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x99);
    assert_eq!(udp_replies_to(&mut iface, &mut mem, &to(elsewhere)), 0);
}
