//! `dpstack-console` on several forwarding lcores with several queues per
//! port, as testpmd runs: every engine on 2 lcores, streams laid out and
//! reported as testpmd lays them out (checked side by side with
//! `dpdk-testpmd` on the same vdevs), queue counts changed at the prompt,
//! RSS redirection tables set and shown, per-lcore cycles, and the errors a
//! user gets for too many cores or queues.

mod common;

use common::{AppProcess, ConsoleOutput};
use dpstack::eal::EalArgs;
use std::io::Write;
use std::time::Duration;

const NULL_PAIR: [&str; 2] = ["net_null0", "net_null1"];

/// EAL options with `lcores` lcores (the first is the main lcore).
fn eal(lcores: u32, vdevs: &[&str]) -> Vec<String> {
    let mut args = EalArgs::for_test(lcores);
    for vdev in vdevs {
        args = args.vdev(vdev);
    }
    args.to_vec().split_off(1)
}

/// Runs the console with `app` options and the `commands` on stdin, with
/// `millis` of forwarding between the commands and a final `quit`.
fn console(lcores: u32, vdevs: &[&str], app: &[&str], commands: &[&str]) -> ConsoleOutput {
    let mut process = AppProcess::console(&eal(lcores, vdevs), app);
    let mut stdin = process.stdin();
    for command in commands {
        if let Some(ms) = command.strip_prefix("sleep ") {
            std::thread::sleep(Duration::from_millis(ms.parse().expect("ms")));
            continue;
        }
        writeln!(stdin, "{command}").expect("stdin");
    }
    writeln!(stdin, "quit").expect("stdin");
    drop(stdin);
    let out = process.wait();
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    out
}

/// (RX-packets, TX-packets) of each per-stream block, by its header.
fn stream_stats(text: &str) -> Vec<(String, u64, u64)> {
    let mut found = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(rest) = line.trim().strip_prefix("------- Forward Stats for ") else {
            continue;
        };
        let header = rest.trim_end_matches('-').trim().to_owned();
        let counts = lines.next().unwrap_or_default();
        let field = |name: &str| -> u64 {
            counts
                .split(name)
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no {name} in {counts:?}"))
        };
        found.push((header, field("RX-packets:"), field("TX-packets:")));
    }
    found
}

const FOUR_STREAMS: [&str; 4] = [
    "RX Port= 0/Queue= 0 -> TX Port= 1/Queue= 0",
    "RX Port= 1/Queue= 0 -> TX Port= 0/Queue= 0",
    "RX Port= 0/Queue= 1 -> TX Port= 1/Queue= 1",
    "RX Port= 1/Queue= 1 -> TX Port= 0/Queue= 1",
];

#[test]
fn every_engine_forwards_on_two_lcores_with_two_queues_per_port() {
    for mode in ["io", "mac", "macswap", "rxonly", "txonly"] {
        let mode_arg = format!("--forward-mode={mode}");
        let out = console(
            3,
            &NULL_PAIR,
            &["-i", &mode_arg, "--nb-cores=2", "--rxq=2", "--txq=2"],
            &["start", "sleep 700", "stop"],
        );
        assert!(
            out.stdout
                .contains("packet forwarding - ports=2 - cores=2 - streams=4"),
            "{mode}: {}",
            out.stdout
        );
        let streams = stream_stats(&out.stdout);
        let headers: Vec<&str> = streams.iter().map(|(h, _, _)| h.as_str()).collect();
        assert_eq!(headers, FOUR_STREAMS, "{mode}: {}", out.stdout);
        for (header, rx, tx) in &streams {
            match mode {
                "rxonly" => assert!(*rx > 0 && *tx == 0, "{mode} {header}: {rx}/{tx}"),
                "txonly" => assert!(*tx > 0 && *rx == 0, "{mode} {header}: {rx}/{tx}"),
                _ => assert!(*rx > 0 && *tx > 0, "{mode} {header}: {rx}/{tx}"),
            }
        }
    }
}

