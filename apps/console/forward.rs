//! The forwarding lcore: streams, port topology, counters and the loop.
//!
//! A stream is "receive on queue q of port A, transmit on queue q of port B".
//! The topology (testpmd's `--port-topology`) pairs the ports; with several
//! queues each queue of each port is a stream, queue-major, as testpmd's RSS
//! configuration lays them out. Streams are dealt to the forwarding lcores in
//! contiguous blocks ([`lcore_blocks`], testpmd's rule), and each lcore takes
//! the queue halves its streams use ([`LcorePlan`]), so no two lcores ever
//! touch one DPDK queue. Each lcore runs its streams in turn until told to
//! stop; the engine is chosen once, before the loop, and the loop is
//! monomorphized per engine and port type.
//!
//! Counters: the lcore keeps plain per-stream counters and publishes them into
//! [`ForwardStats`] (relaxed atomic stores, one writer) after each busy burst,
//! so any thread can read them without slowing the lcore.

use crate::engines::{BurstContext, Engine, ForwardMode, Io, Mac, MacSwap, RxOnly, TxOnly};
use dpstack::stack::port::{MacAddr, Port};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// How ports are paired into streams (testpmd's `--port-topology`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Topology {
    /// 0<->1, 2<->3, ...; an odd last port forwards to itself.
    Paired,
    /// 0->1->2->...->0.
    Chained,
    /// Every port forwards to itself.
    Loop,
}

/// One direction of forwarding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stream {
    /// Index of the receiving port (on an lcore: of its queue handle).
    pub rx_port: usize,
    /// The rx queue.
    pub rx_queue: u16,
    /// Index of the transmitting port (on an lcore: of its queue handle).
    pub tx_port: usize,
    /// The tx queue.
    pub tx_queue: u16,
    /// Destination MAC the `mac` and `txonly` engines write.
    pub peer_mac: MacAddr,
}

/// The default peer of port `port`: 02:00:00:00:00:<port>, as testpmd's.
pub fn default_peer(port: usize) -> MacAddr {
    MacAddr([0x02, 0, 0, 0, 0, port as u8])
}

/// The streams for `peers.len()` ports in `topology`, with `queues` (rx,
/// tx) per port; `peers[i]` is the peer MAC of port i. With several queues
/// both ways there is a stream per port and queue, queue-major, over
/// min(rx, tx) queues (testpmd's RSS layout); otherwise one per port, on
/// queue 0.
pub fn streams(topology: Topology, peers: &[MacAddr], queues: (u16, u16)) -> Vec<Stream> {
    let n = peers.len();
    let tx_of = |p: usize| match topology {
        Topology::Loop => p,
        Topology::Chained => (p + 1) % n,
        Topology::Paired => {
            let peer = if p % 2 == 0 { p + 1 } else { p - 1 };
            if peer < n {
                peer
            } else {
                p
            }
        }
    };
    let per_port = if queues.0 > 1 && queues.1 > 1 {
        queues.0.min(queues.1)
    } else {
        1
    };
    (0..per_port)
        .flat_map(|q| {
            (0..n).map(move |p| Stream {
                rx_port: p,
                rx_queue: q,
                tx_port: tx_of(p),
                tx_queue: q,
                peer_mac: peers[tx_of(p)],
            })
        })
        .collect()
}

/// testpmd's split of `streams` streams over `lcores` lcores: contiguous
/// blocks, the last lcores taking one more when it does not divide; never
/// more lcores than streams.
pub fn lcore_blocks(streams: usize, lcores: usize) -> Vec<std::ops::Range<usize>> {
    let lcores = lcores.clamp(1, streams.max(1));
    let (each, extra) = (streams / lcores, streams % lcores);
    let mut start = 0;
    (0..lcores)
        .map(|l| {
            let len = each + usize::from(l >= lcores - extra);
            let block = start..start + len;
            start += len;
            block
        })
        .collect()
}

/// What one forwarding lcore needs: the queue halves to take, and its
/// streams renumbered onto them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LcorePlan {
    /// (port index, rx queue, tx queue) of each handle to take.
    pub handles: Vec<(usize, Option<u16>, Option<u16>)>,
    /// The lcore's streams, with `rx_port`/`tx_port` indexing `handles`.
    pub streams: Vec<Stream>,
    /// Index of its first stream among all streams (for the counters).
    pub first: usize,
}

