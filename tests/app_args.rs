//! How the DPDK apps take their command line, run as the user runs them:
//! `APP --help`, `APP -h`, `APP --version` and `APP -V` without `--` are the
//! app's own (clap's help or version, exit 0), as is `APP -- --help`; none
//! of them initialises EAL or prints the embedded-default banner. And a
//! `--total-num-mbufs` too small for the ports' rings and the lcores' caches
//! is refused with the minimum (exit 1, no panic), which is then enough.
//! Every app that runs the stack takes the shared stack options.

mod common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Every app that takes `[EAL options] -- [app options]` (`dpstack::app::run_app`).
const APPS: [(&str, &str); 7] = [
    ("dpstack-console", env!("CARGO_BIN_EXE_dpstack-console")),
    ("dpstack-echo", env!("CARGO_BIN_EXE_dpstack-echo")),
    ("dpstack-iperf", env!("CARGO_BIN_EXE_dpstack-iperf")),
    ("dpstack-latency", env!("CARGO_BIN_EXE_dpstack-latency")),
    ("dpstack-rtp-relay", env!("CARGO_BIN_EXE_dpstack-rtp-relay")),
    (
        "dpstack-smoltcp-echo",
        env!("CARGO_BIN_EXE_dpstack-smoltcp-echo"),
    ),
    ("dpstack-tcpload", env!("CARGO_BIN_EXE_dpstack-tcpload")),
];

/// The line `dpstack::app::run_app` prints when it takes the embedded default.
const BANNER: &str = "No EAL options given";

/// How a process ended and what it printed.
struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `binary args` with no stdin; kills it and panics if it has not
/// exited within 20 s (an app that started running instead of printing).
fn run(binary: &str, args: &[&str]) -> Outcome {
    let mut child = Command::new(binary)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {binary}: {e}"));
    let mut pipes = (
        child.stdout.take().expect("piped"),
        child.stderr.take().expect("piped"),
    );
    let readers = (
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = pipes.0.read_to_string(&mut s);
            s
        }),
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = pipes.1.read_to_string(&mut s);
            s
        }),
    );
    let status = common::wait_at_most(&mut child, Duration::from_secs(20))
        .unwrap_or_else(|| panic!("{binary} {args:?} did not exit within 20 s"));
    Outcome {
        code: status.code(),
        stdout: readers.0.join().expect("stdout reader"),
        stderr: readers.1.join().expect("stderr reader"),
    }
}

/// `outcome` is a clean exit 0 that printed `needle` on stdout, with no
/// banner and nothing from EAL.
fn assert_apps_own(name: &str, args: &[&str], outcome: &Outcome, needle: &str) {
    let all = format!("stdout:\n{}\nstderr:\n{}", outcome.stdout, outcome.stderr);
    assert_eq!(outcome.code, Some(0), "{name} {args:?} exit status; {all}");
    assert!(
        outcome.stdout.contains(needle),
        "{name} {args:?} prints {needle:?}; {all}"
    );
    assert!(
        !all.contains(BANNER),
        "{name} {args:?} decides nothing about EAL; {all}"
    );
    assert!(
        !all.contains("EAL:") && !all.contains("Usage: ./") && !all.contains("EAL common options"),
        "{name} {args:?} leaves EAL alone; {all}"
    );
    assert!(
        outcome.stderr.is_empty(),
        "{name} {args:?} prints no error; {all}"
    );
}

#[test]
fn help_without_the_separator_is_the_apps() {
    for (name, binary) in APPS {
        for flag in ["--help", "-h"] {
            let outcome = run(binary, &[flag]);
            assert_apps_own(name, &[flag], &outcome, "Usage:");
            assert!(
                outcome.stdout.contains(name),
                "{name} {flag}: the usage names the app:\n{}",
                outcome.stdout
            );
        }
    }
}

#[test]
fn version_without_the_separator_is_the_apps() {
    let version = env!("CARGO_PKG_VERSION");
    for (name, binary) in APPS {
        for flag in ["--version", "-V"] {
            let outcome = run(binary, &[flag]);
            assert_apps_own(name, &[flag], &outcome, &format!("{name} {version}"));
        }
    }
}

