//! Where a polling lcore's cycles go: [`CycleCountingPort`] wraps a port
//! and adds up the TSC cycles spent inside its rx and tx burst calls (the
//! poll-mode driver's share), and the packets those calls moved. With the
//! lcore's total cycles this splits the cost of a packet into the driver's
//! part and the stack's (the idea of testpmd's `--record-core-cycles`).
//!
//! When the port is not saturated most polls come back empty, and the
//! lcore's total cycles say little about a packet's cost. So the port also
//! counts *busy* cycles: from the start of an rx burst that returned packets
//! to the start of the next rx burst (that poll's whole work: the driver,
//! the stack, the application and the tx bursts), as testpmd counts only
//! the forwarding calls that received packets. Busy cycles divided by the
//! packets received is a packet's cost at the traffic's burst sizes, and
//! busy cycles over total cycles is the share of the core the traffic uses.
//!
//! Counting can be off ([`CycleCountingPort::counting`]): an app that
//! offers it runs one loop over wrapped ports either way.
//!
//! Invariants: two TSC reads per burst call when counting (none when
//! not), nothing per packet; buffers pass through untouched. The TSC is not serialising, so a burst's cycles
//! are approximate; over millions of bursts the error averages out.

use crate::clock::TscClock;
use crate::stack::port::{MacAddr, Port};
use arrayvec::ArrayVec;

/// A port that counts the cycles spent in its bursts. See the module
/// documentation.
#[derive(Debug)]
pub struct CycleCountingPort<P> {
    inner: P,
    enabled: bool,
    counts: BurstCycles,
    /// When the last rx burst started, and whether it returned packets.
    last_rx_start: u64,
    last_rx_got: bool,
}

/// What a [`CycleCountingPort`] counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BurstCycles {
    /// Cycles inside rx burst calls.
    pub rx_cycles: u64,
    /// Cycles inside tx burst calls.
    pub tx_cycles: u64,
    /// Packets the rx bursts returned.
    pub received: u64,
    /// Packets the tx bursts accepted.
    pub sent: u64,
    /// Cycles of the polls whose rx burst returned packets: from that rx
    /// burst's start to the next one's.
    pub busy_cycles: u64,
    /// Cycles inside the rx bursts that returned packets.
    pub busy_rx_cycles: u64,
}

impl BurstCycles {
    /// One line: `total` cycles of the lcore split per received packet into
    /// the driver's bursts and the rest (the stack and the application).
    pub fn summary(&self, total: u64, hz: u64) -> String {
        let per = |cycles: u64| cycles as f64 / self.received.max(1) as f64;
        let pmd = self.rx_cycles.saturating_add(self.tx_cycles);
        let busy_pmd = self.busy_rx_cycles.saturating_add(self.tx_cycles);
        format!(
            "lcore cycles: {total} in {:.2} s for {} packets received, {} sent; per packet \
             received {:.0}: PMD rx+tx bursts {:.0} (rx {:.0}, tx {:.0}), stack and app {:.0}; \
             busy polls ({:.1}% of the cycles): per packet {:.0}, of which PMD {:.0}, \
             stack and app {:.0}",
            total as f64 / hz.max(1) as f64,
            self.received,
            self.sent,
            per(total),
            per(pmd),
            per(self.rx_cycles),
            per(self.tx_cycles),
            per(total.saturating_sub(pmd)),
            100.0 * self.busy_cycles as f64 / total.max(1) as f64,
            per(self.busy_cycles),
            per(busy_pmd),
            per(self.busy_cycles.saturating_sub(busy_pmd)),
        )
    }
}

impl<P: Port> CycleCountingPort<P> {
    /// Wraps `inner`, counts at zero.
    pub fn new(inner: P) -> CycleCountingPort<P> {
        CycleCountingPort::counting(inner, true)
    }

    /// `inner`, its bursts' cycles counted only if `enabled` (otherwise
    /// each burst costs one predictable branch more).
    pub fn counting(inner: P, enabled: bool) -> CycleCountingPort<P> {
        CycleCountingPort {
            inner,
            enabled,
            counts: BurstCycles::default(),
            last_rx_start: 0,
            last_rx_got: false,
        }
    }

    /// The counts so far.
    pub fn counts(&self) -> BurstCycles {
        self.counts
    }
}

impl<P: Port> Port for CycleCountingPort<P> {
    type Buf = P::Buf;

