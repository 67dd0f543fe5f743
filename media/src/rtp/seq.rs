//! One source's sequence-number state: RFC 3550 Appendix A.1's `init_seq`
//! and `update_seq`, the counts of Appendix A.3, and a window that tells
//! duplicates from late packets.
//!
//! A.1 in short, for `udelta = seq - max_seq` (mod 2^16):
//! - a new source is on probation until [`MIN_SEQUENTIAL`] packets arrive in
//!   sequence; the packet that ends probation restarts the counts
//!   (`init_seq`), so it is the first one counted and `base_seq`;
//! - `udelta < MAX_DROPOUT`: in order, maybe after a gap; `seq < max_seq`
//!   means the 16-bit number wrapped, and `cycles` grows by 2^16;
//! - `udelta <= 2^16 - MAX_MISORDER`: a big jump, not counted; if the next
//!   packet is the jump's successor (`bad_seq`), the sender restarted and the
//!   source is resynchronised on it;
//! - otherwise a duplicate or late packet: counted as received (so the
//!   cumulative loss can go negative), `max_seq` unchanged.
//!
//! Two deviations from A.1's C text, both fixes: the probation test
//! `seq == max_seq + 1` wraps at 2^16 (in C the int promotion made 65535
//! followed by 0 restart probation), and `cycles` is 64-bit so the counts
//! never wrap.
//!
//! Duplicates: bit `i` of a 128-bit window says whether `max_seq - i` has
//! arrived since the last `init_seq`. Every packet A.1 counts is within 99
//! of `max_seq` or ahead of it, so the window covers them all: a packet whose
//! bit is already set is a duplicate; a late one whose bit is clear is
//! out of order (it fills a gap and is not lost).

/// Packets in sequence needed to end probation (A.1).
pub const MIN_SEQUENTIAL: u8 = 2;
/// Largest forward jump still taken as in order (A.1).
pub const MAX_DROPOUT: u16 = 3000;
/// How far behind `max_seq` a packet is still taken as late rather than a
/// jump (A.1).
pub const MAX_MISORDER: u16 = 100;
/// The sequence number's modulus.
pub const RTP_SEQ_MOD: u32 = 1 << 16;

/// What [`SeqState::update`] made of a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqOutcome {
    /// The source is still on probation; not counted.
    Probation,
    /// In order (the next one, or after a gap, or ending probation); counted.
    InOrder,
    /// Late but new: it fills a gap behind `max_seq`; counted.
    Reordered,
    /// Already received (within the window); counted, as A.1 does.
    Duplicate,
    /// A jump of more than `MAX_DROPOUT` ahead or `MAX_MISORDER` behind;
    /// not counted, remembered in case the next packet follows it.
    Jump,
    /// The packet after a jump: the sender restarted, the counts start
    /// again at this packet; counted.
    Resync,
}

impl SeqOutcome {
    /// True where A.1's `update_seq` returns 1: the packet counts as
    /// received and belongs in the statistics.
    pub fn counted(self) -> bool {
        !matches!(self, SeqOutcome::Probation | SeqOutcome::Jump)
    }
}

/// Loss over one report interval (A.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntervalLoss {
    /// Packets expected in the interval.
    pub expected: i64,
    /// Packets received in the interval (duplicates included).
    pub received: i64,
    /// The fraction lost, in 1/256 (0 when nothing was lost or more arrived
    /// than expected).
    pub fraction: u8,
}

/// The bytes at the start of a [`SeqState`] that every packet touches.
pub const HOT_BYTES: usize = 37;

/// Appendix A.1's per-source sequence state.
///
/// Laid out (`repr(C)`) with what every packet touches first
/// ([`HOT_BYTES`]); what only a restart, a jump or a report reads
/// follows. The window is two `u64` words (low, high) rather than a
/// `u128`, so the state is 8-byte aligned and packs with its neighbours.
#[derive(Debug, Clone)]
#[repr(C)]
pub struct SeqState {
    window: [u64; 2],
    /// Wraps seen, times 2^16 (A.1 keeps it shifted).
    cycles: u64,
    received: u64,
    max_seq: u16,
    started: bool,
    min_sequential: u8,
    probation: u8,
    base_seq: u16,
    /// The successor of the last jump, or `RTP_SEQ_MOD + 1` (none).
    bad_seq: u32,
    expected_prior: u64,
    received_prior: u64,
}

impl Default for SeqState {
    fn default() -> Self {
        SeqState::new()
    }
}

impl SeqState {
    /// A source not heard yet, with A.1's probation of [`MIN_SEQUENTIAL`].
    pub fn new() -> SeqState {
        SeqState::with_probation(MIN_SEQUENTIAL)
    }

    /// A source not heard yet that is valid after `min_sequential` packets
    /// in sequence (at least 1: valid on its first packet).
    pub fn with_probation(min_sequential: u8) -> SeqState {
        SeqState {
            started: false,
            min_sequential: min_sequential.max(1),
            probation: 0,
            max_seq: 0,
            cycles: 0,
            base_seq: 0,
            bad_seq: RTP_SEQ_MOD + 1,
            received: 0,
            expected_prior: 0,
            received_prior: 0,
            window: [0; 2],
        }
    }

    /// A.1's `init_seq`: the counts start again at `seq`.
    fn init_seq(&mut self, seq: u16) {
        self.base_seq = seq;
        self.max_seq = seq;
        self.bad_seq = RTP_SEQ_MOD + 1;
        self.cycles = 0;
        self.received = 0;
        self.received_prior = 0;
        self.expected_prior = 0;
        self.set_window(1);
    }

