//! The relay's own receiver reports over the in-memory port with a virtual
//! clock: when they come out (RFC 3550 6.2/6.3: the initial halved
//! minimum, then 5 s / (e - 3/2) times a factor in [0.5, 1.5], reconsidered
//! at expiry: 5 s on average), what they
//! say after known loss and a sender report, where they go in echo and
//! relay mode, and that relay mode sends none unless asked.

use super::*;
use crate::rtp::{write_bye, write_receiver_report, Compound, ReportBlock, RtcpPacket};

/// The mean interval after the first report, in ms: 5 s, as timer
/// reconsideration (6.3.6) makes it.
const MEAN_MS: f64 = 5000.0;

/// A parsed receiver report the relay sent.
#[derive(Debug)]
struct Rr {
    at: Instant,
    src: SocketAddrV4,
    dst: SocketAddrV4,
    reporter: u32,
    blocks: Vec<ReportBlock>,
    cname: bool,
}

fn parse_rr(sent: &Sent, at: Instant) -> Option<Rr> {
    let compound = Compound::new_checked(&sent.payload).ok()?;
    let mut rr = None;
    let mut cname = false;
    for packet in compound.packets() {
        match packet {
            RtcpPacket::ReceiverReport(r) => {
                rr = Some((r.ssrc(), r.report_blocks().collect::<Vec<_>>()));
            }
            RtcpPacket::Sdes(raw) => cname = raw.body().get(4) == Some(&1),
            _ => {}
        }
    }
    let (reporter, blocks) = rr?;
    Some(Rr {
        at,
        src: sent.src,
        dst: sent.dst,
        reporter,
        blocks,
        cname,
    })
}

impl Net {
    /// Polls every `step_ms` until `until`, collecting the RRs sent.
    fn run_until(&mut self, until: Instant, step_ms: u64) -> Vec<Rr> {
        let mut rrs = Vec::new();
        while self.now < until {
            self.advance(step_ms);
            let now = self.now;
            rrs.extend(self.run().iter().filter_map(|s| parse_rr(s, now)));
        }
        rrs
    }
}

fn echo() -> RelayOptions {
    RelayOptions {
        echo: true,
        ..options()
    }
}

fn secs(n: u64) -> Instant {
    Instant::ZERO + Duration::from_secs(n)
}

#[test]
fn echo_mode_reports_at_the_rfc_interval() {
    let mut net = Net::new(&one_call(false), echo(), 4096);
    let a = at(A_IP, 5004);
    let start = net.now;
    for seq in 1..=3 {
        net.send(a, 30000, &rtp(0xa1, seq));
        net.run();
        net.advance(20);
    }
    let rrs = net.run_until(start + Duration::from_secs(900), 10);
    assert!(rrs.len() > 150, "{} reports in 900 s", rrs.len());
    for rr in &rrs {
        assert_eq!(rr.src, at(RELAY_IP, 30001), "from leg A's RTCP port");
        assert_eq!(rr.dst, at(A_IP, 5005), "to the sender's RTCP port");
        assert!(rr.cname, "an SDES CNAME follows the RR");
        // The source sent for 60 ms: a member for M * Td = 25 s, then
        // timed out (6.3.5) at the first expiry after that, at most one
        // interval (6.16 s) later; no block once it is out.
        let quiet = rr.at.saturating_duration_since(start).as_secs_f64();
        if quiet < 25.0 {
            assert_eq!(rr.blocks.len(), 1, "at {quiet} s");
            assert_eq!(rr.blocks[0].ssrc, 0xa1);
        } else if quiet > 25.0 + 6.2 {
            assert!(rr.blocks.is_empty(), "timed out, at {quiet} s");
        }
        assert_ne!(rr.reporter, 0xa1, "our own SSRC");
        assert_eq!(rr.reporter, rrs[0].reporter, "one SSRC per leg");
    }
    // The first one: half the minimum, 2.5 s / (e - 1.5) x [0.5, 1.5],
    // after the poll that saw the stream.
    let first = rrs[0].at.saturating_duration_since(start).as_millis();
    assert!(
        (1000..=3140).contains(&first),
        "first report after {first} ms"
    );
    let gaps: Vec<f64> = rrs
        .windows(2)
        .map(|w| w[1].at.saturating_duration_since(w[0].at).as_secs_f64() * 1000.0)
        .collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let (min, max) = gaps
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), &g| (lo.min(g), hi.max(g)));
    // Reconsideration (6.3.6) makes the mean the deterministic 5 s (that is
    // what dividing by e - 3/2 compensates for), sd about 0.9 s; the mean of
    // ~180 is within 0.25 s at 3 sigma. Bounds 2.052..6.156 s, plus a 10 ms
    // poll step.
    assert!((mean - MEAN_MS).abs() < 250.0, "mean interval {mean:.0} ms");
    assert!(
        min >= 2052.0 - 1.0 && max <= 6156.0 + 11.0,
        "{min}..{max} ms"
    );
    assert!(min < 2600.0 && max > 5600.0, "randomised: {min}..{max} ms");
    let snapshot = net.relay.snapshot();
    let leg = &snapshot.sessions[0].legs[0].counters;
    assert_eq!(leg.reports_sent, rrs.len() as u64);
    assert_eq!(leg.reports_failed, 0);
    // Leg B heard nothing: it reports nothing.
    assert_eq!(snapshot.sessions[0].legs[1].counters.reports_sent, 0);
    assert!(net.report().contains(&format!("reports {}", rrs.len())));
}

