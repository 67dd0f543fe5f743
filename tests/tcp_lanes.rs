//! dpstack's TCP client on two lanes (pipelines on two worker lcores, each
//! with its own queue of the port): `dpstack-tcpload --nb-cores 2`
//! connecting from both lcores.
//!
//! - To the kernel (`socat` echo servers in a namespace the test makes),
//!   over a 2-queue `net_tap`: the kernel picks the queue of each reply by
//!   its own flow hash, which the client cannot predict, so some replies
//!   land on the lane that did not connect and TCP steering hands them to
//!   the owner. Every byte is checked.
//! - To `dpstack-echo --nb-cores 2` over a 2-queue `net_memif`: the peer's
//!   tx queue i is our rx queue i, so each lane's connections stay on it,
//!   and no segment needs steering.

mod common;

use common::{
    app_counter, kernel_side, lane_counter, stop_memif_pair, unique_name, AppProcess, RemoveOnDrop,
};
use dpstack::eal::EalArgs;

const CLIENT_IP: &str = "10.206.0.1";
const SERVER_IP: &str = "10.206.0.2";
const KERNEL_MAC: &str = "02:00:00:00:02:66";

/// EAL arguments with a main and two worker lcores and `vdev`.
fn three_lcores(vdev: &str) -> Vec<String> {
    EalArgs::for_test(3).vdev(vdev).to_vec().split_off(1)
}

#[test]
fn connections_from_both_lanes_to_the_kernel_come_back_intact() {
    let iface = unique_name("dptl");
    let vdev = format!("net_tap0,iface={iface}");
    let ip = format!("{CLIENT_IP}/24");
    let server = format!("{SERVER_IP}:7");
    let app = AppProcess::spawn(
        env!("CARGO_BIN_EXE_dpstack-tcpload"),
        &three_lcores(&vdev),
        &[
            "--ip",
            &ip,
            "--no-dad",
            "--nb-cores",
            "2",
            "--connect",
            &server,
            "--connections",
            "32",
            "--bytes",
            "200000",
            "--timeout",
            "60",
        ],
    );
    app.wait_for_output("connecting to");
    let ns = kernel_side(
        "dpstack-tcpl-",
        &iface,
        KERNEL_MAC,
        &[&format!("{SERVER_IP}/24")],
    );
    let mut echo = ns
        .command("socat")
        // A backlog for 32 connects at once: socat's default of 5 sends the
        // kernel into SYN cookies, under which it resets some of them.
        .args([
            "-t",
            "30",
            "TCP4-LISTEN:7,fork,reuseaddr,backlog=64",
            "EXEC:cat",
        ])
        // Its forks outlive it briefly: not on the test's pipes.
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("socat");
    let done = app.wait();
    let _ = echo.kill();
    let _ = echo.wait();
    drop(ns);
    let out = &done.stdout;
    assert_eq!(done.code, Some(0), "{out}\n{}", done.stderr);
    assert!(out.contains("verified 32, failed 0"), "{out}");
    for lane in 0..2 {
        assert_eq!(lane_counter(out, lane, "TcpActiveOpens"), 16, "{out}");
    }
    // The kernel's hash put some replies on the lane that did not connect
    // (with 32 connections, all on the right lane has odds of 2^-32): they
    // were handed over, none lost.
    let handed: u64 = (0..2).map(|l| lane_counter(out, l, "TcpSteeredOut")).sum();
    let taken: u64 = (0..2).map(|l| lane_counter(out, l, "TcpSteeredIn")).sum();
    assert!(handed > 0, "{out}");
    assert_eq!(handed, taken, "{out}");
    assert_eq!(app_counter(out, "drop_tcp_steer_ring_full"), 0, "{out}");
    assert_eq!(app_counter(out, "TcpOutRsts"), 0, "{out}");
}

#[test]
fn two_processes_on_two_lanes_each_run_transactions_over_two_memif_queues() {
    let socket = format!("/tmp/{}.sock", unique_name("dpstack-tcplanes-"));
    let _ = std::fs::remove_file(&socket);
    let _cleanup = RemoveOnDrop::new(&socket);
    let vdev = |role: &str| format!("net_memif0,role={role},socket={socket},socket-abstract=no");
    let server = AppProcess::echo(
        &three_lcores(&vdev("server")),
        &[
            "--ip",
            "10.207.0.1/24",
            "--no-dad",
            "--tcp",
            "7",
            "--nb-cores",
            "2",
        ],
    );
    server.wait_for_output("UDP port(s)");
    let client = AppProcess::spawn(
        env!("CARGO_BIN_EXE_dpstack-tcpload"),
        &three_lcores(&vdev("client")),
        &[
            "--ip",
            "10.207.0.2/24",
            "--no-dad",
            "--nb-cores",
            "2",
            "--connect",
            "10.207.0.1:7",
            "--crr",
            "3",
            "--connections",
            "8",
            "--timeout",
            "60",
            "--hold",
        ],
    );
    client.wait_for_output("holding the port open");
    let (client, server) = stop_memif_pair(server, client);
    let (out, served) = (&client.stdout, &server.stdout);
    assert!(
        out.contains("transactions/s (8 at once), 0 failed"),
        "{out}\n{served}"
    );
    let transactions: u64 = out
        .split(" transactions in ")
        .next()
        .and_then(|head| head.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0);
    assert!(transactions > 100, "{out}");
    for lane in 0..2 {
        assert!(lane_counter(out, lane, "TcpActiveOpens") > 0, "{out}");
        assert!(
            lane_counter(served, lane, "TcpPassiveOpens") > 0,
            "{served}"
        );
        // Each lane's connections stay on its queue pair: nothing to hand over.
        assert_eq!(lane_counter(out, lane, "TcpSteeredOut"), 0, "{out}");
        assert_eq!(lane_counter(served, lane, "TcpSteeredOut"), 0, "{served}");
    }
    assert_eq!(app_counter(served, "TcpOutRsts"), 0, "{served}");
}
