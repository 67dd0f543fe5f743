//! Spreading received flows over a port's queues: RSS configuration (hash
//! types, key, redirection table), read back and set at run time, what a
//! device without RSS does with flows instead, the placement TCP connects
//! use where spreading is a known Toeplitz, per-queue counters and queue
//! facts.
//!
//! Control path only. The stack's software Toeplitz
//! (`dpstack::stack::rss`) predicts what a device configured here does.

use super::info::{check, PortInfo, RssHashConf};
use super::EthPort;
use crate::error::{DpdkError, Result};
use crate::stack::rss::{RedirectionTable, RssPlacement, KEY_LEN};
use crate::sys;

/// How a port spreads received flows, asked for in
/// [`PortConfig::rss`](super::PortConfig::rss).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RssConfig {
    /// `RTE_ETH_RSS_*` flow types to hash (the device may support only some:
    /// those it lacks are left out, and none at all is an error).
    pub hash_types: u64,
    /// The Toeplitz key; `None` keeps the device's default.
    pub key: Option<Vec<u8>>,
}

impl RssConfig {
    /// Addresses only, testpmd's `--rss-ip` (its default).
    pub fn ip() -> RssConfig {
        RssConfig {
            hash_types: sys::RTE_ETH_RSS_IP,
            key: None,
        }
    }

    /// Addresses, and ports for UDP: testpmd's `--rss-udp`.
    pub fn ip_udp() -> RssConfig {
        RssConfig {
            hash_types: sys::RTE_ETH_RSS_IP | sys::RTE_ETH_RSS_UDP,
            key: None,
        }
    }

    /// Addresses and TCP and UDP ports.
    pub fn ip_tcp_udp() -> RssConfig {
        RssConfig {
            hash_types: sys::RTE_ETH_RSS_IP | sys::RTE_ETH_RSS_TCP | sys::RTE_ETH_RSS_UDP,
            key: None,
        }
    }

    /// This configuration with `key` (e.g. `stack::rss::SYMMETRIC_KEY`, so
    /// both directions of a flow land on one queue).
    pub fn with_key(mut self, key: &[u8]) -> RssConfig {
        self.key = Some(key.to_vec());
        self
    }
}

/// What a port does with flows when it has several receive queues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueSpreading {
    /// The device hashes flows with Toeplitz under a key into a
    /// redirection table that dpstack reads and sets: where a flow lands
    /// can be predicted (`dpstack::stack::rss`).
    Rss {
        /// `RTE_ETH_RSS_*` flow types it can hash.
        hash_types: u64,
        /// Entries of its redirection table.
        reta_size: u16,
    },
    /// `net_tap`: the kernel picks the queue of a multi-queue tap by its own
    /// flow hash; one flow stays on one queue, but which is not predictable.
    KernelFlowHash,
    /// `net_memif`: the peer picks the queue (its tx queue i is our rx
    /// queue i).
    PeerChooses,
    /// `net_pcap`: each `rx_pcap` file is one queue.
    OneQueuePerFile,
    /// `net_ring`: each queue is a ring of its own, and whoever writes to it
    /// chooses.
    SenderChooses,
    /// A device without RSS that dpstack knows nothing more about.
    Unknown,
}

impl QueueSpreading {
    /// What the device described by `info` does.
    pub fn of(info: &PortInfo) -> QueueSpreading {
        if info.flow_type_rss_offloads != 0 && info.reta_size > 0 {
            return QueueSpreading::Rss {
                hash_types: info.flow_type_rss_offloads,
                reta_size: info.reta_size,
            };
        }
        match info.driver.as_str() {
            "net_tap" => QueueSpreading::KernelFlowHash,
            "net_memif" => QueueSpreading::PeerChooses,
            "net_pcap" => QueueSpreading::OneQueuePerFile,
            "net_ring" => QueueSpreading::SenderChooses,
            _ => QueueSpreading::Unknown,
        }
    }

