//! Two dpstack processes over `net_memif`: `dpstack-tcpload` against
//! `dpstack-echo --tcp`, at the default MTU and with jumbo frames (MTU 9000:
//! larger packet buffers, memif buffers that hold a whole frame, and an MSS
//! that follows the MTU). The client checks every byte of the echo.

mod common;

use common::{app_counter, child_eal_args, stop_memif_pair, unique_name, AppProcess, RemoveOnDrop};

/// Runs one transfer of `bytes` each way at `mtu` and returns the client's
/// and the server's final output.
fn transfer(mtu: u16, bytes: usize) -> (common::ConsoleOutput, common::ConsoleOutput) {
    let socket = format!("/tmp/{}-{mtu}.sock", unique_name("dpstack-tcpmemif-"));
    let _ = std::fs::remove_file(&socket);
    let _cleanup = RemoveOnDrop::new(&socket);
    let bsize = if mtu > 1500 { ",bsize=9216" } else { "" };
    let vdev =
        |role: &str| format!("net_memif0,role={role},socket={socket},socket-abstract=no{bsize}");
    let mtu = mtu.to_string();
    let server = AppProcess::echo(
        &child_eal_args(&[&vdev("server")]),
        &[
            "--ip",
            "10.205.0.1/24",
            "--no-dad",
            "--tcp",
            "7",
            "--mtu",
            &mtu,
        ],
    );
    server.wait_for_output("UDP port(s)");
    let bytes = bytes.to_string();
    let client = AppProcess::spawn(
        env!("CARGO_BIN_EXE_dpstack-tcpload"),
        &child_eal_args(&[&vdev("client")]),
        &[
            "--ip",
            "10.205.0.2/24",
            "--no-dad",
            "--connect",
            "10.205.0.1:7",
            "--bytes",
            &bytes,
            "--mtu",
            &mtu,
            "--timeout",
            "60",
            "--hold",
        ],
    );
    client.wait_for_output("holding the port open");
    stop_memif_pair(server, client)
}

/// Runs [`transfer`], checks that both sides ended cleanly and the client
/// verified every byte, and returns how many segments the server received.
fn segments_of_a_clean_transfer(mtu: u16, bytes: usize) -> u64 {
    let (client, server) = transfer(mtu, bytes);
    assert_eq!(client.code, Some(0), "client: {client:?}");
    assert_eq!(server.code, Some(0), "server: {server:?}");
    assert!(
        client.stdout.contains("verified 1, failed 0"),
        "{}",
        client.stdout
    );
    assert_eq!(app_counter(&server.stdout, "drop_tx_no_buffer"), 0);
    app_counter(&server.stdout, "TcpInSegs")
}

#[test]
fn jumbo_frames_carry_six_times_fewer_segments_intact() {
    // 20 MiB in 1460-byte segments would be 14,364 of them.
    let segments = segments_of_a_clean_transfer(9000, 20 << 20);
    assert!(
        segments < 6000,
        "{segments} segments for 20 MiB: no jumbo frames"
    );
}

#[test]
fn the_default_mtu_keeps_standard_segments() {
    let segments = segments_of_a_clean_transfer(1500, 4 << 20);
    assert!(
        segments >= (4 << 20) / 1460,
        "{segments} segments for 4 MiB at MTU 1500"
    );
}
