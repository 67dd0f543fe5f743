//! A connection's byte buffers: the send ring (unacknowledged and unsent
//! bytes, from `SND.UNA` on) and the receive ring, which also holds
//! out-of-order data at its offset, tracked by a bounded [`Assembler`].
//!
//! Invariants: a ring holds no storage until its first byte, and takes it
//! from the lcore's [`BufferPool`] (within the stack's budget); it grows
//! by doubling (the send ring when a write needs room, the receive ring
//! when auto-tuning says so), at most to its limit, and never per segment;
//! a ring at its starting size gives its storage back when it empties. The
//! receive window is computed from `target`, which only grows, so the
//! advertised right edge never moves back.

use super::pool::{BufferPool, Storage};

/// Most separate out-of-order ranges kept (a segment that would need more
/// is dropped and counted, `TcpOFODrop`; the peer sends it again). Sixteen
/// offsets of 32 bits take what eight of 64 did: at 5 % loss and 10 %
/// reordering, eight ranges dropped one segment in a hundred.
pub const MAX_RANGES: usize = 16;

/// Out-of-order ranges beyond the in-order end, as byte offsets from it,
/// sorted and disjoint (never adjacent: those merge).
#[derive(Debug, Clone, Default)]
pub struct Assembler {
    ranges: arrayvec::ArrayVec<(u32, u32), MAX_RANGES>,
}

impl Assembler {
    /// Records `[start, end)`; false if it would take more ranges than
    /// allowed (nothing is recorded then).
    pub fn add(&mut self, start: usize, end: usize) -> bool {
        if start >= end {
            return true;
        }
        // Offsets lie within the receive window (under 2^30, RFC 7323).
        let (mut start, mut end) = (start as u32, end as u32);
        let mut kept = arrayvec::ArrayVec::<(u32, u32), MAX_RANGES>::new();
        let mut placed = false;
        for &(s, e) in &self.ranges {
            if e < start {
                kept.push((s, e));
            } else if s > end {
                if !placed {
                    if kept.try_push((start, end)).is_err() {
                        return false;
                    }
                    placed = true;
                }
                if kept.try_push((s, e)).is_err() {
                    return false;
                }
            } else {
                start = start.min(s);
                end = end.max(e);
            }
        }
        if !placed && kept.try_push((start, end)).is_err() {
            return false;
        }
        self.ranges = kept;
        true
    }

    /// If a range starts at offset 0, removes it and returns its length
    /// (now in order); the other ranges shift down by it.
    pub fn take_front(&mut self) -> usize {
        match self.ranges.first() {
            Some(&(0, end)) => {
                self.ranges.remove(0);
                for range in &mut self.ranges {
                    range.0 -= end;
                    range.1 -= end;
                }
                end as usize
            }
            _ => 0,
        }
    }

    /// Shifts every range down by `n` bytes that arrived in order, cutting
    /// what they cover.
    pub fn advance(&mut self, n: usize) {
        let n = n as u32;
        let mut kept = arrayvec::ArrayVec::<(u32, u32), MAX_RANGES>::new();
        for &(s, e) in &self.ranges {
            if e > n {
                kept.push((s.saturating_sub(n), e - n));
            }
        }
        self.ranges = kept;
    }

    /// True if nothing is out of order.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The ranges (for SACK blocks and tests).
    pub fn ranges(&self) -> &[(u32, u32)] {
        &self.ranges
    }
}

/// Size a receive ring starts at (and the window a connection first
/// offers): Linux's first window, 64 KiB.
pub const INITIAL_RECV: usize = 64 * 1024;
/// Size a send ring starts at (Linux's `tcp_wmem` default, 16 KiB).
pub const INITIAL_SEND: usize = 16 * 1024;

/// Why bytes were not stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// They would take more out-of-order ranges than are kept.
    TooManyRanges,
    /// The ring has no storage and the stack's buffer budget has none to
    /// give.
    NoMemory,
}

/// A ring of bytes over storage from a [`BufferPool`], allocated when the
/// first byte comes and given back when the ring empties at its starting
/// size (so an idle connection holds none).
#[derive(Debug, Default)]
struct Ring {
    storage: Option<Storage>,
    /// Index of the first byte.
    head: usize,
}

impl Ring {
    fn capacity(&self) -> usize {
        self.storage.as_ref().map_or(0, Storage::len)
    }

    /// Storage of `size` bytes holding the first `live` bytes of the old
    /// (from the head, now at index 0); false if the pool refused.
    fn resize(&mut self, size: usize, live: usize, pool: &mut BufferPool) -> bool {
        let Some(mut fresh) = pool.take(size) else {
            return false;
        };
        let live = live.min(size).min(self.capacity());
        self.read_at(0, &mut fresh.bytes_mut()[..live]);
        if let Some(old) = self.storage.replace(fresh) {
            pool.give(old);
        }
        self.head = 0;
        true
    }

