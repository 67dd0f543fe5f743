//! Closing: active, passive and simultaneous, TIME-WAIT, aborts, and RFC
//! 5961's answers to blind resets and SYNs.

use super::*;

/// An established passive connection without options (MSS 1000).
pub(super) fn established() -> Script {
    let mut t = Script::passive(&config(), "0 < S 0:0(0) win 8000 <mss 1000>");
    t.run(
        "
        +0 > S. 0:0(0) ack 1 <mss 1460>
        +0.01 < . 1:1(0) ack 1 win 8000
        ",
    );
    assert_eq!(t.conn.state(), State::Established);
    t
}

#[test]
fn an_active_close_goes_through_fin_wait_and_time_wait() {
    let mut t = established();
    t.close();
    t.run(
        "
        +0 > F. 1:1(0) ack 1
        +0.01 < . 1:1(0) ack 2 win 8000
        ",
    );
    assert_eq!(t.conn.state(), State::FinWait2);
    // The peer may still send; then its FIN.
    t.run(
        "
        +0.01 < P. 1:11(10) ack 2 win 8000
        +0 < F. 11:11(0) ack 2 win 8000
        +0 > . 2:2(0) ack 12
        ",
    );
    assert_eq!(t.conn.state(), State::TimeWait);
    assert_eq!(t.read_all().len(), 10);
    assert!(t.conn.at_eof());
    // A retransmitted FIN is acknowledged again and restarts the wait.
    t.run(
        "
        +30 < F. 11:11(0) ack 2 win 8000
        +0 > . 2:2(0) ack 12
        ",
    );
    t.advance(t.now + Duration::from_secs(59));
    assert_eq!(t.conn.state(), State::TimeWait);
    t.advance(t.now + Duration::from_secs(1));
    assert_eq!(t.conn.state(), State::Closed);
    assert_eq!(t.conn.error(), None);
    t.quiet();
}

#[test]
fn a_fin_into_a_shut_window_is_retransmitted_with_backoff() {
    // The peer's application stopped reading: its window is shut, and a
    // receiver may drop a FIN then (Linux did, before 6.x: "some stacks
    // send bare FIN packets in a loop even if we send RWIN 0"). Only our
    // FIN is outstanding, so the persist timer has nothing to wait for:
    // the FIN goes again on the RTO, backed off, not every 200 ms for as
    // long as the peer answers.
    let mut t = established();
    t.run("+0.1 < . 1:1(0) ack 1 win 0");
    t.close();
    let start = t.now;
    let mut fins = 0;
    while t.now < start + Duration::from_secs(10) {
        while let Some((_, segment, _)) = t.sent.pop_front() {
            fins += usize::from(segment.flags & flags::FIN != 0);
            // Answered, the FIN not taken.
            t.run("+0 < . 1:1(0) ack 1 win 0");
        }
        t.advance(t.now + Duration::from_millis(10));
    }
    // At 0, 0.2, 0.6, 1.4, 3.0 and 6.2 s.
    assert_eq!(fins, 6, "FINs in 10 s");
    assert_eq!(t.conn.state(), State::FinWait1);
    // The peer reads at last and takes the FIN.
    t.advance(t.now + Duration::from_secs(20));
    let (_, fin, _) = t.sent.pop_front().expect("the FIN again");
    assert_ne!(fin.flags & flags::FIN, 0);
    t.run("+0 < . 1:1(0) ack 2 win 8000");
    assert_eq!(t.conn.state(), State::FinWait2);
}

#[test]
fn a_fin_ahead_of_a_hole_is_taken_once_the_hole_fills() {
    // The peer's last segment carries its FIN and overtakes a lost one.
    // Linux keeps such a FIN in its out-of-order queue; dropping it would
    // make the peer send it again after repairing the hole (on its RTO:
    // no duplicate ACK reports a FIN missing).
    let mut t = established();
    t.run(
        "
        +0.1 < FP. 1001:2001(1000) ack 1 win 8000
        +0 > . 1:1(0) ack 1
        +0.01 < . 1:1001(1000) ack 1 win 8000
        +0 > . 1:1(0) ack 2002
        ",
    );
    t.quiet();
    assert_eq!(t.conn.state(), State::CloseWait);
    assert_eq!(t.read_all(), (0..2000).map(peer_byte).collect::<Vec<_>>());
    assert!(t.conn.at_eof());
}

