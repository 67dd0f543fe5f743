//! ECN (RFC 3168) with the Linux kernel as the peer, in a namespace the
//! test creates: the kernel asking for it (`net.ipv4.tcp_ecn=1`) of
//! `dpstack-echo --tcp`, and `dpstack-tcpload --ecn` asking for it of a
//! kernel server (its default, `tcp_ecn=2`, agrees). nftables in the
//! namespace plays a router's AQM: it marks a twentieth of the ECN-capable
//! TCP packets CE, those the kernel receives and those it sends. So each
//! side must have sent its data ECN-capable (the kernel counts ECT(0)
//! packets received as `InECT0Pkts`, before the marking), seen marks and
//! echoed them (the kernel counts data acknowledged with ECE as
//! `TCPDeliveredCE`; we count marks as `TcpInCE`), and answered echoes
//! (`TcpEceReductions`); every byte comes back.

mod common;

use common::{app_counter, child_eal_args, echo_with_kernel, unique_name, AppProcess, Netns};

const STACK_IP: &str = "10.208.0.1";
const KERNEL_IP: &str = "10.208.0.2";
const KERNEL_MAC: &str = "02:00:00:00:02:78";
const BYTES: usize = 2 << 20;

/// Marks a twentieth of the ECN-capable TCP packets the kernel in `ns`
/// receives and sends CE (the IP checksum kept right by nftables).
fn congest(ns: &Netns) {
    let mark = "meta l4proto tcp ip ecn ect0 numgen random mod 20 < 1 ip ecn set ce";
    let rules = format!(
        "table inet congestion {{\n chain input {{\n  type filter hook input priority mangle;\n  \
         {mark}\n }}\n chain output {{\n  type filter hook output priority mangle;\n  \
         {mark}\n }}\n}}\n"
    );
    ns.nft(&rules);
}

/// The kernel's counter `name` of group `group` (`IpExt`, `TcpExt`) in
/// `ns`, from `/proc/net/netstat` there.
fn kernel_counter(ns: &Netns, group: &str, name: &str) -> u64 {
    let out = ns.exec("cat", &["/proc/net/netstat"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let prefix = format!("{group}:");
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with(&prefix)).collect();
    let [names, values] = lines.as_slice() else {
        panic!("{group} in /proc/net/netstat: {text}");
    };
    let at = names
        .split_whitespace()
        .position(|n| n == name)
        .unwrap_or_else(|| panic!("{group} {name} in /proc/net/netstat: {text}"));
    values
        .split_whitespace()
        .nth(at)
        .expect("a value")
        .parse()
        .expect("a number")
}

/// What both sides must show after the transfers: data ECN-capable both
/// ways, marks seen and echoed both ways, our answers to the echoes.
fn assert_ecn_worked(ns: &Netns, our_output: &str) {
    let ect0 = kernel_counter(ns, "IpExt", "InECT0Pkts");
    assert!(ect0 > 0, "the kernel got no ECT(0) packet from us");
    let delivered_ce = kernel_counter(ns, "TcpExt", "TCPDeliveredCE");
    assert!(
        delivered_ce > 0,
        "the kernel saw no echo of its marked data"
    );
    let marks = app_counter(our_output, "TcpInCE");
    assert!(marks > 0, "no CE mark reached us: {our_output}");
    let reductions = app_counter(our_output, "TcpEceReductions");
    assert!(reductions > 0, "no echo answered: {our_output}");
}

#[test]
fn a_kernel_client_asking_for_ecn_gets_it_and_congestion_is_signalled_both_ways() {
    let ip = format!("{STACK_IP}/24");
    let args = ["--ip", &ip, "--udp", "7", "--tcp", "7"];
    let v4 = format!("{KERNEL_IP}/24");
    let s = echo_with_kernel("dpke", &args, "dpstack-tcpe-", KERNEL_MAC, &[&v4]);
    let out = s.ns.exec("sysctl", &["-qw", "net.ipv4.tcp_ecn=1"]);
    assert!(out.status.success(), "sysctl: {out:?}");
    congest(&s.ns);
    for seed in [5, 6] {
        let data = common::payload(BYTES, seed);
        let out = common::socat_patient(&s.ns.name, &format!("TCP:{STACK_IP}:7"), &data, 20);
        assert!(
            out.status.success(),
            "socat: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.stdout == data, "the echo differs");
    }
    let done = s.app.stop_with(libc::SIGINT);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert_eq!(
        app_counter(&done.stdout, "TcpPassiveOpens"),
        2,
        "{}",
        done.stdout
    );
    assert_eq!(
        app_counter(&done.stdout, "TcpOutRsts"),
        0,
        "{}",
        done.stdout
    );
    assert_ecn_worked(&s.ns, &done.stdout);
}

#[test]
fn our_client_asking_for_ecn_gets_it_from_a_kernel_server_by_default() {
    let iface = unique_name("dpkes");
    let vdev = format!("net_tap0,iface={iface}");
    let ip = format!("{STACK_IP}/24");
    let server = format!("{KERNEL_IP}:7");
    let bytes = BYTES.to_string();
    let app = AppProcess::spawn(
        env!("CARGO_BIN_EXE_dpstack-tcpload"),
        &child_eal_args(&[&vdev]),
        &[
            "--ip",
            &ip,
            "--no-dad",
            "--ecn",
            "--timeout",
            "40",
            "--connect",
            &server,
            "--connections",
            "2",
            "--bytes",
            &bytes,
        ],
    );
    app.wait_for_output("connecting to");
    let v4 = format!("{KERNEL_IP}/24");
    let ns = common::kernel_side("dpstack-tcpes-", &iface, KERNEL_MAC, &[&v4]);
    let out = ns.exec("sysctl", &["-n", "net.ipv4.tcp_ecn"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "2",
        "the default"
    );
    congest(&ns);
    let mut listener = ns
        .command("socat")
        .args(["-t", "30", "TCP4-LISTEN:7,fork,reuseaddr", "EXEC:cat"])
        .spawn()
        .expect("socat (scripts/setup installs it)");
    let done = app.wait();
    let _ = listener.kill();
    let _ = listener.wait();
    assert_eq!(done.code, Some(0), "{}\n{}", done.stdout, done.stderr);
    assert!(
        done.stdout.contains("verified 2, failed 0"),
        "{}",
        done.stdout
    );
    assert_ecn_worked(&ns, &done.stdout);
}
