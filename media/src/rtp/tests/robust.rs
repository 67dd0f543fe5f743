//! No input panics: pseudo-random datagrams (a fixed LCG, so runs repeat)
//! through every parser and reader, and random sequence numbers and times
//! through the statistics.

use crate::rtp::*;
use dpstack_stack::time::Instant;

struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) as u32
    }
}

#[test]
fn random_datagrams() {
    let mut rng = Lcg(42);
    let mut buf = [0u8; 96];
    let (mut rtp, mut rtcp) = (0, 0);
    for _ in 0..20_000 {
        let len = rng.next() as usize % buf.len();
        for b in buf.iter_mut() {
            *b = rng.next() as u8;
        }
        // Version 2; half the time an RTCP header whose length field
        // matches the datagram (or is off by a word), with 0-2 blocks.
        buf[0] = 0x80 | (buf[0] & 0x3f);
        let mut len = len;
        if rng.next() % 2 == 0 {
            let words = rng.next() as usize % 24;
            buf[0] = 0x80 | (rng.next() % 3) as u8 | if rng.next() % 8 == 0 { 0x20 } else { 0 };
            buf[1] = 200 + (rng.next() % 8) as u8;
            buf[2] = 0;
            buf[3] = words as u8;
            len = ((words + 1) * 4 + [0, 0, 0, 4][rng.next() as usize % 4]).min(buf.len());
        }
        let d = &buf[..len];
        let _ = classify(d);
        let p = RtpPacket::new_unchecked(d);
        let _ = (
            p.payload(),
            p.extension(),
            p.csrcs().count(),
            p.header_len(),
        );
        if let Ok(p) = RtpPacket::new_checked(d) {
            rtp += 1;
            assert!(p.header_len() + p.payload().len() + p.padding_len() == len);
        }
        if let Ok(c) = Compound::new_checked(d) {
            rtcp += 1;
            for packet in c.packets() {
                match packet {
                    RtcpPacket::SenderReport(sr) => {
                        let _ = (sr.sender_info(), sr.report_blocks().count());
                    }
                    RtcpPacket::ReceiverReport(rr) => {
                        let _ = rr.report_blocks().count();
                    }
                    _ => {}
                }
            }
        }
    }
    // The generator does reach both parsers' accepting paths.
    assert!(rtp > 1000 && rtcp > 100, "rtp {rtp} rtcp {rtcp}");
}

#[test]
fn random_sequence_numbers() {
    let mut rng = Lcg(7);
    let mut s = ReceiveStats::new(1, 48_000);
    let mut seq = 0u16;
    for i in 0..50_000u64 {
        seq = match rng.next() % 10 {
            0 => rng.next() as u16,
            1 => seq.wrapping_sub((rng.next() % 200) as u16),
            _ => seq.wrapping_add(1),
        };
        let arrival = Instant::from_nanos(i * 20_000_000 + u64::from(rng.next() % 5_000_000));
        s.record(seq, rng.next(), rng.next() as usize % 1500, arrival);
        if i % 250 == 0 {
            if let Some(block) = s.report_block(arrival) {
                assert!((-0x80_0000..=0x7f_ffff).contains(&block.cumulative_lost));
            }
        }
    }
    let c = s.counters();
    assert_eq!(c.packets, 50_000);
    assert!(c.duplicates > 0 && c.out_of_order > 0 && c.resyncs > 0);
}
