//! `dpstack-console` as a user runs it: engines over virtual ports, the
//! embedded default, the interactive prompt, signals and bad input.

mod common;

use common::{child_eal_args, AppProcess};
use std::io::Write;
use std::time::Duration;

const NULL_PAIR: [&str; 2] = ["net_null0", "net_null1"];

fn forward_for(mode: &str, vdevs: &[&str], extra: &[&str], millis: u64) -> (u64, u64, u64) {
    let mode_arg = format!("--forward-mode={mode}");
    let mut app = vec![mode_arg.as_str(), "--stats-period", "1"];
    app.extend_from_slice(extra);
    let console = AppProcess::console(&child_eal_args(vdevs), &app);
    std::thread::sleep(Duration::from_millis(millis));
    let out = console.stop_with(libc::SIGINT);
    assert_eq!(
        out.code,
        Some(0),
        "exit 0 on SIGINT; stderr: {}",
        out.stderr
    );
    assert!(out
        .stdout
        .contains("Signal 2 received, preparing to exit..."));
    assert!(out.stdout.contains("Port 0 is closed") && out.stdout.ends_with("Bye...\n"));
    out.accumulated()
}

#[test]
fn io_forwards_everything_it_receives_between_null_ports() {
    let (rx, tx, dropped) = forward_for("io", &NULL_PAIR, &[], 1500);
    assert!(rx > 10_000, "rx {rx}");
    assert_eq!(tx + dropped, rx);
}

#[test]
fn mac_forwards_between_null_ports() {
    let (rx, tx, dropped) = forward_for("mac", &NULL_PAIR, &[], 1500);
    assert!(rx > 10_000, "rx {rx}");
    assert_eq!(tx + dropped, rx);
}

#[test]
fn macswap_forwards_between_null_ports_and_records_cycles() {
    let mode_arg = "--forward-mode=macswap";
    let console = AppProcess::console(
        &child_eal_args(&NULL_PAIR),
        &[mode_arg, "--record-core-cycles", "--stats-period", "1"],
    );
    // The first period's display, however slow the start-up (a fixed
    // sleep failed under a loaded test run), then enough forwarding.
    console.wait_for_output("Port statistics ====");
    std::thread::sleep(Duration::from_millis(300));
    let out = console.stop_with(libc::SIGTERM);
    assert_eq!(out.code, Some(0));
    let (rx, tx, dropped) = out.accumulated();
    assert!(rx > 10_000 && tx + dropped == rx, "rx {rx} tx {tx}");
    assert!(out.stdout.contains("CPU cycles/packet="), "{}", out.stdout);
    assert!(
        out.stdout.contains("NIC statistics for port 0"),
        "stats period output"
    );
}

#[test]
fn rxonly_receives_and_sends_nothing() {
    let (rx, tx, _) = forward_for("rxonly", &NULL_PAIR, &[], 1500);
    assert!(rx > 10_000, "rx {rx}");
    assert_eq!(tx, 0);
}

#[test]
fn txonly_sends_and_receives_nothing() {
    let (rx, tx, _) = forward_for("txonly", &NULL_PAIR, &[], 1500);
    assert!(tx > 10_000, "tx {tx}");
    assert_eq!(rx, 0);
}

#[test]
fn ring_ports_circulate_the_tx_first_burst() {
    // Two net_ring ports each loop tx back to rx; io forwarding between them
    // keeps the first bursts moving forever.
    let (rx, tx, dropped) = forward_for("io", &["net_ring0", "net_ring1"], &["--tx-first"], 1500);
    assert!(
        rx > 10_000,
        "the 64 primed packets went round many times: rx {rx}"
    );
    assert_eq!(dropped, 0);
    assert_eq!(tx, rx + 64, "tx counts the two primed bursts of 32");
}

#[test]
fn loop_topology_on_one_ring_port() {
    let (rx, tx, _) = forward_for(
        "macswap",
        &["net_ring0"],
        &["--tx-first", "--port-topology", "loop"],
        1000,
    );
    assert!(rx > 10_000, "rx {rx}");
    assert_eq!(tx, rx + 32);
}

