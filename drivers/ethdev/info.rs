//! Read-only facts about a port: identity and capabilities, link, counters.
//!
//! Control path only (each query is a DPDK call and may allocate).

use crate::error::{DpdkError, Result};
use crate::sys;
use std::ffi::{c_char, CStr};

/// `RTE_ETH_DEV_SWITCH_DOMAIN_ID_INVALID` (`UINT16_MAX`, which bindgen
/// cannot expand): the port is in no switch domain.
const SWITCH_DOMAIN_ID_INVALID: u16 = u16::MAX;

pub(super) fn check(port: u16, operation: &str, ret: i32) -> Result<()> {
    if ret < 0 {
        Err(DpdkError::port(port, operation, ret))
    } else {
        Ok(())
    }
}

pub(super) fn c_text(ptr: *const c_char) -> String {
    if ptr.is_null() {
        return String::new();
    }
    // SAFETY: DPDK returns NUL-terminated strings that live at least as long
    // as the port; the text is copied out at once.
    unsafe { CStr::from_ptr(ptr) }
        .to_string_lossy()
        .into_owned()
}

/// Identity and capabilities of a port.
#[derive(Debug, Clone)]
pub struct PortInfo {
    /// The device name (e.g. `net_null0`).
    pub name: String,
    /// The driver name (e.g. `net_null`).
    pub driver: String,
    /// Receive queues the device supports.
    pub max_rx_queues: u16,
    /// Transmit queues the device supports.
    pub max_tx_queues: u16,
    /// `RTE_ETH_RX_OFFLOAD_*` bits the device supports.
    pub rx_offload_capa: u64,
    /// `RTE_ETH_TX_OFFLOAD_*` bits the device supports.
    pub tx_offload_capa: u64,
    /// Current MTU.
    pub mtu: u16,
    /// Smallest MTU the device accepts.
    pub min_mtu: u16,
    /// Largest MTU the device accepts.
    pub max_mtu: u16,
    /// Largest frame the device receives (Ethernet header and CRC included).
    pub max_rx_pktlen: u32,
    /// NUMA socket of the device, if known.
    pub socket: Option<i32>,
    /// Bytes of the device's RSS hash key (0: it has no RSS key to show).
    pub hash_key_size: u8,
    /// `RTE_ETH_RSS_*` bits (flow types) the device can hash on.
    pub flow_type_rss_offloads: u64,
    /// Receive queues configured now.
    pub rx_queues: u16,
    /// Transmit queues configured now.
    pub tx_queues: u16,
    /// Entries of the RSS redirection table (0: none).
    pub reta_size: u16,
    /// MAC addresses the device can filter on.
    pub max_mac_addrs: u32,
    /// MAC addresses of its hash filter.
    pub max_hash_mac_addrs: u32,
    /// Smallest receive buffer the device accepts.
    pub min_rx_bufsize: u32,
    /// Largest packet LRO may aggregate.
    pub max_lro_pkt_size: u32,
    /// Virtual functions (0 for none).
    pub max_vfs: u16,
    /// VMDq pools (0 for none).
    pub max_vmdq_pools: u16,
    /// Receive descriptor limits per queue.
    pub rx_desc_lim: DescLimits,
    /// Transmit descriptor limits per queue.
    pub tx_desc_lim: DescLimits,
    /// `RTE_ETH_DEV_CAPA_*` bits.
    pub dev_capa: u64,
    /// The embedded switch the port belongs to, if the driver names one.
    pub switch: Option<SwitchInfo>,
    /// How the device recovers from errors.
    pub error_handling: ErrorHandling,
}

/// Descriptor ring limits of a queue (`rte_eth_desc_lim`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DescLimits {
    /// Most descriptors per queue.
    pub max: u16,
    /// Fewest descriptors per queue.
    pub min: u16,
    /// The count must be a multiple of this.
    pub align: u16,
    /// Most segments per packet (transmit).
    pub seg_max: u16,
    /// Most segments per MTU-sized or TSO packet (transmit).
    pub mtu_seg_max: u16,
}

impl DescLimits {
    fn from_sys(lim: &sys::rte_eth_desc_lim) -> DescLimits {
        DescLimits {
            max: lim.nb_max,
            min: lim.nb_min,
            align: lim.nb_align,
            seg_max: lim.nb_seg_max,
            mtu_seg_max: lim.nb_mtu_seg_max,
        }
    }
}

/// The embedded switch a port is part of (`rte_eth_switch_info`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchInfo {
    /// Its name, if the driver gives one.
    pub name: Option<String>,
    /// The switch domain.
    pub domain_id: u16,
    /// The port's id in the switch.
    pub port_id: u16,
    /// The shared receive queue domain.
    pub rx_domain: u16,
}