#[test]
fn a_passive_close_goes_through_close_wait_and_last_ack() {
    let mut t = established();
    t.run(
        "
        +0.1 < F. 1:1(0) ack 1 win 8000
        +0 > . 1:1(0) ack 2
        ",
    );
    assert_eq!(t.conn.state(), State::CloseWait);
    assert!(t.conn.at_eof());
    // We may still send before closing; the FIN rides on the data.
    t.conn.send(b"last words", &mut t.pool).unwrap();
    t.close();
    t.run(
        "
        +0 > FP. 1:11(10) ack 2
        +0.01 < . 2:2(0) ack 12 win 8000
        ",
    );
    assert_eq!(t.conn.state(), State::Closed);
    assert_eq!(t.conn.error(), None);
    t.quiet();
}

#[test]
fn simultaneous_close_meets_in_closing() {
    let mut t = established();
    t.close();
    t.run(
        "
        +0 > F. 1:1(0) ack 1
        // The peer's FIN crosses ours.
        +0.01 < F. 1:1(0) ack 1 win 8000
        +0 > . 2:2(0) ack 2
        ",
    );
    assert_eq!(t.conn.state(), State::Closing);
    t.run("+0.01 < . 2:2(0) ack 2 win 8000");
    assert_eq!(t.conn.state(), State::TimeWait);
}

#[test]
fn blind_resets_and_syns_get_challenge_acks() {
    let mut t = established();
    t.run(
        "
        // In the window but not at RCV.NXT: a challenge ACK, no reset.
        +0.1 < R 100:100(0)
        +0 > . 1:1(0) ack 1
        // Outside the window: dropped silently.
        +0 < R 900000:900000(0)
        // A SYN on an established connection.
        +0 < S 5:5(0) win 8000
        +0 > . 1:1(0) ack 1
        // An ACK for data never sent.
        +0 < . 1:1(0) ack 500 win 8000
        +0 > . 1:1(0) ack 1
        ",
    );
    t.quiet();
    assert_eq!(t.conn.state(), State::Established);
    assert_eq!(
        t.verdicts[1..],
        [
            Verdict::Refused(Refusal::BadReset { challenged: true }),
            Verdict::Refused(Refusal::BadReset { challenged: false }),
            Verdict::Refused(Refusal::BadSyn),
            Verdict::Refused(Refusal::BadAck { challenged: true }),
        ]
    );
    // Exactly at RCV.NXT: believed.
    t.run("+0 < R 1:1(0)");
    assert_eq!(t.conn.state(), State::Closed);
    assert_eq!(t.conn.error(), Some(TcpError::Reset));
    let mut buf = [0u8; 4];
    assert_eq!(t.conn.recv(&mut buf, &mut t.pool), Err(TcpError::Reset));
}

#[test]
fn a_segment_whose_ack_is_refused_does_not_move_ts_recent() {
    // A blind injector that hits the receive window but not the ACK range
    // (RFC 5961 5.2) must not plant a TSval far ahead: PAWS would then
    // refuse every segment of the real peer (Linux stores TS.Recent only
    // once tcp_ack() took the ACK).
    let mut t = Script::passive(
        &config(),
        "0 < S 0:0(0) win 8000 <mss 1000,TS val 100 ecr 0>",
    );
    t.run(
        "
        +0 > S. 0:0(0) ack 1 <mss 1460,TS val 0 ecr 100>
        +0.01 < . 1:1(0) ack 1 win 8000 <TS val 101 ecr 0>
        // An ACK of data never sent, and one older than any window.
        +0.01 < . 1:1(0) ack 5000 win 8000 <TS val 2000000000 ecr 0>
        +0 > . 1:1(0) ack 1 <TS val * ecr 101>
        +0 < . 1:1(0) ack 3000000000 win 8000 <TS val 2000000001 ecr 0>
        +0 > . 1:1(0) ack 1 <TS val * ecr 101>
        // The real peer's data is still taken.
        +0.01 < P. 1:101(100) ack 1 win 8000 <TS val 102 ecr 0>
        +0.04 > . 1:1(0) ack 101 <TS val * ecr 102>
        ",
    );
    t.quiet();
    assert_eq!(
        t.verdicts[1..],
        [
            Verdict::Refused(Refusal::BadAck { challenged: true }),
            Verdict::Refused(Refusal::BadAck { challenged: true }),
            Verdict::Accepted,
        ]
    );
    assert_eq!(t.read_all(), (0..100).map(peer_byte).collect::<Vec<_>>());
}

