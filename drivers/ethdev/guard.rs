//! Burst guards: the lcore's half of the unmap guard (drivers/shim/unmap_guard.c).
//!
//! DPDK 22.11's net_memif unmaps its shared rings on EAL's interrupt thread
//! when the peer disconnects, without waiting for bursts that are running on
//! the polling lcores; a burst caught reading the ring then dies with SIGSEGV.
//! Each queue handle of such a port holds a [`BurstGuard`], whose counter is
//! odd while the handle's thread is inside a burst; the shim's `munmap`
//! waits, on the interrupt thread, until no counter that was odd stays so.
//!
//! Invariants: only the thread that owns the queue handle writes its guard
//! (the handle is not shared); [`BurstGuard::enter`] and [`BurstGuard::leave`]
//! bracket exactly one PMD burst call. The cost is one store before and one
//! after each burst (a locked add before, where membarrier(2) is missing).

use crate::error::{DpdkError, Result};
use crate::sys;
use std::sync::atomic::{compiler_fence, AtomicU64, Ordering};

/// Drivers that unmap memory under running bursts when their link goes
/// down: their queues take a [`BurstGuard`].
const UNMAP_UNDER_BURSTS: [&str; 1] = ["net_memif"];

/// Whether the queues of `driver`'s ports need a [`BurstGuard`].
pub(super) fn needs_guard(driver: &str) -> bool {
    UNMAP_UNDER_BURSTS.contains(&driver)
}

/// One queue handle's burst counter (see the module documentation).
#[derive(Debug)]
pub(super) struct BurstGuard {
    bursts: &'static AtomicU64,
    /// The shim found no membarrier(2): entering is a full barrier itself.
    fenced: bool,
}

impl BurstGuard {
    /// Takes a free guard for the queue handle of `port`.
    pub(super) fn take(port: u16) -> Result<BurstGuard> {
        let mut fenced = 0;
        // SAFETY: the shim hands out each guard once until it is released;
        // `fenced` is valid for writes for the call.
        let bursts = unsafe { sys::dps_unmap_guard_take(&mut fenced) };
        if bursts.is_null() {
            return Err(DpdkError::InvalidArgument(format!(
                "port {port}: every burst guard is taken (one per queue handle of a memif port)"
            )));
        }
        // SAFETY: the guard lives in a static array of the shim, is 64-byte
        // aligned, and is only ever accessed atomically (an `_Atomic
        // uint64_t` there); it is never freed.
        let bursts = unsafe { AtomicU64::from_ptr(bursts) };
        Ok(BurstGuard {
            bursts,
            fenced: fenced != 0,
        })
    }

    /// Before the PMD's burst: the counter goes odd.
    #[inline]
    pub(super) fn enter(&self) {
        if self.fenced {
            self.bursts.fetch_add(1, Ordering::SeqCst);
        } else {
            // Only this thread writes the counter. The interrupt thread's
            // membarrier(2) orders this store before the PMD's reads.
            let n = self.bursts.load(Ordering::Relaxed);
            self.bursts.store(n + 1, Ordering::Relaxed);
            compiler_fence(Ordering::SeqCst);
        }
    }

    /// After the PMD's burst: the counter goes even; everything the burst
    /// read or wrote happens before an interrupt thread sees it.
    #[inline]
    pub(super) fn leave(&self) {
        let n = self.bursts.load(Ordering::Relaxed);
        self.bursts.store(n + 1, Ordering::Release);
    }
}

impl Drop for BurstGuard {
    fn drop(&mut self) {
        // SAFETY: the pointer came from dps_unmap_guard_take and is released
        // once; the counter is even (no burst runs while the handle drops).
        unsafe { sys::dps_unmap_guard_release(self.bursts.as_ptr()) };
    }
}
