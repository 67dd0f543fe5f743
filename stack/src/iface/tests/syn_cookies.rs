//! SYN cookies end to end through the interface: a listener whose backlog
//! is full answers with a cookie and keeps nothing; the ACK that returns it
//! makes the connection with the options the cookie carried; a forged or
//! unexpected ACK gets a reset and is counted.

use super::tcp_input::{Peer, PORT};
use super::*;
use crate::tcp::State;
use crate::wire::tcp::{flags, TcpOptions, TcpRepr};

const ISN: u32 = 7000;
const TS: u32 = 9000;

/// A listener with a backlog of one, already taken by a handshake from
/// port 1, so the next SYN gets a cookie.
fn full_listener() -> Peer {
    let mut peer = Peer::listening(1);
    let out = send(&mut peer, &syn(1, None, false), &[]);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(peer.iface.tcp_connections().len(), 1);
    assert_eq!(peer.iface.counters().get(Stat::TcpSyncookiesSent), 0);
    peer
}

fn syn(from: u16, window_scale: Option<u8>, sack: bool) -> TcpRepr {
    TcpRepr {
        src_port: from,
        dst_port: PORT,
        seq: ISN,
        ack: 0,
        flags: flags::SYN,
        window: 8000,
        options: TcpOptions {
            mss: Some(1460),
            window_scale,
            sack_permitted: sack,
            timestamps: Some((TS, 0)),
            ..TcpOptions::default()
        },
    }
}

fn ack(from: u16, cookie_ack: u32, echo: u32) -> TcpRepr {
    TcpRepr {
        src_port: from,
        dst_port: PORT,
        seq: ISN + 1,
        ack: cookie_ack,
        flags: flags::ACK,
        window: 500,
        options: TcpOptions {
            timestamps: Some((TS + 1, echo)),
            ..TcpOptions::default()
        },
    }
}

fn send(peer: &mut Peer, repr: &TcpRepr, payload: &[u8]) -> Vec<TcpRepr> {
    peer.send_to(repr, payload, &mut DropDatagrams)
}

#[test]
fn a_full_backlog_answers_with_a_cookie_and_its_ack_opens_the_connection() {
    let mut peer = full_listener();
    // < S from port 2 with wscale 7, SACK and timestamps: a SYN-ACK with
    // every option, and no connection kept.
    let out = send(&mut peer, &syn(2, Some(7), true), &[]);
    assert_eq!(out.len(), 1, "{out:?}");
    let syn_ack = &out[0];
    assert_eq!(syn_ack.flags, flags::SYN | flags::ACK);
    assert_eq!(syn_ack.ack, ISN + 1);
    assert!(syn_ack.options.mss.is_some());
    assert!(syn_ack.options.window_scale.is_some());
    assert!(syn_ack.options.sack_permitted);
    let (tsval, echo) = syn_ack.options.timestamps.expect("timestamps");
    assert_eq!(echo, TS);
    let counters = peer.iface.counters();
    assert_eq!(counters.get(Stat::TcpSyncookiesSent), 1);
    assert_eq!(
        peer.iface.tcp_connections().len(),
        1,
        "nothing kept for port 2"
    );

    // < . ack cookie+1 with 5 bytes: ESTABLISHED at once, data taken.
    let cookie = syn_ack.seq;
    send(&mut peer, &ack(2, cookie.wrapping_add(1), tsval), b"hello");
    let counters = peer.iface.counters();
    assert_eq!(counters.get(Stat::TcpSyncookiesRecv), 1);
    assert_eq!(counters.get(Stat::TcpSyncookiesFailed), 0);
    let conns = peer.iface.tcp_connections();
    let made = conns
        .iter()
        .find(|c| c.remote.port() == 2)
        .expect("the cookie's connection");
    assert_eq!(made.state, State::Established);
    assert_eq!(made.recv_queued, 5);
    assert_eq!(
        made.stats.mss,
        1460 - 12,
        "the cookie's MSS less timestamps"
    );
    // The listener's one handshake is still port 1's.
    assert_eq!(peer.iface.tcp_listeners()[0].handshakes, 1);
}

#[test]
fn forged_and_unexpected_acks_get_resets_and_cookies_failed_counts_the_forged() {
    // A listener that never sent a cookie does not check ACKs for one.
    let mut peer = full_listener();
    let out = send(&mut peer, &ack(3, 12345, 0), &[]);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].flags, flags::RST);
    assert_eq!(peer.iface.counters().get(Stat::TcpSyncookiesFailed), 0);

    // Once it has, a wrong cookie, a cookie for another port, and a
    // cookie whose ACK carries another ISN are all refused.
    let out = send(&mut peer, &syn(2, None, false), &[]);
    let (cookie, tsval) = (out[0].seq, out[0].options.timestamps.unwrap().0);
    let forged = [
        ack(2, cookie.wrapping_add(1) ^ 0x100, tsval),
        ack(4, cookie.wrapping_add(1), tsval),
        TcpRepr {
            seq: ISN + 2,
            ..ack(2, cookie.wrapping_add(1), tsval)
        },
    ];
    for (n, repr) in forged.iter().enumerate() {
        let out = send(&mut peer, repr, &[]);
        assert_eq!(out.len(), 1, "forgery {n}: {out:?}");
        assert_eq!(out[0].flags, flags::RST, "forgery {n}");
    }
    assert_eq!(peer.iface.counters().get(Stat::TcpSyncookiesFailed), 3);
    assert_eq!(peer.iface.tcp_connections().len(), 1);

    // The real ACK still opens it; after the cookie's two periods it
    // would not.
    peer.now = peer.now + Duration::from_secs(200);
    send(&mut peer, &ack(2, cookie.wrapping_add(1), tsval), &[]);
    assert_eq!(peer.iface.counters().get(Stat::TcpSyncookiesRecv), 0);
    assert_eq!(
        peer.iface.counters().get(Stat::TcpSyncookiesFailed),
        3,
        "stale, and no longer checked"
    );
}

#[test]
fn a_cookie_without_timestamps_opens_a_connection_without_scaling_or_sack() {
    let mut peer = full_listener();
    let mut plain = syn(5, Some(7), true);
    plain.options.timestamps = None;
    let out = send(&mut peer, &plain, &[]);
    assert_eq!(out.len(), 1);
    assert_eq!(
        out[0].options.window_scale, None,
        "scale needs timestamps to come back"
    );
    assert!(!out[0].options.sack_permitted);
    assert_eq!(out[0].options.timestamps, None);
    let mut back = ack(5, out[0].seq.wrapping_add(1), 0);
    back.options.timestamps = None;
    send(&mut peer, &back, b"x");
    let conns = peer.iface.tcp_connections();
    let made = conns.iter().find(|c| c.remote.port() == 5).expect("opened");
    assert_eq!(made.state, State::Established);
    assert_eq!(made.stats.mss, 1460);
}
