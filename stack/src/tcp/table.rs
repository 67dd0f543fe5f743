//! The established-connection table: 4-tuple to connection, read without
//! locks, written under per-bucket locks, with `connect()`'s ephemeral port
//! search (seed 001, Linux's `__inet_hash_connect`).
//!
//! Reads are RCU-style, through [`arc_swap`]: each bucket's chain is an
//! immutable array behind an `ArcSwap`; a reader loads it (no lock, no
//! waiting on writers) and scans it. Writers (connects from application
//! threads, the lcore accepting or closing) take the bucket's mutex, copy
//! the chain with their change, and publish the copy with one store (read,
//! copy, update); the old chain is freed when its last reader lets go (the
//! grace period, by reference count rather than epochs, which keeps this
//! crate free of `unsafe`).
//!
//! [`ConnTable::connect`] picks the local port as RFC 6056 algorithm 4 (and
//! Linux) do: a keyed hash of (local address, remote address, remote port)
//! gives the starting offset, a perturbation table indexed by a second hash
//! moves it on between connects, and candidates are tried in order. Each
//! candidate is first checked with a lock-free lookup; only one that looks
//! free takes the bucket lock, where it is checked again before insertion.
//! A candidate held by a TIME-WAIT entry the caller says may be reused is
//! taken over. [`ConnectMode::LockFirst`] skips the lock-free check (the
//! behaviour before the seed's patch), for the `connect-crowded` benchmark.

use arc_swap::ArcSwap;
use core::net::SocketAddr;
use core::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// A connection's addresses: ours and the peer's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FourTuple {
    /// Our address and port.
    pub local: SocketAddr,
    /// The peer's address and port.
    pub remote: SocketAddr,
}

/// How `connect` checks candidate ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectMode {
    /// A lock-free lookup first; the lock only for a port that looks free.
    RcuFirst,
    /// The bucket lock for every candidate (for comparison only).
    LockFirst,
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

/// One bucket: its chain (replaced whole on every change) and the lock
/// writers take.
struct Bucket<V> {
    chain: ArcSwap<Vec<(FourTuple, V)>>,
    lock: Mutex<()>,
}

/// Size of the perturbation table (Linux: 2^16 entries; fewer suffice for
/// one process).
const PERTURB: usize = 256;

/// The table. See the module documentation.
pub struct ConnTable<V> {
    buckets: Box<[Bucket<V>]>,
    mask: usize,
    keys: [u64; 4],
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

impl<V: Copy + Send + Sync> ConnTable<V> {
    /// A table of at least `buckets` buckets (rounded up to a power of
    /// two), hashing with `secret` (use a random value).
    pub fn new(buckets: usize, secret: u64) -> ConnTable<V> {
        let count = buckets.max(1).next_power_of_two();
        let empty = Arc::new(Vec::new());
        ConnTable {
            buckets: (0..count)
                .map(|_| Bucket {
                    chain: ArcSwap::new(Arc::clone(&empty)),
                    lock: Mutex::new(()),
                })
                .collect(),
            mask: count - 1,
            keys: keys(secret),
            perturb: (0..PERTURB).map(|_| AtomicU32::new(0)).collect(),
        }
    }

    fn bucket(&self, key: &FourTuple) -> &Bucket<V> {
        &self.buckets[tuple_hash(&self.keys, key) as usize & self.mask]
    }

    /// The value for `key`, read without locks.
    pub fn lookup(&self, key: &FourTuple) -> Option<V> {
        let chain = self.bucket(key).chain.load();
        chain.iter().find(|(k, _)| k == key).map(|&(_, v)| v)
    }

    /// Inserts `key`, unless it is present (then its value is returned).
    pub fn insert(&self, key: FourTuple, value: V) -> Result<(), V> {
        let bucket = self.bucket(&key);
        let _locked = bucket.lock.lock().unwrap_or_else(|e| e.into_inner());
        let chain = bucket.chain.load_full();
        if let Some(&(_, existing)) = chain.iter().find(|(k, _)| *k == key) {
            return Err(existing);
        }
        publish(bucket, &chain, None, Some((key, value)));
        Ok(())
    }

