//! Sequence numbers: 32-bit values compared in a window of 2^31 around
//! each other (RFC 9293 3.4), with wrapping arithmetic throughout.

use core::cmp::Ordering;
use core::ops::{Add, Sub};

/// A TCP sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Seq(pub u32);

impl Seq {
    /// The distance from `earlier` to `self` (assumes `earlier` is not
    /// after `self`).
    pub fn since(self, earlier: Seq) -> u32 {
        self.0.wrapping_sub(earlier.0)
    }

    /// The later of two sequence numbers.
    pub fn max(self, other: Seq) -> Seq {
        if self > other {
            self
        } else {
            other
        }
    }

    /// The earlier of two sequence numbers.
    pub fn min(self, other: Seq) -> Seq {
        if self < other {
            self
        } else {
            other
        }
    }

    /// True if `self` lies in `[start, end)`.
    pub fn in_range(self, start: Seq, end: Seq) -> bool {
        self >= start && self < end
    }
}

impl Add<u32> for Seq {
    type Output = Seq;
    fn add(self, n: u32) -> Seq {
        Seq(self.0.wrapping_add(n))
    }
}

impl Add<usize> for Seq {
    type Output = Seq;
    fn add(self, n: usize) -> Seq {
        Seq(self.0.wrapping_add(n as u32))
    }
}

impl Sub<u32> for Seq {
    type Output = Seq;
    fn sub(self, n: u32) -> Seq {
        Seq(self.0.wrapping_sub(n))
    }
}

impl Sub<Seq> for Seq {
    /// The signed distance (positive if `self` is after `other`).
    type Output = i32;
    fn sub(self, other: Seq) -> i32 {
        self.0.wrapping_sub(other.0) as i32
    }
}

impl PartialOrd for Seq {
    /// Wrapping comparison: not a total order over all of u32, but one
    /// within any window under 2^31, which is all TCP ever compares.
    fn partial_cmp(&self, other: &Seq) -> Option<Ordering> {
        Some((*self - *other).cmp(&0))
    }
}

impl core::fmt::Display for Seq {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons_wrap() {
        let near_top = Seq(u32::MAX - 10);
        let wrapped = near_top + 20u32;
        assert_eq!(wrapped, Seq(9));
        assert!(wrapped > near_top);
        assert!(near_top < wrapped);
        assert_eq!(wrapped - near_top, 20);
        assert_eq!(near_top - wrapped, -20);
        assert_eq!(wrapped.since(near_top), 20);
        assert!(Seq(5).in_range(near_top, wrapped));
        assert!(!wrapped.in_range(near_top, wrapped));
        assert_eq!(near_top.max(wrapped), wrapped);
        assert_eq!(near_top.min(wrapped), near_top);
    }
}
