//! Compound RTCP packets (RFC 3550 section 6.4, checked per Appendix A.2):
//! sender and receiver reports read field by field; SDES, BYE, APP and
//! every other type (RTPFB, PSFB, XR, ...) recognised by their headers and
//! handed over raw, so a relay can skip or forward them (a BYE's sources
//! can be read: [`RawPacket::bye_sources`]).
//!
//! ```text
//! header:       |V=2|P|  count  |  packet type  |  length (words - 1)   |
//! SR:  header, SSRC, NTP (64), RTP timestamp, packets, octets, blocks...
//! RR:  header, SSRC, blocks...
//! BYE: header, SSRC/CSRC x count, optional reason (length, text)
//! block (24):   SSRC | fraction (8) cumulative lost (24) | ext. highest
//!               seq | jitter | LSR | DLSR
//! ```
//!
//! Invariants: [`Compound::new_checked`] accepts a datagram only if every
//! packet is version 2, the length fields add up to the datagram exactly,
//! only the last packet is padded (with a count of 1 to its body length),
//! the first packet is an SR or RR, and each SR/RR/BYE's count fits its
//! length. After that, iterating and reading never fails; the readers also
//! go through bounds-checked helpers, so they could not panic anyway.

use super::{be16, be32, VERSION};

/// RTCP packet types (RFC 3550, RFC 4585, RFC 3611).
pub mod packet_type {
    /// Sender report.
    pub const SR: u8 = 200;
    /// Receiver report.
    pub const RR: u8 = 201;
    /// Source description.
    pub const SDES: u8 = 202;
    /// Goodbye.
    pub const BYE: u8 = 203;
    /// Application-defined.
    pub const APP: u8 = 204;
    /// Transport-layer feedback (RFC 4585).
    pub const RTPFB: u8 = 205;
    /// Payload-specific feedback (RFC 4585).
    pub const PSFB: u8 = 206;
    /// Extended reports (RFC 3611).
    pub const XR: u8 = 207;
}

/// Length of an RTCP packet header.
pub const HEADER_LEN: usize = 4;
/// Length of the sender info in an SR (after the sender's SSRC).
pub const SENDER_INFO_LEN: usize = 20;
/// Length of one report block.
pub const REPORT_BLOCK_LEN: usize = 24;
/// Most report blocks (or SDES chunks, BYE sources) one packet holds.
pub const MAX_COUNT: usize = 31;

/// Why a datagram is not a valid compound RTCP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RtcpError {
    /// The datagram is empty, or a packet header or the bytes a length field
    /// announces run past its end.
    Truncated,
    /// A packet's version is not 2 (the value found).
    BadVersion(u8),
    /// The first packet is not an SR or RR (its packet type).
    NotReportFirst(u8),
    /// A packet other than the last has the P bit set.
    PaddingNotLast,
    /// The padding count is 0 or longer than the packet's body.
    BadPadding,
    /// An SR, RR or BYE is shorter than its count of blocks or sources
    /// requires (its packet type).
    CountOverrun(u8),
}

/// The sender info of an SR.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SenderInfo {
    /// NTP timestamp: seconds since 1900 in the high 32 bits, fraction in
    /// the low 32.
    pub ntp_timestamp: u64,
    /// The RTP timestamp of the same instant.
    pub rtp_timestamp: u32,
    /// Packets sent since the sender started.
    pub packet_count: u32,
    /// Payload octets sent since the sender started.
    pub octet_count: u32,
}

/// One reception report block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReportBlock {
    /// The source reported on.
    pub ssrc: u32,
    /// Fraction lost since the previous report, in 1/256.
    pub fraction_lost: u8,
    /// Cumulative packets lost, 24-bit signed (`-0x800000..=0x7fffff`).
    pub cumulative_lost: i32,
    /// Extended highest sequence number received.
    pub extended_highest_seq: u32,
    /// Interarrival jitter, in RTP timestamp units.
    pub jitter: u32,
    /// Middle 32 bits of the NTP timestamp of the last SR (0: none).
    pub last_sr: u32,
    /// Delay since that SR arrived, in 1/65536 s (0: no SR).
    pub delay_since_last_sr: u32,
}

