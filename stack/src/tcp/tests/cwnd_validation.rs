//! Congestion window validation (the concern of RFC 7661, by Linux's rule
//! `tcp_is_cwnd_limited`): ACKs grow the window only while it limits the
//! sender. An application that sends less than the window allows must not
//! grow it round after round, or its next burst goes at a window the path
//! never carried; a sender the window holds back still grows it.

use super::*;

const RTT: Duration = Duration::from_millis(20);

/// An established sender with `algorithm`, in slow start or (if
/// `avoidance`) in congestion avoidance from the initial window.
fn sender(algorithm: Algorithm, avoidance: bool) -> Script {
    let config = TcpConfig {
        congestion: algorithm,
        send_buffer: 1 << 20,
        ..config()
    };
    let mut t = Script::bulk_sender(&config, RTT);
    if avoidance {
        t.conn.cc.end_slow_start();
    }
    t
}

/// One round trip: the application writes `write` bytes, and the peer
/// acknowledges every segment sent one RTT later, echoing its timestamp.
fn round(t: &mut Script, write: usize) {
    if write > 0 {
        assert_eq!(t.write(&vec![7; write]), write);
    }
    let segments: Vec<_> = t.sent.drain(..).collect();
    let at = t.now + RTT;
    let secs = at.as_nanos() as f64 / 1e9;
    let peer_ts = 1 + at.as_nanos() / 1_000_000;
    for (_, seg, payload) in segments {
        let end = seg.seq.wrapping_sub(OUR_ISS) + payload.len() as u32;
        let (echo, _) = seg.options.timestamps.expect("timestamps agreed");
        t.run(&format!(
            "{secs:.9} < . 1:1(0) ack {end} win 65535 <nop,nop,TS val {peer_ts} ecr {echo}>"
        ));
    }
}

#[test]
fn an_application_limited_sender_keeps_its_window_and_a_window_limited_one_grows_it() {
    for algorithm in [Algorithm::NewReno, Algorithm::Cubic] {
        for avoidance in [false, true] {
            let case = format!("{algorithm:?}, congestion avoidance {avoidance}");
            let mut t = sender(algorithm, avoidance);
            let initial = t.conn.cc.window();
            let mss = usize::from(t.conn.mss());
            // Two segments a round trip, a fifth of the window, for 50
            // round trips: ten windows' worth of ACKs.
            for _ in 0..50 {
                round(&mut t, 2 * mss);
            }
            assert_eq!(t.conn.cc.window(), initial, "{case}: application-limited");
            // Now the application has more than the window can carry.
            t.write(&vec![7; 500_000]);
            for _ in 0..10 {
                round(&mut t, 0);
            }
            let grown = t.conn.cc.window();
            assert!(
                grown >= initial + 5 * mss as u32,
                "{case}: window-limited, {initial} grew to {grown} only"
            );
        }
    }
}
