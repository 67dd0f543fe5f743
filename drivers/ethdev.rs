//! Ethernet ports (`rte_ethdev`): set-up, control, statistics, and the
//! per-queue handles that move packets.
//!
//! An [`EthPort`] is the control handle of one port: configure, start, stop,
//! close, MAC, link (state, up/down), promiscuous mode, RSS configuration,
//! stats and xstats. Packets move through an [`EthQueue`] (one rx queue and
//! one tx queue of a port), which implements the stack's [`Port`] trait.
//! Each queue can be taken once at a time, so two threads never poll the
//! same DPDK queue (DPDK queues are not thread-safe).
//!
//! Invariants: the port is stopped and closed when the last handle (the
//! `EthPort` or any `EthQueue`) is dropped, so a queue never outlives its
//! port's configuration; the burst calls allocate nothing and take no lock.
//! A queue of a port whose driver unmaps memory under running bursts
//! (net_memif, when its peer goes away) brackets each burst with its
//! [`guard`] (a store before and after), which the unmapping waits for.

mod details;
mod guard;
mod info;
mod rss;

pub use details::{PortSettings, VlanOffload};
pub use info::{
    device_capability_name, DescLimits, ErrorHandling, LinkStatus, PortInfo, PortStats,
    RssHashConf, SwitchInfo, Xstat,
};
pub use rss::{softrss, tcp_placement, QueueInfo, QueueSpreading, QueueStats, RssConfig};

use crate::error::{DpdkError, Result};
use crate::lcore::Lcore;
use crate::mbuf::Mbuf;
use crate::mempool::{Mempool, PoolNeed};
use crate::stack::port::{MacAddr, Port};
use crate::sys;
use arrayvec::ArrayVec;
use guard::BurstGuard;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// The ids of every port DPDK has probed, ascending.
pub fn available_ports() -> Vec<u16> {
    let mut ports = Vec::new();
    // SAFETY: rte_eth_find_next only reads ethdev's port table.
    let mut id = unsafe { sys::rte_eth_find_next(0) };
    while u32::from(id) < sys::RTE_MAX_ETHPORTS {
        ports.push(id);
        // SAFETY: as above.
        id = unsafe { sys::rte_eth_find_next(id + 1) };
    }
    ports
}

/// How many ports DPDK has probed.
pub fn available_port_count() -> u16 {
    // SAFETY: reads ethdev's port table; valid before and after EAL init.
    unsafe { sys::rte_eth_dev_count_avail() }
}

/// How a port is configured by [`EthPort::open`].
#[derive(Debug, Clone)]
pub struct PortConfig {
    /// Receive queues.
    pub rx_queues: u16,
    /// Transmit queues.
    pub tx_queues: u16,
    /// Descriptors per receive queue (the driver may round it).
    pub rx_descriptors: u16,
    /// Descriptors per transmit queue (the driver may round it).
    pub tx_descriptors: u16,
    /// Accept frames for any destination MAC.
    pub promiscuous: bool,
    /// The port's MTU (IP packet bytes per frame); `None` keeps the
    /// device's default (1500 for most). Above 1500 (jumbo frames) the pool's
    /// buffers must hold a whole frame: [`EthPort::open`] checks both the
    /// device's limits and the pool's data room.
    pub mtu: Option<u16>,
    /// Spread received flows over the rx queues by RSS. `None` leaves the
    /// device's spreading as it is (see [`QueueSpreading`]); asking for RSS
    /// on a device without it is [`DpdkError::RssUnsupported`].
    pub rss: Option<RssConfig>,
}

impl Default for PortConfig {
    fn default() -> Self {
        PortConfig {
            rx_queues: 1,
            tx_queues: 1,
            rx_descriptors: 1024,
            tx_descriptors: 1024,
            promiscuous: true,
            mtu: None,
            rss: None,
        }
    }
}

/// Ethernet header plus one VLAN tag: what a frame adds to the MTU.
const FRAME_OVERHEAD: u32 = 14 + 4;