/// A device's error recovery (`rte_eth_err_handle_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorHandling {
    /// It has none.
    None,
    /// The application resets the port after a reset event.
    Passive,
    /// The driver recovers by itself and reports the outcome.
    Proactive,
    /// A value this build does not know.
    Unknown(u32),
}

impl ErrorHandling {
    fn from_sys(mode: sys::rte_eth_err_handle_mode) -> ErrorHandling {
        match mode {
            sys::rte_eth_err_handle_mode_RTE_ETH_ERROR_HANDLE_MODE_NONE => ErrorHandling::None,
            sys::rte_eth_err_handle_mode_RTE_ETH_ERROR_HANDLE_MODE_PASSIVE => {
                ErrorHandling::Passive
            }
            sys::rte_eth_err_handle_mode_RTE_ETH_ERROR_HANDLE_MODE_PROACTIVE => {
                ErrorHandling::Proactive
            }
            other => ErrorHandling::Unknown(other),
        }
    }
}

/// DPDK's name of one `RTE_ETH_DEV_CAPA_*` bit (`UNKNOWN` for others).
pub fn device_capability_name(capability: u64) -> String {
    // SAFETY: returns a pointer to a static string for any value.
    c_text(unsafe { sys::rte_eth_dev_capability_name(capability) })
}

impl PortInfo {
    /// The facts of port `id`, open or not (`rte_eth_dev_info_get`).
    pub fn query(id: u16) -> Result<PortInfo> {
        let mut info = sys::rte_eth_dev_info::default();
        // SAFETY: info is valid for writes for the call.
        let ret = unsafe { sys::rte_eth_dev_info_get(id, &mut info) };
        check(id, "read device info", ret)?;
        let mut name = [0 as c_char; sys::RTE_ETH_NAME_MAX_LEN as usize];
        // SAFETY: name has RTE_ETH_NAME_MAX_LEN bytes, as the call requires.
        let ret = unsafe { sys::rte_eth_dev_get_name_by_port(id, name.as_mut_ptr()) };
        check(id, "read device name", ret)?;
        let mut mtu = 0u16;
        // SAFETY: mtu is valid for writes for the call.
        let ret = unsafe { sys::rte_eth_dev_get_mtu(id, &mut mtu) };
        check(id, "read MTU", ret)?;
        // SAFETY: reads ethdev's port table.
        let socket = unsafe { sys::rte_eth_dev_socket_id(id) };
        Ok(PortInfo {
            name: c_text(name.as_ptr()),
            driver: c_text(info.driver_name),
            max_rx_queues: info.max_rx_queues,
            max_tx_queues: info.max_tx_queues,
            rx_offload_capa: info.rx_offload_capa,
            tx_offload_capa: info.tx_offload_capa,
            mtu,
            min_mtu: info.min_mtu,
            max_mtu: info.max_mtu,
            max_rx_pktlen: info.max_rx_pktlen,
            socket: (socket >= 0).then_some(socket),
            hash_key_size: info.hash_key_size,
            flow_type_rss_offloads: info.flow_type_rss_offloads,
            rx_queues: info.nb_rx_queues,
            tx_queues: info.nb_tx_queues,
            reta_size: info.reta_size,
            max_mac_addrs: info.max_mac_addrs,
            max_hash_mac_addrs: info.max_hash_mac_addrs,
            min_rx_bufsize: info.min_rx_bufsize,
            max_lro_pkt_size: info.max_lro_pkt_size,
            max_vfs: info.max_vfs,
            max_vmdq_pools: info.max_vmdq_pools,
            rx_desc_lim: DescLimits::from_sys(&info.rx_desc_lim),
            tx_desc_lim: DescLimits::from_sys(&info.tx_desc_lim),
            dev_capa: info.dev_capa,
            switch: (info.switch_info.domain_id != SWITCH_DOMAIN_ID_INVALID).then(|| SwitchInfo {
                name: (!info.switch_info.name.is_null()).then(|| c_text(info.switch_info.name)),
                domain_id: info.switch_info.domain_id,
                port_id: info.switch_info.port_id,
                rx_domain: info.switch_info.rx_domain,
            }),
            error_handling: ErrorHandling::from_sys(info.err_handle_mode),
        })
    }
}

/// A port's RSS hash configuration (`rte_eth_rss_conf`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RssHashConf {
    /// `RTE_ETH_RSS_*` bits the device hashes on (0: RSS is off).
    pub rss_hf: u64,
    /// The hash key, [`PortInfo::hash_key_size`] bytes (empty if the device
    /// has no key).
    pub key: Vec<u8>,
}

