//! Moving data: segmentation by MSS, Nagle and no-delay, delayed and
//! immediate ACKs, out-of-order data reassembled, flow control with a
//! zero window and its probes, window updates.

use super::close::established;
use super::*;

#[test]
fn writes_leave_in_mss_sized_segments_within_the_windows() {
    let mut t = established();
    let data: Vec<u8> = (0..2500u32).map(|i| i as u8).collect();
    assert_eq!(t.write(&data), 2500);
    t.run(
        "
        +0 > . 1:1001(1000) ack 1
        +0 > . 1001:2001(1000) ack 1
        +0 > P. 2001:2501(500) ack 1
        +0.01 < . 1:1(0) ack 2501 win 8000
        ",
    );
    t.quiet();
    assert!(t.conn.send_buf.is_empty());
    assert_eq!(t.conn.rto_at, None, "nothing outstanding");
}

#[test]
fn nagle_holds_small_writes_until_the_ack_and_nodelay_does_not() {
    let mut t = established();
    t.write(b"first");
    t.write(b"second");
    t.run(
        "
        +0 > P. 1:6(5) ack 1
        // \"second\" waits for the ACK of \"first\".
        +0.05 < . 1:1(0) ack 6 win 8000
        +0 > P. 6:12(6) ack 1
        ",
    );
    t.quiet();
    let mut config = config();
    config.nodelay = true;
    let mut t = Script::passive(&config, "0 < S 0:0(0) win 8000 <mss 1000>");
    t.run(
        "
        +0 > S. 0:0(0) ack 1
        +0.01 < . 1:1(0) ack 1 win 8000
        ",
    );
    t.write(b"first");
    t.write(b"second");
    t.run(
        "
        +0 > P. 1:6(5) ack 1
        +0 > P. 6:12(6) ack 1
        ",
    );
}

#[test]
fn every_second_full_segment_is_acked_at_once() {
    let mut t = established();
    t.run(
        "
        +0.1 < . 1:1001(1000) ack 1 win 8000
        +0 < . 1001:2001(1000) ack 1 win 8000
        +0 > . 1:1(0) ack 2001
        +0 < . 2001:3001(1000) ack 1 win 8000
        +0.04 > . 1:1(0) ack 3001
        ",
    );
    t.quiet();
    assert_eq!(t.read_all().len(), 3000);
}

#[test]
fn out_of_order_data_is_reassembled_with_duplicate_acks_meanwhile() {
    let mut t = established();
    t.run(
        "
        +0.1 < . 1001:2001(1000) ack 1 win 8000
        +0 > . 1:1(0) ack 1
        +0 < . 2001:3001(1000) ack 1 win 8000
        +0 > . 1:1(0) ack 1
        // The hole fills: everything is acknowledged at once.
        +0.01 < . 1:1001(1000) ack 1 win 8000
        +0 > . 1:1(0) ack 3001
        ",
    );
    t.quiet();
    let data = t.read_all();
    assert_eq!(data, (0..3000).map(peer_byte).collect::<Vec<_>>());
    assert!(!t.conn.recv_buf.has_gaps());
}

#[test]
fn a_zero_window_is_probed_until_it_opens() {
    let mut t = established();
    t.run("+0.1 < . 1:1(0) ack 1 win 0");
    t.write(b"waiting for room");
    // RTO from the handshake's 10 ms sample: 200 ms (the minimum),
    // doubled per probe.
    t.run(
        "
        +0.2 > . 0:0(0) ack 1
        +0.4 > . 0:0(0) ack 1
        +0.01 < . 1:1(0) ack 1 win 8000
        +0 > P. 1:17(16) ack 1
        ",
    );
    t.quiet();
}

/// An established passive connection (MSS 1000) whose receive buffer
/// holds 4000 bytes.
fn established_with_4000_byte_receive_buffer() -> Script {
    let mut config = config();
    config.recv_buffer = 4000;
    let mut t = Script::passive(&config, "0 < S 0:0(0) win 8000 <mss 1000>");
    t.run(
        "
        +0 > S. 0:0(0) ack 1 win 4000
        +0.01 < . 1:1(0) ack 1 win 8000
        ",
    );
    t
}

