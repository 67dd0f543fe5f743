//! The session table: insert, O(1) lookup by socket, removal and slot
//! reuse with stale ids refused, refused inserts leaving nothing behind.

use super::*;
use core::net::{Ipv4Addr, SocketAddrV4};
use dpstack_stack::udp::{BindOptions, UdpTable};

/// `n` sockets bound to consecutive ports from 20000.
fn sockets(n: u16) -> (UdpTable, Vec<SocketId>) {
    let mut table = UdpTable::new(1);
    let ids = (0..n)
        .map(|i| {
            let local = SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 20000 + i);
            table.bind(local, BindOptions::default(), |_| true).unwrap()
        })
        .collect();
    (table, ids)
}

fn legs(s: &[SocketId]) -> [LegSockets; 2] {
    [
        LegSockets {
            rtp: s[0],
            rtcp: Some(s[1]),
        },
        LegSockets {
            rtp: s[2],
            rtcp: Some(s[3]),
        },
    ]
}

#[test]
fn every_socket_finds_its_session_leg_and_channel() {
    let (_udp, s) = sockets(8);
    let mut table = SessionTable::new();
    let first = table.insert(legs(&s[..4]), "first").unwrap();
    let second = table.insert(legs(&s[4..]), "second").unwrap();
    assert_eq!(table.len(), 2);
    let expect = [
        (Leg::A, Channel::Rtp),
        (Leg::A, Channel::Rtcp),
        (Leg::B, Channel::Rtp),
        (Leg::B, Channel::Rtcp),
    ];
    for (i, &(leg, channel)) in expect.iter().enumerate() {
        for (id, offset) in [(first, 0), (second, 4)] {
            let endpoint = table.lookup(s[offset + i]).unwrap();
            assert_eq!(
                endpoint,
                Endpoint {
                    session: id,
                    leg,
                    channel
                }
            );
        }
    }
    let entry = table.lookup_mut(s[6]).unwrap();
    assert_eq!(*entry.value, "second");
    assert_eq!(entry.legs[Leg::B.index()].rtp, s[6]);
    assert_eq!(entry.legs[entry.endpoint.leg.other().index()].rtp, s[4]);
    *entry.value = "changed";
    assert_eq!(table.get(second), Some(&"changed"));
    assert_eq!(table.legs(first), Some(legs(&s[..4])));
}

#[test]
fn rtcp_mux_legs_have_one_socket_that_sends_both() {
    let (_udp, s) = sockets(2);
    let mut table = SessionTable::new();
    let mux = [
        LegSockets {
            rtp: s[0],
            rtcp: None,
        },
        LegSockets {
            rtp: s[1],
            rtcp: None,
        },
    ];
    let id = table.insert(mux, ()).unwrap();
    assert_eq!(table.lookup(s[1]).unwrap().leg, Leg::B);
    let legs = table.legs(id).unwrap();
    assert!(legs[0].is_mux());
    assert_eq!(legs[0].sender(Channel::Rtcp), s[0]);
    assert_eq!(legs[1].sender(Channel::Rtp), s[1]);
}

#[test]
fn removal_unmaps_the_sockets_and_stale_ids_miss_the_reused_slot() {
    let (_udp, s) = sockets(8);
    let mut table = SessionTable::with_capacity(4, 16);
    let old = table.insert(legs(&s[..4]), 1).unwrap();
    assert_eq!(table.remove(old), Some((legs(&s[..4]), 1)));
    assert!(table.is_empty());
    for &socket in &s[..4] {
        assert_eq!(table.lookup(socket), None);
        assert!(table.lookup_mut(socket).is_none());
    }
    assert_eq!(table.remove(old), None, "removed twice");
    // The slot is reused: the old id does not reach the new session.
    let new = table.insert(legs(&s[4..]), 2).unwrap();
    assert_eq!(new.index(), old.index());
    assert_ne!(new, old);
    assert_eq!(table.get(old), None);
    assert_eq!(table.get_mut(old), None);
    assert_eq!(table.legs(old), None);
    assert_eq!(table.remove(old), None);
    assert_eq!(table.get(new), Some(&2));
    assert_eq!(table.lookup(s[5]).unwrap().session, new);
    // The freed sockets can join a session again.
    let again = table.insert(legs(&s[..4]), 3).unwrap();
    let ids: Vec<_> = table.iter().map(|(id, _, v)| (id, *v)).collect();
    assert_eq!(ids, [(new, 2), (again, 3)]);
    for (_, value) in table.iter_mut() {
        *value += 10;
    }
    assert_eq!(table.get(again), Some(&13));
}

