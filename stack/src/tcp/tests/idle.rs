//! The congestion window after an idle spell (RFC 5681 4.1, Linux's
//! `tcp_slow_start_after_idle`, `TcpConfig::slow_start_after_idle`): a
//! window last used more than an RTO ago says nothing of the path now, and
//! sent whole it goes as one line-rate burst. It halves per RTO of the
//! spell down to the initial window, `ssthresh` keeps three quarters of it;
//! a shorter spell, or the switch off, keeps it. CUBIC's epoch does not run
//! while nothing is sent.

use super::*;

const RTT: Duration = Duration::from_millis(10);

/// Payload of a full segment: the MSS of 1000 less the timestamps option.
const SEGMENT: usize = 988;

/// A sender with `algorithm` whose window grew in slow start well past the
/// initial one (60 KB, each flight acknowledged one RTT later), with
/// nothing in flight; and the bytes written so far.
fn grown(algorithm: Algorithm, restart: bool) -> (Script, usize) {
    let config = TcpConfig {
        congestion: algorithm,
        slow_start_after_idle: restart,
        send_buffer: 256 * 1024,
        ..config()
    };
    let mut t = Script::bulk_sender(&config, RTT);
    t.sent.clear();
    let mut written = 0;
    let mut acked = 0;
    while acked < 60_000 {
        t.write_towards(&mut written, 60_000, 60_000, 9);
        let flight: usize = t.sent.drain(..).map(|(_, _, p)| p.len()).sum();
        acked += flight;
        t.run(&format!("+0.01 < . 1:1(0) ack {} win 65535", acked + 1));
    }
    assert_eq!(t.conn.snd_una, t.conn.snd_max, "nothing in flight");
    let window = t.conn.cc.window();
    assert!(
        window >= 40_000,
        "{algorithm:?}: slow start grew it to {window} only"
    );
    assert_eq!(t.conn.take_loss_events(), LossEvents::default());
    (t, written)
}

/// After `idle` with nothing sent, the application writes 200 KB more
/// (more than any window here): the bytes of the first flight.
fn burst_after(t: &mut Script, written: &mut usize, idle: Duration) -> usize {
    t.advance(t.now + idle);
    t.write_towards(written, *written + 200_000, 200_000, 9);
    t.sent.iter().map(|(_, _, p)| p.len()).sum()
}

/// The bytes a flight from an empty pipe carries under a window of `cwnd`
/// bytes: whole segments only (a runt waits for an ACK, as in Linux).
fn flight_of(cwnd: u32) -> usize {
    cwnd as usize / SEGMENT * SEGMENT
}

#[test]
fn after_an_idle_spell_longer_than_the_rto_the_first_flight_is_the_initial_window() {
    for algorithm in [Algorithm::NewReno, Algorithm::Cubic] {
        let (mut t, mut written) = grown(algorithm, true);
        let before = t.conn.cc.window();
        let ssthresh = t.conn.cc.ssthresh();
        // Ten seconds idle: fifty RTOs of 200 ms, the window is back to
        // the initial ten segments.
        let burst = burst_after(&mut t, &mut written, Duration::from_secs(10));
        assert_eq!(burst, 10 * SEGMENT, "{algorithm:?}");
        assert_eq!(
            t.conn.cc.window(),
            10 * SEGMENT as u32,
            "{algorithm:?}: the restart window, ten segments"
        );
        assert_eq!(
            t.conn.cc.ssthresh(),
            ssthresh.max(before / 2 + before / 4),
            "{algorithm:?}: slow start may climb back to 3/4 of the window (here: \
             still the first slow start's, unbounded)"
        );
        assert_eq!(t.conn.take_loss_events().cwnd_restarts, 1, "{algorithm:?}");
        // Slow start from there: the next flight is twice the first.
        let acked = t.conn.snd_max.since(t.conn.iss) - 1;
        t.sent.clear();
        t.run(&format!("+0.01 < . 1:1(0) ack {} win 65535", acked + 1));
        let second: usize = t.sent.iter().map(|(_, _, p)| p.len()).sum();
        assert_eq!(second, 20 * SEGMENT, "{algorithm:?}");
        assert_eq!(t.conn.take_loss_events().cwnd_restarts, 0, "once per spell");
    }
}

