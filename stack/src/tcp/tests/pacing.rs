//! Pacing in a connection: a bulk sender over a 20 ms path whose peer
//! acknowledges every segment. Unpaced, slow start sends each round's
//! window at the instant the previous round's ACKs arrive, so bursts grow
//! with the window; paced, no instant sends more than the pacer's burst,
//! and the transfer takes about as long.

use super::*;
use crate::tcp::pacing::BURST_BYTES;

const WAN: Duration = Duration::from_millis(20);
/// A path inside a machine or a rack: a round trip far below the
/// timestamp clock's millisecond.
const LAN: Duration = Duration::from_micros(50);
const MSS: usize = 1000;

/// A passive connection sending `total` bytes; the peer acknowledges each
/// segment `rtt` after it left. The clock also stops at the times the
/// pacer gives. Returns the largest number of payload bytes sent at one
/// instant after the first round trip, how long until the last ACK arrived,
/// and the smoothed RTT at the end.
fn bulk(pacing: bool, total: usize, rtt: Duration) -> (usize, Duration, Option<Duration>) {
    let config = TcpConfig {
        send_buffer: 4 << 20,
        pacing,
        ..config()
    };
    let mut t = Script::bulk_sender(&config, rtt);
    // A second later, so that the timestamp clock no longer reads zero
    // (an echo of zero is no RTT sample).
    t.advance(t.now + Duration::from_secs(1));
    let start = t.now;
    let mut written = 0;
    let mut in_flight: VecDeque<(Instant, u32, u32)> = VecDeque::new();
    let mut release = None;
    let mut sent_at: Vec<(Instant, usize)> = Vec::new();
    let mut last_ack = t.now;
    for _ in 0..200_000 {
        t.write_towards(&mut written, total, 64 * 1024, 7);
        for (at, seg, payload) in t.sent.drain(..) {
            let end = seg.seq.wrapping_sub(OUR_ISS) + payload.len() as u32;
            let (ts, _) = seg.options.timestamps.expect("timestamps on every segment");
            in_flight.push_back((at + rtt, end, ts));
            match sent_at.last_mut() {
                Some((when, bytes)) if *when == at => *bytes += payload.len(),
                _ => sent_at.push((at, payload.len())),
            }
        }
        if let Some(r) = t.conn.take_pacing_release() {
            release = Some(r);
        }
        let next_ack = in_flight.front().map(|&(arrives, _, _)| arrives);
        match (release, next_ack) {
            (Some(r), next) if next.is_none_or(|a| r < a) => {
                release = None;
                t.advance(r);
            }
            (_, Some(_)) => {
                let (arrives, ack, echo) = in_flight.pop_front().expect("an ACK due");
                // The peer's millisecond clock, as in the handshake.
                let peer_ts = arrives.as_nanos() / 1_000_000 + 1;
                let secs = arrives.as_nanos() as f64 / 1e9;
                t.run(&format!(
                    "{secs:.9} < . 1:1(0) ack {ack} win 65535 <nop,nop,TS val {peer_ts} ecr {echo}>"
                ));
                last_ack = arrives;
            }
            _ => break,
        }
    }
    assert!(
        in_flight.is_empty() && t.conn.send_buf.is_empty() && written == total,
        "all sent and acknowledged"
    );
    assert_eq!(
        t.conn.retransmitted, 0,
        "no loss on this path (pacing {pacing}, {:?})",
        t.conn.loss
    );
    let largest = sent_at
        .iter()
        .filter(|&&(at, _)| at > start + rtt)
        .map(|&(_, bytes)| bytes)
        .max()
        .unwrap_or(0);
    (largest, last_ack - start, t.conn.rtt.srtt())
}

#[test]
fn pacing_spreads_slow_start_bursts_without_slowing_the_transfer() {
    let total = 4 << 20;
    let (unpaced_burst, unpaced_end, _) = bulk(false, total, WAN);
    let (paced_burst, paced_end, _) = bulk(true, total, WAN);
    assert!(
        unpaced_burst > 8 * BURST_BYTES as usize,
        "unpaced, slow start sent {unpaced_burst} bytes at once"
    );
    // The credit is the time the burst takes at the rate; ACKs that arrive
    // together (this path has no dispersion) double the window, and so the
    // rate, while it is spent.
    assert!(
        paced_burst <= 2 * (BURST_BYTES as usize + MSS),
        "paced, {paced_burst} bytes left at one instant"
    );
    let unpaced = unpaced_end.as_secs_f64() * 1e9;
    let paced = paced_end.as_secs_f64() * 1e9;
    assert!(
        paced <= unpaced * 1.3,
        "paced took {paced:.0} ns, unpaced {unpaced:.0} ns"
    );
}

/// The rate follows the measured round trip, not the timestamp clock's
/// tick: on a 50 µs path, a millisecond floor under the smoothed RTT would
/// pace the sender at a twentieth of what the ACKs allow.
#[test]
fn on_a_path_shorter_than_a_timestamp_tick_pacing_keeps_up() {
    let total = 4 << 20;
    let (_, unpaced_end, _) = bulk(false, total, LAN);
    let (_, paced_end, srtt) = bulk(true, total, LAN);
    let srtt = srtt.expect("an RTT sample");
    assert!(
        srtt < Duration::from_micros(500),
        "smoothed RTT {srtt:?} on a {LAN:?} path"
    );
    let unpaced = unpaced_end.as_secs_f64() * 1e9;
    let paced = paced_end.as_secs_f64() * 1e9;
    assert!(
        paced <= unpaced * 1.3,
        "paced took {paced:.0} ns, unpaced {unpaced:.0} ns"
    );
}