    /// Removes `key`; returns its value if it was there.
    pub fn remove(&self, key: &FourTuple) -> Option<V> {
        let bucket = self.bucket(key);
        let _locked = bucket.lock.lock().unwrap_or_else(|e| e.into_inner());
        let chain = bucket.chain.load_full();
        let &(_, value) = chain.iter().find(|(k, _)| k == key)?;
        publish(bucket, &chain, Some(key), None);
        Some(value)
    }

    /// Picks a local port in `range` (inclusive) for a connection from
    /// `local_ip` to `remote`, inserts it with `value`, and returns the
    /// port. An existing entry for a candidate is taken over if `reusable`
    /// says so (a TIME-WAIT entry per RFC 6191's rules); `in_use(port)`
    /// excludes ports bound otherwise (listeners).
    #[allow(clippy::too_many_arguments)]
    pub fn connect(
        &self,
        local_ip: core::net::IpAddr,
        remote: SocketAddr,
        range: (u16, u16),
        value: V,
        mode: ConnectMode,
        reusable: impl Fn(&V) -> bool,
        in_use: impl Fn(u16) -> bool,
    ) -> Result<u16, ConnectError> {
        let (low, high) = (range.0.min(range.1), range.0.max(range.1));
        let size = u32::from(high - low) + 1;
        // RFC 6056 algorithm 4: F (the offset) and G (the perturbation
        // index) are keyed hashes of the destination.
        let destination = keyed_hash(&self.keys, local_ip, remote.ip(), u32::from(remote.port()));
        let offset = destination as u32;
        let index = (destination >> 32) as usize % PERTURB;
        let perturbation = self.perturb[index].load(Ordering::Relaxed);
        for i in 0..size {
            let port = low + (offset.wrapping_add(perturbation).wrapping_add(i) % size) as u16;
            if in_use(port) {
                continue;
            }
            let key = FourTuple {
                local: SocketAddr::new(local_ip, port),
                remote,
            };
            if mode == ConnectMode::RcuFirst {
                if let Some(existing) = self.lookup(&key) {
                    if !reusable(&existing) {
                        continue;
                    }
                }
            }
            let bucket = self.bucket(&key);
            let _locked = bucket.lock.lock().unwrap_or_else(|e| e.into_inner());
            let chain = bucket.chain.load_full();
            let replace = match chain.iter().find(|(k, _)| *k == key) {
                Some((_, existing)) if !reusable(existing) => continue,
                Some(_) => Some(&key),
                None => None,
            };
            publish(bucket, &chain, replace, Some((key, value)));
            // Move the next search for this destination on (RFC 6056 4:
            // by the tries it took, plus one).
            self.perturb[index].fetch_add(i + 1, Ordering::Relaxed);
            return Ok(port);
        }
        Err(ConnectError::AddressNotAvailable)
    }

    /// Every entry (a snapshot, for `show` commands and tests).
    pub fn entries(&self) -> Vec<(FourTuple, V)> {
        self.buckets
            .iter()
            .flat_map(|b| b.chain.load_full().iter().copied().collect::<Vec<_>>())
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

/// Publishes `chain` without `remove` and with `add` (the bucket's lock is
/// held): readers see the old chain or the new one, never a mix.
fn publish<V: Copy>(
    bucket: &Bucket<V>,
    chain: &[(FourTuple, V)],
    remove: Option<&FourTuple>,
    add: Option<(FourTuple, V)>,
) {
    let mut next: Vec<(FourTuple, V)> = Vec::with_capacity(chain.len() + 1);
    next.extend(chain.iter().filter(|(k, _)| Some(k) != remove).copied());
    next.extend(add);
    bucket.chain.store(Arc::new(next));
}

#[cfg(test)]
mod tests;