#[test]
fn queue_counts_change_at_the_prompt_and_lcores_report_their_cycles() {
    let out = console(
        3,
        &NULL_PAIR,
        &["-i", "--record-core-cycles"],
        &[
            "port config all rxq 2",
            "port stop all",
            "port config all rxq 2",
            "port config all txq 2",
            "port start all",
            "set nbcore 3",
            "set nbcore 2",
            "show config fwd",
            "start",
            "sleep 700",
            "stop",
            "show port 0 queue-stats",
        ],
    );
    let text = &out.stdout;
    assert!(text.contains("Please stop all ports first"), "{text}");
    assert!(
        text.contains("nb fwd cores 3 > 2 (max. number of configured lcores) - ignored"),
        "{text}"
    );
    assert!(
        text.contains("Number of forwarding cores set to 2"),
        "{text}"
    );
    assert!(
        text.contains("Logical Core 2 (socket 0) forwards packets on 2 streams:\n  RX P=0/Q=1"),
        "{text}"
    );
    assert_eq!(stream_stats(text).len(), 4, "{text}");
    assert!(text.contains("  Lcore 1: CPU cycles/packet="), "{text}");
    assert!(text.contains("  Lcore 2: CPU cycles/packet="), "{text}");
    // Both rx queues of port 0 received (net_null fills every queue).
    let queue = |q: &str| -> u64 {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(&format!("Queue {q:>2}: RX-packets:")))
            .and_then(|r| r.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no queue {q} in {text}"))
    };
    assert!(queue("0") > 0 && queue("1") > 0, "{text}");
}

#[test]
fn the_redirection_table_is_set_and_shown() {
    let out = console(
        2,
        &NULL_PAIR,
        &["-i", "--rxq=2", "--txq=2", "--rss-udp"],
        &[
            "port config 0 rss reta (0,1),(1,1),(2,0)",
            "show port 0 rss reta",
            "port config 0 rss reta (0,7)",
            "port config 0 rss reta nonsense",
            "show port 0 rss reta 128 (0x4,0x8000000000000000)",
            "show port 0 rss reta 64 (0x1)",
        ],
    );
    let text = &out.stdout;
    // The masked form (the last listing) shows entries 2 and 127 only.
    let shown: Vec<&str> = text
        .lines()
        .map(|l| l.trim_start_matches("dpstack> "))
        .filter(|l| l.starts_with("RSS RETA configuration"))
        .collect();
    assert_eq!(
        shown[shown.len() - 2..],
        [
            "RSS RETA configuration: hash index=2, queue=0",
            "RSS RETA configuration: hash index=127, queue=1"
        ],
        "{text}"
    );
    for line in [
        "RSS RETA configuration: hash index=0, queue=1",
        "RSS RETA configuration: hash index=1, queue=1",
        "RSS RETA configuration: hash index=2, queue=0",
        "RSS RETA configuration: hash index=127, queue=1",
        "the table has 128 entries (0..=127) and the port 2 rx queues",
        "bad redirection table entries",
        "Invalid redirection table size 64: port 0 has 128 entries",
    ] {
        assert!(text.contains(line), "no {line:?} in:\n{text}");
    }
}

#[test]
fn too_many_cores_or_queues_say_what_the_limits_are() {
    let out = AppProcess::console(&eal(2, &NULL_PAIR), &["--nb-cores=2"]).wait();
    assert_ne!(out.code, Some(0));
    assert!(
        out.stderr
            .contains("--nb-cores=2: EAL has 1 worker lcore(s)")
            && out.stderr.contains("--lcores=0@0,1@0,2@1"),
        "{}",
        out.stderr
    );
    let out = AppProcess::console(&eal(2, &["net_ring0"]), &["--rxq=17", "--txq=17"]).wait();
    assert_ne!(out.code, Some(0));
    assert!(
        out.stderr
            .contains("port 0 (net_ring) takes 1..=16 rx and 1..=16 tx queues"),
        "{}",
        out.stderr
    );
    // A ring has queues but no RSS: the console says so and forwards.
    let out = console(
        3,
        &["net_ring0"],
        &[
            "-i",
            "--rxq=2",
            "--txq=2",
            "--nb-cores=2",
            "--port-topology=loop",
        ],
        &["show config fwd"],
    );
    assert!(
        out.stdout.contains(
            "Port 0: net_ring has no RSS (whoever writes to a ring picks it); its 2 rx queues \
             are not spread by hash"
        ),
        "{}",
        out.stdout
    );
}

