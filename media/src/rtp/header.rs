//! The RTP fixed header (RFC 3550 section 5.1) as a zero-copy view checked
//! per Appendix A.1, [`RtpSummary`], the same checks and the fields a relay
//! reads in one pass, and [`RtpHeader`], a writer for building headers.
//!
//! ```text
//!  0                   1                   2                   3
//! |V=2|P|X|  CC   |M|     PT      |       sequence number         |
//! |                           timestamp                           |
//! |           synchronization source (SSRC) identifier            |
//! |            contributing source (CSRC) identifiers (0..15)     |
//! |  [extension: profile (16) | length in words (16) | words...]  |
//! |  payload ...                    [padding ... | padding count] |
//! ```
//!
//! Invariants: [`RtpPacket::check`] (that is, [`RtpSummary::parse`])
//! accepts a buffer only if the version is 2, the CSRC list and the
//! extension fit, the padding count is at least 1 and no longer than what
//! follows the header, and the second byte is not an RTCP packet type.
//! Every accessor reads through bounds-checked helpers, so none panics
//! even on an unchecked buffer (it returns zeros or an empty slice
//! instead).

use super::{be16, be32, put16, put32, WriteError, VERSION};

/// Length of the fixed header, without CSRCs or extension.
pub const FIXED_HEADER_LEN: usize = 12;

/// Most CSRCs a header can carry (the 4-bit CC field).
pub const MAX_CSRCS: usize = 15;

/// Why a datagram is not a valid RTP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RtpError {
    /// Shorter than the 12-byte fixed header.
    Truncated,
    /// The version field is not 2 (the value found).
    BadVersion(u8),
    /// The CSRC list (4 bytes per CC) runs past the end.
    CsrcOverrun,
    /// The extension header, or the words its length announces, run past
    /// the end.
    ExtensionOverrun,
    /// The P bit is set but the padding count is 0 or longer than what
    /// follows the header.
    BadPadding,
    /// The second byte is an RTCP packet type (192-223, RFC 5761) or the
    /// payload type is 72-76 (SR, RR, SDES, BYE, APP with the top bit read
    /// as a marker, Appendix A.1): this is RTCP, not RTP.
    RtcpPacketType(u8),
}

/// True if `second_byte` (marker and payload type) could be RTCP: either an
/// RTCP packet type in the range RFC 5761 reserves (192-223), or a payload
/// type of 72-76, which Appendix A.1 rejects because SR..APP (200-204) read
/// as marker plus payload type give 72-76.
///
/// Per packet, so one range test first: both sets have a payload type of
/// 64-95 (192-223 is a marker and 64-95; 72-76 lies inside), and most
/// packets' payload types (0-34, 96-127) leave there.
#[inline]
pub(crate) fn looks_like_rtcp(second_byte: u8) -> bool {
    let above_64 = (second_byte & 0x7f).wrapping_sub(64);
    above_64 < 32 && (second_byte & 0x80 != 0 || (8..=12).contains(&above_64))
}

/// A header extension: the profile-defined 16 bits and the data words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extension<'a> {
    /// The "defined by profile" field (0xBEDE for RFC 8285 one-byte headers).
    pub profile: u16,
    /// The extension data, a whole number of 32-bit words.
    pub data: &'a [u8],
}

/// What a relay reads of each RTP packet, taken in one pass over a
/// checked header ([`RtpSummary::parse`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtpSummary {
    /// The 7-bit payload type.
    pub payload_type: u8,
    /// The 16-bit sequence number.
    pub seq: u16,
    /// The timestamp.
    pub timestamp: u32,
    /// The synchronization source.
    pub ssrc: u32,
    /// Bytes of payload: after the header, before the padding (what
    /// [`RtpPacket::payload`] returns).
    pub payload_len: usize,
}

impl RtpSummary {
    /// [`RtpSummary::parse`] for the common header, judged by its first
    /// byte alone: version 2 with no padding, no extension and no CSRC, and
    /// a payload type that is not RTCP's (so [`classify`](super::classify)
    /// says RTP). `None` for every other datagram, which `parse` (after
    /// `classify`) then judges. Where it returns a summary, `parse` returns
    /// the same one. Per packet.
    #[inline]
    pub fn parse_plain(b: &[u8]) -> Option<RtpSummary> {
        let fixed = b.first_chunk::<FIXED_HEADER_LEN>()?;
        let [first, second, ..] = *fixed;
        if first != VERSION << 6 || looks_like_rtcp(second) {
            return None;
        }
        let word = |at: usize| {
            u32::from_be_bytes([fixed[at], fixed[at + 1], fixed[at + 2], fixed[at + 3]])
        };
        Some(RtpSummary {
            payload_type: second & 0x7f,
            seq: u16::from_be_bytes([fixed[2], fixed[3]]),
            timestamp: word(4),
            ssrc: word(8),
            payload_len: b.len() - FIXED_HEADER_LEN,
        })
    }