#[test]
fn the_window_halves_once_per_rto_of_the_idle_spell() {
    for algorithm in [Algorithm::NewReno, Algorithm::Cubic] {
        for (rtos, halvings) in [(1.5, 1), (2.5, 2)] {
            let case = format!("{algorithm:?}, {rtos} RTOs idle");
            let (mut t, mut written) = grown(algorithm, true);
            let before = t.conn.cc.window();
            let rto = t.conn.rtt.rto();
            assert_eq!(rto, Duration::from_millis(200), "the floor, at a 10 ms RTT");
            assert!(
                before >> halvings > 10 * SEGMENT as u32,
                "{case}: above the initial window"
            );
            let burst = burst_after(&mut t, &mut written, rto.mul_f64(rtos));
            let restarted = t.conn.cc.window();
            assert_eq!(restarted, before >> halvings, "{case}");
            assert_eq!(burst, flight_of(restarted), "{case}");
            assert_eq!(t.conn.take_loss_events().cwnd_restarts, 1, "{case}");
        }
    }
}

#[test]
fn a_spell_shorter_than_the_rto_keeps_the_window() {
    for algorithm in [Algorithm::NewReno, Algorithm::Cubic] {
        let (mut t, mut written) = grown(algorithm, true);
        let before = t.conn.cc.window();
        let ssthresh = t.conn.cc.ssthresh();
        // The last data left an RTT before the ACK that emptied the pipe:
        // 190 ms more is 200 ms since, not more than the RTO.
        let burst = burst_after(&mut t, &mut written, Duration::from_millis(190));
        assert_eq!(t.conn.cc.window(), before, "{algorithm:?}");
        assert_eq!(t.conn.cc.ssthresh(), ssthresh, "{algorithm:?}");
        assert_eq!(
            burst,
            flight_of(before),
            "{algorithm:?}: the whole window goes"
        );
        assert_eq!(t.conn.take_loss_events().cwnd_restarts, 0, "{algorithm:?}");
    }
}

#[test]
fn with_the_switch_off_the_window_survives_any_spell() {
    for algorithm in [Algorithm::NewReno, Algorithm::Cubic] {
        let (mut t, mut written) = grown(algorithm, false);
        let before = t.conn.cc.window();
        let burst = burst_after(&mut t, &mut written, Duration::from_secs(10));
        assert_eq!(t.conn.cc.window(), before, "{algorithm:?}");
        assert_eq!(burst, flight_of(before), "{algorithm:?}: today's burst");
        assert_eq!(t.conn.take_loss_events().cwnd_restarts, 0, "{algorithm:?}");
    }
}

#[test]
fn cubic_does_not_count_an_idle_spell_as_time_of_growth() {
    // CUBIC in congestion avoidance from the initial window: its epoch
    // begins with the first ACK, W_cubic(t) = C t³ + 10 segments. Ten
    // idle seconds counted as growth time would put W_cubic at 410
    // segments and let the first round after the spell grow the window by
    // half (the 1.5 clamp); moved on by the spell, the epoch is where it
    // was, and the round grows it by about a segment, as the one before.
    // With the restart, the window is cut and a new epoch begins.
    for restart in [false, true] {
        let config = TcpConfig {
            congestion: Algorithm::Cubic,
            slow_start_after_idle: restart,
            send_buffer: 1 << 20,
            ..config()
        };
        let mut t = Script::bulk_sender(&config, RTT);
        t.conn.cc.end_slow_start();
        // 40 KB, acknowledged segment by segment a round trip later: four
        // rounds or so, the window limiting all but the last.
        t.write(&vec![7; 40_000]);
        for _ in 0..20 {
            if t.conn.snd_una == t.conn.snd_max {
                break;
            }
            ack_round(&mut t);
        }
        assert_eq!(t.conn.snd_una, t.conn.snd_max, "all acknowledged");
        assert!(t.conn.cc.window() > 10_000, "the epoch began and grew it");
        let before = t.conn.cc.window();
        // Ten seconds idle; a window of data goes and is acknowledged.
        t.advance(t.now + Duration::from_secs(10));
        t.write(&vec![7; 40_000]);
        ack_round(&mut t);
        let after = t.conn.cc.window();
        assert!(
            after < before + 2_000,
            "restart {restart}: the window went from {before} to {after}"
        );
        if restart {
            // Restarted to ten segments, slow start up to ssthresh (3/4
            // of the window) and a new epoch from there: the round leaves
            // it below the window before the spell. (Had the old epoch
            // gone on, its W_est would have set the window straight back
            // past that on the first ACK in congestion avoidance.)
            assert!(after < before, "{before} restarted and grew to {after}");
        }
    }
}

/// Acknowledges every segment sent so far, one RTT on, each by itself.
fn ack_round(t: &mut Script) {
    let segments: Vec<_> = t.sent.drain(..).collect();
    let at = t.now + RTT;
    let secs = at.as_nanos() as f64 / 1e9;
    for (_, seg, payload) in segments {
        let end = seg.seq.wrapping_sub(OUR_ISS) + payload.len() as u32;
        t.run(&format!("{secs:.9} < . 1:1(0) ack {end} win 65535"));
    }
}
