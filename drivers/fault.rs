//! A fault-injecting port: wraps any [`Port`] and, with a seeded generator,
//! drops, duplicates, reorders and delays packets on receive and/or
//! transmit, like a netem qdisc (which this machine's kernel lacks) or
//! smoltcp's `FaultInjector`. Apps take it from the command line
//! (`--faults drop=0.02,dup=0.01,reorder=0.02,delay=1ms,seed=7,dir=rx`), so
//! a peer's traffic meets loss and reordering on its way through.
//!
//! Invariants:
//! - Every packet is accounted for: what enters a faulty direction comes
//!   out exactly once, or twice if duplicated, or is dropped and counted
//!   (`in + duplicated = out + dropped + held`).
//! - A reordered packet is held until a later packet of its direction has
//!   been let through ahead of it, then follows that packet; if traffic
//!   stops it is released after [`REORDER_IDLE_POLLS`] polls that let
//!   nothing through, so nothing is stranded at the end of a stream.
//! - A delayed packet leaves on the first poll at or after its due time.
//! - `rx_burst` appends at most `max` packets (capped by the caller's spare
//!   capacity) and returns how many it appended; ready packets that do not
//!   fit wait in order and go first next time.
//! - A transmit burst is always taken whole: what the device refuses waits
//!   in order and is offered again on the next `tx_burst` or `rx_burst`.
//!   Transmit-side held packets are released by `rx_burst` too (the stack
//!   polls receive every loop, but transmits only when it has something).
//! - At most [`MAX_HELD`] packets are held per direction; past that bound
//!   they are dropped and counted.
//!
//! Owning lcore only. Per burst: no heap allocation (queue capacity is
//! reserved when the port is made), no `dyn` calls, and the clock is read
//! at most once, only when a delay is set. No `unsafe`.

mod held;
mod spec;
#[cfg(test)]
mod tests;

pub use held::MAX_HELD;
pub use spec::{Direction, FaultCounts, FaultSpec};

use crate::stack::port::{Buf, MacAddr, Port, DEFAULT_BURST};
use arrayvec::ArrayVec;
use held::Held;
use std::sync::Arc;
use std::time::Instant;

/// Polls in a row that let nothing through after which reordered packets
/// are released anyway (busy polling: well under a millisecond).
pub const REORDER_IDLE_POLLS: u32 = 1024;

/// What the dice said for one packet.
enum Fate {
    Drop,
    Duplicate,
    Reorder,
    Pass,
}

/// The wrapper. See the module documentation.
pub struct FaultPort<P: Port> {
    inner: P,
    spec: FaultSpec,
    rng: u64,
    rx: Held<P::Buf>,
    tx: Held<P::Buf>,
    counts: Arc<FaultCounts>,
}

impl<P: Port> FaultPort<P> {
    /// Wraps `inner`.
    pub fn new(inner: P, spec: FaultSpec) -> FaultPort<P> {
        let (delay, reorder) = (!spec.delay.is_zero(), spec.reorder > 0.0);
        FaultPort {
            inner,
            rng: spec.seed.max(1),
            rx: Held::new(spec.applies_to_rx(), delay, reorder),
            tx: Held::new(spec.applies_to_tx(), delay, reorder),
            spec,
            counts: Arc::new(FaultCounts::default()),
        }
    }

    /// The counts (clone the `Arc` to read them from another thread).
    pub fn counts(&self) -> &Arc<FaultCounts> {
        &self.counts
    }

    /// Packets held right now (reordered, delayed or waiting for room),
    /// both directions.
    pub fn held_packets(&self) -> usize {
        self.rx.len() + self.tx.len()
    }

    fn uniform(&mut self) -> f64 {
        // xorshift64*: plenty for fault dice.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        (self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn fate(&mut self) -> Fate {
        let roll = self.uniform();
        let s = self.spec;
        if roll < s.drop {
            Fate::Drop
        } else if roll < s.drop + s.duplicate {
            Fate::Duplicate
        } else if roll < s.drop + s.duplicate + s.reorder {
            Fate::Reorder
        } else {
            Fate::Pass
        }
    }

    /// The time, read once per burst, only if packets are delayed.
    fn clock(&self) -> Option<Instant> {
        (!self.spec.delay.is_zero()).then(Instant::now)
    }

    fn held(&mut self, rx: bool) -> &mut Held<P::Buf> {
        if rx {
            &mut self.rx
        } else {
            &mut self.tx
        }
    }

    /// Drops a packet the held queues had no room for, counted.
    fn drop_held(&self, refused: Result<(), P::Buf>) {
        if refused.is_err() {
            FaultCounts::bump(&self.counts.dropped);
        }
    }

    /// Moves what waits and is ready (backlog first, then delayed packets
    /// due by `now`) into `out`, up to `limit` packets.
    fn take_ready<const N: usize>(
        &mut self,
        rx: bool,
        now: Option<Instant>,
        out: &mut ArrayVec<P::Buf, N>,
        limit: usize,
    ) {
        let held = self.held(rx);
        while out.len() < limit {
            let next = match held.pop_backlog() {
                Some(buf) => Some(buf),
                None => now.and_then(|now| held.pop_due(now)),
            };
            match next {
                Some(buf) => out.push(buf),
                None => break,
            }
        }
    }

