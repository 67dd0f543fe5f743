//! A fault-injecting port: wraps any [`Port`] and, with a seeded generator,
//! drops, duplicates, reorders and delays packets on receive and/or
//! transmit, like a netem qdisc (which this machine's kernel lacks) or
//! smoltcp's `FaultInjector`. Apps take it from the command line
//! (`--faults drop=0.02,dup=0.01,reorder=0.02,delay=1ms,seed=7`), so a
//! kernel peer's traffic meets loss and reordering on its way through.
//!
//! Held packets (reordered: until the next burst; delayed: until their
//! time) live in a bounded queue per direction; past its bound they are
//! dropped and counted. A transmit burst is always taken whole: what the
//! device refuses waits in the queue too. Reads the clock once per burst
//! (only when a delay is set). No `unsafe`.

use crate::stack::port::{Buf, MacAddr, Port};
use arrayvec::ArrayVec;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Packets held per direction at most.
const MAX_HELD: usize = 4096;

/// Which way faults apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Received packets only.
    Rx,
    /// Transmitted packets only.
    Tx,
    /// Both ways.
    Both,
}

/// What to inject. Probabilities are per packet, in `0.0..=1.0`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FaultSpec {
    /// Chance a packet is dropped.
    pub drop: f64,
    /// Chance a packet is sent (or received) twice.
    pub duplicate: f64,
    /// Chance a packet is held back behind the next burst.
    pub reorder: f64,
    /// Every packet waits this long (zero: no delay).
    pub delay: Duration,
    /// The generator's seed (same seed, same faults for the same traffic).
    pub seed: u64,
    /// Where faults apply.
    pub direction: Direction,
}

impl Default for FaultSpec {
    fn default() -> FaultSpec {
        FaultSpec {
            drop: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
            delay: Duration::ZERO,
            seed: 1,
            direction: Direction::Both,
        }
    }
}

impl core::str::FromStr for FaultSpec {
    type Err = String;

    /// `drop=P,dup=P,reorder=P,delay=Nms|Nus,seed=N,dir=rx|tx|both`, any
    /// subset, in any order.
    fn from_str(text: &str) -> Result<FaultSpec, String> {
        let mut spec = FaultSpec::default();
        for item in text.split(',').filter(|i| !i.is_empty()) {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| format!("'{item}' is not KEY=VALUE (e.g. drop=0.01)"))?;
            let chance = || -> Result<f64, String> {
                match value.parse::<f64>() {
                    Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
                    _ => Err(format!("{key}={value}: give a probability from 0 to 1")),
                }
            };
            match key {
                "drop" => spec.drop = chance()?,
                "dup" | "duplicate" => spec.duplicate = chance()?,
                "reorder" => spec.reorder = chance()?,
                "delay" => spec.delay = parse_duration(value)?,
                "seed" => {
                    spec.seed = value
                        .parse()
                        .map_err(|_| format!("seed={value}: give a number"))?;
                }
                "dir" => {
                    spec.direction = match value {
                        "rx" => Direction::Rx,
                        "tx" => Direction::Tx,
                        "both" => Direction::Both,
                        _ => return Err(format!("dir={value}: give rx, tx or both")),
                    };
                }
                _ => {
                    return Err(format!(
                        "unknown fault '{key}': use drop, dup, reorder, delay, seed, dir"
                    ))
                }
            }
        }
        if spec.drop + spec.duplicate + spec.reorder > 1.0 {
            return Err("drop + dup + reorder must not exceed 1".into());
        }
        Ok(spec)
    }
}

fn parse_duration(value: &str) -> Result<Duration, String> {
    let bad = || format!("delay={value}: give a time like 500us or 2ms");
    if let Some(n) = value.strip_suffix("us") {
        return n.parse().map(Duration::from_micros).map_err(|_| bad());
    }
    if let Some(n) = value.strip_suffix("ms") {
        return n.parse().map(Duration::from_millis).map_err(|_| bad());
    }
    Err(bad())
}

/// What was injected so far (readable from any thread).
#[derive(Debug, Default)]
pub struct FaultCounts {
    /// Packets dropped (including past the held bound).
    pub dropped: AtomicU64,
    /// Extra copies made.
    pub duplicated: AtomicU64,
    /// Packets held behind later ones.
    pub reordered: AtomicU64,
    /// Packets delayed.
    pub delayed: AtomicU64,
}

