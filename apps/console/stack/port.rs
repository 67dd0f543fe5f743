//! The port the stack lcore polls: a queue wrapped to count what it moves
//! (the per-port figures of `stop` and `show fwd stats all`) and, while a
//! `ping` runs, to take that ping's echo replies out of the received burst
//! before the stack sees them (the stack itself drops echo replies).
//!
//! Per packet: nothing while no ping runs (one branch per burst); during a
//! ping, a parse of the first header bytes of each received frame. No
//! allocation, no lock.

use arrayvec::ArrayVec;
use dpstack::stack::iface::{parse_echo_reply, EchoReply};
use dpstack::stack::port::{Buf, MacAddr, Port};

/// Echo replies one port keeps between two polls of the lcore (more in one
/// poll are counted as received frames and dropped by the stack).
pub const CAPTURED: usize = 32;

/// A port with counters and an echo-reply trap. See the module
/// documentation.
#[derive(Debug)]
pub struct StackPort<P> {
    inner: P,
    /// Frames received.
    pub rx_packets: u64,
    /// Frames the device accepted for transmission.
    pub tx_packets: u64,
    /// The identifier of the ping whose replies are taken, if one runs.
    capture: Option<u16>,
    replies: ArrayVec<EchoReply, CAPTURED>,
}

impl<P> StackPort<P> {
    /// Wraps `inner`.
    pub fn new(inner: P) -> StackPort<P> {
        StackPort {
            inner,
            rx_packets: 0,
            tx_packets: 0,
            capture: None,
            replies: ArrayVec::new(),
        }
    }

    /// Starts (`Some(ident)`) or stops taking echo replies.
    pub fn capture(&mut self, ident: Option<u16>) {
        self.capture = ident;
        self.replies.clear();
    }

    /// The echo replies taken since the last call.
    pub fn take_replies(&mut self) -> impl Iterator<Item = EchoReply> + '_ {
        self.replies.drain(..)
    }

    /// The wrapped port.
    #[cfg(test)]
    pub fn inner_mut(&mut self) -> &mut P {
        &mut self.inner
    }
}

impl<P: Port> Port for StackPort<P> {
    type Buf = P::Buf;

    #[inline]
    fn rx_burst<const N: usize>(&mut self, bufs: &mut ArrayVec<P::Buf, N>, max: usize) -> usize {
        let start = bufs.len();
        let got = self.inner.rx_burst(bufs, max);
        self.rx_packets += got as u64;
        let Some(ident) = self.capture else {
            return got;
        };
        let mut i = start;
        while i < bufs.len() {
            match parse_echo_reply(bufs[i].data()) {
                Some(reply) if reply.ident == ident && !self.replies.is_full() => {
                    self.replies.push(reply);
                    drop(bufs.remove(i));
                }
                _ => i += 1,
            }
        }
        bufs.len() - start
    }

    #[inline]
    fn tx_burst<const N: usize>(&mut self, bufs: &mut ArrayVec<P::Buf, N>) -> usize {
        let sent = self.inner.tx_burst(bufs);
        self.tx_packets += sent as u64;
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