    /// Gives the storage back to `pool`.
    fn release(&mut self, pool: &mut BufferPool) {
        self.head = 0;
        if let Some(storage) = self.storage.take() {
            pool.give(storage);
        }
    }

    /// Copies `bytes` in at `offset` from the head (wrapping); the caller
    /// keeps `offset + bytes.len()` within the capacity.
    fn write_at(&mut self, offset: usize, bytes: &[u8]) {
        let cap = self.capacity();
        let head = self.head;
        let Some(storage) = self.storage.as_mut() else {
            return;
        };
        let data = storage.bytes_mut();
        let at = (head + offset) % cap;
        let first = bytes.len().min(cap - at);
        data[at..at + first].copy_from_slice(&bytes[..first]);
        data[..bytes.len() - first].copy_from_slice(&bytes[first..]);
    }

    /// Copies bytes out from `offset` after the head into `out`.
    fn read_at(&self, offset: usize, out: &mut [u8]) {
        let Some(storage) = self.storage.as_ref() else {
            return;
        };
        let (cap, data) = (storage.len(), storage.bytes());
        let at = (self.head + offset) % cap;
        let first = out.len().min(cap - at);
        out[..first].copy_from_slice(&data[at..at + first]);
        let rest = out.len() - first;
        out[first..].copy_from_slice(&data[..rest]);
    }

    fn consume(&mut self, n: usize) {
        let cap = self.capacity();
        if cap > 0 {
            self.head = (self.head + n) % cap;
        }
    }
}

/// Bytes the application wrote and the peer has not acknowledged yet. The
/// ring starts at [`INITIAL_SEND`] on the first write and doubles when a
/// write needs more, up to the connection's limit.
#[derive(Debug)]
pub struct SendBuffer {
    ring: Ring,
    len: usize,
    limit: usize,
}

impl SendBuffer {
    /// An empty buffer that may grow to `limit` bytes (no storage yet).
    pub fn new(limit: usize) -> SendBuffer {
        SendBuffer {
            ring: Ring::default(),
            len: 0,
            limit: limit.max(1),
        }
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The most it holds.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Room for more, up to the limit (storage comes as it fills).
    pub fn free(&self) -> usize {
        self.limit - self.len
    }

    /// Bytes of storage held now.
    pub fn allocated(&self) -> usize {
        self.ring.capacity()
    }

    /// Appends what fits of `bytes`, growing the ring from `pool` as
    /// needed; returns how much, or why nothing could be taken.
    pub fn push(&mut self, bytes: &[u8], pool: &mut BufferPool) -> Result<usize, Refused> {
        let want = (self.len + bytes.len()).min(self.limit);
        if want > self.ring.capacity() {
            let mut size = self.ring.capacity().max(INITIAL_SEND.min(self.limit));
            while size < want {
                size = (size * 2).min(self.limit);
            }
            if !self.ring.resize(size, self.len, pool) && self.ring.capacity() == 0 {
                return if bytes.is_empty() {
                    Ok(0)
                } else {
                    Err(Refused::NoMemory)
                };
            }
        }
        let n = bytes.len().min(self.ring.capacity() - self.len);
        self.ring.write_at(self.len, &bytes[..n]);
        self.len += n;
        Ok(n)
    }

    /// Copies bytes from `offset` into `out` (as many as are held there);
    /// returns how many.
    pub fn copy_out(&self, offset: usize, out: &mut [u8]) -> usize {
        let n = out.len().min(self.len.saturating_sub(offset));
        self.ring.read_at(offset, &mut out[..n]);
        n
    }

    /// Drops `n` acknowledged bytes from the front.
    pub fn drain(&mut self, n: usize) {
        let n = n.min(self.len);
        self.ring.consume(n);
        self.len -= n;
    }

    /// Gives the storage back if the ring is empty and at its starting
    /// size (a grown ring is kept: a bulk sender would trade it on every
    /// ACK).
    pub fn release_idle(&mut self, pool: &mut BufferPool) {
        if self.len == 0 && self.ring.capacity() <= INITIAL_SEND {
            self.ring.release(pool);
        }
    }

    /// Gives the storage back whatever it holds (the connection is done).
    pub fn release(&mut self, pool: &mut BufferPool) {
        self.len = 0;
        self.ring.release(pool);
    }
}

/// Bytes received: in order (readable) first, then out-of-order data at
/// its offset within the rest of the window. The window is `target`
/// bytes, [`INITIAL_RECV`] at first, grown by receive-window auto-tuning
/// up to the limit; storage of that size comes with the first byte.
#[derive(Debug)]
pub struct RecvBuffer {
    ring: Ring,
    /// Readable bytes at the head.
    len: usize,
    ooo: Assembler,
    /// The size the window is computed from (storage, when held, is this
    /// size).
    target: usize,
    limit: usize,
}

impl RecvBuffer {
    /// An empty buffer that may grow to `limit` bytes (no storage yet).
    pub fn new(limit: usize) -> RecvBuffer {
        let limit = limit.max(1);
        RecvBuffer {
            ring: Ring::default(),
            len: 0,
            ooo: Assembler::default(),
            target: INITIAL_RECV.min(limit),
            limit,
        }
    }

