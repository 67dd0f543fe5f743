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
        // Packet data is cold: keep loads for the next packets in flight
        // while swapping this one.
        for buf in burst.iter().take(PREFETCH_AHEAD) {
            buf.prefetch();
        }
        for i in 0..burst.len() {
            if let Some(ahead) = burst.get(i + PREFETCH_AHEAD) {
                ahead.prefetch();
            }
            swap_macs(burst[i].data_mut());
        }
        transmit(stream, ctx, &mut burst, counters);
        n
    }
}

/// How many packets ahead the loop prefetches.
const PREFETCH_AHEAD: usize = 4;

/// Swaps destination and source MAC in place. Frames of 16 bytes or more are
/// swapped as one 128-bit word (one load, one store); shorter frames byte by
/// byte; runts shorter than 12 bytes are left as they are.
#[inline]
fn swap_macs(frame: &mut [u8]) {
    const MAC_BITS: u32 = 48;
    const MAC_MASK: u128 = (1 << MAC_BITS) - 1;
    if let Some(word) = frame.first_chunk_mut::<16>() {
        let x = u128::from_le_bytes(*word);
        let dst = x & MAC_MASK;
        let src = (x >> MAC_BITS) & MAC_MASK;
        let rest = x & !((MAC_MASK << MAC_BITS) | MAC_MASK);
        *word = (rest | (dst << MAC_BITS) | src).to_le_bytes();
    } else if let Some(header) = frame.get_mut(..12) {
        let (dst, src) = header.split_at_mut(6);
        dst.swap_with_slice(src);
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

    #[test]
    fn short_and_long_frames_swap_the_same_way() {
        let mut short: Vec<u8> = (0..13).collect();
        swap_macs(&mut short);
        assert_eq!(short, [6, 7, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 12]);
        let mut long: Vec<u8> = (0..17).collect();
        swap_macs(&mut long);
        assert_eq!(
            long,
            [6, 7, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 12, 13, 14, 15, 16]
        );
    }
}
