//! The port a stack lcore polls: a queue wrapped to count what it moves
//! (the per-port figures of `stop` and `show fwd stats all`) and, while a
//! `ping` runs, to take that ping's echo replies out of the received burst
//! before the stack sees them (the stack itself drops echo replies). The
//! ping runs on the home pipeline, but its replies land on whichever
//! queue the device picks, so every port of every pipeline shares one
//! [`Capture`] saying which ping's replies to take.
//!
//! Per packet: nothing while no ping runs (one relaxed load of the
//! capture and one branch per burst); during a ping, a parse of the first
//! header bytes of each received frame. No allocation, no lock.

use arrayvec::ArrayVec;
use dpstack::stack::iface::{parse_echo_reply, EchoReply};
use dpstack::stack::port::{Buf, MacAddr, Port};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// Echo replies one port keeps between two polls of the lcore (more in one
/// poll are counted as received frames and dropped by the stack).
pub const CAPTURED: usize = 32;

/// The identifier of the ping whose echo replies every port takes, if one
/// runs; written by the home pipeline, read by every port once per burst.
#[derive(Debug, Default)]
pub struct Capture(AtomicU32);

/// The bit that says a ping runs (its identifier is the low 16 bits).
const CAPTURING: u32 = 1 << 16;

impl Capture {
    /// Starts (`Some(ident)`) or stops taking echo replies.
    pub fn set(&self, ident: Option<u16>) {
        let value = ident.map_or(0, |ident| CAPTURING | u32::from(ident));
        self.0.store(value, Ordering::Relaxed);
    }

    /// The identifier whose replies are taken, if a ping runs.
    #[inline]
    fn get(&self) -> Option<u16> {
        let value = self.0.load(Ordering::Relaxed);
        (value & CAPTURING != 0).then_some(value as u16)
    }
}

/// A port with counters and an echo-reply trap. See the module
/// documentation.
#[derive(Debug)]
pub struct StackPort<P> {
    inner: P,
    /// Frames received.
    pub rx_packets: u64,
    /// Frames the device accepted for transmission.
    pub tx_packets: u64,
    /// Which ping's replies are taken (shared by every port).
    capture: Arc<Capture>,
    replies: ArrayVec<EchoReply, CAPTURED>,
}

impl<P> StackPort<P> {
    /// Wraps `inner`; it takes the replies `capture` names.
    pub fn new(inner: P, capture: &Arc<Capture>) -> StackPort<P> {
        StackPort {
            inner,
            rx_packets: 0,
            tx_packets: 0,
            capture: Arc::clone(capture),
            replies: ArrayVec::new(),
        }
    }

    /// Starts (`Some(ident)`) or stops taking echo replies, on every port
    /// that shares this one's [`Capture`]; forgets the replies this one
    /// took.
    pub fn capture(&mut self, ident: Option<u16>) {
        self.capture.set(ident);
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
        let Some(ident) = self.capture.get() else {
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
