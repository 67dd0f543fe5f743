//! The console's commands: one declarative table from which parsing, Tab
//! completion, `?` listings and `help` are all generated.
//!
//! A [`Command`] is its words and argument kinds ([`Token`]s), one line of
//! help, the `help` section it belongs to, and its handler. Each group of
//! commands (testpmd's help sections: control, display, config, ports, and
//! the stack's) is a module with a `COMMANDS` slice; [`GROUPS`] lists the
//! slices in the order `help all` shows them. A new group is one module,
//! one [`Section`] and one line in [`GROUPS`]. Optional words (`[count N]`)
//! are one row per form.
//!
//! Invariants: a line runs at most one command, the first in table order
//! whose tokens accept its words one for one (a unit test checks that no
//! two commands accept the same line); a handler gets one [`Value`] per
//! non-[`Token::Word`] token, in token order, of the kind the token
//! promises. Nothing here prints: the caller prints what [`execute`]
//! returns.

mod complete;
mod config;
mod control;
mod display;
mod help;
mod ports;
mod queues;
mod stack;

pub use complete::{alternatives, Completion};

use crate::engines::ForwardMode;
use crate::session::Session;
use dpstack::stack::iface::Prefix;
use dpstack::stack::route::Ipv4Cidr;
use std::fmt::Write;
use std::net::{IpAddr, SocketAddr};

/// A `help` section: a group of commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// Start and stop forwarding, quit.
    Control,
    /// Show ports, statistics and settings.
    Display,
    /// Forwarding settings.
    Config,
    /// Port operations.
    Ports,
    /// The TCP/IP stack of stack mode.
    Stack,
}

impl Section {
    /// Every section, in the order `help` lists them.
    pub const ALL: [Section; 5] = [
        Section::Control,
        Section::Display,
        Section::Config,
        Section::Ports,
        Section::Stack,
    ];

    /// The word after `help`.
    pub fn name(self) -> &'static str {
        match self {
            Section::Control => "control",
            Section::Display => "display",
            Section::Config => "config",
            Section::Ports => "ports",
            Section::Stack => "stack",
        }
    }

    /// The section's heading in `help SECTION` (testpmd's).
    fn title(self) -> &'static str {
        match self {
            Section::Control => "Control forwarding:",
            Section::Display => "Display:",
            Section::Config => "Configuration:",
            Section::Ports => "Port Operations:",
            Section::Stack => "TCP/IP stack (set fwd stack):",
        }
    }

    /// The section's line in the plain `help` (testpmd's).
    fn summary(self) -> &'static str {
        match self {
            Section::Control => "Start and stop forwarding.",
            Section::Display => "Displaying port, stats and config information.",
            Section::Config => "Configuration information.",
            Section::Ports => "Configuring ports.",
            Section::Stack => "The TCP/IP stack: addresses, routes, ping, echo.",
        }
    }

    /// A line printed under the heading, if any.
    fn note(self) -> Option<&'static str> {
        match self {
            Section::Config => Some(
                "Configuration changes only become active when forwarding is started/restarted.",
            ),
            Section::Stack => Some(
                "These act on the stack while it runs: set fwd stack, then start. Addresses, \
                 routes and services stay across stop and start. The stack runs a pipeline per \
                 forwarding lcore (set nbcore N), each on its queue of every port (N rx \
                 queues, at least N tx queues).",
            ),
            _ => None,
        }
    }
}

/// The words `help` takes: every section's name, then `all`.
pub const HELP_TOPICS: &[&str] = &["control", "display", "config", "ports", "stack", "all"];

