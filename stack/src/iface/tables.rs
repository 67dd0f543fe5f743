//! The tables every pipeline shares, published RCU-style: readers take an
//! immutable snapshot and never wait; writers take one lock, change the
//! authoritative copy and publish a new snapshot.
//!
//! [`Tables`] holds three things: the authoritative copy ([`Master`]: the
//! [`SharedState`] plus the neighbour caches with the packets waiting for
//! resolution), behind a mutex; the published snapshot, behind an
//! [`ArcSwap`]; and the snapshot's generation, an atomic a pipeline reads
//! once per poll to learn whether a newer snapshot exists.
//!
//! A pipeline reads through its [`SharedView`]: the snapshot it took at
//! the start of its poll (or after its own last write). Per packet that is
//! plain loads from an `Arc` nobody writes; no lock, no shared write. The
//! grace period is the reference count: an old snapshot is freed when the
//! last pipeline lets go of it at its next refresh.
//!
//! Writes come from control paths (routes, binds, addresses, from any
//! thread that holds an interface) and from the few receive steps that
//! learn something (a neighbour's MAC, a path MTU, a router's default
//! route). Each takes the lock, changes the master and publishes; writes
//! that come in runs (UDP binds, closes and connects) leave the publishing
//! to the next refresh of any pipeline (at the start of its poll), so a run
//! publishes once. Publishing copies only the parts written since the last
//! publish: the large parts of the state are [`CowArc`]s, cloned on their
//! first write after a publish, and shared by snapshots otherwise. The
//! control path's reads ([`SharedView::latest`]) publish first, so they see
//! every write before them.
//!
//! The module knows the state only through [`Authoritative`] (the
//! pipeline's state implements it in `state`), so that it sits below it.
//!
//! Invariants: the published snapshot's generation increases by one per
//! publish, and equals the atomic after the store (a reader that sees the
//! new generation loads at least that snapshot); a snapshot is made from
//! the master under the lock, so it never shows half a write; `pending` is
//! written only under the lock, set after a deferred write and cleared
//! only once the publish that carries it is stored, so a refresh that
//! begins after a deferred write returned sees that write.

use arc_swap::ArcSwap;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// A part of the shared state that snapshots share until it is written:
/// writing through it copies the part if a snapshot still holds it
/// (`Arc::make_mut`).
#[derive(Debug, Default)]
pub(crate) struct CowArc<T>(Arc<T>);

impl<T> CowArc<T> {
    pub(crate) fn new(value: T) -> CowArc<T> {
        CowArc(Arc::new(value))
    }
}

impl<T> Clone for CowArc<T> {
    fn clone(&self) -> Self {
        CowArc(Arc::clone(&self.0))
    }
}

impl<T> Deref for CowArc<T> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: Clone> DerefMut for CowArc<T> {
    fn deref_mut(&mut self) -> &mut T {
        Arc::make_mut(&mut self.0)
    }
}

/// The authoritative copy of some shared state: what the tables need of
/// it.
pub(crate) trait Authoritative {
    /// What readers read: a snapshot of the state.
    type Snapshot;

    /// The next snapshot: the state as it is now, stamped with a
    /// generation one past the last one's.
    fn next_snapshot(&mut self) -> Self::Snapshot;

    /// The generation a snapshot is stamped with.
    fn generation(snapshot: &Self::Snapshot) -> u64;

    /// A number that moves whenever a write changes what readers see of
    /// the neighbours (see [`SharedView::edit_neighbors`]).
    fn neighbor_generations(&self) -> u64;
}

/// The shared tables of one stack: see the module documentation.
#[derive(Debug)]
pub(crate) struct Tables<M: Authoritative> {
    master: Mutex<M>,
    published: ArcSwap<M::Snapshot>,
    generation: AtomicU64,
    /// Pipelines made over these tables so far.
    pipelines: AtomicU16,
    /// The master holds writes not published yet.
    pending: AtomicBool,
}