/// Virtual devices whose data path carries frames of any length although
/// their ethdev limits say 1518 bytes: `net_memif` splits a frame over
/// descriptors of its `bsize` and joins them on receive; `net_ring` passes
/// mbufs as they are. For these the MTU is the stack's alone: dpstack does
/// not ask the device for it (ethdev would refuse it) and checks only that
/// the pool's buffers hold a whole frame.
const MTU_UNENFORCED: [&str; 2] = ["net_memif", "net_ring"];

/// How an MTU is applied to a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MtuPlan {
    /// Configure the device with it.
    Device,
    /// The device does not limit frame length: the stack's alone.
    StackOnly,
}

/// Refuses an MTU the device cannot take, or one whose frames would not fit
/// in one of the pool's buffers (dpstack receives every frame in one buffer).
fn plan_mtu(id: u16, info: &PortInfo, pool: &Mempool, mtu: u16) -> Result<MtuPlan> {
    let low = info.min_mtu.max(68);
    let frame = u32::from(mtu) + 18; // ethdev's rule: header and CRC
    let plan = if MTU_UNENFORCED.contains(&info.driver.as_str()) {
        MtuPlan::StackOnly
    } else if mtu < low || mtu > info.max_mtu || frame > info.max_rx_pktlen {
        let high = info
            .max_mtu
            .min(u16::try_from(info.max_rx_pktlen.saturating_sub(18)).unwrap_or(u16::MAX));
        return Err(DpdkError::InvalidArgument(format!(
            "port {id} ({}) takes an MTU of {low}..={high}; asked for {mtu}",
            info.driver
        )));
    } else {
        MtuPlan::Device
    };
    let room = u32::from(pool.data_room()).saturating_sub(sys::RTE_PKTMBUF_HEADROOM);
    if u32::from(mtu) + FRAME_OVERHEAD > room {
        return Err(DpdkError::InvalidArgument(format!(
            "port {id}: MTU {mtu} needs buffers of {} data bytes, the pool's hold {room}; \
             create the pool with a data room of at least {} (PoolConfig::for_mtu)",
            u32::from(mtu) + FRAME_OVERHEAD,
            u32::from(mtu) + FRAME_OVERHEAD + sys::RTE_PKTMBUF_HEADROOM
        )));
    }
    Ok(plan)
}

