//! SACK (RFC 2018) and D-SACK (RFC 2883) both ways: the blocks our ACKs
//! carry for out-of-order and duplicate data, and RFC 6675 recovery from
//! the peer's blocks (only the holes sent again).

use super::*;

/// An established connection whose peer offered SACK (and no timestamps:
/// four blocks fit).
fn established_sack() -> Script {
    established_sack_with(&config())
}

fn established_sack_with(config: &TcpConfig) -> Script {
    let mut t = Script::passive(config, "0 < S 0:0(0) win 8000 <mss 1000,sackOK>");
    t.run(
        "
        +0 > S. 0:0(0) ack 1 <mss 1460,sackOK>
        +0.01 < . 1:1(0) ack 1 win 8000
        ",
    );
    assert!(t.conn.sack_enabled());
    t
}

#[test]
fn out_of_order_segments_are_reported_latest_first() {
    let mut t = established_sack();
    t.run(
        "
        +0.1 < . 1001:2001(1000) ack 1 win 8000
        +0 > . 1:1(0) ack 1 <sack 1001:2001>
        +0 < . 3001:4001(1000) ack 1 win 8000
        +0 > . 1:1(0) ack 1 <sack 3001:4001 1001:2001>
        +0 < . 5001:6001(1000) ack 1 win 8000
        +0 > . 1:1(0) ack 1 <sack 5001:6001 3001:4001 1001:2001>
        // Filling 2001-3001 joins two blocks: the joined one comes first.
        +0 < . 2001:3001(1000) ack 1 win 8000
        +0 > . 1:1(0) ack 1 <sack 1001:4001 5001:6001>
        // The first hole filled: only what is still out of order.
        +0 < . 1:1001(1000) ack 1 win 8000
        +0 > . 1:1(0) ack 4001 <sack 5001:6001>
        +0 < . 4001:5001(1000) ack 1 win 8000
        +0 > . 1:1(0) ack 6001
        ",
    );
    t.quiet();
    assert_eq!(t.read_all().len(), 6000);
}

#[test]
fn a_duplicate_segment_is_reported_once_with_a_dsack() {
    let mut t = established_sack();
    t.run(
        "
        +0.1 < . 1:1001(1000) ack 1 win 8000
        +0.04 > . 1:1(0) ack 1001
        // Below RCV.NXT: a D-SACK of the duplicate (RFC 2883 4.1.1).
        +0.1 < . 1:1001(1000) ack 1 win 8000
        +0 > . 1:1(0) ack 1001 <sack 1:1001>
        // Out of order, then again: the D-SACK, then the block holding it
        // (RFC 2883 4.1.2).
        +0 < . 2001:3001(1000) ack 1 win 8000
        +0 > . 1:1(0) ack 1001 <sack 2001:3001>
        +0 < . 2001:3001(1000) ack 1 win 8000
        +0 > . 1:1(0) ack 1001 <sack 2001:3001 2001:3001>
        // Reported once: the next ACK has the plain blocks.
        +0 < . 4001:5001(1000) ack 1 win 8000
        +0 > . 1:1(0) ack 1001 <sack 4001:5001 2001:3001>
        ",
    );
    t.quiet();
    assert_eq!(t.conn.loss.dsacks_old_sent, 1);
    assert_eq!(t.conn.loss.dsacks_ofo_sent, 1);
}

