//! `dpstack-iperf --nb-cores 2` with stock `iperf3` (Debian's 3.12) as its
//! peer, over a 2-queue `net_tap` whose kernel side is in a namespace the
//! test creates: the kernel picks the queue of each flow that it opens by
//! its own hash, so the streams of one test land on both lanes.
//!
//! - Our server: every lane listens; the control connection and each data
//!   stream are served by whatever lane they land on, and the test still
//!   adds up, both ways.
//! - Our client: stream i is opened by lane i % 2, the control connection
//!   by lane 0, so both lanes open connections; the report agrees with the
//!   stock server's.

mod common;

use common::{kernel_side, lane_counter, unique_name, AppProcess, Netns};
use dpstack::eal::EalArgs;
use serde_json::Value;
use std::time::Duration;

const OURS: &str = "10.211.0.1";
const KERNEL: &str = "10.211.0.2";
const KERNEL_MAC: &str = "02:00:00:00:02:11";

fn iperf_binary() -> &'static str {
    env!("CARGO_BIN_EXE_dpstack-iperf")
}

/// EAL arguments with a main and two worker lcores and `vdev`.
fn three_lcores(vdev: &str) -> Vec<String> {
    EalArgs::for_test(3).vdev(vdev).to_vec().split_off(1)
}

fn num(v: &Value, path: &[&str]) -> f64 {
    let mut v = v;
    for key in path {
        v = &v[*key];
    }
    v.as_f64()
        .unwrap_or_else(|| panic!("no number at {path:?} in {v}"))
}

/// What the receiver counted is what the sender wrote, less what several
/// streams' windows and send buffers still held when the test ended.
fn assert_sums_plausible(doc: &Value, what: &str) {
    let sent = num(doc, &["end", "sum_sent", "bytes"]);
    let received = num(doc, &["end", "sum_received", "bytes"]);
    assert!(sent > 1e6, "{what}: only {sent} bytes sent");
    assert!(
        received <= sent && received >= sent * 0.75,
        "{what}: sent {sent}, received {received}"
    );
    assert_eq!(
        doc["end"]["streams"].as_array().map(Vec::len),
        Some(4),
        "{what}: {}",
        doc["end"]
    );
    for stream in doc["end"]["streams"].as_array().into_iter().flatten() {
        assert!(
            num(stream, &["receiver", "bytes"]) > 0.0,
            "{what}: a stream moved nothing: {stream}"
        );
    }
}

/// Runs stock `iperf3 -c OURS -J args` in the namespace (at most 40 s);
/// its JSON document.
fn stock_client(ns: &Netns, args: &[&str]) -> Value {
    let mut all = vec!["-c", OURS, "-J"];
    all.extend_from_slice(args);
    let out = ns.exec_bounded(40, "iperf3", &all);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "iperf3 {args:?} failed: {text}");
    let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert!(doc.get("error").is_none(), "iperf3 {args:?}: {text}");
    doc
}

#[test]
fn stock_clients_test_our_server_on_two_lanes() {
    let iface = unique_name("dpsn");
    let vdev = format!("net_tap0,iface={iface}");
    let ip = format!("{OURS}/24");
    let app = AppProcess::spawn(
        iperf_binary(),
        &three_lcores(&vdev),
        &["--ip", &ip, "--no-dad", "--nb-cores", "2", "-s"],
    );
    app.wait_for_output("Server listening on 5201");
    let ns = kernel_side(
        "dpstack-iperf-ls-",
        &iface,
        KERNEL_MAC,
        &[&format!("{KERNEL}/24")],
    );
    // Our server receives, then sends (-R), then refuses a UDP test and
    // receives again: sixteen connections in all, so the kernel's hash
    // puts some on each lane (all on one: odds of 2^-15).
    let doc = stock_client(&ns, &["-t", "3", "-P", "4"]);
    assert_sums_plausible(&doc, "-P 4");
    let doc = stock_client(&ns, &["-t", "2", "-P", "4", "-R"]);
    assert_sums_plausible(&doc, "-P 4 -R");
    // UDP tests run on one lane: the server refuses them, and goes on.
    let udp = ns.exec_bounded(30, "iperf3", &["-c", OURS, "-u", "-t", "1"]);
    assert!(!udp.status.success());
    let doc = stock_client(&ns, &["-t", "1", "-P", "4"]);
    assert_sums_plausible(&doc, "-P 4 after a refused UDP test");
    let done = app.stop_with(libc::SIGINT);
    drop(ns);
    let out = &done.stdout;
    assert_eq!(done.code, Some(0), "{out}\n{}", done.stderr);
    assert!(out.contains("UDP tests need a server on one lane"), "{out}");
    for lane in 0..2 {
        assert!(
            lane_counter(out, lane, "TcpPassiveOpens") > 0,
            "lane {lane}:\n{out}"
        );
    }
    // Four streams a test, each reported by the server.
    assert!(out.matches("receiver").count() >= 4, "{out}");
}

