//! Compound RTCP parsing and its errors, and writing RTCP then reading it
//! back.

use crate::rtp::rtcp::{packet_type, Packets, RawPacket};
use crate::rtp::*;

/// SR (RC 1) + SDES (one CNAME "a") + BYE padded by 4: 52 + 12 + 12 bytes.
const COMPOUND: [u8; 76] = [
    // SR, RC=1, length 12 (52 bytes)
    0x81, 200, 0x00, 0x0c, 0x11, 0x22, 0x33, 0x44, //
    0x83, 0xaa, 0x7e, 0x80, 0x80, 0x00, 0x00, 0x00, // NTP
    0x00, 0x00, 0x10, 0x00, // RTP timestamp 4096
    0x00, 0x00, 0x00, 0x64, 0x00, 0x00, 0x3e, 0x80, // 100 packets, 16000 octets
    0x55, 0x66, 0x77, 0x88, 0x40, 0xff, 0xff, 0xfe, // block: 64/256, lost -2
    0x00, 0x01, 0x00, 0x05, 0x00, 0x00, 0x00, 0x20, // ext seq 65541, jitter 32
    0x12, 0x34, 0x56, 0x78, 0x00, 0x01, 0x80, 0x00, // LSR, DLSR 1.5 s
    // SDES, SC=1, length 2
    0x81, 202, 0x00, 0x02, 0x11, 0x22, 0x33, 0x44, 0x01, 0x01, b'a', 0x00, //
    // BYE, P, SC=1, length 2: one SSRC, then 4 bytes of padding
    0xa1, 203, 0x00, 0x02, 0x11, 0x22, 0x33, 0x44, 0x00, 0x00, 0x00, 0x04,
];

fn packets(bytes: &[u8]) -> Packets<'_> {
    Compound::new_checked(bytes).expect("valid").packets()
}

#[test]
fn parse_sr_sdes_bye() {
    let mut it = packets(&COMPOUND);
    let Some(RtcpPacket::SenderReport(sr)) = it.next() else {
        panic!("SR first");
    };
    assert_eq!(sr.ssrc(), 0x1122_3344);
    let info = SenderInfo {
        ntp_timestamp: 0x83aa_7e80_8000_0000,
        rtp_timestamp: 4096,
        packet_count: 100,
        octet_count: 16000,
    };
    assert_eq!(sr.sender_info(), info);
    let blocks: Vec<_> = sr.report_blocks().collect();
    let block = ReportBlock {
        ssrc: 0x5566_7788,
        fraction_lost: 64,
        cumulative_lost: -2,
        extended_highest_seq: 65541,
        jitter: 32,
        last_sr: 0x1234_5678,
        delay_since_last_sr: 0x1_8000,
    };
    assert_eq!(blocks, [block]);
    let Some(RtcpPacket::Sdes(sdes)) = it.next() else {
        panic!("SDES second");
    };
    assert_eq!(
        (sdes.count(), sdes.ssrc(), sdes.body().len()),
        (1, 0x1122_3344, 8)
    );
    let Some(RtcpPacket::Bye(bye)) = it.next() else {
        panic!("BYE third");
    };
    // The padding is gone from the body.
    assert_eq!(
        (bye.count(), bye.body(), bye.ssrc()),
        (1, &COMPOUND[68..72], 0x1122_3344)
    );
    assert!(bye.bye_sources().eq([0x1122_3344]));
    assert_eq!(it.next(), None);
}

#[test]
fn other_packet_types_are_skipped_over() {
    // RR with no blocks, then a PSFB (PLI: FMT 1, 12 bytes), then APP.
    let bytes = [
        0x80, 201, 0, 1, 0, 0, 0, 9, //
        0x81, 206, 0, 2, 0, 0, 0, 9, 0, 0, 0, 7, //
        0x80, 204, 0, 2, 0, 0, 0, 9, b'n', b'a', b'm', b'e',
    ];
    let kinds: Vec<_> = packets(&bytes)
        .map(|p| match p {
            RtcpPacket::ReceiverReport(rr) => (packet_type::RR, rr.report_blocks().count()),
            RtcpPacket::Other(raw) => (raw.packet_type(), usize::from(raw.count())),
            RtcpPacket::App(raw) => (raw.packet_type(), raw.body().len()),
            _ => (0, 0),
        })
        .collect();
    assert_eq!(kinds, [(201, 0), (206, 1), (204, 8)]);
}