    /// True if where a flow lands follows from a Toeplitz hash dpstack can
    /// compute (only [`QueueSpreading::Rss`]).
    pub fn is_predictable(&self) -> bool {
        matches!(self, QueueSpreading::Rss { .. })
    }
}

impl std::fmt::Display for QueueSpreading {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QueueSpreading::Rss { reta_size, .. } => {
                write!(f, "RSS (Toeplitz, a {reta_size}-entry redirection table)")
            }
            QueueSpreading::KernelFlowHash => {
                write!(
                    f,
                    "the kernel spreads flows over the tap's queues by its own hash"
                )
            }
            QueueSpreading::PeerChooses => write!(f, "the memif peer picks the queue"),
            QueueSpreading::OneQueuePerFile => write!(f, "each rx_pcap file is one queue"),
            QueueSpreading::SenderChooses => write!(f, "whoever writes to a ring picks it"),
            QueueSpreading::Unknown => write!(f, "the driver has no RSS"),
        }
    }
}

/// The `RTE_ETH_RSS_*` bits of `asked` that the device can hash, or the
/// typed error that says why RSS cannot be had.
pub(super) fn plan_rss(id: u16, info: &PortInfo, rss: &RssConfig) -> Result<u64> {
    let spreading = QueueSpreading::of(info);
    if !spreading.is_predictable() {
        return Err(DpdkError::RssUnsupported {
            port: id,
            driver: info.driver.clone(),
            spreading,
            max_rx_queues: info.max_rx_queues,
        });
    }
    let hash_types = rss.hash_types & info.flow_type_rss_offloads;
    if hash_types == 0 {
        return Err(DpdkError::RssHashUnsupported {
            port: id,
            driver: info.driver.clone(),
            asked: rss.hash_types,
            supported: info.flow_type_rss_offloads,
        });
    }
    if let Some(key) = &rss.key {
        check_key(id, info, key)?;
    }
    Ok(hash_types)
}

fn check_key(id: u16, info: &PortInfo, key: &[u8]) -> Result<()> {
    // A device that reports no key size takes the standard 40 bytes.
    let size = match info.hash_key_size {
        0 => 40,
        n => usize::from(n),
    };
    if key.len() != size {
        return Err(DpdkError::InvalidArgument(format!(
            "port {id} ({}): an RSS key has {size} bytes, this one {}",
            info.driver,
            key.len()
        )));
    }
    Ok(())
}

/// Sets the hash types and key of port `id` (configured or running).
pub(super) fn update_hash(id: u16, info: &PortInfo, rss: &RssConfig) -> Result<()> {
    let hash_types = plan_rss(id, info, rss)?;
    let mut key = rss.key.clone().unwrap_or_default();
    let mut conf = sys::rte_eth_rss_conf {
        rss_key: if key.is_empty() {
            std::ptr::null_mut()
        } else {
            key.as_mut_ptr()
        },
        rss_key_len: key.len() as u8,
        rss_hf: hash_types,
    };
    // SAFETY: `conf` and the key it points to live for the call; DPDK
    // copies them.
    let ret = unsafe { sys::rte_eth_dev_rss_hash_update(id, &mut conf) };
    check(id, "set the RSS hash configuration", ret)
}

/// Points the redirection table's entries at the `queues` rx queues round
/// robin (entry i at queue i % queues), so where a hash lands is known
/// whatever the driver left there. A driver that cannot set it keeps its
/// own.
pub(super) fn spread_evenly(id: u16, info: &PortInfo, queues: u16) -> Result<()> {
    let size = info.reta_size;
    let mut groups = reta_groups(size);
    for entry in 0..size {
        let g = &mut groups[usize::from(entry) / 64];
        g.mask |= 1 << (entry % 64);
        g.reta[usize::from(entry % 64)] = entry % queues.max(1);
    }
    // SAFETY: `groups` holds `size` entries, the size the device gave.
    let ret = unsafe { sys::rte_eth_dev_rss_reta_update(id, groups.as_mut_ptr(), size) };
    if ret == -libc::ENOTSUP {
        return Ok(());
    }
    check(id, "set the RSS redirection table", ret)
}

