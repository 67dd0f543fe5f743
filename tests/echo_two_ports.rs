//! One `dpstack-echo` lcore driving two `net_tap` ports with one route
//! table, the Linux kernel on the other side of both taps, inside a network
//! namespace the test creates.
//!
//! Link 0 is 10.202.0.1/24 (kernel side 10.202.0.2), link 1 is 10.203.0.1/24
//! (kernel side 10.203.0.2), and the stack routes 10.204.0.0/24 through
//! 10.203.0.2. The kernel also owns 10.204.0.5 (on its loopback): a client
//! bound there talks to the stack through link 0, and replies that the stack
//! *routes* (queue mode sends through the route table) must come back through
//! link 1. The namespace answers ARP only for each tap's own address, so a
//! reply that took the wrong port could not be delivered.

mod common;

use common::{app_counter, child_eal_args, unique_name, AppProcess, Netns};

const STACK: [&str; 2] = ["10.202.0.1", "10.203.0.1"];
const KERNEL: [&str; 2] = ["10.202.0.2", "10.203.0.2"];
const KERNEL_MACS: [&str; 2] = ["02:00:00:00:02:02", "02:00:00:00:03:02"];
const FAR_CLIENT: &str = "10.204.0.5";

struct Setup {
    app: AppProcess,
    ns: Netns,
    taps: [String; 2],
}

fn start(extra: &[&str]) -> Setup {
    let taps = [unique_name("dpsa"), unique_name("dpsb")];
    let vdevs = [
        format!("net_tap0,iface={}", taps[0]),
        format!("net_tap1,iface={}", taps[1]),
    ];
    let (ip0, ip1) = (format!("{}/24", STACK[0]), format!("{}/24", STACK[1]));
    let route = format!("10.204.0.0/24,{}", KERNEL[1]);
    let mut args = vec!["--ip", &ip0, "--ip", &ip1, "--route", &route, "--udp", "7"];
    args.extend_from_slice(extra);
    let app = AppProcess::echo(&child_eal_args(&[&vdevs[0], &vdevs[1]]), &args);
    app.wait_for_output("UDP port(s)");
    let ns = Netns::create(&unique_name("dpstack-2p-"));
    let n = ns.name.clone();
    for sysctl in [
        "net.ipv4.conf.all.rp_filter=0",
        "net.ipv4.conf.default.rp_filter=0",
        "net.ipv4.conf.all.arp_ignore=1",
    ] {
        let out = ns.exec("sysctl", &["-qw", sysctl]);
        assert!(out.status.success(), "sysctl {sysctl}");
    }
    for i in 0..2 {
        let tap = &taps[i];
        common::run("ip", &["link", "set", tap, "netns", &n]);
        common::run(
            "ip",
            &["-n", &n, "link", "set", tap, "address", KERNEL_MACS[i]],
        );
        let address = format!("{}/24", KERNEL[i]);
        common::run("ip", &["-n", &n, "addr", "add", &address, "dev", tap]);
        common::run("ip", &["-n", &n, "link", "set", tap, "up"]);
        let out = ns.exec(
            "sysctl",
            &["-qw", &format!("net.ipv4.conf.{tap}.rp_filter=0")],
        );
        assert!(out.status.success());
    }
    common::run("ip", &["-n", &n, "link", "set", "lo", "up"]);
    let far = format!("{FAR_CLIENT}/32");
    common::run("ip", &["-n", &n, "addr", "add", &far, "dev", "lo"]);
    Setup { app, ns, taps }
}

/// Sends `input` from `bind` to `dst`:7 with socat; returns what came back.
fn socat(ns: &Netns, dst: &str, bind: Option<&str>, input: &[u8]) -> std::process::Output {
    let mut address = format!("UDP:{dst}:7");
    if let Some(bind) = bind {
        address.push_str(&format!(",bind={bind}"));
    }
    ns.socat(&address, input)
}

/// Packets the kernel received on `tap`.
fn kernel_rx_packets(ns: &Netns, tap: &str) -> u64 {
    let out = ns.exec(
        "cat",
        &[&format!("/sys/class/net/{tap}/statistics/rx_packets")],
    );
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}

#[test]
fn each_port_answers_arp_ping_and_udp_on_its_own_network() {
    let s = start(&[]);
    for (i, stack_ip) in STACK.into_iter().enumerate() {
        let out =
            s.ns.exec("ping", &["-c", "2", "-i", "0.2", "-W", "2", stack_ip]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("2 received"), "ping {stack_ip}: {text}");
        let message = format!("through port {i}\n");
        let before = kernel_rx_packets(&s.ns, &s.taps[i]);
        let out = socat(&s.ns, stack_ip, None, message.as_bytes());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.stdout, message.as_bytes(), "{err}");
        assert!(
            kernel_rx_packets(&s.ns, &s.taps[i]) > before,
            "the echo came back through tap {i}"
        );
    }
    let done = s.app.stop_with(libc::SIGINT);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    for i in 0..2 {
        let line = format!(
            "neighbor {} at {} (Reachable) link {i}",
            KERNEL[i],
            KERNEL_MACS[i].to_uppercase()
        );
        assert!(done.stdout.contains(&line), "{line}: {}", done.stdout);
    }
    assert_eq!(app_counter(&done.stdout, "IcmpOutEchoReps"), 4);
    assert_eq!(app_counter(&done.stdout, "UdpOutDatagrams"), 2);
}

#[test]
fn routed_replies_leave_through_the_port_the_route_names() {
    // Queue mode: the application thread sends each reply with send_to,
    // which goes through the route table (inline replies go back to the
    // previous hop instead).
    let s = start(&["--queue-mode"]);
    let before = kernel_rx_packets(&s.ns, &s.taps[1]);
    for message in [&b"routed once\n"[..], &[0x5au8; 1200]] {
        let out = socat(&s.ns, STACK[0], Some(FAR_CLIENT), message);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.stdout, message, "the routed echo came back: {err}");
    }
    // Two echoes plus the gateway's ARP reply at least.
    assert!(
        kernel_rx_packets(&s.ns, &s.taps[1]) >= before + 2,
        "replies arrived through link 1"
    );
    let done = s.app.stop_with(libc::SIGINT);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert!(
        done.stdout.contains(&format!("neighbor {} at", KERNEL[1]))
            && done.stdout.contains("link 1"),
        "the gateway was resolved on link 1: {}",
        done.stdout
    );
    assert_eq!(app_counter(&done.stdout, "UdpOutDatagrams"), 2);
}

#[test]
fn a_gateway_on_no_ports_network_is_refused_with_a_hint() {
    let taps = [unique_name("dpsc")];
    let vdev = format!("net_tap0,iface={}", taps[0]);
    let app = AppProcess::echo(
        &child_eal_args(&[&vdev]),
        &["--ip", "10.205.0.1/24", "--gateway", "10.99.0.1"],
    );
    let done = app.wait();
    assert_ne!(done.code, Some(0));
    assert!(
        done.stderr
            .contains("gateway 10.99.0.1 is on none of the ports' networks"),
        "{}",
        done.stderr
    );
}