#[test]
fn recovery_retransmits_only_the_holes_the_scoreboard_shows() {
    let mut t = established_sack();
    t.write(&[3u8; 8000]);
    t.run(
        "
        +0 > . 1:1001(1000) ack 1
        +0 > . 1001:2001(1000) ack 1
        +0 > . 2001:3001(1000) ack 1
        +0 > . 3001:4001(1000) ack 1
        +0 > . 4001:5001(1000) ack 1
        +0 > . 5001:6001(1000) ack 1
        +0 > . 6001:7001(1000) ack 1
        +0 > P. 7001:8001(1000) ack 1
        // 1001-2001 and 3001-4001 are lost; the rest arrives, sacked.
        +0.01 < . 1:1(0) ack 1001 win 8000 <sack 2001:3001>
        +0 < . 1:1(0) ack 1001 win 8000 <sack 4001:5001 2001:3001>
        // The third duplicate: recovery, the first hole at once. The
        // second is not lost yet (two segments sacked above it, RFC 6675
        // IsLost), and pipe (4000) fills the window, halved from the
        // 7000 bytes in flight.
        +0 < . 1:1(0) ack 1001 win 8000 <sack 4001:6001 2001:3001>
        +0 > . 1001:2001(1000) ack 1
        // Three segments above 3001: lost, and pipe has room for it.
        +0 < . 1:1(0) ack 1001 win 8000 <sack 4001:8001 2001:3001>
        +0 > . 3001:4001(1000) ack 1
        // Partial and full acknowledgments: nothing sacked goes again.
        +0.01 < . 1:1(0) ack 3001 win 8000 <sack 4001:8001>
        +0 < . 1:1(0) ack 8001 win 8000
        ",
    );
    t.quiet();
    assert!(t.conn.recovery.is_none());
    assert_eq!(t.conn.retransmitted, 2);
    assert_eq!(t.conn.loss.sack_recoveries, 1);
    assert_eq!(t.conn.loss.fast_retransmits, 2);
    assert_eq!(t.conn.cc.window(), 3500, "ssthresh: half the flight");
    assert!(t.conn.send_buf.is_empty());
}

#[test]
fn a_dsack_received_is_counted_and_not_taken_as_sacked() {
    let mut t = established_sack();
    t.write(&[3u8; 2000]);
    t.run(
        "
        +0 > . 1:1001(1000) ack 1
        +0 > P. 1001:2001(1000) ack 1
        // The peer got 1-1001 twice: a D-SACK below the ACK.
        +0.01 < . 1:1(0) ack 1001 win 8000 <sack 1:1001>
        +0 < . 1:1(0) ack 2001 win 8000
        ",
    );
    t.quiet();
    assert_eq!(t.conn.loss.dsacks_received, 1);
    assert!(t.conn.scoreboard.is_empty());
}

#[test]
fn a_timeout_goes_back_but_skips_what_the_peer_holds() {
    let mut t = established_sack();
    t.write(&[3u8; 4000]);
    t.run(
        "
        +0 > . 1:1001(1000) ack 1
        +0 > . 1001:2001(1000) ack 1
        +0 > . 2001:3001(1000) ack 1
        +0 > P. 3001:4001(1000) ack 1
        // Only 1001-2001 arrives: one duplicate, too few for IsLost.
        +0.01 < . 1:1(0) ack 1 win 8000 <sack 1001:2001>
        // A round trip and a quarter after 1-1001 left (RACK's reordering
        // timer), with data sent after it delivered, it is lost: recovery
        // sends it again.
        +0.0025 > . 1:1001(1000) ack 1
        // That is lost too, and nothing more comes. The RTO (200 ms from
        // the first send) goes back: 1-1001, then 2001-3001 once the
        // window allows, never 1001-2001.
        +0.1875 > . 1:1001(1000) ack 1
        +0.01 < . 1:1(0) ack 2001 win 8000
        +0 > . 2001:3001(1000) ack 1
        +0 > P. 3001:4001(1000) ack 1
        +0.01 < . 1:1(0) ack 4001 win 8000
        ",
    );
    t.quiet();
    assert_eq!(t.conn.retransmitted, 4);
    assert_eq!(t.conn.loss.loss_probes, 0);
}