impl ReportBlock {
    /// Reads a block from the first 24 bytes of `b` (zeros past its end).
    pub fn parse(b: &[u8]) -> ReportBlock {
        let lost_word = be32(b, 4);
        ReportBlock {
            ssrc: be32(b, 0),
            fraction_lost: (lost_word >> 24) as u8,
            // Shifting the 24 bits to the top and back sign-extends them.
            cumulative_lost: ((lost_word << 8) as i32) >> 8,
            extended_highest_seq: be32(b, 8),
            jitter: be32(b, 12),
            last_sr: be32(b, 16),
            delay_since_last_sr: be32(b, 20),
        }
    }

    /// Writes the block into the first 24 bytes of `out` (the caller checks
    /// the length; nothing is written past the end). The cumulative loss is
    /// clamped to 24 bits.
    pub fn emit(&self, out: &mut [u8]) {
        let lost = self.cumulative_lost.clamp(-0x80_0000, 0x7f_ffff) as u32 & 0x00ff_ffff;
        let words = [
            self.ssrc,
            u32::from(self.fraction_lost) << 24 | lost,
            self.extended_highest_seq,
            self.jitter,
            self.last_sr,
            self.delay_since_last_sr,
        ];
        for (i, w) in words.iter().enumerate() {
            super::put32(out, 4 * i, *w);
        }
    }
}

/// A packet of a compound, padding removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawPacket<'a> {
    bytes: &'a [u8],
}

impl<'a> RawPacket<'a> {
    /// Wraps one packet's bytes, header included and padding removed,
    /// unchecked (the readers return zeros past the end).
    pub const fn new(bytes: &'a [u8]) -> RawPacket<'a> {
        RawPacket { bytes }
    }

    /// The packet type.
    pub fn packet_type(&self) -> u8 {
        self.bytes.get(1).copied().unwrap_or(0)
    }

    /// The 5-bit count field (report blocks, SDES chunks, BYE sources; the
    /// subtype for APP and feedback packets).
    pub fn count(&self) -> u8 {
        self.bytes.first().map_or(0, |b| b & 0x1f)
    }

    /// The bytes after the 4-byte header, padding excluded.
    pub fn body(&self) -> &'a [u8] {
        self.bytes.get(HEADER_LEN..).unwrap_or(&[])
    }

    /// The first word of the body: the sender's SSRC for SR, RR, APP and
    /// feedback, the first source for SDES and BYE (0 if empty).
    pub fn ssrc(&self) -> u32 {
        be32(self.body(), 0)
    }

    /// The sources a BYE names: the first `count` words of the body (the
    /// optional reason after them is not read). Fewer if the body is
    /// shorter, which [`Compound::new_checked`] rules out.
    pub fn bye_sources(&self) -> impl Iterator<Item = u32> + 'a {
        self.body()
            .chunks_exact(4)
            .take(usize::from(self.count()))
            .map(|word| be32(word, 0))
    }

    /// The report blocks that follow `at` bytes of the body.
    fn blocks(&self, at: usize) -> ReportBlocks<'a> {
        ReportBlocks {
            bytes: self.body().get(at..).unwrap_or(&[]),
            remaining: self.count(),
        }
    }
}

/// A sender report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SenderReport<'a> {
    raw: RawPacket<'a>,
}

impl<'a> SenderReport<'a> {
    /// The sender's SSRC.
    pub fn ssrc(&self) -> u32 {
        self.raw.ssrc()
    }

    /// The sender info.
    pub fn sender_info(&self) -> SenderInfo {
        let b = self.raw.body();
        SenderInfo {
            ntp_timestamp: u64::from(be32(b, 4)) << 32 | u64::from(be32(b, 8)),
            rtp_timestamp: be32(b, 12),
            packet_count: be32(b, 16),
            octet_count: be32(b, 20),
        }
    }

    /// The report blocks (profile-specific extensions after them are
    /// ignored).
    pub fn report_blocks(&self) -> ReportBlocks<'a> {
        self.raw.blocks(4 + SENDER_INFO_LEN)
    }
}

/// A receiver report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceiverReport<'a> {
    raw: RawPacket<'a>,
}

impl<'a> ReceiverReport<'a> {
    /// The reporter's SSRC.
    pub fn ssrc(&self) -> u32 {
        self.raw.ssrc()
    }

    /// The report blocks.
    pub fn report_blocks(&self) -> ReportBlocks<'a> {
        self.raw.blocks(4)
    }
}

/// The report blocks of an SR or RR.
#[derive(Debug, Clone)]
pub struct ReportBlocks<'a> {
    bytes: &'a [u8],
    remaining: u8,
}