/// Configures port `id` (stopped) with `config` and sets up its queues with
/// buffers from `pool`. Returns the mapping that turns a driver's ENOMEM
/// at start into [`DpdkError::PoolTooSmall`] when the pool is the cause.
fn configure(
    id: u16,
    config: &PortConfig,
    pool: Mempool,
) -> Result<impl Fn(DpdkError) -> DpdkError> {
    let info = PortInfo::query(id)?;
    if config.rx_queues == 0
        || config.tx_queues == 0
        || config.rx_queues > info.max_rx_queues
        || config.tx_queues > info.max_tx_queues
        || config.rx_queues > 64
        || config.tx_queues > 64
    {
        return Err(DpdkError::QueueCount {
            port: id,
            driver: info.driver,
            max_rx: info.max_rx_queues.min(64),
            max_tx: info.max_tx_queues.min(64),
            rx: config.rx_queues,
            tx: config.tx_queues,
        });
    }
    let mut conf = sys::rte_eth_conf::default();
    if let Some(mtu) = config.mtu {
        if plan_mtu(id, &info, &pool, mtu)? == MtuPlan::Device {
            conf.rxmode.mtu = u32::from(mtu);
        }
    }
    let mut key = Vec::new();
    if let Some(rss) = &config.rss {
        conf.rxmode.mq_mode = sys::rte_eth_rx_mq_mode_RTE_ETH_MQ_RX_RSS;
        conf.rx_adv_conf.rss_conf.rss_hf = rss::plan_rss(id, &info, rss)?;
        if let Some(k) = &rss.key {
            key.clone_from(k);
            conf.rx_adv_conf.rss_conf.rss_key = key.as_mut_ptr();
            conf.rx_adv_conf.rss_conf.rss_key_len = key.len() as u8;
        }
    }
    // SAFETY: `conf` is a valid configuration (zeroed but for the MTU
    // and RSS: no offloads), alive for the call with the key it points
    // to; DPDK copies both.
    let ret = unsafe { sys::rte_eth_dev_configure(id, config.rx_queues, config.tx_queues, &conf) };
    check(
        id,
        || {
            format!(
                "configure {} rx / {} tx queues",
                config.rx_queues, config.tx_queues
            )
        },
        ret,
    )?;
    let (mut rxd, mut txd) = (config.rx_descriptors, config.tx_descriptors);
    // SAFETY: rxd and txd are valid for writes for the call.
    let ret = unsafe { sys::rte_eth_dev_adjust_nb_rx_tx_desc(id, &mut rxd, &mut txd) };
    check(id, || "adjust descriptor counts".into(), ret)?;
    // SAFETY: reads ethdev's port table.
    let socket = unsafe { sys::rte_eth_dev_socket_id(id) };
    let socket = u32::try_from(socket).unwrap_or(sys::SOCKET_ID_ANY as u32);
    // Drivers that fill their receive rings (NICs at start, net_tap at
    // set-up) fail with ENOMEM when the pool runs dry: say so, rather
    // than suggest too little memory.
    let need = PoolNeed::for_ports(
        1,
        &PortConfig {
            rx_descriptors: rxd,
            tx_descriptors: txd,
            ..config.clone()
        },
        pool.cache_size(),
        Lcore::count(),
    );
    let too_few = move |e: DpdkError| match e {
        DpdkError::Port { errno, .. } if errno == libc::ENOMEM && pool.size() < need.minimum() => {
            DpdkError::PoolTooSmall {
                count: pool.size(),
                need,
            }
        }
        e => e,
    };
    for q in 0..config.rx_queues {
        // SAFETY: the port is configured with this many rx queues; a NULL
        // rx_conf means the driver's defaults; the pool outlives the port.
        let ret = unsafe {
            sys::rte_eth_rx_queue_setup(id, q, rxd, socket, std::ptr::null(), pool.as_ptr())
        };
        check(
            id,
            || format!("set up rx queue {q} ({rxd} descriptors)"),
            ret,
        )
        .map_err(too_few)?;
    }
    for q in 0..config.tx_queues {
        // SAFETY: as above, for tx queues.
        let ret = unsafe { sys::rte_eth_tx_queue_setup(id, q, txd, socket, std::ptr::null()) };
        check(
            id,
            || format!("set up tx queue {q} ({txd} descriptors)"),
            ret,
        )?;
    }
    if let Some(rss) = &config.rss {
        // Some drivers (net_null) take the key only from an update, and
        // leave the redirection table as it was.
        rss::update_hash(id, &info, rss)?;
        rss::spread_evenly(id, &info, config.rx_queues)?;
    }
    Ok(too_few)
}

/// Shared state of an open port: closed when the last handle drops.
#[derive(Debug)]
struct PortShared {
    id: u16,
    pool: Mempool,
    mac: MacAddr,
    started: AtomicBool,
    rx_taken: AtomicU64,
    tx_taken: AtomicU64,
    rx_queues: u16,
    tx_queues: u16,
    /// The driver unmaps memory under running bursts when the link goes
    /// down (net_memif): every queue handle takes a [`BurstGuard`].
    guard_bursts: bool,
}

impl Drop for PortShared {
    fn drop(&mut self) {
        // SAFETY: no queue handle exists any more (this is the last Arc), so
        // nothing polls the port while it is stopped and closed.
        unsafe {
            if self.started.load(Ordering::SeqCst) {
                sys::rte_eth_dev_stop(self.id);
            }
            sys::rte_eth_dev_close(self.id);
        }
    }
}

/// The control handle of an open port. See the module documentation.
#[derive(Debug)]
pub struct EthPort {
    shared: Arc<PortShared>,
}

/// What a failed start names: the device, and for a memif client the
/// usual cause, a server whose socket is not there (yet).
fn start_failure(port: u16) -> String {
    let Ok(info) = PortInfo::query(port) else {
        return "start".into();
    };
    let devargs = (PortSettings::query(port).ok())
        .and_then(|s| s.devargs)
        .unwrap_or_default();
    if info.driver == "net_memif" && !devargs.contains("role=server") {
        let socket = (devargs.split(',').find_map(|a| a.strip_prefix("socket=")))
            .unwrap_or("/run/memif.sock");
        return format!(
            "start of {}, a memif client of {socket} (is its server running?),",
            info.name
        );
    }
    format!("start of {} ({})", info.name, info.driver)
}

