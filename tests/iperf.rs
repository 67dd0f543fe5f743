//! `dpstack-iperf` with stock `iperf3` (Debian's 3.12) as its peer, in a
//! network namespace the test creates and reaches through a `net_tap` port:
//! stock clients against our server and our client against a stock server,
//! TCP and UDP, `-R`, `-P 4`, `--bidir`, both sides' figures compared; a
//! busy server, malformed parameters, a wrong data-stream cookie, a client
//! that vanishes; and dpstack-iperf against itself over `net_memif` (`-J`),
//! with loss injected on the client's transmit and on the server's receive side.

mod common;

use common::{child_eal_args, unique_name, AppProcess, Netns, RemoveOnDrop};
use serde_json::Value;
use std::time::Duration;

const OURS: &str = "10.210.0.1";
const KERNEL: &str = "10.210.0.2";
const OURS6: &str = "2001:db8:210::1";
const KERNEL6: &str = "2001:db8:210::2";
const KERNEL_MAC: &str = "02:00:00:00:02:10";

fn iperf_binary() -> &'static str {
    env!("CARGO_BIN_EXE_dpstack-iperf")
}

/// Our server on a tap whose kernel side is in a fresh namespace.
fn our_server(extra: &[&str]) -> (AppProcess, Netns) {
    let iface = unique_name("dpsi");
    let vdev = format!("net_tap0,iface={iface}");
    let (ip, ip6) = (format!("{OURS}/24"), format!("{OURS6}/64"));
    let mut args = vec!["--ip", &ip, "--ip", &ip6, "--no-dad", "-s"];
    args.extend_from_slice(extra);
    let app = AppProcess::spawn(iperf_binary(), &child_eal_args(&[&vdev]), &args);
    app.wait_for_output("Server listening on 5201");
    let (kernel, kernel6) = (format!("{KERNEL}/24"), format!("{KERNEL6}/64"));
    let ns = common::kernel_side("dpstack-iperf-s-", &iface, KERNEL_MAC, &[&kernel, &kernel6]);
    (app, ns)
}

/// Runs stock `iperf3 -c OURS -J args` in the namespace; its JSON document.
fn stock_client(ns: &Netns, args: &[&str]) -> Value {
    let mut all = vec!["-c", OURS, "-J"];
    all.extend_from_slice(args);
    let out = ns.exec("iperf3", &all);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert!(out.status.success(), "iperf3 {args:?} failed: {text}");
    doc
}

fn num(v: &Value, path: &[&str]) -> f64 {
    let mut v = v;
    for key in path {
        v = &v[*key];
    }
    v.as_f64()
        .unwrap_or_else(|| panic!("no number at {path:?} in {v}"))
}

/// TCP: what the receiver counted is what the sender wrote, less what was
/// still in flight at the end (at most a few windows).
fn assert_tcp_agrees(doc: &Value, what: &str) {
    assert_tcp_agrees_within(doc, what, 0.9);
}

/// [`assert_tcp_agrees`] with at least `share` of the bytes received: with
/// several streams, each has its window and send buffer in flight when a
/// one-second test ends (88% was seen with -P 4 on a loaded machine).
fn assert_tcp_agrees_within(doc: &Value, what: &str, share: f64) {
    let sent = num(doc, &["end", "sum_sent", "bytes"]);
    let received = num(doc, &["end", "sum_received", "bytes"]);
    assert!(sent > 1e6, "{what}: only {sent} bytes sent");
    assert!(
        received <= sent && received >= sent * share,
        "{what}: sent {sent}, received {received}"
    );
}

