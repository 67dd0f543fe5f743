//! Typed errors of the driver layer.
//!
//! Every variant that comes from DPDK carries `rte_errno` (or the negative
//! return code) and DPDK's own text for it, and its message says what the user
//! can do about it. These are setup and control-path errors; the data path
//! never returns errors, it counts drops.

use std::ffi::CStr;
use thiserror::Error;

/// A result of a driver-layer call.
pub type Result<T, E = DpdkError> = std::result::Result<T, E>;

/// What went wrong in a DPDK setup or control call.
#[derive(Debug, Error)]
pub enum DpdkError {
    /// `rte_eal_init` failed.
    #[error("DPDK EAL initialisation failed: {reason} (rte_errno {errno}). {hint}")]
    EalInit {
        /// `rte_errno` after the call.
        errno: i32,
        /// DPDK's text for `errno`.
        reason: String,
        /// What to try next.
        hint: &'static str,
    },
    /// EAL was already initialised in this process (it can be only once).
    #[error(
        "DPDK EAL is already initialised in this process: it can be initialised only once, \
         even after cleanup; run each DPDK test in its own process (cargo nextest does)"
    )]
    EalAlreadyInitialized,
    /// An argument could not be passed to DPDK (e.g. it contains a NUL byte).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A packet buffer pool could not be created.
    #[error(
        "cannot create mbuf pool '{name}' of {count} buffers: {reason} (rte_errno {errno}). {hint}"
    )]
    PoolCreate {
        /// The pool's name.
        name: String,
        /// Buffers asked for.
        count: u32,
        /// `rte_errno` after the call.
        errno: i32,
        /// DPDK's text for `errno`.
        reason: String,
        /// What to try next (it depends on `errno`: ENOMEM is too little
        /// memory, EINVAL a configuration DPDK refuses).
        hint: &'static str,
    },
    /// A pool has fewer buffers than what uses it can hold at once (DPDK's
    /// own floor, or its ports' rings and its lcores' caches).
    #[error("{count} packet buffers are too few: {need}")]
    PoolTooSmall {
        /// Buffers the pool has (or was asked for).
        count: u32,
        /// What it needs, and why.
        need: crate::mempool::PoolNeed,
    },
    /// No ethdev port has this id.
    #[error(
        "port {0} does not exist: {available} port(s) are available; add one with \
         --vdev (e.g. --vdev=net_null0) or bind a NIC to a DPDK driver",
        available = crate::ethdev::available_port_count()
    )]
    NoSuchPort(u16),
    /// An ethdev call on a port failed.
    #[error("port {port}: {operation} failed: {reason} (error {errno})")]
    Port {
        /// The port.
        port: u16,
        /// What was attempted, in words ("configure 2 rx queues").
        operation: String,
        /// The positive errno.
        errno: i32,
        /// DPDK's text for `errno`.
        reason: String,
    },
    /// A port cannot have the queue counts asked for.
    #[error(
        "port {port} ({driver}) takes 1..={max_rx} rx and 1..={max_tx} tx queues; asked for \
         {rx} rx and {tx} tx"
    )]
    QueueCount {
        /// The port.
        port: u16,
        /// Its driver.
        driver: String,
        /// Most rx queues (the device's limit, and dpstack's 64).
        max_rx: u16,
        /// Most tx queues.
        max_tx: u16,
        /// Rx queues asked for.
        rx: u16,
        /// Tx queues asked for.
        tx: u16,
    },
    /// RSS was asked of a port whose device cannot hash flows to queues.
    #[error(
        "port {port} ({driver}) has no RSS: {spreading}; it takes up to {max_rx_queues} rx \
         queues. Open it without RSS and spread flows in software where they must land on a \
         known queue"
    )]
    RssUnsupported {
        /// The port.
        port: u16,
        /// Its driver.
        driver: String,
        /// What the device does with flows instead.
        spreading: crate::ethdev::QueueSpreading,
        /// Receive queues the device supports.
        max_rx_queues: u16,
    },
    /// None of the RSS hash types asked for is one the device can hash.
    #[error(
        "port {port} ({driver}) cannot hash any of the RSS types asked for (0x{asked:x}); it \
         supports 0x{supported:x}"
    )]
    RssHashUnsupported {
        /// The port.
        port: u16,
        /// Its driver.
        driver: String,
        /// `RTE_ETH_RSS_*` bits asked for.
        asked: u64,
        /// `RTE_ETH_RSS_*` bits the device supports.
        supported: u64,
    },
    /// A function could not be launched on an lcore.
    #[error("cannot launch on lcore {lcore}: {reason}")]
    Launch {
        /// The lcore.
        lcore: u32,
        /// Why.
        reason: String,
    },
}

impl DpdkError {
    /// A [`DpdkError::Port`] from a DPDK return code (negative errno).
    pub(crate) fn port(port: u16, operation: impl Into<String>, ret: i32) -> DpdkError {
        let errno = ret.abs();
        DpdkError::Port {
            port,
            operation: operation.into(),
            errno,
            reason: strerror(errno),
        }
    }
}

/// DPDK's text for an errno value (covers DPDK's own codes as well as libc's).
pub fn strerror(errno: i32) -> String {
    // SAFETY: rte_strerror returns a pointer to a NUL-terminated string that
    // lives in a static or thread-local buffer; it is copied out at once.
    unsafe {
        let text = crate::sys::rte_strerror(errno);
        if text.is_null() {
            return format!("error {errno}");
        }
        CStr::from_ptr(text).to_string_lossy().into_owned()
    }
}

/// The calling thread's `rte_errno`.
pub fn rte_errno() -> i32 {
    // SAFETY: dps_errno only reads the calling thread's rte_errno.
    unsafe { crate::sys::dps_errno() }
}
