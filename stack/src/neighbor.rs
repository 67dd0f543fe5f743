//! The neighbour cache: IP address to MAC, with states, expiry, retries,
//! and a small bounded queue of packets waiting for resolution. One type
//! serves ARP (keyed by `Ipv4Addr`, the default) and IPv6 Neighbor Discovery
//! (keyed by `Ipv6Addr`).
//!
//! States follow the kernel's in spirit: `Incomplete` (a request is out; up to
//! [`NeighborConfig::queue_len`] packets wait), `Reachable` (confirmed, until
//! `reachable_time` passes), `Stale` (usable, refreshed by the next ARP
//! packet). An `Incomplete` entry that gets no answer after `max_probes`
//! requests is removed and its waiting packets are dropped and returned for
//! counting. Capacity is bounded; when full, new entries are refused (never
//! evicting a reachable neighbour for a peer-chosen address).
//!
//! Every change bumps [`NeighborCache::generation`], which route caches stamp
//! their entries with. Owned by one lcore; `now` is passed in.

use crate::port::MacAddr;
use crate::time::{Duration, Instant};
use arrayvec::ArrayVec;
use core::hash::Hash;
use core::net::Ipv4Addr;
use std::collections::HashMap;

/// An address a neighbour cache is keyed by (`Ipv4Addr` or `Ipv6Addr`).
pub trait NeighborAddr: Copy + Eq + Hash + Ord + core::fmt::Debug {}

impl<A: Copy + Eq + Hash + Ord + core::fmt::Debug> NeighborAddr for A {}

/// Most packets that wait for one neighbour.
pub const MAX_QUEUE: usize = 8;

/// Tunables.
#[derive(Debug, Clone)]
pub struct NeighborConfig {
    /// How long a confirmed entry stays `Reachable`.
    pub reachable_time: Duration,
    /// How long a `Stale` entry is kept before it is forgotten.
    pub stale_time: Duration,
    /// Time between requests while `Incomplete`.
    pub retrans_time: Duration,
    /// Requests before giving up.
    pub max_probes: u8,
    /// Packets kept per unresolved neighbour (at most [`MAX_QUEUE`]).
    pub queue_len: usize,
    /// Most entries.
    pub capacity: usize,
}

impl Default for NeighborConfig {
    fn default() -> Self {
        NeighborConfig {
            reachable_time: Duration::from_secs(30),
            stale_time: Duration::from_secs(60),
            retrans_time: Duration::from_secs(1),
            max_probes: 3,
            queue_len: 4,
            capacity: 4096,
        }
    }
}

/// State of one neighbour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NeighborState {
    /// Resolution in progress.
    Incomplete,
    /// Confirmed recently.
    Reachable,
    /// Known, not confirmed recently.
    Stale,
}

#[derive(Debug)]
struct Entry<B> {
    mac: Option<MacAddr>,
    state: NeighborState,
    /// Reachable: when it turns stale. Incomplete: when to probe next.
    deadline: Instant,
    probes: u8,
    waiting: ArrayVec<B, MAX_QUEUE>,
}

/// What [`NeighborCache::resolve`] decided for a packet.
#[derive(Debug)]
pub enum Resolution<B> {
    /// Send it now to this MAC.
    Ready(B, MacAddr),
    /// It waits; send an ARP request for the address now.
    QueuedSendRequest,
    /// It waits behind a request already sent.
    Queued,
    /// The wait queue (or the cache) is full: the packet is handed back to be
    /// dropped and counted.
    Full(B),
}

/// The cache. See the module documentation.
#[derive(Debug)]
pub struct NeighborCache<B, A = Ipv4Addr> {
    config: NeighborConfig,
    entries: HashMap<A, Entry<B>>,
    generation: u64,
}

impl<B, A: NeighborAddr> NeighborCache<B, A> {
    /// An empty cache.
    pub fn new(config: NeighborConfig) -> NeighborCache<B, A> {
        NeighborCache {
            config,
            entries: HashMap::new(),
            generation: 0,
        }
    }