#[test]
fn stock_iperf3_clients_test_our_server() {
    let (app, ns) = our_server(&[]);
    let doc = stock_client(&ns, &["-t", "1"]);
    assert_tcp_agrees(&doc, "TCP");
    let doc = stock_client(&ns, &["-t", "1", "-R"]);
    assert_tcp_agrees(&doc, "TCP -R");
    // Over IPv6 too.
    let out = ns.exec("iperf3", &["-c", OURS6, "-J", "-t", "1"]);
    let doc: Value = serde_json::from_slice(&out.stdout).expect("iperf3 -J over IPv6");
    assert_tcp_agrees(&doc, "TCP over IPv6");
    let out = ns.exec("iperf3", &["-c", OURS6, "-J", "-t", "1", "-u", "-b", "5M"]);
    let doc: Value = serde_json::from_slice(&out.stdout).expect("iperf3 -J -u over IPv6");
    assert!(
        num(&doc["end"]["sum"], &["packets"]) > 100.0,
        "UDP over IPv6: {}",
        doc["end"]
    );
    let doc = stock_client(&ns, &["-t", "1", "-P", "4"]);
    assert_tcp_agrees_within(&doc, "TCP -P 4", 0.75);
    assert_eq!(doc["end"]["streams"].as_array().map(Vec::len), Some(4));
    let doc = stock_client(&ns, &["-t", "1", "--bidir"]);
    assert_eq!(doc["end"]["streams"].as_array().map(Vec::len), Some(2));
    for stream in doc["end"]["streams"].as_array().into_iter().flatten() {
        let sent = num(stream, &["sender", "bytes"]);
        let received = num(stream, &["receiver", "bytes"]);
        // Each way shares the tap with the other: more is in flight at the end.
        assert!(
            sent > 1e6 && received <= sent && received >= sent * 0.5,
            "bidir: {stream}"
        );
    }
    // UDP at a rate the tap carries: the receiver counts the datagrams the
    // sender sent (the tap may drop a few when the machine is loaded).
    for args in [
        &["-u", "-t", "1", "-b", "20M"][..],
        &["-u", "-t", "1", "-b", "10M", "-R"],
    ] {
        let doc = stock_client(&ns, args);
        let sum = &doc["end"]["sum"];
        let (packets, lost) = (num(sum, &["packets"]), num(sum, &["lost_packets"]));
        assert!(packets > 100.0, "{args:?}: {sum}");
        assert!(lost <= packets * 0.02, "{args:?}: {sum}");
        let sent = num(&doc["end"]["sum_sent"], &["packets"]);
        assert!(
            packets <= sent && packets >= sent * 0.98,
            "{args:?}: {packets} of {sent}"
        );
    }
    let doc = stock_client(
        &ns,
        &[
            "-u",
            "-t",
            "1",
            "-b",
            "5M",
            "-P",
            "4",
            "--udp-counters-64bit",
        ],
    );
    let sum = &doc["end"]["sum"];
    assert!(
        num(sum, &["lost_packets"]) <= num(sum, &["packets"]) * 0.02,
        "{sum}"
    );
    let done = app.stop_with(libc::SIGINT);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert!(
        done.stdout.contains("Server listening on 5201 (test #10)"),
        "{}",
        done.stdout
    );
    assert!(done.stdout.contains("receiver"), "{}", done.stdout);
}

