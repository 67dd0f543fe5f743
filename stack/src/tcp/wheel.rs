//! The per-lcore timer wheel: a hashed timing wheel of 1 ms ticks. A
//! deadline lands in the slot of its tick modulo the number of slots; each
//! poll walks the slots of the ticks that began since the last walk, once
//! each, and takes the entries that are due, leaving those of later
//! revolutions. Entries of the poll's own tick that are not due yet, and
//! entries inserted for a tick already walked (a deadline now or past), go
//! to a short list every poll looks at: so a past deadline is due at the
//! very next poll, and no slot is walked twice (a slot also holds the far
//! deadlines of later revolutions, TIME-WAIT's among them, thousands when
//! connections churn). Inserting is O(1);
//! expiring costs the entries of the walked slots, not a heap's log n per
//! entry. Entries are never removed early: the owner ignores stale ones (a
//! connection re-arms with its current deadline). A bitmap of the
//! occupied slots lets a walk skip empty ones 64 at a time, so a poll after
//! a long gap costs the slots that hold entries, not all of them.

use crate::time::Instant;

/// Slots in the wheel (with 1 ms ticks, about four seconds per revolution).
const SLOTS: usize = 4096;
/// Nanoseconds per tick.
const TICK_NANOS: u64 = 1_000_000;

/// A wheel of entries `T` with deadlines. See the module documentation.
#[derive(Debug)]
pub struct TimerWheel<T> {
    slots: Vec<Vec<(u64, Instant, T)>>,
    /// One bit per slot, set while the slot holds an entry.
    occupied: [u64; SLOTS / 64],
    /// The next tick to walk.
    current: u64,
    /// Entries due within the tick last walked, or inserted for a tick
    /// already walked: looked at by every poll.
    soon: Vec<(Instant, T)>,
    len: usize,
}

impl<T: Copy> Default for TimerWheel<T> {
    fn default() -> Self {
        TimerWheel::new()
    }
}

impl<T: Copy> TimerWheel<T> {
    /// An empty wheel starting at time zero.
    pub fn new() -> TimerWheel<T> {
        TimerWheel {
            slots: (0..SLOTS).map(|_| Vec::new()).collect(),
            occupied: [0; SLOTS / 64],
            current: 0,
            soon: Vec::new(),
            len: 0,
        }
    }

    /// Entries in the wheel.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if the wheel is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds `entry`, due at `deadline` (a deadline already past is due at
    /// the next walk).
    pub fn insert(&mut self, deadline: Instant, entry: T) {
        let tick = deadline.as_nanos() / TICK_NANOS;
        self.len += 1;
        if tick < self.current {
            self.soon.push((deadline, entry));
            return;
        }
        let index = (tick % SLOTS as u64) as usize;
        self.slots[index].push((tick, deadline, entry));
        self.occupied[index / 64] |= 1 << (index % 64);
    }

