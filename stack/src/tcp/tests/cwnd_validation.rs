//! Congestion window validation (the concern of RFC 7661, by Linux's rule
//! `tcp_is_cwnd_limited`): ACKs grow the window only while it limits the
//! sender. An application that sends less than the window allows must not
//! grow it round after round, or its next burst goes at a window the path
//! never carried; a sender the window holds back still grows it. And a
//! window grown earlier but left unfilled decays (RFC 2861 3, Linux's
//! tcp_cwnd_application_limited): halfway to what was used, once per RTO.

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

/// A sender whose window slow start grew past 40 KB on 100 KB of bulk
/// data, everything acknowledged; `validate` is
/// `TcpConfig::slow_start_after_idle`.
fn grown(algorithm: Algorithm, validate: bool, send_buffer: usize) -> Script {
    let config = TcpConfig {
        congestion: algorithm,
        slow_start_after_idle: validate,
        send_buffer,
        ..config()
    };
    let mut t = Script::bulk_sender(&config, RTT);
    t.write(&vec![7; 100_000]);
    for _ in 0..20 {
        if t.conn.snd_una == t.conn.snd_max {
            break;
        }
        round(&mut t, 0);
    }
    assert_eq!(t.conn.snd_una, t.conn.snd_max, "all acknowledged");
    assert!(t.conn.cc.window() >= 40_000, "{}", t.conn.cc.window());
    t
}

#[test]
fn a_window_the_application_leaves_unfilled_decays_once_per_rto() {
    // RFC 2861 3 (Linux's tcp_cwnd_application_limited): two segments a
    // round trip under a window of dozens. Once per RTO (200 ms, ten
    // round trips) the window goes halfway down to what was used, here
    // the initial window; ssthresh keeps 3/4 of it.
    for algorithm in [Algorithm::NewReno, Algorithm::Cubic] {
        let mut t = grown(algorithm, true, 1 << 20);
        t.conn.cc.end_slow_start();
        let initial = 10 * 988;
        let mss = usize::from(t.conn.mss());
        let grown = t.conn.cc.window();
        let mut window = grown;
        let mut ssthresh = t.conn.cc.ssthresh();
        let mut cuts = Vec::new();
        for i in 0..50 {
            round(&mut t, 2 * mss);
            let now = t.conn.cc.window();
            if now != window {
                assert_eq!(now, (window + initial) / 2, "{algorithm:?}, round {i}");
                ssthresh = ssthresh.max(window / 2 + window / 4);
                assert_eq!(t.conn.cc.ssthresh(), ssthresh, "{algorithm:?}, round {i}");
                cuts.push(i);
                window = now;
            }
        }
        assert!(cuts.len() >= 4, "{algorithm:?}: cut in rounds {cuts:?}");
        for pair in cuts.windows(2) {
            assert!(
                pair[1] - pair[0] >= 10,
                "{algorithm:?}: more than once an RTO: {cuts:?}"
            );
        }
        // Four halvings of the distance to the initial window, at least.
        assert!(
            window <= initial + (grown - initial) / 16,
            "{algorithm:?}: {window}"
        );
    }
}

#[test]
fn without_the_switch_or_with_a_full_send_buffer_the_window_is_kept() {
    for algorithm in [Algorithm::NewReno, Algorithm::Cubic] {
        // The switch off: Linux ties this validation to
        // tcp_slow_start_after_idle too.
        let mut t = grown(algorithm, false, 1 << 20);
        let window = t.conn.cc.window();
        let mss = usize::from(t.conn.mss());
        for _ in 0..50 {
            round(&mut t, 2 * mss);
        }
        assert_eq!(t.conn.cc.window(), window, "{algorithm:?}, switch off");
        // The peer's window (5 KB) holds the sender back, and the
        // application always has more than the send buffer takes: it is
        // not what leaves the window unfilled (Linux's SOCK_NOSPACE), and
        // the window is kept.
        let mut t = grown(algorithm, true, 128 * 1024);
        let window = t.conn.cc.window();
        let at = t.now;
        let secs = at.as_nanos() as f64 / 1e9;
        let acked = t.conn.snd_una.since(t.conn.iss) - 1;
        t.run(&format!("{secs:.9} < . 1:1(0) ack {} win 40", acked + 1));
        t.write(&vec![7; 200 * 1024]);
        assert_eq!(t.conn.send_room(), 0);
        for _ in 0..50 {
            let segments: Vec<_> = t.sent.drain(..).collect();
            let at = t.now + RTT;
            let secs = at.as_nanos() as f64 / 1e9;
            for (_, seg, payload) in segments {
                let end = seg.seq.wrapping_sub(OUR_ISS) + payload.len() as u32;
                t.run(&format!("{secs:.9} < . 1:1(0) ack {end} win 40"));
            }
            let room = t.conn.send_room();
            assert_eq!(t.write(&vec![7; room + 1000]), room);
        }
        assert_eq!(
            t.conn.cc.window(),
            window,
            "{algorithm:?}, peer-window limited"
        );
    }
}
