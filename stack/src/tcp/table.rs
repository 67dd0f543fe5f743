//! The established-connection table: 4-tuple to connection, read without
//! locks, written under per-bucket locks, with `connect()`'s ephemeral port
//! search (as Linux's `__inet_hash_connect`, which gained the same lock-free
//! pre-check before its bucket lock).
//!
//! Reads are RCU-style, through [`arc_swap`]: each bucket's chain is an
//! immutable array behind an `ArcSwap`; a reader loads it (no lock, no
//! waiting on writers) and scans it. Writers (connects from application
//! threads, the lcore accepting or closing) take the bucket's mutex, copy
//! the chain with their change, and publish the copy with one store (read,
//! copy, update); the old chain is freed when its last reader lets go (the
//! grace period, by reference count rather than epochs, which needs no
//! raw-pointer code in this crate).
//!
//! In front of each chain sits a summary readers check first with plain
//! atomic loads: the fingerprints (keyed hashes) of up to four entries,
//! each marked if its entry is in TIME-WAIT, and an overflow flag for
//! longer chains. "No fingerprint matches" answers a lookup without
//! touching the chain; a match sends it to the chain for the exact entry.
//! The summary is written under the bucket lock, before a removal is
//! published and after an insertion is, so a racing reader can only see an
//! entry that is gone as present (harmless: exact checks follow under the
//! lock) and never miss one that was published before it started.
//!
//! [`ConnTable::connect`] picks the local port as RFC 6056 algorithm 4 (and
//! Linux) do: a keyed hash of (local address, remote address, remote port)
//! gives the starting offset, a perturbation table indexed by a second hash
//! moves it on between connects, and candidates are tried in order. Each
//! candidate is first checked against the summary (a few loads, no lock,
//! no shared write); only one that looks free, or whose holder is in
//! TIME-WAIT, takes the bucket lock, where it is checked exactly before
//! insertion.
//! A candidate held by a TIME-WAIT entry the caller says may be reused is
//! taken over. [`ConnectMode::LockFirst`] skips the lock-free check (the
//! behaviour before the seed's patch), for the `connect-crowded` benchmark.
//!
//! [`ConnTable::connect_placed`] prefers ports a predicate accepts (those
//! whose return traffic the device's RSS sends to the connecting lcore):
//! a first pass tries, in the same order, only the ports it accepts; if
//! none of them is free, a second pass tries the others, so a connect
//! never fails for want of a fitting port. The result says which pass
//! found the port.

use arc_swap::ArcSwap;
use core::net::SocketAddr;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A connection's addresses: ours and the peer's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FourTuple {
    /// Our address and port.
    pub local: SocketAddr,
    /// The peer's address and port.
    pub remote: SocketAddr,
}

/// What a [`ConnTable::connect`] searches: a local port for a connection
/// from `local_ip` to `remote`, among the ports of `range` (inclusive),
/// checked as `mode` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortSearch {
    /// Our address.
    pub local_ip: core::net::IpAddr,
    /// The peer's address and port.
    pub remote: SocketAddr,
    /// The ephemeral range (inclusive; either order).
    pub range: (u16, u16),
    /// How candidates are checked.
    pub mode: ConnectMode,
}

/// How `connect` checks candidate ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectMode {
    /// A lock-free lookup first; the lock only for a port that looks free.
    RcuFirst,
    /// The bucket lock for every candidate (for comparison only).
    LockFirst,
}

/// The port [`ConnTable::connect_placed`] took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placed<V> {
    /// The local port.
    pub port: u16,
    /// The value of the TIME-WAIT entry taken over, if any (its owner must
    /// let it go).
    pub replaced: Option<V>,
    /// The port is one the predicate accepted: false only when none it
    /// accepts was free.
    pub fits: bool,
}

/// Why `connect` found no port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectError {
    /// Every port of the range is in use towards that peer
    /// (`EADDRNOTAVAIL`).
    AddressNotAvailable,
}

impl core::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("no free local port towards that peer (address not available)")
    }
}

impl std::error::Error for ConnectError {}

/// Entries a bucket's summary describes.
const SUMMARY: usize = 4;

/// One bucket: the readers' summary, its chain (replaced whole on every
/// change) and the lock writers take.
struct Bucket<V> {
    /// Fingerprints (bit 0: the entry is in TIME-WAIT), 0 for a free slot.
    summary: [AtomicU64; SUMMARY],
    /// The chain has more entries than the summary holds.
    overflow: AtomicBool,
    chain: ArcSwap<Vec<Entry<V>>>,
    lock: Mutex<()>,
}

