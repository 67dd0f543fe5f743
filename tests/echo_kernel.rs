//! `dpstack-echo` with the Linux kernel as its peer: a `net_tap` port moved
//! into a network namespace the test creates. Everything the kernel sends
//! stays in that namespace.

mod common;

use common::{app_counter, echo_with_kernel, EchoWithKernel, Netns};

const STACK_IP: &str = "10.201.0.1";
const KERNEL_IP: &str = "10.201.0.2";
const KERNEL_MAC: &str = "02:00:00:00:02:02";

/// A running echo server and the namespace that holds its kernel peer.
type Setup = EchoWithKernel;

fn start() -> Setup {
    start_with(&[])
}

fn start_with(extra: &[&str]) -> Setup {
    let ip = format!("{STACK_IP}/24");
    let mut args = vec!["--ip", &ip, "--udp", "7", "--udp", "8"];
    args.extend_from_slice(extra);
    let kernel = format!("{KERNEL_IP}/24");
    echo_with_kernel("dpse", &args, "dpstack-echo-", KERNEL_MAC, &[&kernel])
}

fn ping(ns: &Netns, count: &str) -> String {
    let out = ns.exec("ping", &["-c", count, "-i", "0.2", "-W", "2", STACK_IP]);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn socat(ns: &Netns, port: u16, input: &[u8]) -> std::process::Output {
    ns.socat(&format!("UDP:{STACK_IP}:{port}"), input)
}

/// Sends each `(port, payload)` with socat and checks it comes back intact.
fn assert_echoes(ns: &Netns, cases: &[(u16, &[u8])]) {
    for &(port, text) in cases {
        let out = socat(ns, port, text);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.stdout, text, "echo on port {port}: {err}");
    }
}