fn check(port: u16, operation: impl FnOnce() -> String, ret: i32) -> Result<()> {
    if ret < 0 {
        Err(DpdkError::port(port, operation(), ret))
    } else {
        Ok(())
    }
}

impl EthPort {
    /// Configures port `id` with `config`, sets up its queues with buffers
    /// from `pool`, and starts it. A driver that cannot fill its receive
    /// rings from a pool smaller than the port's [`PoolNeed`] gives
    /// [`DpdkError::PoolTooSmall`].
    pub fn open(id: u16, config: &PortConfig, pool: Mempool) -> Result<EthPort> {
        // SAFETY: reads ethdev's port table.
        if unsafe { sys::rte_eth_dev_is_valid_port(id) } == 0 {
            return Err(DpdkError::NoSuchPort(id));
        }
        let too_few = configure(id, config, pool)?;
        let guard_bursts = guard::needs_guard(&PortInfo::query(id)?.driver);
        let port = EthPort {
            shared: Arc::new(PortShared {
                id,
                pool,
                mac: query_mac(id)?,
                started: AtomicBool::new(false),
                rx_taken: AtomicU64::new(0),
                tx_taken: AtomicU64::new(0),
                rx_queues: config.rx_queues,
                tx_queues: config.tx_queues,
                guard_bursts,
            }),
        };
        port.start().map_err(too_few)?;
        if config.promiscuous {
            // Some virtual devices cannot change it; that is not fatal.
            let _ = port.set_promiscuous(true);
        }
        Ok(port)
    }

    /// Configures the stopped port anew (queue counts, descriptors, RSS,
    /// MTU), as testpmd's `port config all rxq|txq N`; `start` it after.
    /// No queue handle may exist.
    pub fn reconfigure(&mut self, config: &PortConfig) -> Result<()> {
        if self.is_started() {
            return Err(DpdkError::InvalidArgument(format!(
                "port {}: stop the port before configuring it",
                self.id()
            )));
        }
        let id = self.id();
        let shared = Arc::get_mut(&mut self.shared).ok_or_else(|| {
            DpdkError::InvalidArgument(format!(
                "port {id}: cannot configure while a queue handle exists; drop the EthQueue first"
            ))
        })?;
        let _ = configure(id, config, shared.pool)?;
        shared.rx_queues = config.rx_queues;
        shared.tx_queues = config.tx_queues;
        Ok(())
    }

    /// The port id.
    pub fn id(&self) -> u16 {
        self.shared.id
    }

    /// The pool its receive queues take buffers from.
    pub fn pool(&self) -> Mempool {
        self.shared.pool
    }