/// What a table entry tells the summary.
pub trait TableValue: Copy + Send + Sync {
    /// True if the connection is in TIME-WAIT (a connect may take its
    /// 4-tuple over, so the pre-check must not rule it out).
    fn in_time_wait(&self) -> bool;
}

impl TableValue for u32 {
    /// Test values: odd ones stand for TIME-WAIT entries.
    fn in_time_wait(&self) -> bool {
        self % 2 == 1
    }
}

/// What the summary says about a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    Absent,
    Present,
    PresentTimeWait,
    /// The summary cannot tell (the chain overflowed it).
    Unknown,
}

impl<V> Bucket<V> {
    fn seen(&self, fingerprint: u64) -> Seen {
        for slot in &self.summary {
            let value = slot.load(Ordering::Acquire);
            if value & !1 == fingerprint {
                return if value & 1 == 1 {
                    Seen::PresentTimeWait
                } else {
                    Seen::Present
                };
            }
        }
        if self.overflow.load(Ordering::Acquire) {
            Seen::Unknown
        } else {
            Seen::Absent
        }
    }
}

/// Size of the perturbation table (Linux: 2^16 entries; fewer suffice for
/// one process).
const PERTURB: usize = 256;

/// The table. See the module documentation.
pub struct ConnTable<V> {
    buckets: Box<[Bucket<V>]>,
    mask: usize,
    /// Keys of the bucket and fingerprint hash.
    keys: [u64; 4],
    /// Keys of the port search's offset and perturbation index (RFC 6056
    /// F and G): their own, so the ports a peer sees tell nothing about
    /// where entries sit.
    port_keys: [u64; 4],
    perturb: Box<[AtomicU32]>,
}

impl<V> core::fmt::Debug for ConnTable<V> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ConnTable")
            .field("buckets", &self.buckets.len())
            .finish()
    }
}

/// The folded multiply of wyhash and ahash: a 128-bit product's halves
/// xored.
fn fold(a: u64, b: u64) -> u64 {
    let product = u128::from(a) * u128::from(b);
    (product as u64) ^ ((product >> 64) as u64)
}

/// Four 64-bit keys from one secret (splitmix64).
fn keys(secret: u64) -> [u64; 4] {
    let mut state = secret;
    core::array::from_fn(|_| {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    })
}

fn ip_bits(ip: core::net::IpAddr) -> u128 {
    match ip {
        core::net::IpAddr::V4(v4) => v4.to_ipv6_mapped().to_bits(),
        core::net::IpAddr::V6(v6) => v6.to_bits(),
    }
}

/// A keyed hash of two addresses and two ports: three folded multiplies
/// with secret keys (a peer who does not know the secret cannot aim at a
/// bucket or predict port offsets; the per-candidate cost stays a few
/// nanoseconds, so the lock, not the hash, is what the pre-check saves).
fn keyed_hash(keys: &[u64; 4], a: core::net::IpAddr, b: core::net::IpAddr, ports: u32) -> u64 {
    let (a, b) = (ip_bits(a), ip_bits(b));
    let h = fold((a as u64) ^ keys[0], ((a >> 64) as u64) ^ keys[1]);
    let h = fold(h ^ (b as u64) ^ keys[2], ((b >> 64) as u64) ^ keys[3]);
    fold(h ^ u64::from(ports), keys[0] ^ keys[3])
}

fn tuple_hash(keys: &[u64; 4], t: &FourTuple) -> u64 {
    let ports = u32::from(t.local.port()) << 16 | u32::from(t.remote.port());
    keyed_hash(keys, t.local.ip(), t.remote.ip(), ports)
}

impl<V: TableValue> ConnTable<V> {
    /// A table of at least `buckets` buckets (rounded up to a power of
    /// two), hashing entries with `secret` and picking ports with
    /// `port_secret` (use random values, independent of each other).
    pub fn new(buckets: usize, secret: u64, port_secret: u64) -> ConnTable<V> {
        let count = buckets.max(1).next_power_of_two();
        let empty = Arc::new(Vec::new());
        ConnTable {
            buckets: (0..count)
                .map(|_| Bucket {
                    summary: core::array::from_fn(|_| AtomicU64::new(0)),
                    overflow: AtomicBool::new(false),
                    chain: ArcSwap::new(Arc::clone(&empty)),
                    lock: Mutex::new(()),
                })
                .collect(),
            mask: count - 1,
            keys: keys(secret),
            port_keys: keys(port_secret),
            perturb: (0..PERTURB).map(|_| AtomicU32::new(0)).collect(),
        }
    }

