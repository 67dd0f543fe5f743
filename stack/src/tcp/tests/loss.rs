//! Loss: retransmission on the timer with backoff, fast retransmit and
//! NewReno recovery, giving up after the configured tries; the congestion
//! control chosen per stack or per connection.

use super::close::established;
use super::*;

#[test]
fn an_unacknowledged_segment_is_retransmitted_with_backoff() {
    let mut t = established();
    t.write(&[7u8; 100]);
    // The handshake sampled 10 ms: the RTO is the 200 ms minimum.
    t.run(
        "
        +0 > P. 1:101(100) ack 1
        +0.2 > P. 1:101(100) ack 1
        +0.4 > P. 1:101(100) ack 1
        +0.05 < . 1:1(0) ack 101 win 8000
        ",
    );
    t.quiet();
    assert_eq!(t.conn.rto_at, None);
    assert_eq!(t.conn.retries, 0);
    // The congestion window shrank to one segment on the timeout.
    assert_eq!(
        t.conn.cc.window(),
        1000 + 100,
        "one segment, then slow start"
    );
}

#[test]
fn three_duplicate_acks_retransmit_at_once_and_newreno_recovers() {
    let mut t = established();
    t.write(&[1u8; 5000]);
    t.run(
        "
        +0 > . 1:1001(1000) ack 1
        +0 > . 1001:2001(1000) ack 1
        +0 > . 2001:3001(1000) ack 1
        +0 > . 3001:4001(1000) ack 1
        +0 > P. 4001:5001(1000) ack 1
        // 1001-2001 and 3001-4001 are lost: three duplicates of 1001.
        +0.01 < . 1:1(0) ack 1001 win 8000
        +0 < . 1:1(0) ack 1001 win 8000
        +0 < . 1:1(0) ack 1001 win 8000
        +0 < . 1:1(0) ack 1001 win 8000
        +0 > . 1001:2001(1000) ack 1
        // A partial ACK (RFC 6582): the next hole goes at once.
        +0.01 < . 1:1(0) ack 3001 win 8000
        +0 > . 3001:4001(1000) ack 1
        +0.01 < . 1:1(0) ack 5001 win 8000
        ",
    );
    t.quiet();
    assert!(!t.conn.cc.in_recovery());
    assert!(t.conn.send_buf.is_empty());
}

#[test]
fn a_peer_that_never_answers_times_the_connection_out() {
    let mut config = config();
    config.max_retries = 3;
    let mut t = Script::passive(&config, "0 < S 0:0(0) win 8000 <mss 1000>");
    t.run(
        "
        +0 > S. 0:0(0) ack 1
        +0.01 < . 1:1(0) ack 1 win 8000
        ",
    );
    t.write(b"hello?");
    t.advance(t.now + Duration::from_secs(10));
    assert_eq!(t.sent.len(), 4, "the segment and three retries");
    assert_eq!(t.conn.error(), Some(TcpError::TimedOut));
    assert_eq!(t.conn.state(), State::Closed);
}

#[test]
fn keepalive_probes_an_idle_peer_and_gives_up_on_a_dead_one() {
    let mut config = config();
    config.keepalive = Some(Duration::from_secs(10));
    config.keepalive_interval = Duration::from_secs(1);
    config.keepalive_probes = 3;
    let mut t = Script::passive(&config, "0 < S 0:0(0) win 8000 <mss 1000>");
    t.run(
        "
        +0 > S. 0:0(0) ack 1
        +0.01 < . 1:1(0) ack 1 win 8000
        // Ten idle seconds: a probe (an old sequence number); the peer
        // answers, and the clock starts over.
        +10 > . 0:0(0) ack 1
        +0.01 < . 1:1(0) ack 1 win 8000
        +10 > . 0:0(0) ack 1
        // Now the peer is gone: a probe a second, three in all, then the
        // connection times out.
        +1 > . 0:0(0) ack 1
        +1 > . 0:0(0) ack 1
        ",
    );
    assert_eq!(t.conn.state(), State::Established);
    t.advance(t.now + Duration::from_secs(1));
    t.quiet();
    assert_eq!(t.conn.state(), State::Closed);
    assert_eq!(t.conn.error(), Some(TcpError::TimedOut));
}