    /// Starts the port (a no-op if it is started).
    pub fn start(&self) -> Result<()> {
        if self.shared.started.load(Ordering::SeqCst) {
            return Ok(());
        }
        // SAFETY: the port is configured with its queues set up.
        let ret = unsafe { sys::rte_eth_dev_start(self.id()) };
        check(self.id(), || start_failure(self.id()), ret)?;
        self.shared.started.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// Stops the port. Every queue handle must have been dropped first
    /// (DPDK frees a queue's buffers on stop, so a thread still polling it
    /// would touch freed memory); otherwise this is an error.
    pub fn stop(&self) -> Result<()> {
        let s = &self.shared;
        if s.rx_taken.load(Ordering::SeqCst) != 0 || s.tx_taken.load(Ordering::SeqCst) != 0 {
            return Err(DpdkError::InvalidArgument(format!(
                "port {}: cannot stop while a queue handle exists; stop polling and drop the \
                 EthQueue first",
                s.id
            )));
        }
        if !s.started.swap(false, Ordering::SeqCst) {
            return Ok(());
        }
        // SAFETY: the port is started; DPDK swaps in dummy burst functions.
        let ret = unsafe { sys::rte_eth_dev_stop(self.id()) };
        check(self.id(), || "stop".into(), ret)
    }

    /// True while the port is started.
    pub fn is_started(&self) -> bool {
        self.shared.started.load(Ordering::SeqCst)
    }

    /// The port's MAC address.
    pub fn mac(&self) -> MacAddr {
        self.shared.mac
    }

    /// Driver name, device name, queue limits and offload capabilities.
    pub fn info(&self) -> Result<PortInfo> {
        PortInfo::query(self.id())
    }

    /// Firmware version, device arguments, all-multicast mode and VLAN
    /// offloads.
    pub fn settings(&self) -> Result<PortSettings> {
        PortSettings::query(self.id())
    }

    /// Link state right now, without waiting.
    pub fn link(&self) -> Result<LinkStatus> {
        LinkStatus::query(self.id())
    }

    /// Sets the link up (`rte_eth_dev_set_link_up`); drivers without the
    /// operation fail with "Operation not supported".
    pub fn set_link_up(&self) -> Result<()> {
        // SAFETY: the port is configured; the call only changes link state.
        let ret = unsafe { sys::rte_eth_dev_set_link_up(self.id()) };
        check(self.id(), || "set link up".into(), ret)
    }

    /// Sets the link down (`rte_eth_dev_set_link_down`); the port stays
    /// started, but the driver stops carrying frames.
    pub fn set_link_down(&self) -> Result<()> {
        // SAFETY: the port is configured; the call only changes link state.
        let ret = unsafe { sys::rte_eth_dev_set_link_down(self.id()) };
        check(self.id(), || "set link down".into(), ret)
    }

    /// The RSS hash functions and key (`rte_eth_dev_rss_hash_conf_get`,
    /// with a key buffer of the device's `hash_key_size`).
    pub fn rss_hash_conf(&self) -> Result<RssHashConf> {
        RssHashConf::query(self.id())
    }

    /// Turns promiscuous mode on or off.
    pub fn set_promiscuous(&self, on: bool) -> Result<()> {
        // SAFETY: the port is configured.
        let ret = unsafe {
            if on {
                sys::rte_eth_promiscuous_enable(self.id())
            } else {
                sys::rte_eth_promiscuous_disable(self.id())
            }
        };
        check(
            self.id(),
            || format!("{} promiscuous mode", if on { "enable" } else { "disable" }),
            ret,
        )
    }

    /// Programs the port's multicast filter to pass `macs` (the groups
    /// the stack listens to: `StackControl::multicast_macs`), with
    /// `rte_eth_dev_set_mc_addr_list`; a device without such a list (or
    /// with too small a one: net_tap, net_pcap, memif may have none) gets
    /// all-multicast mode instead. Says which took; an error if neither
    /// did. Control path (DPDK's testpmd changes both while forwarding).
    pub fn set_multicast_macs(&self, macs: &[MacAddr]) -> Result<MulticastFilter> {
        set_multicast_macs(self.id(), macs)
    }

    /// True if promiscuous mode is on.
    pub fn promiscuous(&self) -> bool {
        // SAFETY: reads the port's state.
        unsafe { sys::rte_eth_promiscuous_get(self.id()) == 1 }
    }

    /// Basic counters.
    pub fn stats(&self) -> Result<PortStats> {
        PortStats::query(self.id())
    }

    /// Resets the basic counters.
    pub fn reset_stats(&self) -> Result<()> {
        // SAFETY: the port is configured.
        let ret = unsafe { sys::rte_eth_stats_reset(self.id()) };
        check(self.id(), || "reset stats".into(), ret)
    }

    /// Extended (driver-specific) counters, by name.
    pub fn xstats(&self) -> Result<Vec<Xstat>> {
        Xstat::query(self.id())
    }

    /// Resets the extended counters.
    pub fn reset_xstats(&self) -> Result<()> {
        // SAFETY: the port is configured.
        let ret = unsafe { sys::rte_eth_xstats_reset(self.id()) };
        check(self.id(), || "reset xstats".into(), ret)
    }

    /// Takes rx queue `rxq` and tx queue `txq` for one polling thread. Fails
    /// if either does not exist or is already taken.
    pub fn queue(&self, rxq: u16, txq: u16) -> Result<EthQueue> {
        self.queue_parts(Some(rxq), Some(txq))
    }

    /// Takes an rx queue, a tx queue, or both, for one polling thread: a
    /// forwarding lcore may receive on a port whose transmit queue another
    /// lcore uses. The handle's missing half receives nothing and accepts
    /// nothing for transmission.
    pub fn queue_parts(&self, rxq: Option<u16>, txq: Option<u16>) -> Result<EthQueue> {
        let s = &self.shared;
        if rxq.is_some_and(|q| q >= s.rx_queues) || txq.is_some_and(|q| q >= s.tx_queues) {
            return Err(DpdkError::InvalidArgument(format!(
                "port {}: queue pair rx {rxq:?} / tx {txq:?} does not exist ({} rx, {} tx)",
                s.id, s.rx_queues, s.tx_queues
            )));
        }
        let guard = (s.guard_bursts.then(|| BurstGuard::take(s.id))).transpose()?;
        let (rx_bit, tx_bit) = (queue_bit(rxq), queue_bit(txq));
        if rx_bit != 0 && s.rx_taken.fetch_or(rx_bit, Ordering::SeqCst) & rx_bit != 0 {
            return Err(DpdkError::InvalidArgument(format!(
                "port {}: rx queue {} is already polled by another handle",
                s.id,
                rxq.unwrap_or_default()
            )));
        }
        if tx_bit != 0 && s.tx_taken.fetch_or(tx_bit, Ordering::SeqCst) & tx_bit != 0 {
            s.rx_taken.fetch_and(!rx_bit, Ordering::SeqCst);
            return Err(DpdkError::InvalidArgument(format!(
                "port {}: tx queue {} is already used by another handle",
                s.id,
                txq.unwrap_or_default()
            )));
        }
        Ok(EthQueue {
            port: s.id,
            rxq,
            txq,
            pool: s.pool,
            large_pool: None,
            mac: s.mac,
            guard,
            shared: Arc::clone(s),
        })
    }
}

/// The taken-mask bit of a queue (none for a missing half).
fn queue_bit(queue: Option<u16>) -> u64 {
    queue.map_or(0, |q| 1u64 << q)
}

/// How a port passes the multicast frames the stack listens to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MulticastFilter {
    /// Its multicast address list holds exactly the stack's groups.
    List,
    /// All-multicast mode: every multicast frame (the device has no list,
    /// or too small a one).
    AllMulticast,
}

