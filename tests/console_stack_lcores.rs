//! `dpstack-console` in stack mode on two forwarding lcores
//! (`--nb-cores=2 --rxq=2 --txq=2`): one pipeline per lcore, each polling
//! its queue of a 2-queue `net_tap` whose kernel side is in a namespace of
//! its own (deleted when the test ends; the console is killed likewise).
//! The kernel spreads its flows over the tap's queues by hash, so the
//! kernel's pings, 32 UDP flows and 32 TCP connections land on both
//! pipelines: every one is answered, `show tcp` shows connections owned
//! by each lcore and `show counters` per-lcore figures on both.

mod common;

use common::{kernel_side, unique_name, Prompt};
use dpstack::eal::EalArgs;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

const STACK_IP: &str = "10.205.0.1";
const KERNEL_IP: &str = "10.205.0.2";
const KERNEL_MAC: &str = "02:00:00:00:02:05";
/// The forwarding lcores: EAL's main lcore is 0, its workers 1 and 2.
const LCORES: [&str; 2] = ["1", "2"];

/// A console at its prompt on `vdev`, with a main and two worker lcores.
struct Console;

impl Console {
    fn start(vdev: &str, app: &[&str]) -> Prompt {
        Prompt::start(&EalArgs::for_test(3).vdev(vdev).to_vec().split_off(1), app)
    }
}

fn assert_has(text: &str, needle: &str) {
    assert!(text.contains(needle), "no {needle:?} in:\n{text}");
}

/// 32 UDP flows (32 source ports) to `IP:7`, one datagram each; prints
/// how many came back intact.
const UDP_PEER: &str = r#"
import select, socket, sys
target = sys.argv[1]
socks = []
for i in range(32):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", 0))
    s.sendto(b"flow %d" % i, (target, 7))
    socks.append((s, b"flow %d" % i))
answered = set()
while len(answered) < len(socks):
    ready, _, _ = select.select([s for s, _ in socks], [], [], 3.0)
    if not ready:
        break
    for s in ready:
        data = s.recv(100)
        for i, (t, sent) in enumerate(socks):
            if t is s and data == sent:
                answered.add(i)
print(len(answered))
"#;

/// 32 TCP connections to `IP:7`, each sending 20,000 bytes of its own and
/// checking the echo by digest; prints `ready N` (N intact) and holds them
/// open until its stdin ends, then closes them and prints `closed`.
const TCP_PEER: &str = r#"
import hashlib, os, socket, sys
target = sys.argv[1]
conns = []
for i in range(32):
    c = socket.create_connection((target, 7), timeout=10)
    conns.append(c)
intact = 0
for c in conns:
    data = os.urandom(20000)
    c.sendall(data)
    got = b""
    while len(got) < len(data):
        more = c.recv(65536)
        if not more:
            break
        got += more
    if hashlib.sha256(got).digest() == hashlib.sha256(data).digest():
        intact += 1
print("ready %d" % intact, flush=True)
sys.stdin.read()
for c in conns:
    c.close()
print("closed", flush=True)
"#;

/// The per-lcore figures of counter `name` in `show counters` (the
/// columns after the total).
fn per_lcore(counters: &str, name: &str) -> Vec<u64> {
    let line = counters
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no {name} in:\n{counters}"));
    line.split_whitespace()
        .skip(2)
        .map(|v| v.parse().expect("a number"))
        .collect()
}

