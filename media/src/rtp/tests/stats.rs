//! A source's statistics: counters, jitter and loss through
//! [`ReceiveStats`], the report block made from them, written as a receiver
//! report and read back.

use crate::rtp::stats::dlsr;
use crate::rtp::*;
use dpstack_stack::time::{Duration, Instant};

fn ms(n: u64) -> Instant {
    Instant::from_nanos(n * 1_000_000)
}

#[test]
fn stats_to_receiver_report_and_back() {
    let mut s = ReceiveStats::new(0xabc, 8000);
    let ts = |seq: u16| u32::from(seq - 100) * 160;
    // arrival  seq  outcome     transit (units)  |D|  jitter x16
    //   0 ms   100  probation         -           -      -
    //  20 ms   101  valid, base     160-160=0     -      0
    //  40 ms   102  in order        320-320=0     0      0
    //  90 ms   104  in order (gap)  720-640=80   80     80
    //  95 ms   103  late            760-480=280 200     80 - 5 + 200 = 275
    //  96 ms   104  duplicate       (no jitter sample)
    let arrivals = [
        (0, 100),
        (20, 101),
        (40, 102),
        (90, 104),
        (95, 103),
        (96, 104),
    ];
    let outcomes: Vec<_> = arrivals
        .iter()
        .map(|&(at, seq)| s.record(seq, ts(seq), 160, ms(at)))
        .collect();
    use SeqOutcome::*;
    assert_eq!(
        outcomes,
        [Probation, InOrder, InOrder, InOrder, Reordered, Duplicate]
    );
    let counters = Counters {
        packets: 6,
        bytes: 960,
        received: 5,
        expected: 4,
        lost: -1,
        duplicates: 1,
        out_of_order: 1,
        discarded: 1,
        resyncs: 0,
        jitter: 17,
        extended_highest_seq: 104,
    };
    assert_eq!(s.counters(), counters);
    assert_eq!(s.jitter_duration(), Duration::from_micros(2125)); // 17 / 8000 s
                                                                  // An SR arrives at 100 ms; the report goes out 1.5 s later.
    s.record_sender_report(0x83aa_7e80_8000_0000, ms(100));
    let block = s.report_block(ms(1600)).expect("valid source");
    let want = ReportBlock {
        ssrc: 0xabc,
        fraction_lost: 0, // 4 expected, 5 received
        cumulative_lost: -1,
        extended_highest_seq: 104,
        jitter: 17,
        last_sr: 0x7e80_8000,
        delay_since_last_sr: 0x1_8000, // 1.5 * 65536
    };
    assert_eq!(block, want);

    let mut buf = [0u8; 64];
    let n = write_receiver_report(&mut buf, 0x1234, &[block]).expect("fits");
    let m = write_sdes_cname(&mut buf[n..], 0x1234, b"relay@dpstack").expect("fits");
    assert_eq!((n, m), (32, 24));
    assert_eq!(buf[..8], [0x81, 201, 0, 7, 0, 0, 0x12, 0x34]);
    assert_eq!(buf[32..36], [0x81, 202, 0, 5]);
    assert_eq!(classify(&buf[..n + m]), Kind::Rtcp);
    let mut it = Compound::new_checked(&buf[..n + m])
        .expect("valid")
        .packets();
    let Some(RtcpPacket::ReceiverReport(rr)) = it.next() else {
        panic!("RR first");
    };
    assert_eq!(rr.ssrc(), 0x1234);
    assert_eq!(rr.report_blocks().collect::<Vec<_>>(), [want]);
    assert!(matches!(it.next(), Some(RtcpPacket::Sdes(_))));
    assert_eq!(it.next(), None);
}

#[test]
fn probation_sources_are_not_reported() {
    let mut s = ReceiveStats::new(1, 8000);
    assert_eq!(s.report_block(ms(0)), None);
    s.record(7, 0, 10, ms(0));
    assert_eq!(s.report_block(ms(1)), None);
    s.record(8, 160, 10, ms(20));
    let block = s.report_block(ms(30)).expect("valid");
    assert_eq!(
        (
            block.extended_highest_seq,
            block.last_sr,
            block.delay_since_last_sr
        ),
        (8, 0, 0)
    );
}

#[test]
fn resync_restarts_the_jitter_reference() {
    let mut s = ReceiveStats::new(1, 8000);
    for (i, seq) in (10..14u16).enumerate() {
        s.record(seq, 160 * i as u32, 0, ms(20 * i as u64));
    }
    assert_eq!(s.jitter(), 0);
    // The sender restarts: new sequence numbers and a timestamp far away.
    assert_eq!(s.record(40_000, 9_000_000, 0, ms(80)), SeqOutcome::Jump);
    assert_eq!(s.record(40_001, 9_000_160, 0, ms(100)), SeqOutcome::Resync);
    assert_eq!(s.record(40_002, 9_000_320, 0, ms(120)), SeqOutcome::InOrder);
    assert_eq!(s.jitter(), 0);
    let c = s.counters();
    assert_eq!(
        (c.resyncs, c.discarded, c.received, c.expected),
        (1, 2, 2, 2)
    );
}

#[test]
fn record_packet_reads_the_header() {
    let mut buf = [0u8; 12 + 160];
    let header = RtpHeader {
        payload_type: 0,
        seq: 5,
        timestamp: 800,
        ssrc: 9,
        ..RtpHeader::default()
    };
    header.emit(&mut buf).expect("fits");
    let packet = RtpPacket::new_checked(&buf[..]).expect("valid");
    let mut s = ReceiveStats::new(packet.ssrc(), 8000);
    assert_eq!(s.record_packet(&packet, ms(0)), SeqOutcome::Probation);
    assert_eq!((s.counters().packets, s.counters().bytes), (1, 160));
}

#[test]
fn dlsr_units() {
    assert_eq!(dlsr(Duration::from_secs(1)), 65536);
    assert_eq!(dlsr(Duration::from_micros(500)), 32); // 32.768 truncated
    assert_eq!(dlsr(Duration::from_secs(70_000)), u32::MAX);
}