#[test]
fn a_second_client_is_told_the_server_is_busy() {
    let (app, ns) = our_server(&[]);
    // A test in the background, and a second client meanwhile.
    let mut long = ns
        .command("iperf3")
        .args(["-c", OURS, "-t", "4"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("iperf3");
    std::thread::sleep(Duration::from_millis(1500));
    let second = ns.exec("iperf3", &["-c", OURS, "-t", "1"]);
    let text = String::from_utf8_lossy(&second.stderr).into_owned()
        + &String::from_utf8_lossy(&second.stdout);
    assert!(!second.status.success());
    assert!(text.contains("the server is busy running a test"), "{text}");
    assert!(
        long.wait().expect("iperf3 ran").success(),
        "the first test was disturbed"
    );
    drop(app);
}

/// Speaks iperf3's control protocol by hand (python3 in the namespace):
/// `script` gets a connected socket `s` and the cookie `c`.
fn raw_client(ns: &Netns, script: &str) -> String {
    let program = format!(
        "import socket,struct,time\n\
         s=socket.create_connection(('{OURS}',5201),timeout=5)\n\
         c=b'a'*36+b'\\0'\n\
         def closed(s):\n try: return s.recv(10)==b''\n except ConnectionResetError: return True\n\
         {script}\n"
    );
    let out = ns.exec("python3", &["-c", &program]);
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn bad_clients_end_their_test_and_the_next_one_is_served() {
    let (app, ns) = our_server(&["--setup-timeout", "2"]);
    // Malformed parameters.
    let out = raw_client(
        &ns,
        "s.sendall(c); print('state', s.recv(1)[0]); j=b'{\"tcp\":tru'\n\
         s.sendall(struct.pack('>I',len(j))+j); print('eof', closed(s))",
    );
    assert!(out.contains("state 9") && out.contains("eof True"), "{out}");
    // Oversized parameters (more than 8 KiB announced).
    let out = raw_client(
        &ns,
        "s.sendall(c); s.recv(1); s.sendall(struct.pack('>I',100000)); print('eof', closed(s))",
    );
    assert!(out.contains("eof True"), "{out}");
    // A data stream with a wrong cookie is refused with ACCESS_DENIED.
    let out = raw_client(
        &ns,
        "s.sendall(c); s.recv(1); j=b'{\"tcp\":true,\"parallel\":1,\"time\":1,\"len\":1000,\"unknown_key\":[1]}'\n\
         s.sendall(struct.pack('>I',len(j))+j); print('state', s.recv(1)[0])\n\
         d=socket.create_connection(('10.210.0.1',5201),timeout=5); d.sendall(b'b'*36+b'\\0')\n\
         print('data', d.recv(1)[0])",
    );
    assert!(
        out.contains("state 10") && out.contains("data 255"),
        "{out}"
    );
    // A client that vanishes mid-test.
    let mut vanishing = ns
        .command("iperf3")
        .args(["-c", OURS, "-t", "10"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("iperf3");
    std::thread::sleep(Duration::from_millis(1500));
    let _ = vanishing.kill();
    let _ = vanishing.wait();
    // A client that connects and never starts: the server gives up on it.
    let out = raw_client(&ns, "time.sleep(3); print('eof', closed(s))");
    assert!(out.contains("eof True"), "{out}");
    // The server serves the next client as if nothing happened.
    assert!(common::wait_until(Duration::from_secs(15), || {
        ns.exec("iperf3", &["-c", OURS, "-t", "1"]).status.success()
    }));
    let done = app.stop_with(libc::SIGINT);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    for message in [
        "parameters refused: malformed JSON",
        "parameters refused: a 100000-byte JSON message",
        "a data connection with a wrong cookie was refused",
        "the client has unexpectedly closed the connection",
        "the client did not go on within 2 s (waiting for its cookie)",
    ] {
        assert!(
            done.stdout.contains(message),
            "no '{message}' in:\n{}",
            done.stdout
        );
    }
}

/// Our client (`-J`) against a stock `iperf3 -s -1 -J` in a namespace; both
/// JSON documents.
fn our_client(args: &[&str]) -> (Value, Value) {
    let iface = unique_name("dpsj");
    let vdev = format!("net_tap0,iface={iface}");
    let ip = format!("{OURS}/24");
    let mut all = vec!["--ip", &ip, "--no-dad", "-c", KERNEL, "-J"];
    all.extend_from_slice(args);
    let app = AppProcess::spawn(iperf_binary(), &child_eal_args(&[&vdev]), &all);
    // The port is configured once its tap is up; then it is safe to move.
    // Not `run`: the tap does not exist until the app has made it.
    common::require("ip");
    assert!(common::wait_until(Duration::from_secs(10), || {
        let out = std::process::Command::new("ip")
            .args(["-o", "link", "show", &iface])
            .output()
            .expect("ip");
        String::from_utf8_lossy(&out.stdout).contains("UP")
    }));
    std::thread::sleep(Duration::from_millis(300));
    let kernel = format!("{KERNEL}/24");
    let ns = common::kernel_side("dpstack-iperf-c-", &iface, KERNEL_MAC, &[&kernel]);
    let server = ns
        .command("iperf3")
        .args(["-s", "-1", "-J"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("iperf3 -s");
    let done = app.wait();
    let server = server.wait_with_output().expect("iperf3 -s ran");
    assert_eq!(done.code, Some(0), "ours: {}\n{}", done.stdout, done.stderr);
    let ours: Value = serde_json::from_str(&done.stdout[done.stdout.find('{').unwrap_or(0)..])
        .unwrap_or_else(|e| panic!("{e}: {}", done.stdout));
    let theirs: Value = serde_json::from_slice(&server.stdout).expect("iperf3 -s -J");
    (ours, theirs)
}

#[test]
fn our_client_tests_a_stock_iperf3_server() {
    let (ours, theirs) = our_client(&["-t", "2"]);
    assert_tcp_agrees(&ours, "TCP");
    // Our receiver figure is the server's own count.
    assert_eq!(
        num(&ours, &["end", "sum_received", "bytes"]),
        num(&theirs, &["end", "sum_received", "bytes"])
    );
    for key in ["start", "intervals", "end"] {
        assert!(ours.get(key).is_some(), "no {key}");
    }
    assert!(ours["start"]["test_start"]["protocol"] == "TCP");
    // The control connection's MSS on the tap (MTU 1500, timestamps on).
    let mss = num(&ours, &["start", "tcp_mss_default"]);
    assert!((1400.0..=1460.0).contains(&mss), "tcp_mss_default {mss}");
    assert!(ours["intervals"].as_array().is_some_and(|i| i.len() >= 2));
}

#[test]
fn our_client_runs_reverse_parallel_bidirectional_and_udp_tests() {
    let (ours, _) = our_client(&["-t", "1", "-R"]);
    assert_tcp_agrees(&ours, "-R");
    let (ours, theirs) = our_client(&["-t", "1", "-P", "4"]);
    assert_tcp_agrees_within(&ours, "-P 4", 0.75);
    assert_eq!(theirs["end"]["streams"].as_array().map(Vec::len), Some(4));
    let (ours, _) = our_client(&["-t", "1", "--bidir"]);
    assert_eq!(ours["end"]["streams"].as_array().map(Vec::len), Some(2));
    let (ours, theirs) = our_client(&["-u", "-t", "1", "-b", "20M"]);
    // The stock server saw the datagrams we sent (the tap may drop a few,
    // the last ones too, when the machine is loaded).
    let sent = num(&ours, &["end", "sum_sent", "packets"]);
    assert!(sent > 1000.0, "{sent}");
    let highest = num(&theirs, &["end", "sum", "packets"]);
    assert!(
        highest <= sent && highest >= sent * 0.98,
        "sent {sent}, highest {highest}"
    );
    assert!(num(&theirs, &["end", "sum", "lost_packets"]) <= sent * 0.02);
    // Reverse: we count what the stock server sent.
    let (ours, theirs) = our_client(&["-u", "-t", "1", "-b", "10M", "-R"]);
    let received = &ours["end"]["sum_received"];
    let packets = num(received, &["packets"]);
    assert!(packets > 500.0, "{received}");
    let sent = num(&theirs, &["end", "sum_sent", "packets"]);
    assert!(
        packets <= sent && packets >= sent * 0.98,
        "sent {sent}, highest {packets}"
    );
    assert!(
        num(received, &["lost_packets"]) <= packets * 0.02,
        "{received}"
    );
}

/// Runs dpstack-iperf against itself over `net_memif`: a 2 s UDP test at
/// 50 Mbit/s from client to server, with `--faults SPEC` on the server's
/// port and/or the client's (`reverse`: `-R`, from server to client).
/// Returns the datagrams the receiver counted as received and lost, from
/// the client's `-J` report.
fn udp_over_memif(
    server_faults: Option<&str>,
    client_faults: Option<&str>,
    reverse: bool,
) -> (f64, f64) {
    let (packets, lost, _) = udp_over_memif_with_faults(server_faults, client_faults, reverse);
    (packets, lost)
}

/// [`udp_over_memif`], also returning how many frames the client's fault
/// port dropped (from its `faults:` line; 0 without one).
fn udp_over_memif_with_faults(
    server_faults: Option<&str>,
    client_faults: Option<&str>,
    reverse: bool,
) -> (f64, f64, u64) {
    let socket = format!("/tmp/{}.sock", unique_name("dpstack-iperf-"));
    let _ = std::fs::remove_file(&socket);
    let _cleanup = RemoveOnDrop::new(&socket);
    let vdev = |role: &str| format!("net_memif0,role={role},socket={socket},socket-abstract=no");
    let faults = |spec: Option<&str>| match spec {
        Some(spec) => vec!["--faults".to_string(), spec.to_string()],
        None => Vec::new(),
    };
    let mut server_args = vec!["--ip", "10.211.0.1/24", "--no-dad", "-s"];
    let server_faults = faults(server_faults);
    server_args.extend(server_faults.iter().map(String::as_str));
    let server = AppProcess::spawn(
        iperf_binary(),
        &child_eal_args(&[&vdev("server")]),
        &server_args,
    );
    server.wait_for_output("Server listening");
    let mut client_args = vec![
        "--ip",
        "10.211.0.2/24",
        "--no-dad",
        "-c",
        "10.211.0.1",
        "-u",
        "-b",
        "50M",
        "-t",
        "2",
        "-J",
        "--hold",
    ];
    let client_faults = faults(client_faults);
    client_args.extend(client_faults.iter().map(String::as_str));
    if reverse {
        client_args.push("-R");
    }
    let client = AppProcess::spawn(
        iperf_binary(),
        &child_eal_args(&[&vdev("client")]),
        &client_args,
    );
    // The client holds its port after the test: the server stops first, so
    // neither polls while its memif peer disconnects (DPDK 22.11's memif).
    assert!(common::wait_until(Duration::from_secs(30), || client
        .output_so_far()
        .contains("\"end\"")));
    std::thread::sleep(Duration::from_millis(300));
    let server = server.stop_with(libc::SIGINT);
    let client = client.stop_with(libc::SIGINT);
    assert_eq!(server.code, Some(0), "{}", server.stderr);
    let doc: Value = serde_json::from_str(&client.stdout[client.stdout.find('{').unwrap_or(0)..])
        .unwrap_or_else(|e| panic!("{e}: {}", client.stdout));
    let sum = &doc["end"]["sum_received"];
    let (packets, lost) = (num(sum, &["packets"]), num(sum, &["lost_packets"]));
    assert!(packets > 5000.0, "{sum}");
    let dropped = client
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("faults: dropped "))
        .and_then(|rest| rest.split(' ').next())
        .map_or(0, |n| n.parse().expect("a count"));
    (packets, lost, dropped)
}

#[test]
fn dpstack_iperf_tests_itself_over_memif_through_injected_loss() {
    // 2% of the client's outgoing datagrams dropped: the server must see
    // them as lost, and the client's report must say so.
    let (packets, lost) = udp_over_memif(None, Some("drop=0.02,seed=5,dir=tx"), false);
    let percent = 100.0 * lost / packets;
    assert!(
        (1.0..3.0).contains(&percent),
        "{lost} of {packets} lost ({percent:.2}%)"
    );
}

#[test]
fn dpstack_iperf_over_memif_counts_loss_injected_on_receive() {
    // The same 2%, dropped as the server receives them: no more, no less
    // (a fault port that lost or stranded frames of its own would show).
    let (packets, lost) = udp_over_memif(Some("drop=0.02,seed=5,dir=rx"), None, false);
    let percent = 100.0 * lost / packets;
    assert!(
        (1.0..3.0).contains(&percent),
        "{lost} of {packets} lost ({percent:.2}%)"
    );
    // And reordering on receive loses nothing.
    let (packets, lost) = udp_over_memif(Some("reorder=0.02,seed=5,dir=rx"), None, false);
    assert!(lost <= packets * 0.001, "{lost} of {packets} lost");
}

#[test]
fn a_reverse_test_over_memif_counts_from_the_first_datagram() {
    // With -R the server starts sending as it sends TEST_START: datagrams
    // that overtake that state byte are the test's, not lost.
    let (packets, lost) = udp_over_memif(None, None, true);
    assert!(lost <= packets * 0.001, "{lost} of {packets} lost");
    // 2% dropped as the client receives: about 2% lost.
    let (packets, lost, dropped) =
        udp_over_memif_with_faults(None, Some("drop=0.02,seed=5,dir=rx"), true);
    // The client says what its fault port dropped: that is the loss.
    assert!(
        (lost - dropped as f64).abs() <= packets * 0.002,
        "lost {lost}, fault port dropped {dropped}"
    );
    let percent = 100.0 * lost / packets;
    assert!(
        (1.0..3.0).contains(&percent),
        "{lost} of {packets} lost ({percent:.2}%)"
    );
}