impl<M: Authoritative> Tables<M> {
    /// Tables holding `master`, published once.
    pub(crate) fn new(mut master: M) -> Arc<Tables<M>> {
        let first = Arc::new(master.next_snapshot());
        Arc::new(Tables {
            generation: AtomicU64::new(M::generation(&first)),
            published: ArcSwap::new(first),
            master: Mutex::new(master),
            pipelines: AtomicU16::new(0),
            pending: AtomicBool::new(false),
        })
    }

    /// The index of a new pipeline over these tables (0 for the first), or
    /// `None` once `most` exist.
    pub(crate) fn next_pipeline(&self, most: u16) -> Option<u16> {
        (self.pipelines)
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < most).then_some(n + 1)
            })
            .ok()
    }

    /// The authoritative copy, locked. Readers see only published
    /// snapshots; a writer that panicked while it held the lock (the
    /// writers here do not: they check before they index) would leave the
    /// copy as it stopped, and the next publish would show it.
    pub(crate) fn lock(&self) -> MutexGuard<'_, M> {
        self.master.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Publishes the writes not published yet, if any (one atomic load
    /// when there are none).
    ///
    /// `pending` is cleared only after the snapshot and its generation are
    /// stored: a reader that loads it clear (and then the generation)
    /// cannot miss a publish still under way, which it would if the flag
    /// were cleared first.
    #[inline]
    fn publish_pending(&self) {
        if self.pending.load(Ordering::Acquire) {
            let mut master = self.lock();
            if self.pending.load(Ordering::Acquire) {
                self.publish(&mut master);
                self.pending.store(false, Ordering::Release);
            }
        }
    }

    /// Changes the authoritative copy with `write` and publishes it (with
    /// any writes still pending); returns what `write` did and the new
    /// snapshot.
    pub(crate) fn edit<R>(&self, write: impl FnOnce(&mut M) -> R) -> (R, Arc<M::Snapshot>) {
        let mut master = self.lock();
        let result = write(&mut master);
        let snapshot = self.publish(&mut master);
        self.pending.store(false, Ordering::Release);
        (result, snapshot)
    }

    /// The newest state, with the writes not published yet published
    /// first.
    pub(crate) fn latest(&self) -> Arc<M::Snapshot> {
        self.publish_pending();
        self.snapshot()
    }

    /// Publishes `master` as the next snapshot and returns it.
    fn publish(&self, master: &mut M) -> Arc<M::Snapshot> {
        let snapshot = Arc::new(master.next_snapshot());
        self.published.store(Arc::clone(&snapshot));
        self.generation
            .store(M::generation(&snapshot), Ordering::Release);
        snapshot
    }

    /// The published snapshot's generation: one atomic load, moving with
    /// every publish (a reader that saw it unchanged has nothing new to
    /// read).
    pub(crate) fn published_generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The newest snapshot.
    pub(crate) fn snapshot(&self) -> Arc<M::Snapshot> {
        self.published.load_full()
    }
}

/// One pipeline's view of the shared tables: the snapshot it reads, and
/// the way to write (see the module documentation). Reads as the
/// snapshot.
#[derive(Debug)]
pub(crate) struct SharedView<M: Authoritative> {
    tables: Arc<Tables<M>>,
    snapshot: Arc<M::Snapshot>,
}

impl<M: Authoritative> Deref for SharedView<M> {
    type Target = M::Snapshot;

    #[inline(always)]
    fn deref(&self) -> &M::Snapshot {
        &self.snapshot
    }
}

impl<M: Authoritative> SharedView<M> {
    /// A view of `tables` at their newest snapshot.
    pub(crate) fn new(tables: Arc<Tables<M>>) -> SharedView<M> {
        let snapshot = tables.snapshot();
        SharedView { tables, snapshot }
    }

    /// The tables this view reads.
    pub(crate) fn tables(&self) -> &Arc<Tables<M>> {
        &self.tables
    }

