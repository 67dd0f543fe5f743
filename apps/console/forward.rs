//! The forwarding lcore: streams, port topology, counters and the loop.
//!
//! A stream is "receive on port A, transmit on port B". The topology (testpmd's
//! `--port-topology`) decides the streams. One lcore runs every stream in turn
//! until told to stop; the engine is chosen once, before the loop, and the loop
//! is monomorphized per engine and port type.
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
    /// Index of the receiving port.
    pub rx_port: usize,
    /// Index of the transmitting port.
    pub tx_port: usize,
    /// Destination MAC the `mac` and `txonly` engines write.
    pub peer_mac: MacAddr,
}

/// The default peer of port `port`: 02:00:00:00:00:<port>, as testpmd's.
pub fn default_peer(port: usize) -> MacAddr {
    MacAddr([0x02, 0, 0, 0, 0, port as u8])
}

/// The streams for `ports` ports in `topology`; `peers[i]` is the peer MAC
/// of port i.
pub fn streams(topology: Topology, peers: &[MacAddr]) -> Vec<Stream> {
    let n = peers.len();
    let to = |rx: usize, tx: usize| Stream {
        rx_port: rx,
        tx_port: tx,
        peer_mac: peers[tx],
    };
    match topology {
        Topology::Loop => (0..n).map(|p| to(p, p)).collect(),
        Topology::Chained => (0..n).map(|p| to(p, (p + 1) % n)).collect(),
        Topology::Paired => (0..n)
            .map(|p| {
                let peer = if p % 2 == 0 { p + 1 } else { p - 1 };
                to(p, if peer < n { peer } else { p })
            })
            .collect(),
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

/// Runs the forwarding loop until `stop` is set. `cycles` reads the cycle
/// counter (only called with `record_cycles`). Stack mode is not an engine:
/// it returns at once.
pub fn run<P: Port>(
    config: &ForwardConfig,
    ports: &mut [P],
    streams: &[Stream],
    stats: &ForwardStats,
    stop: &AtomicBool,
    cycles: impl Fn() -> u64,
) {
    let mut lcore = Lcore {
        config,
        streams,
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
                self.stats.publish(i, &counters[i]);
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
                    self.stats.publish(i, &counters[i]);
                }
            }
        }
        for (i, c) in counters.iter().enumerate() {
            self.stats.publish(i, c);
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
            pairs(&streams(Topology::Paired, &peers(2))),
            [(0, 1), (1, 0)]
        );
        assert_eq!(
            pairs(&streams(Topology::Paired, &peers(3))),
            [(0, 1), (1, 0), (2, 2)],
            "an odd last port pairs with itself"
        );
        assert_eq!(
            pairs(&streams(Topology::Chained, &peers(3))),
            [(0, 1), (1, 2), (2, 0)]
        );
        assert_eq!(pairs(&streams(Topology::Loop, &peers(2))), [(0, 0), (1, 1)]);
        let s = streams(Topology::Paired, &peers(2));
        assert_eq!(s[0].peer_mac, default_peer(1), "peer is the tx port's");
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
        let streams = streams(Topology::Paired, &peers(2));
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
        run(&config, &mut ports, &streams, &stats, &stop, cycles);
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
        let streams = streams(Topology::Paired, &peers(2));
        let stats = ForwardStats::new(streams.len());
        let stop = AtomicBool::new(true);
        let config = ForwardConfig {
            mode: ForwardMode::Io,
            burst: 16,
            tx_retries: 0,
            tx_first: true,
            record_cycles: false,
        };
        run(&config, &mut ports, &streams, &stats, &stop, || 0);
        assert_eq!(ports[0].tx_pending(), 16);
        assert_eq!(ports[1].tx_pending(), 16);
        assert_eq!(stats.snapshot()[0].tx_packets, 16);
    }
}