#[test]
fn prr_spreads_the_window_reduction_over_the_round_trip() {
    let mut t = Script::passive(&config(), "0 < S 0:0(0) win 20000 <mss 1000,sackOK>");
    t.run(
        "
        +0 > S. 0:0(0) ack 1 <mss 1460,sackOK>
        +0.01 < . 1:1(0) ack 1 win 20000
        ",
    );
    t.write(&[4u8; 20_000]);
    for i in 0..10 {
        t.run(&format!(
            "+0 > . {}:{}(1000) ack 1",
            1 + i * 1000,
            1001 + i * 1000
        ));
    }
    t.run(
        "
        // The window grew by the SYN's byte: one byte more, which waits
        // (a runt the congestion window alone would cut is not sent).
        // 1-1001 is lost. Before recovery, what the peer sacked has left
        // the network: a new segment per duplicate.
        +0.01 < . 1:1(0) ack 1 win 20000 <sack 1001:2001>
        +0 > . 10001:11001(1000) ack 1
        +0 < . 1:1(0) ack 1 win 20000 <sack 1001:3001>
        +0 > . 11001:12001(1000) ack 1
        // Recovery: 12000 in flight (RecoverFS), ssthresh 6000. The hole
        // goes at once; then PRR lets out ssthresh / RecoverFS = half of
        // what each ACK delivers, whole segments only: nothing for the
        // next ACK, 500 bytes after the one after (RFC 6675 alone would
        // send one per ACK once pipe fell under cwnd).
        +0 < . 1:1(0) ack 1 win 20000 <sack 1001:4001>
        +0 > . 1:1001(1000) ack 1
        +0 < . 1:1(0) ack 1 win 20000 <sack 1001:5001>
        +0 < . 1:1(0) ack 1 win 20000 <sack 1001:6001>
        // pipe is down to ssthresh (6000): PRR-SSRB sends only what keeps
        // it there, a segment per segment delivered.
        +0 < . 1:1(0) ack 1 win 20000 <sack 1001:7001>
        +0 < . 1:1(0) ack 1 win 20000 <sack 1001:8001>
        +0 > . 12001:13001(1000) ack 1
        +0 < . 1:1(0) ack 1 win 20000 <sack 1001:9001>
        +0 > . 13001:14001(1000) ack 1
        +0 < . 1:1(0) ack 1 win 20000 <sack 1001:10001>
        +0 > . 14001:15001(1000) ack 1
        ",
    );
    t.quiet();
    let r = t.conn.recovery.expect("still recovering");
    assert_eq!(
        (r.recover_fs, r.prr_delivered, r.prr_out),
        (12_000, 7000, 4000)
    );
    assert_eq!(t.conn.retransmitted, 1);
}

#[test]
fn a_lost_tail_is_probed_after_two_rtts_instead_of_the_rto() {
    let mut t = established_sack();
    t.write(&[6u8; 4000]);
    t.run(
        "
        +0 > . 1:1001(1000) ack 1
        +0 > . 1001:2001(1000) ack 1
        +0 > . 2001:3001(1000) ack 1
        +0 > P. 3001:4001(1000) ack 1
        // The last two are lost: no duplicate ACK can ever show it. Two
        // smoothed RTTs (10 ms each) after the ACK, the probe goes: the
        // last segment, again (RFC 8985 7.3).
        +0.01 < . 1:1(0) ack 2001 win 8000
        +0.02 > P. 3001:4001(1000) ack 1
        // Its SACK shows the hole. 2001-3001 left 40 ms ago, more than a
        // round trip and a quarter before the probe that was delivered:
        // RACK's time rule finds it lost at once, with a single segment
        // sacked above it, and recovery repairs it.
        +0.01 < . 1:1(0) ack 2001 win 8000 <sack 3001:4001>
        +0 > . 2001:3001(1000) ack 1
        +0.01 < . 1:1(0) ack 4001 win 8000
        ",
    );
    t.quiet();
    assert_eq!(t.conn.loss.loss_probes, 1);
    assert_eq!(t.conn.retransmitted, 2);
}

#[test]
fn a_lone_segment_allows_for_a_delayed_ack_before_its_probe() {
    let config = TcpConfig {
        min_rto: Duration::from_secs(1),
        ..config()
    };
    let mut t = established_sack_with(&config);
    // One segment out: two RTTs plus the worst delayed ACK (200 ms), armed
    // because the RTO (1 s here) is later still.
    t.write(&[6u8; 1000]);
    t.run("+0 > P. 1:1001(1000) ack 1");
    let srtt = t.conn.rtt.srtt().unwrap();
    let pto = srtt * 2 + Duration::from_millis(200);
    assert_eq!(t.conn.tlp_at, Some(t.now + pto));
}