    /// A.1's `update_seq` for one packet, plus the duplicate window.
    /// Inlined into [`ReceiveStats::record`](super::ReceiveStats::record),
    /// its one caller on the per-packet path.
    #[inline(always)]
    pub fn update(&mut self, seq: u16) -> SeqOutcome {
        if !self.started {
            // A.1: a source heard for the first time.
            self.started = true;
            self.init_seq(seq);
            self.max_seq = seq.wrapping_sub(1);
            self.probation = self.min_sequential;
        }
        let udelta = seq.wrapping_sub(self.max_seq);
        let outcome = if self.probation > 0 {
            if seq == self.max_seq.wrapping_add(1) {
                self.probation -= 1;
                self.max_seq = seq;
                if self.probation > 0 {
                    return SeqOutcome::Probation;
                }
                self.init_seq(seq);
                SeqOutcome::InOrder
            } else {
                self.probation = self.min_sequential - 1;
                self.max_seq = seq;
                return SeqOutcome::Probation;
            }
        } else if udelta < MAX_DROPOUT {
            if seq < self.max_seq {
                self.cycles += u64::from(RTP_SEQ_MOD);
            }
            self.max_seq = seq;
            if udelta == 0 {
                SeqOutcome::Duplicate
            } else if udelta == 1 {
                // The next packet, the common case: the window shifted by
                // one a half at a time (a 128-bit shift by a variable
                // count costs several instructions more).
                let [low, high] = self.window;
                self.window = [low << 1 | 1, high << 1 | low >> 63];
                SeqOutcome::InOrder
            } else {
                let window = self.window().checked_shl(u32::from(udelta)).unwrap_or(0);
                self.set_window(window | 1);
                SeqOutcome::InOrder
            }
        } else if u32::from(udelta) <= RTP_SEQ_MOD - u32::from(MAX_MISORDER) {
            if u32::from(seq) == self.bad_seq {
                self.init_seq(seq);
                SeqOutcome::Resync
            } else {
                self.bad_seq = (u32::from(seq) + 1) & (RTP_SEQ_MOD - 1);
                return SeqOutcome::Jump;
            }
        } else {
            // Behind max_seq by 1..MAX_MISORDER-1, inside the window: bit
            // `behind` of the 128-bit window, tested in its half.
            let behind = u32::from(self.max_seq.wrapping_sub(seq));
            let half = &mut self.window[(behind >> 6) as usize & 1];
            let bit = 1u64 << (behind & 63);
            if *half & bit != 0 {
                SeqOutcome::Duplicate
            } else {
                *half |= bit;
                SeqOutcome::Reordered
            }
        };
        self.received += 1;
        outcome
    }

    /// The duplicate window: bit `i` is `max_seq - i`.
    #[inline]
    fn window(&self) -> u128 {
        u128::from(self.window[0]) | u128::from(self.window[1]) << 64
    }

    #[inline]
    fn set_window(&mut self, window: u128) {
        // The low and high halves.
        self.window = [window as u64, (window >> 64) as u64];
    }

    /// True once probation is over.
    pub fn is_valid(&self) -> bool {
        self.started && self.probation == 0
    }

    /// The highest sequence number seen (16 bits).
    pub fn max_seq(&self) -> u16 {
        self.max_seq
    }

    /// The first sequence number counted (set by `init_seq`).
    pub fn base_seq(&self) -> u16 {
        self.base_seq
    }

    /// How many times the sequence number wrapped since `init_seq`.
    pub fn cycles(&self) -> u64 {
        self.cycles >> 16
    }

    /// The extended highest sequence number: cycles and `max_seq` (A.3).
    /// Reports carry its low 32 bits.
    pub fn extended_max(&self) -> u64 {
        self.cycles + u64::from(self.max_seq)
    }

    /// Packets expected since `init_seq` (A.3); 0 before the source is valid.
    pub fn expected(&self) -> u64 {
        if !self.is_valid() {
            return 0;
        }
        (self.extended_max() + 1).saturating_sub(u64::from(self.base_seq))
    }

    /// Packets counted as received since `init_seq`, duplicates included.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Cumulative loss: expected minus received; negative with duplicates.
    pub fn lost(&self) -> i64 {
        clamp_i64(self.expected()) - clamp_i64(self.received)
    }

    /// Closes a report interval (A.3): the loss since the last call, and the
    /// counts saved for the next one.
    pub fn close_interval(&mut self) -> IntervalLoss {
        let expected = self.expected();
        let expected_interval = clamp_i64(expected) - clamp_i64(self.expected_prior);
        self.expected_prior = expected;
        let received_interval = clamp_i64(self.received) - clamp_i64(self.received_prior);
        self.received_prior = self.received;
        let lost_interval = expected_interval - received_interval;
        let fraction = if expected_interval <= 0 || lost_interval <= 0 {
            0
        } else {
            // lost <= expected here (each counted packet raised received),
            // but clamp anyway rather than wrap to 0 at 256.
            u8::try_from((lost_interval << 8) / expected_interval).unwrap_or(u8::MAX)
        };
        IntervalLoss {
            expected: expected_interval,
            received: received_interval,
            fraction,
        }
    }
}

#[cfg(test)]
#[test]
fn the_hot_fields_come_first() {
    use core::mem::offset_of;
    assert_eq!(offset_of!(SeqState, probation) + 1, HOT_BYTES);
    assert!(offset_of!(SeqState, base_seq) >= HOT_BYTES);
    assert_eq!(core::mem::align_of::<SeqState>(), 8);
}

fn clamp_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The cumulative loss as a report block carries it: 24-bit signed,
/// clamped to `[-0x800000, 0x7fffff]` (A.3).
pub fn clamp_lost_24(lost: i64) -> i32 {
    // The clamp makes the value fit in 24 bits, so it fits in i32.
    lost.clamp(-0x80_0000, 0x7f_ffff) as i32
}
