//! Packet buffer pools (`rte_pktmbuf_pool_create`).
//!
//! A [`Mempool`] is a copyable handle: DPDK pools are safe for concurrent
//! get/put from any thread (lcores use a per-lcore cache; other threads go to
//! the shared ring). Pools live until EAL cleanup: dpstack never frees a pool,
//! since any mbuf still in flight (in a ring, a socket queue, a NIC) points
//! into it.
//!
//! [`PoolNeed`] says how many buffers a pool needs for its ports and lcores;
//! [`Mempool::create`] refuses a count below DPDK's own floor (1.5 times the
//! per-lcore cache) with [`DpdkError::PoolTooSmall`] before asking DPDK.

use crate::error::{rte_errno, strerror, DpdkError, Result};
use crate::ethdev::PortConfig;
use crate::mbuf::Mbuf;
use crate::sys;
use arrayvec::ArrayVec;
use std::ffi::CString;
use std::fmt;
use std::ptr::NonNull;

/// How a pool is sized.
#[derive(Debug, Clone)]
pub struct PoolConfig {
    /// Number of buffers. DPDK pools are most memory-efficient at 2^n - 1.
    pub count: u32,
    /// Per-lcore cache size (0 disables it); at most 512.
    pub cache: u32,
    /// Bytes per buffer including headroom (DPDK's default: 2048 + 128).
    pub data_room: u16,
    /// NUMA socket to allocate on, or `None` for any.
    pub socket: Option<i32>,
}

impl PoolConfig {
    /// A pool of `count` buffers with the largest data room an mbuf can have
    /// (65,535 bytes, headroom included: 65,407 bytes of data), for
    /// reassembly and large sends. Datagrams bigger than that are dropped
    /// and counted (`ipv4_reassembly_too_big`) or refused (`TooLarge`).
    pub fn large(count: u32) -> PoolConfig {
        PoolConfig {
            count,
            cache: 0,
            data_room: u16::MAX,
            socket: None,
        }
    }
}

impl PoolConfig {
    /// This configuration with buffers big enough for one frame of a port
    /// with MTU `mtu` after the default headroom, plus 128 bytes of slack (an
    /// Ethernet header, a VLAN tag, and the worst-case header space TCP
    /// reserves while framing a full segment); never smaller than it was.
    pub fn for_mtu(self, mtu: u16) -> PoolConfig {
        let needed = u32::from(mtu) + 128 + sys::RTE_PKTMBUF_HEADROOM;
        let needed = u16::try_from(needed).unwrap_or(u16::MAX);
        PoolConfig {
            data_room: self.data_room.max(needed),
            ..self
        }
    }
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            count: 8191,
            cache: 256,
            data_room: sys::RTE_MBUF_DEFAULT_BUF_SIZE as u16,
            socket: None,
        }
    }
}

/// How many buffers a pool needs: as many as its users can hold out of it
/// at once. With fewer, DPDK refuses to create it, or its ports run dry with
/// no packet in flight: a NIC (and `net_tap`) fills every receive descriptor
/// with a buffer when its queue is set up or started, every transmit
/// descriptor keeps a sent buffer until the driver frees it, and each
/// lcore's cache keeps up to 1.5 times its size (DPDK's flush threshold).
/// Buffers a pool needs beyond this (packets queued in sockets, being
/// reassembled or waiting for ARP) depend on the traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolNeed {
    /// Ports that take buffers from the pool (0: the pool alone, for DPDK's
    /// floor).
    pub ports: u32,
    /// Receive rings of all those ports.
    pub rx_rings: u32,
    /// Descriptors per receive ring.
    pub rx_descriptors: u32,
    /// Transmit rings of all those ports.
    pub tx_rings: u32,
    /// Descriptors per transmit ring.
    pub tx_descriptors: u32,
    /// lcores with a cache of the pool.
    pub lcores: u32,
    /// The pool's per-lcore cache size ([`PoolConfig::cache`]).
    pub cache: u32,
}

impl PoolNeed {
    /// What `ports` ports configured as `port` need of a pool whose
    /// per-lcore cache is `cache`, used by `lcores` lcores (EAL's lcore count,
    /// [`crate::lcore::Lcore::count`], when any of them may poll).
    pub fn for_ports(ports: u32, port: &PortConfig, cache: u32, lcores: u32) -> PoolNeed {
        PoolNeed {
            ports,
            rx_rings: ports.saturating_mul(u32::from(port.rx_queues)),
            rx_descriptors: u32::from(port.rx_descriptors),
            tx_rings: ports.saturating_mul(u32::from(port.tx_queues)),
            tx_descriptors: u32::from(port.tx_descriptors),
            lcores,
            cache,
        }
    }

