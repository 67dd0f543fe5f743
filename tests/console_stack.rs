//! `dpstack-console` in stack mode (`--forward-mode=stack`, `set fwd
//! stack`): the TCP/IP stack on the ports, driven by commands piped to the
//! prompt. The kernel test moves a `net_tap` port's kernel side into a
//! network namespace of its own (deleted when the test ends, failed or
//! not; the console is killed likewise), so nothing leaks into the host.
//! Also the port calls the console gained with the stack: link up/down and
//! the RSS configuration, on devices that do and do not support them.

mod common;

use common::{child_eal_args, kernel_side, unique_name, Prompt};

const STACK_IP: &str = "10.203.0.1";
const KERNEL_IP: &str = "10.203.0.2";
const KERNEL_MAC: &str = "02:00:00:00:02:03";
const NOT_RUNNING: &str = "Stack not running: set fwd stack, then start\n";

/// A console at its prompt on `vdevs`.
struct Console;

impl Console {
    fn start(vdevs: &[&str], app: &[&str]) -> Prompt {
        Prompt::start(&child_eal_args(vdevs), app)
    }
}

fn assert_has(text: &str, needle: &str) {
    assert!(text.contains(needle), "no {needle:?} in:\n{text}");
}

#[test]
fn stack_mode_pings_the_kernel_both_ways_and_echoes_its_datagrams() {
    let iface = unique_name("dpsc");
    let vdev = format!("net_tap0,iface={iface}");
    let mut console = Console::start(
        &[&vdev],
        &[
            "--forward-mode=stack",
            "--stack-ip",
            &format!("0,{STACK_IP}/24"),
        ],
    );
    // The kernel's end: two networks on one link, in a namespace of its own.
    let ns = kernel_side(
        "dpstack-cs-",
        &iface,
        KERNEL_MAC,
        &[&format!("{KERNEL_IP}/24"), "10.204.0.2/24"],
    );
    assert_eq!(console.say("show ip addr"), NOT_RUNNING);
    assert_has(&console.say("start"), "stack packet forwarding - ports=1");
    let addr = console.say("show ip addr");
    assert_has(&addr, "port 0: mtu 1500\n    link/ether ");
    assert_has(
        &addr,
        &format!("    inet {STACK_IP}/24 brd 10.203.0.255 scope global\n"),
    );
    assert_eq!(console.say("ip addr add 10.204.0.1/24"), "");
    assert_eq!(console.say("route add 198.51.100.0/24 via 10.204.0.2"), "");
    assert_eq!(
        console.say("show route"),
        format!(
            "10.203.0.0/24 port 0 proto kernel scope link src {STACK_IP}
10.204.0.0/24 port 0 proto kernel scope link src 10.204.0.1
198.51.100.0/24 via 10.204.0.2 port 0 src 10.204.0.1
"
        )
    );

    let ping = console.say(&format!("ping {KERNEL_IP} count 3"));
    assert_has(
        &ping,
        &format!("PING {KERNEL_IP} ({KERNEL_IP}) 56(84) bytes of data.\n"),
    );
    assert_eq!(ping.matches(" bytes from ").count(), 3, "{ping}");
    assert_has(&ping, "3 packets transmitted, 3 received, 0% packet loss");
    for ip in [STACK_IP, "10.204.0.1"] {
        let out = ns.exec("ping", &["-c", "3", "-i", "0.2", "-W", "2", ip]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_has(&text, "3 packets transmitted, 3 received");
    }
    assert_has(
        &console.say("show neigh"),
        &format!("{KERNEL_IP} port 0 lladdr {KERNEL_MAC} REACHABLE\n"),
    );

    assert_eq!(
        console.say("udp-echo start 7"),
        "UDP echo started on [::]:7\n"
    );
    let out = ns.socat(&format!("UDP:{STACK_IP}:7"), b"hello from the kernel\n");
    assert_eq!(
        out.stdout,
        b"hello from the kernel\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        console.say("tcp-echo start 7"),
        "TCP echo started on [::]:7\n"
    );
    let out = ns.socat(&format!("TCP:{STACK_IP}:7"), b"over tcp\n");
    assert_eq!(out.stdout, b"over tcp\n");
    // Every socket of the stack, with its queues: the listener shows its
    // backlog as Send-Q, as `ss` does.
    let sockets = console.say("show sockets");
    assert_has(
        &sockets,
        "\nudp   UNCONN          0      0 [::]:7                     *:*\n",
    );
    assert_has(
        &sockets,
        "\ntcp   LISTEN          0    128 [::]:7                     *:*\n",
    );
    let counters = console.say("show counters");
    assert_has(&counters, "ICMP:\n    IcmpInEchos                     6\n");
    assert_has(&counters, "UdpOutDatagrams                 1\n");
    assert!(!counters.contains("icmp_unhandled"), "{counters}");
    assert_has(
        &console.say("stop"),
        "Accumulated forward statistics for all ports",
    );
    assert_eq!(console.say("show neigh"), NOT_RUNNING);
    console.quit();
    drop(ns);
}

#[test]
fn the_stack_keeps_its_addresses_across_stop_and_start() {
    let mut console = Console::start(&["net_null0", "net_null1"], &[]);
    assert_eq!(console.say("ip addr add 10.9.0.1/24 port 1"), NOT_RUNNING);
    assert_eq!(
        console.say("set fwd stack"),
        "Set stack packet forwarding mode\n"
    );
    assert_has(
        &console.say("show config fwd"),
        "  RX P=1/Q=0 (socket 0) -> TX P=1/Q=0 (socket 0)\n",
    );
    assert_has(&console.say("start"), "stack packet forwarding - ports=2");
    assert_eq!(
        console.say("ip addr add 10.9.0.1/24"),
        "Several ports: name one (... port N)\n"
    );
    assert_has(
        &console.say("ip addr add 10.9.0.1/24 port 7"),
        "Invalid port 7\nThe valid ports array is [ 0 1 ]",
    );
    assert_eq!(console.say("ip addr add 10.9.0.1/24 port 1"), "");
    assert_eq!(
        console.say("route add 0.0.0.0/0 via 192.0.2.1"),
        "Error: gateway 192.0.2.1 is on none of the ports' networks: give a gateway inside an \
         --ip prefix\n"
    );
    assert_eq!(
        console.say("route add default via 10.9.0.1"),
        "Error: gateway 10.9.0.1 is one of the stack's own addresses: give another host on the \
         port's network\n"
    );
    assert_eq!(console.say("route add default via 10.9.0.254"), "");
    // No loopback: said at once, no ARP request for our own address.
    assert_eq!(
        console.say("ping 10.9.0.1 count 1"),
        "ping: 10.9.0.1 is one of the stack's own addresses (it has no loopback)\n"
    );
    assert!(!console.say("show neigh").contains("10.9.0.1"));
    console.say("stop");
    assert_has(&console.say("start"), "stack packet forwarding - ports=2");
    assert_eq!(
        console.say("show route"),
        "default via 10.9.0.254 port 1 src 10.9.0.1
10.9.0.0/24 port 1 proto kernel scope link src 10.9.0.1
"
    );
    assert_eq!(
        console.say("ping 198.51.100.1 count 0"),
        "ping: bad number of packets to transmit.\n"
    );
    assert_eq!(
        console.say("udp-echo stop 7"),
        "No UDP echo runs on port 7\n"
    );
    let out = console.quit();
    assert_has(&out, "Telling cores to stop...");
    assert!(out.ends_with("Bye...\n"));
}

#[test]
fn link_up_down_and_rss_hash_use_the_driver_with_testpmds_messages() {
    let tap = format!("net_tap0,iface={}", unique_name("dpsr"));
    let mut console = Console::start(&["net_null0", "net_ring0", &tap], &[]);
    // net_null: no RSS key, no link control.
    assert_eq!(
        console.say("show port 0 rss-hash"),
        "dev_info did not provide a valid hash key size\n"
    );
    assert_eq!(
        console.say("set link-down port 0"),
        "\nSet link down fail.\n"
    );
    // net_tap: a key size, but no RSS configuration to read.
    assert_eq!(
        console.say("show port 2 rss-hash key"),
        "operation not supported by device\n"
    );
    // net_ring: its link follows the calls.
    assert_eq!(console.say("set link-down port 1"), "");
    assert_has(
        &console.say("show port summary 1"),
        "net_ring0    net_ring       down     ",
    );
    assert_eq!(console.say("set link-up port 1"), "");
    assert_has(
        &console.say("show port summary 1"),
        "net_ring0    net_ring       up       ",
    );
    assert_has(
        &console.say("show port 9 rss-hash"),
        "Invalid port 9\nThe valid ports array is [ 0 1 2 ]",
    );
    console.quit();
}

/// A G.711-like RTP sender and receiver in one: sends `count` packets from
/// one socket to `target:port` 5 ms apart and prints how many came back.
const RTP_ECHO_PEER: &str = r#"
import socket, struct, sys, time
target, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 0))
s.settimeout(0.05)
got = 0
for i in range(count):
    header = struct.pack("!BBHII", 0x80, 0, i, 160 * i, 0x5eed)
    s.sendto(header + bytes(160), (target, port))
    time.sleep(0.005)
    try:
        while True:
            s.recv(2048)
            got += 1
    except socket.timeout:
        pass