#[test]
fn a_silent_source_times_out_of_the_reports_and_returns_when_heard() {
    let mut net = Net::new(&one_call(false), echo(), 4096);
    let a = at(A_IP, 5004);
    let send = |net: &mut Net, seqs: core::ops::RangeInclusive<u16>| {
        for seq in seqs {
            net.send(a, 30000, &rtp(0xc3, seq));
            net.run();
            net.advance(20);
        }
    };
    send(&mut net, 1..=3);
    // RTCP from the source keeps it a member without RTP (6.3.5: RTP or
    // RTCP), and only RTP keeps it a sender.
    let rrs = net.run_until(secs(20), 10);
    assert!(rrs.iter().all(|rr| rr.blocks.len() == 1));
    net.send(at(A_IP, 5005), 30001, &sender_report(0xc3));
    net.run();
    let rrs = net.run_until(secs(40), 10);
    assert!(rrs.iter().all(|rr| rr.blocks.len() == 1), "RTCP at 20 s");
    // 25 s after the SR, plus at most one interval for the check.
    let rrs = net.run_until(secs(60), 10);
    let late: Vec<_> = rrs.iter().filter(|rr| rr.at > secs(20 + 25 + 7)).collect();
    assert!(!late.is_empty() && late.iter().all(|rr| rr.blocks.is_empty()));
    let members = net.relay.snapshot().sessions[0].legs[0].streams.len();
    assert_eq!(members, 1, "still tracked and shown");
    // RTP again: a member and reported at the next expiry's check.
    send(&mut net, 4..=6);
    let start = net.now;
    let rrs = net.run_until(start + Duration::from_secs(15), 10);
    let again = rrs
        .iter()
        .filter(|rr| rr.at > start + Duration::from_millis(6_200));
    assert!(again.clone().count() > 0);
    for rr in again {
        assert_eq!(rr.blocks.len(), 1);
        assert_eq!(rr.blocks[0].extended_highest_seq, 6);
    }
}

#[test]
fn reports_carry_loss_jitter_and_the_last_sender_report() {
    let mut net = Net::new(&one_call(false), echo(), 4096);
    let a = at(A_IP, 5004);
    // 1..=50 with 10..=14 lost, 20 ms apart; then an SR.
    for seq in 1..=50 {
        if !(10..=14).contains(&seq) {
            net.send(a, 30000, &rtp(0xb2, seq));
            net.run();
        }
        net.advance(20);
    }
    let sr_at = net.now;
    net.send(at(A_IP, 5005), 30001, &sender_report(0xb2));
    net.run();
    let mut rrs = net.run_until(secs(8), 10);
    assert!(!rrs.is_empty());
    let first = rrs.remove(0);
    let block = first.blocks[0];
    // Probation took packet 1: expected 2..=50 (49), received 44.
    assert_eq!(block.cumulative_lost, 5);
    assert_eq!(block.fraction_lost, (5 * 256 / 49) as u8);
    assert_eq!(block.extended_highest_seq, 50);
    assert_eq!(block.jitter, 0, "sent and received 20 ms apart");
    // LSR: the middle 32 bits of the SR's NTP time; DLSR: 1/65536 s since.
    assert_eq!(block.last_sr, 0x7e80_8000);
    let delay = first.at.saturating_duration_since(sr_at);
    let dlsr = (delay.as_nanos() * 65_536 / 1_000_000_000) as u32;
    assert_eq!(block.delay_since_last_sr, dlsr);
    // More packets, none lost: the next report's fraction is 0, the
    // cumulative loss stays, the highest sequence number moves on.
    let mut next_seq = 51u16;
    let mut later = Vec::new();
    while later.len() < 2 {
        net.send(a, 30000, &rtp(0xb2, next_seq));
        next_seq += 1;
        net.advance(20);
        let now = net.now;
        later.extend(net.run().iter().filter_map(|s| parse_rr(s, now)));
    }
    let block = later[1].blocks[0];
    assert_eq!((block.fraction_lost, block.cumulative_lost), (0, 5));
    let highest = u32::from(next_seq - 1);
    assert!(block.extended_highest_seq <= highest && block.extended_highest_seq > 60);
    let stats = net.relay.snapshot().sessions[0].legs[0].streams[0].counters;
    assert_eq!(stats.lost, 5);
}