#[test]
fn the_receive_window_closes_as_data_waits_and_reopens_when_read() {
    let mut t = established_with_4000_byte_receive_buffer();
    t.run(
        "
        +0 < . 1:1001(1000) ack 1 win 8000
        +0 < . 1001:2001(1000) ack 1 win 8000
        +0 > . 1:1(0) ack 2001 win 2000
        +0 < . 2001:3001(1000) ack 1 win 8000
        +0 < . 3001:4001(1000) ack 1 win 8000
        +0 > . 1:1(0) ack 4001 win 0
        // Beyond the window: dropped, acknowledged.
        +0 < . 4001:5001(1000) ack 1 win 8000
        +0 > . 1:1(0) ack 4001 win 0
        ",
    );
    assert_eq!(t.read_all().len(), 4000);
    // Reading opened the whole buffer: a window update.
    t.run("+0 > . 1:1(0) ack 4001 win 4000");
    t.quiet();
}

#[test]
fn a_few_bytes_read_from_a_full_buffer_are_not_offered_as_a_window() {
    // Receiver-side silly window avoidance (RFC 9293 3.8.6.2.2): a reader
    // that frees 100 bytes of a full buffer must not be offered as a
    // 100-byte window, or the peer's next segment carries 100 bytes.
    let mut t = established_with_4000_byte_receive_buffer();
    t.run(
        "
        +0 < . 1:1001(1000) ack 1 win 8000
        +0 < . 1001:2001(1000) ack 1 win 8000
        +0 > . 1:1(0) ack 2001 win 2000
        +0 < . 2001:3001(1000) ack 1 win 8000
        +0 < . 3001:4001(1000) ack 1 win 8000
        +0 > . 1:1(0) ack 4001 win 0
        ",
    );
    let mut some = [0u8; 100];
    assert_eq!(t.conn.recv(&mut some, &mut t.pool), Ok(100));
    // The peer's zero-window probe is answered: still shut.
    t.run(
        "
        +0.2 < . 4000:4000(0) ack 1 win 8000
        +0 > . 1:1(0) ack 4001 win 0
        ",
    );
    // A segment's worth read: the window opens.
    let mut more = [0u8; 900];
    assert_eq!(t.conn.recv(&mut more, &mut t.pool), Ok(900));
    t.collect();
    t.run("+0 > . 1:1(0) ack 4001 win 1000");
    t.quiet();
}

/// Both sides' buffers full, as an echo whose reader waits on its writer:
/// our window is zero and our data waits for the peer's ACK. The peer's
/// next segment starts at `RCV.NXT` and carries that ACK: its data is
/// refused, its ACK taken (RFC 9293 3.10.7.4), or neither side would ever
/// move again. A bare ACK at the window's right edge counts too.
#[test]
fn a_zero_window_still_takes_the_acks_of_segments_at_its_edge() {
    let mut config = config();
    config.recv_buffer = 2000;
    let mut t = Script::passive(&config, "0 < S 0:0(0) win 8000 <mss 1000>");
    t.run(
        "
        +0 > S. 0:0(0) ack 1 win 2000
        +0.01 < . 1:1(0) ack 1 win 8000
        ",
    );
    t.write(&[1u8; 1000]);
    t.run(
        "
        +0 > P. 1:1001(1000) ack 1 win 2000
        +0 < . 1:1001(1000) ack 1 win 8000
        +0 < . 1001:2001(1000) ack 1 win 8000
        +0 > . 1001:1001(0) ack 2001 win 0
        // Data at RCV.NXT with the window shut: refused, its ACK taken.
        +0.01 < . 2001:3001(1000) ack 1001 win 8000
        +0 > . 1001:1001(0) ack 2001 win 0
        ",
    );
    assert!(t.conn.send_buf.is_empty(), "our data was acknowledged");
    assert_eq!(t.conn.loss.zero_window_drops, 1);
    t.write(&[2u8; 1000]);
    t.run("+0 > P. 1001:2001(1000) ack 2001 win 0");
    assert_eq!(t.read_all().len(), 2000);
    t.run(
        "
        +0 > . 2001:2001(0) ack 2001 win 2000
        // The peer filled the reopened window (that data is still on the
        // way): its bare ACK sits at the right edge.
        +0.01 < . 4001:4001(0) ack 2001 win 8000
        ",
    );
    assert!(t.conn.send_buf.is_empty(), "the bare ACK was taken");
    t.quiet();
}

