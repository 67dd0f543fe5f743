//! Storage for connections' byte rings: a stack-wide memory budget
//! ([`BufferBudget`], Linux's `tcp_mem`) and, per lcore, a pool of freed
//! storage for the next ring of the same size ([`BufferPool`]).
//!
//! Invariants: every byte of ring storage that exists is counted in the
//! budget, pooled storage included; the count is taken when the storage is
//! allocated and given back when it is dropped ([`Storage`]'s `Drop`), so
//! nothing can leak out of the count. The budget's counter is written only
//! when storage is allocated or freed, never per segment: a ring that
//! empties and fills again trades storage with its lcore's pool, which is
//! the lcore's own.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Bytes of ring storage a stack may hold, and how many it holds.
#[derive(Debug)]
pub struct BufferBudget {
    limit: usize,
    used: AtomicUsize,
}

impl BufferBudget {
    /// A budget of `limit` bytes, shared by every pool drawing on it.
    pub fn new(limit: usize) -> Arc<BufferBudget> {
        Arc::new(BufferBudget {
            limit,
            used: AtomicUsize::new(0),
        })
    }

    /// Bytes of storage that exist now (in rings and in pools).
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// The most bytes there may be.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Counts `bytes` in if they fit under the limit.
    fn reserve(&self, bytes: usize) -> bool {
        self.used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                used.checked_add(bytes).filter(|&sum| sum <= self.limit)
            })
            .is_ok()
    }

    fn release(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// One ring's storage, counted in its budget for as long as it exists.
#[derive(Debug)]
pub struct Storage {
    bytes: Box<[u8]>,
    budget: Arc<BufferBudget>,
}

impl Storage {
    /// Its size.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// True for a zero-sized storage (never made by a pool).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.bytes
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        self.budget.release(self.bytes.len());
    }
}

/// Freed storage kept by size for the next ring that needs that size.
#[derive(Debug)]
pub struct BufferPool {
    budget: Arc<BufferBudget>,
    /// (size, storages of that size); a few sizes only (rings grow by
    /// doubling from two starting sizes).
    free: Vec<(usize, Vec<Storage>)>,
    /// Bytes in `free`.
    pooled: usize,
    /// Most bytes kept in `free`; beyond, freed storage goes back to the
    /// allocator.
    keep: usize,
}

impl BufferPool {
    /// A pool drawing on `budget` that keeps up to `keep` bytes of freed
    /// storage.
    pub fn new(budget: Arc<BufferBudget>, keep: usize) -> BufferPool {
        BufferPool {
            budget,
            free: Vec::new(),
            pooled: 0,
            keep,
        }
    }

    /// A pool without a limit (tests, and connections driven by hand).
    pub fn unlimited() -> BufferPool {
        BufferPool::new(BufferBudget::new(usize::MAX), 1 << 24)
    }

    /// The budget it draws on.
    pub fn budget(&self) -> &Arc<BufferBudget> {
        &self.budget
    }

    /// Storage of exactly `size` bytes (its contents are stale: rings
    /// write every byte before reading it), or `None` if the budget cannot
    /// hold it even after the pool gives its own storage back.
    pub fn take(&mut self, size: usize) -> Option<Storage> {
        let size = size.max(1);
        if let Some(storage) = self.pop(size) {
            return Some(storage);
        }
        if !self.budget.reserve(size) {
            // Idle storage of other sizes may be what holds the budget.
            self.free.clear();
            self.pooled = 0;
            if !self.budget.reserve(size) {
                // Counted by the caller, which knows what it was for
                // (`TcpMemoryLimited`, `TcpRcvQDrop`, a write refused).
                return None;
            }
        }
        Some(Storage {
            bytes: vec![0; size].into_boxed_slice(),
            budget: Arc::clone(&self.budget),
        })
    }

    fn pop(&mut self, size: usize) -> Option<Storage> {
        let (_, list) = self.free.iter_mut().find(|(s, _)| *s == size)?;
        let storage = list.pop()?;
        self.pooled -= size;
        Some(storage)
    }

    /// Takes storage back: kept for the next ring of its size while the
    /// pool has room, else freed (and its bytes leave the budget).
    pub fn give(&mut self, storage: Storage) {
        let size = storage.len();
        if self.pooled + size > self.keep || !Arc::ptr_eq(&storage.budget, &self.budget) {
            return; // dropped: its Drop gives the bytes back
        }
        self.pooled += size;
        match self.free.iter_mut().find(|(s, _)| *s == size) {
            Some((_, list)) => list.push(storage),
            None => self.free.push((size, vec![storage])),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_counts_storage_until_it_is_dropped() {
        let budget = BufferBudget::new(100);
        let mut pool = BufferPool::new(Arc::clone(&budget), 0);
        let a = pool.take(60).unwrap();
        assert_eq!(budget.used(), 60);
        assert!(pool.take(50).is_none(), "60 + 50 is over the limit");
        let b = pool.take(40).unwrap();
        assert_eq!(budget.used(), 100);
        drop(a);
        assert_eq!(budget.used(), 40);
        pool.give(b); // the pool keeps nothing: freed
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn freed_storage_is_reused_by_size_and_still_counted() {
        let budget = BufferBudget::new(1000);
        let mut pool = BufferPool::new(Arc::clone(&budget), 500);
        let a = pool.take(300).unwrap();
        let first = a.bytes().as_ptr();
        pool.give(a);
        assert_eq!(budget.used(), 300, "pooled storage still counts");
        let again = pool.take(300).unwrap();
        assert_eq!(again.bytes().as_ptr(), first, "the same storage back");
        assert_eq!(budget.used(), 300);
        pool.give(again);
        // Another size needs the room the pooled storage holds: the pool
        // lets it go rather than refuse.
        let big = pool.take(900).unwrap();
        assert_eq!(budget.used(), 900);
        drop(big);
        drop(pool);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn a_pool_keeps_no_more_than_it_may() {
        let budget = BufferBudget::new(usize::MAX);
        let mut pool = BufferPool::new(Arc::clone(&budget), 250);
        let storages: Vec<_> = (0..3).map(|_| pool.take(100).unwrap()).collect();
        for s in storages {
            pool.give(s);
        }
        assert_eq!(budget.used(), 200, "the third was freed");
    }
}
