//! `macswap`: swap source and destination MAC, then forward.

use super::{receive, transmit, BurstContext, Engine};
use crate::forward::{Stream, StreamCounters};
use arrayvec::ArrayVec;
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
        for buf in burst.iter_mut() {
            // Runts shorter than an Ethernet header go out unchanged.
            if let Some(header) = buf.data_mut().get_mut(..12) {
                let (dst, src) = header.split_at_mut(6);
                dst.swap_with_slice(src);
            }
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
