//! Configuration commands: the forwarding engine, burst size and number of
//! forwarding cores, which the next `start` uses.

use super::{Command, ParseError, Reply, Section, Token, Value};
use crate::session::Session;
use dpstack::stack::port::MAX_BURST;

/// The config section of the command table.
pub const COMMANDS: &[Command] = &[
    Command {
        tokens: &[Token::Word("set"), Token::Word("fwd"), Token::Mode],
        help: "Set packet forwarding mode.",
        section: Section::Config,
        run: set_fwd,
    },
    Command {
        tokens: &[
            Token::Word("set"),
            Token::Word("burst"),
            Token::Number("num"),
        ],
        help: "Set number of packets per burst.",
        section: Section::Config,
        run: set_burst,
    },
    Command {
        tokens: &[
            Token::Word("set"),
            Token::Word("nbcore"),
            Token::Number("num"),
        ],
        help: "Set number of forwarding cores (at most the worker lcores EAL has).",
        section: Section::Config,
        run: set_nbcore,
    },
];

fn set_fwd(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    match values {
        [Value::Mode(mode)] => Ok(Reply::Print(session.set_forward_mode(*mode))),
        _ => Err(ParseError::BadArguments.to_string()),
    }
}

fn set_burst(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    let [Value::Number(n)] = values else {
        return Err(ParseError::BadArguments.to_string());
    };
    let n = usize::from(*n);
    if n > MAX_BURST {
        return Err(format!(
            "nb pkt per burst: {n} > {MAX_BURST} (maximum packet per burst)  ignored"
        ));
    }
    if n == 0 {
        return Err(format!(
            "nb pkt per burst: 0 is not a burst size (1 to {MAX_BURST})  ignored"
        ));
    }
    session.config.burst = n;
    Ok(Reply::Print(format!(
        "Number of packets per burst set to {n}\n"
    )))
}

fn set_nbcore(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    match values {
        [Value::Number(n)] => session.set_nb_cores(usize::from(*n)).map(Reply::Print),
        _ => Err(ParseError::BadArguments.to_string()),
    }
}
