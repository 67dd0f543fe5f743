//! A connection's byte buffers: the send ring (unacknowledged and unsent
//! bytes, from `SND.UNA` on) and the receive ring, which also holds
//! out-of-order data at its offset, tracked by a bounded [`Assembler`].
//! Both are allocated once per connection; nothing grows per segment.

/// Most separate out-of-order ranges kept (a segment that would need more
/// is dropped; the peer sends it again).
pub const MAX_RANGES: usize = 8;

/// Out-of-order ranges beyond the in-order end, as byte offsets from it,
/// sorted and disjoint (never adjacent: those merge).
#[derive(Debug, Clone, Default)]
pub struct Assembler {
    ranges: arrayvec::ArrayVec<(usize, usize), MAX_RANGES>,
}

impl Assembler {
    /// Records `[start, end)`; false if it would take more ranges than
    /// allowed (nothing is recorded then).
    pub fn add(&mut self, start: usize, end: usize) -> bool {
        if start >= end {
            return true;
        }
        let (mut start, mut end) = (start, end);
        let mut kept = arrayvec::ArrayVec::<(usize, usize), MAX_RANGES>::new();
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
                end
            }
            _ => 0,
        }
    }

    /// Shifts every range down by `n` bytes that arrived in order, cutting
    /// what they cover.
    pub fn advance(&mut self, n: usize) {
        let mut kept = arrayvec::ArrayVec::<(usize, usize), MAX_RANGES>::new();
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
    pub fn ranges(&self) -> &[(usize, usize)] {
        &self.ranges
    }
}

/// A fixed-capacity ring of bytes.
#[derive(Debug)]
struct Ring {
    data: Box<[u8]>,
    /// Index of the first byte.
    head: usize,
}

impl Ring {
    fn new(capacity: usize) -> Ring {
        Ring::with_storage(vec![0; capacity.max(1)].into_boxed_slice())
    }

    /// A ring over `storage` (its old contents are never read: every byte
    /// is written before it is read).
    fn with_storage(storage: Box<[u8]>) -> Ring {
        let storage = if storage.is_empty() {
            vec![0; 1].into_boxed_slice()
        } else {
            storage
        };
        Ring {
            data: storage,
            head: 0,
        }
    }

    /// Hands the storage back, leaving a one-byte ring.
    fn take_storage(&mut self) -> Box<[u8]> {
        self.head = 0;
        core::mem::replace(&mut self.data, vec![0; 1].into_boxed_slice())
    }

    fn capacity(&self) -> usize {
        self.data.len()
    }

    /// Copies `bytes` in at `offset` from the head (wrapping).
    fn write_at(&mut self, offset: usize, bytes: &[u8]) {
        let cap = self.capacity();
        let at = (self.head + offset) % cap;
        let first = bytes.len().min(cap - at);
        self.data[at..at + first].copy_from_slice(&bytes[..first]);
        self.data[..bytes.len() - first].copy_from_slice(&bytes[first..]);
    }

    /// Copies bytes out from `offset` after the head into `out`.
    fn read_at(&self, offset: usize, out: &mut [u8]) {
        let cap = self.capacity();
        let at = (self.head + offset) % cap;
        let first = out.len().min(cap - at);
        out[..first].copy_from_slice(&self.data[at..at + first]);
        let rest = out.len() - first;
        out[first..].copy_from_slice(&self.data[..rest]);
    }

    fn consume(&mut self, n: usize) {
        self.head = (self.head + n) % self.capacity();
    }
}

/// Bytes the application wrote and the peer has not acknowledged yet.
#[derive(Debug)]
pub struct SendBuffer {
    ring: Ring,
    len: usize,
}

impl SendBuffer {
    /// An empty buffer of `capacity` bytes.
    pub fn new(capacity: usize) -> SendBuffer {
        SendBuffer {
            ring: Ring::new(capacity),
            len: 0,
        }
    }

    /// An empty buffer over recycled `storage`.
    pub fn with_storage(storage: Box<[u8]>) -> SendBuffer {
        SendBuffer {
            ring: Ring::with_storage(storage),
            len: 0,
        }
    }