impl RssHashConf {
    pub(crate) fn query(id: u16) -> Result<RssHashConf> {
        let info = PortInfo::query(id)?;
        // A device with a redirection table but no key size (net_null)
        // still keeps the standard 40-byte key.
        let size = match info.hash_key_size {
            0 if info.reta_size > 0 && info.flow_type_rss_offloads != 0 => 40,
            n => n,
        };
        let mut key = vec![0u8; usize::from(size)];
        let mut conf = sys::rte_eth_rss_conf {
            rss_key: if key.is_empty() {
                std::ptr::null_mut()
            } else {
                key.as_mut_ptr()
            },
            rss_key_len: size,
            ..sys::rte_eth_rss_conf::default()
        };
        // SAFETY: `conf` is valid for writes for the call; its key pointer is
        // NULL (no key asked) or `key`, which holds `rss_key_len` bytes, the
        // size the device itself gave.
        let ret = unsafe { sys::rte_eth_dev_rss_hash_conf_get(id, &mut conf) };
        check(id, "read the RSS hash configuration", ret)?;
        Ok(RssHashConf {
            rss_hf: conf.rss_hf,
            key,
        })
    }
}

/// Link state of a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkStatus {
    /// True if the link is up.
    pub up: bool,
    /// Speed in Mbit/s (0 if unknown).
    pub speed_mbps: u32,
    /// True for full duplex.
    pub full_duplex: bool,
    /// True if the speed was autonegotiated.
    pub autoneg: bool,
}

impl LinkStatus {
    pub(crate) fn query(id: u16) -> Result<LinkStatus> {
        let mut link = sys::rte_eth_link::default();
        // SAFETY: link is valid for writes for the call; it does not wait.
        let ret = unsafe { sys::rte_eth_link_get_nowait(id, &mut link) };
        check(id, "read link status", ret)?;
        Ok(LinkStatus {
            up: link.link_status() != 0,
            speed_mbps: link.link_speed,
            full_duplex: link.link_duplex() != 0,
            autoneg: link.link_autoneg() != 0,
        })
    }

    /// The speed as DPDK prints it ("10 Gbps", "None").
    pub fn speed_text(&self) -> String {
        // SAFETY: returns a pointer to a static string.
        c_text(unsafe { sys::rte_eth_link_speed_to_str(self.speed_mbps) })
    }
}

/// A port's basic counters (`rte_eth_stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortStats {
    /// Packets received.
    pub rx_packets: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Packets the device dropped because the rx queue was full.
    pub rx_missed: u64,
    /// Receive errors.
    pub rx_errors: u64,
    /// Transmit errors.
    pub tx_errors: u64,
    /// Receive failures for want of a buffer.
    pub rx_nombuf: u64,
}

impl PortStats {
    pub(crate) fn query(id: u16) -> Result<PortStats> {
        let mut s = sys::rte_eth_stats::default();
        // SAFETY: s is valid for writes for the call.
        let ret = unsafe { sys::rte_eth_stats_get(id, &mut s) };
        check(id, "read stats", ret)?;
        Ok(PortStats {
            rx_packets: s.ipackets,
            tx_packets: s.opackets,
            rx_bytes: s.ibytes,
            tx_bytes: s.obytes,
            rx_missed: s.imissed,
            rx_errors: s.ierrors,
            tx_errors: s.oerrors,
            rx_nombuf: s.rx_nombuf,
        })
    }
}

/// One extended counter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Xstat {
    /// The driver's name for it (e.g. `rx_good_packets`).
    pub name: String,
    /// Its value.
    pub value: u64,
}

impl Xstat {
    pub(crate) fn query(id: u16) -> Result<Vec<Xstat>> {
        // SAFETY: a NULL array with size 0 asks only for the count.
        let count = unsafe { sys::rte_eth_xstats_get_names(id, std::ptr::null_mut(), 0) };
        check(id, "count xstats", count)?;
        let count = count as usize;
        let mut names = vec![sys::rte_eth_xstat_name::default(); count];
        let mut values = vec![sys::rte_eth_xstat::default(); count];
        // SAFETY: both arrays have `count` elements, as passed.
        let got_names =
            unsafe { sys::rte_eth_xstats_get_names(id, names.as_mut_ptr(), count as u32) };
        check(id, "read xstat names", got_names)?;
        // SAFETY: as above.
        let got_values = unsafe { sys::rte_eth_xstats_get(id, values.as_mut_ptr(), count as u32) };
        check(id, "read xstats", got_values)?;
        let valid = count.min(got_names as usize).min(got_values as usize);
        Ok(values[..valid]
            .iter()
            .filter_map(|v| {
                let name = names.get(usize::try_from(v.id).ok()?)?;
                Some(Xstat {
                    name: c_text(name.name.as_ptr()),
                    value: v.value,
                })
            })
            .collect())
    }
}