/// RACK (RFC 8985 6.2) for a retransmission: 1001-2001 is lost, and so
/// is its first retransmission, sent while 14001 was the highest sequence
/// number out. Everything else arrives and is sacked, a segment at a time.
/// Once data sent after the retransmission is sacked three segments past
/// that mark (17001), it is sent again: milliseconds later, not after the
/// 1 s RTO.
#[test]
fn rack_sends_a_lost_retransmission_again_before_the_timeout() {
    let mut t = established_sack();
    t.write(&[5u8; 40_000]);
    let mut sent_again = Vec::new();
    let mut high = 3001u32;
    while high <= 20_001 {
        t.run(&format!(
            "+0.001 < . 1:1(0) ack 1001 win 30000 <sack 2001:{high}>"
        ));
        let lost = t.sent.drain(..).filter(|(_, repr, payload)| {
            describe(repr, payload.len()).starts_with("> . 1001:2001(1000)")
        });
        sent_again.extend(lost.map(|_| high));
        high = (high + 1000).min(t.conn.snd_max.since(Seq(OUR_ISS)));
    }
    // The original, the first retransmission when recovery began (the
    // third segment sacked above it), the second once 17001 was sacked.
    assert_eq!(
        &sent_again[1..],
        [5001, 17001],
        "sacked up to these when it went"
    );
    assert_eq!(t.conn.loss.lost_retransmits, 1);
    assert_eq!(t.conn.retries, 0, "no timeout");
    assert!(t.now < Instant::ZERO + Duration::from_millis(100));
    // It arrives: everything is acknowledged and recovery ends.
    let end = t.conn.snd_max.since(Seq(OUR_ISS));
    t.run(&format!("+0.001 < . 1:1(0) ack {end} win 30000"));
    assert!(t.conn.recovery.is_none());
    assert!(t.conn.rexmit_watch.is_empty());
}

/// RACK's time rule for first transmissions (RFC 8985 6.2): a hole that
/// later data overtook is lost a round trip and a quarter after it left
/// (10 ms here, so 12.5 ms), with one segment sacked above it, where
/// IsLost needs three. Filled before then, it was reordering: nothing is
/// sent again.
#[test]
fn rack_waits_out_reordering_then_finds_an_overtaken_hole_lost() {
    let mut t = established_sack();
    t.write(&[5u8; 4000]);
    t.run(
        "
        +0 > . 1:1001(1000) ack 1
        +0 > . 1001:2001(1000) ack 1
        +0 > . 2001:3001(1000) ack 1
        +0 > P. 3001:4001(1000) ack 1
        // 1-1001 and 1001-2001 are late: 2001-3001 is sacked at 11 ms.
        +0.011 < . 1:1(0) ack 1 win 8000 <sack 2001:3001>
        // They arrive within the reordering window.
        +0.001 < . 1:1(0) ack 3001 win 8000
        +0.01 < . 1:1(0) ack 4001 win 8000
        ",
    );
    t.quiet();
    assert_eq!(t.conn.retransmitted, 0, "reordering is not loss");
    assert!(t.conn.recovery.is_none());

    t.write(&[5u8; 3000]);
    t.run(
        "
        +0 > . 4001:5001(1000) ack 1
        +0 > . 5001:6001(1000) ack 1
        +0 > P. 6001:7001(1000) ack 1
        // 4001-5001 is lost; the rest is sacked 11 ms on.
        +0.011 < . 1:1(0) ack 4001 win 8000 <sack 5001:7001>
        // A round trip (10.25 ms now) and a quarter after it left, the
        // reordering timer finds it lost.
        +0.002 > . 4001:5001(1000) ack 1
        +0.01 < . 1:1(0) ack 7001 win 8000
        ",
    );
    t.quiet();
    assert_eq!(t.conn.retransmitted, 1);
    assert!(t.conn.recovery.is_none(), "recovered");
}