    /// Readable bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if nothing is readable.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The window's size now (grows with auto-tuning, never shrinks).
    pub fn capacity(&self) -> usize {
        self.target
    }

    /// The most it may grow to.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes of storage held now.
    pub fn allocated(&self) -> usize {
        self.ring.capacity()
    }

    /// Room after the readable bytes (the receive window).
    pub fn window(&self) -> usize {
        self.target - self.len
    }

    /// True if out-of-order data waits.
    pub fn has_gaps(&self) -> bool {
        !self.ooo.is_empty()
    }

    /// The out-of-order ranges, as offsets past the in-order end.
    pub fn out_of_order(&self) -> &[(u32, u32)] {
        self.ooo.ranges()
    }

    /// Stores `bytes` at `offset` past the in-order end (what falls
    /// outside the window is cut), taking storage from `pool` if the ring
    /// has none. Returns how many bytes became readable.
    pub fn write_at(
        &mut self,
        offset: usize,
        bytes: &[u8],
        pool: &mut BufferPool,
    ) -> Result<usize, Refused> {
        let window = self.window();
        if offset >= window || bytes.is_empty() {
            return Ok(0);
        }
        if self.ring.capacity() == 0 && !self.ring.resize(self.target, 0, pool) {
            return Err(Refused::NoMemory);
        }
        let bytes = &bytes[..bytes.len().min(window - offset)];
        if offset > 0 && !self.ooo.add(offset, offset + bytes.len()) {
            return Err(Refused::TooManyRanges);
        }
        self.ring.write_at(self.len + offset, bytes);
        let in_order = if offset == 0 {
            self.ooo.advance(bytes.len());
            bytes.len() + self.ooo.take_front()
        } else {
            self.ooo.take_front()
        };
        self.len += in_order;
        Ok(in_order)
    }

    /// Moves readable bytes into `out`; returns how many. A ring left
    /// empty at its starting size gives its storage back to `pool`.
    pub fn read(&mut self, out: &mut [u8], pool: &mut BufferPool) -> usize {
        let n = out.len().min(self.len);
        self.ring.read_at(0, &mut out[..n]);
        self.ring.consume(n);
        self.len -= n;
        if self.len == 0 && self.ooo.is_empty() && self.target <= INITIAL_RECV {
            self.ring.release(pool);
        }
        n
    }

    /// Grows the window to `size` (at most the limit; never shrinks),
    /// moving what the ring holds to storage of the new size. False if
    /// the pool refused (the window stays as it was).
    pub fn grow(&mut self, size: usize, pool: &mut BufferPool) -> bool {
        let size = size.min(self.limit);
        if size <= self.target {
            return true;
        }
        if self.ring.capacity() > 0 {
            let live = self.len + self.ooo.ranges().last().map_or(0, |&(_, end)| end as usize);
            if !self.ring.resize(size, live, pool) {
                return false;
            }
        }
        self.target = size;
        true
    }