/// The stream lines of `show config fwd`'s output, with lcore ids.
fn layout(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with("Logical Core") || l.starts_with("  RX P="))
        .map(|l| l.split(" peer=").next().unwrap_or(l).to_owned())
        .collect()
}

/// The lines of `show config rxtx`, with every value replaced by `#`.
fn rxtx_shape(text: &str) -> Vec<String> {
    // From the two blanks before the engine's name (a prompt may come
    // first on that line).
    let start = text
        .rfind("packet forwarding packets/burst=")
        .and_then(|at| text[..at].rfind("  "))
        .unwrap_or_else(|| panic!("no rxtx block in {text}"));
    text[start..]
        .lines()
        .take_while(|l| l.starts_with("  "))
        .map(|l| {
            l.split_whitespace()
                .map(|w| match w.split_once('=') {
                    Some((name, _)) => format!("{name}=#"),
                    None if w.chars().all(|c| c.is_ascii_digit() || c == ':') => "#".into(),
                    None => w.to_owned(),
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

#[test]
fn streams_and_lcores_match_dpdk_testpmd_on_the_same_vdevs() {
    common::require("dpdk-testpmd");
    for (cores, queues) in [("2", "2"), ("1", "2"), ("2", "1"), ("2", "4")] {
        let options = [
            format!("--nb-cores={cores}"),
            format!("--rxq={queues}"),
            format!("--txq={queues}"),
        ];
        let ours = console(
            3,
            &NULL_PAIR,
            &["-i", &options[0], &options[1], &options[2]],
            &["show config fwd", "show config rxtx"],
        );
        let mut eal = eal(3, &NULL_PAIR);
        eal.retain(|a| !a.starts_with("-m"));
        eal.push("-m1024".into());
        let mut testpmd = std::process::Command::new("dpdk-testpmd");
        testpmd
            .args(&eal)
            .arg("--")
            .args(&options)
            .args(["-i", "--total-num-mbufs=8192"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = testpmd.spawn().expect("dpdk-testpmd");
        let mut stdin = child.stdin.take().expect("piped");
        writeln!(stdin, "show config fwd\nshow config rxtx\nquit").expect("stdin");
        drop(stdin);
        let status = common::wait_at_most(&mut child, Duration::from_secs(30))
            .expect("testpmd exits within 30 s");
        let mut theirs = String::new();
        std::io::Read::read_to_string(&mut child.stdout.take().expect("piped"), &mut theirs)
            .expect("read");
        assert!(status.success(), "{theirs}");
        let expected = layout(&theirs);
        assert!(!expected.is_empty(), "testpmd printed no streams: {theirs}");
        assert_eq!(
            layout(&ours.stdout),
            expected,
            "--nb-cores={cores} --rxq/txq={queues}\nours:\n{}\ntestpmd:\n{theirs}",
            ours.stdout
        );
        // `show config rxtx`: the same lines; values may differ (testpmd
        // shows the descriptors it asked for, 0 on net_null).
        assert_eq!(
            rxtx_shape(&ours.stdout),
            rxtx_shape(&theirs),
            "show config rxtx\nours:\n{}\ntestpmd:\n{theirs}",
            ours.stdout
        );
        assert!(rxtx_shape(&theirs).len() > 10, "{theirs}");
        remove_testpmds_runtime_dir();
    }
    assert!(
        !std::path::Path::new(&runtime_dir()).exists(),
        "{} left behind",
        runtime_dir()
    );
}

/// The runtime directory of this test's file prefix (`EalArgs::for_test`)
/// for root, as the suite runs.
fn runtime_dir() -> String {
    format!("/var/run/dpdk/dpstack-test-{}", std::process::id())
}

/// testpmd, unlike our apps, leaves EAL's runtime directory behind (empty:
/// `--no-shconf`); the console under the same prefix removes its own.
fn remove_testpmds_runtime_dir() {
    let _ = std::fs::remove_dir(runtime_dir());
}