impl LcorePlan {
    /// The plan for the streams `block` of `all`.
    pub fn new(all: &[Stream], block: std::ops::Range<usize>) -> LcorePlan {
        let mut handles: Vec<(usize, Option<u16>, Option<u16>)> = Vec::new();
        let mut slot = |port: usize, rx: Option<u16>, tx: Option<u16>| {
            let found = handles.iter().position(|&(p, r, t)| {
                p == port
                    && (rx.is_none() || r.is_none() || r == rx)
                    && (tx.is_none() || t.is_none() || t == tx)
            });
            let i = found.unwrap_or_else(|| {
                handles.push((port, None, None));
                handles.len() - 1
            });
            let h = &mut handles[i];
            h.1 = h.1.or(rx);
            h.2 = h.2.or(tx);
            i
        };
        let first = block.start;
        let streams = all[block]
            .iter()
            .map(|s| {
                let rx = slot(s.rx_port, Some(s.rx_queue), None);
                let tx = slot(s.tx_port, None, Some(s.tx_queue));
                Stream {
                    rx_port: rx,
                    tx_port: tx,
                    ..*s
                }
            })
            .collect();
        LcorePlan {
            handles,
            streams,
            first,
        }
    }
}

/// Counters of one stream, as the lcore keeps them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamCounters {
    /// Packets received.
    pub rx_packets: u64,
    /// Packets the device accepted for transmission.
    pub tx_packets: u64,
    /// Packets dropped because the device refused them after the retries.
    pub tx_dropped: u64,
    /// Bursts that could not be allocated (txonly).
    pub alloc_failed: u64,
    /// TSC cycles spent in bursts that did work (with --record-core-cycles).
    pub busy_cycles: u64,
}

#[derive(Debug, Default)]
#[repr(align(64))]
struct SharedCounters {
    rx_packets: AtomicU64,
    tx_packets: AtomicU64,
    tx_dropped: AtomicU64,
    alloc_failed: AtomicU64,
    busy_cycles: AtomicU64,
}

/// Per-stream counters readable from any thread.
#[derive(Debug)]
pub struct ForwardStats {
    streams: Vec<SharedCounters>,
}

impl ForwardStats {
    /// Zeroed counters for `streams` streams.
    pub fn new(streams: usize) -> ForwardStats {
        ForwardStats {
            streams: (0..streams).map(|_| SharedCounters::default()).collect(),
        }
    }

    /// Publishes stream `stream`'s counters (its lcore only).
    #[inline]
    pub fn publish(&self, stream: usize, c: &StreamCounters) {
        let s = &self.streams[stream];
        s.rx_packets.store(c.rx_packets, Ordering::Relaxed);
        s.tx_packets.store(c.tx_packets, Ordering::Relaxed);
        s.tx_dropped.store(c.tx_dropped, Ordering::Relaxed);
        s.alloc_failed.store(c.alloc_failed, Ordering::Relaxed);
        s.busy_cycles.store(c.busy_cycles, Ordering::Relaxed);
    }

    /// The counters of every stream, as last published.
    pub fn snapshot(&self) -> Vec<StreamCounters> {
        self.streams
            .iter()
            .map(|s| StreamCounters {
                rx_packets: s.rx_packets.load(Ordering::Relaxed),
                tx_packets: s.tx_packets.load(Ordering::Relaxed),
                tx_dropped: s.tx_dropped.load(Ordering::Relaxed),
                alloc_failed: s.alloc_failed.load(Ordering::Relaxed),
                busy_cycles: s.busy_cycles.load(Ordering::Relaxed),
            })
            .collect()
    }
}

/// Settings of one forwarding run.
#[derive(Debug, Clone)]
pub struct ForwardConfig {
    /// The engine.
    pub mode: ForwardMode,
    /// Packets per burst.
    pub burst: usize,
    /// Extra tx attempts before the unsent tail of a burst is dropped.
    pub tx_retries: u32,
    /// Send one txonly burst on every stream before forwarding.
    pub tx_first: bool,
    /// Count TSC cycles spent in busy bursts.
    pub record_cycles: bool,
}

