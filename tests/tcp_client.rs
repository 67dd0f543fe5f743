//! `dpstack-tcpload`, dpstack's TCP client, against the Linux kernel as the
//! server: a `socat` echo server in a network namespace the test creates,
//! reached through a `net_tap` port moved into that namespace. Transfers
//! are checked byte for byte by the client, over IPv4 and IPv6, with many
//! connections at once and through injected loss and reordering.

mod common;

use common::{app_counter, child_eal_args, unique_name, AppProcess, Netns};

const CLIENT_IP: &str = "10.204.0.1";
const SERVER_IP: &str = "10.204.0.2";
const CLIENT6: &str = "2001:db8:204::1";
const SERVER6: &str = "2001:db8:204::2";
const KERNEL_MAC: &str = "02:00:00:00:02:44";

/// Runs the client with `args` against echo servers on the kernel side
/// (TCP port 7 over both families) and returns its output.
fn run_client(args: &[&str]) -> common::ConsoleOutput {
    let iface = unique_name("dptc");
    let vdev = format!("net_tap0,iface={iface}");
    let (ip, ip6) = (format!("{CLIENT_IP}/24"), format!("{CLIENT6}/64"));
    let mut all = vec!["--ip", &ip, "--ip", &ip6, "--no-dad", "--timeout", "40"];
    all.extend_from_slice(args);
    let app = AppProcess::spawn(
        env!("CARGO_BIN_EXE_dpstack-tcpload"),
        &child_eal_args(&[&vdev]),
        &all,
    );
    app.wait_for_output("connecting to");
    // Until the tap is on the kernel's side, the client's ARP and SYN go
    // unanswered: both are retried.
    let (v4, v6) = (format!("{SERVER_IP}/24"), format!("{SERVER6}/64"));
    let ns = common::kernel_side("dpstack-tcpc-", &iface, KERNEL_MAC, &[&v4, &v6]);
    let servers = start_echo_servers(&ns);
    let done = app.wait();
    drop(servers);
    drop(ns);
    done
}

/// `socat` echo servers (one `cat` per connection) on port 7, both
/// families; killed when dropped.
struct Servers(Vec<std::process::Child>);

impl Drop for Servers {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn start_echo_servers(ns: &Netns) -> Servers {
    // `-t 30`: after our FIN, socat's default half second to finish the
    // other direction could cut a loaded echo short (and reset it).
    let spawn = |listen: &str| {
        ns.command("socat")
            .args(["-t", "30", listen, "EXEC:cat"])
            .spawn()
            .expect("socat")
    };
    Servers(vec![
        spawn("TCP4-LISTEN:7,fork,reuseaddr"),
        spawn("TCP6-LISTEN:7,fork,reuseaddr,ipv6only=1"),
    ])
}

fn assert_verified(done: &common::ConsoleOutput, connections: usize) {
    assert_eq!(done.code, Some(0), "{}\n{}", done.stdout, done.stderr);
    assert!(
        done.stdout
            .contains(&format!("verified {connections}, failed 0")),
        "{}",
        done.stdout
    );
}

#[test]
fn megabytes_go_to_a_kernel_echo_server_and_back_over_both_families() {
    for server in [format!("{SERVER_IP}:7"), format!("[{SERVER6}]:7")] {
        let done = run_client(&["--connect", &server, "--bytes", "2097152"]);
        assert_verified(&done, 1);
        assert_eq!(app_counter(&done.stdout, "TcpActiveOpens"), 1);
    }
}

#[test]
fn many_connections_at_once_through_loss_and_reordering() {
    let server = format!("{SERVER_IP}:7");
    let done = run_client(&[
        "--connect",
        &server,
        "--connections",
        "8",
        "--bytes",
        "262144",
        "--faults",
        "drop=0.02,dup=0.01,reorder=0.03,seed=5",
    ]);
    assert_verified(&done, 8);
}

#[test]
fn a_refused_connection_is_reported() {
    // Nothing listens on port 9.
    let server = format!("{SERVER_IP}:9");
    let done = run_client(&["--connect", &server, "--bytes", "10"]);
    assert_ne!(done.code, Some(0));
    assert!(
        done.stderr.contains("connection refused") || done.stdout.contains("failed 1"),
        "{}\n{}",
        done.stdout,
        done.stderr
    );
}
