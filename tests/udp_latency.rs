//! UDP request/response latency, one request in flight: `dpstack-latency
//! --udp` against `dpstack-echo` over `net_memif`, the kernel's
//! `dpstack-kernel-udp rr` against `dpstack-echo` over a tap in a
//! namespace, and lost requests: counted, and the client goes on to the
//! next one and ends at its deadline.

mod common;

use common::{echo_with_kernel, latency_over_memif, LatencySummary};
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn dpstack_latency_measures_udp_round_trips_to_dpstack_echo_over_memif() {
    let (client, server) = latency_over_memif(
        "dpstack-udplat-",
        &[],
        &[
            "--udp",
            "10.208.0.1:7",
            "--size",
            "100",
            "--seconds",
            "1.5",
            "--warmup",
            "0.3",
        ],
    );
    assert_eq!(client.code, Some(0), "client: {client:?}");
    assert_eq!(server.code, Some(0), "server: {server:?}");
    let summary = LatencySummary::parse(&client.stdout);
    assert_eq!(summary.proto, "udp");
    summary.assert_sane();
    assert_eq!(summary.get("lost"), 0.0, "{}", summary.line);
    // One request in flight: the echo server saw about as many datagrams
    // as were measured (plus the warm-up's), never fewer.
    let echoed = common::app_counter(&server.stdout, "UdpInDatagrams") as f64;
    assert!(
        echoed >= summary.get("samples"),
        "{echoed} echoed: {}",
        summary.line
    );
}

#[test]
fn lost_udp_requests_are_counted_and_the_client_goes_on() {
    // The client's port drops 5% of what it receives: those echoes never
    // arrive, each such request waits out its 5 ms and the next goes out.
    // The ARP reply can be dropped too (retried each second): the warm-up
    // and the run are long enough that only three drops in a row of it
    // (one chance in 8,000) would leave nothing measured.
    let (client, _server) = latency_over_memif(
        "dpstack-udplost-",
        &[],
        &[
            "--udp",
            "10.208.0.1:7",
            "--seconds",
            "2",
            "--warmup",
            "1",
            "--timeout",
            "5",
            "--faults",
            "drop=0.05,dir=rx,seed=5",
        ],
    );
    let summary = LatencySummary::parse(&client.stdout);
    summary.assert_sane();
    let (samples, lost) = (summary.get("samples"), summary.get("lost"));
    assert!(lost > 0.0, "{}", summary.line);
    // About one in twenty lost, and many more measured after the first
    // loss.
    assert!(lost < samples, "{}", summary.line);
    assert!(samples > 10.0 * 5.0, "{}", summary.line);
    // Losses alone do not fail the run.
    assert_eq!(client.code, Some(0), "client: {client:?}");
}

#[test]
fn a_server_that_answers_nothing_ends_the_run_at_its_deadline_with_every_request_lost() {
    // dpstack-echo --sink receives and drops: no echo ever comes back.
    let started = Instant::now();
    let (client, _server) = latency_over_memif(
        "dpstack-udpsink-",
        &["--sink"],
        &[
            "--udp",
            "10.208.0.1:7",
            "--seconds",
            "1",
            "--warmup",
            "0.2",
            "--timeout",
            "20",
        ],
    );
    let summary = LatencySummary::parse(&client.stdout);
    assert_eq!(summary.get("samples"), 0.0, "{}", summary.line);
    // About 1 s / 20 ms = 50 requests, each counted lost (fewer if the
    // machine starves the lcore; never more): the client went on after
    // each timeout.
    let lost = summary.get("lost");
    assert!((10.0..=55.0).contains(&lost), "{}", summary.line);
    // No round trip measured: the run failed, and said why.
    assert_eq!(client.code, Some(1), "client: {client:?}");
    assert!(
        client.stderr.contains("no round trip measured"),
        "{client:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn the_kernel_rr_client_measures_dpstack_echo_over_a_tap() {
    let s = echo_with_kernel(
        "dpslat",
        &["--ip", "10.209.0.1/24", "--udp", "7"],
        "dpstack-lat-",
        "02:00:00:00:09:02",
        &["10.209.0.2/24"],
    );
    let summary = common::kernel_rr_in(
        &s.ns,
        env!("CARGO_BIN_EXE_dpstack-kernel-udp"),
        "10.209.0.1:7",
    );
    assert_eq!(summary.proto, "udp");
    assert_eq!(summary.get("lost"), 0.0, "{}", summary.line);
}

#[test]
fn the_kernel_rr_client_counts_requests_a_silent_server_never_answers() {
    // A socket that never reads: every request times out (20 ms), and the
    // client still ends at its deadline.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    let target = silent.local_addr().expect("address").to_string();
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_dpstack-kernel-udp"))
        .args([
            "rr",
            "--target",
            &target,
            "--seconds",
            "0.5",
            "--warmup",
            "0",
        ])
        .args(["--timeout", "20"])
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary = LatencySummary::parse(&stdout);
    assert_eq!(summary.get("samples"), 0.0, "{}", summary.line);
    assert!(summary.get("lost") >= 10.0, "{}", summary.line);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(started.elapsed() < Duration::from_secs(5));
    drop(silent);
}

#[test]
fn the_kernel_rr_client_talks_to_loopback_only_unless_told_otherwise() {
    let out = Command::new(env!("CARGO_BIN_EXE_dpstack-kernel-udp"))
        .args(["rr", "--target", "192.0.2.1:7", "--seconds", "0.1"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--namespaced"));
}