/// Runs the forwarding loop of one lcore until `stop` is set: `streams`
/// index `ports` (the lcore's queue handles) and are streams `first..` of
/// `stats`. `cycles` reads the cycle counter (only called with
/// `record_cycles`). Stack mode is not an engine: it returns at once.
pub fn run<P: Port>(
    config: &ForwardConfig,
    ports: &mut [P],
    (streams, first): (&[Stream], usize),
    stats: &ForwardStats,
    stop: &AtomicBool,
    cycles: impl Fn() -> u64,
) {
    let mut lcore = Lcore {
        config,
        streams,
        first,
        stats,
        stop,
        cycles,
    };
    match config.mode {
        ForwardMode::Io => lcore.run(Io, ports),
        ForwardMode::Mac => lcore.run(Mac, ports),
        ForwardMode::MacSwap => lcore.run(MacSwap, ports),
        ForwardMode::RxOnly => lcore.run(RxOnly, ports),
        ForwardMode::TxOnly => lcore.run(TxOnly::default(), ports),
        // Stack mode has a loop of its own (`crate::stack::run`).
        ForwardMode::Stack => {}
    }
}

struct Lcore<'a, C> {
    config: &'a ForwardConfig,
    streams: &'a [Stream],
    first: usize,
    stats: &'a ForwardStats,
    stop: &'a AtomicBool,
    cycles: C,
}

