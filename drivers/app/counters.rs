//! The counters printer every app and the console's `show counters` use:
//! the non-zero protocol counters grouped by protocol, then the drops by
//! reason, then their total. Each line is `NAME VALUE`, so a test or a
//! script reads a counter by its name. Control path only: it reads the
//! single-writer counters from another thread (relaxed loads) and allocates.

use crate::stack::counters::{Counters, DropReason, Stat};
use crate::stack::iface::CounterSnapshot;
use std::fmt::Write;

/// Every counter of `counters` at one moment.
pub fn snapshot(counters: &Counters) -> CounterSnapshot {
    CounterSnapshot {
        stats: Stat::ALL.iter().map(|&s| (s, counters.get(s))).collect(),
        drops: (DropReason::ALL.iter())
            .map(|&r| (r, counters.dropped(r)))
            .collect(),
    }
}

/// The protocols counters are grouped under, with the name prefixes of
/// their protocol counters and drop reasons.
const GROUPS: &[(&str, &[&str], &[&str])] = &[
    ("Ethernet", &["Eth"], &["eth_"]),
    ("ARP", &["Arp"], &["arp_"]),
    ("IPv4", &["Ip", "Route"], &["ipv4_"]),
    ("ICMP", &["Icmp"], &["icmp_"]),
    ("UDP", &["Udp"], &["udp_"]),
    ("TCP", &["Tcp"], &["tcp_"]),
    ("IPv6", &["Ip6"], &["ipv6_"]),
    ("ICMPv6", &["Icmp6"], &["icmp6_", "nd_"]),
    ("Transmit", &[], &["tx_"]),
];

/// The group of a name: the one with the longest matching prefix.
fn group_of(name: &str, drops: bool) -> usize {
    let mut best = (0, 0);
    for (i, (_, stats, reasons)) in GROUPS.iter().enumerate() {
        let prefixes = if drops { *reasons } else { *stats };
        for p in prefixes {
            if name.starts_with(p) && p.len() > best.1 {
                best = (i, p.len());
            }
        }
    }
    best.0
}

/// The non-zero counters per protocol, then the drops per reason (named
/// `drop_REASON`), then `Dropped: TOTAL`.
pub fn counters_text(snapshot: &CounterSnapshot) -> String {
    let mut out = String::new();
    for (g, (title, _, _)) in GROUPS.iter().enumerate() {
        let stats: Vec<&(Stat, u64)> = (snapshot.stats.iter())
            .filter(|(s, v)| *v > 0 && group_of(s.name(), false) == g)
            .collect();
        let drops: Vec<&(DropReason, u64)> = (snapshot.drops.iter())
            .filter(|(r, v)| *v > 0 && group_of(r.name(), true) == g)
            .collect();
        if stats.is_empty() && drops.is_empty() {
            continue;
        }
        let _ = writeln!(out, "{title}:");
        for (s, v) in stats {
            let _ = writeln!(out, "    {:<32}{v}", s.name());
        }
        for (r, v) in drops {
            let _ = writeln!(out, "    {:<32}{v}", format!("drop_{}", r.name()));
        }
    }
    let total: u64 = snapshot.drops.iter().map(|(_, v)| v).sum();
    let _ = writeln!(out, "Dropped: {total}");
    out
}

/// The apps' counters block: a `counters:` line, then [`counters_text`].
pub fn counters_block(counters: &Counters) -> String {
    format!("counters:\n{}", counters_text(&snapshot(counters)))
}

/// Prints [`counters_block`] on stdout.
pub fn print_counters(counters: &Counters) {
    print!("{}", counters_block(counters));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_group_by_protocol_and_drops_by_reason() {
        let snapshot = CounterSnapshot {
            stats: vec![
                (Stat::EthInFrames, 7),
                (Stat::Icmp6InEchos, 1),
                (Stat::IcmpInEchos, 2),
                (Stat::UdpOutDatagrams, 0),
            ],
            drops: vec![(DropReason::UdpNoSocket, 3), (DropReason::NdInvalid, 1)],
        };
        assert_eq!(
            counters_text(&snapshot),
            "Ethernet:
    EthInFrames                     7
ICMP:
    IcmpInEchos                     2
UDP:
    drop_udp_no_socket              3
ICMPv6:
    Icmp6InEchos                    1
    drop_nd_invalid                 1
Dropped: 4
"
        );
    }

    #[test]
    fn every_counter_has_a_protocol_group() {
        // A name no prefix matches would fall into the first group
        // (Ethernet) unnoticed.
        for reason in DropReason::ALL {
            let name = reason.name();
            let listed = GROUPS
                .iter()
                .any(|(_, _, p)| p.iter().any(|p| name.starts_with(p)));
            assert!(listed, "drop reason {name} has no group");
        }
        for stat in Stat::ALL {
            let name = stat.name();
            let listed = GROUPS
                .iter()
                .any(|(_, p, _)| p.iter().any(|p| name.starts_with(p)));
            assert!(listed, "counter {name} has no group");
        }
    }

    #[test]
    fn the_block_reads_back_by_name_from_live_counters() {
        let counters = Counters::default();
        counters.count(Stat::UdpInDatagrams);
        counters.count(Stat::UdpInDatagrams);
        counters.count_drop(DropReason::UdpNoSocket);
        let block = counters_block(&counters);
        assert!(block.starts_with("counters:\n"), "{block}");
        let value = |name: &str| {
            block
                .lines()
                .filter_map(|l| l.trim().strip_prefix(name))
                .find_map(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
        };
        assert_eq!(value("UdpInDatagrams"), Some(2));
        assert_eq!(value("drop_udp_no_socket"), Some(1));
        assert_eq!(value("Dropped:"), Some(1));
    }
}
