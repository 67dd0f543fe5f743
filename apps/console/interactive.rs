//! The prompt (`-i`) and `--cmdline-file`: commands one per line, run
//! through the command table until `quit`, end of input, or a signal.
//!
//! On a terminal the prompt edits lines (see `terminal`). Anything else (a
//! pipe, a file, or output not to a terminal) is read plainly, a line at a time, by a helper thread over
//! a channel, so the prompt also notices SIGINT/SIGTERM while it waits; a
//! line ending in `?` prints the listing `?` gives on a terminal. End of
//! input (Ctrl-D) quits like `quit`.
//!
//! `--cmdline-file` runs its lines as testpmd does: no echo, each command's
//! output, then `Read CLI commands from FILE`. A `quit` in the file ends
//! the file, not the console (testpmd 22.11 runs the file on a command
//! line of its own, which `quit` closes): what follows is the prompt with
//! `-i`, else forwarding until Enter. Only a signal ends the console there.

use crate::commands::{self, Reply};
use crate::session::Session;
use crate::terminal::Terminal;
use crossbeam_channel::{Receiver, RecvTimeoutError};
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The prompt.
pub const PROMPT: &str = "dpstack> ";

/// What the prompt got.
#[derive(Debug, PartialEq, Eq)]
pub enum Input {
    /// A command line.
    Line(String),
    /// End of input.
    End,
    /// SIGINT or SIGTERM arrived.
    Signal,
}

/// What to do after a batch of commands.
#[derive(Debug, PartialEq, Eq)]
pub enum Flow {
    /// Go on.
    Continue,
    /// Quit the console.
    Quit,
}

/// Where command lines come from.
pub enum Prompt {
    /// Plain lines from standard input (a pipe or a file).
    Plain(Receiver<String>),
    /// A terminal, with line editing.
    Terminal(Terminal),
}

impl Prompt {
    /// The terminal prompt if standard input and output are a terminal
    /// (and a line editor can run on it), else plain lines.
    pub fn open() -> Prompt {
        if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
            match Terminal::open() {
                Ok(terminal) => return Prompt::Terminal(terminal),
                Err(e) => eprintln!("{e}; reading plain lines instead"),
            }
        }
        Prompt::Plain(stdin_lines())
    }

    fn next(&mut self, ports: Vec<u16>, signal: &AtomicUsize) -> Input {
        match self {
            Prompt::Terminal(terminal) => terminal.next(ports, signal),
            Prompt::Plain(lines) => {
                print!("{PROMPT}");
                let _ = std::io::stdout().flush();
                loop {
                    if signal.load(Ordering::SeqCst) != 0 {
                        return Input::Signal;
                    }
                    match lines.recv_timeout(Duration::from_millis(100)) {
                        Ok(line) => return Input::Line(line),
                        Err(RecvTimeoutError::Timeout) => {}
                        Err(RecvTimeoutError::Disconnected) => {
                            println!();
                            return Input::End;
                        }
                    }
                }
            }
        }
    }
}

/// Runs the prompt until `quit`, end of input, or a signal.
pub fn run(session: &mut Session, prompt: &mut Prompt, signal: &AtomicUsize) {
    loop {
        match prompt.next(session.port_ids(), signal) {
            Input::Line(line) => {
                if run_line(session, &line) == Flow::Quit {
                    return;
                }
            }
            Input::End | Input::Signal => return,
        }
    }
}

/// Runs one command line and prints its output.
fn run_line(session: &mut Session, line: &str) -> Flow {
    let flow = match commands::execute(session, line) {
        Reply::Print(text) => {
            print!("{text}");
            Flow::Continue
        }
        Reply::Quit => Flow::Quit,
    };
    let _ = std::io::stdout().flush();
    flow
}

/// `--cmdline-file`: runs the lines of `script` (read from `path`) until
/// its end or a `quit` (both go on with the console: [`Flow::Continue`]),
/// or a signal ([`Flow::Quit`]).
pub fn run_script(session: &mut Session, path: &Path, script: &str, signal: &AtomicUsize) -> Flow {
    for line in script.lines() {
        if signal.load(Ordering::SeqCst) != 0 {
            return Flow::Quit;
        }
        if run_line(session, line) == Flow::Quit {
            break;
        }
    }
    println!("Read CLI commands from {}", path.display());
    Flow::Continue
}

/// Standard input, a line at a time, from a helper thread; the channel
/// disconnects at end of input.
pub fn stdin_lines() -> Receiver<String> {
    let (tx, rx) = crossbeam_channel::unbounded();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}
