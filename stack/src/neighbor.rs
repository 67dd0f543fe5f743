//! The neighbour cache: IP address to MAC, with states, expiry, retries,
//! and a small bounded queue of packets waiting for resolution. One type
//! serves ARP (keyed by `Ipv4Addr`, the default) and IPv6 Neighbor Discovery
//! (keyed by `Ipv6Addr`).
//!
//! States are RFC 4861's (7.3.2), which the kernel also uses for ARP:
//! `Incomplete` (a multicast or broadcast request is out; up to
//! [`NeighborConfig::queue_len`] packets wait), `Reachable` (confirmed, until
//! `reachable_time` passes), `Stale` (usable but unconfirmed: learned from
//! the peer's own solicitation, or aged), `Delay` (a packet was sent to a
//! stale neighbour; wait `delay_first_probe` for a confirmation) and `Probe`
//! (unicast requests to the cached MAC, up to `max_unicast_probes`). An
//! `Incomplete` entry that gets no answer after `max_probes` requests, or a
//! `Probe` entry after its probes, is removed and its waiting packets are
//! dropped and returned for counting. A `Stale` entry nobody uses is
//! forgotten after `stale_time`. Capacity is bounded; when full, an entry for
//! a next hop we need takes the place of a stale one nobody waits on, else
//! it is refused; a neighbour a peer announces is refused (never evicting
//! for a peer-chosen address: a flood must neither push out a reachable
//! neighbour nor have the views rebuilt per packet). So are
//! the packets waiting across all entries
//! ([`NeighborConfig::max_waiting`]): each pins a packet buffer, and a flood
//! towards unanswering addresses must not pin the pool a receive ring
//! refills from.
//!
//! Every change bumps [`NeighborCache::generation`]. The cache is written by
//! one thread at a time (the shared tables' writer); readers on the packet
//! path read a [`NeighborView`] of it, the addresses and states without the
//! timers and waiting packets, built when the generation moves. `now` is
//! passed in.

use crate::hash::AddressHash;
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
    /// Multicast (broadcast) requests before giving up on an `Incomplete`
    /// neighbour.
    pub max_probes: u8,
    /// How long a `Delay` entry waits for a confirmation before probing.
    pub delay_first_probe: Duration,
    /// Unicast requests in `Probe` before the neighbour is given up.
    pub max_unicast_probes: u8,
    /// Packets kept per unresolved neighbour (at most [`MAX_QUEUE`]).
    pub queue_len: usize,
    /// Most entries.
    pub capacity: usize,
    /// Most packets waiting across all entries. Without it, `capacity`
    /// entries of `queue_len` packets (16,384 by default) could hold every
    /// buffer of a small pool: a net_tap port whose ring cannot refill
    /// then stops receiving for good (its kernel queue fills and no new
    /// wakeup comes), as a soak found.
    pub max_waiting: usize,
}

impl Default for NeighborConfig {
    fn default() -> Self {
        NeighborConfig {
            reachable_time: Duration::from_secs(30),
            stale_time: Duration::from_secs(60),
            retrans_time: Duration::from_secs(1),
            max_probes: 3,
            delay_first_probe: Duration::from_secs(5),
            max_unicast_probes: 3,
            queue_len: 4,
            capacity: 4096,
            max_waiting: 256,
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
    /// Stale and in use: waiting briefly for a confirmation before probing.
    Delay,
    /// Being confirmed with unicast requests.
    Probe,
}

/// A request the timers want sent: to the solicited-node group (or as a
/// broadcast) when `mac` is `None`, else unicast to the cached MAC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe<A> {
    /// The neighbour asked about.
    pub ip: A,
    /// Where to send the request (`Probe` state), or `None` to multicast.
    pub mac: Option<MacAddr>,
}

/// Entries a full cache looks at for one to forget ([`NeighborCache`]'s
/// `has_room`).
const EVICTION_LOOK: usize = 16;

#[derive(Debug)]
struct Entry<B> {
    mac: Option<MacAddr>,
    state: NeighborState,
    /// Reachable: when it turns stale. Stale: when it is forgotten. Delay:
    /// when probing starts. Incomplete, Probe: when to ask again.
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

/// What the packet path reads of a cache: each neighbour's MAC (if known)
/// and state, as of the cache's generation [`NeighborView::generation`].
#[derive(Debug, Clone)]
pub struct NeighborView<A = Ipv4Addr> {
    entries: HashMap<A, (Option<MacAddr>, NeighborState), AddressHash>,
    generation: u64,
}

impl<A: NeighborAddr> NeighborView<A> {
    /// The generation of the cache this view was taken of.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The MAC of `ip` if it is known (reachable or stale).
    #[inline]
    pub fn lookup(&self, ip: A) -> Option<MacAddr> {
        self.entries.get(&ip).and_then(|e| e.0)
    }