#[test]
fn without_eal_options_it_runs_on_the_embedded_default() {
    let console = AppProcess::console(&[], &["--stats-period", "1"]);
    // Counted from the start of forwarding: EAL's start-up takes longer
    // on a busy machine.
    console.wait_until_forwarding();
    std::thread::sleep(Duration::from_millis(1500));
    let out = console.stop_with(libc::SIGINT);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stdout.contains("using the embedded default"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("--vdev=net_null0 --vdev=net_null1"));
    let (rx, tx, _) = out.accumulated();
    assert!(rx > 10_000 && tx > 0, "rx {rx}, tx {tx}:\n{}", out.stdout);
}

#[test]
fn non_interactive_mode_exits_on_enter() {
    let mut console = AppProcess::console(&child_eal_args(&NULL_PAIR), &[]);
    let mut stdin = console.stdin();
    std::thread::sleep(Duration::from_millis(800));
    writeln!(stdin).expect("enter");
    let out = console.wait();
    assert_eq!(out.code, Some(0));
    assert!(out.stdout.contains("Press enter to exit"));
    assert!(out.accumulated().0 > 0);
}

#[test]
fn interactive_prompt_starts_shows_stops_and_quits() {
    let mut console = AppProcess::console(&child_eal_args(&NULL_PAIR), &["-i"]);
    let mut stdin = console.stdin();
    let mut say = |line: &str, pause_ms: u64| {
        writeln!(stdin, "{line}").expect("write command");
        std::thread::sleep(Duration::from_millis(pause_ms));
    };
    say("help control", 100);
    say("set fwd ?", 100);
    say("set fwd macswap", 100);
    say("start", 500);
    say("show port stats all", 300);
    say("show port stats 0", 100);
    say("show port stats 9", 100);
    say("show fwd stats all", 100);
    say("stop", 300);
    say("show port summary all", 100);
    say("show port xstats 1", 100);
    say("clear port stats all", 100);
    say("frobnicate", 100);
    say("show port", 100);
    say("quit", 0);
    let out = console.wait();
    let text = &out.stdout;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    for expected in [
        "\nstart tx_first\n    Start packet forwarding with current config after sending one burst \
         of packets.\n",
        "\n macswap [Mul-choice STRING]: set fwd macswap: swap source and destination MAC, then \
         forward\n",
        "Set macswap packet forwarding mode",
        "macswap packet forwarding - ports=2 - cores=1 - streams=2",
        "NIC statistics for port 1",
        "Invalid port 9\nThe valid ports array is [ 0 1 ]",
        "Telling cores to stop...",
        "Number of available ports: 2",
        "net_null1",
        "###### NIC extended statistics for port 1",
        "rx_good_packets:",
        "NIC statistics for port 0 cleared",
        "Command not found",
        "Bad arguments",
        "Bye...",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    assert!(out.accumulated().0 > 0);
}

#[test]
fn interactive_prompt_quits_at_end_of_input() {
    let mut console = AppProcess::console(&child_eal_args(&NULL_PAIR), &["-i", "-a"]);
    drop(console.stdin());
    let out = console.wait();
    assert_eq!(out.code, Some(0));
    assert!(out.stdout.contains("Accumulated forward statistics"));
    assert!(out.stdout.contains("Bye..."));
}

#[test]
fn an_unknown_forwarding_mode_is_a_usage_error() {
    let out = AppProcess::console(&[], &["--forward-mode=warp"]).wait();
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr
            .contains("available: io mac macswap rxonly txonly"),
        "{}",
        out.stderr
    );
}

#[test]
fn one_lcore_is_an_error_that_says_what_to_do() {
    let mut eal = child_eal_args(&NULL_PAIR);
    eal.retain(|a| !a.starts_with("--lcores"));
    eal.push("--lcores=0@(0,1)".into());
    let out = AppProcess::console(&eal, &[]).wait();
    assert_eq!(out.code, Some(1));
    assert!(out.stderr.contains("no worker lcore"), "{}", out.stderr);
    assert!(out.stderr.contains("--lcores=0@0,1@0"));
}

#[test]
fn no_ports_is_an_error_that_says_what_to_do() {
    let out = AppProcess::console(&child_eal_args(&[]), &[]).wait();
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr.contains("no ports: add a device with --vdev"),
        "{}",
        out.stderr
    );
}
