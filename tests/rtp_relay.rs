//! `dpstack-rtp-relay` with a real RTP sender the project did not write:
//! GStreamer (`audiotestsrc ! mulawenc ! rtppcmupay ! udpsink`, Debian's
//! gstreamer1.0-tools and -plugins-base/-good, installed by scripts/setup)
//! in a network namespace the test creates, behind the relay's `net_tap`
//! port. A small Python receiver stands for leg B: it collects what the
//! relay forwards, then sends media back through leg B.
//!
//! Checked: the relay's counts for leg A equal what GStreamer sent (and
//! what the kernel counted as sent), nothing is lost or reordered on a
//! clean path, the receiver gets every packet from leg B's port, leg B's
//! media reaches leg A's peer; SIGUSR1 prints the statistics while it
//! runs; and with `--faults drop=0.05,dir=rx` on the relay's port, the
//! relay's statistics show about 5 % loss, matching the packets the
//! receiver never got.

mod common;

use common::{kernel_side, unique_name, AppProcess, Netns};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

const RELAY_IP: &str = "10.203.0.1";
const PEER_IP: &str = "10.203.0.2";
const PEER_MAC: &str = "02:00:00:00:03:02";
/// GStreamer's SSRC and its first sequence number (close to the wrap).
const SSRC: u32 = 0x1234_5678;
const FIRST_SEQ: u16 = 65_500;
/// Leg A: GStreamer sends to 30000 from 5004; leg B: the receiver at
/// 6000 is signalled in the configuration.
const CONFIG: &str = "# issue 8: one call\nsession call 30000 30002 b-peer=10.203.0.2:6000\n";
/// Packets the receiver sends back through leg B.
const BACK: u32 = 20;

/// A running relay and the namespace of its peers.
struct Setup {
    app: AppProcess,
    ns: Netns,
    _dir: TempDir,
}

/// A directory removed when dropped.
struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn start(extra: &[&str]) -> Setup {
    let iface = unique_name("dpsr");
    let vdev = format!("net_tap0,iface={iface}");
    let dir = std::env::temp_dir().join(unique_name("dpstack-rtp-relay-"));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let config = dir.join("sessions.conf");
    std::fs::write(&config, CONFIG).expect("config file");
    let ip = format!("{RELAY_IP}/24");
    let config = config.to_string_lossy().into_owned();
    let mut args = vec!["--ip", &ip, "--config", &config];
    args.extend_from_slice(extra);
    let app = AppProcess::spawn(
        env!("CARGO_BIN_EXE_dpstack-rtp-relay"),
        &common::child_eal_args(&[&vdev]),
        &args,
    );
    app.wait_for_output("relaying 1 session(s)");
    let ns = kernel_side(
        "dpstack-rtp-",
        &iface,
        PEER_MAC,
        &[&format!("{PEER_IP}/24")],
    );
    // ARP both ways before the media: a burst queued behind an ARP
    // resolution can leave the kernel out of order (the queue races the
    // packets sent after it), and the relay would queue its first
    // forwarded packets behind its own. A ping's ARP request teaches the
    // relay the peer's MAC and the kernel the relay's (a few tries: the
    // fault port may drop some).
    let ping = ns.exec("ping", &["-c", "3", "-i", "0.2", "-W", "1", RELAY_IP]);
    let ping = String::from_utf8_lossy(&ping.stdout).into_owned();
    assert!(!ping.contains(" 0 received"), "the relay answers: {ping}");
    Setup {
        app,
        ns,
        _dir: TempDir(dir),
    }
}

/// The receiver: binds leg B's peer address, prints `ready`, and on a line
/// on stdin takes every datagram queued (until 0.5 s of silence), sends
/// `BACK` RTP packets to leg B, and prints what it got: `received N ssrc
/// S first F gaps G from IP:PORT`.
const RECEIVER: &str = r#"
import socket, struct, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)   # SO_RCVBUFFORCE
s.bind(('PEER_IP', 6000))
print('ready', flush=True)
sys.stdin.readline()
s.settimeout(0.5)
n, gaps, first, last, ssrc, frm = 0, 0, None, None, 0, None
try:
    while True:
        d, a = s.recvfrom(4096)
        seq, = struct.unpack('!H', d[2:4])
        ssrc, = struct.unpack('!I', d[8:12])
        if last is not None and seq != (last + 1) & 0xffff:
            gaps += 1
        first = seq if first is None else first
        last, frm, n = seq, a, n + 1
except socket.timeout:
    pass
for i in range(BACK):
    hdr = struct.pack('!BBHII', 0x80, 8, 1000 + i, 160 * i, 0xb0b)
    s.sendto(hdr + bytes(160), ('RELAY_IP', 30002))
    time.sleep(0.005)
