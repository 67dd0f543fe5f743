//! Writing RTCP packets into caller-provided buffers: a receiver report, a
//! sender report (both with up to 31 report blocks) and an SDES packet with
//! one CNAME chunk, the minimum compound packet RFC 3550 section 6.1 asks
//! for being an SR or RR followed by that SDES. Each writer returns the
//! bytes written, so a compound is built by writing one packet after the
//! other into the rest of the buffer.
//!
//! Invariants: nothing is written unless the whole packet fits; lengths are
//! always whole 32-bit words; no padding is ever added (the P bit is 0).

use super::rtcp::{packet_type, ReportBlock, SenderInfo, MAX_COUNT, REPORT_BLOCK_LEN};
use super::rtcp::{HEADER_LEN, SENDER_INFO_LEN};
use super::{put16, put32, WriteError, VERSION};

/// The SDES item type of a CNAME.
pub const SDES_CNAME: u8 = 1;

/// Checks the room and writes the 4-byte header of a `len`-byte packet.
fn header(buf: &mut [u8], count: usize, pt: u8, len: usize) -> Result<&mut [u8], WriteError> {
    if count > MAX_COUNT {
        return Err(WriteError::TooMany);
    }
    let Some(out) = buf.get_mut(..len) else {
        return Err(WriteError::BufferTooSmall { needed: len });
    };
    // count <= 31 was checked; len is at most a few hundred bytes here.
    out[0] = VERSION << 6 | count as u8;
    out[1] = pt;
    put16(out, 2, u16::try_from(len / 4 - 1).unwrap_or(u16::MAX));
    Ok(out)
}

fn blocks(out: &mut [u8], at: usize, blocks: &[ReportBlock]) {
    for (i, block) in blocks.iter().enumerate() {
        let start = at + i * REPORT_BLOCK_LEN;
        if let Some(dst) = out.get_mut(start..start + REPORT_BLOCK_LEN) {
            block.emit(dst);
        }
    }
}

/// Writes an RR from `reporter` with `report_blocks` at the start of `buf`;
/// returns its length (8 + 24 per block).
pub fn write_receiver_report(
    buf: &mut [u8],
    reporter: u32,
    report_blocks: &[ReportBlock],
) -> Result<usize, WriteError> {
    let len = HEADER_LEN + 4 + report_blocks.len() * REPORT_BLOCK_LEN;
    let out = header(buf, report_blocks.len(), packet_type::RR, len)?;
    put32(out, 4, reporter);
    blocks(out, 8, report_blocks);
    Ok(len)
}

/// Writes an SR from `sender` with its sender info and `report_blocks` at
/// the start of `buf`; returns its length (28 + 24 per block).
pub fn write_sender_report(
    buf: &mut [u8],
    sender: u32,
    info: &SenderInfo,
    report_blocks: &[ReportBlock],
) -> Result<usize, WriteError> {
    let fixed = HEADER_LEN + 4 + SENDER_INFO_LEN;
    let len = fixed + report_blocks.len() * REPORT_BLOCK_LEN;
    let out = header(buf, report_blocks.len(), packet_type::SR, len)?;
    put32(out, 4, sender);
    put32(out, 8, (info.ntp_timestamp >> 32) as u32);
    put32(out, 12, info.ntp_timestamp as u32);
    put32(out, 16, info.rtp_timestamp);
    put32(out, 20, info.packet_count);
    put32(out, 24, info.octet_count);
    blocks(out, fixed, report_blocks);
    Ok(len)
}

/// Writes a BYE packet for `sources` (RFC 3550 6.6, no reason text) at the
/// start of `buf`; returns its length (4 + 4 per source). It belongs last in
/// a compound that starts with an SR or RR.
pub fn write_bye(buf: &mut [u8], sources: &[u32]) -> Result<usize, WriteError> {
    let len = HEADER_LEN + 4 * sources.len();
    let out = header(buf, sources.len(), packet_type::BYE, len)?;
    for (i, &ssrc) in sources.iter().enumerate() {
        put32(out, HEADER_LEN + 4 * i, ssrc);
    }
    Ok(len)
}

/// Writes an SDES packet with one chunk, `ssrc`'s CNAME (at most 255
/// bytes), at the start of `buf`; returns its length. The item list ends
/// with a null item and zeros up to the next word.
pub fn write_sdes_cname(buf: &mut [u8], ssrc: u32, cname: &[u8]) -> Result<usize, WriteError> {
    let Ok(cname_len) = u8::try_from(cname.len()) else {
        return Err(WriteError::BadValue);
    };
    // SSRC, type, length, text, then 1-4 zero bytes to end on a word.
    let items = 2 + cname.len();
    let chunk = 4 + items + (4 - items % 4);
    let len = HEADER_LEN + chunk;
    let out = header(buf, 1, packet_type::SDES, len)?;
    put32(out, 4, ssrc);
    out[8] = SDES_CNAME;
    out[9] = cname_len;
    out[10..10 + cname.len()].copy_from_slice(cname);
    out[10 + cname.len()..].fill(0);
    Ok(len)
}