    /// [`RtpPacket::check`]'s checks on `b` (the same errors, in the same
    /// order), and the fields a relay needs if they pass. Per packet.
    #[inline]
    pub fn parse(b: &[u8]) -> Result<RtpSummary, RtpError> {
        let Some(fixed) = b.first_chunk::<FIXED_HEADER_LEN>() else {
            return Err(RtpError::Truncated);
        };
        let [first, second, ..] = *fixed;
        let version = first >> 6;
        if version != VERSION {
            return Err(RtpError::BadVersion(version));
        }
        if looks_like_rtcp(second) {
            return Err(RtpError::RtcpPacketType(second));
        }
        let csrc_end = FIXED_HEADER_LEN + 4 * usize::from(first & 0x0f);
        if csrc_end > b.len() {
            return Err(RtpError::CsrcOverrun);
        }
        let header_len = if first & 0x10 != 0 {
            if csrc_end + 4 > b.len() {
                return Err(RtpError::ExtensionOverrun);
            }
            let end = csrc_end + 4 + 4 * usize::from(be16(b, csrc_end + 2));
            if end > b.len() {
                return Err(RtpError::ExtensionOverrun);
            }
            end
        } else {
            csrc_end
        };
        // header_len <= b.len() from here on. The padding, if any, comes
        // off in its own branch: no zero kept for the common case.
        let mut payload_len = b.len() - header_len;
        if first & 0x20 != 0 {
            let count = b.last().map_or(0, |&n| usize::from(n));
            if count == 0 || count > payload_len {
                return Err(RtpError::BadPadding);
            }
            payload_len -= count;
        }
        let word = |at: usize| {
            u32::from_be_bytes([fixed[at], fixed[at + 1], fixed[at + 2], fixed[at + 3]])
        };
        Ok(RtpSummary {
            payload_type: second & 0x7f,
            seq: u16::from_be_bytes([fixed[2], fixed[3]]),
            timestamp: word(4),
            ssrc: word(8),
            payload_len,
        })
    }
}

