//! Explicit Congestion Notification (RFC 3168): negotiation on passive
//! and active opens, the receiver's echo of CE marks until CWR, the
//! sender's ECT(0) on new data and its answer to an echo.

use super::*;

/// A passive connection whose peer asked for ECN with `syn` flags (`SEW`
/// asks), its SYN's IP header carrying `field`, under `config`; the
/// handshake done at 10 ms, no timestamps, MSS 1000.
fn opened(config: &TcpConfig, syn: &str, field: &str, agreed: bool) -> Script {
    let mut t = Script::passive(
        config,
        &format!("0 < {field} {syn} 0:0(0) win 65535 <mss 1000,nop,nop,sackOK>"),
    );
    let syn_ack = if agreed { "SE." } else { "S." };
    t.run(&format!(
        "
        +0 > [noecn] {syn_ack} 0:0(0) ack 1 <mss 1460,nop,nop,sackOK>
        +0.010 < . 1:1(0) ack 1 win 65535
        "
    ));
    t.quiet();
    assert_eq!(t.conn.state(), State::Established);
    assert_eq!(t.conn.ecn_enabled(), agreed, "{syn} {field}");
    t
}

#[test]
fn a_syn_asking_for_ecn_is_answered_with_ece_alone() {
    opened(&config(), "SEW", "[noecn]", true);
}

#[test]
fn ecn_is_not_agreed_to_unless_asked_for_properly() {
    // ECE alone, CWR alone, nothing: not a request (RFC 3168 6.1.1).
    for syn in ["SE", "SW", "S"] {
        opened(&config(), syn, "[noecn]", false);
    }
    // A SYN itself marked: the path rewrites the ECN field (RFC 3168
    // forbids ECT on a SYN; Linux refuses ECN then too).
    for field in ["[ect0]", "[ect1]", "[ce]"] {
        opened(&config(), "SEW", field, false);
    }
    // ECN turned off (Linux's tcp_ecn = 0).
    let off = TcpConfig {
        ecn: EcnMode::Off,
        ..config()
    };
    opened(&off, "SEW", "[noecn]", false);
}

#[test]
fn ce_marked_data_is_echoed_on_every_segment_until_cwr_arrives() {
    let mut t = opened(&config(), "SEW", "[noecn]", true);
    t.run(
        "
        +0.010 < [ce] P. 1:1001(1000) ack 1 win 257
        // The first segment owing the echo goes at once.
        +0 > [noecn] E. 1:1(0) ack 1001
        +0.010 < [ect0] P. 1001:2001(1000) ack 1 win 257
        // Later ones wait as usual, and still echo.
        +0.040 > E. 1:1(0) ack 2001
        ",
    );
    // Our data carries it too.
    t.write(&[7; 100]);
    t.run(
        "
        +0 > EP. 1:101(100) ack 2001
        +0.010 < [ect0] WP. 2001:3001(1000) ack 101 win 257
        // CWR ends the echo; its data is acknowledged at once, since the
        // sender's window may be a segment now.
        +0 > . 101:101(0) ack 3001
        +0.010 < [ect0] P. 3001:4001(1000) ack 101 win 257
        +0.040 > . 101:101(0) ack 4001
        ",
    );
    t.quiet();
    assert_eq!(t.conn.take_loss_events().ce_received, 1);
}

#[test]
fn a_cwr_segment_marked_ce_starts_the_echo_again() {
    let mut t = opened(&config(), "SEW", "[noecn]", true);
    t.run(
        "
        +0.010 < [ce] P. 1:1001(1000) ack 1 win 257
        +0 > E. 1:1(0) ack 1001
        +0.010 < [ce] WP. 1001:2001(1000) ack 1 win 257
        +0 > E. 1:1(0) ack 2001
        ",
    );
    t.quiet();
    assert_eq!(t.conn.take_loss_events().ce_received, 2);
}

#[test]
fn ce_marks_without_data_or_without_ecn_are_ignored() {
    // A pure ACK marked CE (no ECN-capable sender marks one) owes nothing.
    let mut t = opened(&config(), "SEW", "[noecn]", true);
    t.run("+0.010 < [ce] . 1:1(0) ack 1 win 257");
    t.quiet();
    t.run(
        "
        +0.010 < [ect0] P. 1:1001(1000) ack 1 win 257
        +0.040 > . 1:1(0) ack 1001
        ",
    );
    // Without ECN agreed, a mark is no signal.
    let mut t = opened(&config(), "S", "[noecn]", false);
    t.run(
        "
        +0.010 < [ce] P. 1:1001(1000) ack 1 win 257
        +0.040 > . 1:1(0) ack 1001
        +0.010 < [ce] WP. 1001:2001(1000) ack 1 win 257
        +0.040 > . 1:1(0) ack 2001
        ",
    );
    t.quiet();
    assert_eq!(t.conn.take_loss_events().ce_received, 0);
}