#[test]
fn compound_errors() {
    let check = |b: &[u8]| Compound::new_checked(b).err();
    assert_eq!(check(&[]), Some(RtcpError::Truncated));
    // Cut inside the SR, inside the SDES header, and 2 stray bytes after.
    assert_eq!(check(&COMPOUND[..51]), Some(RtcpError::Truncated));
    assert_eq!(check(&COMPOUND[..54]), Some(RtcpError::Truncated));
    let mut long = [0u8; 78];
    long[..76].copy_from_slice(&COMPOUND);
    assert_eq!(check(&long), Some(RtcpError::PaddingNotLast));
    assert_eq!(check(&long[..54]), Some(RtcpError::Truncated));
    // The SR and SDES alone are fine; 2 stray bytes after them are not.
    assert!(check(&COMPOUND[..64]).is_none());
    long[..64].copy_from_slice(&COMPOUND[..64]);
    assert_eq!(check(&long[..66]), Some(RtcpError::Truncated));
    // Version 1 in the second packet.
    let mut v1 = COMPOUND;
    v1[52] = 0x41;
    assert_eq!(check(&v1), Some(RtcpError::BadVersion(1)));
    // SDES first.
    assert_eq!(
        check(&COMPOUND[52..64]),
        Some(RtcpError::NotReportFirst(202))
    );
    // Padding on the SR.
    let mut pad = COMPOUND;
    pad[0] |= 0x20;
    assert_eq!(check(&pad), Some(RtcpError::PaddingNotLast));
    // Padding counts of 0 and of 9 (> the BYE's 8-byte body).
    let mut bad = COMPOUND;
    bad[75] = 0;
    assert_eq!(check(&bad), Some(RtcpError::BadPadding));
    bad[75] = 9;
    assert_eq!(check(&bad), Some(RtcpError::BadPadding));
    // SR claiming 2 blocks in room for 1; RR claiming 1 block in 8 bytes;
    // BYE claiming 2 sources where padding leaves room for 1.
    let mut sr = COMPOUND;
    sr[0] = 0x82;
    assert_eq!(check(&sr), Some(RtcpError::CountOverrun(200)));
    assert_eq!(
        check(&[0x81, 201, 0, 1, 0, 0, 0, 1]),
        Some(RtcpError::CountOverrun(201))
    );
    let mut bye = COMPOUND;
    bye[64] = 0xa2;
    assert_eq!(check(&bye), Some(RtcpError::CountOverrun(203)));
}

#[test]
fn raw_readers_do_not_panic_on_short_bytes() {
    let raw = RawPacket::new(&[0x81]);
    assert_eq!(
        (raw.packet_type(), raw.count(), raw.body(), raw.ssrc()),
        (0, 1, &[][..], 0)
    );
    // A BYE whose count runs past its body: only the whole words.
    let short_bye = RawPacket::new(&[0x83, 203, 0, 2, 0, 0, 0, 9, 1, 2]);
    assert!(short_bye.bye_sources().eq([9]));
    assert_eq!(ReportBlock::parse(&[0xff; 5]).ssrc, u32::MAX);
    assert_eq!(ReportBlock::parse(&[0xff; 5]).cumulative_lost, 0);
}

#[test]
fn sender_report_round_trip() {
    let info = SenderInfo {
        ntp_timestamp: 0x83aa_7e80_8000_0000,
        rtp_timestamp: 4096,
        packet_count: 100,
        octet_count: 16000,
    };
    let block = ReportBlock::parse(&COMPOUND[28..52]);
    let mut buf = [0u8; 76];
    let n = write_sender_report(&mut buf, 0x1122_3344, &info, &[block]).expect("fits");
    assert_eq!(n, 52);
    let m = write_sdes_cname(&mut buf[n..], 0x1122_3344, b"a").expect("fits");
    assert_eq!(m, 12);
    assert_eq!(buf[..64], COMPOUND[..64]);
}

#[test]
fn writer_errors_and_sdes_sizes() {
    let mut buf = [0u8; 64];
    let blocks = [ReportBlock::default(); 32];
    assert_eq!(
        write_receiver_report(&mut buf, 1, &blocks),
        Err(WriteError::TooMany)
    );
    assert_eq!(
        write_receiver_report(&mut buf, 1, &blocks[..3]),
        Err(WriteError::BufferTooSmall { needed: 80 })
    );
    assert_eq!(
        write_sdes_cname(&mut buf, 1, &[b'x'; 256]),
        Err(WriteError::BadValue)
    );
    // CNAME of 2: items 4 bytes, then a whole word of zeros: 4 + 4 + 8 = 16.
    buf.fill(0xee);
    assert_eq!(write_sdes_cname(&mut buf, 7, b"ab"), Ok(16));
    assert_eq!(
        buf[..16],
        [0x81, 202, 0, 3, 0, 0, 0, 7, 1, 2, b'a', b'b', 0, 0, 0, 0]
    );
    // The cumulative loss is clamped to 24 bits when written.
    let wide = ReportBlock {
        cumulative_lost: -10_000_000,
        ..ReportBlock::default()
    };
    let mut out = [0u8; 24];
    wide.emit(&mut out);
    assert_eq!(out[4..8], [0, 0x80, 0, 0]);
    assert_eq!(ReportBlock::parse(&out).cumulative_lost, -0x80_0000);
}

#[test]
fn a_bye_ends_a_compound_and_reads_back() {
    let mut buf = [0u8; 64];
    let rr = write_receiver_report(&mut buf, 0x0a0b_0c0d, &[]).expect("fits");
    let bye = write_bye(&mut buf[rr..], &[0x0a0b_0c0d, 0x0102_0304]).expect("fits");
    assert_eq!(bye, 12);
    assert_eq!(
        buf[rr..rr + bye],
        [0x82, 203, 0, 2, 0x0a, 0x0b, 0x0c, 0x0d, 1, 2, 3, 4]
    );
    let compound = Compound::new_checked(&buf[..rr + bye]).expect("a valid compound");
    let packets: Vec<_> = compound.packets().collect();
    assert_eq!(packets.len(), 2);
    match &packets[1] {
        RtcpPacket::Bye(raw) => {
            assert_eq!(raw.count(), 2);
            assert!(raw.bye_sources().eq([0x0a0b_0c0d, 0x0102_0304]));
        }
        other => panic!("not a BYE: {other:?}"),
    }
    assert_eq!(
        write_bye(&mut buf[..8], &[1, 2]),
        Err(WriteError::BufferTooSmall { needed: 12 })
    );
}
