//! The counters printer every app and the console's `show counters` use:
//! the non-zero protocol counters grouped by protocol, then the drops by
//! reason, then their total. Each line is `NAME VALUE`, so a test or a
//! script reads a counter by its name. With several lanes (pipelines on
//! their lcores) the block is their sum ([`sum_snapshots`]), followed by a
//! line per lane of the main counters ([`lanes_text`]). Control path only:
//! it reads the single-writer counters from another thread (relaxed loads)
//! and allocates.

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
    ("IGMP", &["Igmp"], &["igmp_"]),
    ("UDP", &["Udp"], &["udp_"]),
    ("TCP", &["Tcp"], &["tcp_"]),
    ("IPv6", &["Ip6"], &["ipv6_"]),
    ("ICMPv6", &["Icmp6"], &["icmp6_", "nd_", "mld_"]),
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

/// The counters of every lane added up (the snapshots hold every counter
/// in declaration order, as [`snapshot`] takes them).
pub fn sum_snapshots(lanes: &[CounterSnapshot]) -> CounterSnapshot {
    let mut total = CounterSnapshot {
        stats: Stat::ALL.iter().map(|&s| (s, 0)).collect(),
        drops: DropReason::ALL.iter().map(|&r| (r, 0)).collect(),
    };
    for lane in lanes {
        for (sum, (stat, v)) in total.stats.iter_mut().zip(&lane.stats) {
            debug_assert_eq!(sum.0, *stat);
            sum.1 += v;
        }
        for (sum, (reason, v)) in total.drops.iter_mut().zip(&lane.drops) {
            debug_assert_eq!(sum.0, *reason);
            sum.1 += v;
        }
    }
    total
}

/// The counters each lane's line shows, zero or not: frames in and out,
/// echo requests, UDP datagrams in and out, TCP opens.
const LANE_STATS: &[Stat] = &[
    Stat::EthInFrames,
    Stat::EthOutFrames,
    Stat::IcmpInEchos,
    Stat::Icmp6InEchos,
    Stat::UdpInDatagrams,
    Stat::UdpOutDatagrams,
    Stat::TcpPassiveOpens,
    Stat::TcpActiveOpens,
];

/// Counters each lane's line also shows when not zero: those whose name
/// begins with one of these (TCP's hand-offs between lanes).
const LANE_STAT_PREFIXES: &[&str] = &["TcpSteer"];

/// A line per lane, `lane N: NAME VALUE NAME VALUE ... Dropped TOTAL`:
/// frames in and out, echo requests of both families, UDP datagrams in and
/// out and TCP opens (zero or not), then the lane's TCP hand-offs to other
/// lanes (counters named `TcpSteer...`) when not zero, then its drops.
pub fn lanes_text(lanes: &[CounterSnapshot]) -> String {
    let mut out = String::new();
    for (n, lane) in lanes.iter().enumerate() {
        let _ = write!(out, "lane {n}:");
        let value = |stat: Stat| (lane.stats.iter()).find_map(|&(s, v)| (s == stat).then_some(v));
        for &stat in LANE_STATS {
            let _ = write!(out, " {} {}", stat.name(), value(stat).unwrap_or(0));
        }
        for &(stat, v) in &lane.stats {
            let named = LANE_STAT_PREFIXES
                .iter()
                .any(|p| stat.name().starts_with(p));
            if named && v > 0 && !LANE_STATS.contains(&stat) {
                let _ = write!(out, " {} {v}", stat.name());
            }
        }
        let dropped: u64 = lane.drops.iter().map(|(_, v)| v).sum();
        let _ = writeln!(out, " Dropped {dropped}");
    }
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
    fn lanes_add_up_and_each_has_a_line_of_its_main_counters() {
        let (one, two) = (Counters::default(), Counters::default());
        one.add(Stat::UdpInDatagrams, 3);
        two.add(Stat::UdpInDatagrams, 4);
        two.add(Stat::TcpPassiveOpens, 2);
        two.count_drop(DropReason::UdpNoSocket);
        let lanes = [snapshot(&one), snapshot(&two)];
        let total = sum_snapshots(&lanes);
        let get = |s: Stat| total.stats.iter().find(|(t, _)| *t == s).map(|(_, v)| *v);
        assert_eq!(get(Stat::UdpInDatagrams), Some(7));
        assert_eq!(get(Stat::TcpPassiveOpens), Some(2));
        assert!(counters_text(&total).contains("Dropped: 1"));
        let text = lanes_text(&lanes);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].starts_with("lane 0: EthInFrames 0 "), "{text}");
        assert!(lines[0].contains(" UdpInDatagrams 3 "), "{text}");
        assert!(lines[0].ends_with(" Dropped 0"), "{text}");
        assert!(lines[1].contains(" UdpInDatagrams 4 "), "{text}");
        assert!(lines[1].contains(" TcpPassiveOpens 2 "), "{text}");
        assert!(lines[1].ends_with(" Dropped 1"), "{text}");
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
