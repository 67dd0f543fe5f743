//! Opening: passive and active, options negotiated, SYN retransmission
//! and give-up, refusal, simultaneous open.

use super::*;

#[test]
fn a_passive_open_negotiates_options_and_acks_data_after_a_delay() {
    let mut t = Script::passive(
        &config(),
        "0 < S 0:0(0) win 65535 <mss 1000,sackOK,TS val 100 ecr 0,nop,wscale 7>",
    );
    t.run(
        "
        // SACK (on by default, as Linux), scaling and timestamps agreed.
        +0 > S. 0:0(0) ack 1 win 65535 <mss 1460,sackOK,TS val 0 ecr 100,nop,wscale 1>
        +0.010 < . 1:1(0) ack 1 win 257 <nop,nop,TS val 101 ecr 0>
        +0 < P. 1:101(100) ack 1 win 257 <nop,nop,TS val 102 ecr 0>
        // One small segment: the ACK waits for the delayed-ACK timer.
        +0.040 > . 1:1(0) ack 101 win 32718 <TS val 50 ecr 102>
        ",
    );
    t.quiet();
    assert_eq!(t.conn.state(), State::Established);
    assert_eq!(t.conn.mss(), 988, "1000 less 12 bytes of timestamps");
    assert_eq!(t.conn.snd_wnd, 257 << 7);
    assert_eq!(t.read_all(), (0..100).map(peer_byte).collect::<Vec<_>>());
}

#[test]
fn an_active_open_takes_what_the_peer_offers() {
    let mut t = Script::active(&config());
    t.run(
        "
        0 > S 0:0(0) win 65535 <mss 1460,sackOK,TS val 0 ecr 0,nop,wscale 1>
        +0.1 < S. 0:0(0) ack 1 win 5840 <mss 1200,nop,wscale 2>
        // The peer has no timestamps: none from here on; no delay for the
        // handshake's ACK.
        +0 > . 1:1(0) ack 1 win 32768
        ",
    );
    t.quiet();
    assert_eq!(t.conn.state(), State::Established);
    assert_eq!(t.conn.mss(), 1200);
    // The window of a SYN-ACK is never scaled (RFC 7323 2.2).
    assert_eq!(t.conn.snd_wnd, 5840);
    assert_eq!(t.conn.rtt.srtt(), Some(Duration::from_millis(100)));
}

#[test]
fn an_unanswered_syn_is_retried_with_backoff_then_given_up() {
    let mut t = Script::active(&config());
    t.run(
        "
        0 > S 0:0(0)
        1 > S 0:0(0)
        3 > S 0:0(0)
        7 > S 0:0(0)
        15 > S 0:0(0)
        31 > S 0:0(0)
        63 > S 0:0(0)
        ",
    );
    t.advance(Instant::ZERO + Duration::from_secs(126));
    assert_eq!(t.conn.state(), State::SynSent);
    t.advance(Instant::ZERO + Duration::from_secs(127));
    t.quiet();
    assert_eq!(t.conn.state(), State::Closed);
    assert_eq!(t.conn.error(), Some(TcpError::TimedOut));
    assert_eq!(t.conn.send(b"x", &mut t.pool), Err(TcpError::TimedOut));
}

#[test]
fn a_reset_answers_a_syn_to_a_closed_port() {
    let mut t = Script::active(&config());
    t.run(
        "
        0 > S 0:0(0)
        // An ACK for something we never sent gets a reset; a reset that
        // does not acknowledge our SYN is not believed.
        +0.001 < . 0:0(0) ack 5
        +0 > R 5:5(0)
        +0 < R 0:0(0)
        +0 < R. 0:0(0) ack 7
        +0.001 < R. 0:0(0) ack 1
        ",
    );
    t.quiet();
    assert_eq!(t.conn.error(), Some(TcpError::Refused));
}

#[test]
fn simultaneous_open_meets_in_the_middle() {
    let mut t = Script::active(&config());
    t.run(
        "
        0 > S 0:0(0) <mss 1460,sackOK,TS val 0 ecr 0,nop,wscale 1>
        // The peer's own SYN crosses ours.
        +0.01 < S 0:0(0) win 1000 <mss 1000>
        +0 > S. 0:0(0) ack 1 <mss 1460>
        // Its SYN-ACK acknowledges our SYN: established (RFC 9293 figure 8).
        +0.01 < S. 0:0(0) ack 1 win 1000
        +0 > . 1:1(0) ack 1
        ",
    );
    t.quiet();
    assert_eq!(t.conn.state(), State::Established);
}

