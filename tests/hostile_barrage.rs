//! The hostile-frame barrage: `dpstack-echo` on a `net_tap` whose kernel
//! side is in a namespace the test creates, and from that side, raw
//! (AF_PACKET, python3 without scapy: tests/hostile_frames.py) frames of
//! every layer and both families that are malformed or hostile. After each
//! kind the stack must still echo UDP over IPv4 and IPv6, and the counter
//! the table below names for it must have risen (read live: SIGUSR1 makes
//! the echo print its counters). Every frame stays inside the namespace's
//! link; the frames per kind are one or two, so the whole barrage takes a
//! few seconds.

mod common;

use common::{child_eal_args, unique_name, AppProcess};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::Duration;

const STACK_IP: &str = "10.207.0.1";
const KERNEL_IP: &str = "10.207.0.2";
const STACK6: &str = "2001:db8:7::1";
const KERNEL6: &str = "2001:db8:7::2";
const KERNEL_MAC: &str = "02:00:00:00:07:02";

/// Each kind of frame (tests/hostile_frames.py builds it) and the counter
/// that must rise when the stack sees it: a drop reason (`drop_...`), or,
/// where the frame is legal but odd (IP options, an ACK to a listener), the
/// counter of what the stack does with it instead.
const EXPECTED: &[(&str, &str)] = &[
    // Ethernet
    ("eth_header_only", "drop_ipv4_truncated"),
    ("eth_unknown_ethertype", "drop_eth_unknown_type"),
    ("eth_vlan_tagged", "drop_eth_unknown_type"),
    ("eth_qinq_tagged", "drop_eth_unknown_type"),
    ("eth_group_source", "drop_eth_group_source"),
    ("eth_broadcast_source", "drop_eth_group_source"),
    ("eth_other_unicast_dst", "drop_eth_not_for_us"),
    // ARP
    ("arp_truncated", "drop_arp_malformed"),
    ("arp_bad_hardware_size", "drop_arp_unsupported"),
    ("arp_bad_protocol_size", "drop_arp_unsupported"),
    ("arp_bad_hardware_type", "drop_arp_unsupported"),
    ("arp_bad_protocol_type", "drop_arp_unsupported"),
    ("arp_bad_operation", "drop_arp_unsupported"),
    ("arp_martian_broadcast_sender", "drop_arp_martian_sender"),
    ("arp_martian_loopback_sender", "drop_arp_martian_sender"),
    ("arp_martian_multicast_sender", "drop_arp_martian_sender"),
    ("arp_for_another_host", "drop_arp_not_for_us"),
    ("arp_claiming_our_address", "drop_arp_address_conflict"),
    // IPv4
    ("ipv4_bad_version", "drop_ipv4_malformed"),
    ("ipv4_bad_ihl", "drop_ipv4_malformed"),
    ("ipv4_total_length_past_frame", "drop_ipv4_truncated"),
    ("ipv4_total_length_below_header", "drop_ipv4_malformed"),
    ("ipv4_bad_checksum", "drop_ipv4_bad_checksum"),
    ("ipv4_with_options", "IcmpOutEchoReps"),
    // Answered: a host takes any TTL (RFC 1122 3.2.1.7).
    ("ipv4_ttl_zero", "IcmpOutEchoReps"),
    ("ipv4_loopback_source", "drop_ipv4_martian_source"),
    ("ipv4_broadcast_source", "drop_ipv4_martian_source"),
    ("ipv4_subnet_broadcast_source", "drop_ipv4_martian_source"),
    ("ipv4_multicast_source", "drop_ipv4_martian_source"),
    ("ipv4_our_own_source", "drop_ipv4_martian_source"),
    ("ipv4_not_for_us", "drop_ipv4_not_for_us"),
    ("ipv4_unknown_protocol", "drop_ipv4_unknown_protocol"),
    ("ipv4_fragments_overlapping", "drop_ipv4_reassembly_overlap"),
    (
        "ipv4_fragment_not_multiple_of_8",
        "drop_ipv4_fragment_malformed",
    ),
    ("ipv4_fragment_past_64k", "drop_ipv4_reassembly_too_big"),
    ("ipv4_fragment_duplicated", "drop_ipv4_reassembly_duplicate"),
    // ICMP
    ("icmp_truncated", "drop_icmp_malformed"),
    ("icmp_bad_checksum", "drop_icmp_malformed"),
    ("icmp_error_quoting_garbage", "drop_icmp_bad_quote"),
    ("icmp_unhandled_type", "drop_icmp_unhandled"),
    // IPv6
    ("ipv6_bad_version", "drop_ipv6_malformed"),
    ("ipv6_payload_length_past_frame", "drop_ipv6_truncated"),
    ("ipv6_extension_chain_too_long", "drop_ipv6_bad_extensions"),
    ("ipv6_hop_by_hop_not_first", "drop_ipv6_unknown_next_header"),
    ("ipv6_extension_past_packet", "drop_ipv6_bad_extensions"),
    ("ipv6_unknown_next_header", "drop_ipv6_unknown_next_header"),
    ("ipv6_hop_by_hop_bad_option", "drop_ipv6_bad_option"),
    ("ipv6_fragments_overlapping", "drop_ipv6_reassembly_overlap"),
    ("ipv6_loopback_source", "drop_ipv6_martian"),
    ("ipv6_multicast_source", "drop_ipv6_bad_source"),
    // Answered: a destination takes any hop limit (RFC 8200 3).
    ("ipv6_hop_limit_zero", "Icmp6OutEchoReplies"),
    ("ipv6_not_for_us", "drop_ipv6_not_for_us"),
    // ICMPv6 and Neighbor Discovery
    ("icmp6_bad_checksum", "drop_icmp6_malformed"),
    ("icmp6_truncated", "drop_icmp6_malformed"),
    ("icmp6_error_quoting_garbage", "drop_icmp6_bad_quote"),
    ("nd_solicitation_hop_limit_64", "drop_nd_invalid"),
    ("nd_option_overrunning", "drop_nd_invalid"),
    ("nd_option_zero_length", "drop_nd_invalid"),
    ("nd_solicitation_not_ours", "drop_nd_not_for_us"),
    ("nd_advertisement_not_ours", "Icmp6InNeighborAdvertisements"),
    ("nd_group_link_address", "drop_nd_group_link_address"),
    // UDP
    ("udp_length_past_packet", "drop_udp_malformed"),
    ("udp_length_below_header", "drop_udp_malformed"),
    ("udp_bad_checksum", "drop_udp_bad_checksum"),
    ("udp_source_port_zero", "drop_tx_port_zero"),
    ("udp_destination_port_zero", "drop_udp_no_socket"),
    // TCP
    ("tcp_data_offset_below_header", "drop_tcp_malformed"),
    ("tcp_data_offset_past_segment", "drop_tcp_malformed"),
    ("tcp_options_overrunning", "drop_tcp_malformed"),
    ("tcp_bad_checksum", "drop_tcp_bad_checksum"),
    ("tcp_syn_fin_to_listener", "drop_tcp_bad_flags"),
    ("tcp_syn_rst_to_listener", "drop_tcp_no_socket"),
    ("tcp_no_flags_to_listener", "drop_tcp_bad_flags"),
    ("tcp_xmas_to_listener", "drop_tcp_bad_flags"),
    ("tcp_syn_to_closed_port", "drop_tcp_no_socket"),
    ("tcp_ack_to_listener", "drop_tcp_no_socket"),
];