#[test]
fn only_new_data_goes_ect0() {
    let mut t = opened(&config(), "SEW", "[noecn]", true);
    t.write(&[1; 2000]);
    t.run(
        "
        +0 > [ect0] . 1:1001(1000) ack 1
        +0 > [ect0] P. 1001:2001(1000) ack 1
        // Retransmissions do not (RFC 3168 6.1.5), whatever sends them: a
        // tail loss probe, a timeout.
        +0.020 > [noecn] P. 1001:2001(1000) ack 1
        +0.2 > [noecn] . 1:1001(1000) ack 1
        +0.010 < P. 1:101(100) ack 2001 win 65535
        // Nor do pure ACKs (6.1.4).
        +0.040 > [noecn] . 2001:2001(0) ack 101
        ",
    );
    // A FIN without data carries nothing to mark (as Linux).
    t.close();
    t.run("+0 > [noecn] F. 2001:2001(0) ack 101");
    t.quiet();
    // Without ECN agreed, data goes unmarked.
    let mut t = opened(&config(), "S", "[noecn]", false);
    t.write(&[1; 100]);
    t.run("+0 > [noecn] P. 1:101(100) ack 1");
}

#[test]
fn an_echo_halves_the_window_once_per_window_then_cwr_goes_on_new_data() {
    let mut t = opened(&config(), "SEW", "[noecn]", true);
    t.write(&[1; 4000]);
    t.run(
        "
        +0 > [ect0] . 1:1001(1000) ack 1
        +0 > [ect0] . 1001:2001(1000) ack 1
        +0 > [ect0] . 2001:3001(1000) ack 1
        +0 > [ect0] P. 3001:4001(1000) ack 1
        // Congestion echoed: half the flight of 3000, at least two
        // segments; nothing is resent.
        +0.010 < E. 1:1(0) ack 1001 win 65535
        ",
    );
    t.quiet();
    let window = |t: &Script| (t.conn.cc.ssthresh(), t.conn.cc.window());
    assert_eq!(window(&t), (2000, 2000));
    assert_eq!(t.conn.take_loss_events().ece_reductions, 1);
    t.write(&[2; 1000]);
    t.run(
        "
        // The peer repeats its echo until our CWR arrives: no new reduction.
        +0.001 < E. 1:1(0) ack 2001 win 65535
        +0.001 < E. 1:1(0) ack 3001 win 65535
        // The first new data carries CWR.
        +0 > [ect0] WP. 4001:5001(1000) ack 1
        // Up to the data sent when the window was reduced: the same
        // window (and the peer may not have our CWR yet).
        +0.001 < E. 1:1(0) ack 4001 win 65535
        +0.010 < . 1:1(0) ack 5001 win 65535
        ",
    );
    t.quiet();
    assert_eq!(window(&t).0, 2000);
    assert_eq!(t.conn.take_loss_events().ece_reductions, 0);
    // A later window's echo is answered again, and CWR follows again.
    t.write(&[3; 1000]);
    t.run(
        "
        +0 > [ect0] P. 5001:6001(1000) ack 1
        +0.010 < E. 1:1(0) ack 6001 win 65535
        ",
    );
    assert_eq!(t.conn.take_loss_events().ece_reductions, 1);
    t.write(&[4; 1000]);
    t.run("+0 > [ect0] WP. 6001:7001(1000) ack 1");
    t.quiet();
}