impl FaultCounts {
    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// "dropped N duplicated N reordered N delayed N".
    pub fn summary(&self) -> String {
        format!(
            "dropped {} duplicated {} reordered {} delayed {}",
            self.dropped.load(Ordering::Relaxed),
            self.duplicated.load(Ordering::Relaxed),
            self.reordered.load(Ordering::Relaxed),
            self.delayed.load(Ordering::Relaxed)
        )
    }
}

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
    rx_held: VecDeque<(Instant, P::Buf)>,
    tx_held: VecDeque<(Instant, P::Buf)>,
    counts: Arc<FaultCounts>,
}

impl<P: Port> FaultPort<P> {
    /// Wraps `inner`.
    pub fn new(inner: P, spec: FaultSpec) -> FaultPort<P> {
        FaultPort {
            inner,
            rng: spec.seed.max(1),
            spec,
            rx_held: VecDeque::new(),
            tx_held: VecDeque::new(),
            counts: Arc::new(FaultCounts::default()),
        }
    }

    /// The counts (clone the `Arc` to read them from another thread).
    pub fn counts(&self) -> &Arc<FaultCounts> {
        &self.counts
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

    fn copy(&mut self, buf: &P::Buf) -> Option<P::Buf> {
        let mut copy = self.inner.alloc()?;
        copy.append(buf.len())?.copy_from_slice(buf.data());
        Some(copy)
    }

    /// Applies the dice to `buf`: what passes now goes to `ready`, the rest
    /// to `held` (at `release`).
    fn judge(&mut self, buf: P::Buf, now: Instant, ready: &mut Vec<P::Buf>, rx: bool) {
        let delay = self.spec.delay;
        let fate = self.fate();
        let counts = Arc::clone(&self.counts);
        let hold = |this: &mut Self, buf: P::Buf, at: Instant| {
            let held = if rx {
                &mut this.rx_held
            } else {
                &mut this.tx_held
            };
            if held.len() >= MAX_HELD {
                FaultCounts::bump(&counts.dropped);
                return;
            }
            held.push_back((at, buf));
        };
        match fate {
            Fate::Drop => FaultCounts::bump(&self.counts.dropped),
            Fate::Reorder => {
                FaultCounts::bump(&self.counts.reordered);
                // Released after this burst's others.
                hold(self, buf, now + delay);
            }
            Fate::Duplicate | Fate::Pass => {
                let twin = match fate {
                    Fate::Duplicate => self.copy(&buf),
                    _ => None,
                };
                if twin.is_some() {
                    FaultCounts::bump(&self.counts.duplicated);
                }
                for b in core::iter::once(buf).chain(twin) {
                    if delay.is_zero() {
                        ready.push(b);
                    } else {
                        FaultCounts::bump(&self.counts.delayed);
                        hold(self, b, now + delay);
                    }
                }
            }
        }
    }

    fn applies(&self, rx: bool) -> bool {
        match self.spec.direction {
            Direction::Both => true,
            Direction::Rx => rx,
            Direction::Tx => !rx,
        }
    }

    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// Moves held packets due by `now` to the back of `ready`.
fn release<B>(held: &mut VecDeque<(Instant, B)>, now: Instant, ready: &mut Vec<B>) {
    while held.front().is_some_and(|(at, _)| *at <= now) {
        if let Some((_, buf)) = held.pop_front() {
            ready.push(buf);
        }
    }
}

impl<P: Port> Port for FaultPort<P> {
    type Buf = P::Buf;

    fn rx_burst<const N: usize>(&mut self, bufs: &mut ArrayVec<P::Buf, N>, max: usize) -> usize {
        if !self.applies(true) {
            return self.inner.rx_burst(bufs, max);
        }
        let now = self.now();
        let mut ready = Vec::new();
        release(&mut self.rx_held, now, &mut ready);
        let mut fresh: ArrayVec<P::Buf, N> = ArrayVec::new();
        self.inner.rx_burst(&mut fresh, max);
        for buf in fresh {
            self.judge(buf, now, &mut ready, true);
        }
        let room = max.min(bufs.remaining_capacity());
        let mut given = 0;
        let mut rest = ready.into_iter();
        for buf in rest.by_ref().take(room) {
            bufs.push(buf);
            given += 1;
        }
        // What does not fit waits for the next burst, in order.
        for (i, buf) in rest.enumerate() {
            self.rx_held.insert(i, (now, buf));
        }
        given
    }

    fn tx_burst<const N: usize>(&mut self, bufs: &mut ArrayVec<P::Buf, N>) -> usize {
        if !self.applies(false) {
            return self.inner.tx_burst(bufs);
        }
        let taken = bufs.len();
        let now = self.now();
        let mut ready = Vec::new();
        release(&mut self.tx_held, now, &mut ready);
        for buf in bufs.drain(..) {
            self.judge(buf, now, &mut ready, false);
        }
        let mut out: ArrayVec<P::Buf, N> = ArrayVec::new();
        let mut pending = ready.into_iter();
        loop {
            while !out.is_full() {
                match pending.next() {
                    Some(buf) => out.push(buf),
                    None => break,
                }
            }
            if out.is_empty() {
                break;
            }
            self.inner.tx_burst(&mut out);
            if !out.is_empty() {
                // The device is full: the rest waits for the next burst.
                for (i, buf) in out.drain(..).chain(pending.by_ref()).enumerate() {
                    self.tx_held.insert(i, (now, buf));
                }
                break;
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stack::port::memory::{MemPort, MemPortConfig};

    fn spec(text: &str) -> FaultSpec {
        text.parse().unwrap()
    }

    #[test]
    fn specs_parse_with_clear_errors() {
        let s = spec("drop=0.1,dup=0.05,reorder=0.2,delay=3ms,seed=9,dir=rx");
        assert_eq!(
            (s.drop, s.duplicate, s.reorder, s.delay, s.seed, s.direction),
            (0.1, 0.05, 0.2, Duration::from_millis(3), 9, Direction::Rx)
        );
        for (bad, says) in [
            ("drop=2", "probability"),
            ("loss=0.1", "unknown fault"),
            ("delay=5", "500us or 2ms"),
            ("drop", "KEY=VALUE"),
            ("drop=0.6,dup=0.6", "must not exceed"),
        ] {
            let error = bad.parse::<FaultSpec>().unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }

    /// Sends `count` numbered frames through a faulty transmit side and
    /// returns the numbers that came out, in order.
    fn through(spec: FaultSpec, count: u16) -> (Vec<u16>, Arc<FaultCounts>) {
        let inner = MemPort::new(MemPortConfig::default());
        let mut port = FaultPort::new(inner, spec);
        let counts = Arc::clone(port.counts());
        let mut seen = Vec::new();
        for chunk in (0..count).collect::<Vec<_>>().chunks(8) {
            let mut burst: ArrayVec<_, 32> = ArrayVec::new();
            for &n in chunk {
                let mut buf = port.alloc().unwrap();
                buf.append(2).unwrap().copy_from_slice(&n.to_be_bytes());
                burst.push(buf);
            }
            assert_eq!(port.tx_burst(&mut burst), chunk.len());
            assert!(burst.is_empty(), "always taken whole");
            for frame in port.inner.take_tx() {
                seen.push(u16::from_be_bytes([frame[0], frame[1]]));
            }
        }
        (seen, counts)
    }

    #[test]
    fn the_same_seed_gives_the_same_faults() {
        let s = spec("drop=0.1,dup=0.1,reorder=0.1,seed=42");
        let (first, counts) = through(s, 400);
        let (second, _) = through(s, 400);
        assert_eq!(first, second);
        let dropped = counts.dropped.load(Ordering::Relaxed);
        let duplicated = counts.duplicated.load(Ordering::Relaxed);
        assert!((20..=60).contains(&dropped), "about 10% of 400: {dropped}");
        assert!((20..=60).contains(&duplicated), "{duplicated}");
        assert!(counts.reordered.load(Ordering::Relaxed) > 10);
        // Reordering shows: some number comes after a larger one.
        assert!(first.windows(2).any(|w| w[0] > w[1]));
    }

    #[test]
    fn no_faults_change_nothing() {
        let (seen, counts) = through(FaultSpec::default(), 100);
        assert_eq!(seen, (0..100).collect::<Vec<_>>());
        assert_eq!(
            counts.summary(),
            "dropped 0 duplicated 0 reordered 0 delayed 0"
        );
    }
}
