//! The port the cost examples feed `Interface::poll` with: it receives
//! frames from a [`Frames`] source into recycled buffers and takes
//! transmitted buffers back (counting them), so a run allocates nothing
//! after its start and measures the stack, not a device.

use arrayvec::ArrayVec;
use dpstack_stack::port::memory::MemBuf;
use dpstack_stack::port::{Buf, MacAddr, Port};

/// Where received frames come from.
pub trait Frames {
    /// The next frame to receive.
    fn next_frame(&mut self) -> &[u8];
}

/// See the module documentation.
pub struct RecyclingPort<F> {
    /// Buffers not in the stack's hands.
    pub free: Vec<MemBuf>,
    pub frames: F,
    /// Frames transmitted so far.
    pub sent: u64,
    pub mac: MacAddr,
}

impl<F: Frames> Port for RecyclingPort<F> {
    type Buf = MemBuf;

    fn rx_burst<const N: usize>(&mut self, bufs: &mut ArrayVec<MemBuf, N>, max: usize) -> usize {
        let mut n = 0;
        while n < max && !bufs.is_full() {
            let Some(mut buf) = self.free.pop() else {
                break;
            };
            let len = buf.len();
            buf.trim(len);
            let frame = self.frames.next_frame();
            if let Some(room) = buf.append(frame.len()) {
                room.copy_from_slice(frame);
            }
            bufs.push(buf);
            n += 1;
        }
        n
    }

    fn tx_burst<const N: usize>(&mut self, bufs: &mut ArrayVec<MemBuf, N>) -> usize {
        let n = bufs.len();
        self.sent += n as u64;
        self.free.extend(bufs.drain(..));
        n
    }

    fn alloc(&mut self) -> Option<MemBuf> {
        self.free.pop()
    }

    fn alloc_burst<const N: usize>(
        &mut self,
        bufs: &mut ArrayVec<MemBuf, N>,
        count: usize,
    ) -> bool {
        for _ in 0..count {
            match self.free.pop() {
                Some(b) => bufs.push(b),
                None => return false,
            }
        }
        true
    }

    fn mac(&self) -> MacAddr {
        self.mac
    }
}
