//! dpstack processes with real peers: the Linux kernel through a `net_tap`
//! interface moved into a network namespace the test creates, and a second
//! dpstack process over `net_memif`. Traffic stays inside the namespace or
//! the shared-memory link.

mod common;

use common::{child_eal_args, unique_name, wait_until, AppProcess, Netns, RemoveOnDrop};
use std::io::Write;
use std::time::Duration;

fn counter(ns: &Netns, iface: &str, name: &str) -> u64 {
    let path = format!("/sys/class/net/{iface}/statistics/{name}");
    let out = ns.exec("cat", &[&path]);
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}

#[test]
fn tap_port_is_a_kernel_interface_in_a_test_namespace() {
    let iface = unique_name("dpst");
    let vdev = format!("net_tap0,iface={iface}");
    let console = AppProcess::console(
        &child_eal_args(&[&vdev]),
        &["--forward-mode=macswap", "--stats-period", "1"],
    );
    // Move the interface only once the port is started: the tap driver
    // configures it by name, in its own namespace, while starting.
    console.wait_until_forwarding();
    let ns = Netns::create(&unique_name("dpstack-tap-"));
    common::run("ip", &["link", "set", &iface, "netns", &ns.name]);
    common::run(
        "ip",
        &[
            "-n",
            &ns.name,
            "addr",
            "add",
            "10.199.0.1/24",
            "dev",
            &iface,
        ],
    );
    common::run("ip", &["-n", &ns.name, "link", "set", &iface, "up"]);
    common::run(
        "ip",
        &[
            "-n",
            &ns.name,
            "neigh",
            "replace",
            "10.199.0.2",
            "lladdr",
            "02:00:00:00:00:02",
            "dev",
            &iface,
            "nud",
            "permanent",
        ],
    );
    let rx_before = counter(&ns, &iface, "rx_packets");
    // The echo requests leave the kernel through the tap, dpstack swaps their
    // MACs and sends them back: the kernel receives every one of them.
    let ping = ns.exec("ping", &["-c", "5", "-i", "0.2", "-W", "1", "10.199.0.2"]);
    assert!(
        String::from_utf8_lossy(&ping.stdout).contains("5 packets transmitted"),
        "ping ran: {ping:?}"
    );
    assert!(
        wait_until(Duration::from_secs(3), || counter(
            &ns,
            &iface,
            "rx_packets"
        ) >= rx_before + 5),
        "the kernel got the frames back"
    );
    let out = console.stop_with(libc::SIGINT);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let (rx, tx, _) = out.accumulated();
    assert!(rx >= 5, "dpstack received the echo requests: {rx}");
    assert_eq!(tx, rx);
    // Closing the port removed the interface.
    assert!(ns.exec("ip", &["link", "show", &iface]).status.code() != Some(0));
}

#[test]
fn two_dpstack_processes_talk_over_memif() {
    let socket = format!("/tmp/{}.sock", unique_name("dpstack-memif-"));
    let _ = std::fs::remove_file(&socket);
    let _cleanup = RemoveOnDrop::new(&socket);
    let server_vdev = format!("net_memif0,role=server,socket={socket},socket-abstract=no");
    let client_vdev = format!("net_memif0,role=client,socket={socket},socket-abstract=no");
    // Both run the interactive prompt, so the link is torn down only after
    // both have stopped polling: DPDK 22.11's memif PMD can crash a process
    // that is still polling while its peer disconnects.
    let mut server = AppProcess::console(
        &child_eal_args(&[&server_vdev]),
        &["-i", "-a", "--forward-mode=rxonly"],
    );
    server.wait_until_forwarding();
    let mut client = AppProcess::console(
        &child_eal_args(&[&client_vdev]),
        &["-i", "-a", "--forward-mode=txonly"],
    );
    client.wait_until_forwarding();
    let (mut server_in, mut client_in) = (server.stdin(), client.stdin());
    std::thread::sleep(Duration::from_millis(1500));
    writeln!(client_in, "stop").expect("client stop");
    client.wait_for_output("Done.");
    std::thread::sleep(Duration::from_millis(300)); // let the server drain the ring
    writeln!(server_in, "stop").expect("server stop");
    server.wait_for_output("Done.");
    writeln!(client_in, "quit").expect("client quit");
    let client_out = client.wait();
    writeln!(server_in, "quit").expect("server quit");
    let server_out = server.wait();
    assert_eq!(client_out.code, Some(0), "client: {client_out:?}");
    assert_eq!(server_out.code, Some(0), "server: {server_out:?}");
    let (_, sent, _) = client_out.accumulated();
    let (received, _, _) = server_out.accumulated();
    assert!(sent > 10_000, "client sent {sent}");
    assert_eq!(received, sent, "every packet the link accepted arrived");
}