#[test]
fn a_long_zero_window_is_probed_at_most_persist_max_apart_and_leaves_the_rto_alone() {
    let mut t = established();
    t.run("+0.1 < . 1:1(0) ack 1 win 0");
    t.write(b"waiting for room");
    // Each probe is answered "still shut": the gaps double from the 200 ms
    // RTO and stop at PERSIST_MAX (30 s), where the shared RTO's backoff
    // went on to 120 s.
    t.run(
        "
        +0.2 > . 0:0(0) ack 1
        +0 < . 1:1(0) ack 1 win 0
        +0.4 > . 0:0(0) ack 1
        +0 < . 1:1(0) ack 1 win 0
        +0.8 > . 0:0(0) ack 1
        +0 < . 1:1(0) ack 1 win 0
        +1.6 > . 0:0(0) ack 1
        +0 < . 1:1(0) ack 1 win 0
        +3.2 > . 0:0(0) ack 1
        +0 < . 1:1(0) ack 1 win 0
        +6.4 > . 0:0(0) ack 1
        +0 < . 1:1(0) ack 1 win 0
        +12.8 > . 0:0(0) ack 1
        +0 < . 1:1(0) ack 1 win 0
        +25.6 > . 0:0(0) ack 1
        +0 < . 1:1(0) ack 1 win 0
        ",
    );
    // Ten more minutes shut: a probe every 30 s, answered.
    for _ in 0..20 {
        t.run(
            "
            +30 > . 0:0(0) ack 1
            +0 < . 1:1(0) ack 1 win 0
            ",
        );
    }
    assert_eq!(t.conn.window_probes, 28);
    // The window opens: the data goes at once, and its retransmission
    // timer is the 200 ms the path earned, not a backed-off one.
    t.run(
        "
        +5 < . 1:1(0) ack 1 win 8000
        +0 > P. 1:17(16) ack 1
        +0.2 > P. 1:17(16) ack 1
        +0.01 < . 1:1(0) ack 17 win 8000
        ",
    );
    t.quiet();
    assert_eq!(t.conn.state(), State::Established);
    assert!(t.conn.persist_at.is_none() && t.conn.rto_at.is_none());
}

#[test]
fn a_peer_that_answers_no_window_probe_times_the_connection_out() {
    let mut config = config();
    config.max_retries = 3;
    let mut t = Script::passive(&config, "0 < S 0:0(0) win 8000 <mss 1000>");
    t.run(
        "
        +0 > S. 0:0(0) ack 1
        +0.01 < . 1:1(0) ack 1 win 0
        ",
    );
    t.write(b"anyone?");
    t.run(
        "
        +0.2 > . 0:0(0) ack 1
        +0.4 > . 0:0(0) ack 1
        +0.8 > . 0:0(0) ack 1
        ",
    );
    assert_eq!(t.conn.state(), State::Established);
    t.advance(t.now + Duration::from_millis(1600));
    t.quiet();
    assert_eq!(t.conn.error(), Some(TcpError::TimedOut));
}

