//! RTP/RTCP port pairs from a configured range (RFC 3550 section 11: RTP
//! on an even port, RTCP on the next, odd, one), as media servers allocate
//! them per stream (Asterisk's `rtpstart`/`rtpend`, FreeSWITCH's
//! `rtp-start-port`/`rtp-end-port`, rtpengine's `--port-min`/`--port-max`).
//!
//! The free pairs form a doubly linked list threaded through two arrays
//! indexed by pair number, so taking the oldest free pair, taking a given
//! pair and giving one back are all O(1), with no allocation after
//! [`PortAllocator::new`].
//!
//! Invariants: a pair is either on the free list or allocated, never both;
//! the list starts in ascending port order and released pairs go to its
//! back (FIFO), so a port just given back is the last to be handed out
//! again: late packets of a finished stream do not land on a new one (the
//! reason Asterisk picks ports at random). Running out is
//! [`PortError::Exhausted`], never a panic; releasing a pair that is not
//! allocated is an error and changes nothing.

use core::ops::RangeInclusive;

/// An RTP port (even) and its RTCP port (the next one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PortPair {
    rtp: u16,
}

impl PortPair {
    /// The pair whose RTP port is `rtp`, if `rtp` is even and not 0.
    pub const fn new(rtp: u16) -> Option<PortPair> {
        if rtp == 0 || rtp % 2 != 0 {
            None
        } else {
            Some(PortPair { rtp })
        }
    }

    /// The RTP port (even).
    pub const fn rtp(self) -> u16 {
        self.rtp
    }

    /// The RTCP port (`rtp + 1`, odd).
    pub const fn rtcp(self) -> u16 {
        self.rtp + 1
    }
}

/// Why a range cannot make an allocator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeError {
    /// The range holds no whole pair (an even port above 0 and the port
    /// after it).
    NoPair,
}

impl core::fmt::Display for RangeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("the port range holds no even/odd pair (e.g. 30000-30001)")
    }
}

impl std::error::Error for RangeError {}

/// Why an allocation or release failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortError {
    /// Every pair of the range is allocated.
    Exhausted,
    /// The RTP port is odd, 0, or outside the range.
    NotInRange(u16),
    /// The pair is already allocated (asked for by port).
    InUse(u16),
    /// The pair given back is not allocated.
    NotAllocated(u16),
}

impl core::fmt::Display for PortError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            PortError::Exhausted => f.write_str("every RTP/RTCP port pair of the range is in use"),
            PortError::NotInRange(p) => write!(f, "{p} is not an even RTP port of the range"),
            PortError::InUse(p) => write!(f, "port pair {p}/{} is already in use", p + 1),
            PortError::NotAllocated(p) => write!(f, "port pair {p}/{} is not allocated", p + 1),
        }
    }
}

impl std::error::Error for PortError {}

/// End of the free list (and the mark of an allocated pair in `next`).
const NIL: u16 = u16::MAX;
/// `next` of an allocated pair (pair numbers are below 32768, so neither
/// mark is ever a pair number).
const ALLOCATED: u16 = u16::MAX - 1;

/// Hands out port pairs of a range. See the module documentation.
#[derive(Debug, Clone)]
pub struct PortAllocator {
    /// The RTP port of pair 0.
    first: u16,
    /// For each pair: the next free pair, [`NIL`] at the end of the list,
    /// or [`ALLOCATED`].
    next: Box<[u16]>,
    /// For each free pair: the previous free pair, or [`NIL`] at the head.
    prev: Box<[u16]>,
    head: u16,
    tail: u16,
    free: usize,
}

impl PortAllocator {
    /// An allocator over the whole pairs inside `range`: RTP ports are the
    /// even ports from the first even one, each with its odd successor also
    /// inside the range (port 0 is never used). All pairs start free.
    pub fn new(range: RangeInclusive<u16>) -> Result<PortAllocator, RangeError> {
        let (low, high) = (u32::from(*range.start()), u32::from(*range.end()));
        let first = (low.max(2) + 1) & !1;
        if first + 1 > high {
            return Err(RangeError::NoPair);
        }
        // Whole pairs: an even first port and its successor, up to high.
        let pairs = (high - first).div_ceil(2) as usize;
        // At most 32767 pairs (ports 2..=65535): pair numbers fit in u16
        // below both marks.
        let next: Box<[u16]> = (1..=pairs)
            .map(|n| if n == pairs { NIL } else { n as u16 })
            .collect();
        let prev: Box<[u16]> = (0..pairs)
            .map(|n| if n == 0 { NIL } else { (n - 1) as u16 })
            .collect();
        Ok(PortAllocator {
            first: first as u16,
            next,
            prev,
            head: 0,
            tail: (pairs - 1) as u16,
            free: pairs,
        })
    }