/// [`EthPort::set_multicast_macs`] on port `id` (started, or configured).
pub(crate) fn set_multicast_macs(id: u16, macs: &[MacAddr]) -> Result<MulticastFilter> {
    let mut list: Vec<sys::rte_ether_addr> = (macs.iter())
        .map(|mac| sys::rte_ether_addr { addr_bytes: mac.0 })
        .collect();
    // SAFETY: `list` holds `list.len()` addresses, valid for the call
    // (DPDK copies them); the port id is checked by DPDK.
    let ret =
        unsafe { sys::rte_eth_dev_set_mc_addr_list(id, list.as_mut_ptr(), list.len() as u32) };
    if ret == 0 {
        return Ok(MulticastFilter::List);
    }
    // SAFETY: plain call on a port id DPDK checks.
    let ret = unsafe { sys::rte_eth_allmulticast_enable(id) };
    check(id, || "enable all-multicast mode".into(), ret)?;
    Ok(MulticastFilter::AllMulticast)
}

fn query_mac(id: u16) -> Result<MacAddr> {
    let mut addr = sys::rte_ether_addr::default();
    // SAFETY: addr is valid for writes for the call.
    let ret = unsafe { sys::rte_eth_macaddr_get(id, &mut addr) };
    check(id, || "read MAC address".into(), ret)?;
    Ok(MacAddr(addr.addr_bytes))
}

