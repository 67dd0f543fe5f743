//! `rxonly`: receive and free (the receive ceiling).

use super::{receive, BurstContext, Engine};
use crate::forward::{Stream, StreamCounters};
use arrayvec::ArrayVec;
use dpstack::stack::port::Port;

/// The `rxonly` engine.
#[derive(Debug, Default)]
pub struct RxOnly;

impl Engine for RxOnly {
    #[inline]
    fn burst<P: Port>(
        &mut self,
        stream: &Stream,
        ctx: &mut BurstContext<'_, P>,
        counters: &mut StreamCounters,
    ) -> usize {
        let mut burst = ArrayVec::new();
        // Dropping the burst returns every buffer to its pool.
        receive(stream, ctx, &mut burst, counters)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    #[test]
    fn rxonly_frees_what_it_receives() {
        let mut ports = two_ports();
        for i in 0..5 {
            ports[0].push_rx(&frame([1; 6], [2; 6], i));
        }
        let c = run_one(&mut RxOnly, &mut ports);
        assert_eq!((c.rx_packets, c.tx_packets), (5, 0));
        assert_eq!(ports[0].buffers_in_use(), 0);
        assert_eq!(ports[1].tx_pending(), 0);
    }
}
