//! Packet buffer pools (`rte_pktmbuf_pool_create`).
//!
//! A [`Mempool`] is a copyable handle: DPDK pools are safe for concurrent
//! get/put from any thread (lcores use a per-lcore cache; other threads go to
//! the shared ring). Pools live until EAL cleanup: dpstack never frees a pool,
//! since any mbuf still in flight (in a ring, a socket queue, a NIC) points
//! into it.

use crate::error::{rte_errno, strerror, DpdkError, Result};
use crate::mbuf::Mbuf;
use crate::sys;
use arrayvec::ArrayVec;
use std::ffi::CString;
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
    /// Creates a pool named `name` (names are unique per process).
    pub fn create(name: &str, config: &PoolConfig) -> Result<Mempool> {
        let c_name = CString::new(name)
            .map_err(|_| DpdkError::InvalidArgument(format!("pool name {name:?}")))?;
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
            }
        })
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

impl crate::stack::socket::BufPool for Mempool {
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

impl crate::stack::socket::BufPool for PoolPair {
    type Buf = Mbuf;

    fn alloc(&self) -> Option<Mbuf> {
        self.regular.alloc()
    }

    fn alloc_large(&self) -> Option<Mbuf> {
        self.large.alloc()
    }
}
