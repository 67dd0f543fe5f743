//! The RTP header view and writer: every field, the Appendix A.1 rejects,
//! and no panic on short buffers.

use crate::rtp::header::*;
use crate::rtp::{classify, Kind, WriteError};

// V=2, M=1 PT=0, seq 0x1234, ts 0xdeadbeef, ssrc 0x01020304,
// one CSRC 0xaabbccdd, extension 0xbede with one word, payload "hi!!??",
// then 2 bytes of padding (count 2).
const FULL: [u8; 32] = [
    0xb1, 0x80, 0x12, 0x34, 0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04, //
    0xaa, 0xbb, 0xcc, 0xdd, //
    0xbe, 0xde, 0x00, 0x01, 0x10, 0x20, 0x30, 0x40, //
    b'h', b'i', b'!', b'!', b'?', b'?', 0x00, 0x02,
];

#[test]
fn parse_every_field() {
    let p = RtpPacket::new_checked(&FULL[..]).expect("valid");
    assert_eq!(p.version(), 2);
    assert!(p.has_padding() && p.has_extension() && p.marker());
    assert_eq!((p.csrc_count(), p.payload_type()), (1, 0));
    assert_eq!(
        (p.seq(), p.timestamp(), p.ssrc()),
        (0x1234, 0xdead_beef, 0x0102_0304)
    );
    assert_eq!(p.csrcs().collect::<Vec<_>>(), vec![0xaabb_ccdd]);
    assert_eq!(p.csrc(1), None);
    let ext = p.extension().expect("extension");
    assert_eq!(
        (ext.profile, ext.data),
        (0xbede, &[0x10, 0x20, 0x30, 0x40][..])
    );
    assert_eq!(p.header_len(), 24);
    assert_eq!(p.padding_len(), 2);
    assert_eq!(p.payload(), b"hi!!??");
}

#[test]
fn the_summary_reads_what_the_view_reads() {
    let mut pad_only = FULL;
    pad_only[31] = 8;
    let mut plain = FULL;
    plain[0] = 0x80;
    for b in [&FULL[..], &pad_only[..], &plain[..], &plain[..12]] {
        let p = RtpPacket::new_checked(b).expect("valid");
        let summary = RtpSummary {
            payload_type: p.payload_type(),
            seq: p.seq(),
            timestamp: p.timestamp(),
            ssrc: p.ssrc(),
            payload_len: p.payload().len(),
        };
        assert_eq!(RtpSummary::parse(b), Ok(summary));
        assert_eq!(p.summary(), summary, "the view's summary");
    }
}

#[test]
fn the_plain_summary_is_the_summary_of_plain_headers_only() {
    // Every first and second byte, at the fixed header's length and past
    // it: `parse_plain` answers exactly for version 2 without padding,
    // extension or CSRCs and a payload type RTCP does not use, and then
    // as `parse` does.
    let mut b = FULL;
    for len in [11, 12, 20] {
        for first in 0..=255u8 {
            for second in 0..=255u8 {
                b[0] = first;
                b[1] = second;
                let plain = first == 0x80 && classify(&b[..len]) == Kind::Rtp;
                match RtpSummary::parse_plain(&b[..len]) {
                    Some(summary) => {
                        assert!(plain, "{first:#x} {second:#x} {len}");
                        assert_eq!(RtpSummary::parse(&b[..len]), Ok(summary));
                    }
                    None => assert!(!plain, "{first:#x} {second:#x} {len}"),
                }
            }
        }
    }
}

#[test]
fn writer_round_trip() {
    let header = RtpHeader {
        marker: true,
        payload_type: 0,
        seq: 0x1234,
        timestamp: 0xdead_beef,
        ssrc: 0x0102_0304,
        csrcs: &[0xaabb_ccdd],
        extension: Some(Extension {
            profile: 0xbede,
            data: &[0x10, 0x20, 0x30, 0x40],
        }),
    };
    let mut buf = [0u8; 32];
    assert_eq!(header.emit(&mut buf), Ok(24));
    buf[24..].copy_from_slice(&FULL[24..]);
    buf[0] |= 0x20; // padding is the sender's to add
    assert_eq!(buf, FULL);
    assert_eq!(
        header.emit(&mut buf[..23]),
        Err(WriteError::BufferTooSmall { needed: 24 })
    );
    let bad_pt = RtpHeader {
        payload_type: 128,
        ..header
    };
    assert_eq!(bad_pt.emit(&mut buf), Err(WriteError::BadValue));
    let odd_ext = RtpHeader {
        extension: Some(Extension {
            profile: 1,
            data: &[1, 2, 3],
        }),
        ..header
    };
    assert_eq!(odd_ext.emit(&mut buf), Err(WriteError::BadValue));
    let many = RtpHeader {
        csrcs: &[0; 16],
        ..header
    };
    assert_eq!(many.emit(&mut [0u8; 128]), Err(WriteError::TooMany));
}

