//! A dpstack process keeps polling its `net_memif` port while the peer
//! process at the other end is killed, and serves the next peer that
//! connects. DPDK 22.11's memif PMD unmaps the shared rings on its interrupt
//! thread when the peer goes away, under bursts that may still be reading
//! them; the driver layer's unmap guard makes that unmapping wait for them
//! (docs/ARCHITECTURE.md, "Driver layer invariants").

mod common;

use common::{child_eal_args, unique_name, AppProcess, LatencySummary, RemoveOnDrop};
use std::time::Duration;

/// Peers killed while they flood the echo, one after the other. Before the
/// guard, about one kill in four crashed the echo.
const KILLED_PEERS: usize = 8;

/// [`child_eal_args`] with a file prefix of this test's own (`role` tells
/// the processes apart).
fn eal_args(vdevs: &[&str], role: &str) -> Vec<String> {
    let prefix = format!("--file-prefix={}-{role}", unique_name("memifdown-"));
    (child_eal_args(vdevs).into_iter())
        .map(|a| {
            if a.starts_with("--file-prefix=") {
                prefix.clone()
            } else {
                a
            }
        })
        .collect()
}

#[test]
fn the_echo_outlives_memif_peers_killed_mid_flood_and_answers_the_next_one() {
    let socket = format!("/tmp/{}.sock", unique_name("memifdown-"));
    let _ = std::fs::remove_file(&socket);
    let _cleanup = RemoveOnDrop::new(&socket);
    // Rings of 16384 slots: the echo is still working through a full one
    // when the killed peer's socket closes.
    let vdev =
        |role: &str| format!("net_memif0,role={role},socket={socket},socket-abstract=no,rsize=14");
    let mut echo = AppProcess::echo(
        &eal_args(&[&vdev("server")], "echo"),
        &["--ip", "10.209.0.1/24", "--no-dad", "--udp", "7"],
    );
    echo.wait_for_output("UDP port(s)");
    for round in 0..KILLED_PEERS {
        // The console forwards net_null's 2000-byte frames (for the echo,
        // foreign ones) into the link as fast as it can: the echo's receive
        // bursts copy 32 of them each, from the rings the disconnect
        // unmaps. The peer's death closes the link with no goodbye.
        let peer = AppProcess::console(
            &eal_args(
                &["net_null0,size=2000", &vdev("client")],
                &format!("peer{round}"),
            ),
            &["--forward-mode=io", "--stats-period", "1"],
        );
        peer.wait_until_forwarding();
        std::thread::sleep(Duration::from_millis(500));
        let killed = peer.stop_with(libc::SIGKILL);
        assert_eq!(
            killed.signal,
            Some(libc::SIGKILL),
            "peer {round}: {killed:?}"
        );
        std::thread::sleep(Duration::from_millis(300));
        if !echo.running() {
            let dead = echo.wait();
            panic!("the echo died when peer {round} was killed: {dead:?}");
        }
    }
    let client = AppProcess::spawn(
        env!("CARGO_BIN_EXE_dpstack-latency"),
        &eal_args(&[&vdev("client")], "latency"),
        &[
            "--ip",
            "10.209.0.2/24",
            "--no-dad",
            "--udp",
            "10.209.0.1:7",
            "--seconds",
            "1",
            "--warmup",
            "0.2",
        ],
    )
    .wait_up_to(Duration::from_secs(40));
    assert_eq!(client.code, Some(0), "{}{}", client.stdout, client.stderr);
    LatencySummary::parse(&client.stdout).assert_sane();
    // The latency client closed its port on exit: the echo outlived that
    // disconnect too, and stops cleanly.
    std::thread::sleep(Duration::from_millis(300));
    let echo = echo.stop_with(libc::SIGINT);
    assert_eq!(echo.code, Some(0), "{echo:?}");
    assert!(
        common::app_counter(&echo.stdout, "UdpInDatagrams") > 0,
        "{}",
        echo.stdout
    );
}