#[test]
fn relay_mode_reports_only_when_asked_and_to_each_leg() {
    let (a, b) = (at(A_IP, 5004), at(B_IP, 6000));
    // Past probation (two packets), so that there is something to report.
    let both_ways = |net: &mut Net| {
        for seq in 1..=2 {
            net.send(a, 30000, &rtp(0xa, seq));
            net.send(b, 30002, &rtp(0xb, seq));
        }
        net.run()
    };
    let mut net = Net::new(&one_call(false), options(), 4096);
    both_ways(&mut net);
    assert!(net.run_until(secs(30), 50).is_empty(), "off by default");

    let opts = RelayOptions {
        rtcp_reports: true,
        ..options()
    };
    let mut net = Net::new(&one_call(false), opts, 4096);
    assert_eq!(both_ways(&mut net).len(), 4, "relayed as before");
    let rrs = net.run_until(secs(30), 50);
    let to_a: Vec<_> = rrs.iter().filter(|r| r.dst == at(A_IP, 5005)).collect();
    let to_b: Vec<_> = rrs.iter().filter(|r| r.dst == at(B_IP, 6001)).collect();
    assert!(to_a.len() >= 4 && to_b.len() >= 4, "{rrs:?}");
    assert_eq!(to_a.len() + to_b.len(), rrs.len());
    assert!(to_a
        .iter()
        .all(|r| r.src == at(RELAY_IP, 30001) && r.blocks.iter().map(|b| b.ssrc).eq([0xa])));
    assert!(to_b
        .iter()
        .all(|r| r.src == at(RELAY_IP, 30003) && r.blocks.iter().map(|b| b.ssrc).eq([0xb])));
    assert_ne!(to_a[0].reporter, to_b[0].reporter, "an SSRC per leg");
    // RTCP from the endpoints is still relayed.
    net.send(at(A_IP, 5005), 30001, &sender_report(0xa));
    let sent = net.run();
    assert!(sent
        .iter()
        .any(|s| s.dst == at(B_IP, 6001) && s.payload == sender_report(0xa)));
}

#[test]
fn rtcp_mux_reports_go_to_the_rtp_port() {
    let mut net = Net::new(&one_call(true), echo(), 4096);
    net.send(at(A_IP, 5004), 30000, &rtp(7, 1));
    net.send(at(A_IP, 5004), 30000, &rtp(7, 2));
    net.run();
    let rrs = net.run_until(secs(10), 50);
    assert!(!rrs.is_empty());
    assert!(rrs.iter().all(|r| r.blocks.len() == 1));
    assert!(rrs
        .iter()
        .all(|r| r.src == at(RELAY_IP, 30000) && r.dst == at(A_IP, 5004)));
}

#[test]
fn a_poll_examines_a_bounded_number_of_sessions() {
    // 200 echo sessions, 8 examined per poll: a sweep takes 25 polls; every
    // leg A still gets its reports, about as often as alone.
    const SESSIONS: u32 = 200;
    let mut opts = echo();
    opts.reports.sessions_per_poll = 8;
    let specs = config::generate(SESSIONS, 20000, false, [None, None]).unwrap();
    let mut net = Net::new(&specs, opts, 4096);
    for seq in 1..=2 {
        for i in 0..SESSIONS {
            net.send(
                at(A_IP, 10000 + 2 * i as u16),
                20000 + 4 * i as u16,
                &rtp(i, seq),
            );
        }
        net.run();
    }
    let cursor = net.relay.cursor;
    net.poll();
    assert_eq!(net.relay.cursor, (cursor + 8) % SESSIONS, "8 per poll");
    let rrs = net.run_until(secs(60), 10);
    let mut per_session = vec![0u32; SESSIONS as usize];
    for rr in &rrs {
        per_session[usize::from((rr.src.port() - 20001) / 4)] += 1;
    }
    // 60 s / 4.1 s: about 14 each (at least 9 even at 6.2 s each).
    assert!(
        per_session.iter().all(|&n| (9..=30).contains(&n)),
        "{per_session:?}"
    );
}

