//! Control commands: start and stop forwarding, quit, help.

use super::{Command, Reply, Section, Token, Value, HELP_TOPICS};
use crate::session::Session;

/// The control section of the command table.
pub const COMMANDS: &[Command] = &[
    Command {
        tokens: &[Token::Word("start")],
        help: "Start packet forwarding with current configuration.",
        section: Section::Control,
        run: start,
    },
    Command {
        tokens: &[Token::Word("start"), Token::Word("tx_first")],
        help: "Start packet forwarding with current config after sending one burst of packets.",
        section: Section::Control,
        run: start_tx_first,
    },
    Command {
        tokens: &[Token::Word("stop")],
        help: "Stop packet forwarding, and display accumulated statistics.",
        section: Section::Control,
        run: stop,
    },
    Command {
        tokens: &[Token::Word("quit")],
        help: "Stop forwarding, close the ports and exit.",
        section: Section::Control,
        run: quit,
    },
    Command {
        tokens: &[Token::Word("help")],
        help: "List the help sections.",
        section: Section::Control,
        run: help,
    },
    Command {
        tokens: &[Token::Word("help"), Token::Choice(HELP_TOPICS)],
        help: "Show the commands of a section, or of all.",
        section: Section::Control,
        run: help,
    },
];

fn start(session: &mut Session, _: &[Value]) -> Result<Reply, String> {
    session.start(false).map(Reply::Print)
}

fn start_tx_first(session: &mut Session, _: &[Value]) -> Result<Reply, String> {
    session.start(true).map(Reply::Print)
}

fn stop(session: &mut Session, _: &[Value]) -> Result<Reply, String> {
    Ok(Reply::Print(session.stop()))
}

fn quit(_: &mut Session, _: &[Value]) -> Result<Reply, String> {
    Ok(Reply::Quit)
}

fn help(_: &mut Session, values: &[Value]) -> Result<Reply, String> {
    let topic = match values {
        [Value::Word(topic)] => Some(*topic),
        _ => None,
    };
    Ok(Reply::Print(super::help::text(topic)))
}
