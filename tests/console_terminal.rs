//! `dpstack-console -i` on a terminal, typed at like a person would: Tab
//! completion, the `?` and second-Tab listings, keys typed ahead while a
//! listing prints, history (Up), Ctrl-C, Ctrl-D, and a signal while a line
//! is being edited. The console runs in a pseudo-terminal (rexpect);
//! escape sequences are stripped from what it prints, so the checks read as
//! the screen does.

mod common;

use common::child_eal_args;
use rexpect::session::{spawn_with_options, Options, PtySession};
use std::process::Command;

const NULL_PAIR: [&str; 2] = ["net_null0", "net_null1"];
const PROMPT: &str = "dpstack> ";

/// A console in a pseudo-terminal, and everything it printed so far.
struct Screen {
    pty: PtySession,
    transcript: String,
}

impl Screen {
    /// Runs `command` in a pseudo-terminal with TERM=xterm, waits for the
    /// ports and the prompt.
    fn spawn(mut command: Command) -> Screen {
        command.env("TERM", "xterm");
        let options = Options::new()
            .timeout_ms(Some(10_000))
            .strip_ansi_escape_codes(true);
        let pty = spawn_with_options(command, options).expect("start the console in a pty");
        let mut screen = Screen {
            pty,
            transcript: String::new(),
        };
        screen.expect("Checking link statuses...");
        screen.expect(PROMPT);
        screen
    }

    /// `dpstack-console EAL -- -i` on two net_null ports.
    fn console() -> Screen {
        let mut command = Command::new(env!("CARGO_BIN_EXE_dpstack-console"));
        command.args(child_eal_args(&NULL_PAIR)).args(["--", "-i"]);
        Screen::spawn(command)
    }

    /// Types `keys` (control characters and escape sequences included).
    fn keys(&mut self, keys: &str) {
        self.pty.send(keys).expect("type");
        self.pty.flush().expect("flush the keys");
    }

    /// Waits for `text`; panics with what came instead.
    fn expect(&mut self, text: &str) {
        match self.pty.exp_string(text) {
            Ok(before) => {
                self.transcript.push_str(&before);
                self.transcript.push_str(text);
            }
            Err(e) => panic!(
                "expected {text:?}: {e}\nscreen so far:\n{}",
                self.transcript
            ),
        }
    }

    /// Waits for the end of output and the exit; returns the exit code.
    fn exit_code(mut self) -> i32 {
        match self.pty.exp_eof() {
            Ok(rest) => self.transcript.push_str(&rest),
            Err(e) => panic!("no exit: {e}\nscreen so far:\n{}", self.transcript),
        }
        match self.pty.process().wait().expect("wait for the console") {
            rexpect::process::WaitStatus::Exited(_, code) => code,
            other => panic!("the console did not exit normally: {other:?}"),
        }
    }
}

#[test]
fn tab_completes_words_and_a_second_tab_lists_the_alternatives() {
    let mut screen = Screen::console();
    screen.keys("sh\t");
    screen.expect("dpstack> show ");
    screen.keys("po\t");
    screen.expect("dpstack> show port ");
    screen.keys("su\t");
    screen.expect("dpstack> show port summary ");
    screen.keys("all\r");
    screen.expect(
        "Number of available ports: 2\r\n\
         Port MAC Address       Name         Driver         Status   Link\r\n0    ",
    );
    screen.expect(" net_null0    net_null       up       10 Gbps\r\n1    ");
    screen.expect(" net_null1    net_null       up       10 Gbps\r\n");
    screen.expect(PROMPT);

    // "stats" or "summary": the first Tab adds nothing, the second lists.
    screen.keys("show port s\t");
    screen.keys("\t");
    screen.expect(
        "\r\n stats [Fixed STRING]: show port stats (port_id|all): Display port statistics, \
         with rates since the last show.\r\n summary [Fixed STRING]: show port summary \
         (port_id|all): Display a line per port: MAC address, name, driver, link.\r\n",
    );
    screen.expect("dpstack> show port s");
    screen.keys("ummary 1\r");
    screen.expect(
        "Number of available ports: 2\r\n\
         Port MAC Address       Name         Driver         Status   Link\r\n1    ",
    );
    screen.expect(" net_null1    net_null       up       10 Gbps\r\n");
    screen.expect(PROMPT);

    // A Tab that completes a port argument: "all" is the only word with "a".
    screen.keys("clear port stats a\t\r");
    screen.expect(
        "\r\n  NIC statistics for port 0 cleared\r\n\r\n  NIC statistics for port 1 cleared\r\n",
    );
    screen.expect(PROMPT);

    screen.keys("\x04");
    screen.expect("Port 0 is closed\r\nPort 1 is closed\r\nDone\r\n\r\nBye...\r\n");
    assert_eq!(screen.exit_code(), 0, "Ctrl-D quits cleanly");
}

