//! `show port N rss-hash [key]` in testpmd 22.11's format
//! (`port_rss_hash_conf_show()` in `app/test-pmd/config.c`): the names of
//! the hash types whose bits are all set, in testpmd's table order, each
//! followed by a blank; then, if asked, the key in upper-case hex. Also
//! the "Supported RSS offload flow types" list of `show port info`.

use dpstack::sys;
use std::fmt::Write;

/// testpmd's `rss_type_table`: a name and its `RTE_ETH_RSS_*` bits (a
/// combination prints only when all its bits are set).
const RSS_TYPES: &[(&str, u64)] = &[
    (
        "all",
        sys::RTE_ETH_RSS_ETH
            | sys::RTE_ETH_RSS_VLAN
            | sys::RTE_ETH_RSS_IP
            | sys::RTE_ETH_RSS_TCP
            | sys::RTE_ETH_RSS_UDP
            | sys::RTE_ETH_RSS_SCTP
            | sys::RTE_ETH_RSS_L2_PAYLOAD
            | sys::RTE_ETH_RSS_L2TPV3
            | sys::RTE_ETH_RSS_ESP
            | sys::RTE_ETH_RSS_AH
            | sys::RTE_ETH_RSS_PFCP
            | sys::RTE_ETH_RSS_GTPU
            | sys::RTE_ETH_RSS_ECPRI
            | sys::RTE_ETH_RSS_MPLS,
    ),
    ("eth", sys::RTE_ETH_RSS_ETH),
    ("l2-src-only", sys::RTE_ETH_RSS_L2_SRC_ONLY),
    ("l2-dst-only", sys::RTE_ETH_RSS_L2_DST_ONLY),
    ("vlan", sys::RTE_ETH_RSS_VLAN),
    ("s-vlan", sys::RTE_ETH_RSS_S_VLAN),
    ("c-vlan", sys::RTE_ETH_RSS_C_VLAN),
    ("ipv4", sys::RTE_ETH_RSS_IPV4),
    ("ipv4-frag", sys::RTE_ETH_RSS_FRAG_IPV4),
    ("ipv4-tcp", sys::RTE_ETH_RSS_NONFRAG_IPV4_TCP),
    ("ipv4-udp", sys::RTE_ETH_RSS_NONFRAG_IPV4_UDP),
    ("ipv4-sctp", sys::RTE_ETH_RSS_NONFRAG_IPV4_SCTP),
    ("ipv4-other", sys::RTE_ETH_RSS_NONFRAG_IPV4_OTHER),
    ("ipv6", sys::RTE_ETH_RSS_IPV6),
    ("ipv6-frag", sys::RTE_ETH_RSS_FRAG_IPV6),
    ("ipv6-tcp", sys::RTE_ETH_RSS_NONFRAG_IPV6_TCP),
    ("ipv6-udp", sys::RTE_ETH_RSS_NONFRAG_IPV6_UDP),
    ("ipv6-sctp", sys::RTE_ETH_RSS_NONFRAG_IPV6_SCTP),
    ("ipv6-other", sys::RTE_ETH_RSS_NONFRAG_IPV6_OTHER),
    ("l2-payload", sys::RTE_ETH_RSS_L2_PAYLOAD),
    ("ipv6-ex", sys::RTE_ETH_RSS_IPV6_EX),
    ("ipv6-tcp-ex", sys::RTE_ETH_RSS_IPV6_TCP_EX),
    ("ipv6-udp-ex", sys::RTE_ETH_RSS_IPV6_UDP_EX),
    ("port", sys::RTE_ETH_RSS_PORT),
    ("vxlan", sys::RTE_ETH_RSS_VXLAN),
    ("geneve", sys::RTE_ETH_RSS_GENEVE),
    ("nvgre", sys::RTE_ETH_RSS_NVGRE),
    ("ip", sys::RTE_ETH_RSS_IP),
    ("udp", sys::RTE_ETH_RSS_UDP),
    ("tcp", sys::RTE_ETH_RSS_TCP),
    ("sctp", sys::RTE_ETH_RSS_SCTP),
    ("tunnel", sys::RTE_ETH_RSS_TUNNEL),
    ("l3-pre32", sys::RTE_ETH_RSS_L3_PRE32),
    ("l3-pre40", sys::RTE_ETH_RSS_L3_PRE40),
    ("l3-pre48", sys::RTE_ETH_RSS_L3_PRE48),
    ("l3-pre56", sys::RTE_ETH_RSS_L3_PRE56),
    ("l3-pre64", sys::RTE_ETH_RSS_L3_PRE64),
    ("l3-pre96", sys::RTE_ETH_RSS_L3_PRE96),
    ("l3-src-only", sys::RTE_ETH_RSS_L3_SRC_ONLY),
    ("l3-dst-only", sys::RTE_ETH_RSS_L3_DST_ONLY),
    ("l4-src-only", sys::RTE_ETH_RSS_L4_SRC_ONLY),
    ("l4-dst-only", sys::RTE_ETH_RSS_L4_DST_ONLY),
    ("esp", sys::RTE_ETH_RSS_ESP),
    ("ah", sys::RTE_ETH_RSS_AH),
    ("l2tpv3", sys::RTE_ETH_RSS_L2TPV3),
    ("pfcp", sys::RTE_ETH_RSS_PFCP),
    ("pppoe", sys::RTE_ETH_RSS_PPPOE),
    ("gtpu", sys::RTE_ETH_RSS_GTPU),
    ("ecpri", sys::RTE_ETH_RSS_ECPRI),
    ("mpls", sys::RTE_ETH_RSS_MPLS),
    ("ipv4-chksum", sys::RTE_ETH_RSS_IPV4_CHKSUM),
    ("l4-chksum", sys::RTE_ETH_RSS_L4_CHKSUM),
];

