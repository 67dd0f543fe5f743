//! TCP headers and options (RFC 9293 3.1, RFC 7323, RFC 2018).
//!
//! [`TcpPacket`] is the zero-copy view; [`TcpRepr`] is the parsed header
//! with the options dpstack uses (MSS, window scale, SACK permitted, SACK
//! blocks, timestamps), emitted back in the canonical order Linux uses. Option
//! parsing is bounded by the data offset and never reads past it; unknown
//! options are skipped by their length, malformed ones make the segment
//! `Malformed`.

use super::checksum;
use super::{read_u16, write_u16, WireError, WireResult};

mod field {
    pub const SRC_PORT: usize = 0;
    pub const DST_PORT: usize = 2;
    pub const SEQ: usize = 4;
    pub const ACK: usize = 8;
    pub const OFFSET: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WINDOW: usize = 14;
    pub const CHECKSUM: usize = 16;
    pub const URGENT: usize = 18;
}

/// Length of the header without options.
pub const HEADER_LEN: usize = 20;

/// Most option bytes a header carries (data offset 15).
pub const MAX_OPTIONS_LEN: usize = 40;

/// TCP flag bits (the low byte of the flags field).
pub mod flags {
    /// No more data from sender.
    pub const FIN: u8 = 0x01;
    /// Synchronize sequence numbers.
    pub const SYN: u8 = 0x02;
    /// Reset the connection.
    pub const RST: u8 = 0x04;
    /// Push function.
    pub const PSH: u8 = 0x08;
    /// Acknowledgment field is significant.
    pub const ACK: u8 = 0x10;
    /// Urgent pointer field is significant.
    pub const URG: u8 = 0x20;
    /// ECN-Echo (RFC 3168): in a SYN, with [`CWR`], ECN is asked for; in a
    /// SYN-ACK without it, agreed to; otherwise, congestion was
    /// experienced.
    pub const ECE: u8 = 0x40;
    /// Congestion Window Reduced (RFC 3168): the sender reduced its
    /// window on an ECE.
    pub const CWR: u8 = 0x80;
}

mod kind {
    pub const END: u8 = 0;
    pub const NOP: u8 = 1;
    pub const MSS: u8 = 2;
    pub const WINDOW_SCALE: u8 = 3;
    pub const SACK_PERMITTED: u8 = 4;
    pub const SACK: u8 = 5;
    pub const TIMESTAMPS: u8 = 8;
}

/// A view of a TCP segment.
#[derive(Debug, Clone)]
pub struct TcpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TcpPacket<T> {
    /// Wraps `buffer` (the whole segment) without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        TcpPacket { buffer }
    }

    /// Wraps `buffer` after [`Self::check_len`].
    pub fn new_checked(buffer: T) -> WireResult<Self> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Fails unless the header and its options fit the buffer.
    pub fn check_len(&self) -> WireResult<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let header_len = self.header_len();
        if header_len < HEADER_LEN {
            return Err(WireError::Malformed);
        }
        if header_len > len {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    /// Source port.
    pub fn src_port(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::SRC_PORT)
    }

    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::DST_PORT)
    }

    /// Sequence number.
    pub fn seq(&self) -> u32 {
        read_u32(self.buffer.as_ref(), field::SEQ)
    }

    /// Acknowledgment number.
    pub fn ack(&self) -> u32 {
        read_u32(self.buffer.as_ref(), field::ACK)
    }

    /// Header length in bytes (data offset times four).
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::OFFSET] >> 4) * 4
    }

    /// The flag bits ([`flags`]).
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    /// The raw (unscaled) window.
    pub fn window(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::WINDOW)
    }

    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// The option bytes.
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..self.header_len()]
    }

    /// The data after the header.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }

    /// True if the checksum over the segment and the pseudo-header sum
    /// `pseudo` (of the right family) holds. Per segment.
    #[inline]
    pub fn verify_checksum(&self, pseudo: u64) -> bool {
        checksum::fold(checksum::accumulate(pseudo, self.buffer.as_ref())) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpPacket<T> {
    /// Fills the checksum, given the pseudo-header sum `pseudo`.
    pub fn fill_checksum(&mut self, pseudo: u64) {
        let bytes = self.buffer.as_mut();
        write_u16(bytes, field::CHECKSUM, 0);
        let sum = !checksum::fold(checksum::accumulate(pseudo, bytes));
        write_u16(bytes, field::CHECKSUM, sum);
    }
}

fn read_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// Most SACK blocks an option holds (RFC 2018 3: 4 fill the 40 option
/// bytes; 3 fit beside timestamps).
pub const MAX_SACK_BLOCKS: usize = 4;

/// SACK blocks (RFC 2018): `[left, right)` edges as sequence numbers, the
/// first the most recent (or a D-SACK, RFC 2883). Fixed storage: a header
/// never holds more than [`MAX_SACK_BLOCKS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SackBlocks {
    blocks: [(u32, u32); MAX_SACK_BLOCKS],
    len: u8,
}

