//! `macswap`: swap source and destination MAC, then forward.

use super::Rewrite;
use crate::forward::Stream;
use dpstack::simd::swap_eth_addrs;
use dpstack::stack::port::{Buf, Port};

/// The `macswap` engine.
#[derive(Debug, Default)]
pub struct MacSwap;

impl Rewrite for MacSwap {
    #[inline]
    fn rewrite<P: Port>(&mut self, _: &Stream, _: &[P], bufs: &mut [P::Buf]) {
        // Packet data is cold: start every packet's first line loading
        // before the first swap, so the misses overlap. Two plain passes
        // also leave no per-packet bounds or look-ahead test in the loop.
        for buf in bufs.iter() {
            buf.prefetch();
        }
        for buf in bufs.iter_mut() {
            swap_eth_addrs(buf.data_mut());
        }
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