/// What one word of a command accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Token {
    /// Exactly this word.
    Word(&'static str),
    /// One of these words (the handler gets [`Value::Word`]).
    Choice(&'static [&'static str]),
    /// A forwarding mode's name from the engines table ([`Value::Mode`]).
    Mode,
    /// A port id ([`Value::Port`] with [`PortSel::Id`]).
    Port,
    /// A port id or `all` ([`Value::Port`]).
    PortOrAll,
    /// A number from 0 to 65535, named for help ([`Value::Number`]).
    Number(&'static str),
    /// An IPv4 or IPv6 address ([`Value::Addr`]).
    Addr,
    /// `ADDR/LEN` of either family, a bare address (a host prefix), or
    /// `default` (0.0.0.0/0) ([`Value::Prefix`]).
    Prefix,
    /// `IPV4:PORT` or `[IPV6]:PORT` ([`Value::Endpoint`]).
    Endpoint,
    /// Any word of at most [`TEXT_MAX`] bytes, named for help
    /// ([`Value::Text`]): hex keys, masks, `(entry,queue)` lists.
    Text(&'static str),
}

/// The longest word a [`Token::Text`] takes.
pub const TEXT_MAX: usize = 512;

/// The value of one argument token. A command line's few values are made
/// once per command, so the inline text's size costs nothing that matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)]
pub enum Value {
    /// The word given for a [`Token::Choice`].
    Word(&'static str),
    /// A forwarding mode.
    Mode(ForwardMode),
    /// A port selection.
    Port(PortSel),
    /// A number.
    Number(u16),
    /// An address.
    Addr(IpAddr),
    /// A prefix.
    Prefix(Prefix),
    /// An address and port.
    Endpoint(SocketAddr),
    /// The word given for a [`Token::Text`].
    Text(arrayvec::ArrayString<TEXT_MAX>),
}

/// Which ports a command applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortSel {
    /// Every open port.
    All,
    /// The port with this id.
    Id(u16),
}

/// What a command asks of the prompt after it ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Print this text and read the next command.
    Print(String),
    /// Leave the prompt (`quit`).
    Quit,
}

/// A command's handler: the session and the argument values; `Err` is an
/// error message (printed like any output).
pub type Handler = fn(&mut Session, &[Value]) -> Result<Reply, String>;

/// One row of the command table.
pub struct Command {
    /// Its words, one token each.
    pub tokens: &'static [Token],
    /// One line of help.
    pub help: &'static str,
    /// Its `help` section.
    pub section: Section,
    /// What it does.
    pub run: Handler,
}

/// Every group of commands, in `help all` order.
const GROUPS: &[&[Command]] = &[
    control::COMMANDS,
    display::COMMANDS,
    config::COMMANDS,
    ports::COMMANDS,
    queues::COMMANDS,
    stack::COMMANDS,
    crate::stack::rtp::COMMANDS,
];

/// Every command, in table order.
pub fn commands() -> impl Iterator<Item = &'static Command> {
    GROUPS.iter().flat_map(|group| group.iter())
}

impl Token {
    /// The token's value for `word`: `None` if it does not accept the word,
    /// `Some(None)` for an accepted fixed word.
    fn accept(self, word: &str) -> Option<Option<Value>> {
        match self {
            Token::Word(w) => (w == word).then_some(None),
            Token::Choice(choices) => choices
                .iter()
                .find(|c| **c == word)
                .map(|c| Some(Value::Word(c))),
            Token::Mode => ForwardMode::from_name(word).map(|m| Some(Value::Mode(m))),
            Token::Port => parse_u16(word).map(|id| Some(Value::Port(PortSel::Id(id)))),
            Token::PortOrAll if word == "all" => Some(Some(Value::Port(PortSel::All))),
            Token::PortOrAll => parse_u16(word).map(|id| Some(Value::Port(PortSel::Id(id)))),
            Token::Number(_) => parse_u16(word).map(|n| Some(Value::Number(n))),
            Token::Addr => word.parse().ok().map(|ip| Some(Value::Addr(ip))),
            Token::Prefix => parse_prefix(word).map(|p| Some(Value::Prefix(p))),
            Token::Endpoint => word.parse().ok().map(|a| Some(Value::Endpoint(a))),
            Token::Text(_) => arrayvec::ArrayString::from(word)
                .ok()
                .map(|t| Some(Value::Text(t))),
        }
    }

    /// How `help` writes the token: `start`, `(on|off)`, `(port_id|all)`.
    fn syntax(self) -> String {
        match self {
            Token::Word(w) => w.to_owned(),
            Token::Choice(choices) => format!("({})", choices.join("|")),
            Token::Mode => format!("({})", ForwardMode::names().join("|")),
            Token::Port => "(port_id)".to_owned(),
            Token::PortOrAll => "(port_id|all)".to_owned(),
            Token::Number(name) => format!("({name})"),
            Token::Addr => "(ip_addr)".to_owned(),
            Token::Prefix => "(ip_addr/len|default)".to_owned(),
            Token::Endpoint => "(ip_addr:port)".to_owned(),
            Token::Text(name) => format!("({name})"),
        }
    }
}