/// The counters in the last complete block the echo printed.
fn last_counters(output: &str) -> BTreeMap<String, u64> {
    let block = output
        .rsplit("counters:")
        .next()
        .and_then(|b| b.split("end of counters").next())
        .unwrap_or("");
    block
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            Some((words.next()?.to_owned(), words.next()?.parse().ok()?))
        })
        .collect()
}

/// Asks the echo for its counters (SIGUSR1) and waits for the block.
fn counters(app: &AppProcess) -> BTreeMap<String, u64> {
    let blocks = app.output_so_far().matches("end of counters").count();
    app.signal(libc::SIGUSR1);
    let printed = common::wait_until(Duration::from_secs(5), || {
        app.output_so_far().matches("end of counters").count() > blocks
    });
    assert!(printed, "no counters after SIGUSR1");
    let output = app.output_so_far();
    let upto = output.rfind("end of counters").expect("printed");
    last_counters(&output[..upto + "end of counters".len()])
}

#[test]
fn every_kind_of_hostile_frame_is_dropped_by_reason_and_the_stack_still_answers() {
    common::require("python3");
    let iface = unique_name("dpsh");
    let vdev = format!("net_tap0,iface={iface}");
    let ip = format!("{STACK_IP}/24");
    let ip6 = format!("{STACK6}/64");
    let args = [
        "--ip", &ip, "--ip", &ip6, "--no-dad", "--udp", "7", "--tcp", "7",
    ];
    let app = AppProcess::echo(&child_eal_args(&[&vdev]), &args);
    app.wait_for_output("UDP port(s)");
    let start = app.output_so_far();
    let field = |after: &str, end: char| -> String {
        start
            .split(after)
            .nth(1)
            .and_then(|rest| rest.split(end).next())
            .unwrap_or_else(|| panic!("no {after:?} in the start line: {start}"))
            .to_owned()
    };
    let stack_mac = field(", ", ')').to_lowercase();
    let link_local = field("fe80::", '/');
    let link_local = format!("fe80::{link_local}");
    let ns = common::kernel_side(
        "dpstack-barrage-",
        &iface,
        KERNEL_MAC,
        &[&format!("{KERNEL_IP}/24"), &format!("{KERNEL6}/64")],
    );
    // One python process sends kind after kind, told on stdin; bounded in
    // time as a whole (a stuck peer fails the test instead of hanging it).
    let mut sender = ns
        .command_bounded(120, "python3")
        .args(["-u", "-c", include_str!("hostile_frames.py")])
        .args([
            &iface,
            &stack_mac,
            KERNEL_MAC,
            KERNEL_IP,
            STACK_IP,
            KERNEL6,
            STACK6,
            &link_local,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 (scripts/setup installs it)");
    let mut to_sender = sender.stdin.take().expect("piped");
    let mut from_sender = BufReader::new(sender.stdout.take().expect("piped"));
    let mut errors = sender.stderr.take().expect("piped");
    let mut ask = |line: &str| -> String {
        let mut answer = String::new();
        let asked = writeln!(to_sender, "{line}").is_ok();
        if !asked || from_sender.read_line(&mut answer).unwrap_or(0) == 0 {
            let mut why = String::new();
            let _ = std::io::Read::read_to_string(&mut errors, &mut why);
            panic!("python3 stopped at {line}: {why}");
        }
        answer.trim().to_owned()
    };
    // The table and the script list the same kinds.
    let kinds = ask("kinds");
    let mut scripted: Vec<&str> = kinds.split_whitespace().collect();
    let mut listed: Vec<&str> = EXPECTED.iter().map(|(k, _)| *k).collect();
    scripted.sort_unstable();
    listed.sort_unstable();
    assert_eq!(scripted, listed, "tests/hostile_frames.py and EXPECTED");
    assert!(EXPECTED.len() >= 40, "at least 40 kinds");
    // Both sides resolve each other before the first kind.
    assert_eq!(
        ask("probe"),
        "alive",
        "the stack answers before the barrage"
    );
    let mut before = counters(&app);
    let mut failures = Vec::new();
    for &(kind, counter) in EXPECTED {
        let answer = ask(kind);
        let after = counters(&app);
        let rose = |name: &str| {
            after.get(name).copied().unwrap_or(0) > before.get(name).copied().unwrap_or(0)
        };
        let changed: Vec<String> = after
            .iter()
            .filter(|(name, &v)| before.get(*name).copied().unwrap_or(0) != v)
            .filter(|(name, _)| name.starts_with("drop_") || !name.contains("Udp"))
            .map(|(name, v)| format!("{name}+{}", v - before.get(name).copied().unwrap_or(0)))
            .collect();
        if answer != format!("alive {kind}") || !rose(counter) {
            failures.push(format!(
                "{kind}: {answer}, {counter} did not rise; changed: {changed:?}"
            ));
        }
        before = after;
    }
    drop(to_sender);
    let _ = common::wait_at_most(&mut sender, Duration::from_secs(10));
    let done = app.stop_with(libc::SIGINT);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