    /// Gives the storage back whatever it holds (the connection is done).
    pub fn release(&mut self, pool: &mut BufferPool) {
        self.len = 0;
        self.ooo = Assembler::default();
        self.ring.release(pool);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_assembler_merges_and_is_bounded() {
        let mut a = Assembler::default();
        assert!(a.add(10, 20));
        assert!(a.add(30, 40));
        assert!(a.add(18, 31));
        assert_eq!(a.ranges(), &[(10, 40)]);
        assert_eq!(a.take_front(), 0);
        assert!(a.add(0, 10));
        assert_eq!(a.take_front(), 40);
        assert!(a.is_empty());
        for i in 0..MAX_RANGES {
            assert!(a.add(i * 10 + 1, i * 10 + 5));
        }
        assert!(!a.add(200, 201), "one range too many");
        assert!(a.add(2, 3), "inside an existing range: fine");
    }

    #[test]
    fn out_of_order_data_becomes_readable_when_the_gap_fills() {
        let mut pool = BufferPool::unlimited();
        let mut r = RecvBuffer::new(16);
        assert_eq!(r.allocated(), 0, "no storage before the first byte");
        assert_eq!(r.write_at(4, b"efgh", &mut pool), Ok(0));
        assert_eq!(r.allocated(), 16);
        assert_eq!(r.window(), 16);
        assert_eq!(r.write_at(0, b"abcd", &mut pool), Ok(8));
        let mut out = [0u8; 5];
        assert_eq!(r.read(&mut out, &mut pool), 5);
        assert_eq!(&out, b"abcde");
        // Wrapping around the ring, and cut at the window.
        let long = b"0123456789abcdefXYZ";
        assert_eq!(r.write_at(0, long, &mut pool), Ok(13));
        let mut all = [0u8; 32];
        let n = r.read(&mut all, &mut pool);
        assert_eq!(&all[..n], b"fgh0123456789abc");
        assert_eq!(r.allocated(), 0, "empty at its starting size: given back");
    }

    #[test]
    fn the_send_buffer_wraps_and_drains() {
        let mut pool = BufferPool::unlimited();
        let mut s = SendBuffer::new(8);
        assert_eq!(s.push(b"abcdef", &mut pool), Ok(6));
        s.drain(4);
        assert_eq!(s.push(b"ghijklm", &mut pool), Ok(6));
        let mut out = [0u8; 8];
        assert_eq!(s.copy_out(1, &mut out), 7);
        assert_eq!(&out[..7], b"fghijkl");
        assert_eq!(s.free(), 0);
    }

    #[test]
    fn the_send_ring_grows_by_doubling_keeping_its_bytes() {
        let mut pool = BufferPool::unlimited();
        let mut s = SendBuffer::new(100 * 1024);
        let first: Vec<u8> = (0..INITIAL_SEND).map(|i| i as u8).collect();
        assert_eq!(s.push(&first, &mut pool), Ok(INITIAL_SEND));
        assert_eq!(s.allocated(), INITIAL_SEND);
        s.drain(1000); // the head moves: growing must unwrap the ring
        let more = vec![7u8; 40 * 1024];
        assert_eq!(s.push(&more, &mut pool), Ok(more.len()));
        assert_eq!(s.allocated(), 64 * 1024);
        let mut out = vec![0u8; s.len()];
        assert_eq!(s.copy_out(0, &mut out), out.len());
        assert_eq!(&out[..INITIAL_SEND - 1000], &first[1000..]);
        assert!(out[INITIAL_SEND - 1000..].iter().all(|&b| b == 7));
        // Up to the limit, not beyond.
        let lots = vec![1u8; 200 * 1024];
        let took = s.push(&lots, &mut pool).unwrap();
        assert_eq!(s.len(), 100 * 1024);
        assert_eq!(took, 100 * 1024 - INITIAL_SEND + 1000 - more.len());
        assert_eq!(s.allocated(), 100 * 1024);
    }

    #[test]
    fn growing_the_window_keeps_readable_and_out_of_order_bytes() {
        let mut pool = BufferPool::unlimited();
        let mut r = RecvBuffer::new(1 << 20);
        assert_eq!(r.window(), INITIAL_RECV);
        let data: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
        assert_eq!(r.write_at(0, &data[..1000], &mut pool), Ok(1000));
        assert_eq!(r.write_at(1000, &data[2000..], &mut pool), Ok(0));
        assert!(r.grow(4 * INITIAL_RECV, &mut pool));
        assert_eq!(r.window(), 4 * INITIAL_RECV - 1000);
        assert_eq!(r.allocated(), 4 * INITIAL_RECV);
        assert_eq!(r.write_at(0, &data[1000..2000], &mut pool), Ok(2000));
        let mut out = vec![0u8; 3000];
        assert_eq!(r.read(&mut out, &mut pool), 3000);
        assert_eq!(out, data);
        assert_eq!(r.allocated(), 4 * INITIAL_RECV, "a grown ring is kept");
    }

    #[test]
    fn without_memory_a_ring_refuses_and_loses_nothing_it_held() {
        let budget = super::super::pool::BufferBudget::new(INITIAL_RECV);
        let mut pool = BufferPool::new(budget, 0);
        let mut r = RecvBuffer::new(1 << 20);
        assert_eq!(r.write_at(0, b"held", &mut pool), Ok(4));
        assert!(!r.grow(2 * INITIAL_RECV, &mut pool), "over the budget");
        assert_eq!(r.window(), INITIAL_RECV - 4);
        let mut s = SendBuffer::new(1 << 20);
        assert_eq!(s.push(b"x", &mut pool), Err(Refused::NoMemory));
        let mut out = [0u8; 8];
        assert_eq!(r.read(&mut out, &mut pool), 4);
        assert_eq!(&out[..4], b"held");
        assert_eq!(s.push(b"x", &mut pool), Ok(1), "the freed storage serves");
    }
}