    /// The key's bucket and fingerprint (bit 1 set so it is never 0; bit
    /// 0 left for the TIME-WAIT mark).
    fn locate(&self, key: &FourTuple) -> (&Bucket<V>, u64) {
        let hash = tuple_hash(&self.keys, key);
        let fingerprint = (hash >> 16 | 2) & !1;
        (&self.buckets[hash as usize & self.mask], fingerprint)
    }

    /// The value for `key`, read without locks: the summary first, the
    /// chain only on a fingerprint match.
    pub fn lookup(&self, key: &FourTuple) -> Option<V> {
        let (bucket, fingerprint) = self.locate(key);
        if bucket.seen(fingerprint) == Seen::Absent {
            return None;
        }
        let chain = bucket.chain.load();
        chain.iter().find(|(k, _, _)| k == key).map(|&(_, v, _)| v)
    }

    /// Inserts `key`, unless it is present (then its value is returned).
    pub fn insert(&self, key: FourTuple, value: V) -> Result<(), V> {
        let (bucket, fingerprint) = self.locate(&key);
        let _locked = bucket.lock.lock().unwrap_or_else(|e| e.into_inner());
        let chain = bucket.chain.load_full();
        if let Some(&(_, existing, _)) = chain.iter().find(|(k, _, _)| *k == key) {
            return Err(existing);
        }
        bucket.put(&chain, (key, value, fingerprint));
        Ok(())
    }

    /// Removes `key` if its value is `expected` (an owner letting go of an
    /// entry someone may have taken over); true if it did.
    pub fn remove_if(&self, key: &FourTuple, expected: V) -> bool
    where
        V: PartialEq,
    {
        let (bucket, fingerprint) = self.locate(key);
        let _locked = bucket.lock.lock().unwrap_or_else(|e| e.into_inner());
        let chain = bucket.chain.load_full();
        match chain.iter().find(|(k, _, _)| k == key) {
            Some(&(_, value, _)) if value == expected => {
                bucket.take(&chain, key, fingerprint);
                true
            }
            _ => false,
        }
    }

    /// Removes `key`; returns its value if it was there.
    pub fn remove(&self, key: &FourTuple) -> Option<V> {
        let (bucket, fingerprint) = self.locate(key);
        let _locked = bucket.lock.lock().unwrap_or_else(|e| e.into_inner());
        let chain = bucket.chain.load_full();
        let &(_, value, _) = chain.iter().find(|(k, _, _)| k == key)?;
        bucket.take(&chain, key, fingerprint);
        Some(value)
    }

    /// Replaces the value of a present `key` (e.g. on entering
    /// TIME-WAIT); false if it is absent.
    pub fn update(&self, key: &FourTuple, value: V) -> bool {
        let (bucket, fingerprint) = self.locate(key);
        let _locked = bucket.lock.lock().unwrap_or_else(|e| e.into_inner());
        let chain = bucket.chain.load_full();
        if !chain.iter().any(|(k, _, _)| k == key) {
            return false;
        }
        bucket.put(&chain, (*key, value, fingerprint));
        true
    }

    /// Picks a local port in `search.range` (inclusive) for a connection
    /// from `search.local_ip` to `search.remote`, inserts it with `value`,
    /// and returns the port and the value it took over, if any: an existing
    /// entry for a candidate is taken over if `reusable` says so (a
    /// TIME-WAIT entry per RFC 6191's rules; its owner must let it go).
    /// `in_use(port)` excludes ports bound otherwise (listeners).
    pub fn connect(
        &self,
        search: PortSearch,
        value: V,
        reusable: impl Fn(&V) -> bool,
        in_use: impl Fn(u16) -> bool,
    ) -> Result<(u16, Option<V>), ConnectError> {
        let placed = self.connect_placed(search, value, reusable, in_use, |_| true)?;
        Ok((placed.port, placed.replaced))
    }