    /// Changes whenever an address's MAC or state changes.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The MAC of `ip` if it is known (reachable or stale).
    pub fn lookup(&self, ip: A) -> Option<MacAddr> {
        self.entries.get(&ip).and_then(|e| e.mac)
    }

    /// The state of `ip`, if it has an entry.
    pub fn state(&self, ip: A) -> Option<NeighborState> {
        self.entries.get(&ip).map(|e| e.state)
    }

    /// Every entry as (address, MAC if known, state), in address order.
    pub fn entries(&self) -> Vec<(A, Option<MacAddr>, NeighborState)> {
        let mut all: Vec<_> = self
            .entries
            .iter()
            .map(|(ip, e)| (*ip, e.mac, e.state))
            .collect();
        all.sort_unstable_by_key(|(ip, _, _)| *ip);
        all
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True if there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Finds the MAC for a packet to `ip`, or parks the packet until the
    /// neighbour answers.
    pub fn resolve(&mut self, ip: A, packet: B, now: Instant) -> Resolution<B> {
        let queue_len = self.config.queue_len.min(MAX_QUEUE);
        if let Some(entry) = self.entries.get_mut(&ip) {
            if let Some(mac) = entry.mac {
                return Resolution::Ready(packet, mac);
            }
            if entry.waiting.len() >= queue_len {
                return Resolution::Full(packet);
            }
            entry.waiting.push(packet);
            return Resolution::Queued;
        }
        if self.entries.len() >= self.config.capacity || queue_len == 0 {
            return Resolution::Full(packet);
        }
        let mut waiting = ArrayVec::new();
        waiting.push(packet);
        self.entries.insert(
            ip,
            Entry {
                mac: None,
                state: NeighborState::Incomplete,
                deadline: now + self.config.retrans_time,
                probes: 1,
                waiting,
            },
        );
        self.generation += 1;
        Resolution::QueuedSendRequest
    }

    /// Records that `ip` is at `mac`, from an ARP packet. With `create`, a
    /// missing entry is made (the packet was addressed to us); otherwise only
    /// existing entries are updated (RFC 826). Returns the packets that were
    /// waiting for it, to be sent to `mac` now.
    pub fn learn(
        &mut self,
        ip: A,
        mac: MacAddr,
        create: bool,
        now: Instant,
    ) -> ArrayVec<B, MAX_QUEUE> {
        let reachable_until = now + self.config.reachable_time;
        let room = self.entries.len() < self.config.capacity;
        match self.entries.get_mut(&ip) {
            Some(entry) => {
                if entry.mac != Some(mac) || entry.state != NeighborState::Reachable {
                    self.generation += 1;
                }
                entry.mac = Some(mac);
                entry.state = NeighborState::Reachable;
                entry.deadline = reachable_until;
                entry.probes = 0;
                core::mem::take(&mut entry.waiting)
            }
            None if create && room => {
                self.entries.insert(
                    ip,
                    Entry {
                        mac: Some(mac),
                        state: NeighborState::Reachable,
                        deadline: reachable_until,
                        probes: 0,
                        waiting: ArrayVec::new(),
                    },
                );
                self.generation += 1;
                ArrayVec::new()
            }
            None => ArrayVec::new(),
        }
    }

    /// Runs timers: reachable entries age to stale, and stale ones are
    /// forgotten `stale_time` later (the next packet resolves them again); incomplete ones are probed again
    /// (their addresses are pushed to `probe`) or, after `max_probes`,
    /// removed, their waiting packets freed. Returns how many packets were
    /// freed that way, for the caller to count.
    pub fn poll(&mut self, now: Instant, probe: &mut Vec<A>) -> usize {
        let mut changed = false;
        let mut given_up = 0;
        let retrans = self.config.retrans_time;
        let stale_time = self.config.stale_time;
        let max_probes = self.config.max_probes;
        self.entries.retain(|&ip, entry| {
            if now < entry.deadline {
                return true;
            }
            match entry.state {
                NeighborState::Reachable => {
                    entry.state = NeighborState::Stale;
                    entry.deadline = now + stale_time;
                    changed = true;
                    true
                }
                NeighborState::Stale => {
                    changed = true;
                    false
                }
                NeighborState::Incomplete if entry.probes < max_probes => {
                    entry.probes += 1;
                    entry.deadline = now + retrans;
                    probe.push(ip);
                    true
                }
                NeighborState::Incomplete => {
                    given_up += entry.waiting.len();
                    changed = true;
                    false
                }
            }
        });
        if changed {
            self.generation += 1;
        }
        given_up
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
    const MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 2]);