/// One rx queue and one tx queue of a port (or only one of them), polled
/// by one thread.
#[derive(Debug)]
pub struct EthQueue {
    port: u16,
    rxq: Option<u16>,
    txq: Option<u16>,
    pool: Mempool,
    large_pool: Option<Mempool>,
    mac: MacAddr,
    /// Brackets every burst on a port whose driver unmaps under them.
    guard: Option<BurstGuard>,
    shared: Arc<PortShared>,
}

impl EthQueue {
    /// The port id.
    pub fn port_id(&self) -> u16 {
        self.port
    }

    /// The rx queue id (`None`: this handle does not receive).
    pub fn rx_queue(&self) -> Option<u16> {
        self.rxq
    }

    /// The tx queue id (`None`: this handle does not transmit).
    pub fn tx_queue(&self) -> Option<u16> {
        self.txq
    }

    /// The pool this queue allocates from.
    pub fn pool(&self) -> Mempool {
        self.pool
    }

    /// Gives the queue a pool of large buffers (up to 64 KiB of data), used
    /// to reassemble IPv4 fragments. Without one, fragments are dropped.
    pub fn with_large_pool(mut self, pool: Mempool) -> EthQueue {
        self.large_pool = Some(pool);
        self
    }
}

impl Drop for EthQueue {
    fn drop(&mut self) {
        self.shared
            .rx_taken
            .fetch_and(!queue_bit(self.rxq), Ordering::SeqCst);
        self.shared
            .tx_taken
            .fetch_and(!queue_bit(self.txq), Ordering::SeqCst);
    }
}

impl Port for EthQueue {
    type Buf = Mbuf;

    #[inline]
    fn rx_burst<const N: usize>(&mut self, bufs: &mut ArrayVec<Mbuf, N>, max: usize) -> usize {
        let Some(rxq) = self.rxq else { return 0 };
        let len = bufs.len();
        let room = max
            .min(bufs.remaining_capacity())
            .min(usize::from(u16::MAX)) as u16;
        // SAFETY: this handle exclusively owns the rx queue (taken bit); the
        // spare capacity holds `room` slots, laid out as *mut rte_mbuf
        // (Mbuf is repr(transparent)); DPDK writes exactly `got` of them, and
        // each is an mbuf we now own.
        unsafe {
            let slots = bufs.as_mut_ptr().add(len).cast::<*mut sys::rte_mbuf>();
            if let Some(guard) = &self.guard {
                guard.enter();
            }
            let got = sys::dps_rx_burst(self.port, rxq, slots, room);
            if let Some(guard) = &self.guard {
                guard.leave();
            }
            bufs.set_len(len + usize::from(got));
            usize::from(got)
        }
    }

    #[inline]
    fn tx_burst<const N: usize>(&mut self, bufs: &mut ArrayVec<Mbuf, N>) -> usize {
        let len = bufs.len();
        let Some(txq) = self.txq.filter(|_| len > 0) else {
            return 0;
        };
        let offered = len.min(usize::from(u16::MAX));
        // SAFETY: this handle exclusively owns the tx queue; the first
        // `offered` elements are owned mbufs as a pointer array. DPDK takes
        // ownership of the first `sent`; those slots are then forgotten by
        // moving the unsent tail to the front and shortening the vector.
        unsafe {
            let base = bufs.as_mut_ptr();
            if let Some(guard) = &self.guard {
                guard.enter();
            }
            let sent = usize::from(sys::dps_tx_burst(
                self.port,
                txq,
                base.cast::<*mut sys::rte_mbuf>(),
                offered as u16,
            ));
            if let Some(guard) = &self.guard {
                guard.leave();
            }
            if sent < len {
                std::ptr::copy(base.add(sent), base, len - sent);
            }
            bufs.set_len(len - sent);
            sent
        }
    }

    #[inline]
    fn alloc(&mut self) -> Option<Mbuf> {
        self.pool.alloc()
    }

    #[inline]
    fn alloc_burst<const N: usize>(&mut self, bufs: &mut ArrayVec<Mbuf, N>, count: usize) -> bool {
        self.pool.alloc_bulk(bufs, count)
    }

    fn mac(&self) -> MacAddr {
        self.mac
    }

    fn alloc_large(&mut self) -> Option<Mbuf> {
        self.large_pool.and_then(|pool| pool.alloc())
    }
}