#[test]
fn a_loss_reduction_sends_cwr_and_echoes_in_recovery_change_nothing() {
    // No SACK: NewReno's fast retransmit.
    let mut t = Script::passive(&config(), "0 < SEW 0:0(0) win 65535 <mss 1000>");
    t.run(
        "
        +0 > SE. 0:0(0) ack 1 <mss 1460>
        +0.010 < . 1:1(0) ack 1 win 65535
        ",
    );
    t.write(&[1; 5000]);
    t.run(
        "
        +0 > [ect0] . 1:1001(1000) ack 1
        +0 > [ect0] . 1001:2001(1000) ack 1
        +0 > [ect0] . 2001:3001(1000) ack 1
        +0 > [ect0] . 3001:4001(1000) ack 1
        +0 > [ect0] P. 4001:5001(1000) ack 1
        +0.010 < . 1:1(0) ack 1 win 65535
        +0 < . 1:1(0) ack 1 win 65535
        +0 < E. 1:1(0) ack 1 win 65535
        +0 > [noecn] . 1:1001(1000) ack 1
        +0 < E. 1:1(0) ack 1 win 65535
        +0.010 < E. 1:1(0) ack 5001 win 65535
        ",
    );
    t.quiet();
    assert_eq!(t.conn.take_loss_events().ece_reductions, 0);
    t.write(&[2; 1000]);
    t.run("+0 > [ect0] WP. 5001:6001(1000) ack 1");
}

/// The scripts' configuration, asking for ECN on connects.
fn requesting() -> TcpConfig {
    TcpConfig {
        ecn: EcnMode::Request,
        ..config()
    }
}

#[test]
fn a_connect_asks_for_ecn_and_a_syn_ack_with_ece_alone_agrees() {
    let mut t = Script::active(&requesting());
    t.run(
        "
        // Never ECT on a SYN (RFC 3168 6.1.1).
        0 > [noecn] SEW 0:0(0)
        +0.1 < SE. 0:0(0) ack 1 win 65535 <mss 1000>
        +0 > [noecn] . 1:1(0) ack 1
        ",
    );
    assert!(t.conn.ecn_enabled());
    t.write(&[1; 100]);
    t.run(
        "
        +0 > [ect0] P. 1:101(100) ack 1
        +0.1 < [ce] P. 1:101(100) ack 101 win 65535
        +0 > [noecn] E. 101:101(0) ack 101
        ",
    );
    t.quiet();
}

#[test]
fn a_syn_ack_that_does_not_agree_properly_leaves_ecn_off() {
    // No ECE; ECE and CWR both (a peer reflecting flags it does not
    // know); CWR alone (RFC 3168 6.1.1).
    for syn_ack in ["S.", "SEW.", "SW."] {
        let mut t = Script::active(&requesting());
        t.run(&format!(
            "
            0 > SEW 0:0(0)
            +0.1 < {syn_ack} 0:0(0) ack 1 win 65535 <mss 1000>
            +0 > . 1:1(0) ack 1
            "
        ));
        assert!(!t.conn.ecn_enabled(), "{syn_ack}");
        t.write(&[1; 100]);
        t.run(
            "
            +0 > [noecn] P. 1:101(100) ack 1
            // Marks mean nothing then: no echo, no reduction.
            +0.1 < [ce] EP. 1:101(100) ack 101 win 65535
            +0.040 > [noecn] . 101:101(0) ack 101
            ",
        );
        t.quiet();
        let events = t.conn.take_loss_events();
        assert_eq!((events.ce_received, events.ece_reductions), (0, 0));
    }
}

#[test]
fn only_the_first_syn_asks_and_only_when_configured() {
    // A retransmitted SYN asks for nothing (a middlebox may drop SYNs
    // with ECE and CWR, RFC 3168 6.1.1.1); a SYN-ACK agreeing to the first
    // still turns ECN on, as in Linux.
    let mut t = Script::active(&requesting());
    t.run(
        "
        0 > SEW 0:0(0)
        1 > S 0:0(0)
        +0.1 < SE. 0:0(0) ack 1 win 65535 <mss 1000>
        +0 > . 1:1(0) ack 1
        ",
    );
    assert!(t.conn.ecn_enabled());
    // By default a connect does not ask, and a SYN-ACK with ECE is no
    // agreement to anything.
    let mut t = Script::active(&config());
    t.run(
        "
        0 > S 0:0(0)
        +0.1 < SE. 0:0(0) ack 1 win 65535 <mss 1000>
        +0 > . 1:1(0) ack 1
        ",
    );
    assert!(!t.conn.ecn_enabled());
}

#[test]
fn opening_at_the_same_time_agrees_when_both_ask() {
    let mut t = Script::active(&requesting());
    t.run(
        "
        0 > SEW 0:0(0)
        +0.01 < SEW 0:0(0) win 65535 <mss 1000>
        +0 > SE. 0:0(0) ack 1
        +0.01 < SE. 0:0(0) ack 1 win 65535
        +0 > . 1:1(0) ack 1
        ",
    );
    t.quiet();
    assert_eq!(t.conn.state(), State::Established);
    assert!(t.conn.ecn_enabled());
}