#[test]
fn our_client_refuses_udp_on_two_lanes() {
    // Refused before EAL starts: no port, no lcores needed.
    let out = std::process::Command::new(iperf_binary())
        .args([
            "--",
            "--ip",
            "10.211.0.1/24",
            "--nb-cores",
            "2",
            "-c",
            KERNEL,
            "-u",
        ])
        .output()
        .expect("dpstack-iperf");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("UDP tests run on one lane (--nb-cores 1)"),
        "{stderr}"
    );
}

/// Our client on two lanes (`-J`, `args`) against a stock `iperf3 -s -1
/// -J` in a namespace: both JSON documents, and our counters (on stderr:
/// -J keeps stdout to the document).
fn our_client(args: &[&str]) -> (Value, Value, String) {
    let iface = unique_name("dpcn");
    let vdev = format!("net_tap0,iface={iface}");
    let ip = format!("{OURS}/24");
    let mut all = vec![
        "--ip",
        &ip,
        "--no-dad",
        "--nb-cores",
        "2",
        "-c",
        KERNEL,
        "-J",
    ];
    all.extend_from_slice(args);
    let app = AppProcess::spawn(iperf_binary(), &three_lcores(&vdev), &all);
    // The tap exists once the app made it; the SYN it sent meanwhile is
    // sent again.
    common::require("ip");
    assert!(common::wait_until(Duration::from_secs(10), || {
        let out = std::process::Command::new("ip")
            .args(["-o", "link", "show", &iface])
            .output()
            .expect("ip");
        String::from_utf8_lossy(&out.stdout).contains("UP")
    }));
    std::thread::sleep(Duration::from_millis(300));
    let ns = kernel_side(
        "dpstack-iperf-lc-",
        &iface,
        KERNEL_MAC,
        &[&format!("{KERNEL}/24")],
    );
    let server = ns
        .command_bounded(40, "iperf3")
        .args(["-s", "-1", "-J"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("iperf3 -s");
    let done = app.wait_up_to(Duration::from_secs(40));
    if done.code != Some(0) {
        // Not waiting for a server that may never have been reached:
        // `timeout` passes the SIGTERM on to iperf3.
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &server.id().to_string()])
            .status();
    }
    let server = server.wait_with_output().expect("iperf3 -s ran");
    drop(ns);
    assert_eq!(done.code, Some(0), "ours: {}\n{}", done.stdout, done.stderr);
    let ours: Value = serde_json::from_str(&done.stdout[done.stdout.find('{').unwrap_or(0)..])
        .unwrap_or_else(|e| panic!("{e}: {}", done.stdout));
    let theirs: Value = serde_json::from_slice(&server.stdout).expect("iperf3 -s -J");
    (ours, theirs, done.stderr)
}

#[test]
fn our_client_on_two_lanes_tests_a_stock_server() {
    let (ours, theirs, counters) = our_client(&["-P", "4", "-t", "3"]);
    assert_sums_plausible(&ours, "ours");
    assert_eq!(theirs["end"]["streams"].as_array().map(Vec::len), Some(4));
    // Our receiver figure is the server's own count.
    assert_eq!(
        num(&ours, &["end", "sum_received", "bytes"]),
        num(&theirs, &["end", "sum_received", "bytes"])
    );
    // Lane 0 opened the control connection and streams 0 and 2 (ids 1 and
    // 4), lane 1 streams 1 and 3.
    assert_eq!(
        lane_counter(&counters, 0, "TcpActiveOpens"),
        3,
        "{counters}"
    );
    assert_eq!(
        lane_counter(&counters, 1, "TcpActiveOpens"),
        2,
        "{counters}"
    );
}

#[test]
fn our_client_on_two_lanes_receives_and_runs_both_ways() {
    // -R: the lanes receive; what we count is at most what the server sent.
    let (ours, _, counters) = our_client(&["-P", "4", "-t", "2", "-R"]);
    assert_sums_plausible(&ours, "-R");
    assert_eq!(
        lane_counter(&counters, 1, "TcpActiveOpens"),
        2,
        "{counters}"
    );
    // --bidir -P 2: streams 0 and 1 send, 2 and 3 receive, each pair
    // spread over both lanes.
    let (ours, _, _) = our_client(&["-P", "2", "-t", "2", "--bidir"]);
    let streams = ours["end"]["streams"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(streams.len(), 4, "{}", ours["end"]);
    for stream in &streams {
        let sent = num(stream, &["sender", "bytes"]);
        let received = num(stream, &["receiver", "bytes"]);
        assert!(
            sent > 1e5 && received <= sent && received >= sent * 0.5,
            "bidir: {stream}"
        );
    }
}