#[test]
fn a_refused_insert_leaves_nothing_behind() {
    let (_udp, s) = sockets(8);
    let mut table = SessionTable::new();
    table.insert(legs(&s[..4]), 'a').unwrap();
    // s[3] is taken: nothing of the new session may be mapped.
    let clash = legs(&[s[4], s[5], s[6], s[3]]);
    assert_eq!(table.insert(clash, 'b'), Err(TableError::SocketInUse(s[3])));
    for &socket in &s[4..7] {
        assert_eq!(table.lookup(socket), None);
    }
    // One socket twice in one session.
    let twice = legs(&[s[4], s[5], s[4], s[6]]);
    assert_eq!(table.insert(twice, 'c'), Err(TableError::SocketInUse(s[4])));
    assert_eq!(table.lookup(s[4]), None);
    assert_eq!(table.len(), 1);
    // An unknown socket maps to nothing.
    assert_eq!(table.lookup(s[7]), None);
}

#[test]
fn ten_thousand_sessions_of_four_sockets() {
    let (_udp, s) = sockets(40_000);
    let mut table = SessionTable::with_capacity(10_000, 40_000);
    let ids: Vec<SessionId> = s
        .chunks(4)
        .enumerate()
        .map(|(n, four)| table.insert(legs(four), n).unwrap())
        .collect();
    assert_eq!(table.len(), 10_000);
    for (n, four) in s.chunks(4).enumerate() {
        let entry = table.lookup_mut(four[3]).unwrap();
        assert_eq!(*entry.value, n);
        assert_eq!(entry.endpoint.session, ids[n]);
        assert_eq!(
            (entry.endpoint.leg, entry.endpoint.channel),
            (Leg::B, Channel::Rtcp)
        );
    }
}

#[test]
fn a_leg_splits_per_leg_state_into_its_own_entry_and_the_others() {
    let mut per_leg = ['a', 'b'];
    assert_eq!(Leg::A.split(&mut per_leg), (&mut 'a', &mut 'b'));
    assert_eq!(Leg::B.split(&mut per_leg), (&mut 'b', &mut 'a'));
    let (this, _) = Leg::B.split(&mut per_leg);
    *this = 'x';
    assert_eq!(per_leg, ['a', 'x']);
}

#[test]
fn the_per_packet_lookup_names_the_other_leg_s_rtp_socket() {
    let (_udp, s) = sockets(11);
    let mut table = SessionTable::with_capacity(2, 4);
    let first = table.insert(legs(&s[..4]), "first").unwrap();
    // rtcp-mux on leg B, and socket indices beyond the reserved map.
    let mux = [
        LegSockets {
            rtp: s[8],
            rtcp: Some(s[9]),
        },
        LegSockets {
            rtp: s[10],
            rtcp: None,
        },
    ];
    let second = table.insert(mux, "second").unwrap();
    let expect = [
        (s[0], first, Leg::A, Channel::Rtp, s[2]),
        (s[1], first, Leg::A, Channel::Rtcp, s[2]),
        (s[2], first, Leg::B, Channel::Rtp, s[0]),
        (s[3], first, Leg::B, Channel::Rtcp, s[0]),
        (s[8], second, Leg::A, Channel::Rtp, s[10]),
        (s[9], second, Leg::A, Channel::Rtcp, s[10]),
        (s[10], second, Leg::B, Channel::Rtp, s[8]),
    ];
    for (socket, id, leg, channel, forward_from) in expect {
        let endpoint = table.lookup(socket).unwrap();
        let legs_of = table.legs(id).unwrap();
        let Hot { at, value } = table.lookup_hot(socket).unwrap();
        assert_eq!(
            (at.leg(), at.channel(), at.forward_from),
            (leg, channel, forward_from)
        );
        assert_eq!(forward_from, legs_of[leg.other().index()].rtp);
        assert_eq!(at.endpoint(), endpoint);
        assert_eq!(at.legs(), Some(&legs_of));
        assert_eq!(*value, if id == first { "first" } else { "second" });
    }
    for unmapped in &s[4..8] {
        assert!(table.lookup_hot(*unmapped).is_none());
    }
    table.remove(first).unwrap();
    assert!(s[..4].iter().all(|&x| table.lookup_hot(x).is_none()));
    assert!(table.lookup_hot(s[10]).is_some());
}
