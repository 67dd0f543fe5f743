//! `dpstack-echo` answering IPv6 with the Linux kernel as its peer: a
//! `net_tap` port moved into a network namespace the test creates. Neighbor
//! Discovery both ways (the stack resolving the kernel by itself too) and
//! `ping -6` to the link-local and global addresses (and over the MTU, the
//! replies fragmented); UDP echo with `socat`,
//! large datagrams reassembled and fragmented; a static route through the
//! kernel as gateway; hostile IPv6 packets (hop limit 0, a long extension
//! chain, malformed and overlapping fragments, an unknown next header)
//! sent raw from the namespace are dropped and counted (with parameter
//! problems where RFC 4443 asks), and the stack still answers after.
//! Duplicate address detection against the kernel runs over a veth pair
//! (`net_af_packet`), with the app started inside the namespace.

mod common;

use common::{
    app_counter, child_eal_args, echo_with_kernel, unique_name, AppProcess, EchoWithKernel, Netns,
};

const STACK6: &str = "2001:db8:6::1";
const KERNEL6: &str = "2001:db8:6::2";
const KERNEL_MAC: &str = "02:00:00:00:06:02";

type Setup = EchoWithKernel;

fn start() -> Setup {
    start_with(&[])
}

fn start_with(extra: &[&str]) -> Setup {
    let global = format!("{STACK6}/64");
    let mut args = vec!["--ip", "10.206.0.1/24", "--ip", &global, "--udp", "7"];
    args.extend_from_slice(extra);
    let kernel = format!("{KERNEL6}/64");
    echo_with_kernel("dps6", &args, "dpstack-v6-", KERNEL_MAC, &[&kernel])
}

/// The port's link-local address, as the app's start line lists it.
fn link_local(s: &Setup) -> String {
    s.app
        .output_so_far()
        .split_whitespace()
        .find(|w| w.starts_with("fe80::"))
        .and_then(|w| w.split('/').next())
        .expect("the start line lists the link-local address")
        .to_owned()
}