    /// Publishes the writes not published yet (any pipeline's), then
    /// takes the newest snapshot if it is newer than this view's: two
    /// atomic loads when nothing changed. Returns true if it took one.
    #[inline]
    pub(crate) fn refresh(&mut self) -> bool {
        self.tables.publish_pending();
        let newest = self.tables.generation.load(Ordering::Acquire);
        if newest == M::generation(&self.snapshot) {
            return false;
        }
        self.snapshot = self.tables.snapshot();
        true
    }

    /// The newest state, with the writes not published yet published
    /// first: what the control path's reads see (this view's own snapshot
    /// may be older until its next [`SharedView::refresh`]).
    pub(crate) fn latest(&self) -> Arc<M::Snapshot> {
        self.tables.latest()
    }

    /// Changes the authoritative copy with `write`, publishes it (with any
    /// writes still pending), and reads the result from now on.
    pub(crate) fn edit<R>(&mut self, write: impl FnOnce(&mut M) -> R) -> R {
        let (result, snapshot) = self.tables.edit(write);
        self.snapshot = snapshot;
        result
    }

    /// [`SharedView::edit`] for a write that comes in runs (ten thousand
    /// binds at start): published at the next refresh of any view (every
    /// pipeline refreshes at the start of its poll) or read of the control
    /// path, so a run publishes once, not once per write.
    pub(crate) fn edit_later<R>(&mut self, write: impl FnOnce(&mut M) -> R) -> R {
        let mut master = self.tables.lock();
        let result = write(&mut master);
        self.tables.pending.store(true, Ordering::Release);
        result
    }

    /// [`SharedView::edit`] for a write that may leave every reader's
    /// view as it was (a neighbour confirmed again, a packet queued behind
    /// a request already out): published only if a neighbour cache's
    /// generation moved.
    pub(crate) fn edit_neighbors<R>(&mut self, write: impl FnOnce(&mut M) -> R) -> R {
        let mut master = self.tables.lock();
        let before = master.neighbor_generations();
        let result = write(&mut master);
        if master.neighbor_generations() != before {
            self.snapshot = self.tables.publish(&mut master);
            self.tables.pending.store(false, Ordering::Release);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    /// A master holding one number; its snapshots carry it.
    #[derive(Debug, Default)]
    struct Number {
        value: u64,
        generation: u64,
    }

    impl Authoritative for Number {
        type Snapshot = (u64, u64);

        fn next_snapshot(&mut self) -> (u64, u64) {
            self.generation += 1;
            (self.value, self.generation)
        }

        fn generation(snapshot: &(u64, u64)) -> u64 {
            snapshot.1
        }

        fn neighbor_generations(&self) -> u64 {
            0
        }
    }

    #[test]
    fn a_refresh_sees_every_deferred_write_that_returned_before_it_even_mid_publish() {
        const WRITES: u64 = 20_000;
        let tables = Tables::new(Number::default());
        let written = Arc::new(AtomicU64::new(0));
        let writer = {
            let (mut view, written) = (SharedView::new(Arc::clone(&tables)), Arc::clone(&written));
            std::thread::spawn(move || {
                for value in 1..=WRITES {
                    view.edit_later(|master| master.value = value);
                    written.store(value, Ordering::SeqCst);
                    // The writer's own refresh publishes, racing the reader's.
                    view.refresh();
                }
            })
        };
        let mut reader = SharedView::new(Arc::clone(&tables));
        let (mut stale, mut first_stale) = (0u64, None);
        // Bounded by the writer's bounded loop: reads until it is done.
        loop {
            let before = written.load(Ordering::SeqCst);
            reader.refresh();
            if reader.0 < before {
                stale += 1;
                first_stale.get_or_insert((reader.0, before));
            }
            if before == WRITES || writer.is_finished() {
                break;
            }
        }
        writer.join().unwrap();
        assert_eq!(
            written.load(Ordering::SeqCst),
            WRITES,
            "the writer finished"
        );
        assert_eq!(
            stale, 0,
            "refreshes missed a write made before them, the first (seen, written): {first_stale:?}"
        );
    }
}