/// Drivers that report RSS (a key and a redirection table) but deliver no
/// traffic that was hashed with them: `net_null` makes up its packets.
const RSS_IN_NAME_ONLY: &[&str] = &["net_null"];

/// Hash-type bits that change what a Toeplitz hash reads (one side's
/// address or port only, address prefixes): the stack predicts only the
/// full input.
const PARTIAL_INPUT: u64 = sys::RTE_ETH_RSS_L3_SRC_ONLY
    | sys::RTE_ETH_RSS_L3_DST_ONLY
    | sys::RTE_ETH_RSS_L4_SRC_ONLY
    | sys::RTE_ETH_RSS_L4_DST_ONLY
    | sys::RTE_ETH_RSS_L3_PRE32
    | sys::RTE_ETH_RSS_L3_PRE40
    | sys::RTE_ETH_RSS_L3_PRE48
    | sys::RTE_ETH_RSS_L3_PRE56
    | sys::RTE_ETH_RSS_L3_PRE64
    | sys::RTE_ETH_RSS_L3_PRE96;

/// The placement of TCP connects for the lcore polling rx queue `queue`,
/// from a device's hash configuration `conf` and redirection table `reta`
/// over `rx_queues` queues: `None` unless the device hashes TCP of both
/// families over full addresses and ports (outer headers) with a key of at
/// least [`KEY_LEN`] bytes that is not all zeros (a driver that does not
/// report its key leaves it so), into a table naming only its queues.
pub fn tcp_placement(
    conf: &RssHashConf,
    reta: Vec<u16>,
    rx_queues: u16,
    queue: u16,
) -> Option<RssPlacement> {
    let tcp = sys::RTE_ETH_RSS_NONFRAG_IPV4_TCP | sys::RTE_ETH_RSS_NONFRAG_IPV6_TCP;
    let level = conf.rss_hf & sys::RTE_ETH_RSS_LEVEL_MASK;
    let usable = conf.rss_hf & tcp == tcp
        && conf.rss_hf & PARTIAL_INPUT == 0
        && level != sys::RTE_ETH_RSS_LEVEL_INNERMOST
        && conf.key.len() >= KEY_LEN
        && conf.key.iter().any(|&b| b != 0)
        && queue < rx_queues;
    if !usable {
        return None;
    }
    let reta = RedirectionTable::new(reta, rx_queues).ok()?;
    Some(RssPlacement::new(&conf.key, reta, queue))
}

/// Counters of one queue (`rte_eth_stats`' per-queue arrays; DPDK keeps
/// them for the first 16 queues).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Packets received on this rx queue.
    pub rx_packets: u64,
    /// Bytes received on this rx queue.
    pub rx_bytes: u64,
    /// Receive errors (dropped packets) of this rx queue.
    pub rx_errors: u64,
    /// Packets sent on this tx queue.
    pub tx_packets: u64,
    /// Bytes sent on this tx queue.
    pub tx_bytes: u64,
}

/// Facts about one rx or tx queue (`rte_eth_rx/tx_queue_info_get`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueInfo {
    /// Descriptors in its ring.
    pub descriptors: u16,
    /// Free threshold (rx: descriptors returned at once; tx: when to free).
    pub free_threshold: u16,
    /// Prefetch, host and write-back thresholds.
    pub thresholds: (u8, u8, u8),
    /// Drops packets when no descriptor is free (rx) .
    pub drop_when_full: bool,
    /// Not started with the port.
    pub deferred_start: bool,
    /// Scattered receive is on (rx).
    pub scattered: bool,
    /// Started (DPDK's queue state).
    pub started: bool,
    /// Offloads on this queue (`RTE_ETH_RX/TX_OFFLOAD_*`).
    pub offloads: u64,
    /// RS bit threshold (tx).
    pub rs_threshold: u16,
}

