//! Issue 8's scale on the in-memory port: 10,000 sessions on one
//! interface, every one relayed both ways with its own statistics.

use super::*;

/// Issue 8's scale on the in-memory port: 10,000 sessions (40,000
/// sockets), every leg A sending 4 packets and every leg B one, all
/// relayed, with correct per-session counts.
#[test]
fn ten_thousand_sessions_are_relayed_with_per_session_statistics() {
    const SESSIONS: u32 = 10_000;
    let b_base = SocketAddr::V4(at(B_IP, 10000));
    let specs = config::generate(SESSIONS, 20000, false, [None, Some(b_base)]).unwrap();
    let mut net = Net::new(&specs, options(), 16384);
    let leg_a = |i: u32| 20000 + 4 * i as u16;
    let a_peer = |i: u32| at(A_IP, 10000 + 2 * i as u16);
    let mut forwarded = 0;
    for seq in 0..4u16 {
        for i in 0..SESSIONS {
            net.send(a_peer(i), leg_a(i), &rtp(i, seq));
            if i % 4096 == 4095 {
                forwarded += net.run().len();
            }
        }
        let sent = net.run();
        forwarded += sent.len();
        if seq == 0 {
            // Every session's B peer got its packet, from its own port.
            assert_eq!(sent.last().map(|s| (s.src, s.dst)), {
                let last = SESSIONS - 1;
                Some((
                    at(RELAY_IP, leg_a(last) + 2),
                    at(B_IP, 10000 + 2 * last as u16),
                ))
            });
        }
        net.advance(20);
    }
    for i in 0..SESSIONS {
        net.send(at(B_IP, 10000 + 2 * i as u16), leg_a(i) + 2, &rtp(!i, 0));
    }
    let back = net.run();
    assert_eq!(forwarded, 4 * SESSIONS as usize);
    assert_eq!(back.len(), SESSIONS as usize);
    assert!(back
        .iter()
        .enumerate()
        .all(|(i, s)| s.dst == a_peer(i as u32)));
    let snapshot = net.relay.snapshot();
    assert_eq!(snapshot.sessions.len(), SESSIONS as usize);
    for (i, session) in snapshot.sessions.iter().enumerate() {
        let [a, b] = &session.legs;
        assert_eq!(a.streams.len(), 1, "session {i}");
        let c = a.streams[0].counters;
        assert_eq!((a.streams[0].ssrc, c.packets, c.lost), (i as u32, 4, 0));
        assert_eq!(a.counters.forwarded, 4);
        assert_eq!(b.counters.forwarded, 1);
    }
    assert_eq!(snapshot.drops, [0; RelayDrop::ALL.len()]);
    let names: Vec<String> = specs.into_iter().map(|s| s.name).collect();
    let report = report::render(&snapshot, &names);
    assert!(report.contains(&format!(
        "total sessions {SESSIONS} active {SESSIONS} packets {}",
        5 * SESSIONS
    )));
    assert_eq!(net.iface.counters().total_dropped(), 0);
}