    /// DPDK's floor for a pool with per-lcore cache `cache`, before any port
    /// or lcore uses it: `rte_pktmbuf_pool_create` fails (EINVAL) below it.
    pub fn pool_only(cache: u32) -> PoolNeed {
        PoolNeed {
            ports: 0,
            rx_rings: 0,
            rx_descriptors: 0,
            tx_rings: 0,
            tx_descriptors: 0,
            lcores: 0,
            cache,
        }
    }

    /// Buffers one lcore's cache can hold: DPDK's flush threshold,
    /// `(uint32_t)(cache * 1.5)`. A pool has at least this many.
    pub fn per_cache(&self) -> u32 {
        self.cache.saturating_mul(3) / 2
    }

    /// The fewest buffers that do: every ring full, every cache full, and
    /// never below DPDK's floor.
    pub fn minimum(&self) -> u32 {
        let rings = u64::from(self.rx_rings) * u64::from(self.rx_descriptors)
            + u64::from(self.tx_rings) * u64::from(self.tx_descriptors);
        let caches = u64::from(self.lcores) * u64::from(self.per_cache());
        u32::try_from(rings + caches)
            .unwrap_or(u32::MAX)
            .max(self.per_cache())
    }

    /// Refuses `count` buffers if they are fewer than [`PoolNeed::minimum`]
    /// ([`DpdkError::PoolTooSmall`], saying what needs them).
    pub fn check(self, count: u32) -> Result<()> {
        if count < self.minimum() {
            return Err(DpdkError::PoolTooSmall { count, need: self });
        }
        Ok(())
    }
}

impl fmt::Display for PoolNeed {
    /// "this port needs at least 2816 (rx ring 1024 + tx ring 1024 + 2 lcore
    /// caches of up to 384 each)", or DPDK's floor for the pool alone.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let minimum = self.minimum();
        if self.ports == 0 {
            return write!(
                f,
                "DPDK needs at least {minimum} for a per-lcore cache of {} (1.5 times the cache)",
                self.cache
            );
        }
        let rings = |kind: &str, count: u32, each: u32| match count {
            1 => format!("{kind} ring {each}"),
            n => format!("{kind} rings {n} x {each}"),
        };
        let mut terms = vec![
            rings("rx", self.rx_rings, self.rx_descriptors),
            rings("tx", self.tx_rings, self.tx_descriptors),
        ];
        if self.cache > 0 && self.lcores > 0 {
            terms.push(match self.lcores {
                1 => format!("1 lcore cache of up to {}", self.per_cache()),
                n => format!("{n} lcore caches of up to {} each", self.per_cache()),
            });
        }
        let subject = match self.ports {
            1 => "this port needs".to_owned(),
            n => format!("these {n} ports need"),
        };
        write!(f, "{subject} at least {minimum} ({})", terms.join(" + "))
    }
}

/// A handle to a DPDK packet buffer pool.
#[derive(Debug, Clone, Copy)]
pub struct Mempool {
    ptr: NonNull<sys::rte_mempool>,
}

// SAFETY: rte_mempool get/put are multi-producer/multi-consumer safe; the
// handle is only a pointer to a pool that is never freed (module invariant).
unsafe impl Send for Mempool {}
// SAFETY: as above; no method mutates the handle itself.
unsafe impl Sync for Mempool {}

