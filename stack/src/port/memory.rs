//! An in-memory [`Port`]: queues of byte buffers, for tests and simulations.
//!
//! Tests push frames into its receive queue, run the code under test, and read
//! what it transmitted. It models what matters of a real device: a bounded
//! buffer pool (allocation fails when it is empty), a bounded transmit ring
//! (tx accepts only what fits, so partial sends happen), headroom, and rx
//! offload results. It counts the buffers in use, so a test can prove that
//! nothing leaked.
//!
//! It allocates from the heap; it is not for the fast path.

use super::{Buf, MacAddr, Port, RxOffload};
use arrayvec::ArrayVec;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// How an in-memory port is built.
#[derive(Debug, Clone)]
pub struct MemPortConfig {
    /// The port's MAC address.
    pub mac: MacAddr,
    /// How many buffers may exist at once (rx queue, tx queue and held ones).
    pub pool_size: usize,
    /// How many packets the transmit queue holds before tx refuses more.
    pub tx_ring_size: usize,
    /// Bytes per buffer, headroom included.
    pub buf_size: usize,
    /// Bytes reserved in front of the data of every new buffer.
    pub headroom: usize,
    /// Bytes of the buffers `alloc_large` gives (0: it gives none).
    pub large_buf_size: usize,
}

impl Default for MemPortConfig {
    fn default() -> Self {
        MemPortConfig {
            mac: MacAddr([0x02, 0, 0, 0, 0, 0x01]),
            pool_size: 4096,
            tx_ring_size: 1024,
            buf_size: 2048 + 128,
            headroom: 128,
            large_buf_size: 65535,
        }
    }
}

/// A heap buffer from an in-memory port's pool.
#[derive(Debug)]
pub struct MemBuf {
    bytes: Box<[u8]>,
    start: usize,
    end: usize,
    offload: RxOffload,
    in_use: Arc<AtomicUsize>,
}

impl MemBuf {
    /// The offload results this buffer reports (set by the test).
    pub fn set_rx_offload(&mut self, offload: RxOffload) {
        self.offload = offload;
    }
}