#[test]
fn a_delayed_ack_echoes_the_tsval_of_the_first_segment_it_covers() {
    // RFC 7323 4.3: TS.Recent is taken only from a segment that starts at
    // or before Last.ACK.sent (Linux: rcv_wup), so an ACK delayed over
    // several segments echoes the earliest one's TSval and the peer's RTT
    // sample includes the delay, as the RFC wants.
    let mut t = Script::passive(
        &config(),
        "0 < S 0:0(0) win 8000 <mss 1000,TS val 100 ecr 0>",
    );
    t.run(
        "
        +0 > S. 0:0(0) ack 1 <mss 1460,TS val 0 ecr 100>
        +0.01 < . 1:1(0) ack 1 win 8000 <TS val 101 ecr 0>
        +0.01 < P. 1:101(100) ack 1 win 8000 <TS val 110 ecr 0>
        // Beyond Last.ACK.sent (1) while the ACK of the first waits.
        +0.01 < P. 101:201(100) ack 1 win 8000 <TS val 120 ecr 0>
        +0.03 > . 1:1(0) ack 201 <TS val * ecr 110>
        // That ACK went: a segment at 201 is echoed again.
        +0.01 < P. 201:301(100) ack 1 win 8000 <TS val 130 ecr 0>
        +0.04 > . 1:1(0) ack 301 <TS val * ecr 130>
        ",
    );
    t.quiet();
    assert_eq!(t.read_all().len(), 300);
}

#[test]
fn ts_recent_older_than_24_days_no_longer_refuses_segments() {
    // RFC 7323 5.5 (Linux's TCP_PAWS_24DAYS): a millisecond TSval moves
    // past half the 32-bit space in 24.8 days, after which every segment
    // of a peer idle that long would look older than TS.Recent and PAWS
    // would refuse them all. Once TS.Recent is 24 days old it is not held
    // against a segment.
    let mut t = Script::passive(
        &config(),
        "0 < S 0:0(0) win 8000 <mss 1000,TS val 100 ecr 0>",
    );
    t.run(
        "
        +0 > S. 0:0(0) ack 1 <mss 1460,TS val 0 ecr 100>
        +0.01 < . 1:1(0) ack 1 win 8000 <TS val 101 ecr 0>
        // A day later an older TSval is still refused.
        +86400 < P. 1:101(100) ack 1 win 8000 <TS val 50 ecr 0>
        +0 > . 1:1(0) ack 1 <TS val * ecr 101>
        // 25 days idle: the peer's clock moved 2,160,000,000 ms on, which
        // reads as older.
        +2073600 < P. 1:101(100) ack 1 win 8000 <TS val 2160000101 ecr 0>
        +0.04 > . 1:1(0) ack 101 <TS val * ecr 2160000101>
        ",
    );
    t.quiet();
    assert_eq!(
        t.verdicts[1..],
        [Verdict::Refused(Refusal::Paws), Verdict::Accepted]
    );
    assert_eq!(t.read_all(), (0..100).map(peer_byte).collect::<Vec<_>>());
}

#[test]
fn an_abort_sends_a_reset_and_closes_at_once() {
    let mut t = established();
    t.write(b"unacked");
    t.conn.abort();
    t.collect();
    t.run(
        "
        +0 > P. 1:8(7) ack 1
        +0 > R 8:8(0)
        ",
    );
    t.quiet();
    assert_eq!(t.conn.state(), State::Closed);
}