    #[inline]
    fn rx_burst<const N: usize>(&mut self, bufs: &mut ArrayVec<P::Buf, N>, max: usize) -> usize {
        if !self.enabled {
            return self.inner.rx_burst(bufs, max);
        }
        let start = TscClock::cycles();
        if self.last_rx_got {
            let poll = start.wrapping_sub(self.last_rx_start);
            self.counts.busy_cycles = self.counts.busy_cycles.wrapping_add(poll);
        }
        let got = self.inner.rx_burst(bufs, max);
        let spent = TscClock::cycles().wrapping_sub(start);
        self.counts.rx_cycles = self.counts.rx_cycles.wrapping_add(spent);
        self.counts.received = self.counts.received.wrapping_add(got as u64);
        self.last_rx_start = start;
        self.last_rx_got = got > 0;
        if self.last_rx_got {
            self.counts.busy_rx_cycles = self.counts.busy_rx_cycles.wrapping_add(spent);
        }
        got
    }

    #[inline]
    fn tx_burst<const N: usize>(&mut self, bufs: &mut ArrayVec<P::Buf, N>) -> usize {
        if !self.enabled {
            return self.inner.tx_burst(bufs);
        }
        let start = TscClock::cycles();
        let sent = self.inner.tx_burst(bufs);
        let spent = TscClock::cycles().wrapping_sub(start);
        self.counts.tx_cycles = self.counts.tx_cycles.wrapping_add(spent);
        self.counts.sent = self.counts.sent.wrapping_add(sent as u64);
        sent
    }

    #[inline]
    fn alloc(&mut self) -> Option<P::Buf> {
        self.inner.alloc()
    }

    #[inline]
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
    use crate::stack::port::memory::{MemBuf, MemPort, MemPortConfig};

    #[test]
    fn the_summary_splits_cycles_per_received_packet() {
        let counts = BurstCycles {
            rx_cycles: 2_000,
            tx_cycles: 1_000,
            received: 10,
            sent: 10,
            busy_cycles: 5_000,
            busy_rx_cycles: 1_500,
        };
        let line = counts.summary(10_000, 1_000);
        assert!(line.contains("10 packets received, 10 sent"), "{line}");
        assert!(line.contains("per packet received 1000"), "{line}");
        assert!(
            line.contains("PMD rx+tx bursts 300 (rx 200, tx 100)"),
            "{line}"
        );
        assert!(line.contains("stack and app 700"), "{line}");
        assert!(line.contains("in 10.00 s"), "{line}");
        assert!(
            line.contains(
                "busy polls (50.0% of the cycles): per packet 500, of which PMD 250, stack and app 250"
            ),
            "{line}"
        );
    }

    fn spin(cycles: u64) {
        let start = TscClock::cycles();
        while TscClock::cycles().wrapping_sub(start) < cycles {
            std::hint::spin_loop();
        }
    }

    #[test]
    fn busy_cycles_run_from_a_burst_with_packets_to_the_next_burst_and_skip_empty_polls() {
        let mut inner = MemPort::new(MemPortConfig::default());
        for _ in 0..3 {
            assert!(inner.push_rx(&[0u8; 60]));
        }
        let mut port = CycleCountingPort::new(inner);
        let mut bufs: ArrayVec<MemBuf, 8> = ArrayVec::new();
        assert_eq!(port.rx_burst(&mut bufs, 8), 3);
        spin(20_000); // the poll's work on the three packets
        assert_eq!(port.rx_burst(&mut ArrayVec::<MemBuf, 8>::new(), 8), 0);
        let after_work = port.counts().busy_cycles;
        spin(2_000_000); // idle: an empty poll's wait
        assert_eq!(port.rx_burst(&mut ArrayVec::<MemBuf, 8>::new(), 8), 0);
        let counts = port.counts();
        assert!(after_work >= 20_000, "{counts:?}");
        assert_eq!(counts.busy_cycles, after_work, "empty polls are not busy");
        assert!(counts.busy_rx_cycles > 0 && counts.busy_rx_cycles < counts.rx_cycles);
        assert_eq!(counts.received, 3);
    }

    #[test]
    fn a_port_not_counting_passes_bursts_through_and_counts_nothing() {
        let mut inner = MemPort::new(MemPortConfig::default());
        for _ in 0..2 {
            assert!(inner.push_rx(&[0u8; 60]));
        }
        let mut port = CycleCountingPort::counting(inner, false);
        let mut bufs: ArrayVec<MemBuf, 8> = ArrayVec::new();
        assert_eq!(port.rx_burst(&mut bufs, 8), 2);
        assert_eq!(port.tx_burst(&mut bufs), 2);
        assert_eq!(port.counts(), BurstCycles::default());
    }
}
