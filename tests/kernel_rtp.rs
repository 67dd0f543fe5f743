//! `dpstack-kernel-rtp` end to end on loopback, inside a network namespace
//! the test creates (its own port space, so the fixed ports are free):
//! `relay` for a few sessions with leg B's peers signalled, `sink` bound on
//! those peers, and `send` at a low rate for a short time.
//!
//! Checked: leg A forwarded exactly what `send` sent, per leg in the
//! totals and per session (round robin: each session its share) with
//! clean RFC 3550 figures (no loss, no reordering, no duplicates), leg B
//! nothing, no drops; and the sink received every packet, all RTP.

mod common;

use common::{run, unique_name, wait_until, Netns};
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const BINARY: &str = env!("CARGO_BIN_EXE_dpstack-kernel-rtp");
const SESSIONS: u64 = 5;
const PORT_BASE: &str = "30000";
const SINK_BASE: &str = "127.0.0.1:40000";

/// A child process inside the namespace; killed when dropped. Its output
/// is collected by a thread.
struct Proc {
    child: Child,
    output: Arc<Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Proc {
    fn start(ns: &Netns, args: &[&str]) -> Proc {
        let mut child = ns
            .command(BINARY)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn dpstack-kernel-rtp");
        let output = Arc::new(Mutex::new(String::new()));
        let stdout = child.stdout.take().expect("stdout");
        let sink = Arc::clone(&output);
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let mut text = sink.lock().unwrap();
                text.push_str(&line);
                text.push('\n');
            }
        });
        Proc {
            child,
            output,
            reader: Some(reader),
        }
    }

    fn text(&self) -> String {
        self.output.lock().unwrap().clone()
    }

    fn wait_for(&self, needle: &str) {
        let found = wait_until(Duration::from_secs(10), || self.text().contains(needle));
        assert!(
            found,
            "no '{needle}' from dpstack-kernel-rtp:\n{}",
            self.text()
        );
    }

    /// Stops it with SIGINT and returns everything it printed.
    fn stop(mut self) -> String {
        run("kill", &["-INT", &self.child.id().to_string()]);
        self.finish()
    }

    /// Waits for it to exit and returns everything it printed.
    fn finish(&mut self) -> String {
        let exited = wait_until(Duration::from_secs(10), || {
            matches!(self.child.try_wait(), Ok(Some(_)))
        });
        assert!(exited, "dpstack-kernel-rtp did not exit:\n{}", self.text());
        let status = self.child.wait().expect("wait");
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        assert!(status.success(), "exit {status}:\n{}", self.text());
        self.text()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The integer after `name ` in the first line starting with `prefix`.
fn field(text: &str, prefix: &str, name: &str) -> u64 {
    let line = text
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line '{prefix}' in:\n{text}"));
    let mut words = line.split_whitespace();
    words
        .find(|w| *w == name)
        .and_then(|_| words.next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no '{name}' in '{line}'"))
}

#[test]
fn relays_every_packet_sent_and_the_sink_gets_them() {
    let ns = Netns::create(&unique_name("dpskrtp"));
    run("ip", &["-n", &ns.name, "link", "set", "lo", "up"]);
    let sessions = SESSIONS.to_string();
    let relay = Proc::start(
        &ns,
        &[
            "relay",
            "--sessions",
            &sessions,
            "--port-base",
            PORT_BASE,
            "--b-peer-base",
            SINK_BASE,
            "--list",
            "100",
        ],
    );
    relay.wait_for("relaying 5 session(s)");
    let sink = Proc::start(&ns, &["sink", "--sessions", &sessions, "--base", SINK_BASE]);
    sink.wait_for("sinking on 5 port(s)");
    let mut send = Proc::start(
        &ns,
        &[
            "send",
            "--sessions",
            &sessions,
            "--port-base",
            PORT_BASE,
            "--pps",
            "500",
            "--seconds",
            "1.5",
            "--batch",
            "8",
        ],
    );
    let sent_text = send.finish();
    let sent = field(&sent_text, "sent ", "sent");
    assert!(
        (600..=800).contains(&sent),
        "about 750 packets at 500 pps for 1.5 s:\n{sent_text}"
    );
    // Let the last packets cross before stopping.
    std::thread::sleep(Duration::from_millis(300));
    let report = relay.stop();
    let sunk = sink.stop();

    assert_eq!(
        field(&report, "total leg A ", "forwarded"),
        sent,
        "{report}"
    );
    assert_eq!(field(&report, "total leg B ", "forwarded"), 0, "{report}");
    assert_eq!(field(&report, "total sessions ", "dropped"), 0, "{report}");
    assert_eq!(
        field(&report, "total sessions ", "active"),
        SESSIONS,
        "{report}"
    );
    assert!(report.contains("relay drops: none"), "{report}");
    for i in 0..SESSIONS {
        let share = sent / SESSIONS + u64::from(i < sent % SESSIONS);
        let leg = format!("session s{i} leg A peer");
        assert_eq!(field(&report, &leg, "forwarded"), share, "{report}");
        let ssrc = format!("session s{i} leg A ssrc {:#010x}", 0x5000_0000 + i);
        assert_eq!(field(&report, &ssrc, "packets"), share, "{report}");
        assert_eq!(field(&report, &ssrc, "lost"), 0, "{report}");
        assert_eq!(field(&report, &ssrc, "out-of-order"), 0, "{report}");
        assert_eq!(field(&report, &ssrc, "duplicates"), 0, "{report}");
        let b_peer = format!("session s{i} leg B peer 127.0.0.1:{} ", 40000 + 2 * i);
        assert!(
            report.contains(&b_peer),
            "signalled B peer of s{i}:\n{report}"
        );
    }
    assert_eq!(field(&sunk, "sink received", "received"), sent, "{sunk}");
    assert_eq!(field(&sunk, "sink received", "rtp"), sent, "{sunk}");
}