#[test]
fn help_after_the_separator_prints_no_banner() {
    for (name, binary) in APPS {
        let outcome = run(binary, &["--", "--help"]);
        assert_apps_own(name, &["--", "--help"], &outcome, "Usage:");
    }
}

#[test]
fn help_with_eal_options_before_the_separator_is_the_apps() {
    let eal = common::child_eal_args(&["net_null0"]);
    let mut args: Vec<&str> = eal.iter().map(String::as_str).collect();
    args.extend(["--", "--help"]);
    let (name, binary) = APPS[4];
    let outcome = run(binary, &args);
    assert_apps_own(name, &args, &outcome, "Usage:");
}

/// The apps that run the stack on `dpstack::app`, with their own default
/// for `--ip` (`None`: required) and for `--total-num-mbufs`.
const STACK_APPS: [(&str, &str, Option<&str>, &str); 5] = [
    (
        "dpstack-echo",
        env!("CARGO_BIN_EXE_dpstack-echo"),
        Some("192.0.2.1/24"),
        "8191",
    ),
    (
        "dpstack-iperf",
        env!("CARGO_BIN_EXE_dpstack-iperf"),
        None,
        "8191",
    ),
    (
        "dpstack-latency",
        env!("CARGO_BIN_EXE_dpstack-latency"),
        None,
        "8191",
    ),
    (
        "dpstack-rtp-relay",
        env!("CARGO_BIN_EXE_dpstack-rtp-relay"),
        Some("192.0.2.1/24"),
        "16383",
    ),
    (
        "dpstack-tcpload",
        env!("CARGO_BIN_EXE_dpstack-tcpload"),
        None,
        "8191",
    ),
];

#[test]
fn every_stack_app_takes_the_shared_stack_options_with_its_own_defaults() {
    let shared = [
        "--ip <ADDR/PREFIX>",
        "--gateway <GATEWAY>",
        "--route <PREFIX,GATEWAY>",
        "--no-dad",
        "--accept-ra",
        "--pacing",
        "--mtu <MTU>",
        "--total-num-mbufs <N>",
        "--faults <SPEC>",
        "--stats-period <N>",
        "--nb-cores <N>",
    ];
    for (name, binary, ip, mbufs) in STACK_APPS {
        let outcome = run(binary, &["--help"]);
        assert_apps_own(name, &["--help"], &outcome, "Usage:");
        let help = &outcome.stdout;
        for option in shared {
            assert!(help.contains(option), "{name} takes {option}:\n{help}");
        }
        assert!(
            help.contains(&format!("[default: {mbufs}]")),
            "{name}: --total-num-mbufs defaults to {mbufs}:\n{help}"
        );
        if let Some(ip) = ip {
            assert!(
                help.contains(&format!("[default: {ip}]")),
                "{name}: --ip defaults to {ip}:\n{help}"
            );
        } else {
            let outcome = run(binary, &["--"]);
            assert_eq!(outcome.code, Some(2), "{name}: --ip is required");
            assert!(outcome.stderr.contains("--ip"), "{}", outcome.stderr);
        }
    }
}

/// The apps with `--total-num-mbufs`, the devices each gets here, and the
/// options they need to start.
const POOL_APPS: [(&str, &str, &[&str], &[&str]); 4] = [
    (
        "dpstack-rtp-relay",
        env!("CARGO_BIN_EXE_dpstack-rtp-relay"),
        &["net_null0"],
        &["--sessions", "1"],
    ),
    (
        "dpstack-echo",
        env!("CARGO_BIN_EXE_dpstack-echo"),
        &["net_null0"],
        &[],
    ),
    (
        "dpstack-smoltcp-echo",
        env!("CARGO_BIN_EXE_dpstack-smoltcp-echo"),
        &["net_null0"],
        &[],
    ),
    (
        "dpstack-console",
        env!("CARGO_BIN_EXE_dpstack-console"),
        &["net_null0", "net_null1"],
        &[],
    ),
];