/// A [`Token::Prefix`] word.
fn parse_prefix(word: &str) -> Option<Prefix> {
    if word == "default" {
        return Some(Prefix::V4(Ipv4Cidr::DEFAULT));
    }
    if word.contains('/') {
        return word.parse().ok();
    }
    Some(match word.parse().ok()? {
        IpAddr::V4(addr) => Prefix::V4(Ipv4Cidr { addr, len: 32 }),
        IpAddr::V6(addr) => Prefix::V6(dpstack::stack::route::Ipv6Cidr { addr, len: 128 }),
    })
}

fn parse_u16(word: &str) -> Option<u16> {
    if word.bytes().all(|b| b.is_ascii_digit()) {
        word.parse().ok()
    } else {
        None
    }
}

impl Command {
    /// The command as `help` writes it: `show port stats (port_id|all)`.
    pub fn syntax(&self) -> String {
        let words: Vec<String> = self.tokens.iter().map(|t| t.syntax()).collect();
        words.join(" ")
    }

    /// The argument values if the command accepts exactly `words`.
    fn accept(&self, words: &[&str]) -> Option<Vec<Value>> {
        if words.len() != self.tokens.len() {
            return None;
        }
        let mut values = Vec::new();
        for (token, word) in self.tokens.iter().zip(words) {
            if let Some(value) = token.accept(word)? {
                values.push(value);
            }
        }
        Some(values)
    }

    /// True if the command's first tokens accept `words`.
    fn accepts_prefix(&self, words: &[&str]) -> bool {
        words.len() <= self.tokens.len()
            && self
                .tokens
                .iter()
                .zip(words)
                .all(|(t, w)| t.accept(w).is_some())
    }
}

/// Why a line is not a command (testpmd's messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// Its first word starts a command, the rest does not fit one.
    BadArguments,
    /// No command starts with its first word.
    NotFound,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ParseError::BadArguments => "Bad arguments",
            ParseError::NotFound => "Command not found",
        })
    }
}

/// The command `line` names and its argument values; `Ok(None)` for a
/// blank line or a `#` comment.
pub fn parse(line: &str) -> Result<Option<(&'static Command, Vec<Value>)>, ParseError> {
    let words: Vec<&str> = line.split_whitespace().collect();
    if words.is_empty() || words[0].starts_with('#') {
        return Ok(None);
    }
    if let Some(found) = commands().find_map(|c| c.accept(&words).map(|v| (c, v))) {
        return Ok(Some(found));
    }
    if commands().any(|c| c.accepts_prefix(&words[..1])) {
        Err(ParseError::BadArguments)
    } else {
        Err(ParseError::NotFound)
    }
}

/// Runs one line: a command, or (ending in `?`) the listing of what may
/// come next, as testpmd prints for `?`.
pub fn execute(session: &mut Session, line: &str) -> Reply {
    let line = line.trim();
    if line.starts_with('#') {
        return Reply::Print(String::new());
    }
    if let Some(before) = line.strip_suffix('?') {
        let mut text = String::new();
        for alternative in alternatives(before) {
            let _ = writeln!(text, "{alternative}");
        }
        return Reply::Print(text);
    }
    let outcome = match parse(line) {
        Ok(None) => return Reply::Print(String::new()),
        Ok(Some((command, values))) => (command.run)(session, &values),
        Err(e) => Err(e.to_string()),
    };
    match outcome {
        Ok(reply) => reply,
        Err(message) => Reply::Print(format!("{message}\n")),
    }
}

/// The port selection among a handler's values (its table row has a port
/// token).
fn port_arg(values: &[Value]) -> Result<PortSel, String> {
    find_value(values, |v| match v {
        Value::Port(sel) => Some(*sel),
        _ => None,
    })
}

