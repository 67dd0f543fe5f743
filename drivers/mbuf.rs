//! [`Mbuf`]: an owned DPDK packet buffer (`rte_mbuf`).
//!
//! Invariants:
//! - An `Mbuf` is the sole owner of its `rte_mbuf` (reference count 1, as
//!   DPDK hands them out from rx and alloc); dropping it returns the whole
//!   chain to its pool. So `data_mut` may write in place.
//! - It is `repr(transparent)` over a non-null `*mut rte_mbuf`, so a burst of
//!   them is exactly the pointer array `rte_eth_rx_burst`/`tx_burst` take.
//! - Accessors read the mbuf's fields directly (no call); changes to lengths
//!   go through DPDK's own functions so multi-segment rules are DPDK's.

use crate::stack::port::{Buf, ChecksumStatus, RxOffload};
use crate::sys;
use arrayvec::ArrayVec;
use std::ptr::NonNull;

/// An owned packet buffer. See the module documentation.
#[repr(transparent)]
#[derive(Debug)]
pub struct Mbuf(NonNull<sys::rte_mbuf>);

// SAFETY: an Mbuf is the only handle to its rte_mbuf, and DPDK allows an mbuf
// to be used and freed on any thread (free goes back to the pool, MP-safe).
unsafe impl Send for Mbuf {}

impl Mbuf {
    /// Takes ownership of a raw mbuf.
    ///
    /// # Safety
    /// `raw` must point to a valid mbuf that nothing else owns or frees.
    #[inline]
    pub unsafe fn from_raw(raw: NonNull<sys::rte_mbuf>) -> Mbuf {
        Mbuf(raw)
    }

    /// Gives up ownership; the caller must free or transmit the mbuf.
    #[inline]
    pub fn into_raw(self) -> NonNull<sys::rte_mbuf> {
        let raw = self.0;
        std::mem::forget(self);
        raw
    }

    #[inline]
    fn raw(&self) -> &sys::rte_mbuf {
        // SAFETY: the pointer is valid and owned by self (type invariant).
        unsafe { self.0.as_ref() }
    }

    /// Number of segments in the chain.
    #[inline]
    pub fn segments(&self) -> u16 {
        self.raw().nb_segs
    }

    /// Length of the first segment.
    #[inline]
    pub fn data_len(&self) -> usize {
        usize::from(self.raw().data_len)
    }

    /// The port the packet arrived on.
    #[inline]
    pub fn input_port(&self) -> u16 {
        self.raw().port
    }

    /// DPDK's offload flags (`RTE_MBUF_F_*`).
    #[inline]
    pub fn offload_flags(&self) -> u64 {
        self.raw().ol_flags
    }

    /// The RSS hash, if the device computed one.
    #[inline]
    pub fn rss_hash(&self) -> Option<u32> {
        let m = self.raw();
        if m.ol_flags & sys::RTE_MBUF_F_RX_RSS_HASH == 0 {
            return None;
        }
        // SAFETY: with RTE_MBUF_F_RX_RSS_HASH set, the `rss` member of the
        // hash union is the one the driver wrote.
        Some(unsafe { m.__bindgen_anon_2.hash.rss })
    }
}

impl Drop for Mbuf {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: we own the mbuf (type invariant); it is not used after this.
        unsafe { sys::dps_pktmbuf_free(self.0.as_ptr()) }
    }
}

/// Frees a whole burst with one bulk call (cheaper than dropping one by one).
#[inline]
pub fn free_burst<const N: usize>(burst: &mut ArrayVec<Mbuf, N>) {
    let len = burst.len();
    if len == 0 {
        return;
    }
    // SAFETY: the first `len` elements are owned mbufs laid out as a pointer
    // array (repr(transparent)); after the bulk free, set_len(0) forgets them
    // so they are not freed twice.
    unsafe {
        sys::rte_pktmbuf_free_bulk(burst.as_mut_ptr().cast::<*mut sys::rte_mbuf>(), len as u32);
        burst.set_len(0);
    }
}

fn checksum_status(flags: u64, mask: u64, good: u64, bad: u64) -> ChecksumStatus {
    match flags & mask {
        f if f == good => ChecksumStatus::Good,
        f if f == bad => ChecksumStatus::Bad,
        _ => ChecksumStatus::Unknown,
    }
}

impl Buf for Mbuf {
    #[inline]
    fn data(&self) -> &[u8] {
        let m = self.raw();
        // SAFETY: buf_addr + data_off .. + data_len lies inside the mbuf's
        // data buffer (DPDK invariant), and self owns it for this borrow.
        unsafe {
            std::slice::from_raw_parts(
                m.buf_addr.cast::<u8>().add(usize::from(m.data_off)),
                usize::from(m.data_len),
            )
        }
    }

    #[inline]
    fn data_mut(&mut self) -> &mut [u8] {
        let m = self.raw();
        let (addr, off, len) = (m.buf_addr, m.data_off, m.data_len);
        // SAFETY: as in `data`; `&mut self` makes this the only borrow, and
        // the buffer is not shared (reference count 1, type invariant).
        unsafe {
            std::slice::from_raw_parts_mut(
                addr.cast::<u8>().add(usize::from(off)),
                usize::from(len),
            )
        }
    }

    #[inline]
    fn len(&self) -> usize {
        self.raw().pkt_len as usize
    }