impl Iterator for ReportBlocks<'_> {
    type Item = ReportBlock;

    fn next(&mut self) -> Option<ReportBlock> {
        if self.remaining == 0 || self.bytes.len() < REPORT_BLOCK_LEN {
            return None;
        }
        self.remaining -= 1;
        let (block, rest) = self.bytes.split_at(REPORT_BLOCK_LEN);
        self.bytes = rest;
        Some(ReportBlock::parse(block))
    }
}

/// One packet of a compound RTCP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RtcpPacket<'a> {
    /// SR (200).
    SenderReport(SenderReport<'a>),
    /// RR (201).
    ReceiverReport(ReceiverReport<'a>),
    /// SDES (202), not parsed further.
    Sdes(RawPacket<'a>),
    /// BYE (203): its sources through [`RawPacket::bye_sources`].
    Bye(RawPacket<'a>),
    /// APP (204), not parsed further.
    App(RawPacket<'a>),
    /// Any other type (feedback, XR, ...).
    Other(RawPacket<'a>),
}

/// A checked compound RTCP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compound<'a> {
    bytes: &'a [u8],
}

impl<'a> Compound<'a> {
    /// Checks `datagram` per Appendix A.2 (see the module's invariants).
    pub fn new_checked(datagram: &'a [u8]) -> Result<Compound<'a>, RtcpError> {
        if datagram.is_empty() {
            return Err(RtcpError::Truncated);
        }
        let mut at = 0;
        while at < datagram.len() {
            let Some(header) = datagram.get(at..at + HEADER_LEN) else {
                return Err(RtcpError::Truncated);
            };
            let version = header[0] >> 6;
            if version != VERSION {
                return Err(RtcpError::BadVersion(version));
            }
            let pt = header[1];
            if at == 0 && pt != packet_type::SR && pt != packet_type::RR {
                return Err(RtcpError::NotReportFirst(pt));
            }
            let len = (usize::from(be16(header, 2)) + 1) * 4;
            let Some(packet) = datagram.get(at..at + len) else {
                return Err(RtcpError::Truncated);
            };
            let end = at + len;
            let mut body_len = len - HEADER_LEN;
            if header[0] & 0x20 != 0 {
                if end != datagram.len() {
                    return Err(RtcpError::PaddingNotLast);
                }
                let pad = usize::from(packet[len - 1]);
                if pad == 0 || pad > body_len {
                    return Err(RtcpError::BadPadding);
                }
                body_len -= pad;
            }
            let count = usize::from(header[0] & 0x1f);
            let needed = match pt {
                packet_type::SR => 4 + SENDER_INFO_LEN + count * REPORT_BLOCK_LEN,
                packet_type::RR => 4 + count * REPORT_BLOCK_LEN,
                packet_type::BYE => 4 * count,
                _ => 0,
            };
            if needed > body_len {
                return Err(RtcpError::CountOverrun(pt));
            }
            at = end;
        }
        Ok(Compound { bytes: datagram })
    }

    /// The packets, in order.
    pub fn packets(&self) -> Packets<'a> {
        Packets { rest: self.bytes }
    }

    /// The whole datagram.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }
}

/// The packets of a [`Compound`].
#[derive(Debug, Clone)]
pub struct Packets<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Packets<'a> {
    type Item = RtcpPacket<'a>;

    fn next(&mut self) -> Option<RtcpPacket<'a>> {
        let first = *self.rest.first()?;
        let len = (usize::from(be16(self.rest, 2)) + 1) * 4;
        let len = len.min(self.rest.len());
        let (packet, rest) = self.rest.split_at(len);
        self.rest = rest;
        let pad = if first & 0x20 != 0 {
            packet.last().map_or(0, |&n| usize::from(n))
        } else {
            0
        };
        let unpadded = packet.len().saturating_sub(pad).max(HEADER_LEN.min(len));
        let raw = RawPacket {
            bytes: &packet[..unpadded],
        };
        Some(match raw.packet_type() {
            packet_type::SR => RtcpPacket::SenderReport(SenderReport { raw }),
            packet_type::RR => RtcpPacket::ReceiverReport(ReceiverReport { raw }),
            packet_type::SDES => RtcpPacket::Sdes(raw),
            packet_type::BYE => RtcpPacket::Bye(raw),
            packet_type::APP => RtcpPacket::App(raw),
            _ => RtcpPacket::Other(raw),
        })
    }
}