#[test]
fn acks_echoing_congestion_do_not_grow_the_window() {
    // RFC 3168 6.1.2: the window does not grow on an ACK with ECE, also on
    // the echoes repeated before our CWR arrives (Linux's CWR state).
    let mut t = opened(&config(), "SEW", "[noecn]", true);
    t.write(&[1; 20_000]);
    // The initial window, 10 segments, all out: the window limits.
    for _ in 0..10 {
        assert!(t.sent.pop_front().is_some());
    }
    t.quiet();
    t.run("+0.010 < E. 1:1(0) ack 1001 win 65535");
    let reduced = t.conn.cc.window();
    assert_eq!(reduced, 4500, "half the flight of 9000");
    // Five more echoes: a window's worth of ACKs, which would otherwise
    // grow it by a segment in congestion avoidance.
    t.run(
        "
        +0.001 < E. 1:1(0) ack 2001 win 65535
        +0.001 < E. 1:1(0) ack 3001 win 65535
        +0.001 < E. 1:1(0) ack 4001 win 65535
        +0.001 < E. 1:1(0) ack 5001 win 65535
        +0.001 < E. 1:1(0) ack 6001 win 65535
        ",
    );
    assert_eq!(t.conn.cc.window(), reduced);
    assert_eq!(t.conn.take_loss_events().ece_reductions, 1);
}

#[test]
fn a_loss_in_the_window_an_echo_already_reduced_does_not_reduce_again() {
    // RFC 3168 6.1.2: the window is reduced once for a series of dropped
    // and CE-marked packets from one window (Linux, in its CWR state,
    // enters recovery without reducing again).
    let mut t = Script::passive(&config(), "0 < SEW 0:0(0) win 65535 <mss 1000>");
    t.run(
        "
        +0 > SE. 0:0(0) ack 1 <mss 1460>
        +0.010 < . 1:1(0) ack 1 win 65535
        ",
    );
    t.write(&[1; 10_000]);
    for _ in 0..10 {
        assert!(t.sent.pop_front().is_some());
    }
    t.quiet();
    t.run(
        "
        +0.010 < E. 1:1(0) ack 1001 win 65535
        +0.001 < E. 1:1(0) ack 5001 win 65535
        ",
    );
    assert_eq!(t.conn.cc.ssthresh(), 4500, "half the flight of 9000");
    // 5001 was lost, sent before the reduction: the same window.
    t.run(
        "
        +0.001 < E. 1:1(0) ack 5001 win 65535
        +0 < E. 1:1(0) ack 5001 win 65535
        +0 < E. 1:1(0) ack 5001 win 65535
        +0 > [noecn] . 5001:6001(1000) ack 1
        ",
    );
    assert_eq!(t.conn.cc.ssthresh(), 4500);
    let events = t.conn.take_loss_events();
    assert_eq!((events.ece_reductions, events.reno_recoveries), (1, 1));
}

#[test]
fn a_sack_loss_in_the_window_an_echo_already_reduced_does_not_reduce_again() {
    let mut t = opened(&config(), "SEW", "[noecn]", true);
    t.write(&[1; 10_000]);
    for _ in 0..10 {
        assert!(t.sent.pop_front().is_some());
    }
    t.quiet();
    t.run(
        "
        +0.010 < E. 1:1(0) ack 1001 win 65535
        +0.001 < E. 1:1(0) ack 5001 win 65535
        ",
    );
    assert_eq!(t.conn.cc.ssthresh(), 4500, "half the flight of 9000");
    t.run(
        "
        +0.001 < E. 1:1(0) ack 5001 win 65535 <nop,nop,sack 6001:7001>
        +0 < E. 1:1(0) ack 5001 win 65535 <nop,nop,sack 6001:8001>
        +0 < E. 1:1(0) ack 5001 win 65535 <nop,nop,sack 6001:9001>
        +0 > [noecn] . 5001:6001(1000) ack 1
        ",
    );
    assert_eq!(t.conn.cc.ssthresh(), 4500);
    let events = t.conn.take_loss_events();
    assert_eq!((events.ece_reductions, events.sack_recoveries), (1, 1));
}