    /// [`ConnTable::connect`], preferring the ports `fits` accepts: they are
    /// tried first, in the search's order; the others only if none of them
    /// is free. `fits` is asked before any bucket is touched, so it should
    /// be cheap (a few operations: it may be asked of every port).
    pub fn connect_placed(
        &self,
        search: PortSearch,
        value: V,
        reusable: impl Fn(&V) -> bool,
        in_use: impl Fn(u16) -> bool,
        fits: impl Fn(u16) -> bool,
    ) -> Result<Placed<V>, ConnectError> {
        let PortSearch {
            local_ip,
            remote,
            range,
            mode,
        } = search;
        let (low, high) = (range.0.min(range.1), range.0.max(range.1));
        let size = u32::from(high - low) + 1;
        // RFC 6056 algorithm 4: F (the offset) and G (the perturbation
        // index) are keyed hashes of the destination.
        let destination = keyed_hash(
            &self.port_keys,
            local_ip,
            remote.ip(),
            u32::from(remote.port()),
        );
        let offset = destination as u32;
        let index = (destination >> 32) as usize % PERTURB;
        let perturbation = self.perturb[index].load(Ordering::Relaxed);
        // The fitting ports first; the others only if none was free.
        for fitting in [true, false] {
            for i in 0..size {
                let port = low + (offset.wrapping_add(perturbation).wrapping_add(i) % size) as u16;
                if fits(port) != fitting || in_use(port) {
                    continue;
                }
                let key = FourTuple {
                    local: SocketAddr::new(local_ip, port),
                    remote,
                };
                let (bucket, fingerprint) = self.locate(&key);
                if mode == ConnectMode::RcuFirst && bucket.seen(fingerprint) == Seen::Present {
                    continue; // looks taken, not by a TIME-WAIT entry
                }
                let _locked = bucket.lock.lock().unwrap_or_else(|e| e.into_inner());
                let chain = bucket.chain.load_full();
                let replaced = chain.iter().find(|(k, _, _)| *k == key).map(|e| e.1);
                if replaced
                    .as_ref()
                    .is_some_and(|existing| !reusable(existing))
                {
                    continue;
                }
                bucket.put(&chain, (key, value, fingerprint));
                // Move the next search for this destination on (RFC 6056
                // 4: by the tries it took, plus one; so the next search
                // starts after this port).
                self.perturb[index].fetch_add(i + 1, Ordering::Relaxed);
                return Ok(Placed {
                    port,
                    replaced,
                    fits: fitting,
                });
            }
        }
        Err(ConnectError::AddressNotAvailable)
    }

    /// Every entry (a snapshot, for `show` commands and tests).
    pub fn entries(&self) -> Vec<(FourTuple, V)> {
        self.buckets
            .iter()
            .flat_map(|b| {
                b.chain
                    .load_full()
                    .iter()
                    .map(|&(k, v, _)| (k, v))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Number of entries (a snapshot).
    pub fn len(&self) -> usize {
        self.buckets.iter().map(|b| b.chain.load().len()).sum()
    }

    /// True if there are no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A chain entry: the key, its value, its fingerprint.
type Entry<V> = (FourTuple, V, u64);

impl<V: TableValue> Bucket<V> {
    /// Publishes the chain with `entry` added or (same key) replaced, then
    /// marks it in the summary (the lock is held).
    fn put(&self, chain: &[Entry<V>], entry: Entry<V>) {
        let (key, value, fingerprint) = entry;
        let replacing = chain.iter().any(|(k, _, _)| *k == key);
        let mut next: Vec<Entry<V>> = Vec::with_capacity(chain.len() + 1);
        next.extend(chain.iter().filter(|(k, _, _)| *k != key).copied());
        next.push(entry);
        self.chain.store(Arc::new(next));
        let marked = fingerprint | u64::from(value.in_time_wait());
        let slot = if replacing {
            self.summary
                .iter()
                .find(|s| s.load(Ordering::Relaxed) & !1 == fingerprint)
        } else {
            self.summary.iter().find(|s| s.load(Ordering::Relaxed) == 0)
        };
        match slot {
            Some(slot) => slot.store(marked, Ordering::Release),
            None if !replacing => self.overflow.store(true, Ordering::Release),
            None => {} // described by the overflow flag already
        }
    }

    /// Takes `key` out of the summary, then publishes the chain without it
    /// (the lock is held); a chain short enough again gets a full summary
    /// before the overflow flag is cleared.
    fn take(&self, chain: &[Entry<V>], key: &FourTuple, fingerprint: u64) {
        if let Some(slot) = self
            .summary
            .iter()
            .find(|s| s.load(Ordering::Relaxed) & !1 == fingerprint)
        {
            slot.store(0, Ordering::Release);
        }
        let next: Vec<Entry<V>> = chain.iter().filter(|(k, _, _)| k != key).copied().collect();
        let describe = next.len() <= SUMMARY && self.overflow.load(Ordering::Relaxed);
        if describe {
            for (i, slot) in self.summary.iter().enumerate() {
                let marked = next
                    .get(i)
                    .map_or(0, |&(_, value, fp)| fp | u64::from(value.in_time_wait()));
                slot.store(marked, Ordering::Release);
            }
        }
        self.chain.store(Arc::new(next));
        if describe {
            self.overflow.store(false, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests;