impl Mempool {
    /// Creates a pool named `name` (names are unique per process). A count
    /// below DPDK's floor for the cache ([`PoolNeed::pool_only`]) is
    /// [`DpdkError::PoolTooSmall`]; a cache above DPDK's maximum (512) is
    /// [`DpdkError::InvalidArgument`].
    pub fn create(name: &str, config: &PoolConfig) -> Result<Mempool> {
        let c_name = CString::new(name)
            .map_err(|_| DpdkError::InvalidArgument(format!("pool name {name:?}")))?;
        if config.cache > sys::RTE_MEMPOOL_CACHE_MAX_SIZE {
            return Err(DpdkError::InvalidArgument(format!(
                "pool '{name}': a per-lcore cache of {} buffers; DPDK allows at most {}",
                config.cache,
                sys::RTE_MEMPOOL_CACHE_MAX_SIZE
            )));
        }
        PoolNeed::pool_only(config.cache).check(config.count)?;
        let socket = config.socket.unwrap_or(sys::SOCKET_ID_ANY);
        // SAFETY: c_name is a valid C string for the duration of the call;
        // the other arguments are plain integers that DPDK validates.
        let ptr = unsafe {
            sys::rte_pktmbuf_pool_create(
                c_name.as_ptr(),
                config.count,
                config.cache,
                0,
                config.data_room,
                socket,
            )
        };
        NonNull::new(ptr).map(|ptr| Mempool { ptr }).ok_or_else(|| {
            let errno = rte_errno();
            DpdkError::PoolCreate {
                name: name.to_owned(),
                count: config.count,
                errno,
                reason: strerror(errno),
                hint: create_hint(errno),
            }
        })
    }

    /// The pool's name.
    pub fn name(&self) -> String {
        // SAFETY: the pool pointer is valid for the life of the process and
        // `name` is a NUL-terminated array set once at creation.
        let name = unsafe { &(*self.ptr.as_ptr()).name };
        let bytes: Vec<u8> = name
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Buffers in the pool, in use or not.
    pub fn size(&self) -> u32 {
        // SAFETY: the pool pointer is valid for the life of the process and
        // `size` is set once at creation; this only reads it.
        unsafe { (*self.ptr.as_ptr()).size }
    }

    /// The pool's per-lcore cache size.
    pub fn cache_size(&self) -> u32 {
        // SAFETY: as for `size`: `cache_size` is set once at creation.
        unsafe { (*self.ptr.as_ptr()).cache_size }
    }

    /// Takes one buffer (empty, with default headroom), or `None` if the pool
    /// is exhausted.
    #[inline]
    pub fn alloc(&self) -> Option<Mbuf> {
        // SAFETY: the pool pointer is valid for the life of the process.
        let raw = unsafe { sys::dps_pktmbuf_alloc(self.ptr.as_ptr()) };
        // SAFETY: a non-null result is a fresh mbuf that we now own.
        NonNull::new(raw).map(|m| unsafe { Mbuf::from_raw(m) })
    }

    /// Appends `count` buffers to `out`, all or none. Returns false, `out`
    /// unchanged, if the pool has fewer than `count` or they would not fit.
    #[inline]
    pub fn alloc_bulk<const N: usize>(&self, out: &mut ArrayVec<Mbuf, N>, count: usize) -> bool {
        if count > out.remaining_capacity() {
            return false;
        }
        let len = out.len();
        // SAFETY: the spare capacity of `out` holds at least `count` slots;
        // Mbuf is repr(transparent) over a non-null *mut rte_mbuf, so the
        // slots can receive the pointers DPDK writes. On success all `count`
        // slots are written, so set_len covers initialised elements only.
        unsafe {
            let slots = out.as_mut_ptr().add(len).cast::<*mut sys::rte_mbuf>();
            if sys::dps_pktmbuf_alloc_bulk(self.ptr.as_ptr(), slots, count as u32) != 0 {
                return false;
            }
            out.set_len(len + count);
        }
        true
    }

    /// Buffers currently free in the pool (cache included).
    pub fn available(&self) -> u32 {
        // SAFETY: the pool pointer is valid; the count is a read-only walk.
        unsafe { sys::dps_mempool_avail_count(self.ptr.as_ptr()) }
    }

    /// Buffers currently taken from the pool.
    pub fn in_use(&self) -> u32 {
        // SAFETY: as for `available`.
        unsafe { sys::dps_mempool_in_use_count(self.ptr.as_ptr()) }
    }

    /// Bytes of each buffer's data room, headroom included (as configured
    /// in [`PoolConfig::data_room`]).
    pub fn data_room(&self) -> u16 {
        // SAFETY: the pool pointer is valid and was made by
        // rte_pktmbuf_pool_create, so its private area holds the data room.
        unsafe { sys::dps_pktmbuf_data_room_size(self.ptr.as_ptr()) }
    }

    /// The raw pool pointer, for ethdev queue setup.
    pub fn as_ptr(&self) -> *mut sys::rte_mempool {
        self.ptr.as_ptr()
    }
}

/// What to try when `rte_pktmbuf_pool_create` fails with `errno`.
fn create_hint(errno: i32) -> &'static str {
    match errno {
        libc::ENOMEM => "Give EAL more memory (-m MB, or more hugepages), or ask for fewer buffers",
        libc::EEXIST => "A pool of this name exists already: pool names are unique per process",
        libc::ENOSPC => "DPDK's table of memory zones is full: create fewer pools",
        libc::EINVAL => {
            "DPDK refused the pool's sizes: check the buffer count, the per-lcore cache (at \
             most 512, and at most 2/3 of the count) and the data room"
        }
        _ => "See DPDK's messages above for the cause",
    }
}