    #[inline]
    fn headroom(&self) -> usize {
        usize::from(self.raw().data_off)
    }

    #[inline]
    fn tailroom(&self) -> usize {
        // SAFETY: reads fields of the last segment of an owned chain.
        usize::from(unsafe { sys::dps_pktmbuf_tailroom(self.0.as_ptr()) })
    }

    #[inline]
    fn prepend(&mut self, len: usize) -> Option<&mut [u8]> {
        let len16 = u16::try_from(len).ok()?;
        // SAFETY: rte_pktmbuf_prepend checks the headroom and returns NULL,
        // leaving the mbuf unchanged, if it is too small.
        let start = unsafe { sys::dps_pktmbuf_prepend(self.0.as_ptr(), len16) };
        let start = NonNull::new(start.cast::<u8>())?;
        // SAFETY: the `len` bytes at `start` are now the front of the data,
        // inside the buffer, and borrowed through &mut self.
        Some(unsafe { std::slice::from_raw_parts_mut(start.as_ptr(), len) })
    }

    #[inline]
    fn append(&mut self, len: usize) -> Option<&mut [u8]> {
        let len16 = u16::try_from(len).ok()?;
        // SAFETY: rte_pktmbuf_append checks the tailroom of the last segment
        // and returns NULL, leaving the mbuf unchanged, if it is too small.
        let start = unsafe { sys::dps_pktmbuf_append(self.0.as_ptr(), len16) };
        let start = NonNull::new(start.cast::<u8>())?;
        // SAFETY: the `len` new bytes at `start` are inside the last
        // segment's buffer and borrowed through &mut self.
        Some(unsafe { std::slice::from_raw_parts_mut(start.as_ptr(), len) })
    }

    #[inline]
    fn adjust(&mut self, len: usize) -> bool {
        let Ok(len16) = u16::try_from(len) else {
            return false;
        };
        // SAFETY: rte_pktmbuf_adj checks the first segment's length and
        // returns NULL, mbuf unchanged, if it is too short.
        !unsafe { sys::dps_pktmbuf_adj(self.0.as_ptr(), len16) }.is_null()
    }

    #[inline]
    fn trim(&mut self, len: usize) -> bool {
        let Ok(len16) = u16::try_from(len) else {
            return false;
        };
        // SAFETY: rte_pktmbuf_trim checks the last segment's length and
        // returns -1, mbuf unchanged, if it is too short.
        unsafe { sys::dps_pktmbuf_trim(self.0.as_ptr(), len16) == 0 }
    }

    #[inline]
    fn prefetch(&self) {
        #[cfg(target_arch = "x86_64")]
        {
            let m = self.raw();
            // SAFETY: prefetch is only a hint: it never faults, even on an
            // invalid address, and the address is inside the mbuf's buffer.
            unsafe {
                let addr = m.buf_addr.cast::<u8>().add(usize::from(m.data_off));
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    addr.cast::<i8>(),
                );
            }
        }
    }

    #[inline(always)]
    fn rx_offload(&self) -> RxOffload {
        let flags = self.raw().ol_flags;
        // Neither checksum checked (no offload, or a device without it: one
        // test instead of decoding both fields, per packet).
        if flags & (sys::RTE_MBUF_F_RX_IP_CKSUM_MASK | sys::RTE_MBUF_F_RX_L4_CKSUM_MASK) == 0 {
            return RxOffload {
                ip_checksum: ChecksumStatus::Unknown,
                l4_checksum: ChecksumStatus::Unknown,
                rss_hash: self.rss_hash(),
            };
        }
        RxOffload {
            ip_checksum: checksum_status(
                flags,
                sys::RTE_MBUF_F_RX_IP_CKSUM_MASK,
                sys::RTE_MBUF_F_RX_IP_CKSUM_GOOD,
                sys::RTE_MBUF_F_RX_IP_CKSUM_BAD,
            ),
            l4_checksum: checksum_status(
                flags,
                sys::RTE_MBUF_F_RX_L4_CKSUM_MASK,
                sys::RTE_MBUF_F_RX_L4_CKSUM_GOOD,
                sys::RTE_MBUF_F_RX_L4_CKSUM_BAD,
            ),
            rss_hash: self.rss_hash(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_flags_map_to_status() {
        use sys::*;
        let ip = |f| {
            checksum_status(
                f,
                RTE_MBUF_F_RX_IP_CKSUM_MASK,
                RTE_MBUF_F_RX_IP_CKSUM_GOOD,
                RTE_MBUF_F_RX_IP_CKSUM_BAD,
            )
        };
        assert_eq!(ip(RTE_MBUF_F_RX_IP_CKSUM_GOOD), ChecksumStatus::Good);
        assert_eq!(ip(RTE_MBUF_F_RX_IP_CKSUM_BAD), ChecksumStatus::Bad);
        assert_eq!(ip(RTE_MBUF_F_RX_IP_CKSUM_UNKNOWN), ChecksumStatus::Unknown);
        // NONE (both bits) means "valid but not checked": verify in software.
        assert_eq!(ip(RTE_MBUF_F_RX_IP_CKSUM_NONE), ChecksumStatus::Unknown);
    }

    #[test]
    fn mbuf_is_a_pointer() {
        assert_eq!(
            std::mem::size_of::<Mbuf>(),
            std::mem::size_of::<*mut sys::rte_mbuf>()
        );
    }
}