#[test]
fn a_window_shrunk_to_zero_over_data_in_flight_is_probed_not_left_to_time_out() {
    let mut t = established();
    t.write(&[5u8; 2000]);
    t.run(
        "
        +0 > . 1:1001(1000) ack 1
        +0 > P. 1001:2001(1000) ack 1
        // The peer takes the first segment and shuts its window over the
        // second (RFC 9293 discourages shrinking; a peer may still do it).
        +0.01 < . 1:1(0) ack 1001 win 0
        // The RTO finds the window shut: a probe, then the persist timer.
        +0.2 > . 1000:1000(0) ack 1
        +0 < . 1:1(0) ack 1001 win 0
        +0.4 > . 1000:1000(0) ack 1
        +0 < . 1:1(0) ack 1001 win 8000
        +0 > P. 1001:2001(1000) ack 1
        +0.01 < . 1:1(0) ack 2001 win 8000
        ",
    );
    t.quiet();
    assert_eq!(t.conn.retries, 0);
    assert!(t.conn.send_buf.is_empty());
}

#[test]
fn the_send_marks_follow_the_acknowledged_edge() {
    // RACK's edge and Nagle's last small segment are compared with
    // SND.UNA modulo 2^32: a mark left behind it would, 2^31 bytes later,
    // read as ahead of it (everything outstanding "lost", every small
    // segment held). They never fall behind it.
    let mut t = established();
    assert_eq!(t.write(&[7u8; 2500]), 2500);
    t.run(
        "
        +0 > . 1:1001(1000) ack 1
        +0 > . 1001:2001(1000) ack 1
        +0 > P. 2001:2501(500) ack 1
        +0.01 < . 1:1(0) ack 2501 win 8000
        ",
    );
    assert_eq!(t.write(&[8u8; 4000]), 4000);
    t.run(
        "
        +0 > . 2501:3501(1000) ack 1
        +0 > . 3501:4501(1000) ack 1
        +0 > . 4501:5501(1000) ack 1
        +0 > P. 5501:6501(1000) ack 1
        +0.01 < . 1:1(0) ack 6501 win 8000
        ",
    );
    t.quiet();
    let c = &t.conn;
    assert_eq!(c.snd_una, c.snd_max, "all acknowledged");
    assert!(
        c.rack_edge >= c.snd_una,
        "RACK's edge is not behind SND.UNA"
    );
    assert!(c.snd_sml >= c.snd_una, "Nagle's mark is not behind SND.UNA");
}

#[test]
fn reading_after_the_peers_fin_sends_no_window_update() {
    // The peer sends nothing after its FIN: a window it can no longer use
    // is not worth a segment.
    let mut t = established_with_4000_byte_receive_buffer();
    t.run(
        "
        +0 < . 1:1001(1000) ack 1 win 8000
        +0 < F. 1001:2001(1000) ack 1 win 8000
        +0 > . 1:1(0) ack 2002 win 2000
        ",
    );
    assert_eq!(t.read_all().len(), 2000);
    assert!(t.conn.at_eof());
    t.quiet();
}

#[test]
fn the_scaled_window_never_moves_its_right_edge_back() {
    // With a window scale, the field is the window shifted down: taken
    // rounded down, the right edge already offered (ACK + window) would
    // move back by up to 2^scale - 1 bytes as data arrives (RFC 7323 2.4;
    // Linux rounds the offered window up rather than shrink it).
    let config = TcpConfig {
        recv_buffer: 1 << 20,
        ..config()
    };
    let mut t = Script::passive(&config, "0 < S 0:0(0) win 65535 <mss 1000,nop,wscale 7>");
    t.run(
        "
        +0 > S. 0:0(0) ack 1 <mss 1460,nop,wscale 5>
        +0.01 < . 1:1(0) ack 1 win 512
        ",
    );
    let edge = |repr: &TcpRepr| repr.ack.wrapping_sub(PEER_ISN) + (u32::from(repr.window) << 5);
    let mut offered = 0;
    for i in 0..30u32 {
        let seq = 1 + i * 1000;
        t.run(&format!(
            "+0.001 < . {seq}:{}(1000) ack 1 win 512",
            seq + 1000
        ));
        while let Some((_, ack, _)) = t.sent.pop_front() {
            assert!(edge(&ack) >= offered, "edge {} after {offered}", edge(&ack));
            offered = edge(&ack);
        }
    }
    assert!(offered > 30_000);
}