    /// How many pairs the range holds.
    pub fn capacity(&self) -> usize {
        self.next.len()
    }

    /// How many pairs are free.
    pub fn available(&self) -> usize {
        self.free
    }

    /// The first RTP port and the last RTCP port of the range in use.
    pub fn bounds(&self) -> (u16, u16) {
        let last = u32::from(self.first) + 2 * self.next.len() as u32 - 1;
        (self.first, last as u16)
    }

    /// The pair number of RTP port `rtp`, if it is one of the range's.
    fn index(&self, rtp: u16) -> Option<usize> {
        let offset = rtp.checked_sub(self.first)?;
        let index = usize::from(offset / 2);
        (offset % 2 == 0 && index < self.next.len()).then_some(index)
    }

    fn pair(&self, index: u16) -> PortPair {
        PortPair {
            rtp: self.first + 2 * index,
        }
    }

    /// Takes pair `index` off the free list (it must be on it).
    fn unlink(&mut self, index: u16) {
        let i = usize::from(index);
        let (prev, next) = (self.prev[i], self.next[i]);
        match prev {
            NIL => self.head = next,
            p => self.next[usize::from(p)] = next,
        }
        match next {
            NIL => self.tail = prev,
            n => self.prev[usize::from(n)] = prev,
        }
        self.next[i] = ALLOCATED;
        self.prev[i] = NIL;
        self.free -= 1;
    }

    /// The free pair released longest ago (at first: the lowest).
    pub fn allocate(&mut self) -> Result<PortPair, PortError> {
        if self.head == NIL {
            return Err(PortError::Exhausted);
        }
        let index = self.head;
        self.unlink(index);
        Ok(self.pair(index))
    }

    /// The pair whose RTP port is `rtp` (for a port signalling asked for).
    pub fn allocate_port(&mut self, rtp: u16) -> Result<PortPair, PortError> {
        let index = self.index(rtp).ok_or(PortError::NotInRange(rtp))?;
        if self.next[index] == ALLOCATED {
            return Err(PortError::InUse(rtp));
        }
        self.unlink(index as u16);
        Ok(self.pair(index as u16))
    }

    /// True if the pair with RTP port `rtp` is allocated.
    pub fn is_allocated(&self, rtp: u16) -> bool {
        self.index(rtp)
            .is_some_and(|index| self.next[index] == ALLOCATED)
    }

