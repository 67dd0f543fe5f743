//! HyStart++ in a connection: a bulk sender whose peer acknowledges every
//! segment, echoing its timestamp, over a path whose round trip grows from
//! 20 to 30 ms once a queue builds. HyStart++ must see the rise in the RTT
//! samples `new_ack` feeds it and end slow start without a loss; with it
//! off, slow start runs on.

use super::*;

/// The round trip of a segment sent at `sent`: 20 ms, and 30 ms once the
/// window is big enough to queue (from 70 ms on: three rounds of slow
/// start in).
fn path_rtt(sent: Instant) -> Duration {
    if sent < Instant::ZERO + Duration::from_millis(70) {
        Duration::from_millis(20)
    } else {
        Duration::from_millis(30)
    }
}

/// A passive connection with timestamps and a large window, sending
/// `total` bytes; the peer acknowledges each segment one RTT after it
/// left. Returns the connection when everything is acknowledged, with the
/// largest window it reached while in slow start.
fn bulk_over_a_queueing_path(hystart: bool, total: usize) -> (Script, u32) {
    let config = TcpConfig {
        send_buffer: 4 << 20,
        hystart,
        ..config()
    };
    let mut t = Script::bulk_sender(&config, Duration::from_millis(20));
    assert_eq!(t.conn.state(), State::Established);
    let mut written = 0;
    let mut in_flight: VecDeque<(Instant, u32, u32)> = VecDeque::new();
    let mut largest_in_slow_start = 0;
    for _ in 0..100_000 {
        t.write_towards(&mut written, total, 64 * 1024, 9);
        // Every segment sent: its acknowledgment arrives one RTT later.
        for (at, seg, payload) in t.sent.drain(..) {
            let end = seg.seq.wrapping_sub(OUR_ISS) + payload.len() as u32;
            let (ts, _) = seg.options.timestamps.expect("timestamps on every segment");
            in_flight.push_back((at + path_rtt(at), end, ts));
        }
        let Some((arrives, ack, echo)) = in_flight.pop_front() else {
            break;
        };
        let peer_ts = arrives.as_nanos() / 1_000_000;
        let secs = arrives.as_nanos() as f64 / 1e9;
        t.run(&format!(
            "{secs:.9} < . 1:1(0) ack {ack} win 65535 <nop,nop,TS val {peer_ts} ecr {echo}>"
        ));
        if t.conn.cc.in_slow_start() {
            largest_in_slow_start = largest_in_slow_start.max(t.conn.cc.window());
        }
    }
    assert!(
        in_flight.is_empty() && t.conn.send_buf.is_empty(),
        "all acknowledged"
    );
    (t, largest_in_slow_start)
}

#[test]
fn hystart_ends_slow_start_when_the_rtt_rises_and_without_it_slow_start_runs_on() {
    let total = 2 << 20;
    let (with, peak_with) = bulk_over_a_queueing_path(true, total);
    assert_eq!(with.conn.retransmitted, 0, "no loss on this path");
    let ssthresh = with.conn.cc.ssthresh();
    assert_ne!(ssthresh, u32::MAX, "HyStart++ ended slow start");
    assert!(!with.conn.cc.in_slow_start());
    // The rise came at about 80 segments in flight; five rounds of
    // Conservative Slow Start (a quarter of the growth) later, the window
    // is a few times that, where unchecked slow start would have doubled
    // five times over.
    assert!(
        (80_000..600_000).contains(&ssthresh),
        "slow start ended at {ssthresh} bytes"
    );

    let (without, peak_without) = bulk_over_a_queueing_path(false, total);
    assert_eq!(
        without.conn.cc.ssthresh(),
        u32::MAX,
        "nothing ended slow start"
    );
    assert!(without.conn.cc.in_slow_start());
    assert!(
        peak_without > 2 * peak_with,
        "slow start alone reached {peak_without}, with HyStart++ {peak_with}"
    );
}
