//! One source's receive statistics, what a relay shows per session and what
//! a receiver report says about the source: packets and bytes, Appendix A.1
//! validation and loss ([`SeqState`]), A.8 jitter ([`Jitter`]), duplicates
//! and reordering, and the last sender report for LSR/DLSR (section 6.4.1).
//!
//! Invariants: every counter saturates or is 64-bit, so no input sequence
//! overflows one; jitter is updated only for packets A.1 counts that are not
//! duplicates, and its reference restarts whenever the counts do (end of
//! probation, resync), so a sender restart does not show as one huge jitter
//! sample. The caller keys one `ReceiveStats` per SSRC and passes only that
//! SSRC's packets (and, per RFC 4733, leaves telephone-event packets, whose
//! timestamps stand still, out of the jitter by not feeding them here or by
//! keeping them in a separate `ReceiveStats`).

use super::header::RtpPacket;
use super::jitter::{ArrivalClock, Jitter};
use super::rtcp::ReportBlock;
use super::seq::{clamp_lost_24, SeqOutcome, SeqState};
use dpstack_stack::time::{Duration, Instant};

/// The counters a relay reports for one source.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Every packet handed in, whatever [`SeqState`] made of it.
    pub packets: u64,
    /// Payload bytes of those packets (header and padding excluded).
    pub bytes: u64,
    /// Packets A.1 counts as received since the counts last started
    /// (duplicates included, as A.1 counts them).
    pub received: u64,
    /// Packets expected since the counts last started (A.3).
    pub expected: u64,
    /// Cumulative loss, `expected - received` (negative with duplicates).
    pub lost: i64,
    /// Duplicates seen.
    pub duplicates: u64,
    /// Late packets that filled a gap.
    pub out_of_order: u64,
    /// Packets not counted: probation, or a jump not (yet) confirmed.
    pub discarded: u64,
    /// Times the source was resynchronised after a jump.
    pub resyncs: u64,
    /// Interarrival jitter in RTP timestamp units.
    pub jitter: u32,
    /// The extended highest sequence number (low 32 bits).
    pub extended_highest_seq: u32,
}

/// The last sender report heard from the source.
#[derive(Debug, Clone, Copy)]
struct LastSr {
    /// The middle 32 bits of its NTP timestamp.
    ntp_middle: u32,
    /// When it arrived.
    arrival: Instant,
}

/// The bytes at the start of a [`ReceiveStats`] that every packet
/// touches.
pub const HOT_BYTES: usize = 40 + super::seq::HOT_BYTES;

/// Receive statistics for one SSRC.
///
/// Laid out (`repr(C)`) with what every packet touches first: the SSRC,
/// clock rate, packet and byte counts, the jitter state and the sequence
/// state's hot part ([`HOT_BYTES`], 77); the rest of the sequence state,
/// the rarely moving counts and the last SR follow.
#[derive(Debug, Clone)]
#[repr(C)]
pub struct ReceiveStats {
    ssrc: u32,
    clock_rate: u32,
    packets: u64,
    bytes: u64,
    jitter: Jitter,
    seq: SeqState,
    duplicates: u64,
    out_of_order: u64,
    discarded: u64,
    resyncs: u64,
    last_sr: Option<LastSr>,
}

impl ReceiveStats {
    /// Statistics for `ssrc`, whose timestamps run at `clock_rate` Hz (8000
    /// for G.711; 0 turns jitter off), with A.1's probation.
    pub fn new(ssrc: u32, clock_rate: u32) -> ReceiveStats {
        ReceiveStats::with_seq_state(ssrc, clock_rate, SeqState::new())
    }

    /// As [`Self::new`], with the given (fresh) sequence state, e.g.
    /// [`SeqState::with_probation`].
    pub fn with_seq_state(ssrc: u32, clock_rate: u32, seq: SeqState) -> ReceiveStats {
        ReceiveStats {
            ssrc,
            clock_rate,
            packets: 0,
            bytes: 0,
            jitter: Jitter::new(),
            seq,
            duplicates: 0,
            out_of_order: 0,
            discarded: 0,
            resyncs: 0,
            last_sr: None,
        }
    }

    /// The SSRC these statistics are about.
    pub fn ssrc(&self) -> u32 {
        self.ssrc
    }

    /// True once the source has passed probation.
    pub fn is_valid(&self) -> bool {
        self.seq.is_valid()
    }

    /// The sequence state (A.1).
    pub fn seq_state(&self) -> &SeqState {
        &self.seq
    }

    /// Takes one packet of this source: its sequence number, timestamp,
    /// payload length and arrival time. The outcome tells a relay whether to
    /// forward it ([`SeqOutcome::counted`]) and whether it is a duplicate.
    pub fn record(
        &mut self,
        seq: u16,
        timestamp: u32,
        payload_len: usize,
        arrival: Instant,
    ) -> SeqOutcome {
        self.record_with(
            seq,
            timestamp,
            payload_len,
            arrival,
            &mut ArrivalClock::new(),
        )
    }

