//! `dpstack-console --cmdline-file` and commands piped on standard input:
//! the outputs, checked line for line against testpmd 22.11's formats (as
//! captured in the research notes and from `dpdk-testpmd` on this machine).

mod common;

use common::{child_eal_args, AppProcess, ConsoleOutput};
use std::io::Write;
use std::path::PathBuf;

const NULL_PAIR: [&str; 2] = ["net_null0", "net_null1"];

/// A command file for one test, removed when dropped.
struct Script(PathBuf);

impl Script {
    fn new(name: &str, lines: &[&str]) -> Script {
        let path =
            std::env::temp_dir().join(format!("dpstack-console-{name}-{}.txt", std::process::id()));
        std::fs::write(&path, lines.join("\n") + "\n").expect("write the command file");
        Script(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temp path")
    }
}

impl Drop for Script {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The MAC the console printed for `port` at start-up (`Port N: MAC`).
fn mac_of(out: &ConsoleOutput, port: u16) -> String {
    let prefix = format!("Port {port}: ");
    out.stdout
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {prefix:?} in:\n{}", out.stdout))
        .to_owned()
}

/// The output from the last `stop` on (whose forward statistics are final).
fn after_stop(out: &ConsoleOutput) -> ConsoleOutput {
    let at = out
        .stdout
        .rfind("Telling cores to stop...")
        .unwrap_or_else(|| panic!("no stop in:\n{}", out.stdout));
    ConsoleOutput {
        code: out.code,
        signal: out.signal,
        stdout: out.stdout[at..].to_owned(),
        stderr: String::new(),
    }
}

/// Asserts that `text` contains every block of `blocks`, in that order.
fn assert_in_order(text: &str, blocks: &[&str]) {
    let mut at = 0;
    for block in blocks {
        match text[at..].find(block) {
            Some(found) => at += found + block.len(),
            None => panic!("missing (or out of order) {block:?}\nafter offset {at} of:\n{text}"),
        }
    }
}

#[test]
fn cmdline_file_runs_its_commands_with_testpmds_output_and_quit_ends_only_the_file() {
    let script = Script::new(
        "formats",
        &[
            "# set up, look, then quit",
            "set fwd rxonly",
            "set burst 64",
            "set nbcore 1",
            "show config fwd",
            "show port info 0",
            "set burst 513",
            "set nbcore 2",
            "show port stats 9",
            "frobnicate",
            "show port",
            "set fwd warp",
            "port stop 0",
            "port close 0",
            "show port summary all",
            "show port 1 rss-hash",
            "set link-down port 1",
            "show fwd stats all",
            "quit",
            "show port summary all",
        ],
    );
    let mut console = AppProcess::console(
        &child_eal_args(&NULL_PAIR),
        &["-i", "--cmdline-file", script.path()],
    );
    let mut stdin = console.stdin();
    writeln!(stdin, "set burst 16").expect("write a command");
    drop(stdin);
    let out = console.wait();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let (mac0, mac1) = (mac_of(&out, 0), mac_of(&out, 1));
    // testpmd's block for net_null0, captured (shared with the unit test).
    let info = include_str!("data/port_info_net_null.txt").replace("{mac}", &mac0);
    let summary = format!(
        "Number of available ports: 1
Port MAC Address       Name         Driver         Status   Link
1    {mac1} net_null1    net_null       up       10 Gbps
"
    );
    let read = format!("Read CLI commands from {}\n", script.path());
    let to_be_read = format!("CLI commands to be read from {}\n", script.path());
    assert_in_order(
        &out.stdout,
        &[
            &to_be_read,
            "Configuring Port 0 (socket 0)\n",
            "Checking link statuses...\nDone\n",
            "Set rxonly packet forwarding mode
Number of packets per burst set to 64
Number of forwarding cores set to 1
rxonly packet forwarding - ports=2 - cores=1 - streams=2 - NUMA support disabled, MP allocation mode: native
Logical Core 1 (socket 0) forwards packets on 2 streams:
  RX P=0/Q=0 (socket 0) -> TX P=1/Q=0 (socket 0) peer=02:00:00:00:00:01
  RX P=1/Q=0 (socket 0) -> TX P=0/Q=0 (socket 0) peer=02:00:00:00:00:00

",
            &info,
            "nb pkt per burst: 513 > 512 (maximum packet per burst)  ignored
nb fwd cores 2 > 1 (max. number of configured lcores) - ignored
Invalid port 9
The valid ports array is [ 0 1 ]
Command not found
Bad arguments
Bad arguments
Stopping ports...
Checking link statuses...
Done
Closing ports...
Port 0 is closed
Done
",
            &summary,
            "dev_info did not provide a valid hash key size\n\nSet link down fail.\n",
            // Before any start: zeros, as testpmd 22.11 shows them.
            "
  ---------------------- Forward statistics for port 1  ----------------------
  RX-packets: 0              RX-dropped: 0             RX-total: 0
  TX-packets: 0              TX-dropped: 0             TX-total: 0
  ----------------------------------------------------------------------------

  +++++++++++++++ Accumulated forward statistics for all ports+++++++++++++++
  RX-packets: 0              RX-dropped: 0             RX-total: 0
  TX-packets: 0              TX-dropped: 0             TX-total: 0
  ++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++
",
            // `quit` ended the file; the prompt then ran the piped line.
            &read,
            "dpstack> Number of packets per burst set to 16\ndpstack> \n",
            "Stopping port 1...\nDone\n\nPort 1 is closed\nDone\n\nBye...\n",
        ],
    );
    assert_eq!(
        out.stdout.matches("Number of available ports").count(),
        1,
        "nothing after quit in the file runs"
    );
    assert!(out.stdout.ends_with("Bye...\n"));
}

#[test]
fn cmdline_file_then_the_prompt_reads_piped_commands() {
    let script = Script::new("then-prompt", &["set fwd macswap", "start tx_first"]);
    let mut console = AppProcess::console(
        &child_eal_args(&["net_ring0", "net_ring1"]),
        &["-i", "--cmdline-file", script.path()],
    );
    let mut stdin = console.stdin();
    console.wait_for_output("dpstack> ");
    std::thread::sleep(std::time::Duration::from_millis(300));
    for line in ["show fwd stats all", "set fwd ?", "stop", "quit"] {
        writeln!(stdin, "{line}").expect("write a command");
    }
    let out = console.wait();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let read = format!("Read CLI commands from {}\ndpstack> ", script.path());
    assert_in_order(
        &out.stdout,
        &[
            "Set macswap packet forwarding mode
macswap packet forwarding - ports=2 - cores=1 - streams=2 - NUMA support disabled, MP allocation mode: native
Logical Core 1 (socket 0) forwards packets on 2 streams:
  RX P=0/Q=0 (socket 0) -> TX P=1/Q=0 (socket 0) peer=02:00:00:00:00:01
  RX P=1/Q=0 (socket 0) -> TX P=0/Q=0 (socket 0) peer=02:00:00:00:00:00

  macswap packet forwarding packets/burst=32
  nb forwarding cores=1 - nb forwarding ports=2
  port 0: RX queue number: 1 Tx queue number: 1
    Rx offloads=0x0 Tx offloads=0x0
    RX queue: 0
      RX desc=1024 - RX free threshold=0
      RX threshold registers: pthresh=0 hthresh=0  wthresh=0
      RX Offloads=0x0
    TX queue: 0
      TX desc=1024 - TX free threshold=0
      TX threshold registers: pthresh=0 hthresh=0  wthresh=0
      TX offloads=0x0 - TX RS bit threshold=0
  port 1: RX queue number: 1 Tx queue number: 1
    Rx offloads=0x0 Tx offloads=0x0
    RX queue: 0
      RX desc=1024 - RX free threshold=0
      RX threshold registers: pthresh=0 hthresh=0  wthresh=0
      RX Offloads=0x0
    TX queue: 0
      TX desc=1024 - TX free threshold=0
      TX threshold registers: pthresh=0 hthresh=0  wthresh=0
      TX offloads=0x0 - TX RS bit threshold=0
",
            &read,
            "\n  ---------------------- Forward statistics for port 0  ----------------------\n",
            "\n  +++++++++++++++ Accumulated forward statistics for all ports+++++++++++++++\n",
            "dpstack>  io [Mul-choice STRING]: set fwd io: forward packets unchanged to the peer port
 mac [Mul-choice STRING]: set fwd mac: set source MAC to the tx port's, destination to its peer (--eth-peer)
 macswap [Mul-choice STRING]: set fwd macswap: swap source and destination MAC, then forward
 rxonly [Mul-choice STRING]: set fwd rxonly: receive and free packets
 txonly [Mul-choice STRING]: set fwd txonly: send 64-byte UDP/IPv4 packets, receive nothing
 stack [Mul-choice STRING]: set fwd stack: run dpstack's TCP/IP stack on every port (help stack: addresses, routes, ping, echo)
dpstack> Telling cores to stop...
Waiting for lcores to finish...
",
            "\n  ---------------------- Forward statistics for port 1  ----------------------\n",
            "  ++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++\n\nDone.\n",
            "Bye...\n",
        ],
    );
    let (rx, tx, dropped) = after_stop(&out).accumulated();
    assert!(rx > 1000, "the tx_first bursts circulate: rx {rx}");
    assert_eq!((tx, dropped), (rx + 64, 0));
}

#[test]
fn cmdline_file_without_the_prompt_then_forwards_until_enter() {
    // As testpmd: `quit` ends the file, then forwarding starts.
    let script = Script::new(
        "non-interactive",
        &["set fwd txonly", "set burst 16", "quit", "set burst 8"],
    );
    let mut console = AppProcess::console(
        &child_eal_args(&NULL_PAIR),
        &["--cmdline-file", script.path()],
    );
    let mut stdin = console.stdin();
    console.wait_for_output("Press enter to exit");
    std::thread::sleep(std::time::Duration::from_millis(500));
    writeln!(stdin).expect("enter");
    let out = console.wait();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let read = format!("Read CLI commands from {}\n", script.path());
    assert_in_order(
        &out.stdout,
        &[
            "Set txonly packet forwarding mode\nNumber of packets per burst set to 16\n",
            &read,
            "txonly packet forwarding - ports=2 - cores=1 - streams=2",
            "  txonly packet forwarding packets/burst=16\n",
            "Press enter to exit\n",
            "Bye...\n",
        ],
    );
    assert!(!out.stdout.contains("set to 8"), "{}", out.stdout);
    let (rx, tx, _) = out.accumulated();
    assert_eq!(rx, 0);
    assert!(tx > 1000, "tx {tx}");
}

#[test]
fn a_started_port_is_not_closed_and_stopped_ports_block_start() {
    let mut console = AppProcess::console(&child_eal_args(&NULL_PAIR), &["-i"]);
    let mut stdin = console.stdin();
    for line in [
        "port close 1",
        "start",
        "port stop 0",
        "stop",
        "port stop all",
        "start",
        "port start 0",
        "port start 0",
        "set promisc all off",
        "set promisc 0 on",
        "show port summary 0",
        "quit",
    ] {
        writeln!(stdin, "{line}").expect("write a command");
    }
    let out = console.wait();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let mac0 = mac_of(&out, 0);
    let started = format!("dpstack> Port 0: {mac0}\nChecking link statuses...\nDone\n");
    let summary = format!(
        "dpstack> Number of available ports: 2
Port MAC Address       Name         Driver         Status   Link
0    {mac0} net_null0    net_null       up       10 Gbps
dpstack> "
    );
    assert_in_order(
        &out.stdout,
        &[
            "dpstack> Closing ports...
Cannot close started device (port 1): stop it first (port stop 1)
Done
dpstack> io packet forwarding",
            "dpstack> Stopping ports...
Port 0 is forwarding: stop forwarding first (stop)
Done
dpstack> Telling cores to stop...",
            "dpstack> Stopping ports...\nChecking link statuses...\nDone\n",
            "dpstack> Not all ports were started\n",
            &started,
            "dpstack> Port 0 is now not stopped\nPlease stop the ports first\n",
            "dpstack> Error during disabling promiscuous mode for port 0: Operation not supported
Error during disabling promiscuous mode for port 1: Operation not supported
dpstack> ",
            &summary,
            "Stopping port 0...\nStopping port 1...\nDone\n",
            "Bye...\n",
        ],
    );
}

#[test]
fn an_unreadable_cmdline_file_is_an_error_before_any_port_opens() {
    let out = AppProcess::console(
        &child_eal_args(&NULL_PAIR),
        &["--cmdline-file", "/nonexistent/dpstack-commands.txt"],
    )
    .wait();
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr.contains(
            "dpstack-console: cannot read --cmdline-file /nonexistent/dpstack-commands.txt: \
             No such file or directory"
        ),
        "{}",
        out.stderr
    );
    assert!(!out.stdout.contains("Configuring Port"), "{}", out.stdout);
}