    /// The MAC and state of `ip`, if it has an entry.
    #[inline]
    pub fn get(&self, ip: A) -> Option<(Option<MacAddr>, NeighborState)> {
        self.entries.get(&ip).copied()
    }

    /// Every entry as (address, MAC if known, state), in address order.
    pub fn entries(&self) -> Vec<(A, Option<MacAddr>, NeighborState)> {
        let mut all: Vec<_> = self
            .entries
            .iter()
            .map(|(ip, &(mac, state))| (*ip, mac, state))
            .collect();
        all.sort_unstable_by_key(|(ip, _, _)| *ip);
        all
    }
}

/// The cache. See the module documentation.
#[derive(Debug)]
pub struct NeighborCache<B, A = Ipv4Addr> {
    config: NeighborConfig,
    entries: HashMap<A, Entry<B>, AddressHash>,
    generation: u64,
    /// Packets waiting, over all entries.
    waiting: usize,
}

impl<B, A: NeighborAddr> NeighborCache<B, A> {
    /// An empty cache.
    pub fn new(config: NeighborConfig) -> NeighborCache<B, A> {
        NeighborCache {
            config,
            entries: HashMap::with_hasher(AddressHash::random()),
            waiting: 0,
            generation: 0,
        }
    }

    /// Changes whenever an address's MAC or state changes (views are
    /// rebuilt when it does).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The MAC of `ip` if it is known (reachable or stale).
    pub fn lookup(&self, ip: A) -> Option<MacAddr> {
        self.entries.get(&ip).and_then(|e| e.mac)
    }

    /// The addresses and states as the packet path reads them, at this
    /// generation.
    pub fn view(&self) -> NeighborView<A> {
        let mut entries =
            HashMap::with_capacity_and_hasher(self.entries.len(), *self.entries.hasher());
        entries.extend(self.entries.iter().map(|(ip, e)| (*ip, (e.mac, e.state))));
        NeighborView {
            entries,
            generation: self.generation,
        }
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

    /// True if a next hop we need fits, making room in a full cache by
    /// forgetting a stale entry that no packet waits on, among the first
    /// [`EVICTION_LOOK`] the map yields: its keyed hash makes that an
    /// arbitrary pick an on-link flood cannot steer, and the look is
    /// bounded. A reachable neighbour is never forgotten, and a neighbour
    /// a peer announces (`learn`, `observe`) never makes room: each
    /// eviction rebuilds the views, which a flood must not be able to ask
    /// for per packet. Without it a flood of requests from made-up
    /// neighbours filled the cache, and no new next hop could be resolved
    /// until the flood's entries were forgotten, `stale_time` after they
    /// went stale; now only while they are reachable (Linux's forced
    /// garbage collection likewise drops unused entries).
    fn has_room(&mut self) -> bool {
        if self.entries.len() < self.config.capacity {
            return true;
        }
        let victim = (self.entries.iter())
            .take(EVICTION_LOOK)
            .find(|(_, e)| e.state == NeighborState::Stale && e.waiting.is_empty())
            .map(|(ip, _)| *ip);
        match victim {
            Some(ip) => {
                self.entries.remove(&ip);
                self.generation += 1;
                true
            }
            None => false,
        }
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
                if entry.state == NeighborState::Stale {
                    // RFC 4861 7.3.3: traffic to a stale neighbour starts
                    // the wait for a confirmation.
                    entry.state = NeighborState::Delay;
                    entry.deadline = now + self.config.delay_first_probe;
                    // Views show the state, and send to a delayed
                    // neighbour without asking the cache again.
                    self.generation += 1;
                }
                return Resolution::Ready(packet, mac);
            }
            if entry.waiting.len() >= queue_len || self.waiting >= self.config.max_waiting {
                return Resolution::Full(packet);
            }
            entry.waiting.push(packet);
            self.waiting += 1;
            return Resolution::Queued;
        }
        if queue_len == 0 || self.waiting >= self.config.max_waiting || !self.has_room() {
            return Resolution::Full(packet);
        }
        self.waiting += 1;
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
                let waiting = core::mem::take(&mut entry.waiting);
                self.waiting -= waiting.len();
                waiting
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