/// `APP EAL -- OPTIONS --total-num-mbufs COUNT` (two lcores, no hugepages,
/// a file prefix of this test process's own).
fn run_with_mbufs(binary: &str, vdevs: &[&str], options: &[&str], count: &str) -> Outcome {
    let eal = common::child_eal_args(vdevs);
    let mut args: Vec<&str> = eal.iter().map(String::as_str).collect();
    args.push("--");
    args.extend_from_slice(options);
    args.extend(["--total-num-mbufs", count]);
    run(binary, &args)
}

/// The minimum a refusal names: the number after "at least".
fn named_minimum(message: &str) -> u32 {
    message
        .split("at least ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no minimum in {message:?}"))
}

#[test]
fn too_few_mbufs_are_refused_with_the_minimum() {
    for (name, binary, vdevs, options) in POOL_APPS {
        for count in ["1", "64"] {
            let outcome = run_with_mbufs(binary, vdevs, options, count);
            let all = format!("stdout:\n{}\nstderr:\n{}", outcome.stdout, outcome.stderr);
            assert_eq!(outcome.code, Some(1), "{name} {count}: a failure; {all}");
            assert!(!all.contains("panicked"), "{name} {count}; {all}");
            let wanted = format!("{name}: --total-num-mbufs {count} is too few: ");
            assert!(outcome.stderr.contains(&wanted), "{name} {count}; {all}");
            assert!(
                !all.contains("more memory"),
                "{name} {count}: not the wrong advice; {all}"
            );
            // Two lcores' caches (1.5 x 256 each) and 1024-descriptor rings.
            let minimum = named_minimum(&outcome.stderr);
            let ports = vdevs.len() as u32;
            assert_eq!(minimum, ports * 2048 + 2 * 384, "{name}; {all}");
            assert!(
                outcome.stderr.contains("rx ring") && outcome.stderr.contains("lcore caches"),
                "{name}: says what makes up the minimum; {all}"
            );
        }
    }
}

#[test]
fn the_named_minimum_is_enough_to_start() {
    let (name, binary, vdevs, options) = POOL_APPS[0];
    let refused = run_with_mbufs(binary, vdevs, options, "1");
    let minimum = named_minimum(&refused.stderr);
    let below = (minimum - 1).to_string();
    let outcome = run_with_mbufs(binary, vdevs, options, &below);
    assert_eq!(outcome.code, Some(1), "{name} {below}: {}", outcome.stderr);
    let eal = common::child_eal_args(vdevs);
    let count = minimum.to_string();
    let mut args = options.to_vec();
    args.extend(["--total-num-mbufs", &count]);
    let app = common::AppProcess::spawn(binary, &eal, &args);
    app.wait_for_output(" 1 session(s); pid");
    let stopped = app.stop_with(libc::SIGINT);
    assert_eq!(stopped.code, Some(0), "{name} {count}: {}", stopped.stderr);
}

/// A device that does not come up is named, with what to check: a vdev
/// that did not probe (DPDK's own lines say why), a memif client whose
/// server is not there.
#[test]
fn a_device_that_does_not_come_up_is_named_with_what_to_check() {
    let echo = APPS[1].1;
    let absent = format!("/tmp/dpstack-absent-{}", std::process::id());
    let pcap = format!("net_pcap0,rx_pcap={absent}.pcap");
    let outcome = run_with_mbufs(echo, &[&pcap], &["--ip", "10.0.0.1/24"], "8192");
    assert_eq!(outcome.code, Some(1), "{}", outcome.stderr);
    assert!(
        outcome.stderr.contains(&format!(
            "no port: the devices given ({pcap}) did not probe; DPDK's lines above say why"
        )),
        "{}",
        outcome.stderr
    );
    let memif = format!("net_memif0,role=client,socket={absent}.sock");
    let outcome = run_with_mbufs(echo, &[&memif], &["--ip", "10.0.0.1/24"], "8192");
    assert_eq!(outcome.code, Some(1), "{}", outcome.stderr);
    assert!(
        outcome.stderr.contains(&format!(
            "start of net_memif0, a memif client of {absent}.sock (is its server running?), failed"
        )),
        "{}",
        outcome.stderr
    );
    assert!(!std::path::Path::new(&format!("{absent}.sock")).exists());
}