impl SackBlocks {
    /// Appends a block; false (nothing added) once full.
    pub fn push(&mut self, left: u32, right: u32) -> bool {
        let Some(slot) = self.blocks.get_mut(usize::from(self.len)) else {
            return false;
        };
        *slot = (left, right);
        self.len += 1;
        true
    }

    /// The blocks, in the order sent.
    pub fn as_slice(&self) -> &[(u32, u32)] {
        &self.blocks[..usize::from(self.len)]
    }

    /// Number of blocks.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// True if there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Keeps the first `n` blocks.
    pub fn truncate(&mut self, n: usize) {
        self.len = self.len.min(n as u8);
    }
}

/// The options dpstack understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpOptions {
    /// Maximum segment size (SYN only).
    pub mss: Option<u16>,
    /// Window scale shift (SYN only; at most 14 is honoured).
    pub window_scale: Option<u8>,
    /// SACK permitted (SYN only).
    pub sack_permitted: bool,
    /// Timestamps: (TSval, TSecr).
    pub timestamps: Option<(u32, u32)>,
    /// SACK blocks (any segment once SACK is permitted).
    pub sack: SackBlocks,
}

impl TcpOptions {
    /// Parses option bytes: END stops, NOP is skipped, unknown kinds are
    /// skipped by their length; a length that is too short, runs past the
    /// options or does not fit its kind is `Malformed`.
    pub fn parse(mut bytes: &[u8]) -> WireResult<TcpOptions> {
        let mut options = TcpOptions::default();
        while let Some(&kind) = bytes.first() {
            match kind {
                kind::END => break,
                kind::NOP => {
                    bytes = &bytes[1..];
                    continue;
                }
                _ => {}
            }
            let len = usize::from(*bytes.get(1).ok_or(WireError::Malformed)?);
            if len < 2 || len > bytes.len() {
                return Err(WireError::Malformed);
            }
            let body = &bytes[2..len];
            match (kind, body.len()) {
                (kind::MSS, 2) => options.mss = Some(u16::from_be_bytes([body[0], body[1]])),
                (kind::WINDOW_SCALE, 1) => options.window_scale = Some(body[0].min(14)),
                (kind::SACK_PERMITTED, 0) => options.sack_permitted = true,
                (kind::TIMESTAMPS, 8) => {
                    options.timestamps = Some((read_u32(body, 0), read_u32(body, 4)));
                }
                (kind::SACK, n) if n > 0 && n % 8 == 0 && n <= 8 * MAX_SACK_BLOCKS => {
                    options.sack = SackBlocks::default();
                    for block in body.chunks_exact(8) {
                        options.sack.push(read_u32(block, 0), read_u32(block, 4));
                    }
                }
                (
                    kind::MSS
                    | kind::WINDOW_SCALE
                    | kind::SACK_PERMITTED
                    | kind::TIMESTAMPS
                    | kind::SACK,
                    _,
                ) => return Err(WireError::Malformed),
                _ => {} // MD5, fast open...: not used
            }
            bytes = &bytes[len..];
        }
        Ok(options)
    }

    /// Bytes [`Self::emit`] writes (a multiple of 4).
    pub fn len(&self) -> usize {
        let mut len = 0;
        if self.mss.is_some() {
            len += 4;
        }
        // SACK permitted shares a word with the timestamps' NOPs, or takes
        // one of its own.
        match (self.sack_permitted, self.timestamps.is_some()) {
            (true, true) => len += 12,
            (true, false) => len += 4,
            (false, true) => len += 12,
            (false, false) => {}
        }
        if self.window_scale.is_some() {
            len += 4;
        }
        if !self.sack.is_empty() {
            // NOP, NOP, kind, length, then 8 bytes a block.
            len += 4 + 8 * self.sack.len();
        }
        len
    }