#[test]
fn a_lost_syn_ack_is_sent_again_on_the_retransmitted_syn() {
    let mut t = Script::passive(&config(), "0 < S 0:0(0) win 8000 <mss 1000>");
    t.run(
        "
        +0 > S. 0:0(0) ack 1 <mss 1460>
        +0.5 < S 0:0(0) win 8000 <mss 1000>
        +0 > S. 0:0(0) ack 1 <mss 1460>
        // And on its own timer.
        1 > S. 0:0(0) ack 1
        +0.1 < . 1:1(0) ack 1 win 8000
        ",
    );
    t.quiet();
    assert_eq!(t.conn.state(), State::Established);
}

#[test]
fn the_window_of_a_syn_ack_is_not_scaled() {
    // RFC 7323 2.2: the window in a <SYN,ACK> is never scaled; the peer's
    // shift applies from its first ACK on. Taken scaled, a peer that
    // offers 1000 bytes with scale 7 would be sent 128,000.
    let mut t = Script::active(&TcpConfig {
        nodelay: true,
        ..config()
    });
    t.run(
        "
        0 > S 0:0(0) win 65535 <mss 1460,sackOK,TS val 0 ecr 0,nop,wscale 1>
        +0.1 < S. 0:0(0) ack 1 win 1000 <mss 1000,nop,wscale 7>
        +0 > . 1:1(0) ack 1
        ",
    );
    t.quiet();
    assert_eq!(t.conn.snd_wnd, 1000);
    // Only the 1000 bytes the peer offered go out.
    t.write(&[7u8; 3000]);
    t.run("+0 > . 1:1001(1000) ack 1");
    t.quiet();
    // Its next ACK is scaled: 16 << 7 = 2048 bytes.
    t.run(
        "
        +0.1 < . 1:1(0) ack 1001 win 16
        +0 > . 1001:2001(1000) ack 1
        +0 > P. 2001:3001(1000) ack 1
        ",
    );
    t.quiet();
}

#[test]
fn segments_without_syn_scale_their_window_already_in_syn_received() {
    // Once our SYN-ACK offered a window scale, the peer scales the window
    // of every segment without SYN (RFC 7323 2.2), so an ACK we send in
    // SYN-RECEIVED (a challenge ACK here) must carry it scaled: 65535
    // unscaled would read as 128 KiB against our 64 KiB.
    let mut t = Script::passive(&config(), "0 < S 0:0(0) win 65535 <mss 1000,nop,wscale 7>");
    t.run(
        "
        +0 > S. 0:0(0) ack 1 win 65535 <mss 1460,nop,wscale 1>
        // A reset in the window but not at RCV.NXT: a challenge ACK.
        +0.01 < R 100:100(0)
        +0 > . 1:1(0) ack 1 win 32768
        +0.01 < . 1:1(0) ack 1 win 512
        ",
    );
    t.quiet();
    assert_eq!(t.conn.state(), State::Established);
}

#[test]
fn a_syn_ack_echoing_a_timestamp_we_never_sent_is_reset() {
    // As Linux (tcp_rcv_synsent_state_process, PAWSActiveRejected): a
    // SYN-ACK whose TSecr is not zero and not between our first SYN's
    // TSval and our clock now answers no SYN of ours (an old duplicate or
    // a forgery). Taken, it would open the connection with the wrong
    // peer's sequence numbers; it gets a reset, and the connection waits
    // for the real one.
    let mut t = Script::active(&config());
    t.run(
        "
        0 > S 0:0(0) win 65535 <mss 1460,sackOK,TS val 0 ecr 0,nop,wscale 1>
        // Ahead of our clock (100 ms now), then behind our first SYN.
        +0.1 < S. 0:0(0) ack 1 win 5840 <mss 1200,TS val 500 ecr 5000>
        +0 > R 1:1(0)
        +0 < S. 0:0(0) ack 1 win 5840 <mss 1200,TS val 500 ecr 4294967295>
        +0 > R 1:1(0)
        // Nor does such a reset refuse the connection (and no reset
        // answers a reset).
        +0 < R. 0:0(0) ack 1 win 0 <TS val 500 ecr 5000>
        // Our SYN again at 1 s: an echo of either TSval is ours.
        1 > S 0:0(0) <mss 1460,sackOK,TS val 1000 ecr 0,nop,wscale 1>
        +0.1 < S. 0:0(0) ack 1 win 5840 <mss 1200,sackOK,TS val 600 ecr 1000,nop,wscale 2>
        +0 > . 1:1(0) ack 1 <TS val 1100 ecr 600>
        ",
    );
    t.quiet();
    assert_eq!(t.conn.state(), State::Established);
    let refused = Verdict::Refused(Refusal::PawsActive);
    assert_eq!(
        t.verdicts,
        [refused, refused, refused, Verdict::Accepted],
        "counted as refused"
    );
}
