//! The interactive prompt (`-i`): a small testpmd-style command set.
//!
//! Lines come from a reader thread over a channel, so the prompt also notices
//! SIGINT/SIGTERM while it waits. End of input (Ctrl-D) quits like `quit`.
//! The full console (completion, `?` help, more commands) is a later step.

use crate::engines::{ForwardMode, ENGINES};
use crate::session::Session;
use crossbeam_channel::{Receiver, RecvTimeoutError};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// What the prompt loop should do after a command.
#[derive(Debug, PartialEq, Eq)]
pub enum Flow {
    /// Read the next command.
    Continue,
    /// Leave the prompt.
    Quit,
}

const HELP: &str = "\
Commands:
  start [tx_first]                  start forwarding (tx_first: send one burst first)
  stop                              stop forwarding and show forward statistics
  show port stats|xstats (N|all)    port counters (stats: with rates since last show)
  show port summary all             ports, MACs, drivers, links
  clear port stats (N|all)          reset port counters
  show fwd stats all                forward statistics (live while forwarding)
  set fwd MODE                      choose the engine for the next start
  help                              this text
  quit                              stop, close the ports and exit
";

/// Runs the prompt until `quit`, end of input, or a signal.
pub fn run(session: &mut Session, lines: &Receiver<String>, signal: &AtomicUsize) {
    prompt();
    loop {
        if signal.load(Ordering::SeqCst) != 0 {
            return;
        }
        match lines.recv_timeout(Duration::from_millis(100)) {
            Ok(line) => {
                let output = execute(session, &line);
                print!("{}", output.0);
                if output.1 == Flow::Quit {
                    return;
                }
                prompt();
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                println!();
                return;
            }
        }
    }
}

fn prompt() {
    print!("dpstack> ");
    let _ = std::io::stdout().flush();
}

/// Executes one command line; returns its output and what to do next.
pub fn execute(session: &mut Session, line: &str) -> (String, Flow) {
    let words: Vec<&str> = line.split_whitespace().collect();
    let result = match words.as_slice() {
        [] => Ok(String::new()),
        ["quit"] | ["exit"] => return (String::new(), Flow::Quit),
        ["help"] => Ok(help()),
        ["start"] => session.start(false).map_err(|e| e.to_string()),
        ["start", "tx_first"] => session.start(true).map_err(|e| e.to_string()),
        ["stop"] => Ok(session.stop()),
        ["show", "port", "stats", which] => ports(session, which)
            .and_then(|p| session.show_port_stats(&p).map_err(|e| e.to_string())),
        ["show", "port", "xstats", which] => ports(session, which)
            .and_then(|p| session.show_port_xstats(&p).map_err(|e| e.to_string())),
        ["show", "port", "summary", "all"] => {
            session.show_port_summary().map_err(|e| e.to_string())
        }
        ["clear", "port", "stats", which] => ports(session, which)
            .and_then(|p| session.clear_port_stats(&p).map_err(|e| e.to_string())),
        ["show", "fwd", "stats", "all"] => Ok(session.show_forward_stats()),
        ["set", "fwd", mode] => match ForwardMode::from_name(mode) {
            Some(mode) => Ok(session.set_forward_mode(mode)),
            None => Err(format!(
                "Invalid forwarding mode '{mode}': choose one of {}",
                ENGINES.iter().map(|e| e.name).collect::<Vec<_>>().join(" ")
            )),
        },
        [first, ..] if is_known(first) => Err("Bad arguments".into()),
        _ => Err("Command not found".into()),
    };
    match result {
        Ok(text) => (text, Flow::Continue),
        Err(text) => (format!("{text}\n"), Flow::Continue),
    }
}

fn help() -> String {
    let mut text = HELP.to_owned();
    text.push_str("Forwarding modes (set fwd MODE):\n");
    for engine in ENGINES {
        text.push_str(&format!("  {:<10} {}\n", engine.name, engine.help));
    }
    text
}

fn is_known(word: &str) -> bool {
    ["start", "stop", "show", "clear", "set", "help", "quit"].contains(&word)
}

/// Port indexes named by `which` ("all" or a port id).
fn ports(session: &Session, which: &str) -> Result<Vec<usize>, String> {
    let all = session.ports();
    if which == "all" {
        return Ok((0..all.len()).collect());
    }
    let valid = || {
        let ids: Vec<String> = all.iter().map(|p| p.id().to_string()).collect();
        format!("The valid ports array is [ {} ]", ids.join(" "))
    };
    let id: u16 = which
        .parse()
        .map_err(|_| format!("Invalid port {which}\n{}", valid()))?;
    all.iter()
        .position(|p| p.id() == id)
        .map(|i| vec![i])
        .ok_or_else(|| format!("Invalid port {id}\n{}", valid()))
}