impl crate::stack::port::BufPool for Mempool {
    type Buf = Mbuf;

    fn alloc(&self) -> Option<Mbuf> {
        Mempool::alloc(self)
    }
}

/// A regular pool plus a pool of large buffers, for application threads that
/// send datagrams bigger than one regular buffer (queue-mode sockets).
#[derive(Debug, Clone, Copy)]
pub struct PoolPair {
    /// Buffers for ordinary datagrams.
    pub regular: Mempool,
    /// Buffers of the largest mbuf size ([`PoolConfig::large`]).
    pub large: Mempool,
}

impl crate::stack::port::BufPool for PoolPair {
    type Buf = Mbuf;

    fn alloc(&self) -> Option<Mbuf> {
        self.regular.alloc()
    }

    fn alloc_large(&self) -> Option<Mbuf> {
        self.large.alloc()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_is_dpdks_cache_flush_threshold() {
        // rte_mempool_create_empty: EINVAL if (uint32_t)(cache * 1.5) > n.
        let floor = PoolNeed::pool_only(256);
        assert_eq!(floor.minimum(), 384);
        assert!(floor.check(384).is_ok());
        let err = floor.check(383).expect_err("below the floor");
        assert!(matches!(err, DpdkError::PoolTooSmall { count: 383, .. }));
        assert_eq!(
            err.to_string(),
            "383 packet buffers are too few: DPDK needs at least 384 for a per-lcore cache \
             of 256 (1.5 times the cache)"
        );
        assert_eq!(
            PoolNeed::pool_only(255).minimum(),
            382,
            "truncated, as in C"
        );
        assert_eq!(PoolNeed::pool_only(0).minimum(), 0);
        assert_eq!(
            PoolNeed::pool_only(PoolConfig::default().cache).minimum(),
            384
        );
    }

    #[test]
    fn a_port_needs_its_rings_and_every_lcore_cache() {
        let need = PoolNeed::for_ports(1, &PortConfig::default(), 256, 2);
        assert_eq!(need.minimum(), 1024 + 1024 + 2 * 384);
        assert!(need.check(2816).is_ok());
        let err = need.check(64).expect_err("too few");
        assert_eq!(
            err.to_string(),
            "64 packet buffers are too few: this port needs at least 2816 (rx ring 1024 + \
             tx ring 1024 + 2 lcore caches of up to 384 each)"
        );
        assert!(
            PoolConfig::default().count >= need.minimum(),
            "the default pool fits the default port"
        );
    }

    #[test]
    fn several_ports_and_queues_multiply_the_rings() {
        let port = PortConfig {
            rx_queues: 2,
            tx_queues: 2,
            rx_descriptors: 512,
            tx_descriptors: 256,
            ..PortConfig::default()
        };
        let need = PoolNeed::for_ports(2, &port, 0, 4);
        assert_eq!(need.minimum(), 4 * 512 + 4 * 256, "no cache, no cache term");
        assert_eq!(
            need.to_string(),
            "these 2 ports need at least 3072 (rx rings 4 x 512 + tx rings 4 x 256)"
        );
        let one_lcore = PoolNeed::for_ports(1, &PortConfig::default(), 32, 1);
        assert_eq!(
            one_lcore.to_string(),
            "this port needs at least 2096 (rx ring 1024 + tx ring 1024 + 1 lcore cache of \
             up to 48)"
        );
    }

    #[test]
    fn huge_needs_saturate_instead_of_wrapping() {
        let port = PortConfig {
            rx_queues: u16::MAX,
            tx_queues: u16::MAX,
            rx_descriptors: u16::MAX,
            tx_descriptors: u16::MAX,
            ..PortConfig::default()
        };
        let need = PoolNeed::for_ports(u32::MAX, &port, 512, u32::MAX);
        assert_eq!(need.minimum(), u32::MAX);
        assert!(need.check(u32::MAX).is_ok());
    }
}