end = time.time() + 1
s.settimeout(0.2)
while got < count and time.time() < end:
    try:
        s.recv(2048)
        got += 1
    except socket.timeout:
        pass
print(got)
"#;

#[test]
fn stack_mode_runs_the_rtp_relay_and_shows_its_statistics() {
    let iface = unique_name("dpsr");
    let vdev = format!("net_tap0,iface={iface}");
    let mut console = Console::start(
        &[&vdev],
        &[
            "--forward-mode=stack",
            "--stack-ip",
            &format!("0,{STACK_IP}/24"),
        ],
    );
    let ns = kernel_side(
        "dpstack-cr-",
        &iface,
        KERNEL_MAC,
        &[&format!("{KERNEL_IP}/24")],
    );
    assert_eq!(console.say("show rtp"), NOT_RUNNING);
    assert_has(&console.say("start"), "stack packet forwarding - ports=1");
    // An IPv6 leg on a stack with no global IPv6 address: the console
    // names its own command, not dpstack-rtp-relay's --ip.
    let v6 = "rtp-relay start --sessions 2 --port-base 30000 --b-peer-base [2001:db8::2]:5000";
    assert_has(
        &console.say(v6),
        "needs a global IPv6 address on the stack: add one with ip addr add ADDR/LEN",
    );
    assert_has(
        &console.say("rtp-relay start --sessions 2 --port-base 30000 --echo"),
        "2 session(s)",
    );
    let out = ns.exec("python3", &["-c", RTP_ECHO_PEER, STACK_IP, "30000", "40"]);
    let echoed = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert_eq!(
        echoed,
        "40",
        "echoes received; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stats = console.say("show rtp");
    assert_has(&stats, "session s0 leg A peer ");
    assert_has(&stats, "latched yes relatches 0 forwarded 40 ");
    assert_has(&stats, "ssrc 0x00005eed packets 40 ");
    assert_has(&stats, "lost 0 ");
    assert_has(&console.say("rtp-relay stop"), "2 session(s) ended");
    // Its ports are closed: the same start works again.
    assert_has(
        &console.say("rtp-relay start --sessions 2 --port-base 30000 --echo"),
        "2 session(s)",
    );
    console.say("stop");
    console.quit();
    drop(ns);
}
