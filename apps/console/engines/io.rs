//! `io`: forward every packet unchanged (the DPDK I/O ceiling).

use super::{receive, transmit, BurstContext, Engine};
use crate::forward::{Stream, StreamCounters};
use arrayvec::ArrayVec;
use dpstack::stack::port::Port;

/// The `io` engine.
#[derive(Debug, Default)]
pub struct Io;

impl Engine for Io {
    #[inline]
    fn burst<P: Port>(
        &mut self,
        stream: &Stream,
        ctx: &mut BurstContext<'_, P>,
        counters: &mut StreamCounters,
    ) -> usize {
        let mut burst = ArrayVec::new();
        let n = receive(stream, ctx, &mut burst, counters);
        if n > 0 {
            transmit(stream, ctx, &mut burst, counters);
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    #[test]
    fn io_forwards_frames_unchanged_to_the_peer_port() {
        let mut ports = two_ports();
        let frames: Vec<Vec<u8>> = (0..3).map(|i| frame([1; 6], [2; 6], i)).collect();
        for f in &frames {
            ports[0].push_rx(f);
        }
        let c = run_one(&mut Io, &mut ports);
        assert_eq!((c.rx_packets, c.tx_packets, c.tx_dropped), (3, 3, 0));
        assert_eq!(ports[1].take_tx(), frames);
        assert_eq!(ports[0].tx_pending(), 0);
    }
}