impl EthPort {
    /// What this port does with flows over its queues.
    pub fn spreading(&self) -> Result<QueueSpreading> {
        Ok(QueueSpreading::of(&self.info()?))
    }

    /// Where TCP connects made by the lcore polling rx queue `queue` should
    /// take their local ports (`TcpConfig::rss`): `Some` only when the
    /// device spreads TCP with a Toeplitz hash whose key and table it
    /// reports (see [`tcp_placement`]). `None` where spreading is not
    /// predictable (a multi-queue `net_tap`, `net_memif`, `net_null`, a
    /// driver without RSS or that hides its key): steering between lcores
    /// carries those connections.
    pub fn rss_placement(&self, queue: u16) -> Result<Option<RssPlacement>> {
        let info = self.info()?;
        if queue >= info.rx_queues {
            return Err(DpdkError::InvalidArgument(format!(
                "port {}: rx queue {queue}: the port has {} rx queues",
                self.id(),
                info.rx_queues
            )));
        }
        let predictable = QueueSpreading::of(&info).is_predictable()
            && !RSS_IN_NAME_ONLY.contains(&info.driver.as_str());
        if !predictable {
            return Ok(None);
        }
        let conf = self.rss_hash_conf()?;
        Ok(tcp_placement(
            &conf,
            self.rss_reta()?,
            info.rx_queues,
            queue,
        ))
    }

    /// The redirection table: the rx queue of each entry.
    pub fn rss_reta(&self) -> Result<Vec<u16>> {
        let size = self.reta_size()?;
        let mut groups = reta_groups(size);
        for g in &mut groups {
            g.mask = u64::MAX;
        }
        // SAFETY: `groups` holds `size` entries (size / 64 groups of 64), the
        // size the device gave; DPDK writes the queried entries.
        let ret = unsafe { sys::rte_eth_dev_rss_reta_query(self.id(), groups.as_mut_ptr(), size) };
        check(self.id(), "read the RSS redirection table", ret)?;
        Ok(groups
            .iter()
            .flat_map(|g| g.reta.iter().copied())
            .take(usize::from(size))
            .collect())
    }

    /// Sets entries of the redirection table: `(entry, queue)` pairs. Each
    /// entry must exist and each queue be one of the port's rx queues.
    pub fn set_rss_reta(&self, entries: &[(u16, u16)]) -> Result<()> {
        let size = self.reta_size()?;
        let queues = self.info()?.rx_queues;
        let mut groups = reta_groups(size);
        for &(entry, queue) in entries {
            if entry >= size || queue >= queues {
                return Err(DpdkError::InvalidArgument(format!(
                    "port {}: redirection table entry {entry} -> queue {queue}: the table has \
                     {size} entries (0..={}) and the port {queues} rx queues",
                    self.id(),
                    size - 1
                )));
            }
            let g = &mut groups[usize::from(entry) / 64];
            g.mask |= 1 << (entry % 64);
            g.reta[usize::from(entry % 64)] = queue;
        }
        // SAFETY: as for the query; only masked entries are read by DPDK.
        let ret = unsafe { sys::rte_eth_dev_rss_reta_update(self.id(), groups.as_mut_ptr(), size) };
        check(self.id(), "set the RSS redirection table", ret)
    }

    /// Changes the hash types (and the key, if given) while the port runs.
    pub fn set_rss_hash(&self, rss: &RssConfig) -> Result<()> {
        update_hash(self.id(), &self.info()?, rss)
    }

    /// Stops hashing flows (`port config all rss none`): every packet goes
    /// to the queue of the redirection table's first entry.
    pub fn disable_rss(&self) -> Result<()> {
        let mut conf = sys::rte_eth_rss_conf::default();
        // SAFETY: `conf` (no key, no hash types) lives for the call.
        let ret = unsafe { sys::rte_eth_dev_rss_hash_update(self.id(), &mut conf) };
        check(self.id(), "switch RSS off", ret)
    }