impl<C: Fn() -> u64> Lcore<'_, C> {
    fn run<P: Port, E: Engine>(&mut self, mut engine: E, ports: &mut [P]) {
        let mut ctx = BurstContext {
            ports,
            burst: self.config.burst,
            tx_retries: self.config.tx_retries,
        };
        let mut counters = vec![StreamCounters::default(); self.streams.len()];
        if self.config.tx_first {
            let mut first = TxOnly::default();
            for (i, stream) in self.streams.iter().enumerate() {
                first.burst(stream, &mut ctx, &mut counters[i]);
                self.stats.publish(self.first + i, &counters[i]);
            }
        }
        let record = self.config.record_cycles;
        while !self.stop.load(Ordering::Relaxed) {
            for (i, stream) in self.streams.iter().enumerate() {
                let start = if record { (self.cycles)() } else { 0 };
                let done = engine.burst(stream, &mut ctx, &mut counters[i]);
                if done > 0 {
                    if record {
                        counters[i].busy_cycles += (self.cycles)().saturating_sub(start);
                    }
                    self.stats.publish(self.first + i, &counters[i]);
                }
            }
        }
        for (i, c) in counters.iter().enumerate() {
            self.stats.publish(self.first + i, c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpstack::stack::port::memory::{MemPort, MemPortConfig};
    use std::sync::Arc;

    fn peers(n: usize) -> Vec<MacAddr> {
        (0..n).map(default_peer).collect()
    }

    fn pairs(streams: &[Stream]) -> Vec<(usize, usize)> {
        streams.iter().map(|s| (s.rx_port, s.tx_port)).collect()
    }

    #[test]
    fn topologies_match_testpmd() {
        assert_eq!(
            pairs(&streams(Topology::Paired, &peers(2), (1, 1))),
            [(0, 1), (1, 0)]
        );
        assert_eq!(
            pairs(&streams(Topology::Paired, &peers(3), (1, 1))),
            [(0, 1), (1, 0), (2, 2)],
            "an odd last port pairs with itself"
        );
        assert_eq!(
            pairs(&streams(Topology::Chained, &peers(3), (1, 1))),
            [(0, 1), (1, 2), (2, 0)]
        );
        assert_eq!(
            pairs(&streams(Topology::Loop, &peers(2), (1, 1))),
            [(0, 0), (1, 1)]
        );
        let s = streams(Topology::Paired, &peers(2), (1, 1));
        assert_eq!(s[0].peer_mac, default_peer(1), "peer is the tx port's");
    }

    #[test]
    fn queues_make_streams_queue_major_and_lcores_take_blocks_as_testpmd() {
        let s = streams(Topology::Paired, &peers(2), (2, 2));
        let layout: Vec<(usize, u16, usize, u16)> = s
            .iter()
            .map(|s| (s.rx_port, s.rx_queue, s.tx_port, s.tx_queue))
            .collect();
        assert_eq!(
            layout,
            [(0, 0, 1, 0), (1, 0, 0, 0), (0, 1, 1, 1), (1, 1, 0, 1)]
        );
        assert_eq!(
            streams(Topology::Paired, &peers(2), (4, 2)).len(),
            4,
            "min(rx, tx) queues"
        );
        assert_eq!(
            streams(Topology::Paired, &peers(2), (2, 1)).len(),
            2,
            "one tx queue: one stream per port, as testpmd"
        );
        assert_eq!(lcore_blocks(4, 2), [0..2, 2..4]);
        assert_eq!(
            lcore_blocks(5, 2),
            [0..2, 2..5],
            "the last lcores take the extra"
        );
        assert_eq!(
            lcore_blocks(2, 4),
            [0..1, 1..2],
            "no more lcores than streams"
        );
        assert_eq!(lcore_blocks(3, 1).len(), 1);
        assert_eq!(lcore_blocks(3, 1)[0], 0..3);
    }

    #[test]
    fn each_lcore_takes_only_the_queue_halves_its_streams_use() {
        // One queue, two lcores: each receives on one port and transmits
        // on the other, so a port's rx and tx halves go to different lcores.
        let all = streams(Topology::Paired, &peers(2), (1, 1));
        let first = LcorePlan::new(&all, 0..1);
        let second = LcorePlan::new(&all, 1..2);
        assert_eq!(first.handles, [(0, Some(0), None), (1, None, Some(0))]);
        assert_eq!(second.handles, [(1, Some(0), None), (0, None, Some(0))]);
        assert_eq!(
            (second.streams[0].rx_port, second.streams[0].tx_port),
            (0, 1)
        );
        assert_eq!(second.first, 1);
        // Two queues on two lcores: each lcore has whole queue pairs.
        let all = streams(Topology::Paired, &peers(2), (2, 2));
        let q1 = LcorePlan::new(&all, 2..4);
        assert_eq!(q1.handles, [(0, Some(1), Some(1)), (1, Some(1), Some(1))]);
        // Every queue half is taken by exactly one lcore.
        for lcores in 1..=4 {
            let mut taken = std::collections::HashSet::new();
            for block in lcore_blocks(all.len(), lcores) {
                for (port, rx, tx) in LcorePlan::new(&all, block).handles {
                    if let Some(q) = rx {
                        assert!(taken.insert((port, "rx", q)), "{lcores} lcores");
                    }
                    if let Some(q) = tx {
                        assert!(taken.insert((port, "tx", q)), "{lcores} lcores");
                    }
                }
            }
        }
    }

    #[test]
    fn the_loop_forwards_until_stopped_and_publishes_counters() {
        let mut ports: Vec<MemPort> = (0..2)
            .map(|_| MemPort::new(MemPortConfig::default()))
            .collect();
        for _ in 0..100 {
            ports[0].push_rx(&[0u8; 64]);
        }
        for _ in 0..40 {
            ports[1].push_rx(&[1u8; 64]);
        }
        let streams = streams(Topology::Paired, &peers(2), (1, 1));
        let stats = ForwardStats::new(streams.len());
        let stop = Arc::new(AtomicBool::new(false));
        let config = ForwardConfig {
            mode: ForwardMode::Io,
            burst: 32,
            tx_retries: 0,
            tx_first: false,
            record_cycles: true,
        };
        // The clock stops the loop once everything has been forwarded.
        let tick = std::cell::Cell::new(0u64);
        let stop_ref = Arc::clone(&stop);
        let cycles = || {
            tick.set(tick.get() + 10);
            if tick.get() > 10_000 {
                stop_ref.store(true, Ordering::Relaxed);
            }
            tick.get()
        };
        run(&config, &mut ports, (&streams, 0), &stats, &stop, cycles);
        let snap = stats.snapshot();
        assert_eq!((snap[0].rx_packets, snap[0].tx_packets), (100, 100));
        assert_eq!((snap[1].rx_packets, snap[1].tx_packets), (40, 40));
        assert!(snap[0].busy_cycles > 0);
        assert_eq!(ports[1].tx_pending(), 100);
        assert_eq!(ports[0].tx_pending(), 40);
    }

    #[test]
    fn tx_first_primes_every_stream() {
        let mut ports: Vec<MemPort> = (0..2)
            .map(|_| MemPort::new(MemPortConfig::default()))
            .collect();
        let streams = streams(Topology::Paired, &peers(2), (1, 1));
        let stats = ForwardStats::new(streams.len());
        let stop = AtomicBool::new(true);
        let config = ForwardConfig {
            mode: ForwardMode::Io,
            burst: 16,
            tx_retries: 0,
            tx_first: true,
            record_cycles: false,
        };
        run(&config, &mut ports, (&streams, 0), &stats, &stop, || 0);
        assert_eq!(ports[0].tx_pending(), 16);
        assert_eq!(ports[1].tx_pending(), 16);
        assert_eq!(stats.snapshot()[0].tx_packets, 16);
    }
}
