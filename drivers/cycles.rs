//! Where a polling lcore's cycles go: [`CycleCountingPort`] wraps a port
//! and adds up the TSC cycles spent inside its rx and tx burst calls (the
//! poll-mode driver's share), and the packets those calls moved. With the
//! lcore's total cycles this splits the cost of a packet into the driver's
//! part and the stack's (the idea of testpmd's `--record-core-cycles`).
//!
//! Invariants: two TSC reads per burst call, nothing per packet; buffers
//! pass through untouched. The TSC is not serialising, so a burst's cycles
//! are approximate; over millions of bursts the error averages out.

use crate::clock::TscClock;
use crate::stack::port::{MacAddr, Port};
use arrayvec::ArrayVec;

/// A port that counts the cycles spent in its bursts. See the module
/// documentation.
#[derive(Debug)]
pub struct CycleCountingPort<P> {
    inner: P,
    counts: BurstCycles,
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
}

impl BurstCycles {
    /// One line: `total` cycles of the lcore split per received packet into
    /// the driver's bursts and the rest (the stack and the application).
    pub fn summary(&self, total: u64, hz: u64) -> String {
        let per = |cycles: u64| cycles as f64 / self.received.max(1) as f64;
        let pmd = self.rx_cycles.saturating_add(self.tx_cycles);
        format!(
            "lcore cycles: {total} in {:.2} s for {} packets received, {} sent; per packet \
             received {:.0}: PMD rx+tx bursts {:.0} (rx {:.0}, tx {:.0}), stack and app {:.0}",
            total as f64 / hz.max(1) as f64,
            self.received,
            self.sent,
            per(total),
            per(pmd),
            per(self.rx_cycles),
            per(self.tx_cycles),
            per(total.saturating_sub(pmd)),
        )
    }
}

impl<P: Port> CycleCountingPort<P> {
    /// Wraps `inner`, counts at zero.
    pub fn new(inner: P) -> CycleCountingPort<P> {
        CycleCountingPort {
            inner,
            counts: BurstCycles::default(),
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
        let start = TscClock::cycles();
        let got = self.inner.rx_burst(bufs, max);
        let spent = TscClock::cycles().wrapping_sub(start);
        self.counts.rx_cycles = self.counts.rx_cycles.wrapping_add(spent);
        self.counts.received = self.counts.received.wrapping_add(got as u64);
        got
    }

    #[inline]
    fn tx_burst<const N: usize>(&mut self, bufs: &mut ArrayVec<P::Buf, N>) -> usize {
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

    #[test]
    fn the_summary_splits_cycles_per_received_packet() {
        let counts = BurstCycles {
            rx_cycles: 2_000,
            tx_cycles: 1_000,
            received: 10,
            sent: 10,
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
    }
}