/// Largest key testpmd shows (its `RSS_HASH_KEY_LENGTH`).
pub const MAX_KEY: u8 = 64;

/// testpmd's message when the device reports no usable key size (devices
/// without RSS).
pub const NO_KEY_SIZE: &str = "dev_info did not provide a valid hash key size";

/// The hash functions of `rss_hf` (and `key`, if given), as testpmd prints
/// them.
pub fn rss_hash(rss_hf: u64, key: Option<&[u8]>) -> String {
    if rss_hf == 0 {
        return "RSS disabled\n".into();
    }
    let mut out = String::from("RSS functions:\n ");
    for (name, bits) in RSS_TYPES {
        if rss_hf & bits == *bits {
            let _ = write!(out, "{name} ");
        }
    }
    out.push('\n');
    if let Some(key) = key {
        out.push_str("RSS key:\n");
        for byte in key {
            let _ = write!(out, "{byte:02X}");
        }
        out.push('\n');
    }
    out
}

/// Width testpmd fills before it wraps the flow type list
/// (`RSS_TYPES_CHAR_NUM_PER_LINE`).
const FLOW_TYPES_PER_LINE: usize = 64;

/// testpmd's name of a single `RTE_ETH_RSS_*` bit (`rsstypes_to_str()`:
/// the first table entry that is exactly that bit).
fn single_type_name(bit: u64) -> Option<&'static str> {
    RSS_TYPES
        .iter()
        .find(|(_, bits)| *bits == bit)
        .map(|(name, _)| *name)
}

/// The flow types `show port info` lists under "Supported RSS offload flow
/// types:" (`rss_offload_types_display()`): each set bit's name (or
/// `user-defined-N`) after two blanks, wrapped before a line would reach
/// 64 characters; one newline at the end.
pub fn flow_types(offloads: u64) -> String {
    let mut out = String::new();
    let mut line = 0;
    for bit in (0..64).filter(|b| offloads & (1u64 << b) != 0) {
        let name = match single_type_name(1u64 << bit) {
            Some(name) => name.to_owned(),
            None => format!("user-defined-{bit}"),
        };
        // testpmd counts a user-defined name as if its number had
        // `bit / 10 + 1` digits.
        let width = 2 + match single_type_name(1u64 << bit) {
            Some(name) => name.len(),
            None => "user-defined-".len() + bit / 10 + 1,
        };
        if line + width >= FLOW_TYPES_PER_LINE {
            out.push('\n');
            line = 0;
        }
        let _ = write!(out, "  {name}");
        line += width;
    }
    out.push('\n');
    out
}

/// testpmd's message for a failed `rte_eth_dev_rss_hash_conf_get` on
/// `port` (`errno` positive).
pub fn rss_error(port: u16, errno: i32) -> String {
    match errno {
        libc::ENODEV => format!("port index {port} invalid\n"),
        libc::ENOTSUP => "operation not supported by device\n".into(),
        _ => format!("operation failed - diag=-{errno}\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn functions_print_in_testpmds_order_with_combinations_only_when_whole() {
        let hf = sys::RTE_ETH_RSS_IPV4 | sys::RTE_ETH_RSS_NONFRAG_IPV4_TCP;
        assert_eq!(rss_hash(hf, None), "RSS functions:\n ipv4 ipv4-tcp \n");
        let text = rss_hash(sys::RTE_ETH_RSS_IP, None);
        assert_eq!(
            text,
            "RSS functions:\n ipv4 ipv4-frag ipv4-other ipv6 ipv6-frag ipv6-other ipv6-ex ip \n"
        );
        assert!(!text.contains("all"), "'all' needs every one of its bits");
    }

    #[test]
    fn flow_types_wrap_as_testpmd_does() {
        // net_tap's set, as dpdk-testpmd 22.11.11 printed it.
        let tap = sys::RTE_ETH_RSS_IP
            | sys::RTE_ETH_RSS_NONFRAG_IPV4_TCP
            | sys::RTE_ETH_RSS_NONFRAG_IPV4_UDP
            | sys::RTE_ETH_RSS_NONFRAG_IPV6_TCP
            | sys::RTE_ETH_RSS_NONFRAG_IPV6_UDP
            | sys::RTE_ETH_RSS_IPV6_TCP_EX
            | sys::RTE_ETH_RSS_IPV6_UDP_EX;
        assert_eq!(
            flow_types(tap),
            "  ipv4  ipv4-frag  ipv4-tcp  ipv4-udp  ipv4-other  ipv6
  ipv6-frag  ipv6-tcp  ipv6-udp  ipv6-other  ipv6-ex
  ipv6-tcp-ex  ipv6-udp-ex
"
        );
        assert_eq!(
            flow_types(sys::RTE_ETH_RSS_IPV4 | 1 << 40),
            "  ipv4  user-defined-40\n"
        );
    }

    #[test]
    fn disabled_key_and_errors_are_testpmds() {
        assert_eq!(rss_hash(0, Some(&[1, 2])), "RSS disabled\n");
        assert_eq!(
            rss_hash(sys::RTE_ETH_RSS_UDP, Some(&[0x6d, 0x5a, 0x0f])),
            "RSS functions:\n ipv4-udp ipv6-udp ipv6-udp-ex udp \nRSS key:\n6D5A0F\n"
        );
        assert_eq!(
            rss_error(0, libc::ENOTSUP),
            "operation not supported by device\n"
        );
        assert_eq!(rss_error(3, libc::ENODEV), "port index 3 invalid\n");
        assert_eq!(rss_error(0, libc::EIO), "operation failed - diag=-5\n");
    }
}