/// The value of `field` in the kernel's `/proc/net/snmp` line for `proto`.
fn snmp(ns: &Netns, proto: &str, field: &str) -> u64 {
    let out = ns.exec("cat", &["/proc/net/snmp"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines().filter(|l| l.starts_with(&format!("{proto}:")));
    let (names, values) = (lines.next().unwrap_or(""), lines.next().unwrap_or(""));
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(n, _)| *n == field)
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or_else(|| panic!("no {proto} {field} in /proc/net/snmp"))
}

#[test]
fn arp_resolves_both_ways_and_ping_is_answered() {
    let s = start();
    let out = ping(&s.ns, "3");
    assert!(out.contains("3 received"), "ping: {out}");
    let neigh = String::from_utf8_lossy(&s.ns.exec("ip", &["neigh", "show", STACK_IP]).stdout)
        .to_lowercase();
    assert!(
        neigh.contains(&s.stack_mac),
        "kernel resolved the stack: {neigh}"
    );
    let done = s.app.stop_with(libc::SIGINT);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert!(
        done.stdout.contains(&format!(
            "neighbor {KERNEL_IP} at {}",
            KERNEL_MAC.to_uppercase()
        )),
        "the stack learned the kernel: {}",
        done.stdout
    );
    assert_eq!(app_counter(&done.stdout, "IcmpOutEchoReps"), 3);
}

#[test]
fn udp_datagrams_are_echoed_to_socat() {
    let s = start();
    assert_echoes(&s.ns, &[(7, b"hello dpstack\n"), (8, &[0x42u8; 1400])]);
    let done = s.app.stop_with(libc::SIGTERM);
    assert_eq!(done.code, Some(0));
    assert_eq!(app_counter(&done.stdout, "UdpOutDatagrams"), 2);
}

#[test]
fn record_core_cycles_prints_the_lcores_cycles_per_packet_at_exit() {
    let s = start_with(&["--record-core-cycles"]);
    assert_echoes(&s.ns, &[(7, b"hello dpstack\n"), (8, b"and again\n")]);
    let done = s.app.stop_with(libc::SIGINT);
    assert_eq!(done.code, Some(0));
    let out = &done.stdout;
    let line = out
        .lines()
        .find(|l| l.starts_with("dpstack-echo: lcore cycles:"))
        .unwrap_or_else(|| panic!("no cycles line:\n{out}"));
    // The two datagrams (and whatever else the kernel sent: ARP, IPv6
    // router solicitations) were received and counted by the bursts.
    let received: u64 = line
        .split(" packets received")
        .next()
        .and_then(|head| head.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(received >= 2, "{line}");
    assert!(line.contains("PMD rx+tx bursts"), "{line}");
    assert!(line.contains("stack and app"), "{line}");
}

#[test]
fn a_closed_port_answers_icmp_port_unreachable() {
    let s = start();
    let before = snmp(&s.ns, "Icmp", "InDestUnreachs");
    let out = socat(&s.ns, 9, b"anyone there?\n");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Connection refused"),
        "socat saw the ICMP error: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(snmp(&s.ns, "Icmp", "InDestUnreachs") > before);
    let done = s.app.stop_with(libc::SIGINT);
    assert!(app_counter(&done.stdout, "drop_udp_no_socket") >= 1);
    assert!(app_counter(&done.stdout, "IcmpOutDestUnreachs") >= 1);
}

#[test]
fn malformed_frames_are_dropped_and_counted_and_the_stack_still_answers() {
    let s = start();
    assert!(ping(&s.ns, "1").contains("1 received"));
    // Raw frames from the kernel side: an empty ARP packet, a bad IPv4
    // checksum, a truncated IPv4 packet, and a UDP datagram with a bad
    // checksum.
    let script = format!(
        r#"
import socket, struct
def csum(b):
    if len(b) % 2: b += b'\0'
    s = sum(struct.unpack('!%dH' % (len(b)//2), b))
    while s > 0xffff: s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
dst = bytes.fromhex('{dst}'); src = bytes.fromhex('{src}')
eth = dst + src + b'\x08\x00'
ips, ipd = socket.inet_aton('{kip}'), socket.inet_aton('{sip}')
def ip(proto, payload, good=True):
    h = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(payload), 1, 0, 64, proto, 0, ips, ipd)
    c = csum(h) if good else 0x1234
    return h[:10] + struct.pack('!H', c) + h[12:] + payload
udp = struct.pack('!HHHH', 5000, 7, 12, 0xbeef) + b'oops'
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(('{iface}', 0))
s.send(dst + src + b'\x08\x06')                     # ARP with no body
s.send(eth + ip(1, b'\x08\x00\x00\x00\x00\x00\x00\x00', good=False))
s.send(eth + ip(17, udp)[:30])                      # truncated
s.send(eth + ip(17, udp))                           # bad UDP checksum
"#,
        dst = s.stack_mac.replace(':', ""),
        src = KERNEL_MAC.replace(':', ""),
        kip = KERNEL_IP,
        sip = STACK_IP,
        iface = s.iface,
    );
    let out = s.ns.exec("python3", &["-c", &script]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(ping(&s.ns, "2").contains("2 received"), "still answering");
    let done = s.app.stop_with(libc::SIGINT);
    for reason in [
        "drop_arp_malformed",
        "drop_ipv4_bad_checksum",
        "drop_ipv4_truncated",
        "drop_udp_bad_checksum",
    ] {
        assert_eq!(
            app_counter(&done.stdout, reason),
            1,
            "{reason} in:\n{}",
            done.stdout
        );
    }
}

#[test]
fn a_fragmented_datagram_from_the_kernel_is_reassembled_and_echoed() {
    let s = start();
    let message: Vec<u8> = (0..6000u32).map(|i| (i % 251) as u8).collect();
    let out = socat(&s.ns, 7, &message);
    assert_eq!(
        out.stdout.len(),
        message.len(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout == message, "echoed intact");
    let done = s.app.stop_with(libc::SIGINT);
    assert_eq!(
        app_counter(&done.stdout, "IpReasmOKs"),
        1,
        "{}",
        done.stdout
    );
    assert_eq!(
        app_counter(&done.stdout, "IpReasmReqds"),
        5,
        "6008 bytes in 1480-byte fragments"
    );
    assert_eq!(
        app_counter(&done.stdout, "IpFragCreates"),
        5,
        "the reply is fragmented too"
    );
}

#[test]
fn queue_mode_echoes_from_application_threads() {
    let s = start_with(&["--queue-mode"]);
    assert!(s.app.output_so_far().contains("application threads"));
    assert_echoes(&s.ns, &[(7, b"through a queue\n"), (8, &[0x17u8; 3000])]);
    let done = s.app.stop_with(libc::SIGINT);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert_eq!(app_counter(&done.stdout, "UdpInDatagrams"), 2);
    assert_eq!(app_counter(&done.stdout, "UdpOutDatagrams"), 2);
    assert_eq!(app_counter(&done.stdout, "drop_udp_queue_full"), 0);
}