impl Drop for MemBuf {
    fn drop(&mut self) {
        self.in_use.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Buf for MemBuf {
    #[inline]
    fn data(&self) -> &[u8] {
        &self.bytes[self.start..self.end]
    }

    #[inline]
    fn data_mut(&mut self) -> &mut [u8] {
        &mut self.bytes[self.start..self.end]
    }

    #[inline]
    fn len(&self) -> usize {
        self.end - self.start
    }

    #[inline]
    fn headroom(&self) -> usize {
        self.start
    }

    #[inline]
    fn tailroom(&self) -> usize {
        self.bytes.len() - self.end
    }

    #[inline]
    fn prepend(&mut self, len: usize) -> Option<&mut [u8]> {
        let start = self.start.checked_sub(len)?;
        self.start = start;
        Some(&mut self.bytes[start..start + len])
    }

    #[inline]
    fn append(&mut self, len: usize) -> Option<&mut [u8]> {
        if len > self.tailroom() {
            return None;
        }
        let old_end = self.end;
        self.end += len;
        Some(&mut self.bytes[old_end..self.end])
    }

    #[inline]
    fn adjust(&mut self, len: usize) -> bool {
        if len > self.len() {
            return false;
        }
        self.start += len;
        true
    }

    #[inline]
    fn trim(&mut self, len: usize) -> bool {
        if len > self.len() {
            return false;
        }
        self.end -= len;
        true
    }

    #[inline]
    fn rx_offload(&self) -> RxOffload {
        self.offload
    }
}

/// A handle to an in-memory port's buffer pool, usable from any thread.
#[derive(Debug, Clone)]
pub struct MemPool {
    config: MemPortConfig,
    in_use: Arc<AtomicUsize>,
}

impl MemPool {
    /// A buffer, if the pool has room.
    pub fn alloc(&self) -> Option<MemBuf> {
        if self.in_use.load(Ordering::Relaxed) >= self.config.pool_size {
            return None;
        }
        self.in_use.fetch_add(1, Ordering::Relaxed);
        Some(MemBuf {
            bytes: vec![0; self.config.buf_size].into_boxed_slice(),
            start: self.config.headroom,
            end: self.config.headroom,
            offload: RxOffload::default(),
            in_use: Arc::clone(&self.in_use),
        })
    }
}

impl super::BufPool for MemPool {
    type Buf = MemBuf;

    fn alloc(&self) -> Option<MemBuf> {
        MemPool::alloc(self)
    }

    fn alloc_large(&self) -> Option<MemBuf> {
        let mut buf = MemPool::alloc(self)?;
        buf.bytes =
            vec![0; self.config.large_buf_size.max(self.config.buf_size)].into_boxed_slice();
        Some(buf)
    }
}

/// An in-memory port. See the module documentation.
#[derive(Debug)]
pub struct MemPort {
    config: MemPortConfig,
    rx: VecDeque<MemBuf>,
    tx: VecDeque<MemBuf>,
    in_use: Arc<AtomicUsize>,
    tx_attempts: u64,
    rx_missed: u64,
}

impl MemPort {
    /// A port with empty queues.
    pub fn new(config: MemPortConfig) -> MemPort {
        MemPort {
            config,
            rx: VecDeque::new(),
            tx: VecDeque::new(),
            in_use: Arc::new(AtomicUsize::new(0)),
            tx_attempts: 0,
            rx_missed: 0,
        }
    }

    /// Queues `frame` for reception. Returns false (and counts a miss, as a
    /// NIC does) if the pool has no buffer or the frame does not fit one.
    pub fn push_rx(&mut self, frame: &[u8]) -> bool {
        self.push_rx_with(frame, RxOffload::default())
    }

    /// Like [`MemPort::push_rx`], with the offload results the "device"
    /// reports for the frame.
    pub fn push_rx_with(&mut self, frame: &[u8], offload: RxOffload) -> bool {
        let Some(mut buf) = self.alloc() else {
            self.rx_missed += 1;
            return false;
        };
        let Some(room) = buf.append(frame.len()) else {
            self.rx_missed += 1;
            return false;
        };
        room.copy_from_slice(frame);
        buf.offload = offload;
        self.rx.push_back(buf);
        true
    }

    /// Removes and returns the oldest transmitted packet.
    pub fn pop_tx(&mut self) -> Option<MemBuf> {
        self.tx.pop_front()
    }

    /// Removes every transmitted packet and returns their bytes, oldest first.
    pub fn take_tx(&mut self) -> Vec<Vec<u8>> {
        self.tx.drain(..).map(|buf| buf.data().to_vec()).collect()
    }

    /// Moves everything this port transmitted into `peer`'s receive queue, as
    /// a cable would. Returns how many frames `peer` accepted.
    pub fn deliver_to(&mut self, peer: &mut MemPort) -> usize {
        let mut delivered = 0;
        while let Some(buf) = self.tx.pop_front() {
            if peer.push_rx_with(buf.data(), RxOffload::default()) {
                delivered += 1;
            }
        }
        delivered
    }

    /// Packets waiting in the receive queue.
    pub fn rx_pending(&self) -> usize {
        self.rx.len()
    }

    /// Packets waiting in the transmit queue.
    pub fn tx_pending(&self) -> usize {
        self.tx.len()
    }

    /// A handle to this port's pool for other threads.
    pub fn pool(&self) -> MemPool {
        MemPool {
            config: self.config.clone(),
            in_use: Arc::clone(&self.in_use),
        }
    }

    /// Buffers of this port's pool that exist right now, wherever they are.
    pub fn buffers_in_use(&self) -> usize {
        self.in_use.load(Ordering::Relaxed)
    }

    /// How many times `tx_burst` was called.
    pub fn tx_attempts(&self) -> u64 {
        self.tx_attempts
    }

    /// Frames refused on receive because the pool was empty.
    pub fn rx_missed(&self) -> u64 {
        self.rx_missed
    }

    fn new_buf(&self) -> MemBuf {
        self.new_buf_of(self.config.buf_size)
    }

    fn new_buf_of(&self, size: usize) -> MemBuf {
        self.in_use.fetch_add(1, Ordering::Relaxed);
        MemBuf {
            bytes: vec![0; size].into_boxed_slice(),
            start: self.config.headroom,
            end: self.config.headroom,
            offload: RxOffload::default(),
            in_use: Arc::clone(&self.in_use),
        }
    }
}

impl Port for MemPort {
    type Buf = MemBuf;

    fn rx_burst<const N: usize>(&mut self, bufs: &mut ArrayVec<MemBuf, N>, max: usize) -> usize {
        let count = max.min(bufs.remaining_capacity()).min(self.rx.len());
        bufs.extend(self.rx.drain(..count));
        count
    }

    fn tx_burst<const N: usize>(&mut self, bufs: &mut ArrayVec<MemBuf, N>) -> usize {
        self.tx_attempts += 1;
        let room = self.config.tx_ring_size.saturating_sub(self.tx.len());
        let count = room.min(bufs.len());
        self.tx.extend(bufs.drain(..count));
        count
    }

    fn alloc(&mut self) -> Option<MemBuf> {
        (self.buffers_in_use() < self.config.pool_size).then(|| self.new_buf())
    }

    fn alloc_burst<const N: usize>(
        &mut self,
        bufs: &mut ArrayVec<MemBuf, N>,
        count: usize,
    ) -> bool {
        let pool_room = self.config.pool_size.saturating_sub(self.buffers_in_use());
        if count > pool_room || count > bufs.remaining_capacity() {
            return false;
        }
        for _ in 0..count {
            bufs.push(self.new_buf());
        }
        true
    }

    fn mac(&self) -> MacAddr {
        self.config.mac
    }

    fn alloc_large(&mut self) -> Option<MemBuf> {
        let has_room = self.buffers_in_use() < self.config.pool_size;
        (has_room && self.config.large_buf_size > self.config.headroom)
            .then(|| self.new_buf_of(self.config.large_buf_size))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::port::ChecksumStatus;

    #[test]
    fn received_frames_arrive_in_order_with_their_offload_flags() {
        let mut port = MemPort::new(MemPortConfig::default());
        let good = RxOffload {
            ip_checksum: ChecksumStatus::Good,
            l4_checksum: ChecksumStatus::Bad,
            rss_hash: Some(7),
        };
        assert!(port.push_rx(&[1, 2, 3]));
        assert!(port.push_rx_with(&[4], good));
        let mut burst: ArrayVec<MemBuf, 4> = ArrayVec::new();
        assert_eq!(port.rx_burst(&mut burst, 32), 2);
        assert_eq!(burst[0].data(), &[1, 2, 3]);
        assert_eq!(burst[0].rx_offload(), RxOffload::default());
        assert_eq!(burst[1].data(), &[4]);
        assert_eq!(burst[1].rx_offload(), good);
    }

    #[test]
    fn rx_burst_respects_max_and_capacity() {
        let mut port = MemPort::new(MemPortConfig::default());
        for _ in 0..10 {
            port.push_rx(&[0]);
        }
        let mut small: ArrayVec<MemBuf, 4> = ArrayVec::new();
        assert_eq!(port.rx_burst(&mut small, 3), 3);
        assert_eq!(port.rx_burst(&mut small, 32), 1, "only one slot left");
        assert_eq!(port.rx_pending(), 6);
    }

    #[test]
    fn an_empty_pool_refuses_allocation_and_counts_rx_misses() {
        let mut port = MemPort::new(MemPortConfig {
            pool_size: 2,
            ..MemPortConfig::default()
        });
        let held = port.alloc().expect("first");
        assert!(port.push_rx(&[1]));
        assert!(port.alloc().is_none());
        assert!(!port.push_rx(&[2]));
        assert_eq!(port.rx_missed(), 1);
        let mut burst: ArrayVec<MemBuf, 4> = ArrayVec::new();
        assert!(!port.alloc_burst(&mut burst, 1));
        drop(held);
        assert!(port.alloc_burst(&mut burst, 1));
    }

    #[test]
    fn prepend_append_adjust_trim_keep_bounds() {
        let mut port = MemPort::new(MemPortConfig {
            buf_size: 16,
            headroom: 4,
            ..MemPortConfig::default()
        });
        let mut buf = port.alloc().expect("pool");
        assert_eq!((buf.headroom(), buf.tailroom(), buf.len()), (4, 12, 0));
        buf.append(3).expect("room").copy_from_slice(b"abc");
        buf.prepend(2).expect("room").copy_from_slice(b"xy");
        assert_eq!(buf.data(), b"xyabc");
        assert!(buf.prepend(3).is_none(), "only 2 bytes of headroom left");
        assert!(buf.append(10).is_none(), "only 9 bytes of tailroom left");
        assert_eq!(
            buf.data(),
            b"xyabc",
            "failed calls leave the packet as it was"
        );
        assert!(buf.adjust(2));
        assert!(buf.trim(1));
        assert_eq!(buf.data(), b"ab");
        assert!(!buf.adjust(3));
        assert!(!buf.trim(3));
        buf.data_mut()[0] = b'A';
        assert_eq!(buf.data(), b"Ab");
    }

    #[test]
    fn deliver_to_moves_frames_between_ports_like_a_cable() {
        let mut a = MemPort::new(MemPortConfig::default());
        let mut b = MemPort::new(MemPortConfig::default());
        let mut burst: ArrayVec<MemBuf, 4> = ArrayVec::new();
        assert!(a.alloc_burst(&mut burst, 2));
        for buf in burst.iter_mut() {
            buf.append(2).expect("room").copy_from_slice(&[9, 9]);
        }
        assert_eq!(a.tx_burst(&mut burst), 2);
        assert_eq!(a.deliver_to(&mut b), 2);
        assert_eq!(a.buffers_in_use(), 0);
        assert_eq!(b.rx_pending(), 2);
    }
}