    /// Gives `pair` back; it goes to the back of the free list.
    pub fn release(&mut self, pair: PortPair) -> Result<(), PortError> {
        let rtp = pair.rtp();
        let index = self.index(rtp).ok_or(PortError::NotInRange(rtp))?;
        if self.next[index] != ALLOCATED {
            return Err(PortError::NotAllocated(rtp));
        }
        let index16 = index as u16;
        self.next[index] = NIL;
        self.prev[index] = self.tail;
        match self.tail {
            NIL => self.head = index16,
            t => self.next[usize::from(t)] = index16,
        }
        self.tail = index16;
        self.free += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_even_rtp_and_odd_rtcp_inside_the_range() {
        // 30001 is odd: the first pair is 30002/30003; 30008 has no
        // partner inside the range.
        let mut ports = PortAllocator::new(30001..=30008).unwrap();
        assert_eq!(ports.capacity(), 3);
        assert_eq!(ports.bounds(), (30002, 30007));
        let got: Vec<(u16, u16)> = (0..3)
            .map(|_| ports.allocate().map(|p| (p.rtp(), p.rtcp())).unwrap())
            .collect();
        assert_eq!(got, [(30002, 30003), (30004, 30005), (30006, 30007)]);
        assert_eq!(ports.allocate(), Err(PortError::Exhausted));
        assert_eq!(ports.available(), 0);
    }

    #[test]
    fn ranges_without_a_pair_are_refused() {
        assert_eq!(
            PortAllocator::new(30001..=30002).err(),
            Some(RangeError::NoPair)
        );
        let (high, low) = (40000, 30000);
        assert_eq!(
            PortAllocator::new(high..=low).err(),
            Some(RangeError::NoPair),
            "reversed"
        );
        assert_eq!(PortAllocator::new(0..=1).err(), Some(RangeError::NoPair));
        // Port 0 is skipped; the top of the port space works.
        let all = PortAllocator::new(0..=65535).unwrap();
        assert_eq!(all.capacity(), 32767);
        assert_eq!(all.bounds(), (2, 65535));
        assert_eq!(PortPair::new(0), None);
        assert_eq!(PortPair::new(7), None);
    }

    #[test]
    fn released_pairs_are_reused_last() {
        let mut ports = PortAllocator::new(10000..=10007).unwrap();
        let a = ports.allocate().unwrap();
        let b = ports.allocate().unwrap();
        ports.release(a).unwrap();
        // 10004 and 10006 were free before 10000 came back.
        assert_eq!(ports.allocate().unwrap().rtp(), 10004);
        assert_eq!(ports.allocate().unwrap().rtp(), 10006);
        assert_eq!(ports.allocate().unwrap().rtp(), 10000);
        assert_eq!(ports.allocate(), Err(PortError::Exhausted));
        ports.release(b).unwrap();
        assert_eq!(ports.allocate(), Ok(b));
    }

    #[test]
    fn a_given_pair_comes_off_the_middle_of_the_list() {
        let mut ports = PortAllocator::new(20000..=20009).unwrap();
        assert_eq!(ports.allocate_port(20004).unwrap().rtcp(), 20005);
        assert!(ports.is_allocated(20004));
        assert_eq!(ports.allocate_port(20004), Err(PortError::InUse(20004)));
        assert_eq!(
            ports.allocate_port(20005),
            Err(PortError::NotInRange(20005))
        );
        assert_eq!(
            ports.allocate_port(20010),
            Err(PortError::NotInRange(20010))
        );
        assert_eq!(
            ports.allocate_port(19998),
            Err(PortError::NotInRange(19998))
        );
        // Head and tail taken by port too.
        ports.allocate_port(20000).unwrap();
        ports.allocate_port(20008).unwrap();
        let rest: Vec<u16> = (0..2).map(|_| ports.allocate().unwrap().rtp()).collect();
        assert_eq!(rest, [20002, 20006]);
        assert_eq!(ports.allocate(), Err(PortError::Exhausted));
    }

    #[test]
    fn bad_releases_change_nothing() {
        let mut ports = PortAllocator::new(20000..=20003).unwrap();
        let a = ports.allocate().unwrap();
        ports.release(a).unwrap();
        assert_eq!(ports.release(a), Err(PortError::NotAllocated(20000)));
        let outside = PortPair::new(30000).unwrap();
        assert_eq!(ports.release(outside), Err(PortError::NotInRange(30000)));
        assert_eq!(ports.available(), 2);
        let got: Vec<u16> = (0..2).map(|_| ports.allocate().unwrap().rtp()).collect();
        assert_eq!(got, [20002, 20000]);
    }

    #[test]
    fn the_free_list_survives_a_random_workload() {
        // A model check: a set of allocated ports against the allocator.
        let mut ports = PortAllocator::new(1000..=1199).unwrap();
        let mut held: Vec<PortPair> = Vec::new();
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            match rng % 3 {
                0 if !held.is_empty() => {
                    let pair = held.swap_remove((rng >> 8) as usize % held.len());
                    ports.release(pair).unwrap();
                }
                1 => {
                    let rtp = 1000 + 2 * ((rng >> 8) % 100) as u16;
                    match ports.allocate_port(rtp) {
                        Ok(pair) => held.push(pair),
                        Err(e) => assert_eq!(e, PortError::InUse(rtp)),
                    }
                }
                _ => match ports.allocate() {
                    Ok(pair) => {
                        assert!(!held.contains(&pair), "{pair:?} handed out twice");
                        held.push(pair);
                    }
                    Err(e) => {
                        assert_eq!(e, PortError::Exhausted);
                        assert_eq!(held.len(), 100);
                    }
                },
            }
            assert_eq!(ports.available(), 100 - held.len());
        }
        for pair in held.drain(..) {
            assert!(ports.is_allocated(pair.rtp()));
            ports.release(pair).unwrap();
        }
        assert_eq!(ports.available(), 100);
    }
}
