//! When first transmissions left, for RACK's time-based loss detection
//! (RFC 8985 6.2). A segment is lost once a segment sent after it has been
//! delivered and a round trip plus the reordering window has passed since
//! it left. New data leaves in sequence order, so a segment sent after
//! another is one at a higher sequence number, and the peer's highest
//! sacked byte says which segments were overtaken; what this keeps is when
//! each range of new data left.
//!
//! The log is a few marks "by this time, `SND.MAX` had reached this
//! sequence number", one per grain of time (a fraction of the RTT), the
//! latest moved forward in place within its grain. A byte's send time is read as
//! the time of the first mark above it: never earlier than it really left,
//! so a loss is declared late by at most a grain, never early. When the
//! log is full the oldest mark goes, and its bytes take the next one's
//! time (later still: the same direction of error).
//!
//! Invariants: bounded ([`MARKS`]); marks rise in both sequence and time;
//! per ACK or segment sent, on the owning lcore. Times are 4-byte
//! [`Stamp`]s: only the time since a recent mark is read back.

use super::seq::Seq;
use crate::time::{Duration, Instant, Stamp};
use arrayvec::ArrayVec;

/// Marks kept (with a grain of a quarter RTT: two round trips of sending).
pub const MARKS: usize = 8;

/// A mark: bytes below `end` had all left by `at`.
#[derive(Debug, Clone, Copy)]
struct Mark {
    end: Seq,
    at: Stamp,
}

/// See the module documentation.
#[derive(Debug, Clone, Default)]
pub struct SendTimes {
    marks: ArrayVec<Mark, MARKS>,
    /// When the latest mark's grain began.
    grain_start: Stamp,
}

impl SendTimes {
    /// New data up to `end` left at `now`; marks are `grain` apart.
    pub fn note(&mut self, end: Seq, now: Instant, grain: Duration) {
        let at = Stamp::of(now);
        if let Some(last) = self.marks.last_mut() {
            if end <= last.end {
                return;
            }
            if self.grain_start.age(now) < grain {
                *last = Mark { end, at };
                return;
            }
        }
        if self.marks.is_full() {
            self.marks.remove(0);
        }
        self.marks.push(Mark { end, at });
        self.grain_start = at;
    }

    /// Forgets what `una` acknowledged.
    pub fn prune(&mut self, una: Seq) {
        let gone = self.marks.iter().take_while(|m| m.end <= una).count();
        self.marks.drain(..gone);
    }

    /// Forgets everything (a timeout went back to `SND.UNA`: what follows
    /// is sent again, later than the marks say).
    pub fn clear(&mut self) {
        self.marks.clear();
    }

    /// RACK's verdict at `now` for the bytes below `overtaken` (the
    /// highest byte delivered: everything below it was sent before it):
    /// every byte below the returned edge left at least `wait` ago (a round
    /// trip and the reordering window) and, unless delivered, is lost. Also
    /// when the next byte below `overtaken` will be, if one is not yet.
    pub fn lost_edge(
        &self,
        overtaken: Seq,
        now: Instant,
        wait: Duration,
    ) -> (Option<Seq>, Option<Instant>) {
        let mut edge = None;
        let mut start: Option<Seq> = None;
        for mark in &self.marks {
            if start.is_some_and(|s| s >= overtaken) {
                break;
            }
            if mark.at.age(now) >= wait {
                edge = Some(mark.end.min(overtaken));
            } else {
                return (edge, Some(mark.at.plus(wait, now)));
            }
            start = Some(mark.end);
        }
        (edge, None)
    }

    /// Marks held now.
    pub fn len(&self) -> usize {
        self.marks.len()
    }

    /// True if none is held.
    pub fn is_empty(&self) -> bool {
        self.marks.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Instant {
        Instant::from_nanos(n * 1_000_000)
    }

    const GRAIN: Duration = Duration::from_millis(5);

    #[test]
    fn bytes_overtaken_are_lost_a_wait_after_they_left_and_not_before() {
        let mut log = SendTimes::default();
        log.note(Seq(1000), ms(0), GRAIN);
        log.note(Seq(2000), ms(2), GRAIN); // within the grain: the same mark
        log.note(Seq(3000), ms(10), GRAIN);
        log.note(Seq(4000), ms(20), GRAIN);
        assert_eq!(log.len(), 3);
        let wait = Duration::from_millis(12);
        // 3500 delivered: bytes up to 2000 left by 2 ms, up to 3000 by 10.
        let (edge, due) = log.lost_edge(Seq(3500), ms(15), wait);
        assert_eq!(edge, Some(Seq(2000)));
        assert_eq!(due, Some(ms(22)), "the bytes of the 10 ms mark, 12 ms on");
        let (edge, due) = log.lost_edge(Seq(3500), ms(22), wait);
        assert_eq!(edge, Some(Seq(3000)));
        assert_eq!(due, Some(ms(32)), "3000..3500 left by 20 ms");
        let (edge, due) = log.lost_edge(Seq(3500), ms(40), wait);
        assert_eq!(
            (edge, due),
            (Some(Seq(3500)), None),
            "never above what overtook"
        );
        // Nothing overtaken below 1000: nothing lost, nothing to wait for.
        assert_eq!(log.lost_edge(Seq(1000), ms(3), wait), (None, Some(ms(14))));
    }

    #[test]
    fn a_full_log_lets_the_oldest_go_and_its_bytes_take_a_later_time() {
        let mut log = SendTimes::default();
        for i in 0..MARKS as u32 + 2 {
            log.note(Seq(1000 * (i + 1)), ms(u64::from(i) * 10), GRAIN);
        }
        assert_eq!(log.len(), MARKS);
        // Bytes below 3000 left by 20 ms (the marks of 0 and 10 ms went).
        let wait = Duration::from_millis(15);
        assert_eq!(log.lost_edge(Seq(9000), ms(30), wait).0, None);
        assert_eq!(log.lost_edge(Seq(9000), ms(35), wait).0, Some(Seq(3000)));
        log.prune(Seq(3000));
        assert_eq!(log.len(), MARKS - 1);
        log.clear();
        assert!(log.is_empty());
        assert_eq!(log.lost_edge(Seq(9000), ms(100), wait), (None, None));
    }
}