fn ping6(s: &Setup, target: &str, count: &str) -> String {
    let out = s.ns.exec(
        "ping",
        &[
            "-6", "-c", count, "-i", "0.2", "-W", "2", "-I", &s.iface, target,
        ],
    );
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn ping6_reaches_the_global_and_link_local_addresses_and_both_sides_learn_each_other() {
    let s = start();
    let out = ping6(&s, STACK6, "3");
    assert!(out.contains("3 received"), "ping -6 global: {out}");
    let scoped = format!("{}%{}", link_local(&s), s.iface);
    let out = ping6(&s, &scoped, "2");
    assert!(out.contains("2 received"), "ping -6 link-local: {out}");
    // The kernel resolved us by Neighbor Discovery.
    let neigh = String::from_utf8_lossy(&s.ns.exec("ip", &["-6", "neigh", "show", STACK6]).stdout)
        .to_lowercase();
    assert!(
        neigh.contains(&s.stack_mac),
        "kernel's neighbour entry: {neigh}"
    );
    let done = s.app.stop_with(libc::SIGINT);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert_eq!(app_counter(&done.stdout, "Icmp6OutEchoReplies"), 5);
    assert!(app_counter(&done.stdout, "Icmp6OutNeighborAdvertisements") >= 1);
    // And the stack learned the kernel from its solicitations.
    let kernel_mac = format!("at {} ", KERNEL_MAC.to_uppercase());
    assert!(
        done.stdout
            .lines()
            .any(|l| l.starts_with("neighbor6 ") && l.contains(&kernel_mac)),
        "the stack's IPv6 neighbour cache holds the kernel: {}",
        done.stdout
    );
}

#[test]
fn pings6_over_the_mtu_are_answered_in_fragments() {
    // -s 1453: the reply is one byte over the 1500-byte MTU; -s 1480 and
    // larger: the request came in fragments too.
    let s = start();
    for size in ["1453", "1480", "4000"] {
        let out = s.ns.exec(
            "ping",
            &[
                "-6", "-c", "1", "-s", size, "-W", "2", "-I", &s.iface, STACK6,
            ],
        );
        let out = String::from_utf8_lossy(&out.stdout);
        assert!(out.contains("1 received"), "ping -6 -s {size}: {out}");
    }
    let done = s.app.stop_with(libc::SIGINT);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert_eq!(
        app_counter(&done.stdout, "Ip6FragOKs"),
        3,
        "{}",
        done.stdout
    );
}

/// Sends raw IPv6 packets from the namespace with a Python raw socket
/// (`IPV6_HDRINCL`-free: the kernel builds the IPv6 header, we choose the
/// hop limit and the extension headers through the payload protocol).
fn send_raw6(s: &Setup, script: &str) {
    let out = s.ns.exec("python3", &["-c", script]);
    assert!(
        out.status.success(),
        "raw send: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn hostile_ipv6_is_dropped_and_counted_and_the_stack_still_answers() {
    let s = start();
    // Resolve first, so the raw packets go straight out.
    let out = ping6(&s, STACK6, "1");
    assert!(out.contains("1 received"), "{out}");
    let script = format!(
        r#"
import socket, struct
dst = ("{STACK6}", 0)
echo = bytes([128, 0, 0, 0, 0, 1, 0, 1]) + b"hostile"
# 1. hop limit 0: an echo request sent with IPV6_UNICAST_HOPS = 0 (answered:
#    a destination takes any hop limit, RFC 8200 3).
s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_UNICAST_HOPS, 0)
s.sendto(echo, dst)
# 2. nine destination-options headers before the payload (over the walk's bound).
def dest_opts(nxt):
    return bytes([nxt, 0, 1, 4, 0, 0, 0, 0])
chain = b"".join(dest_opts(60) for _ in range(8)) + dest_opts(59)
r = socket.socket(socket.AF_INET6, socket.SOCK_RAW, 60)
r.sendto(chain, dst)
# 3. a non-final fragment whose length is not a multiple of 8.
frag = bytes([58, 0, 0, 1]) + struct.pack("!I", 7) + echo
f = socket.socket(socket.AF_INET6, socket.SOCK_RAW, 44)
f.sendto(frag, dst)
# 4. overlapping fragments: bytes 0-15, then 8-23 of the same datagram.
body = bytes([128, 0, 0, 0, 0, 1, 0, 2]) + bytes(24)
f.sendto(bytes([58, 0, 0, 1]) + struct.pack("!I", 8) + body[:16], dst)
f.sendto(bytes([58, 0, 0, 8]) + struct.pack("!I", 8) + body[8:24], dst)
# 5. a tiny first fragment (RFC 7112): destination options naming UDP, whose
#    header would only come in a later fragment.
f.sendto(bytes([60, 0, 0, 1]) + struct.pack("!I", 9) + bytes([17, 0, 1, 4, 0, 0, 0, 0]), dst)
# 6. an unknown next header (experimental 253).
u = socket.socket(socket.AF_INET6, socket.SOCK_RAW, 253)
u.sendto(b"12345678", dst)
"#
    );
    send_raw6(&s, &script);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let out = ping6(&s, STACK6, "2");
    assert!(out.contains("2 received"), "still answering: {out}");
    let kernel_parm_problems = snmp6(&s, "Icmp6InParmProblems");
    let done = s.app.stop_with(libc::SIGINT);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert_eq!(
        app_counter(&done.stdout, "drop_ipv6_bad_extensions"),
        1,
        "{}",
        done.stdout
    );
    for reason in [
        "drop_ipv6_fragment_malformed",
        "drop_ipv6_reassembly_overlap",
        "drop_ipv6_fragment_incomplete",
        "drop_ipv6_unknown_next_header",
    ] {
        assert_eq!(
            app_counter(&done.stdout, reason),
            1,
            "{reason}: {}",
            done.stdout
        );
    }
    assert_eq!(app_counter(&done.stdout, "Icmp6OutParmProblems"), 3);
    assert!(
        kernel_parm_problems >= 3,
        "the kernel got the parameter problems"
    );
    // The three pings' and the hop-limit-0 request's.
    assert_eq!(app_counter(&done.stdout, "Icmp6OutEchoReplies"), 4);
}

/// Sends `input` with socat from the namespace to `[target]:7` over UDP6
/// and returns what came back.
fn socat6(s: &Setup, target: &str, input: &[u8]) -> (Vec<u8>, String) {
    socat6_to(s, target, 7, input)
}

fn socat6_to(s: &Setup, target: &str, port: u16, input: &[u8]) -> (Vec<u8>, String) {
    let out = s.ns.socat(&format!("UDP6:[{target}]:{port}"), input);
    (
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn udp_over_ipv6_is_echoed_to_socat_on_global_and_link_local_addresses() {
    let s = start();
    let large: Vec<u8> = (0..4000u32).map(|i| (i % 251) as u8).collect();
    let cases: [(String, &[u8]); 4] = [
        (STACK6.to_owned(), b"hello over six\n"),
        (STACK6.to_owned(), &[0x66; 1400]),
        (format!("{}%{}", link_local(&s), s.iface), b"link-local\n"),
        // Fragmented by the kernel, reassembled, echoed in fragments.
        (STACK6.to_owned(), &large),
    ];
    for (target, payload) in &cases {
        let (back, err) = socat6(&s, target, payload);
        assert_eq!(&back, payload, "echo from {target}: {err}");
    }
    let done = s.app.stop_with(libc::SIGINT);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert_eq!(app_counter(&done.stdout, "UdpInDatagrams"), 4);
    assert_eq!(app_counter(&done.stdout, "UdpOutDatagrams"), 4);
    assert_eq!(app_counter(&done.stdout, "Ip6ReasmOKs"), 1);
    assert_eq!(app_counter(&done.stdout, "Ip6FragOKs"), 1);
}

/// The value of `field` in the namespace's /proc/net/snmp6.
fn snmp6(s: &Setup, field: &str) -> u64 {
    let out = s.ns.exec("cat", &["/proc/net/snmp6"]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| {
            l.strip_prefix(field)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no {field} in /proc/net/snmp6"))
}

#[test]
fn a_closed_port_answers_icmpv6_port_unreachable() {
    let s = start();
    let before = snmp6(&s, "Icmp6InDestUnreachs");
    let (back, _) = socat6_to(&s, STACK6, 9, b"anyone there?\n");
    assert!(back.is_empty());
    assert!(
        common::wait_until(std::time::Duration::from_secs(2), || {
            snmp6(&s, "Icmp6InDestUnreachs") > before
        }),
        "the kernel got destination unreachable"
    );
    let done = s.app.stop_with(libc::SIGINT);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert!(app_counter(&done.stdout, "Icmp6OutDestUnreachs") >= 1);
    assert!(app_counter(&done.stdout, "drop_udp_no_socket") >= 1);
}

#[test]
fn queue_mode_sends_over_ipv6_through_the_route_and_neighbour_cache() {
    // Queue mode: the application thread's send_to takes the IPv6 route
    // (the on-link prefix) and the neighbour cache, not the request's
    // previous hop.
    let s = start_with(&["--queue-mode"]);
    for payload in [&b"queued over six\n"[..], &[0x36; 1200]] {
        let (back, err) = socat6(&s, STACK6, payload);
        assert_eq!(back, payload, "{err}");
    }
    let done = s.app.stop_with(libc::SIGINT);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert_eq!(app_counter(&done.stdout, "UdpOutDatagrams"), 2);
    assert!(
        done.stdout.contains(&format!(
            "neighbor6 {KERNEL6} at {}",
            KERNEL_MAC.to_uppercase()
        )),
        "the peer is in the IPv6 neighbour cache: {}",
        done.stdout
    );
}

#[test]
fn the_stack_resolves_the_kernel_by_itself_and_routes_through_it() {
    // The kernel knows the stack without asking (a permanent neighbour
    // entry), so the stack learns nothing from it: to send its replies it
    // must solicit the kernel itself. The replies go to an address behind
    // the kernel, through a static route with the kernel as gateway.
    let s = start_with(&[
        "--queue-mode",
        "--route",
        &format!("2001:db8:99::/64,{KERNEL6}"),
    ]);
    let n = s.ns.name.clone();
    common::run(
        "ip",
        &[
            "-n",
            &n,
            "-6",
            "neigh",
            "replace",
            STACK6,
            "lladdr",
            &s.stack_mac,
            "dev",
            &s.iface,
            "nud",
            "permanent",
        ],
    );
    common::run(
        "ip",
        &["-n", &n, "addr", "add", "2001:db8:99::2/128", "dev", "lo"],
    );
    common::run("ip", &["-n", &n, "link", "set", "lo", "up"]);
    let target = format!("UDP6:[{STACK6}]:7,bind=[2001:db8:99::2]");
    let out = s.ns.socat(&target, b"through the gateway\n");
    assert_eq!(
        out.stdout,
        b"through the gateway\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let done = s.app.stop_with(libc::SIGINT);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert!(
        app_counter(&done.stdout, "Icmp6OutNeighborSolicits") >= 1,
        "{}",
        done.stdout
    );
    assert_eq!(app_counter(&done.stdout, "Icmp6InNeighborSolicits"), 0);
    assert!(
        done.stdout.contains(&format!(
            "neighbor6 {KERNEL6} at {} (Reachable)",
            KERNEL_MAC.to_uppercase()
        )),
        "resolved and confirmed by the kernel's advertisement: {}",
        done.stdout
    );
}

#[test]
fn duplicate_address_detection_finds_the_kernel_using_our_address() {
    // A veth pair inside the namespace: the kernel holds 2001:db8:7::1 on
    // one end; the app, started inside the namespace on the other end
    // (net_af_packet), is configured with the same address.
    let ns = Netns::create(&unique_name("dpstack-dad-"));
    let n = ns.name.clone();
    let (ours, theirs) = (unique_name("dpa"), unique_name("dpb"));
    common::run(
        "ip",
        &[
            "-n", &n, "link", "add", &ours, "type", "veth", "peer", "name", &theirs,
        ],
    );
    // The app's end carries no kernel IPv6 of its own.
    let out = ns.exec(
        "sysctl",
        &["-qw", &format!("net.ipv6.conf.{ours}.disable_ipv6=1")],
    );
    assert!(out.status.success());
    common::run(
        "ip",
        &[
            "-n",
            &n,
            "addr",
            "add",
            "2001:db8:7::1/64",
            "dev",
            &theirs,
            "nodad",
        ],
    );
    for link in [&ours, &theirs] {
        common::run("ip", &["-n", &n, "link", "set", link, "up"]);
    }
    let vdev = format!("net_af_packet0,iface={ours}");
    let app = AppProcess::echo_in(
        &n,
        &child_eal_args(&[&vdev]),
        &[
            "--ip",
            "10.207.0.1/24",
            "--ip",
            "2001:db8:7::1/64",
            "--udp",
            "7",
        ],
    );
    app.wait_for_output("UDP port(s)");
    let started = app.output_so_far();
    assert!(
        started.contains("warning: 2001:db8:7::1 on port 0 is in use by another node"),
        "{started}"
    );
    // The link-local address passed and answers.
    let link_local = started
        .split_whitespace()
        .find(|w| w.starts_with("fe80::"))
        .and_then(|w| w.split('/').next())
        .expect("the start line lists the link-local address")
        .to_owned();
    let target = format!("{link_local}%{theirs}");
    let out = ns.exec("ping", &["-6", "-c", "2", "-i", "0.2", "-W", "2", &target]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let done = app.stop_with(libc::SIGINT);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert_eq!(app_counter(&done.stdout, "Ip6DadDuplicates"), 1);
    drop(ns);
}