    /// Records that `ip` claims to be at `mac` without confirming that it
    /// hears us (its own solicitation, RFC 4861 7.2.3): a new entry is made
    /// `Stale` (with `create` and room), an `Incomplete` one gets the MAC and
    /// turns `Stale`, a known one with a different MAC turns `Stale` with the
    /// new MAC; the same MAC changes nothing. Returns the packets that were
    /// waiting, to be sent to `mac` now (which moves the entry on to `Delay`,
    /// as sending through [`NeighborCache::resolve`] would).
    pub fn observe(
        &mut self,
        ip: A,
        mac: MacAddr,
        create: bool,
        now: Instant,
    ) -> ArrayVec<B, MAX_QUEUE> {
        let room = self.entries.len() < self.config.capacity;
        let stale_until = now + self.config.stale_time;
        match self.entries.get_mut(&ip) {
            Some(entry) if entry.mac == Some(mac) => ArrayVec::new(),
            Some(entry) => {
                let waiting = core::mem::take(&mut entry.waiting);
                self.waiting -= waiting.len();
                entry.mac = Some(mac);
                entry.probes = 0;
                if waiting.is_empty() {
                    entry.state = NeighborState::Stale;
                    entry.deadline = stale_until;
                } else {
                    entry.state = NeighborState::Delay;
                    entry.deadline = now + self.config.delay_first_probe;
                }
                self.generation += 1;
                waiting
            }
            None if create && room => {
                self.entries.insert(
                    ip,
                    Entry {
                        mac: Some(mac),
                        state: NeighborState::Stale,
                        deadline: stale_until,
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

    /// Applies a neighbour advertisement for `ip` (RFC 4861 7.2.5): it never
    /// creates an entry; an `Incomplete` one takes the MAC (`Reachable` if
    /// solicited, else `Stale`); otherwise a different MAC without the
    /// override flag only demotes a `Reachable` entry to `Stale`, and with
    /// it (or with the same MAC) the MAC is taken and a solicited
    /// advertisement confirms. Returns the packets that were waiting and
    /// the MAC to send them to.
    pub fn advertised(
        &mut self,
        ip: A,
        mac: Option<MacAddr>,
        solicited: bool,
        override_: bool,
        now: Instant,
    ) -> (ArrayVec<B, MAX_QUEUE>, Option<MacAddr>) {
        let reachable_until = now + self.config.reachable_time;
        let stale_until = now + self.config.stale_time;
        let Some(entry) = self.entries.get_mut(&ip) else {
            return (ArrayVec::new(), None);
        };
        let before = (entry.mac, entry.state);
        let changed_mac = mac.is_some_and(|m| entry.mac.is_some_and(|old| old != m));
        if entry.state == NeighborState::Incomplete {
            let Some(mac) = mac else {
                return (ArrayVec::new(), None);
            };
            entry.mac = Some(mac);
            entry.probes = 0;
            (entry.state, entry.deadline) = if solicited {
                (NeighborState::Reachable, reachable_until)
            } else {
                (NeighborState::Stale, stale_until)
            };
        } else if changed_mac && !override_ {
            if entry.state == NeighborState::Reachable {
                entry.state = NeighborState::Stale;
                entry.deadline = stale_until;
            }
        } else {
            if mac.is_some() {
                entry.mac = mac;
            }
            if solicited {
                entry.state = NeighborState::Reachable;
                entry.deadline = reachable_until;
                entry.probes = 0;
            } else if changed_mac {
                entry.state = NeighborState::Stale;
                entry.deadline = stale_until;
            }
        }
        if (entry.mac, entry.state) != before {
            self.generation += 1;
        }
        let waiting = match entry.mac {
            Some(_) => {
                let waiting = core::mem::take(&mut entry.waiting);
                self.waiting -= waiting.len();
                waiting
            }
            None => ArrayVec::new(),
        };
        (waiting, entry.mac)
    }

    /// Runs timers: reachable entries age to stale, and stale ones are
    /// forgotten `stale_time` later (the next packet resolves them again);
    /// delayed ones start probing; incomplete and probing ones are asked
    /// again (pushed to `probe`) or, out of probes, removed, their waiting
    /// packets freed. Returns how many packets were freed that way, for the
    /// caller to count.
    pub fn poll(&mut self, now: Instant, probe: &mut Vec<Probe<A>>) -> usize {
        let mut changed = false;
        let mut given_up = 0;
        let config = &self.config;
        self.entries.retain(|&ip, entry| {
            if now < entry.deadline {
                return true;
            }
            match entry.state {
                NeighborState::Reachable => {
                    entry.state = NeighborState::Stale;
                    entry.deadline = now + config.stale_time;
                    changed = true;
                    true
                }
                NeighborState::Stale => {
                    given_up += entry.waiting.len(); // none: it has a MAC
                    changed = true;
                    false
                }
                NeighborState::Delay => {
                    entry.state = NeighborState::Probe;
                    entry.probes = 1;
                    entry.deadline = now + config.retrans_time;
                    probe.push(Probe { ip, mac: entry.mac });
                    changed = true;
                    true
                }
                NeighborState::Probe if entry.probes < config.max_unicast_probes => {
                    entry.probes += 1;
                    entry.deadline = now + config.retrans_time;
                    probe.push(Probe { ip, mac: entry.mac });
                    true
                }
                NeighborState::Incomplete if entry.probes < config.max_probes => {
                    entry.probes += 1;
                    entry.deadline = now + config.retrans_time;
                    probe.push(Probe { ip, mac: None });
                    true
                }
                NeighborState::Incomplete | NeighborState::Probe => {
                    given_up += entry.waiting.len();
                    changed = true;
                    false
                }
            }
        });
        self.waiting -= given_up;
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
    fn a_full_cache_forgets_a_stale_entry_for_a_new_next_hop() {
        // A flood of requests from made-up neighbours (stale entries) fills
        // the cache; a next hop we need still gets an entry in place of one
        // of them. Reachable neighbours and entries with waiting packets
        // are kept.
        let mut cache: NeighborCache<u32> = NeighborCache::new(NeighborConfig {
            capacity: 4,
            ..NeighborConfig::default()
        });
        let ip = |i: u8| Ipv4Addr::new(10, 0, 1, i);
        assert!(matches!(
            cache.resolve(ip(0), 0, t(0)),
            Resolution::QueuedSendRequest
        ));
        cache.learn(ip(1), MAC, true, t(0));
        for i in 2..4 {
            cache.observe(ip(i), MAC, true, t(0));
        }
        assert_eq!(cache.len(), 4);
        let before = cache.generation();
        for next_hop in [IP, ip(100)] {
            assert!(matches!(
                cache.resolve(next_hop, 9, t(1)),
                Resolution::QueuedSendRequest
            ));
        }
        assert_eq!(cache.len(), 4);
        assert!(cache.generation() > before, "views follow the evictions");
        assert_eq!(cache.state(ip(0)), Some(NeighborState::Incomplete));
        assert_eq!(cache.state(ip(1)), Some(NeighborState::Reachable));
        // No stale entry left: a third is refused.
        assert!(matches!(
            cache.resolve(ip(101), 3, t(1)),
            Resolution::Full(3)
        ));
        // A neighbour announcing itself makes no room: each eviction
        // rebuilds the views, and a flood must not buy one per packet.
        let mut flooded: NeighborCache<u32> = NeighborCache::new(NeighborConfig {
            capacity: 2,
            ..NeighborConfig::default()
        });
        flooded.observe(ip(1), MAC, true, t(0));
        flooded.observe(ip(2), MAC, true, t(0));
        let generation = flooded.generation();
        flooded.observe(ip(3), MAC, true, t(0));
        flooded.learn(ip(4), MAC, true, t(0));
        assert_eq!((flooded.state(ip(3)), flooded.state(ip(4))), (None, None));
        assert_eq!(flooded.generation(), generation);
        // Only entries with waiting packets: nothing may go.
        let mut busy: NeighborCache<u32> = NeighborCache::new(NeighborConfig {
            capacity: 2,
            ..NeighborConfig::default()
        });
        busy.resolve(ip(1), 1, t(0));
        busy.resolve(ip(2), 2, t(0));
        assert!(matches!(busy.resolve(ip(3), 3, t(0)), Resolution::Full(3)));
    }

    #[test]
    fn packets_waiting_across_all_entries_are_bounded_and_the_bound_frees_up() {
        let mut cache: NeighborCache<u32> = NeighborCache::new(NeighborConfig {
            max_waiting: 5,
            ..NeighborConfig::default()
        });
        let ip = |i: u8| Ipv4Addr::new(10, 0, 1, i);
        // Two packets for each of three unanswering neighbours: the sixth
        // is refused although its entry has room.
        let verdicts: Vec<bool> = (0..6)
            .map(|n| {
                !matches!(
                    cache.resolve(ip(n / 2), n.into(), t(0)),
                    Resolution::Full(_)
                )
            })
            .collect();
        assert_eq!(verdicts, [true, true, true, true, true, false]);
        // A neighbour that answers takes its packets away: room again.
        assert_eq!(cache.learn(ip(0), MAC, false, t(0)).as_slice(), &[0, 1]);
        assert!(matches!(
            cache.resolve(ip(3), 7, t(0)),
            Resolution::QueuedSendRequest
        ));
        // The others give up: all their packets are freed and counted.
        let mut probes = Vec::new();
        let freed: usize = (1..=4).map(|s| cache.poll(t(s), &mut probes)).sum();
        assert_eq!(freed, 4);
        for n in 0..5 {
            assert!(!matches!(
                cache.resolve(ip(10 + n), 0, t(5)),
                Resolution::Full(_)
            ));
        }
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
        assert_eq!(
            probes,
            [Probe { ip: IP, mac: None }; 2],
            "two more requests: three in all"
        );
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

    #[test]
    fn a_solicitation_makes_a_stale_entry_that_traffic_confirms_by_probing() {
        let mut cache: NeighborCache<u32> = NeighborCache::new(NeighborConfig::default());
        cache.observe(IP, MAC, true, t(0));
        assert_eq!(cache.state(IP), Some(NeighborState::Stale));
        assert!(matches!(
            cache.resolve(IP, 1, t(1)),
            Resolution::Ready(1, MAC)
        ));
        assert_eq!(cache.state(IP), Some(NeighborState::Delay));
        let mut probes = Vec::new();
        cache.poll(t(5), &mut probes);
        assert!(probes.is_empty(), "still within the 5 s delay");
        cache.poll(t(6), &mut probes);
        assert_eq!(cache.state(IP), Some(NeighborState::Probe));
        assert_eq!(
            probes,
            [Probe {
                ip: IP,
                mac: Some(MAC)
            }],
            "unicast"
        );
        let (waiting, mac) = cache.advertised(IP, Some(MAC), true, false, t(6));
        assert!(waiting.is_empty());
        assert_eq!(mac, Some(MAC));
        assert_eq!(cache.state(IP), Some(NeighborState::Reachable));
    }

    #[test]
    fn an_unanswered_probe_forgets_the_neighbour() {
        let mut cache: NeighborCache<u32> = NeighborCache::new(NeighborConfig::default());
        cache.observe(IP, MAC, true, t(0));
        cache.resolve(IP, 1, t(0));
        let mut probes = Vec::new();
        for second in 5..=8 {
            cache.poll(t(second), &mut probes);
        }
        assert_eq!(probes.len(), 3, "three unicast probes");
        assert!(probes.iter().all(|p| p.mac == Some(MAC)));
        assert_eq!(cache.state(IP), None);
    }

    #[test]
    fn advertisements_follow_rfc_4861_7_2_5() {
        let moved = MacAddr([2, 0, 0, 0, 0, 9]);
        let mut cache: NeighborCache<u32> = NeighborCache::new(NeighborConfig::default());
        let (_, mac) = cache.advertised(IP, Some(MAC), true, true, t(0));
        assert_eq!((mac, cache.state(IP)), (None, None), "never creates");
        cache.resolve(IP, 1, t(0));
        let (waiting, mac) = cache.advertised(IP, Some(MAC), false, false, t(0));
        assert_eq!((waiting.as_slice(), mac), (&[1][..], Some(MAC)));
        assert_eq!(cache.state(IP), Some(NeighborState::Stale), "unsolicited");
        cache.advertised(IP, Some(MAC), true, false, t(0));
        assert_eq!(cache.state(IP), Some(NeighborState::Reachable));
        cache.advertised(IP, Some(moved), true, false, t(1));
        assert_eq!(cache.lookup(IP), Some(MAC), "no override: MAC kept");
        assert_eq!(cache.state(IP), Some(NeighborState::Stale), "but doubted");
        cache.advertised(IP, Some(moved), false, true, t(2));
        assert_eq!(cache.lookup(IP), Some(moved), "override: MAC taken");
        assert_eq!(cache.state(IP), Some(NeighborState::Stale));
    }

    #[test]
    fn a_solicitation_gives_a_waiting_entry_its_mac() {
        let mut cache: NeighborCache<u32> = NeighborCache::new(NeighborConfig::default());
        cache.resolve(IP, 1, t(0));
        let released = cache.observe(IP, MAC, false, t(0));
        assert_eq!(released.as_slice(), &[1]);
        assert_eq!(cache.state(IP), Some(NeighborState::Delay));
        assert!(cache.observe(IP, MAC, false, t(0)).is_empty());
        cache.observe(IP, MAC, false, t(0));
        assert_eq!(
            cache.state(IP),
            Some(NeighborState::Delay),
            "same MAC: unchanged"
        );
    }
}