    /// [`Self::record`], converting the arrival time to the stream's RTP
    /// clock through `clock`, a receive path's memo of the last conversion.
    /// Per packet for a relay: always inlined (a relay leg calls it twice,
    /// and the compiler would then keep it out of line).
    #[inline(always)]
    pub fn record_with(
        &mut self,
        seq: u16,
        timestamp: u32,
        payload_len: usize,
        arrival: Instant,
        clock: &mut ArrivalClock,
    ) -> SeqOutcome {
        // 64-bit counters added to per packet: wrapping is one add where
        // saturating is an add and a cmov, and neither can reach 2^64.
        self.packets = self.packets.wrapping_add(1);
        let len = u64::try_from(payload_len).unwrap_or(u64::MAX);
        self.bytes = self.bytes.wrapping_add(len);
        let was_valid = self.seq.is_valid();
        let outcome = self.seq.update(seq);
        match outcome {
            SeqOutcome::Probation | SeqOutcome::Jump => {
                self.discarded = self.discarded.saturating_add(1);
                return outcome;
            }
            SeqOutcome::Duplicate => {
                self.duplicates = self.duplicates.wrapping_add(1);
                return outcome;
            }
            SeqOutcome::Reordered => self.out_of_order = self.out_of_order.saturating_add(1),
            SeqOutcome::Resync => {
                self.resyncs = self.resyncs.saturating_add(1);
                self.jitter.restart();
            }
            SeqOutcome::InOrder if !was_valid => self.jitter.restart(),
            SeqOutcome::InOrder => {}
        }
        if self.clock_rate != 0 {
            self.jitter
                .update(clock.units(arrival, self.clock_rate), timestamp);
        }
        outcome
    }

    /// [`Self::record`] for a checked packet (its SSRC is not compared: the
    /// caller picked these statistics by it).
    pub fn record_packet<T: AsRef<[u8]>>(
        &mut self,
        packet: &RtpPacket<T>,
        arrival: Instant,
    ) -> SeqOutcome {
        self.record(
            packet.seq(),
            packet.timestamp(),
            packet.payload().len(),
            arrival,
        )
    }

    /// Notes a sender report from this source: the 64-bit NTP timestamp it
    /// carries and when it arrived, for the next report block's LSR and
    /// DLSR.
    pub fn record_sender_report(&mut self, ntp_timestamp: u64, arrival: Instant) {
        self.last_sr = Some(LastSr {
            // The middle 32 bits: low 16 of the seconds, high 16 of the
            // fraction.
            ntp_middle: (ntp_timestamp >> 16) as u32,
            arrival,
        });
    }

    /// Interarrival jitter in RTP timestamp units.
    pub fn jitter(&self) -> u32 {
        self.jitter.value()
    }

    /// Interarrival jitter as a duration (0 if the clock rate is 0).
    pub fn jitter_duration(&self) -> Duration {
        match self.clock_rate {
            0 => Duration::ZERO,
            rate => {
                let nanos = u64::from(self.jitter.value()) * 1_000_000_000 / u64::from(rate);
                Duration::from_nanos(nanos)
            }
        }
    }

    /// The counters as they stand.
    pub fn counters(&self) -> Counters {
        Counters {
            packets: self.packets,
            bytes: self.bytes,
            received: self.seq.received(),
            expected: self.seq.expected(),
            lost: self.seq.lost(),
            duplicates: self.duplicates,
            out_of_order: self.out_of_order,
            discarded: self.discarded,
            resyncs: self.resyncs,
            jitter: self.jitter.value(),
            extended_highest_seq: self.seq.extended_max() as u32,
        }
    }

    /// The report block about this source for a report sent at `now`, and
    /// the start of the next report interval (the fraction lost covers the
    /// packets since the previous call). `None` while on probation: a
    /// source is reported only once valid.
    pub fn report_block(&mut self, now: Instant) -> Option<ReportBlock> {
        if !self.seq.is_valid() {
            return None;
        }
        let interval = self.seq.close_interval();
        let (last_sr, delay_since_last_sr) = match self.last_sr {
            None => (0, 0),
            Some(sr) => (
                sr.ntp_middle,
                dlsr(now.saturating_duration_since(sr.arrival)),
            ),
        };
        Some(ReportBlock {
            ssrc: self.ssrc,
            fraction_lost: interval.fraction,
            cumulative_lost: clamp_lost_24(self.seq.lost()),
            // Reports carry the low 32 bits (cycles in the high 16).
            extended_highest_seq: self.seq.extended_max() as u32,
            jitter: self.jitter.value(),
            last_sr,
            delay_since_last_sr,
        })
    }
}

#[cfg(test)]
#[test]
fn the_hot_fields_come_first() {
    use core::mem::offset_of;
    // Up to the sequence state's flags; its interval counts come after.
    assert_eq!(
        offset_of!(ReceiveStats, seq) + super::seq::HOT_BYTES,
        HOT_BYTES
    );
    assert!(offset_of!(ReceiveStats, duplicates) >= HOT_BYTES);
    assert_eq!(core::mem::align_of::<ReceiveStats>(), 8);
}

/// A delay in units of 1/65536 s, saturating at `u32::MAX` (18 hours).
pub fn dlsr(delay: Duration) -> u32 {
    let units = delay.as_nanos().saturating_mul(65_536) / 1_000_000_000;
    u32::try_from(units).unwrap_or(u32::MAX)
}
