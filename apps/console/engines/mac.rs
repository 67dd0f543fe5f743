//! `mac`: set the source MAC to the tx port's and the destination to the
//! stream's peer (testpmd's `--eth-peer`), then forward.

use super::Rewrite;
use crate::forward::Stream;
use dpstack::stack::port::{Buf, Port};

/// The `mac` engine.
#[derive(Debug, Default)]
pub struct Mac;

impl Rewrite for Mac {
    #[inline]
    fn rewrite<P: Port>(&mut self, stream: &Stream, ports: &[P], bufs: &mut [P::Buf]) {
        let src = ports[stream.tx_port].mac().octets();
        let dst = stream.peer_mac.octets();
        for buf in bufs.iter_mut() {
            if let Some(header) = buf.data_mut().get_mut(..12) {
                header[..6].copy_from_slice(&dst);
                header[6..].copy_from_slice(&src);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    #[test]
    fn mac_rewrites_both_addresses() {
        let mut ports = two_ports();
        ports[0].push_rx(&frame([1; 6], [2; 6], 3));
        let c = run_one(&mut Mac, &mut ports);
        assert_eq!(c.tx_packets, 1);
        let stream = stream_0_to_1();
        let out = ports[1].take_tx();
        assert_eq!(
            out[0],
            frame(stream.peer_mac.octets(), ports[1].mac().octets(), 3)
        );
    }
}