/// A view of an RTP packet.
#[derive(Debug, Clone)]
pub struct RtpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> RtpPacket<T> {
    /// Wraps `buffer` without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        RtpPacket { buffer }
    }

    /// Wraps `buffer` after [`Self::check`].
    pub fn new_checked(buffer: T) -> Result<Self, RtpError> {
        let packet = Self::new_unchecked(buffer);
        packet.check()?;
        Ok(packet)
    }

    /// Appendix A.1's header checks (the payload type being one the session
    /// expects is left to the caller).
    pub fn check(&self) -> Result<(), RtpError> {
        RtpSummary::parse(self.buffer.as_ref()).map(|_| ())
    }

    /// The buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn byte(&self, at: usize) -> u8 {
        self.buffer.as_ref().get(at).copied().unwrap_or(0)
    }

    /// The version field (2 for valid packets).
    pub fn version(&self) -> u8 {
        self.byte(0) >> 6
    }

    /// The P bit: the payload ends in padding.
    pub fn has_padding(&self) -> bool {
        self.byte(0) & 0x20 != 0
    }

    /// The X bit: an extension follows the CSRC list.
    pub fn has_extension(&self) -> bool {
        self.byte(0) & 0x10 != 0
    }

    /// The CC field: how many CSRCs follow the fixed header.
    pub fn csrc_count(&self) -> u8 {
        self.byte(0) & 0x0f
    }

    /// The marker bit.
    pub fn marker(&self) -> bool {
        self.byte(1) & 0x80 != 0
    }

    /// The 7-bit payload type.
    pub fn payload_type(&self) -> u8 {
        self.byte(1) & 0x7f
    }

    /// The 16-bit sequence number.
    pub fn seq(&self) -> u16 {
        be16(self.buffer.as_ref(), 2)
    }

    /// The timestamp, in the payload format's clock.
    pub fn timestamp(&self) -> u32 {
        be32(self.buffer.as_ref(), 4)
    }

    /// The synchronization source.
    pub fn ssrc(&self) -> u32 {
        be32(self.buffer.as_ref(), 8)
    }

    /// The fields a relay records of this packet: what
    /// [`RtpSummary::parse`] returns for the same (checked) bytes.
    pub fn summary(&self) -> RtpSummary {
        RtpSummary {
            payload_type: self.payload_type(),
            seq: self.seq(),
            timestamp: self.timestamp(),
            ssrc: self.ssrc(),
            payload_len: self.payload().len(),
        }
    }

    /// The `index`th CSRC, if the CC field lists that many and they fit.
    pub fn csrc(&self, index: usize) -> Option<u32> {
        if index >= usize::from(self.csrc_count()) {
            return None;
        }
        let at = FIXED_HEADER_LEN + 4 * index;
        self.buffer
            .as_ref()
            .get(at..at + 4)
            .map(|_| be32(self.buffer.as_ref(), at))
    }

    /// The CSRC list, in order.
    pub fn csrcs(&self) -> impl Iterator<Item = u32> + '_ {
        (0..usize::from(self.csrc_count())).filter_map(|i| self.csrc(i))
    }

    fn extension_at(&self) -> usize {
        FIXED_HEADER_LEN + 4 * usize::from(self.csrc_count())
    }

    /// The header extension, if the X bit is set and it fits.
    pub fn extension(&self) -> Option<Extension<'_>> {
        if !self.has_extension() {
            return None;
        }
        let b = self.buffer.as_ref();
        let at = self.extension_at();
        let words = usize::from(be16(b, at + 2));
        let data = b.get(at + 4..at + 4 + 4 * words)?;
        Some(Extension {
            profile: be16(b, at),
            data,
        })
    }

    /// Length of the header: fixed part, CSRCs and extension (not clamped to
    /// the buffer; [`Self::check`] makes sure it fits).
    pub fn header_len(&self) -> usize {
        let at = self.extension_at();
        if self.has_extension() {
            at + 4 + 4 * usize::from(be16(self.buffer.as_ref(), at + 2))
        } else {
            at
        }
    }

    /// Bytes of padding at the end (0 without the P bit).
    pub fn padding_len(&self) -> usize {
        if self.has_padding() {
            let b = self.buffer.as_ref();
            b.last().map_or(0, |&n| usize::from(n))
        } else {
            0
        }
    }

    /// The payload: after the header, before the padding.
    pub fn payload(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        let end = b.len().saturating_sub(self.padding_len());
        b.get(self.header_len()..end).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> RtpPacket<T> {
    fn set_byte1(&mut self, value: u8) {
        if let Some(b) = self.buffer.as_mut().get_mut(1) {
            *b = value;
        }
    }

    /// Sets the marker bit.
    pub fn set_marker(&mut self, marker: bool) {
        let pt = self.payload_type();
        self.set_byte1(u8::from(marker) << 7 | pt);
    }

    /// Sets the payload type (its low 7 bits).
    pub fn set_payload_type(&mut self, payload_type: u8) {
        let m = u8::from(self.marker()) << 7;
        self.set_byte1(m | (payload_type & 0x7f));
    }

    /// Sets the sequence number.
    pub fn set_seq(&mut self, seq: u16) {
        put16(self.buffer.as_mut(), 2, seq);
    }

    /// Sets the timestamp.
    pub fn set_timestamp(&mut self, timestamp: u32) {
        put32(self.buffer.as_mut(), 4, timestamp);
    }

    /// Sets the SSRC.
    pub fn set_ssrc(&mut self, ssrc: u32) {
        put32(self.buffer.as_mut(), 8, ssrc);
    }
}

/// The fields of an RTP header to write (without padding: a sender that pads
/// sets the P bit and appends the padding itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RtpHeader<'a> {
    /// The marker bit.
    pub marker: bool,
    /// The payload type, 0-127.
    pub payload_type: u8,
    /// The sequence number.
    pub seq: u16,
    /// The timestamp.
    pub timestamp: u32,
    /// The synchronization source.
    pub ssrc: u32,
    /// Contributing sources, at most 15.
    pub csrcs: &'a [u32],
    /// A header extension (its data a whole number of words, at most 65535).
    pub extension: Option<Extension<'a>>,
}

impl RtpHeader<'_> {
    /// Length of the header this writes.
    pub fn len(&self) -> usize {
        FIXED_HEADER_LEN + 4 * self.csrcs.len() + self.extension.map_or(0, |e| 4 + e.data.len())
    }

    /// Always false: a header is at least 12 bytes.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Writes the header at the start of `buf`; returns its length (the
    /// payload goes right after).
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WriteError> {
        if self.csrcs.len() > MAX_CSRCS {
            return Err(WriteError::TooMany);
        }
        if self.payload_type > 0x7f {
            return Err(WriteError::BadValue);
        }
        let words = match self.extension {
            Some(e) if e.data.len() % 4 != 0 => return Err(WriteError::BadValue),
            Some(e) => Some(u16::try_from(e.data.len() / 4).map_err(|_| WriteError::BadValue)?),
            None => None,
        };
        let needed = self.len();
        let Some(out) = buf.get_mut(..needed) else {
            return Err(WriteError::BufferTooSmall { needed });
        };
        // csrcs.len() <= 15 was checked above, so the cast keeps every bit.
        out[0] = VERSION << 6 | u8::from(words.is_some()) << 4 | self.csrcs.len() as u8;
        out[1] = u8::from(self.marker) << 7 | self.payload_type;
        put16(out, 2, self.seq);
        put32(out, 4, self.timestamp);
        put32(out, 8, self.ssrc);
        let mut at = FIXED_HEADER_LEN;
        for &csrc in self.csrcs {
            put32(out, at, csrc);
            at += 4;
        }
        if let (Some(e), Some(words)) = (self.extension, words) {
            put16(out, at, e.profile);
            put16(out, at + 2, words);
            out[at + 4..at + 4 + e.data.len()].copy_from_slice(e.data);
        }
        Ok(needed)
    }
}