#[test]
fn keepalive_leaves_a_connection_with_data_out_to_the_retransmission_timer() {
    // Linux sends no keepalive while data is unacknowledged or waiting
    // (tcp_keepalive_timer): the RTO already probes the peer, with its
    // own, longer, patience. A keepalive of 10 s and 3 probes a second
    // apart must not cut a transfer short through a 15 s outage.
    let mut config = config();
    config.keepalive = Some(Duration::from_secs(10));
    config.keepalive_interval = Duration::from_secs(1);
    config.keepalive_probes = 3;
    let mut t = Script::passive(&config, "0 < S 0:0(0) win 8000 <mss 1000>");
    t.run(
        "
        +0 > S. 0:0(0) ack 1
        +0.01 < . 1:1(0) ack 1 win 8000
        ",
    );
    t.advance(t.now + Duration::from_secs(5));
    t.write(&[3u8; 500]);
    // The peer is silent for 15 s: only retransmissions go.
    t.advance(t.now + Duration::from_secs(15));
    assert_eq!(t.conn.keepalives, 0);
    assert_eq!(t.conn.state(), State::Established);
    t.sent.clear();
    // It comes back and acknowledges everything.
    t.run(
        "
        +0 < . 1:1(0) ack 501 win 8000
        ",
    );
    t.quiet();
    assert_eq!(t.conn.state(), State::Established);
    assert_eq!(t.conn.error(), None);
    // Idle again: keepalive resumes.
    t.run("+10 > . 500:500(0) ack 1");
}

#[test]
fn cubic_is_the_default_and_newreno_stays_selectable() {
    let syn = "0 < S 0:0(0) win 8000 <mss 1000>";
    // Per stack: CUBIC unless the configuration says otherwise.
    let stack_default = TcpConfig {
        congestion: TcpConfig::default().congestion,
        ..config()
    };
    let cubic = Script::passive(&stack_default, syn);
    assert_eq!(cubic.conn.congestion(), Algorithm::Cubic);
    let mut reno = Script::passive(&config(), syn);
    assert_eq!(reno.conn.congestion(), Algorithm::NewReno);
    // Per connection, and each reacts to a timeout its own way: NewReno
    // halves the flight (RFC 5681), CUBIC keeps 0.7 of it (RFC 9438).
    let mut cubic = cubic;
    reno.conn.set_congestion(Algorithm::NewReno);
    for (t, ssthresh) in [(&mut reno, 4000), (&mut cubic, 5600)] {
        t.run(
            "
            +0 > S. 0:0(0) ack 1
            +0.01 < . 1:1(0) ack 1 win 8000
            ",
        );
        t.write(&[5u8; 8000]);
        t.advance(t.now + Duration::from_millis(200));
        assert_eq!(t.conn.cc.window(), 1000, "one segment after the timeout");
        assert_eq!(t.conn.cc.ssthresh(), ssthresh);
    }
    let mut switched = Script::passive(&config(), syn);
    switched.conn.set_congestion(Algorithm::Cubic);
    assert_eq!(switched.conn.congestion(), Algorithm::Cubic);
}

#[test]
fn without_sack_the_first_two_duplicates_each_send_a_new_segment() {
    // RFC 3042's limited transmit: a window too small to bring three
    // duplicate ACKs back otherwise still gets its fast retransmit.
    let mut t = Script::passive(&config(), "0 < S 0:0(0) win 60000 <mss 1000>");
    t.run(
        "
        +0 > S. 0:0(0) ack 1 <mss 1460>
        +0.01 < . 1:1(0) ack 1 win 60000
        ",
    );
    assert_eq!(t.write(&[3u8; 12000]), 12000);
    let first_flight: String = (0..10)
        .map(|i| format!("+0 > . {}:{}(1000) ack 1\n", 1 + i * 1000, 1001 + i * 1000))
        .collect();
    t.run(&first_flight);
    t.run(
        "
        // The first segment is lost: the others bring duplicates.
        +0.01 < . 1:1(0) ack 1 win 60000
        +0 > . 10001:11001(1000) ack 1
        +0 < . 1:1(0) ack 1 win 60000
        +0 > P. 11001:12001(1000) ack 1
        +0 < . 1:1(0) ack 1 win 60000
        +0 > . 1:1001(1000) ack 1
        +0.01 < . 1:1(0) ack 12001 win 60000
        ",
    );
    t.quiet();
    assert!(t.conn.send_buf.is_empty());
    assert_eq!(t.conn.loss.reno_recoveries, 1);
}
