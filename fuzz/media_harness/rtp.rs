//! RTP and RTCP (media/src/rtp) and the relay's session file parser
//! (media/src/relay/spec.rs).
//!
//! RTP: the one-pass `RtpSummary::parse` and the `RtpPacket` view agree on
//! every input, and an accepted header emits back to the same bytes.
//! RTCP: an accepted compound splits into packets that cover it exactly,
//! each report's blocks are the ones its count announces, and reports
//! written again by `rtcp_write` read back the same. Session files: an
//! accepted file, printed back in the file format, parses to the same
//! sessions, and its ports assign without clashes.

use super::input::Input;
use dpstack_media::relay::spec::{self, LocalPort, SessionSpec};
use dpstack_media::rtp::{
    write_bye, write_receiver_report, write_sender_report, Compound, Extension, ReportBlock,
    RtcpPacket, RtpHeader, RtpPacket, RtpSummary,
};
use std::collections::HashSet;
use std::fmt::Write;

/// RTP headers: the summary and the view agree; the header round-trips.
pub fn rtp(data: &[u8]) {
    let summary = RtpSummary::parse(data);
    let packet = RtpPacket::new_checked(data);
    assert_eq!(summary.err(), packet.as_ref().err().copied());
    let (Ok(summary), Ok(packet)) = (summary, packet) else {
        return;
    };
    assert_eq!(packet.version(), 2);
    assert_eq!(
        (
            summary.payload_type,
            summary.seq,
            summary.timestamp,
            summary.ssrc
        ),
        (
            packet.payload_type(),
            packet.seq(),
            packet.timestamp(),
            packet.ssrc()
        )
    );
    assert_eq!(summary.payload_len, packet.payload().len());
    assert_eq!(packet.summary(), summary);
    assert!(packet.header_len() + packet.padding_len() + packet.payload().len() == data.len());
    let csrcs: Vec<u32> = packet.csrcs().collect();
    assert_eq!(csrcs.len(), usize::from(packet.csrc_count()));
    let extension: Option<Extension<'_>> = packet.extension();
    assert_eq!(extension.is_some(), packet.has_extension());
    let header = RtpHeader {
        marker: packet.marker(),
        payload_type: packet.payload_type(),
        seq: packet.seq(),
        timestamp: packet.timestamp(),
        ssrc: packet.ssrc(),
        csrcs: &csrcs,
        extension,
    };
    let mut out = vec![0u8; header.len()];
    assert_eq!(header.emit(&mut out), Ok(packet.header_len()));
    // The first byte differs only in the padding bit (emit writes none).
    assert_eq!(out[0], data[0] & !0x20);
    assert_eq!(
        &out[1..],
        &data[1..packet.header_len()],
        "RTP header round trip"
    );
}