    /// Counters of each configured queue (at most the first 16).
    pub fn queue_stats(&self) -> Result<Vec<QueueStats>> {
        let info = self.info()?;
        let mut s = sys::rte_eth_stats::default();
        // SAFETY: s is valid for writes for the call.
        let ret = unsafe { sys::rte_eth_stats_get(self.id(), &mut s) };
        check(self.id(), "read stats", ret)?;
        let n = usize::from(info.rx_queues.max(info.tx_queues)).min(s.q_ipackets.len());
        Ok((0..n)
            .map(|q| QueueStats {
                rx_packets: s.q_ipackets[q],
                rx_bytes: s.q_ibytes[q],
                rx_errors: s.q_errors[q],
                tx_packets: s.q_opackets[q],
                tx_bytes: s.q_obytes[q],
            })
            .collect())
    }

    /// Facts about rx queue `queue`.
    pub fn rx_queue_info(&self, queue: u16) -> Result<QueueInfo> {
        let mut q = sys::rte_eth_rxq_info::default();
        // SAFETY: q is valid for writes for the call; DPDK checks the ids.
        let ret = unsafe { sys::rte_eth_rx_queue_info_get(self.id(), queue, &mut q) };
        check(self.id(), &format!("read rx queue {queue}'s facts"), ret)?;
        let t = q.conf.rx_thresh;
        Ok(QueueInfo {
            descriptors: q.nb_desc,
            free_threshold: q.conf.rx_free_thresh,
            thresholds: (t.pthresh, t.hthresh, t.wthresh),
            drop_when_full: q.conf.rx_drop_en != 0,
            deferred_start: q.conf.rx_deferred_start != 0,
            scattered: q.scattered_rx != 0,
            started: u32::from(q.queue_state) == sys::RTE_ETH_QUEUE_STATE_STARTED,
            offloads: q.conf.offloads,
            rs_threshold: 0,
        })
    }

    /// Facts about tx queue `queue`.
    pub fn tx_queue_info(&self, queue: u16) -> Result<QueueInfo> {
        let mut q = sys::rte_eth_txq_info::default();
        // SAFETY: q is valid for writes for the call; DPDK checks the ids.
        let ret = unsafe { sys::rte_eth_tx_queue_info_get(self.id(), queue, &mut q) };
        check(self.id(), &format!("read tx queue {queue}'s facts"), ret)?;
        let t = q.conf.tx_thresh;
        Ok(QueueInfo {
            descriptors: q.nb_desc,
            free_threshold: q.conf.tx_free_thresh,
            thresholds: (t.pthresh, t.hthresh, t.wthresh),
            drop_when_full: false,
            deferred_start: q.conf.tx_deferred_start != 0,
            scattered: false,
            started: u32::from(q.queue_state) == sys::RTE_ETH_QUEUE_STATE_STARTED,
            offloads: q.conf.offloads,
            rs_threshold: q.conf.tx_rs_thresh,
        })
    }

    fn reta_size(&self) -> Result<u16> {
        let info = self.info()?;
        if info.reta_size == 0 {
            return Err(DpdkError::RssUnsupported {
                port: self.id(),
                driver: info.driver.clone(),
                spreading: QueueSpreading::of(&info),
                max_rx_queues: info.max_rx_queues,
            });
        }
        Ok(info.reta_size)
    }
}

/// Zeroed redirection-table groups for a table of `size` entries.
fn reta_groups(size: u16) -> Vec<sys::rte_eth_rss_reta_entry64> {
    let group = sys::RTE_ETH_RETA_GROUP_SIZE as usize;
    (0..usize::from(size).div_ceil(group))
        .map(|_| sys::rte_eth_rss_reta_entry64::default())
        .collect()
}

