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
//! Type-ahead is kept: keys that arrive while a listing prints are edited
//! after it, in order, as if typed later. The key handler prints the
//! listing itself and asks rustyline to repaint, so the line is never
//! handed back and the terminal never leaves raw mode for a listing:
//! unread keys wait in the tty's queue (neither echoed nor line-edited by
//! it) and the line, cursor, kill ring and history position stay those of
//! one edit. rustyline keeps the keys it has read but not used from one
//! line to the next (its `buffer-redux` feature), so keys typed behind an
//! Enter reach the next prompt. (rustyline's `ExternalPrinter` would print
//! only once no key is waiting, after the keys typed behind the `?`.)
//! For the repaint to land under the listing, the handler works out where
//! rustyline drew the line as its renderer does: the same wrapping at the
//! terminal's width, tab stops and character widths.
//!
//! rustyline runs on a thread of its own, one line per request, so the
//! main thread can watch for SIGINT/SIGTERM while a line is being edited.
//! On a signal the main thread puts back the terminal mode saved when the
//! prompt opened (the editor thread stays blocked in its read and ends with
//! the process). The state the key handlers share with the editor loop
//! (port ids, the last Tab) belongs to that one editor.

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
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use unicode_width::UnicodeWidthChar;

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
        // A pasted block of commands runs line by line, as in testpmd,
        // instead of landing as one multi-line command.
        .bracketed_paste(false)
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

/// Edits until a command line is entered (listings print on the way,
/// from the key handlers).
fn read_line(editor: &mut ConsoleEditor, state: &Shared) -> Edited {
    loop {
        let read = editor.readline(PROMPT);
        lock(state).last_tab = None;
        match read {
            Ok(line) => {
                if !line.trim().is_empty() {
                    let _ = editor.add_history_entry(line.as_str());
                }
                return Edited::Line(line);
            }
            // Ctrl-C: a fresh, empty line.
            Err(ReadlineError::Interrupted) => {}
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
            // As after a `?`: the next Tab on this line starts a new pair.
            state.last_tab = None;
            return Some(list(ctx));
        }
        state.last_tab = Some(here);
        Some(Cmd::Noop)
    }
}

/// `?`: list the alternatives now.
struct HelpKey(Shared);

impl ConditionalEventHandler for HelpKey {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        lock(&self.0).last_tab = None;
        Some(list(ctx))
    }
}

/// Prints, under the line being edited, the alternatives for what precedes
/// the cursor; returns the command that draws the prompt and the line again
/// under them. Runs inside rustyline's key handling, with the terminal in
/// raw mode; rustyline leaves output processing on there, so `\n` starts
/// a row at its first column, as its own renderer relies on.
fn list(ctx: &EventContext) -> Cmd {
    let (line, pos) = (ctx.line(), ctx.pos());
    let drawn = Drawn::of(line, pos, columns());
    let mut out = drawn.leave();
    for alternative in alternatives(&line[..pos]) {
        out.push_str(&alternative);
        out.push('\n');
    }
    out.push_str(&drawn.make_room());
    // Best effort, as println! would be without its panic: a terminal that
    // cannot be written to fails the next read too.
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush());
    Cmd::Repaint
}

/// The terminal's width in columns; 80 when it says 0 or cannot say, as
/// rustyline assumes.
fn columns() -> usize {
    match rustix::termios::tcgetwinsize(std::io::stdout()) {
        Ok(size) if size.ws_col > 0 => usize::from(size.ws_col),
        _ => 80,
    }
}

/// rustyline's tab stop (its default).
const TAB_STOP: usize = 8;

/// A place on the screen, counted from the prompt's first character.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Place {
    row: usize,
    col: usize,
}

impl Place {
    /// Where `text` printed from here ends, wrapping at `cols` as
    /// rustyline's renderer counts (`calculate_position`): a character that
    /// does not fit goes to the next row, and a row filled to the last
    /// column ends at the start of the next one.
    fn after(self, text: &str, cols: usize) -> Place {
        let mut at = self;
        for c in text.chars() {
            if c == '\n' {
                at = Place {
                    row: at.row + 1,
                    col: 0,
                };
                continue;
            }
            let width = if c == '\t' {
                TAB_STOP - at.col % TAB_STOP
            } else {
                c.width().unwrap_or(0)
            };
            at.col += width;
            if at.col > cols {
                at = Place {
                    row: at.row + 1,
                    col: width,
                };
            }
        }
        if at.col == cols {
            at = Place {
                row: at.row + 1,
                col: 0,
            };
        }
        at
    }
}