    /// Lets `buf` through: into `out` while it is under `limit`, else to
    /// the backlog; with a delay, into the delayed queue instead.
    fn emit<const N: usize>(
        &mut self,
        rx: bool,
        buf: P::Buf,
        now: Option<Instant>,
        out: &mut ArrayVec<P::Buf, N>,
        limit: usize,
    ) {
        let delay = self.spec.delay;
        let held = if rx { &mut self.rx } else { &mut self.tx };
        let refused = match now {
            Some(now) => {
                FaultCounts::bump(&self.counts.delayed);
                held.push_delayed(now + delay, buf)
            }
            None if out.len() < limit => {
                out.push(buf);
                Ok(())
            }
            None => held.push_backlog(buf),
        };
        self.drop_held(refused);
    }

    /// Applies the dice to a newly arrived `buf`. Returns true if it (or
    /// its copy) was let through.
    fn judge<const N: usize>(
        &mut self,
        rx: bool,
        buf: P::Buf,
        now: Option<Instant>,
        out: &mut ArrayVec<P::Buf, N>,
        limit: usize,
    ) -> bool {
        match self.fate() {
            Fate::Drop => {
                FaultCounts::bump(&self.counts.dropped);
                false
            }
            Fate::Reorder => {
                FaultCounts::bump(&self.counts.reordered);
                let refused = self.held(rx).push_reordered(buf);
                self.drop_held(refused);
                false
            }
            Fate::Pass => {
                self.emit(rx, buf, now, out, limit);
                true
            }
            Fate::Duplicate => {
                let twin = self.copy(&buf);
                self.emit(rx, buf, now, out, limit);
                if let Some(twin) = twin {
                    FaultCounts::bump(&self.counts.duplicated);
                    self.emit(rx, twin, now, out, limit);
                }
                true
            }
        }
    }

    fn copy(&mut self, buf: &P::Buf) -> Option<P::Buf> {
        let mut copy = self.inner.alloc()?;
        copy.append(buf.len())?.copy_from_slice(buf.data());
        Some(copy)
    }

    /// After a poll: lets the `earlier` reordered packets (held before this
    /// poll) follow if a newer packet was let `through`, or if the poll
    /// was one too many of those that let nothing through.
    fn release_reordered<const N: usize>(
        &mut self,
        rx: bool,
        earlier: usize,
        through: bool,
        now: Option<Instant>,
        out: &mut ArrayVec<P::Buf, N>,
        limit: usize,
    ) {
        let held = self.held(rx);
        if earlier == 0 {
            held.idle_polls = 0;
            return;
        }
        held.idle_polls += 1;
        if !through && held.idle_polls < REORDER_IDLE_POLLS {
            return;
        }
        held.idle_polls = 0;
        for _ in 0..earlier {
            if let Some(buf) = self.held(rx).pop_reordered() {
                self.emit(rx, buf, now, out, limit);
            }
        }
    }

    /// The faulty transmit path: judges `bufs` (taking them all), then
    /// offers the device what is ready, in order, until it refuses.
    fn transmit<const N: usize>(&mut self, bufs: &mut ArrayVec<P::Buf, N>, now: Option<Instant>) {
        let mut out: ArrayVec<P::Buf, N> = ArrayVec::new();
        self.take_ready(false, now, &mut out, N);
        let earlier = self.tx.reordered();
        let mut through = false;
        for buf in bufs.drain(..) {
            through |= self.judge(false, buf, now, &mut out, N);
        }
        self.release_reordered(false, earlier, through, now, &mut out, N);
        while !out.is_empty() {
            self.inner.tx_burst(&mut out);
            if !out.is_empty() {
                // The device is full: the rest waits, in order.
                while let Some(buf) = out.pop() {
                    let refused = self.tx.unpop_backlog(buf);
                    self.drop_held(refused);
                }
                return;
            }
            self.take_ready(false, now, &mut out, N);
        }
    }
}

impl<P: Port> Port for FaultPort<P> {
    type Buf = P::Buf;

    fn rx_burst<const N: usize>(&mut self, bufs: &mut ArrayVec<P::Buf, N>, max: usize) -> usize {
        let now = self.clock();
        if !self.tx.is_empty() {
            // The stack calls tx_burst only when it has something to send.
            self.transmit::<DEFAULT_BURST>(&mut ArrayVec::new(), now);
        }
        if !self.spec.applies_to_rx() {
            return self.inner.rx_burst(bufs, max);
        }
        let start = bufs.len();
        let limit = start + max.min(bufs.remaining_capacity());
        self.take_ready(true, now, bufs, limit);
        let earlier = self.rx.reordered();
        let mut fresh: ArrayVec<P::Buf, N> = ArrayVec::new();
        if bufs.len() < limit {
            self.inner.rx_burst(&mut fresh, limit - bufs.len());
        }
        let mut through = false;
        for buf in fresh {
            through |= self.judge(true, buf, now, bufs, limit);
        }
        self.release_reordered(true, earlier, through, now, bufs, limit);
        bufs.len() - start
    }

    fn tx_burst<const N: usize>(&mut self, bufs: &mut ArrayVec<P::Buf, N>) -> usize {
        if !self.spec.applies_to_tx() {
            return self.inner.tx_burst(bufs);
        }
        let taken = bufs.len();
        let now = self.clock();
        self.transmit(bufs, now);
        taken
    }

    fn alloc(&mut self) -> Option<P::Buf> {
        self.inner.alloc()
    }

    fn alloc_burst<const N: usize>(
        &mut self,
        bufs: &mut ArrayVec<P::Buf, N>,
        count: usize,
    ) -> bool {
        self.inner.alloc_burst(bufs, count)
    }

    fn mac(&self) -> MacAddr {
        self.inner.mac()
    }

    fn alloc_large(&mut self) -> Option<P::Buf> {
        self.inner.alloc_large()
    }
}