    /// True if no option is set.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes the options in Linux's order and padding: MSS; SACK
    /// permitted with timestamps (or NOP, NOP, timestamps; or NOP, NOP,
    /// SACK permitted); NOP and window scale; NOP, NOP and SACK blocks.
    /// `out` must hold [`Self::len`] bytes (the caller keeps it within
    /// [`MAX_OPTIONS_LEN`]: at most 3 blocks beside timestamps).
    pub fn emit(&self, out: &mut [u8]) {
        let mut at = 0;
        let mut put = |bytes: &[u8]| {
            out[at..at + bytes.len()].copy_from_slice(bytes);
            at += bytes.len();
        };
        if let Some(mss) = self.mss {
            let m = mss.to_be_bytes();
            put(&[kind::MSS, 4, m[0], m[1]]);
        }
        match (self.sack_permitted, self.timestamps) {
            (sack, Some((value, echo))) => {
                if sack {
                    put(&[kind::SACK_PERMITTED, 2]);
                } else {
                    put(&[kind::NOP, kind::NOP]);
                }
                put(&[kind::TIMESTAMPS, 10]);
                put(&value.to_be_bytes());
                put(&echo.to_be_bytes());
            }
            (true, None) => put(&[kind::NOP, kind::NOP, kind::SACK_PERMITTED, 2]),
            (false, None) => {}
        }
        if let Some(shift) = self.window_scale {
            put(&[kind::NOP, kind::WINDOW_SCALE, 3, shift]);
        }
        if !self.sack.is_empty() {
            let len = 2 + 8 * self.sack.len() as u8;
            put(&[kind::NOP, kind::NOP, kind::SACK, len]);
            for &(left, right) in self.sack.as_slice() {
                put(&left.to_be_bytes());
                put(&right.to_be_bytes());
            }
        }
    }
}

/// A TCP header, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgment number (meaningful with [`flags::ACK`]).
    pub ack: u32,
    /// Flag bits ([`flags`]).
    pub flags: u8,
    /// Raw window field.
    pub window: u16,
    /// Options.
    pub options: TcpOptions,
}