#[test]
fn an_orphaned_connection_leaves_fin_wait_2_without_the_peers_fin() {
    // The application let go of the connection: a peer that never closes
    // its side does not hold it (and its place under the connection cap)
    // for ever, as Linux's tcp_fin_timeout.
    let mut t = established();
    t.close();
    t.conn.orphan(t.now);
    t.run(
        "
        +0 > F. 1:1(0) ack 1
        +0.01 < . 1:1(0) ack 2 win 8000
        ",
    );
    assert_eq!(t.conn.state(), State::FinWait2);
    t.advance(t.now + Duration::from_secs(59));
    assert_eq!(t.conn.state(), State::FinWait2);
    t.advance(t.now + Duration::from_secs(1));
    assert_eq!(t.conn.state(), State::Closed);
    t.quiet();
}

#[test]
fn a_half_closed_connection_waits_for_the_peers_fin() {
    // Only our side shut (shutdown(SHUT_WR)): the application still reads,
    // and the peer may send for as long as it likes.
    let mut t = established();
    t.close();
    t.run(
        "
        +0 > F. 1:1(0) ack 1
        +0.01 < . 1:1(0) ack 2 win 8000
        ",
    );
    t.advance(t.now + Duration::from_secs(600));
    t.run(
        "
        +0 < P. 1:11(10) ack 2 win 8000
        ",
    );
    assert_eq!(t.conn.state(), State::FinWait2);
    assert_eq!(t.read_all().len(), 10);
}

#[test]
fn data_for_an_orphaned_connection_is_answered_with_a_reset() {
    // Nothing will read it: the peer learns at once that its data was lost
    // (RFC 1122 4.2.2.13), instead of the window closing on it for ever.
    let mut t = established();
    t.close();
    t.conn.orphan(t.now);
    t.run(
        "
        +0 > F. 1:1(0) ack 1
        +0.01 < . 1:1(0) ack 2 win 8000
        +0.01 < P. 1:11(10) ack 2 win 8000
        +0 > R 2:2(0)
        ",
    );
    t.quiet();
    assert_eq!(t.conn.state(), State::Closed);
}

#[test]
fn pure_acks_out_of_the_window_get_one_duplicate_ack_per_half_second() {
    // Two peers that disagree on the window answer each other's ACKs: one
    // duplicate ACK per 500 ms for pure ACKs (as Linux's
    // tcp_oow_rate_limited), every time for a segment with data.
    let mut t = established();
    t.run(
        "
        +0.1 < . 100001:100001(0) ack 1 win 8000
        +0 > . 1:1(0) ack 1
        +0.1 < . 100001:100001(0) ack 1 win 8000
        +0.1 < . 100001:100001(0) ack 1 win 8000
        +0.1 < P. 100001:100011(10) ack 1 win 8000
        +0 > . 1:1(0) ack 1
        +0.3 < . 100001:100001(0) ack 1 win 8000
        +0 > . 1:1(0) ack 1
        ",
    );
    t.quiet();
    assert_eq!(t.conn.state(), State::Established);
}

/// The peer's SYN as a script writes it.
fn syn(line: &str) -> TcpRepr {
    inbound_repr(&parse_line(line, Instant::ZERO))
}

