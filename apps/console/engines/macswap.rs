//! `macswap`: swap source and destination MAC, then forward.

use super::{receive, transmit, BurstContext, Engine};
use crate::forward::{Stream, StreamCounters};
use arrayvec::ArrayVec;
use dpstack::simd::swap_eth_addrs;
use dpstack::stack::port::{Buf, Port};

/// The `macswap` engine.
#[derive(Debug, Default)]
pub struct MacSwap;

impl Engine for MacSwap {
    #[inline]
    fn burst<P: Port>(
        &mut self,
        stream: &Stream,
        ctx: &mut BurstContext<'_, P>,
        counters: &mut StreamCounters,
    ) -> usize {
        let mut burst = ArrayVec::new();
        let n = receive(stream, ctx, &mut burst, counters);
        if n == 0 {
            return 0;
        }
        // Packet data is cold: start every packet's first line loading
        // before the first swap, so the misses overlap. Two plain passes
        // also leave no per-packet bounds or look-ahead test in the loop.
        let bufs = burst.as_mut_slice();
        for buf in bufs.iter() {
            buf.prefetch();
        }
        for buf in bufs.iter_mut() {
            swap_eth_addrs(buf.data_mut());
        }
        transmit(stream, ctx, &mut burst, counters);
        n
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    #[test]
    fn macswap_swaps_addresses_and_keeps_the_rest() {
        let mut ports = two_ports();
        ports[0].push_rx(&frame([1; 6], [2; 6], 7));
        ports[0].push_rx(&[0xee; 5]);
        let c = run_one(&mut MacSwap, &mut ports);
        assert_eq!((c.rx_packets, c.tx_packets), (2, 2));
        let out = ports[1].take_tx();
        assert_eq!(out[0], frame([2; 6], [1; 6], 7));
        assert_eq!(out[1], vec![0xee; 5], "a runt passes unchanged");
    }
}