#[test]
fn question_mark_lists_with_help_history_recalls_and_ctrl_c_clears() {
    let mut screen = Screen::console();
    screen.keys("set fwd ?");
    screen.expect(
        "\r\n io [Mul-choice STRING]: set fwd io: forward packets unchanged to the peer port\r\n \
         mac [Mul-choice STRING]: set fwd mac: set source MAC to the tx port's, destination to \
         its peer (--eth-peer)\r\n macswap [Mul-choice STRING]: set fwd macswap: swap source \
         and destination MAC, then forward\r\n rxonly [Mul-choice STRING]: set fwd rxonly: \
         receive and free packets\r\n txonly [Mul-choice STRING]: set fwd txonly: send 64-byte \
         UDP/IPv4 packets, receive nothing\r\n",
    );
    screen.expect("dpstack> set fwd ");
    screen.keys("macs\t");
    screen.expect("dpstack> set fwd macswap ");
    screen.keys("\r");
    screen.expect("Set macswap packet forwarding mode\r\n");
    screen.expect(PROMPT);

    screen.keys("start ?");
    screen.expect(
        "\r\n [RETURN]\r\n tx_first [Fixed STRING]: start tx_first: Start packet forwarding \
         with current config after sending one burst of packets.\r\n",
    );
    screen.expect("dpstack> start ");
    screen.keys("\x03");
    screen.expect(PROMPT);

    screen.keys("show config fwd\r");
    screen.expect("macswap packet forwarding - ports=2 - cores=1 - streams=2");
    screen.expect(PROMPT);
    screen.keys("set fwd rxonly\r");
    screen.expect("Set rxonly packet forwarding mode\r\n");
    screen.expect(PROMPT);
    // Up, Up: the command before the last one.
    screen.keys("\x1b[A\x1b[A\r");
    screen.expect("rxonly packet forwarding - ports=2 - cores=1 - streams=2");
    screen.expect(PROMPT);

    // Ctrl-C drops the half-typed line.
    screen.keys("frobnicate");
    screen.keys("\x03");
    screen.expect(PROMPT);
    screen.keys("show fwd stats all\r");
    screen.expect("Accumulated forward statistics for all ports");
    screen.expect(PROMPT);
    screen.keys("quit\r");
    screen.expect("Bye...\r\n");
    assert!(
        !screen.transcript.contains("Command not found")
            && !screen.transcript.contains("Bad arguments"),
        "a listing or a cleared line never runs:\n{}",
        screen.transcript
    );
    assert_eq!(screen.exit_code(), 0);
}

/// No key was echoed by the terminal itself (a control key shown as `^X`
/// means it left raw mode and the key was not edited) and every line ran.
fn assert_no_literal_keys_and_no_errors(transcript: &str) {
    assert!(
        !transcript.contains('^'),
        "a key was echoed instead of edited:\n{transcript}"
    );
    assert!(
        !transcript.contains("Command not found") && !transcript.contains("Bad arguments"),
        "a line ran other than as typed:\n{transcript}"
    );
}