    fn t(secs: u64) -> Instant {
        Instant::from_nanos(secs * 1_000_000_000)
    }

    #[test]
    fn unknown_neighbour_parks_packets_until_answered() {
        let mut cache: NeighborCache<u32> = NeighborCache::new(NeighborConfig::default());
        assert!(matches!(
            cache.resolve(IP, 1, t(0)),
            Resolution::QueuedSendRequest
        ));
        assert!(matches!(cache.resolve(IP, 2, t(0)), Resolution::Queued));
        assert_eq!(cache.state(IP), Some(NeighborState::Incomplete));
        let released = cache.learn(IP, MAC, false, t(0));
        assert_eq!(released.as_slice(), &[1, 2]);
        assert!(matches!(
            cache.resolve(IP, 3, t(1)),
            Resolution::Ready(3, MAC)
        ));
    }

    #[test]
    fn the_wait_queue_is_bounded() {
        let config = NeighborConfig {
            queue_len: 2,
            ..NeighborConfig::default()
        };
        let mut cache: NeighborCache<u32> = NeighborCache::new(config);
        cache.resolve(IP, 1, t(0));
        cache.resolve(IP, 2, t(0));
        assert!(matches!(cache.resolve(IP, 3, t(0)), Resolution::Full(3)));
    }

    #[test]
    fn unanswered_requests_are_retried_then_given_up() {
        let mut cache: NeighborCache<u32> = NeighborCache::new(NeighborConfig::default());
        cache.resolve(IP, 7, t(0));
        let mut probes = Vec::new();
        assert_eq!(cache.poll(t(0), &mut probes), 0);
        assert!(probes.is_empty(), "not due yet");
        cache.poll(t(1), &mut probes);
        cache.poll(t(2), &mut probes);
        assert_eq!(probes, [IP, IP], "two more requests: three in all");
        assert_eq!(
            cache.poll(t(3), &mut probes),
            1,
            "the parked packet is given up"
        );
        assert_eq!(cache.state(IP), None);
    }

    #[test]
    fn confirmed_entries_go_stale_but_stay_usable() {
        let mut cache: NeighborCache<u32> = NeighborCache::new(NeighborConfig::default());
        cache.learn(IP, MAC, true, t(0));
        let generation = cache.generation();
        let mut probes = Vec::new();
        cache.poll(t(31), &mut probes);
        assert_eq!(cache.state(IP), Some(NeighborState::Stale));
        assert_ne!(cache.generation(), generation);
        assert_eq!(cache.lookup(IP), Some(MAC));
        cache.poll(t(90), &mut probes);
        assert_eq!(
            cache.state(IP),
            Some(NeighborState::Stale),
            "stale for 59 s"
        );
        cache.poll(t(91), &mut probes);
        assert_eq!(cache.state(IP), None, "forgotten after 60 s stale");
    }

    #[test]
    fn unsolicited_arp_only_updates_known_entries() {
        let mut cache: NeighborCache<u32> = NeighborCache::new(NeighborConfig::default());
        cache.learn(IP, MAC, false, t(0));
        assert_eq!(cache.lookup(IP), None);
        cache.learn(IP, MAC, true, t(0));
        let moved = MacAddr([2, 0, 0, 0, 0, 9]);
        cache.learn(IP, moved, false, t(1));
        assert_eq!(cache.lookup(IP), Some(moved));
    }
}