#[test]
fn setters_rewrite_fields() {
    let mut buf = FULL;
    let mut p = RtpPacket::new_checked(&mut buf[..]).expect("valid");
    p.set_seq(7);
    p.set_timestamp(8);
    p.set_ssrc(9);
    p.set_payload_type(96);
    p.set_marker(false);
    assert_eq!((p.seq(), p.timestamp(), p.ssrc()), (7, 8, 9));
    assert_eq!((p.marker(), p.payload_type()), (false, 96));
    assert_eq!(p.payload(), b"hi!!??");
}

#[test]
fn rejects() {
    let check = |b: &[u8]| RtpPacket::new_checked(b).err();
    assert_eq!(check(&FULL[..11]), Some(RtpError::Truncated));
    let mut v1 = FULL;
    v1[0] = 0x40 | (v1[0] & 0x3f);
    assert_eq!(check(&v1), Some(RtpError::BadVersion(1)));
    // Padding count 7 > the 6 + 2 = 8 bytes after the header? No: 8 is
    // allowed (padding only); 9 is not; 0 is never valid.
    let mut pad = FULL;
    pad[31] = 8;
    assert_eq!(
        RtpPacket::new_checked(&pad[..]).map(|p| p.payload().len()),
        Ok(0)
    );
    pad[31] = 9;
    assert_eq!(check(&pad), Some(RtpError::BadPadding));
    pad[31] = 0;
    assert_eq!(check(&pad), Some(RtpError::BadPadding));
    // CC = 15 needs 72 bytes of header.
    let mut cc = FULL;
    cc[0] = (cc[0] & 0xf0) | 0x0f;
    assert_eq!(check(&cc), Some(RtpError::CsrcOverrun));
    // Extension of 3 words needs 16 + 4 + 12 = 32 bytes: fits exactly
    // (then the padding count is read from inside it); 4 words do not.
    let mut ext = FULL;
    ext[0] &= !0x20;
    ext[19] = 3;
    assert!(check(&ext).is_none());
    ext[19] = 4;
    assert_eq!(check(&ext), Some(RtpError::ExtensionOverrun));
    assert_eq!(check(&ext[..17]), Some(RtpError::ExtensionOverrun));
    // RTCP on the RTP path: SR (200), RR (201), APP (204), RTPFB (205),
    // and PT 72/73 without a marker.
    for second in [200u8, 201, 204, 205, 223, 72, 73, 76] {
        let mut rtcp = FULL;
        rtcp[1] = second;
        assert_eq!(check(&rtcp), Some(RtpError::RtcpPacketType(second)));
    }
    // The neighbours are RTP: PT 71 and 77 with or without marker, 96.
    for second in [71u8, 77, 0x80 | 96, 96, 191, 224] {
        let mut rtp = FULL;
        rtp[1] = second;
        assert!(check(&rtp).is_none(), "{second}");
    }
}

#[test]
fn unchecked_accessors_do_not_panic() {
    for len in 0..FULL.len() {
        let p = RtpPacket::new_unchecked(&FULL[..len]);
        let _ = (
            p.seq(),
            p.ssrc(),
            p.csrcs().count(),
            p.extension(),
            p.payload(),
        );
    }
    let mut short = [0xbfu8, 0x80];
    let mut p = RtpPacket::new_unchecked(&mut short[..]);
    p.set_ssrc(1);
    assert_eq!(p.payload(), b"");
}

#[test]
fn rtcp_like_second_bytes_are_exactly_rfc_5761s_and_a_1s() {
    for second in 0..=u8::MAX {
        let expected = (192..=223).contains(&second) || (72..=76).contains(&(second & 0x7f));
        assert_eq!(
            crate::rtp::header::looks_like_rtcp(second),
            expected,
            "{second}"
        );
    }
}
