//! TCP against Linux peers configured as real hosts are: the kernel's
//! per-namespace TCP settings turned to what some deployments run
//! (requesting ECN, no timestamps, no SACK, no window scaling, all of them
//! at once), with the kernel once as the client of `dpstack-echo --tcp` and
//! once as the server of `dpstack-tcpload`. Both sides lose segments at
//! random (our fault port drops 1 % of what it receives, nftables 1 % of
//! the kernel's TCP input), so recovery runs without the options a setting
//! turned off. Every byte must come back, over a `net_tap` port moved into
//! a namespace the test creates (where the settings apply, and nowhere
//! else).

mod common;

use common::{app_counter, child_eal_args, echo_with_kernel, unique_name, AppProcess, Netns};

const STACK_IP: &str = "10.207.0.1";
const KERNEL_IP: &str = "10.207.0.2";
const KERNEL_MAC: &str = "02:00:00:00:02:77";
const BYTES: usize = 2 << 20;

/// What our port drops of what it receives.
const OUR_LOSS: &str = "drop=0.01,dir=rx,seed=11";

/// Sets each `key=value` of the kernel's settings in `ns` (and checks the
/// kernel took it), and makes the kernel drop 1 % of its TCP input there.
fn configure(ns: &Netns, settings: &[&str]) {
    for setting in settings {
        let out = ns.exec("sysctl", &["-qw", setting]);
        assert!(
            out.status.success(),
            "sysctl -w {setting}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let rules = "table inet loss {\n chain input {\n  type filter hook input priority 0;\n  \
                 meta l4proto tcp numgen random mod 100 < 1 drop\n }\n}\n";
    ns.nft(rules);
}

/// How many frames our fault port dropped, from an app's summary line:
/// the runs must have lost something to mean anything.
fn dropped_by_our_port(stdout: &str) -> u64 {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("faults on port 0: dropped "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a fault summary: {stdout}"))
}

/// The kernel, with `settings`, as the client of our echo: two connections
/// of [`BYTES`] each, checked byte for byte; our side must have opened both
/// and reset none.
fn kernel_client(settings: &[&str]) {
    let ip = format!("{STACK_IP}/24");
    let args = [
        "--ip", &ip, "--udp", "7", "--tcp", "7", "--faults", OUR_LOSS,
    ];
    let v4 = format!("{KERNEL_IP}/24");
    let s = echo_with_kernel("dpkv", &args, "dpstack-tcpv-", KERNEL_MAC, &[&v4]);
    configure(&s.ns, settings);
    for seed in [3, 4] {
        let data = common::payload(BYTES, seed);
        let out = common::socat_patient(&s.ns.name, &format!("TCP:{STACK_IP}:7"), &data, 20);
        assert!(
            out.status.success(),
            "{settings:?}: socat: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.stdout.len(), data.len(), "{settings:?}: bytes back");
        assert!(out.stdout == data, "{settings:?}: the echo differs");
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
    assert!(dropped_by_our_port(&done.stdout) > 0, "{}", done.stdout);
}

/// The kernel, with `settings`, as the echo server (`socat`) of our client:
/// two connections of [`BYTES`] each, verified by the client.
fn kernel_server(settings: &[&str]) {
    let iface = unique_name("dpks");
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
            "--timeout",
            "40",
            "--connect",
            &server,
            "--connections",
            "2",
            "--bytes",
            &bytes,
            "--faults",
            OUR_LOSS,
        ],
    );
    app.wait_for_output("connecting to");
    let v4 = format!("{KERNEL_IP}/24");
    let ns = common::kernel_side("dpstack-tcpvs-", &iface, KERNEL_MAC, &[&v4]);
    // Before the listener: until it is there, the client's SYN is answered
    // with a reset or not at all (its ARP is retried).
    configure(&ns, settings);
    let mut listener = ns
        .command("socat")
        .args(["-t", "30", "TCP4-LISTEN:7,fork,reuseaddr", "EXEC:cat"])
        .spawn()
        .expect("socat (scripts/setup installs it)");
    let done = app.wait();
    let _ = listener.kill();
    let _ = listener.wait();
    drop(ns);
    assert_eq!(
        done.code,
        Some(0),
        "{settings:?}: {}\n{}",
        done.stdout,
        done.stderr
    );
    assert!(
        done.stdout.contains("verified 2, failed 0"),
        "{settings:?}: {}",
        done.stdout
    );
    assert!(dropped_by_our_port(&done.stdout) > 0, "{}", done.stdout);
}

const ECN: &[&str] = &["net.ipv4.tcp_ecn=1"];
const NO_TIMESTAMPS: &[&str] = &["net.ipv4.tcp_timestamps=0"];
const NO_SACK: &[&str] = &["net.ipv4.tcp_sack=0"];
const NO_WINDOW_SCALING: &[&str] = &["net.ipv4.tcp_window_scaling=0"];
const BARE: &[&str] = &[
    "net.ipv4.tcp_ecn=1",
    "net.ipv4.tcp_timestamps=0",
    "net.ipv4.tcp_sack=0",
    "net.ipv4.tcp_window_scaling=0",
];

#[test]
fn a_kernel_client_requesting_ecn_is_served() {
    kernel_client(ECN);
}

#[test]
fn a_kernel_client_without_timestamps_is_served() {
    kernel_client(NO_TIMESTAMPS);
}

#[test]
fn a_kernel_client_without_sack_is_served() {
    kernel_client(NO_SACK);
}

#[test]
fn a_kernel_client_without_window_scaling_is_served() {
    kernel_client(NO_WINDOW_SCALING);
}

#[test]
fn a_bare_kernel_client_is_served() {
    kernel_client(BARE);
}

#[test]
fn a_kernel_server_with_ecn_on_serves_our_client() {
    kernel_server(ECN);
}

#[test]
fn a_kernel_server_without_timestamps_serves_our_client() {
    kernel_server(NO_TIMESTAMPS);
}

#[test]
fn a_kernel_server_without_sack_serves_our_client() {
    kernel_server(NO_SACK);
}

#[test]
fn a_kernel_server_without_window_scaling_serves_our_client() {
    kernel_server(NO_WINDOW_SCALING);
}

#[test]
fn a_bare_kernel_server_serves_our_client() {
    kernel_server(BARE);
}