#[test]
fn time_wait_ignores_resets_and_gives_way_only_to_a_new_syn() {
    let mut t = established();
    t.close();
    t.run(
        "
        +0 > F. 1:1(0) ack 1
        +0.01 < . 1:1(0) ack 2 win 8000
        +0.01 < F. 1:1(0) ack 2 win 8000
        +0 > . 2:2(0) ack 2
        // RFC 1337: no reset ends TIME-WAIT early, at RCV.NXT or not.
        +0.1 < R 2:2(0)
        +0 < R. 2:2(0) ack 2
        +0 < R 50000:50000(0)
        ",
    );
    t.quiet();
    assert_eq!(t.conn.state(), State::TimeWait);
    assert_eq!(
        t.verdicts[t.verdicts.len() - 3..],
        [Verdict::Refused(Refusal::TimeWaitReset); 3]
    );
    // No timestamps: a SYN is new if its ISN lies beyond RCV.NXT (2); the
    // new incarnation's ISS starts 64 KiB past all we sent (2).
    assert_eq!(t.conn.time_wait_reopen(&syn("0 < S 1:1(0) win 8000")), None);
    assert_eq!(t.conn.time_wait_reopen(&syn("0 < S 2:2(0) win 8000")), None);
    assert_eq!(
        t.conn.time_wait_reopen(&syn("0 < S 3:3(0) win 8000")),
        Some(Seq(OUR_ISS) + 2u32 + 65_537u32)
    );
    assert_eq!(t.conn.time_wait_reopen(&syn("0 < S. 3:3(0) ack 2")), None);
    // An old one, handed to the connection, gets a challenge ACK (RFC 5961
    // 4) and TIME-WAIT goes on.
    t.run(
        "
        +0 < S 1:1(0) win 8000
        +0 > . 2:2(0) ack 2
        ",
    );
    assert_eq!(t.conn.state(), State::TimeWait);
}

#[test]
fn with_timestamps_a_syn_ends_time_wait_if_its_timestamp_is_newer() {
    let mut t = Script::passive(
        &config(),
        "0 < S 0:0(0) win 8000 <mss 1000,TS val 100 ecr 0>",
    );
    t.run(
        "
        +0 > S. 0:0(0) ack 1 <mss 1460,TS val 0 ecr 100>
        +0.01 < . 1:1(0) ack 1 win 8000 <TS val 101 ecr 0>
        ",
    );
    t.close();
    t.run(
        "
        +0 > F. 1:1(0) ack 1
        +0.01 < F. 1:1(0) ack 2 win 8000 <TS val 102 ecr 10>
        +0 > . 2:2(0) ack 2
        ",
    );
    assert_eq!(t.conn.state(), State::TimeWait);
    let reopens = |line: &str| t.conn.time_wait_reopen(&syn(line)).is_some();
    // RFC 6191: newer is enough, whatever the ISN; older never is.
    assert!(reopens("0 < S 0:0(0) win 8000 <TS val 103 ecr 0>"));
    assert!(!reopens("0 < S 9000:9000(0) win 8000 <TS val 50 ecr 0>"));
    // The same timestamp: the ISN decides.
    assert!(reopens("0 < S 3:3(0) win 8000 <TS val 102 ecr 0>"));
    assert!(!reopens("0 < S 0:0(0) win 8000 <TS val 102 ecr 0>"));
    // No timestamp in the new SYN: the ISN decides.
    assert!(reopens("0 < S 3:3(0) win 8000"));
    assert!(!reopens("0 < S 1:1(0) win 8000"));
}

/// Found by fuzzing (fuzz/regressions/tcp_conn): a close in SYN-RECEIVED
/// moves to FIN-WAIT-1 with our SYN unacknowledged; when the
/// retransmission timer then fires, the SYN-ACK must go again. It used to
/// send data from SND.UNA, i.e. the SYN's own sequence number, which
/// shifts the stream by a byte for the peer.
#[test]
fn a_close_in_syn_received_still_retransmits_the_syn() {
    let mut t = Script::passive(&config(), "0 < S 0:0(0) win 8000 <mss 1000>");
    t.run("+0 > S. 0:0(0) ack 1 <mss 1460>");
    t.write(&[b'x'; 100]);
    t.close();
    assert_eq!(t.conn.state(), State::FinWait1);
    t.sent.clear();
    t.advance(t.now + Duration::from_secs(1));
    let (_, first, data) = t.sent.front().expect("a retransmission");
    assert_eq!(
        (first.flags & flags::SYN, first.seq, data.len()),
        (flags::SYN, OUR_ISS, 0),
        "the first retransmission: {}",
        describe(first, data.len())
    );
    for (_, repr, data) in &t.sent {
        if !data.is_empty() {
            assert_ne!(repr.seq, OUR_ISS, "data at the SYN's sequence number");
        }
    }
}