/// DPDK's own software Toeplitz (`rte_softrss`) over `input`, a tuple of
/// host-order 32-bit words (addresses, then the ports as one word:
/// source port in the high half), as `rte_thash_tuple` lays them out.
pub fn softrss(input: &[u32], key: &[u8; 40]) -> u32 {
    // SAFETY: rte_softrss reads `input.len()` words and the 40-byte key;
    // both live for the call.
    unsafe { sys::dps_softrss(input.as_ptr(), input.len() as u32, key.as_ptr()) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stack::rss::MICROSOFT_KEY;
    use std::net::SocketAddr;

    fn conf(rss_hf: u64, key: &[u8]) -> RssHashConf {
        RssHashConf {
            rss_hf,
            key: key.to_vec(),
        }
    }

    fn round_robin(queues: u16) -> Vec<u16> {
        (0..128).map(|i| i % queues).collect()
    }

    const TCP: u64 = sys::RTE_ETH_RSS_IP | sys::RTE_ETH_RSS_TCP;

    #[test]
    fn a_device_hashing_tcp_ports_gives_a_placement_that_predicts_it() {
        // A 52-byte key (i40e's size): its first 40 bytes are what is read.
        let mut key = MICROSOFT_KEY.to_vec();
        key.extend([0xff; 12]);
        let placement = tcp_placement(&conf(TCP, &key), round_robin(4), 4, 3).expect("predictable");
        assert_eq!(placement.queue(), 3);
        // Microsoft's IPv4 TCP vectors: the hash of the replies' direction
        // (peer to us) picks entry `hash % 128`, whose queue is entry % 4.
        for (peer, local, hash) in [
            ("66.9.149.187:2794", "161.142.100.80:1766", 0x51cc_c178u32),
            ("199.92.111.2:14230", "65.69.140.83:4739", 0xc626_b0ea),
            ("38.27.205.30:48228", "209.142.163.6:2217", 0xafc7_327f),
        ] {
            let peer: SocketAddr = peer.parse().expect("addr");
            let local: SocketAddr = local.parse().expect("addr");
            let queue = (hash % 128 % 4) as u16;
            assert_eq!(placement.return_queue(local, peer), queue, "{peer}");
        }
    }

    #[test]
    fn anything_the_stack_cannot_predict_gives_no_placement() {
        let reta = round_robin(2);
        let only_v4 = sys::RTE_ETH_RSS_IP | sys::RTE_ETH_RSS_NONFRAG_IPV4_TCP;
        let cases = [
            (
                "addresses only",
                conf(sys::RTE_ETH_RSS_IP, &MICROSOFT_KEY),
                2,
                0,
            ),
            ("IPv4 TCP only", conf(only_v4, &MICROSOFT_KEY), 2, 0),
            (
                "source port only",
                conf(TCP | sys::RTE_ETH_RSS_L4_SRC_ONLY, &MICROSOFT_KEY),
                2,
                0,
            ),
            (
                "inner headers",
                conf(TCP | sys::RTE_ETH_RSS_LEVEL_INNERMOST, &MICROSOFT_KEY),
                2,
                0,
            ),
            ("no key reported", conf(TCP, &[]), 2, 0),
            ("a zeroed key", conf(TCP, &[0; 40]), 2, 0),
            ("a short key", conf(TCP, &MICROSOFT_KEY[..20]), 2, 0),
            (
                "a table naming a missing queue",
                conf(TCP, &MICROSOFT_KEY),
                1,
                0,
            ),
            ("a queue the port lacks", conf(TCP, &MICROSOFT_KEY), 2, 2),
        ];
        for (what, conf, rx_queues, queue) in cases {
            assert_eq!(
                tcp_placement(&conf, reta.clone(), rx_queues, queue),
                None,
                "{what}"
            );
        }
        assert!(tcp_placement(&conf(TCP, &MICROSOFT_KEY), reta, 2, 1).is_some());
    }
}
