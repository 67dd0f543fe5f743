//! The prompt on a terminal: line editing and history (rustyline), Tab
//! completion, and the `?` / second-Tab listing of what may come next with
//! its help, all generated from the command table.
//!
//! Keys: Tab completes a unique word (adding a blank) or the candidates'
//! common prefix; a Tab that cannot add anything, pressed again on the same
//! line, lists the alternatives; `?` lists them at once (and is not
//! inserted). A listing is printed under the line, then the prompt comes
//! back with the line as it was. Up/Down walk the history, Ctrl-C clears
//! the line, Ctrl-D on an empty line ends the input (the caller quits).
//!
//! rustyline runs on a thread of its own, one line per request, so the
//! main thread can watch for SIGINT/SIGTERM while a line is being edited.
//! On a signal the main thread puts back the terminal mode saved when the
//! prompt opened (the editor thread stays blocked in its read and ends with
//! the process). The state the key handlers share with the editor loop
//! (port ids, the last Tab, a pending listing) belongs to that one editor.

use crate::commands::{alternatives, Completion};
use crate::interactive::{Input, PROMPT};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use nix::sys::termios::{tcgetattr, tcsetattr, SetArg, Termios};
use rustyline::completion::Completer;
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{
    Cmd, CompletionType, ConditionalEventHandler, Config, Context, Editor, Event, EventContext,
    EventHandler, KeyCode, KeyEvent, Modifiers, RepeatCount,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// What the editor thread sends back for a request.
enum Edited {
    /// A command line (already in the history).
    Line(String),
    /// Ctrl-D on an empty line.
    End,
    /// The terminal failed.
    Failed(String),
}

/// The terminal prompt: see the module documentation.
pub struct Terminal {
    /// Each request asks for one line; it carries the valid port ids.
    requests: Sender<Vec<u16>>,
    lines: Receiver<Edited>,
    saved: Termios,
}

impl Terminal {
    /// Opens the prompt on standard input (which must be a terminal).
    pub fn open() -> Result<Terminal, String> {
        let saved = tcgetattr(std::io::stdin())
            .map_err(|e| format!("cannot read the terminal's mode: {e}"))?;
        let editor = new_editor().map_err(|e| format!("cannot open a line editor: {e}"))?;
        let (requests, requested) = crossbeam_channel::unbounded();
        let (send_line, lines) = crossbeam_channel::unbounded();
        std::thread::Builder::new()
            .name("console-editor".into())
            .spawn(move || serve(editor, &requested, &send_line))
            .map_err(|e| format!("cannot start the line editor thread: {e}"))?;
        Ok(Terminal {
            requests,
            lines,
            saved,
        })
    }

    /// Reads one line with `ports` as the valid port ids for completion;
    /// returns early (terminal mode restored) when `signal` is set.
    pub fn next(&mut self, ports: Vec<u16>, signal: &AtomicUsize) -> Input {
        if self.requests.send(ports).is_err() {
            return Input::End;
        }
        loop {
            if signal.load(Ordering::SeqCst) != 0 {
                let _ = tcsetattr(std::io::stdin(), SetArg::TCSANOW, &self.saved);
                return Input::Signal;
            }
            match self.lines.recv_timeout(Duration::from_millis(100)) {
                Ok(Edited::Line(line)) => return Input::Line(line),
                Ok(Edited::End) | Err(RecvTimeoutError::Disconnected) => return Input::End,
                Ok(Edited::Failed(e)) => {
                    eprintln!("terminal error: {e}");
                    return Input::End;
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
    }
}

/// State shared by the key handlers and the editor loop of one editor.
#[derive(Debug, Default)]
struct KeyState {
    /// Valid port ids, for completion.
    ports: Vec<u16>,
    /// The line and cursor after the last Tab: a Tab that finds them
    /// unchanged (and cannot complete) lists the alternatives.
    last_tab: Option<(String, usize)>,
    /// Cursor position of a listing asked for by `?` or a second Tab.
    listing: Option<usize>,
}

type Shared = Arc<Mutex<KeyState>>;

fn lock(state: &Shared) -> MutexGuard<'_, KeyState> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

type ConsoleEditor = Editor<ConsoleHelper, DefaultHistory>;

/// A line editor with the console's helper and keys, and the state they
/// share with the editor loop.
fn new_editor() -> rustyline::Result<(ConsoleEditor, Shared)> {
    let config = Config::builder()
        .auto_add_history(false)
        .history_ignore_dups(true)?
        .max_history_size(1000)?
        .completion_type(CompletionType::List)
        .build();
    let mut editor = ConsoleEditor::with_config(config)?;
    let state = Shared::default();
    editor.set_helper(Some(ConsoleHelper {
        state: Arc::clone(&state),
    }));
    editor.bind_sequence(
        KeyEvent(KeyCode::Tab, Modifiers::NONE),
        EventHandler::Conditional(Box::new(TabKey(Arc::clone(&state)))),
    );
    editor.bind_sequence(
        KeyEvent(KeyCode::Char('?'), Modifiers::NONE),
        EventHandler::Conditional(Box::new(HelpKey(Arc::clone(&state)))),
    );
    Ok((editor, state))
}

/// The editor thread: one line per request until either side hangs up.
fn serve(
    (mut editor, state): (ConsoleEditor, Shared),
    requests: &Receiver<Vec<u16>>,
    lines: &Sender<Edited>,
) {
    while let Ok(ports) = requests.recv() {
        lock(&state).ports = ports;
        if lines.send(read_line(&mut editor, &state)).is_err() {
            return;
        }
    }
}

/// Edits until a command line is entered, printing listings on the way.
fn read_line(editor: &mut ConsoleEditor, state: &Shared) -> Edited {
    let mut initial = (String::new(), String::new());
    loop {
        let read = editor.readline_with_initial(PROMPT, (&initial.0, &initial.1));
        let mut state = lock(state);
        state.last_tab = None;
        match read {
            Ok(line) => {
                let Some(pos) = state.listing.take().filter(|&p| line.is_char_boundary(p)) else {
                    drop(state);
                    if !line.trim().is_empty() {
                        let _ = editor.add_history_entry(line.as_str());
                    }
                    return Edited::Line(line);
                };
                let (before, after) = line.split_at(pos);
                for alternative in alternatives(before) {
                    println!("{alternative}");
                }
                initial = (before.to_owned(), after.to_owned());
            }
            Err(ReadlineError::Interrupted) => {
                state.listing = None;
                initial = Default::default();
            }
            Err(ReadlineError::Eof) => return Edited::End,
            Err(e) => return Edited::Failed(e.to_string()),
        }
    }
}

/// rustyline's helper: completion from the command table.
struct ConsoleHelper {
    state: Shared,
}

impl Completer for ConsoleHelper {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        let ports = lock(&self.state).ports.clone();
        let completion = Completion::of(&line[..pos], &ports);
        let candidates = match completion.candidates.as_slice() {
            [only] => vec![format!("{only} ")],
            _ => completion.candidates,
        };
        Ok((completion.start, candidates))
    }
}

impl Hinter for ConsoleHelper {
    type Hint = String;
}

impl Highlighter for ConsoleHelper {}

impl Validator for ConsoleHelper {}

impl rustyline::Helper for ConsoleHelper {}

/// Tab: complete when that adds something, else list on the second Tab.
struct TabKey(Shared);

impl ConditionalEventHandler for TabKey {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        let mut state = lock(&self.0);
        let (line, pos) = (ctx.line(), ctx.pos());
        if let Some(extension) = Completion::of(&line[..pos], &state.ports).extension() {
            let mut completed = line.to_owned();
            completed.insert_str(pos, &extension);
            state.last_tab = Some((completed, pos + extension.len()));
            // The default binding runs the completer (ConsoleHelper), which
            // inserts the same extension.
            return None;
        }
        let here = (line.to_owned(), pos);
        if state.last_tab.as_ref() == Some(&here) {
            state.listing = Some(pos);
            return Some(Cmd::AcceptLine);
        }
        state.last_tab = Some(here);
        Some(Cmd::Noop)
    }
}

/// `?`: list the alternatives now.
struct HelpKey(Shared);

impl ConditionalEventHandler for HelpKey {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        lock(&self.0).listing = Some(ctx.pos());
        Some(Cmd::AcceptLine)
    }
}
