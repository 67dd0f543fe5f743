//! RTP and RTCP (RFC 3550) for a media relay, sans-IO: datagrams and their
//! arrival [`Instant`](dpstack_stack::time::Instant)s go in, statistics and RTCP
//! packets written into caller-provided buffers come out. Nothing here reads
//! a clock, allocates, logs or panics on any input; every parser returns a
//! typed error.
//!
//! Files by responsibility:
//! - [`header`]: the RTP fixed header as a checked view (Appendix A.1's
//!   header checks), the same checks and a relay's fields in one pass
//!   ([`RtpSummary`]), and [`RtpHeader`], a writer for it;
//! - [`mux`]: telling RTP from RTCP on one port (RFC 5761, rtcp-mux);
//! - [`seq`]: Appendix A.1's `update_seq` (probation, wrap, big jumps and
//!   resync) with a bitmap window that spots duplicates and reordering;
//! - [`jitter`]: Appendix A.8's interarrival jitter, in integers;
//! - [`stats`]: one source's receive statistics (A.1, A.3, A.8 together) and
//!   the RTCP report block made from them;
//! - [`rtcp`]: parsing compound RTCP packets (SR, RR and a BYE's sources;
//!   SDES, APP and the rest recognised and skipped) per Appendix A.2;
//! - [`rtcp_write`]: writing SR, RR, SDES CNAME and BYE packets;
//! - [`interval`]: the RTCP transmission interval (section 6.3.1, A.7).
//!
//! A receive path for one RTP port looks like: [`classify`] the datagram,
//! check it with [`RtpPacket::new_checked`] (or [`Compound::new_checked`] for
//! RTCP), find the [`ReceiveStats`] of its SSRC and feed it the packet with
//! its arrival time; every RTCP interval, write
//! [`ReceiveStats::report_block`]s into a receiver report.

pub mod header;
pub mod interval;
pub mod jitter;
pub mod mux;
pub mod rtcp;
pub mod rtcp_write;
pub mod seq;
pub mod stats;

#[cfg(test)]
mod tests;

pub use header::{Extension, RtpError, RtpHeader, RtpPacket, RtpSummary};
pub use interval::{deterministic_interval, rtcp_interval, update_avg_rtcp_size, IntervalParams};
pub use jitter::ArrivalClock;
pub use mux::{classify, Kind};
pub use rtcp::{Compound, ReportBlock, RtcpError, RtcpPacket, SenderInfo};
pub use rtcp_write::{write_bye, write_receiver_report, write_sdes_cname, write_sender_report};
pub use seq::{SeqOutcome, SeqState};
pub use stats::{Counters, ReceiveStats};

/// The RTP and RTCP version this module speaks (the `V` field).
pub const VERSION: u8 = 2;

/// Why a packet could not be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteError {
    /// The buffer is shorter than the packet (`needed` bytes).
    BufferTooSmall {
        /// Bytes the packet needs.
        needed: usize,
    },
    /// More items than the packet's count field holds (15 CSRCs, 31 report
    /// blocks).
    TooMany,
    /// A field does not fit its format: a payload type above 127, extension
    /// data not a whole number of 32-bit words, a CNAME over 255 bytes.
    BadValue,
}

/// Reads a big-endian `u16` at `at`, or 0 past the end (callers check
/// lengths first; this only keeps a bad offset from panicking).
pub(crate) fn be16(bytes: &[u8], at: usize) -> u16 {
    match bytes.get(at..at.saturating_add(2)) {
        Some(&[a, b]) => u16::from_be_bytes([a, b]),
        _ => 0,
    }
}

/// Reads a big-endian `u32` at `at`, or 0 past the end.
pub(crate) fn be32(bytes: &[u8], at: usize) -> u32 {
    match bytes.get(at..at.saturating_add(4)) {
        Some(&[a, b, c, d]) => u32::from_be_bytes([a, b, c, d]),
        _ => 0,
    }
}

/// Writes a big-endian `u32` at `at`; does nothing past the end (writers
/// check the length first).
pub(crate) fn put32(bytes: &mut [u8], at: usize, value: u32) {
    if let Some(dst) = bytes.get_mut(at..at.saturating_add(4)) {
        dst.copy_from_slice(&value.to_be_bytes());
    }
}

/// Writes a big-endian `u16` at `at`; does nothing past the end.
pub(crate) fn put16(bytes: &mut [u8], at: usize, value: u16) {
    if let Some(dst) = bytes.get_mut(at..at.saturating_add(2)) {
        dst.copy_from_slice(&value.to_be_bytes());
    }
}