#[test]
fn ending_the_sessions_says_bye_on_every_reporting_leg() {
    let mut net = Net::new(&one_call(false), echo(), 4096);
    let a = at(A_IP, 5004);
    for seq in 1..=3 {
        net.send(a, 30000, &rtp(0xa1, seq));
        net.run();
        net.advance(20);
    }
    let start = net.now;
    let rrs = net.run_until(start + Duration::from_secs(10), 10);
    assert!(!rrs.is_empty(), "leg A reports");
    let now = net.now;
    let Net {
        iface, port, relay, ..
    } = &mut net;
    assert_eq!(
        relay.say_bye(iface, core::slice::from_mut(port), now),
        1,
        "only leg A heard a source"
    );
    let frames = net.port.take_tx();
    assert_eq!(frames.len(), 1, "one BYE compound");
    let sent = parse(&frames[0]).expect("a UDP datagram");
    assert_eq!((sent.src, sent.dst), (at(RELAY_IP, 30001), at(A_IP, 5005)));
    let compound = Compound::new_checked(&sent.payload).expect("a valid compound");
    let packets: Vec<_> = compound.packets().collect();
    assert!(
        matches!(packets[0], RtcpPacket::ReceiverReport(_)),
        "a report first"
    );
    match packets.last() {
        Some(RtcpPacket::Bye(bye)) => {
            assert_eq!(bye.count(), 1);
            assert_eq!(
                bye.body().get(..4),
                Some(&rrs[0].reporter.to_be_bytes()[..]),
                "the leg's own SSRC"
            );
        }
        other => panic!("not a BYE last: {other:?}"),
    }
    // Goodbye said: no more reports from that leg, and the sessions end.
    let later = net.run_until(now + Duration::from_secs(20), 10);
    assert!(later.is_empty(), "{later:?}");
    let Net { iface, relay, .. } = &mut net;
    assert_eq!(relay.stop(iface), 1);
}

#[test]
fn a_bye_received_on_a_leg_takes_its_source_out_of_the_reports() {
    // Two sources from A's peer; then an RR + BYE compound for one of them
    // on A's RTCP port: the relay's later reports only cover the other.
    let mut net = Net::new(&one_call(false), echo(), 4096);
    let a = at(A_IP, 5004);
    for seq in 1..=20 {
        for ssrc in [0xa1, 0xa2] {
            net.send(a, 30000, &rtp(ssrc, seq));
        }
        net.run();
        net.advance(20);
    }
    let before = net.run_until(secs(4), 10);
    let covered = |rr: &Rr| rr.blocks.iter().map(|b| b.ssrc).collect::<Vec<_>>();
    assert_eq!(covered(&before[0]), vec![0xa1, 0xa2]);
    let mut bye = [0u8; 64];
    let rr_len = write_receiver_report(&mut bye, 0xa1, &[]).unwrap();
    let bye_len = write_bye(&mut bye[rr_len..], &[0xa1]).unwrap();
    net.send(at(A_IP, 5005), 30001, &bye[..rr_len + bye_len]);
    net.run();
    let mut seq = 21;
    let mut after = Vec::new();
    while after.len() < 2 {
        net.send(a, 30000, &rtp(0xa2, seq));
        seq += 1;
        net.advance(20);
        let now = net.now;
        after.extend(net.run().iter().filter_map(|s| parse_rr(s, now)));
    }
    for rr in &after {
        assert_eq!(covered(rr), vec![0xa2], "at {:?}", rr.at);
    }
    let leg = &net.relay.snapshot().sessions[0].legs[0];
    assert_eq!(leg.streams.len(), 2, "its statistics stay");
    // A third source (after a transfer) takes the slot of the one that
    // left, is reported on, and the leaver's figures stay in the totals.
    let mut later = Vec::new();
    for seq in 1..=300u16 {
        net.send(a, 30000, &rtp(0xa3, seq));
        net.send(a, 30000, &rtp(0xa2, seq + 100));
        net.advance(20);
        let now = net.now;
        later.extend(net.run().iter().filter_map(|s| parse_rr(s, now)));
    }
    let last = later.last().expect("reports while the third source sends");
    assert_eq!(covered(last), vec![0xa3, 0xa2]);
    let snapshot = net.relay.snapshot();
    let leg = &snapshot.sessions[0].legs[0];
    let ssrcs: Vec<u32> = leg.streams.iter().map(|s| s.ssrc).collect();
    assert_eq!(ssrcs, [0xa3, 0xa2]);
    assert_eq!(
        (leg.counters.retired, leg.counters.retired_packets),
        (1, 20)
    );
    assert_eq!(leg.counters.untracked, 0);
    let streams: u64 = leg.streams.iter().map(|s| s.counters.packets).sum();
    let text = super::super::report::render(&snapshot, &["call".to_owned()]);
    let total = super::super::report::field(&text, "total ", "packets");
    assert_eq!(total, i64::try_from(streams + 20).ok(), "{text}");
    assert!(text.contains(" retired 1 "), "{text}");
}