    /// Moves every entry due by `now` into `due` as (deadline, entry), in no
    /// particular order.
    pub fn expire(&mut self, now: Instant, due: &mut Vec<(Instant, T)>) {
        let now_tick = now.as_nanos() / TICK_NANOS;
        if self.len == 0 {
            self.current = self.current.max(now_tick + 1);
            return;
        }
        if !self.soon.is_empty() {
            let before = self.soon.len();
            self.soon.retain(|&(deadline, entry)| {
                let ready = deadline <= now;
                if ready {
                    due.push((deadline, entry));
                }
                !ready
            });
            self.len -= before - self.soon.len();
        }
        if now_tick < self.current {
            return;
        }
        // A long gap walks every slot once rather than every tick.
        let walk = (now_tick - self.current + 1).min(SLOTS as u64);
        let mut step = 0;
        while step < walk {
            let index = ((self.current + step) % SLOTS as u64) as usize;
            // Skip to the next occupied slot of this word, or past the word.
            let ahead = self.occupied[index / 64] >> (index % 64);
            if ahead == 0 {
                step += 64 - (index % 64) as u64;
                continue;
            }
            let skip = u64::from(ahead.trailing_zeros());
            step += skip;
            if step >= walk {
                break;
            }
            step += 1;
            let index = index + skip as usize;
            let slot = &mut self.slots[index];
            let before = slot.len();
            let mut kept = 0;
            let mut later_this_tick = 0;
            for i in 0..before {
                let (tick, deadline, entry) = slot[i];
                if tick <= now_tick && deadline <= now {
                    due.push((deadline, entry));
                } else if tick <= now_tick {
                    // This tick's, not due yet: the next polls look.
                    self.soon.push((deadline, entry));
                    later_this_tick += 1;
                } else {
                    slot[kept] = (tick, deadline, entry);
                    kept += 1;
                }
            }
            slot.truncate(kept);
            if kept == 0 {
                self.occupied[index / 64] &= !(1 << (index % 64));
            }
            self.len -= before - kept - later_this_tick;
        }
        self.current = now_tick + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Instant {
        Instant::from_nanos(n * 1_000_000)
    }

    #[test]
    fn entries_come_out_when_due_and_not_before() {
        let mut wheel = TimerWheel::new();
        wheel.insert(ms(5), 'a');
        wheel.insert(Instant::from_nanos(5_500_000), 'b');
        wheel.insert(ms(5000), 'c'); // more than a revolution away
        wheel.insert(ms(0), 'd');
        let mut due = Vec::new();
        wheel.expire(ms(4), &mut due);
        assert_eq!(due, [(ms(0), 'd')]);
        due.clear();
        wheel.expire(ms(5), &mut due);
        assert_eq!(due, [(ms(5), 'a')]);
        due.clear();
        wheel.expire(ms(6), &mut due);
        assert_eq!(due, [(Instant::from_nanos(5_500_000), 'b')]);
        due.clear();
        // A revolution later the far entry's slot comes round again: not yet.
        wheel.expire(ms(4200), &mut due);
        assert!(due.is_empty());
        assert_eq!(wheel.len(), 1);
        wheel.expire(ms(5000), &mut due);
        assert_eq!(due, [(ms(5000), 'c')]);
        assert!(wheel.is_empty());
    }

    #[test]
    fn a_long_gap_walks_each_slot_once_and_misses_nothing() {
        let mut wheel = TimerWheel::new();
        for i in 0..10_000u64 {
            wheel.insert(ms(i * 7), i);
        }
        let mut due = Vec::new();
        wheel.expire(ms(35_000), &mut due);
        assert_eq!(due.len(), 5001, "deadlines 0, 7, ..., 35000 ms");
        due.clear();
        wheel.expire(ms(1_000_000), &mut due);
        assert_eq!(due.len(), 4999);
        assert!(wheel.is_empty());
    }

    #[test]
    fn walks_that_skip_empty_slots_agree_with_a_plain_list() {
        let mut wheel = TimerWheel::new();
        let mut model: Vec<(Instant, u32)> = Vec::new();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |bound: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % bound
        };
        let mut now = 0u64;
        let mut due = Vec::new();
        for round in 0..3_000u32 {
            for k in 0..next(4) as u32 {
                // Deadlines from the past to two revolutions ahead, in ns.
                let at =
                    Instant::from_nanos((now + next(9_000_000_000)).saturating_sub(500_000_000));
                wheel.insert(at, round * 4 + k);
                model.push((at, round * 4 + k));
            }
            // Steps from nothing to past a revolution.
            now += match next(8) {
                0 => 5_000_000_000,
                1 | 2 => next(100_000_000),
                _ => next(3_000_000),
            };
            let at = Instant::from_nanos(now);
            due.clear();
            wheel.expire(at, &mut due);
            due.sort_unstable();
            let mut expected: Vec<_> = model.iter().copied().filter(|&(d, _)| d <= at).collect();
            expected.sort_unstable();
            model.retain(|&(d, _)| d > at);
            assert_eq!(due, expected, "round {round} at {now} ns");
            assert_eq!(wheel.len(), model.len());
        }
    }
}