impl TcpRepr {
    /// Parses the header of a checked segment. Per segment.
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(packet: &TcpPacket<T>) -> WireResult<TcpRepr> {
        Ok(TcpRepr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            seq: packet.seq(),
            ack: packet.ack(),
            flags: packet.flags(),
            window: packet.window(),
            options: TcpOptions::parse(packet.options())?,
        })
    }

    /// Header length with options.
    pub fn header_len(&self) -> usize {
        HEADER_LEN + self.options.len()
    }

    /// Writes the header (checksum zero) into `out`, which holds at least
    /// [`Self::header_len`] bytes.
    pub fn emit(&self, out: &mut [u8]) {
        let header_len = self.header_len();
        write_u16(out, field::SRC_PORT, self.src_port);
        write_u16(out, field::DST_PORT, self.dst_port);
        out[field::SEQ..field::SEQ + 4].copy_from_slice(&self.seq.to_be_bytes());
        out[field::ACK..field::ACK + 4].copy_from_slice(&self.ack.to_be_bytes());
        out[field::OFFSET] = ((header_len / 4) as u8) << 4;
        out[field::FLAGS] = self.flags;
        write_u16(out, field::WINDOW, self.window);
        write_u16(out, field::CHECKSUM, 0);
        write_u16(out, field::URGENT, 0);
        self.options.emit(&mut out[HEADER_LEN..header_len]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::checksum::pseudo_header_v4;
    use core::net::Ipv4Addr;

    // A Linux SYN: 10.0.0.2:40000 -> 10.0.0.1:80, seq 0x01020304, window
    // 64240, options MSS 1460, SACK permitted, TS 100/0, NOP, WS 7.
    const SYN: [u8; 40] = [
        0x9c, 0x40, 0x00, 0x50, 0x01, 0x02, 0x03, 0x04, 0, 0, 0, 0, 0xa0, 0x02, 0xfa, 0xf0, 0x00,
        0x00, 0, 0, 2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 100, 0, 0, 0, 0, 1, 3, 3, 7,
    ];

    fn addresses() -> u64 {
        pseudo_header_v4(
            Ipv4Addr::new(10, 0, 0, 2),
            Ipv4Addr::new(10, 0, 0, 1),
            6,
            SYN.len() as u16,
        )
    }

    #[test]
    fn a_linux_syn_parses_and_emits_back_byte_for_byte() {
        let mut bytes = SYN;
        TcpPacket::new_unchecked(&mut bytes[..]).fill_checksum(addresses());
        let packet = TcpPacket::new_checked(&bytes[..]).unwrap();
        assert!(packet.verify_checksum(addresses()));
        let repr = TcpRepr::parse(&packet).unwrap();
        assert_eq!(
            repr,
            TcpRepr {
                src_port: 40000,
                dst_port: 80,
                seq: 0x0102_0304,
                ack: 0,
                flags: flags::SYN,
                window: 64240,
                options: TcpOptions {
                    mss: Some(1460),
                    window_scale: Some(7),
                    sack_permitted: true,
                    timestamps: Some((100, 0)),
                    ..TcpOptions::default()
                },
            }
        );
        let mut out = [0u8; 40];
        repr.emit(&mut out);
        TcpPacket::new_unchecked(&mut out[..]).fill_checksum(addresses());
        assert_eq!(out, bytes);
    }

    #[test]
    fn option_layouts_without_sack_or_timestamps() {
        let options = TcpOptions {
            mss: Some(536),
            window_scale: None,
            sack_permitted: true,
            timestamps: None,
            ..TcpOptions::default()
        };
        let mut out = [0u8; 8];
        options.emit(&mut out);
        assert_eq!(out, [2, 4, 2, 24, 1, 1, 4, 2]);
        let ts_only = TcpOptions {
            timestamps: Some((1, 2)),
            ..TcpOptions::default()
        };
        let mut out = [0u8; 12];
        ts_only.emit(&mut out);
        assert_eq!(out, [1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]);
        assert_eq!(TcpOptions::parse(&out), Ok(ts_only));
    }

    #[test]
    fn sack_blocks_follow_timestamps_and_parse_back() {
        // Linux's layout: NOP NOP TS, then NOP NOP SACK with 3 blocks: 40
        // bytes, the most a header holds.
        let mut options = TcpOptions {
            timestamps: Some((7, 9)),
            ..TcpOptions::default()
        };
        for (left, right) in [(300, 400), (100, 200), (500, 600)] {
            assert!(options.sack.push(left, right));
        }
        assert_eq!(options.len(), MAX_OPTIONS_LEN);
        let mut out = [0u8; MAX_OPTIONS_LEN];
        options.emit(&mut out);
        assert_eq!(&out[12..16], &[1, 1, 5, 26]);
        assert_eq!(&out[16..24], &[0, 0, 1, 44, 0, 0, 1, 144]);
        assert_eq!(TcpOptions::parse(&out), Ok(options));
        // A block's worth of bytes that is not a whole block is malformed;
        // so are none and five.
        for bad in [&[5, 6, 0, 0, 0, 1][..], &[5, 2], &[5, 42]] {
            let mut padded = bad.to_vec();
            padded.resize(42, 0);
            assert_eq!(
                TcpOptions::parse(&padded),
                Err(WireError::Malformed),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn bad_headers_and_options_are_refused() {
        assert_eq!(
            TcpPacket::new_checked(&SYN[..19]).err(),
            Some(WireError::Truncated)
        );
        let mut short_offset = SYN;
        short_offset[12] = 0x40;
        assert_eq!(
            TcpPacket::new_checked(&short_offset[..]).err(),
            Some(WireError::Malformed)
        );
        assert_eq!(
            TcpPacket::new_checked(&SYN[..36]).err(),
            Some(WireError::Truncated)
        );
        // An option running past the options, a zero length, a wrong MSS
        // length.
        for bad in [&[2, 8, 5, 180][..], &[30, 0], &[2, 3, 5], &[8]] {
            assert_eq!(TcpOptions::parse(bad), Err(WireError::Malformed), "{bad:?}");
        }
        // Unknown options are skipped; END stops.
        assert_eq!(
            TcpOptions::parse(&[30, 4, 0, 0, 2, 4, 1, 0, 0, 2, 4, 9, 9]),
            Ok(TcpOptions {
                mss: Some(256),
                ..TcpOptions::default()
            })
        );
        // A window scale over 14 is taken as 14 (RFC 7323 2.3).
        assert_eq!(
            TcpOptions::parse(&[3, 3, 20]).unwrap().window_scale,
            Some(14)
        );
    }
}