    /// Gives the storage back (the buffer is empty and one byte long
    /// afterwards).
    pub fn take_storage(&mut self) -> Box<[u8]> {
        self.len = 0;
        self.ring.take_storage()
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Room for more.
    pub fn free(&self) -> usize {
        self.ring.capacity() - self.len
    }

    /// Appends what fits of `bytes`; returns how much.
    pub fn push(&mut self, bytes: &[u8]) -> usize {
        let n = bytes.len().min(self.free());
        self.ring.write_at(self.len, &bytes[..n]);
        self.len += n;
        n
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
}

/// Bytes received: in order (readable) first, then out-of-order data at
/// its offset within the rest of the capacity.
#[derive(Debug)]
pub struct RecvBuffer {
    ring: Ring,
    /// Readable bytes at the head.
    len: usize,
    ooo: Assembler,
}

impl RecvBuffer {
    /// An empty buffer of `capacity` bytes.
    pub fn new(capacity: usize) -> RecvBuffer {
        RecvBuffer {
            ring: Ring::new(capacity),
            len: 0,
            ooo: Assembler::default(),
        }
    }

    /// An empty buffer over recycled `storage`.
    pub fn with_storage(storage: Box<[u8]>) -> RecvBuffer {
        RecvBuffer {
            ring: Ring::with_storage(storage),
            len: 0,
            ooo: Assembler::default(),
        }
    }

    /// Gives the storage back (the buffer is empty and one byte long
    /// afterwards).
    pub fn take_storage(&mut self) -> Box<[u8]> {
        self.len = 0;
        self.ooo = Assembler::default();
        self.ring.take_storage()
    }

    /// Readable bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if nothing is readable.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Capacity.
    pub fn capacity(&self) -> usize {
        self.ring.capacity()
    }

    /// Room after the readable bytes (the receive window).
    pub fn window(&self) -> usize {
        self.ring.capacity() - self.len
    }

    /// True if out-of-order data waits.
    pub fn has_gaps(&self) -> bool {
        !self.ooo.is_empty()
    }

    /// The out-of-order ranges, as offsets past the in-order end.
    pub fn out_of_order(&self) -> &[(usize, usize)] {
        self.ooo.ranges()
    }

    /// Stores `bytes` at `offset` past the in-order end (what falls
    /// outside the window is cut). Returns how many bytes became
    /// readable, or `None` if the segment was dropped because too many
    /// ranges are out of order.
    pub fn write_at(&mut self, offset: usize, bytes: &[u8]) -> Option<usize> {
        let window = self.window();
        if offset >= window {
            return Some(0);
        }
        let bytes = &bytes[..bytes.len().min(window - offset)];
        if offset > 0 && !self.ooo.add(offset, offset + bytes.len()) {
            return None;
        }
        self.ring_write(offset, bytes);
        let in_order = if offset == 0 {
            self.ooo.advance(bytes.len());
            bytes.len() + self.ooo.take_front()
        } else {
            self.ooo.take_front()
        };
        self.len += in_order;
        Some(in_order)
    }

    fn ring_write(&mut self, offset: usize, bytes: &[u8]) {
        self.ring.write_at(self.len + offset, bytes);
    }

    /// Moves readable bytes into `out`; returns how many.
    pub fn read(&mut self, out: &mut [u8]) -> usize {
        let n = out.len().min(self.len);
        self.ring.read_at(0, &mut out[..n]);
        self.ring.consume(n);
        self.len -= n;
        n
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
        let mut r = RecvBuffer::new(16);
        assert_eq!(r.write_at(4, b"efgh"), Some(0));
        assert_eq!(r.window(), 16);
        assert_eq!(r.write_at(0, b"abcd"), Some(8));
        let mut out = [0u8; 5];
        assert_eq!(r.read(&mut out), 5);
        assert_eq!(&out, b"abcde");
        // Wrapping around the ring, and cut at the window.
        assert_eq!(r.write_at(0, b"0123456789abcdefXYZ"), Some(13));
        let mut all = [0u8; 32];
        let n = r.read(&mut all);
        assert_eq!(&all[..n], b"fgh0123456789abc");
    }

    #[test]
    fn the_send_buffer_wraps_and_drains() {
        let mut s = SendBuffer::new(8);
        assert_eq!(s.push(b"abcdef"), 6);
        s.drain(4);
        assert_eq!(s.push(b"ghijklm"), 6);
        let mut out = [0u8; 8];
        assert_eq!(s.copy_out(1, &mut out), 7);
        assert_eq!(&out[..7], b"fghijkl");
        assert_eq!(s.free(), 0);
    }
}