#[test]
fn keys_typed_while_question_mark_lists_are_applied_in_order() {
    let mut screen = Screen::console();
    screen.keys("set fwd ");
    screen.expect("set fwd ");
    // One burst, sent before the listing can have been printed: each line
    // below is what the keys leave on the command line.
    screen.keys(concat!(
        "?io\r",                                                 // set fwd io
        "burst 21\x01set \r",                                    // Ctrl-A: set burst 21
        "set burst 32 junk\x1b[D\x1b[D\x1b[D\x1b[D\x1b[D\x0b\r", // Left x5, Ctrl-K: set burst 32
        "frob\x15set burst 45\x7f\x7f4\r", // Ctrl-U, Backspace x2: set burst 4
        "set fwd rx?only\r",               // a second listing: set fwd rxonly
        "\x1b[A\x1b[A\x1b[A\r",            // Up x3: set burst 32
        "show config fwd\r",
    ));
    screen.expect("\r\n io [Mul-choice STRING]: set fwd io: ");
    screen.expect(" txonly [Mul-choice STRING]: ");
    screen.expect("dpstack> set fwd ");
    screen.expect("Set io packet forwarding mode\r\n");
    screen.expect("Number of packets per burst set to 21\r\n");
    screen.expect("Number of packets per burst set to 32\r\n");
    screen.expect("Number of packets per burst set to 4\r\n");
    screen.expect("\r\n rxonly [Mul-choice STRING]: set fwd rxonly: ");
    screen.expect("dpstack> set fwd rx");
    screen.expect("Set rxonly packet forwarding mode\r\n");
    screen.expect("Number of packets per burst set to 32\r\n");
    screen.expect("rxonly packet forwarding - ports=2 - cores=1 - streams=2");
    screen.expect(PROMPT);
    screen.keys("quit\r");
    screen.expect("Bye...\r\n");
    assert_no_literal_keys_and_no_errors(&screen.transcript);
    assert_eq!(screen.exit_code(), 0);
}

#[test]
fn keys_typed_while_a_second_tab_lists_are_applied_in_order() {
    let mut screen = Screen::console();
    screen.keys("show port s");
    screen.expect("show port s");
    // One burst, as above; the second Tab of each pair lists.
    screen.keys(concat!(
        "\t\tummary 1\r",                                // show port summary 1
        "show port summry 0\x1b[D\x1b[D\x1b[D\x1b[Da\r", // Left x4: show port summary 0
        "clear port stats \t\tal\t\r",                   // a listing, then Tab completes all
        "set fwd mac\t\tswap\r",                         // set fwd macswap
        "show config fwd\r",
    ));
    screen.expect("\r\n stats [Fixed STRING]: show port stats ");
    screen.expect("\r\n summary [Fixed STRING]: show port summary ");
    screen.expect("dpstack> show port s");
    screen.expect("Port MAC Address       Name         Driver         Status   Link\r\n1    ");
    screen.expect(" net_null1    net_null       up       10 Gbps\r\n");
    screen.expect("Port MAC Address       Name         Driver         Status   Link\r\n0    ");
    screen.expect(" net_null0    net_null       up       10 Gbps\r\n");
    screen.expect("\r\n all [Fixed STRING]: clear port stats (port_id|all): ");
    screen.expect("dpstack> clear port stats ");
    screen.expect(
        "\r\n  NIC statistics for port 0 cleared\r\n\r\n  NIC statistics for port 1 cleared\r\n",
    );
    screen.expect("\r\n macswap [Mul-choice STRING]: set fwd macswap: ");
    screen.expect("dpstack> set fwd mac");
    screen.expect("Set macswap packet forwarding mode\r\n");
    screen.expect("macswap packet forwarding - ports=2 - cores=1 - streams=2");
    screen.expect(PROMPT);
    screen.keys("quit\r");
    screen.expect("Bye...\r\n");
    assert_no_literal_keys_and_no_errors(&screen.transcript);
    assert_eq!(screen.exit_code(), 0);
}

#[test]
fn a_signal_while_editing_restores_the_terminal_and_exits_cleanly() {
    // sh runs the console, then prints the terminal's mode.
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(r#"echo "shell $$"; "$0" "$@"; echo "exit $?"; stty -a"#)
        .arg(env!("CARGO_BIN_EXE_dpstack-console"))
        .args(child_eal_args(&NULL_PAIR))
        .args(["--", "-i"]);
    let mut screen = Screen::spawn(command);
    let shell: u32 = screen
        .transcript
        .split("shell ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("no shell pid in:\n{}", screen.transcript));
    screen.keys("show po");
    screen.expect("show po");
    let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children"))
        .expect("the shell's children");
    let console: i32 = children
        .split_whitespace()
        .next()
        .and_then(|pid| pid.parse().ok())
        .expect("the console's pid");
    let killed = Command::new("kill")
        .args(["-TERM", &console.to_string()])
        .status()
        .expect("run kill");
    assert!(killed.success(), "kill -TERM {console}");
    screen.expect("Signal 15 received, preparing to exit...\r\n");
    screen.expect("Bye...\r\nexit 0\r\n");
    screen.expect(" icanon ");
    assert_eq!(screen.exit_code(), 0);
}