/// How rustyline has drawn the prompt and the line: where its cursor is
/// and where the line ends (nothing follows it: the helper gives no hints).
#[derive(Debug, PartialEq, Eq)]
struct Drawn {
    cursor: Place,
    end: Place,
}

impl Drawn {
    fn of(line: &str, pos: usize, cols: usize) -> Drawn {
        let cursor = Place::default()
            .after(PROMPT, cols)
            .after(&line[..pos], cols);
        Drawn {
            cursor,
            end: cursor.after(&line[pos..], cols),
        }
    }

    /// Moves from the cursor to the start of the row under the line, so a
    /// listing does not overwrite it.
    fn leave(&self) -> String {
        let mut out = String::new();
        if self.end.row > self.cursor.row {
            let _ = write!(out, "\x1b[{}B", self.end.row - self.cursor.row);
        }
        // A line that fills its last row was ended with a newline by
        // rustyline: the row under it is already the cursor's.
        if self.end.col == 0 && self.end.row > 0 {
            out.push('\r');
        } else {
            out.push('\n');
        }
        out
    }

    /// From the start of the row under a listing, goes where rustyline
    /// believes its cursor is, counting from that row: its repaint moves
    /// down to the line's last row and clears the rows up to the first,
    /// which is then the row under the listing. The newlines add rows at
    /// the bottom of the screen for that move down.
    fn make_room(&self) -> String {
        let mut out = "\n".repeat(self.end.row);
        if self.end.row > self.cursor.row {
            let _ = write!(out, "\x1b[{}A", self.end.row - self.cursor.row);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(row: usize, col: usize) -> Place {
        Place { row, col }
    }

    #[test]
    fn places_wrap_as_rustyline_draws() {
        let start = Place::default();
        assert_eq!(start.after("dpstack> ", 80), place(0, 9));
        // Filling the last column ends at the start of the next row.
        assert_eq!(start.after(&"x".repeat(80), 80), place(1, 0));
        assert_eq!(start.after(&"x".repeat(81), 80), place(1, 1));
        // A wide character that does not fit goes whole to the next row.
        assert_eq!(place(0, 79).after("\u{4e00}", 80), place(1, 2));
        assert_eq!(place(0, 3).after("\t", 80), place(0, 8));
        assert_eq!(place(0, 3).after("e\u{301}", 80), place(0, 4));
    }

    #[test]
    fn a_one_row_line_lists_on_the_next_row_and_repaints_there() {
        let drawn = Drawn::of("set fwd ", 8, 80);
        assert_eq!(
            drawn,
            Drawn {
                cursor: place(0, 17),
                end: place(0, 17)
            }
        );
        assert_eq!(drawn.leave(), "\n");
        assert_eq!(drawn.make_room(), "");
    }

    #[test]
    fn a_wrapped_line_lists_under_its_last_row_and_leaves_room_for_it() {
        // 9 + 30 columns on a 20-column screen: rows 0 to 1, end at (1, 19);
        // the cursor after "show " is at (0, 14).
        let line = format!("show {}", "x".repeat(25));
        let drawn = Drawn::of(&line, 5, 20);
        assert_eq!(
            drawn,
            Drawn {
                cursor: place(0, 14),
                end: place(1, 19)
            }
        );
        assert_eq!(drawn.leave(), "\x1b[1B\n");
        assert_eq!(drawn.make_room(), "\n\x1b[1A");
        // A line that ends exactly at the last column: rustyline already
        // moved to the next row.
        let drawn = Drawn::of(&"x".repeat(11), 11, 20);
        assert_eq!(
            drawn,
            Drawn {
                cursor: place(1, 0),
                end: place(1, 0)
            }
        );
        assert_eq!(drawn.leave(), "\r");
        assert_eq!(drawn.make_room(), "\n");
    }
}