/// RTCP compounds: packets cover the datagram; reports read back the same
/// after writing them again.
pub fn rtcp(data: &[u8]) {
    let _ = dpstack_media::rtp::classify(data);
    let Ok(compound) = Compound::new_checked(data) else {
        return;
    };
    assert_eq!(compound.as_bytes(), data);
    let mut buf = vec![0u8; 2048];
    let mut covered = 0;
    for (i, packet) in compound.packets().enumerate() {
        assert!(i < data.len() / 4, "more packets than words");
        match packet {
            RtcpPacket::SenderReport(sr) => {
                let blocks: Vec<ReportBlock> = sr.report_blocks().collect();
                assert_eq!(blocks.len(), usize::from(data[covered] & 0x1f));
                let info = sr.sender_info();
                let len = write_sender_report(&mut buf, sr.ssrc(), &info, &blocks).unwrap();
                let again = Compound::new_checked(&buf[..len]).expect("written SR parses");
                let Some(RtcpPacket::SenderReport(back)) = again.packets().next() else {
                    panic!("written SR reads back as another packet");
                };
                assert_eq!((back.ssrc(), back.sender_info()), (sr.ssrc(), info));
                assert!(back.report_blocks().eq(blocks.iter().copied()));
            }
            RtcpPacket::ReceiverReport(rr) => {
                let blocks: Vec<ReportBlock> = rr.report_blocks().collect();
                assert_eq!(blocks.len(), usize::from(data[covered] & 0x1f));
                let len = write_receiver_report(&mut buf, rr.ssrc(), &blocks).unwrap();
                let again = Compound::new_checked(&buf[..len]).expect("written RR parses");
                let Some(RtcpPacket::ReceiverReport(back)) = again.packets().next() else {
                    panic!("written RR reads back as another packet");
                };
                assert_eq!(back.ssrc(), rr.ssrc());
                assert!(back.report_blocks().eq(blocks.iter().copied()));
            }
            RtcpPacket::Bye(raw) => {
                let sources: Vec<u32> = raw.bye_sources().collect();
                assert_eq!(sources.len(), usize::from(raw.count()));
                write_bye(&mut buf, &sources).unwrap();
            }
            RtcpPacket::Sdes(raw) | RtcpPacket::App(raw) | RtcpPacket::Other(raw) => {
                let _ = (raw.packet_type(), raw.count(), raw.body(), raw.ssrc());
            }
        }
        covered +=
            (usize::from(u16::from_be_bytes([data[covered + 2], data[covered + 3]])) + 1) * 4;
    }
    assert_eq!(covered, data.len(), "the packets do not cover the compound");
}

/// Prints sessions back in the file format.
fn print(sessions: &[SessionSpec]) -> String {
    let mut text = String::new();
    for s in sessions {
        let port = |p: LocalPort| match p {
            LocalPort::Fixed(p) => p.to_string(),
            LocalPort::Auto => "auto".to_owned(),
        };
        let _ = write!(
            text,
            "session {} {} {}",
            s.name,
            port(s.legs[0].port),
            port(s.legs[1].port)
        );
        for (leg, side) in s.legs.iter().zip(["a", "b"]) {
            if let Some(peer) = leg.peer {
                let _ = write!(text, " {side}-peer={peer}");
            }
        }
        if s.mux {
            text.push_str(" mux");
        }
        for (leg, side) in s.legs.iter().zip(["a", "b"]) {
            if leg.ipv6 {
                let _ = write!(text, " {side}-ip6");
            }
        }
        text.push('\n');
    }
    text
}

/// Session files: print -> parse is the identity on accepted files; the
/// assigned ports are even, distinct, and keep every fixed port.
pub fn relay_spec(data: &[u8]) {
    let mut input = Input::new(data);
    let range_start = input.u16() & !1;
    let range_len = input.u8();
    let text = String::from_utf8_lossy(input.bytes(usize::MAX));
    let sessions = match spec::parse(&text) {
        Ok(sessions) => sessions,
        Err(error) => {
            let _ = error.to_string();
            return;
        }
    };
    for s in &sessions {
        for leg in &s.legs {
            if let LocalPort::Fixed(p) = leg.port {
                assert!(p != 0 && p % 2 == 0);
            }
            if let Some(peer) = leg.peer {
                assert!(spec::check_peer(peer, s.mux).is_ok());
                assert!(leg.ipv6 || peer.is_ipv4());
            }
        }
    }
    let printed = print(&sessions);
    assert_eq!(
        spec::parse(&printed).as_ref(),
        Ok(&sessions),
        "printed:\n{printed}"
    );
    let range = range_start..=range_start.saturating_add(u16::from(range_len));
    let Ok(assigned) = spec::assign_ports(&sessions, range) else {
        return;
    };
    assert_eq!(assigned.len(), sessions.len());
    let mut seen = HashSet::new();
    for (ports, s) in assigned.iter().zip(&sessions) {
        for (port, leg) in ports.iter().zip(&s.legs) {
            assert!(*port % 2 == 0, "odd RTP port {port}");
            assert!(seen.insert(*port), "port {port} assigned twice");
            if let LocalPort::Fixed(fixed) = leg.port {
                assert_eq!(*port, fixed);
            }
        }
    }
}
