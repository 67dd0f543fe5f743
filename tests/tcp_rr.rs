//! TCP request/response latency, one request in flight on one connection:
//! `dpstack-latency --tcp` against `dpstack-echo --tcp` over `net_memif`,
//! and the kernel's `dpstack-kernel-tcp rr` against `dpstack-echo` over a
//! tap in a namespace.

mod common;

use common::{echo_with_kernel, latency_over_memif, LatencySummary};

#[test]
fn dpstack_latency_measures_tcp_round_trips_to_dpstack_echo_over_memif() {
    let (client, server) = latency_over_memif(
        "dpstack-tcprr-",
        &[],
        &[
            "--tcp",
            "10.208.0.1:7",
            "--size",
            "200",
            "--seconds",
            "1.5",
            "--warmup",
            "0.3",
        ],
    );
    assert_eq!(client.code, Some(0), "client: {client:?}");
    assert_eq!(server.code, Some(0), "server: {server:?}");
    let summary = LatencySummary::parse(&client.stdout);
    assert_eq!(summary.proto, "tcp");
    summary.assert_sane();
    assert_eq!(summary.get("lost"), 0.0, "{}", summary.line);
    // One connection, closed at the end of the run.
    assert_eq!(common::app_counter(&client.stdout, "TcpActiveOpens"), 1);
    assert_eq!(common::app_counter(&server.stdout, "TcpPassiveOpens"), 1);
}

#[test]
fn the_kernel_rr_client_measures_dpstack_echo_over_a_tap() {
    let s = echo_with_kernel(
        "dpsrr",
        &["--ip", "10.210.0.1/24", "--udp", "7", "--tcp", "7"],
        "dpstack-rr-",
        "02:00:00:00:10:02",
        &["10.210.0.2/24"],
    );
    let summary = common::kernel_rr_in(
        &s.ns,
        env!("CARGO_BIN_EXE_dpstack-kernel-tcp"),
        "10.210.0.1:7",
    );
    assert_eq!(summary.proto, "tcp");
}
