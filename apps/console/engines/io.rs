//! `io`: forward every packet unchanged (the DPDK I/O ceiling).

use super::Rewrite;
use crate::forward::Stream;
use dpstack::stack::port::Port;

/// The `io` engine.
#[derive(Debug, Default)]
pub struct Io;

impl Rewrite for Io {
    /// Nothing: `io` forwards every packet as it came.
    #[inline]
    fn rewrite<P: Port>(&mut self, _: &Stream, _: &[P], _: &mut [P::Buf]) {}
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