print('received %d ssrc %d first %s gaps %d from %s:%d' % (n, ssrc, first, gaps, frm[0] if frm else '-', frm[1] if frm else 0), flush=True)
"#;

/// The receiver's report.
#[derive(Debug)]
struct Received {
    packets: u64,
    ssrc: u32,
    first: Option<u16>,
    gaps: u64,
    from: String,
}

/// Runs GStreamer (`packets` G.711 packets of 20 ms, live or as fast as it
/// can) while the receiver listens; returns the datagrams the namespace's
/// kernel counted as sent (GStreamer's) and what the receiver got.
fn send_and_receive(ns: &Netns, packets: u32, live: bool) -> (u64, Received) {
    let script = RECEIVER
        .replace("PEER_IP", PEER_IP)
        .replace("RELAY_IP", RELAY_IP)
        .replace("BACK", &BACK.to_string());
    let mut receiver = Command::new("ip")
        .args(["netns", "exec", &ns.name, "timeout", "-k", "5", "120"])
        .args(["python3", "-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 (scripts/setup installs it)");
    let mut lines = BufReader::new(receiver.stdout.take().expect("piped")).lines();
    assert_eq!(lines.next().and_then(Result::ok).as_deref(), Some("ready"));
    let before = udp_out_datagrams(ns);
    let num_buffers = format!("num-buffers={packets}");
    let (is_live, sync) = if live {
        ("is-live=true", "sync=true")
    } else {
        ("is-live=false", "sync=false")
    };
    let ssrc = format!("ssrc={SSRC}");
    let seq = format!("seqnum-offset={FIRST_SEQ}");
    let host = format!("host={RELAY_IP}");
    // Bounded, like everything here: a stuck sender fails the test.
    let pipeline = [
        "-k",
        "5",
        "60",
        "gst-launch-1.0",
        "-q",
        "audiotestsrc",
        &num_buffers,
        "samplesperbuffer=160",
        is_live,
        "!",
        "audio/x-raw,rate=8000,channels=1",
        "!",
        "mulawenc",
        "!",
        "rtppcmupay",
        "min-ptime=20000000",
        "max-ptime=20000000",
        &ssrc,
        &seq,
        "!",
        "udpsink",
        &host,
        "port=30000",
        "bind-port=5004",
        sync,
    ];
    let gst = ns.exec("timeout", &pipeline);
    assert!(
        gst.status.success(),
        "gst-launch-1.0 (scripts/setup installs gstreamer1.0-tools) failed or timed out \
         ({}): {}{}",
        gst.status,
        String::from_utf8_lossy(&gst.stdout),
        String::from_utf8_lossy(&gst.stderr)
    );
    let sent = udp_out_datagrams(ns) - before;
    std::thread::sleep(std::time::Duration::from_millis(500));
    let mut stdin = receiver.stdin.take().expect("piped");
    stdin.write_all(b"go\n").expect("receiver stdin");
    let line = lines
        .next()
        .and_then(Result::ok)
        .expect("the receiver's report");
    let _ = receiver.wait();
    let word = |name: &str| -> String {
        let mut words = line.split_whitespace();
        words.find(|w| *w == name);
        words.next().unwrap_or_default().to_owned()
    };
    let received = Received {
        packets: word("received").parse().expect("count"),
        ssrc: word("ssrc").parse().expect("ssrc"),
        first: word("first").parse().ok(),
        gaps: word("gaps").parse().expect("gaps"),
        from: word("from"),
    };
    (sent, received)
}

/// The namespace kernel's `Udp: OutDatagrams`.
fn udp_out_datagrams(ns: &Netns) -> u64 {
    let out = ns.exec("cat", &["/proc/net/snmp"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines().filter(|l| l.starts_with("Udp:"));
    let (names, values) = (lines.next().unwrap_or(""), lines.next().unwrap_or(""));
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(n, _)| *n == "OutDatagrams")
        .and_then(|(_, v)| v.parse().ok())
        .expect("Udp OutDatagrams in /proc/net/snmp")
}

/// The integer after `name` on the last line starting with `prefix`.
fn figure(output: &str, prefix: &str, name: &str) -> i64 {
    output
        .lines()
        .rev()
        .filter(|l| l.starts_with(prefix))
        .find_map(|l| {
            let mut words = l.split_whitespace();
            words.find(|w| *w == name)?;
            words.next()?.parse().ok()
        })
        .unwrap_or_else(|| panic!("no {name} on a line starting {prefix:?} in:\n{output}"))
}

const LEG_A: &str = "session call leg A peer";
const LEG_B: &str = "session call leg B peer";

fn stream_a() -> String {
    format!("session call leg A ssrc {SSRC:#010x}")
}

#[test]
fn gstreamer_media_is_relayed_with_matching_counts() {
    const PACKETS: u32 = 150;
    let s = start(&[]);
    let (sent, received) = send_and_receive(&s.ns, PACKETS, true);
    assert_eq!(
        sent,
        u64::from(PACKETS),
        "GStreamer sent one packet per buffer"
    );
    assert_eq!(received.packets, sent, "every packet reached leg B's peer");
    assert_eq!(received.gaps, 0, "in order, none missing");
    assert_eq!(received.ssrc, SSRC, "untouched");
    assert_eq!(received.first, Some(FIRST_SEQ));
    assert_eq!(
        received.from,
        format!("{RELAY_IP}:30002"),
        "from leg B's port"
    );
    // Statistics on demand, while it runs.
    let app = s.app;
    // SAFETY: plain kill(2) on our own child's pid.
    unsafe { libc::kill(app_pid(&app), libc::SIGUSR1) };
    app.wait_for_output("relay drops:");
    let live = app.output_so_far();
    assert_eq!(figure(&live, &stream_a(), "packets"), i64::from(PACKETS));
    let done = app.stop_with(libc::SIGINT);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    let out = &done.stdout;
    let stream = stream_a();
    assert_eq!(figure(out, &stream, "packets"), sent as i64);
    assert_eq!(figure(out, &stream, "bytes"), 160 * sent as i64);
    // A.1 probation takes the first packet; the rest is counted and
    // expected (across the sequence number wrap).
    assert_eq!(figure(out, &stream, "expected"), sent as i64 - 1);
    assert_eq!(figure(out, &stream, "lost"), 0);
    assert_eq!(figure(out, &stream, "duplicates"), 0);
    assert_eq!(figure(out, &stream, "out-of-order"), 0);
    let jitter = figure(out, &stream, "jitter-units");
    assert!(
        jitter < 160,
        "jitter of a live 50 pps sender: {jitter} units"
    );
    assert_eq!(figure(out, LEG_A, "forwarded"), sent as i64);
    assert!(out.contains(&format!("{LEG_A} {PEER_IP}:5004 latched yes")));
    // Leg B: the receiver's packets, latched and sent to GStreamer's port.
    let stream_b = "session call leg B ssrc 0x00000b0b";
    assert_eq!(figure(out, stream_b, "packets"), i64::from(BACK));
    assert_eq!(figure(out, LEG_B, "forwarded"), i64::from(BACK));
    assert!(out.contains(&format!("{LEG_B} {PEER_IP}:6000 latched yes")));
    assert!(out.contains("relay drops: none"), "{out}");
}

#[test]
fn loss_injected_on_the_relay_port_shows_as_loss() {
    const PACKETS: u32 = 1000;
    let s = start(&["--faults", "drop=0.05,seed=11,dir=rx"]);
    let (sent, received) = send_and_receive(&s.ns, PACKETS, false);
    assert_eq!(sent, u64::from(PACKETS));
    let done = s.app.stop_with(libc::SIGINT);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    let out = &done.stdout;
    let stream = stream_a();
    let packets = figure(out, &stream, "packets");
    let lost = figure(out, &stream, "lost");
    let dropped_on_rx = sent as i64 - packets;
    // About 5 % of 1000 (binomial: 50 +- 7); the fault port's seed makes
    // it repeatable.
    assert!(
        (25..=80).contains(&lost),
        "lost {lost} of {sent} with 5 % dropped:\n{out}"
    );
    // Loss counts the holes between the first counted packet and the
    // highest: every dropped packet but any before the first two or after
    // the last one received.
    assert!(
        lost <= dropped_on_rx && dropped_on_rx - lost <= 3,
        "lost {lost}, {dropped_on_rx} never arrived:\n{out}"
    );
    assert_eq!(figure(out, &stream, "duplicates"), 0);
    // What arrived was all forwarded (only receiving is faulty), and the
    // receiver saw the same holes.
    assert_eq!(figure(out, LEG_A, "forwarded"), packets, "{out}");
    assert_eq!(received.packets as i64, packets, "{out}");
    assert!(received.gaps > 0);
    assert!(
        out.contains("faults on port 0: dropped"),
        "the fault port reports: {out}"
    );
}

/// The pid the relay printed on its start line.
fn app_pid(app: &AppProcess) -> i32 {
    let output = app.output_so_far();
    output
        .split("; pid ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("no pid on the start line:\n{output}"))
}