/// The first value `pick` takes, or "Bad arguments".
fn find_value<'a, T>(
    values: &'a [Value],
    pick: impl Fn(&'a Value) -> Option<T>,
) -> Result<T, String> {
    values
        .iter()
        .find_map(pick)
        .ok_or_else(|| ParseError::BadArguments.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::ENGINES;

    /// A line `command` accepts: each token's first choice, port 0, 1.
    fn sample(command: &Command) -> String {
        let words: Vec<String> = command
            .tokens
            .iter()
            .map(|t| match t {
                Token::Word(w) => (*w).to_owned(),
                Token::Choice(c) => c[0].to_owned(),
                Token::Mode => ENGINES[0].name.to_owned(),
                Token::Port | Token::PortOrAll => "0".to_owned(),
                Token::Number(_) => "1".to_owned(),
                Token::Addr => "10.0.0.2".to_owned(),
                Token::Prefix => "10.0.0.1/24".to_owned(),
                Token::Endpoint => "10.0.0.2:6000".to_owned(),
                Token::Text(_) => "(0,1)".to_owned(),
            })
            .collect();
        words.join(" ")
    }

    #[test]
    fn every_command_is_reached_by_its_own_sample_line() {
        for command in commands() {
            let line = sample(command);
            let (found, _) = parse(&line).expect("parses").expect("a command");
            assert!(
                std::ptr::eq(found, command),
                "'{line}' runs '{}', not '{}'",
                found.syntax(),
                command.syntax()
            );
        }
    }

    #[test]
    fn lines_parse_into_values_in_token_order() {
        let (c, v) = parse("  show port stats all ").unwrap().unwrap();
        assert_eq!(c.syntax(), "show port stats (port_id|all)");
        assert_eq!(v, [Value::Port(PortSel::All)]);
        let (c, v) = parse("set promisc 1 off").unwrap().unwrap();
        assert_eq!(c.syntax(), "set promisc (port_id|all) (on|off)");
        assert_eq!(v, [Value::Port(PortSel::Id(1)), Value::Word("off")]);
        let (_, v) = parse("set fwd macswap").unwrap().unwrap();
        assert_eq!(v, [Value::Mode(ForwardMode::MacSwap)]);
        let (_, v) = parse("show port 3 rss-hash").unwrap().unwrap();
        assert_eq!(v, [Value::Port(PortSel::Id(3))]);
        let (_, v) = parse("set burst 64").unwrap().unwrap();
        assert_eq!(v, [Value::Number(64)]);
        let (c, v) = parse("route add 2001:db8::/32 via fe80::1 port 1")
            .unwrap()
            .unwrap();
        assert_eq!(
            c.syntax(),
            "route add (ip_addr/len|default) via (ip_addr) port (port_id)"
        );
        assert_eq!(
            v,
            [
                Value::Prefix("2001:db8::/32".parse().unwrap()),
                Value::Addr("fe80::1".parse().unwrap()),
                Value::Port(PortSel::Id(1))
            ]
        );
        let (_, v) = parse("ip addr del 10.0.0.7").unwrap().unwrap();
        assert_eq!(v, [Value::Prefix("10.0.0.7/32".parse().unwrap())]);
        let (_, v) = parse("route del default").unwrap().unwrap();
        assert_eq!(v, [Value::Prefix(Prefix::V4(Ipv4Cidr::DEFAULT))]);
    }

    #[test]
    fn errors_are_testpmds() {
        for (line, error) in [
            ("frobnicate", ParseError::NotFound),
            ("show", ParseError::BadArguments),
            ("show port", ParseError::BadArguments),
            ("set fwd warp", ParseError::BadArguments),
            ("show port stats -1", ParseError::BadArguments),
            ("show port stats 70000", ParseError::BadArguments),
            ("set burst +5", ParseError::BadArguments),
            ("start now", ParseError::BadArguments),
            ("ping 10.0.0.300", ParseError::BadArguments),
            ("ip addr add 10.0.0.1/33", ParseError::BadArguments),
            ("route add 10.0.0.0/8", ParseError::BadArguments),
        ] {
            assert_eq!(parse(line).err(), Some(error), "{line}");
        }
        assert_eq!(ParseError::BadArguments.to_string(), "Bad arguments");
        assert_eq!(ParseError::NotFound.to_string(), "Command not found");
        assert_eq!(parse("   ").unwrap().map(|c| c.0.syntax()), None);
        assert_eq!(parse("# a comment").unwrap().map(|c| c.0.syntax()), None);
    }

    #[test]
    fn help_topics_are_the_sections_then_all() {
        let mut names: Vec<&str> = Section::ALL.iter().map(|s| s.name()).collect();
        names.push("all");
        assert_eq!(HELP_TOPICS, names.as_slice());
        for section in Section::ALL {
            assert!(
                commands().any(|c| c.section == section),
                "{} is empty",
                section.name()
            );
        }
    }

    #[test]
    fn set_fwd_takes_every_engine_and_only_those() {
        let set_fwd = commands()
            .find(|c| c.syntax().starts_with("set fwd"))
            .expect("set fwd");
        assert_eq!(
            set_fwd.syntax(),
            "set fwd (io|mac|macswap|rxonly|txonly|stack)"
        );
        for engine in ENGINES {
            let (c, v) = parse(&format!("set fwd {}", engine.name)).unwrap().unwrap();
            assert!(std::ptr::eq(c, set_fwd));
            assert_eq!(v, [Value::Mode(engine.mode)]);
        }
    }
}
