//! `show port info N` in testpmd 22.11's format (`port_infos_display()` in
//! `app/test-pmd/config.c`): every line testpmd prints, in its order, from
//! the device information, link, settings and MTU the driver layer reads.
//! Lines testpmd prints only under a condition (devargs, hash key size,
//! redirection table, VFs, VMDq pools, switch) follow the same condition.

use super::rss;
use dpstack::ethdev::{ErrorHandling, LinkStatus, PortInfo, PortSettings};
use dpstack::stack::port::MacAddr;
use std::fmt::Write;

/// What `show port info` shows of one port.
pub struct PortFacts<'a> {
    /// The port id.
    pub port: u16,
    /// Its MAC.
    pub mac: MacAddr,
    /// Identity and capabilities.
    pub info: &'a PortInfo,
    /// Firmware, devargs, all-multicast, VLAN offloads.
    pub settings: &'a PortSettings,
    /// The link.
    pub link: &'a LinkStatus,
    /// Promiscuous mode is on.
    pub promiscuous: bool,
}

const BORDER: &str = "*********************";

/// The `show port info` block of one port. `capability_name` names one
/// `RTE_ETH_DEV_CAPA_*` bit (DPDK's `rte_eth_dev_capability_name`).
pub fn port_info(facts: &PortFacts<'_>, capability_name: impl Fn(u64) -> String) -> String {
    let (info, settings, link) = (facts.info, facts.settings, facts.link);
    let on_off = |on: bool| if on { "enabled" } else { "disabled" };
    let socket = info.socket.map_or(0, |s| s.max(0));
    let mut out = String::new();
    let _ = writeln!(out, "\n{BORDER} Infos for port {:<2} {BORDER}", facts.port);
    let _ = writeln!(out, "MAC address: {}", facts.mac);
    let _ = writeln!(out, "Device name: {}", info.name);
    let _ = writeln!(out, "Driver name: {}", info.driver);
    let firmware = settings.firmware.as_deref().unwrap_or("not available");
    let _ = writeln!(out, "Firmware-version: {firmware}");
    if let Some(devargs) = &settings.devargs {
        let _ = writeln!(out, "Devargs: {devargs}");
    }
    let _ = writeln!(out, "Connect to socket: {socket}");
    // One mbuf pool, on the port's socket (testpmd without --port-numa-config).
    let _ = writeln!(out, "memory allocation on the socket: {socket}");
    let _ = writeln!(out, "Link status: {}", if link.up { "up" } else { "down" });
    let _ = writeln!(out, "Link speed: {}", link.speed_text());
    let duplex = if link.full_duplex {
        "full-duplex"
    } else {
        "half-duplex"
    };
    let _ = writeln!(out, "Link duplex: {duplex}");
    let autoneg = if link.autoneg { "On" } else { "Off" };
    let _ = writeln!(out, "Autoneg status: {autoneg}");
    let _ = writeln!(out, "MTU: {}", info.mtu);
    let _ = writeln!(out, "Promiscuous mode: {}", on_off(facts.promiscuous));
    let _ = writeln!(out, "Allmulticast mode: {}", on_off(settings.allmulticast));
    let _ = writeln!(
        out,
        "Maximum number of MAC addresses: {}",
        info.max_mac_addrs
    );
    let _ = writeln!(
        out,
        "Maximum number of MAC addresses of hash filtering: {}",
        info.max_hash_mac_addrs
    );
    if let Some(vlan) = settings.vlan_offload {
        let on = |b: bool| if b { "on" } else { "off" };
        let _ = writeln!(
            out,
            "VLAN offload: \n  strip {}, filter {}, extend {}, qinq strip {}",
            on(vlan.strip),
            on(vlan.filter),
            on(vlan.extend),
            on(vlan.qinq_strip)
        );
    }
    if info.hash_key_size > 0 {
        let _ = writeln!(out, "Hash key size in bytes: {}", info.hash_key_size);
    }
    if info.reta_size > 0 {
        let _ = writeln!(out, "Redirection table size: {}", info.reta_size);
    }
    if info.flow_type_rss_offloads == 0 {
        out.push_str("No RSS offload flow type is supported.\n");
    } else {
        out.push_str("Supported RSS offload flow types:\n");
        out.push_str(&rss::flow_types(info.flow_type_rss_offloads));
    }
    let _ = writeln!(out, "Minimum size of RX buffer: {}", info.min_rx_bufsize);
    let _ = writeln!(
        out,
        "Maximum configurable length of RX packet: {}",
        info.max_rx_pktlen
    );
    let _ = writeln!(
        out,
        "Maximum configurable size of LRO aggregated packet: {}",
        info.max_lro_pkt_size
    );
    if info.max_vfs > 0 {
        let _ = writeln!(out, "Maximum number of VFs: {}", info.max_vfs);
    }
    if info.max_vmdq_pools > 0 {
        let _ = writeln!(out, "Maximum number of VMDq pools: {}", info.max_vmdq_pools);
    }
    let (rx, tx) = (info.rx_desc_lim, info.tx_desc_lim);
    let _ = writeln!(out, "Current number of RX queues: {}", info.rx_queues);
    let _ = writeln!(out, "Max possible RX queues: {}", info.max_rx_queues);
    let _ = writeln!(out, "Max possible number of RXDs per queue: {}", rx.max);
    let _ = writeln!(out, "Min possible number of RXDs per queue: {}", rx.min);
    let _ = writeln!(out, "RXDs number alignment: {}", rx.align);
    let _ = writeln!(out, "Current number of TX queues: {}", info.tx_queues);
    let _ = writeln!(out, "Max possible TX queues: {}", info.max_tx_queues);
    let _ = writeln!(out, "Max possible number of TXDs per queue: {}", tx.max);
    let _ = writeln!(out, "Min possible number of TXDs per queue: {}", tx.min);
    let _ = writeln!(out, "TXDs number alignment: {}", tx.align);
    let _ = writeln!(out, "Max segment number per packet: {}", tx.seg_max);
    let _ = writeln!(out, "Max segment number per MTU/TSO: {}", tx.mtu_seg_max);
    let _ = write!(out, "Device capabilities: {:#x}(", info.dev_capa);
    for bit in (0..64).filter(|b| info.dev_capa & (1u64 << b) != 0) {
        let _ = write!(out, " {}", capability_name(1u64 << bit));
    }
    out.push_str(" )\n");
    if let Some(switch) = &info.switch {
        if let Some(name) = &switch.name {
            let _ = writeln!(out, "Switch name: {name}");
        }
        let _ = writeln!(out, "Switch domain Id: {}", switch.domain_id);
        let _ = writeln!(out, "Switch Port Id: {}", switch.port_id);
        if info.dev_capa & u64::from(dpstack::sys::RTE_ETH_DEV_CAPA_RXQ_SHARE) != 0 {
            let _ = writeln!(out, "Switch Rx domain: {}", switch.rx_domain);
        }
    }
    let mode = match info.error_handling {
        ErrorHandling::None => "none",
        ErrorHandling::Passive => "passive",
        ErrorHandling::Proactive => "proactive",
        ErrorHandling::Unknown(_) => "unknown",
    };
    let _ = writeln!(out, "Device error handling mode: {mode}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpstack::ethdev::{DescLimits, VlanOffload};
    use dpstack::sys;

    /// net_null0's facts, as dpdk-testpmd 22.11.11 showed them.
    fn null_port() -> (PortInfo, PortSettings, LinkStatus) {
        let limits = DescLimits {
            max: 65535,
            min: 0,
            align: 1,
            seg_max: 65535,
            mtu_seg_max: 65535,
        };
        let info = PortInfo {
            name: "net_null0".into(),
            driver: "net_null".into(),
            max_rx_queues: 1024,
            max_tx_queues: 1024,
            rx_offload_capa: 0,
            tx_offload_capa: 0,
            mtu: 1500,
            min_mtu: 68,
            max_mtu: 9000,
            max_rx_pktlen: u32::MAX,
            socket: Some(0),
            hash_key_size: 0,
            flow_type_rss_offloads: sys::RTE_ETH_RSS_PROTO_MASK,
            rx_queues: 1,
            tx_queues: 1,
            reta_size: 128,
            max_mac_addrs: 1,
            max_hash_mac_addrs: 0,
            min_rx_bufsize: 0,
            max_lro_pkt_size: 0,
            max_vfs: 0,
            max_vmdq_pools: 0,
            rx_desc_lim: DescLimits {
                seg_max: 0,
                mtu_seg_max: 0,
                ..limits
            },
            tx_desc_lim: limits,
            dev_capa: 0,
            switch: None,
            error_handling: ErrorHandling::None,
        };
        let settings = PortSettings {
            firmware: None,
            devargs: Some(String::new()),
            allmulticast: true,
            vlan_offload: Some(VlanOffload::default()),
        };
        let link = LinkStatus {
            up: true,
            speed_mbps: 10_000,
            full_duplex: true,
            autoneg: false,
        };
        (info, settings, link)
    }

    fn facts<'a>(
        info: &'a PortInfo,
        settings: &'a PortSettings,
        link: &'a LinkStatus,
    ) -> PortFacts<'a> {
        PortFacts {
            port: 0,
            mac: MacAddr([0x66, 0x8b, 0x65, 0xbc, 0x05, 0x0c]),
            info,
            settings,
            link,
            promiscuous: true,
        }
    }

    #[test]
    fn every_line_of_testpmds_block_in_its_order() {
        let (info, settings, link) = null_port();
        let text = port_info(&facts(&info, &settings, &link), |_| "UNUSED".into());
        // testpmd 22.11.11's block for the same port, captured; shared with
        // the end-to-end test in tests/console_script.rs.
        let expected = include_str!("../../../tests/data/port_info_net_null.txt")
            .replace("{mac}", "66:8B:65:BC:05:0C");
        assert_eq!(text, expected);
    }

    #[test]
    fn conditional_lines_follow_testpmds_conditions() {
        let (mut info, mut settings, link) = null_port();
        info.hash_key_size = 40;
        info.reta_size = 0;
        info.flow_type_rss_offloads = 0;
        info.max_vfs = 4;
        info.dev_capa = 0x5;
        info.switch = Some(dpstack::ethdev::SwitchInfo {
            name: Some("sw0".into()),
            domain_id: 2,
            port_id: 7,
            rx_domain: 3,
        });
        info.error_handling = ErrorHandling::Passive;
        settings.firmware = Some("1.2.3".into());
        settings.devargs = None;
        settings.vlan_offload = Some(VlanOffload {
            strip: true,
            qinq_strip: true,
            ..VlanOffload::default()
        });
        let text = port_info(&facts(&info, &settings, &link), |bit| format!("CAPA{bit}"));
        for line in [
            "Firmware-version: 1.2.3\nConnect to socket: 0\n",
            "  strip on, filter off, extend off, qinq strip on\nHash key size in bytes: 40\n\
             No RSS offload flow type is supported.\n",
            "Maximum number of VFs: 4\nCurrent number of RX queues: 1\n",
            "Device capabilities: 0x5( CAPA1 CAPA4 )\nSwitch name: sw0\nSwitch domain Id: 2\n\
             Switch Port Id: 7\nSwitch Rx domain: 3\nDevice error handling mode: passive\n",
        ] {
            assert!(text.contains(line), "no {line:?} in:\n{text}");
        }
        assert!(!text.contains("Devargs"), "{text}");
        assert!(!text.contains("Redirection"), "{text}");
    }
}