#[test]
fn stack_mode_on_two_lcores_answers_the_kernel_from_both() {
    let iface = unique_name("dpsl");
    let vdev = format!("net_tap0,iface={iface}");
    let mut console = Console::start(
        &vdev,
        &[
            "--forward-mode=stack",
            "--stack-ip",
            &format!("0,{STACK_IP}/24"),
            "--nb-cores=2",
            "--rxq=2",
            "--txq=2",
        ],
    );
    let ns = kernel_side(
        "dpstack-csl-",
        &iface,
        KERNEL_MAC,
        &[&format!("{KERNEL_IP}/24")],
    );
    let started = console.say("start");
    assert_has(&started, "stack packet forwarding - ports=1");
    assert_has(&started, "nb forwarding cores=2");

    // Pings from the kernel, answered by whichever pipeline gets them.
    let out = ns.exec("ping", &["-c", "3", "-i", "0.2", "-W", "2", STACK_IP]);
    assert_has(
        &String::from_utf8_lossy(&out.stdout),
        "3 packets transmitted, 3 received",
    );

    // The console's ping runs on the home lcore; its replies are taken on
    // whichever queue they land.
    let ping = console.say(&format!("ping {KERNEL_IP} count 3"));
    assert_has(&ping, "3 packets transmitted, 3 received, 0% packet loss");

    assert_eq!(
        console.say("udp-echo start 7"),
        "UDP echo started on [::]:7\n"
    );
    let out = ns.exec("python3", &["-c", UDP_PEER, STACK_IP]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "32",
        "UDP flows answered; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    assert_eq!(
        console.say("tcp-echo start 7"),
        "TCP echo started on [::]:7\n"
    );
    let mut peer = ns
        .command("python3")
        .args(["-c", TCP_PEER, STACK_IP])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut lines = BufReader::new(peer.stdout.take().expect("piped")).lines();
    let ready = lines.next().and_then(Result::ok).unwrap_or_default();
    assert_eq!(ready, "ready 32", "TCP connections echoed intact");

    // Every connection is listed, each with the lcore that owns it.
    let tcp = console.say("show tcp");
    assert_has(&tcp, "TCP: 2 listening, 32 connections: ESTABLISHED 32\n");
    let owners: BTreeSet<String> = tcp
        .lines()
        .filter(|l| l.starts_with("ESTABLISHED"))
        .filter_map(|l| l.split_whitespace().nth(7).map(str::to_owned))
        .collect();
    assert_eq!(
        owners,
        LCORES.iter().map(|l| l.to_string()).collect(),
        "{tcp}"
    );
    let sockets = console.say("show sockets");
    assert_eq!(sockets.matches("\ntcp   LISTEN ").count(), 2, "{sockets}");
    assert_eq!(sockets.matches("\ntcp   ESTAB ").count(), 32, "{sockets}");

    drop(peer.stdin.take());
    let closed = lines.next().and_then(Result::ok).unwrap_or_default();
    assert_eq!(closed, "closed");
    let _ = peer.wait();

    // The total, then a column per lcore: both pipelines did their part.
    let counters = console.say("show counters");
    let header = counters.lines().next().unwrap_or_default();
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["total", "lcore", LCORES[0], "lcore", LCORES[1]],
        "{counters}"
    );
    for name in ["EthInFrames", "UdpInDatagrams", "TcpPassiveOpens"] {
        let each = per_lcore(&counters, name);
        assert_eq!(each.len(), 2, "{counters}");
        assert!(each.iter().all(|&v| v > 0), "{name} on both:\n{counters}");
    }
    assert_eq!(
        console.say("udp-echo stop 7"),
        "UDP echo stopped on port 7\n"
    );
    assert_eq!(
        console.say("tcp-echo stop 7"),
        "TCP echo stopped on port 7\n"
    );
    // The RTP relay's state is one handler's: it runs on one lcore only.
    assert_eq!(
        console.say("rtp-relay start --sessions 2 --port-base 30000 --echo"),
        "Error: the RTP relay runs on one lcore: set nbcore 1\n"
    );
    let stopped = console.say("stop");
    assert_has(&stopped, "Accumulated forward statistics for all ports");
    // Each pipeline's port figures are a stream of its own (port 0, queue
    // 0 and queue 1), shown as testpmd shows streams when there are more
    // than ports, and only if they moved packets: both did.
    assert_has(&stopped, "Forward Stats for RX Port= 0/Queue= 0");
    assert_has(&stopped, "Forward Stats for RX Port= 0/Queue= 1");
    writeln!(console.stdin, "quit").expect("write quit");
    let out = console.app.wait();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    drop(ns);
}

#[test]
fn stack_mode_needs_an_rx_queue_per_lcore() {
    let mut console = Console::start(
        "net_null0",
        &["--forward-mode=stack", "--nb-cores=2", "--txq=2"],
    );
    assert_has(
        &console.say("start"),
        "stack mode runs a pipeline per lcore on its queue of each port: 2 lcore(s) need 2 rx \
         queue(s) and at least 2 tx queue(s)",
    );
    assert_eq!(
        console.say("show tcp"),
        "Stack not running: set fwd stack, then start\n"
    );
    writeln!(console.stdin, "quit").expect("write quit");
    let out = console.app.wait();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
}
