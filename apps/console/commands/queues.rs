//! Multi-queue and RSS commands, with testpmd's words: queue counts, queue
//! facts and counters, the forwarding configuration per queue, and RSS hash
//! types, key and redirection table.

use super::{find_value, port_arg, Command, Reply, Section, Token, Value};
use crate::session::{Session, RSS_TYPES};

/// The multi-queue rows of the command table.
pub const COMMANDS: &[Command] = &[
    Command {
        tokens: &[
            Token::Word("port"),
            Token::Word("config"),
            Token::Word("all"),
            Token::Choice(&["rxq", "txq"]),
            Token::Number("num"),
        ],
        help: "Set the number of rx or tx queues of every port (ports stopped).",
        section: Section::Ports,
        run: config_queues,
    },
    Command {
        tokens: &[
            Token::Word("port"),
            Token::Word("config"),
            Token::Word("all"),
            Token::Word("rss"),
            Token::Choice(RSS_TYPES),
        ],
        help: "Set the RSS hash types of every port with RSS.",
        section: Section::Ports,
        run: config_rss,
    },
    Command {
        tokens: &[
            Token::Word("port"),
            Token::Word("config"),
            Token::Port,
            Token::Word("rss-hash-key"),
            Token::Choice(RSS_TYPES),
            Token::Text("hex"),
        ],
        help: "Set the RSS hash key (hex, e.g. 40 bytes) and hash types of port_id.",
        section: Section::Ports,
        run: config_rss_key,
    },
    Command {
        tokens: &[
            Token::Word("port"),
            Token::Word("config"),
            Token::Port,
            Token::Word("rss"),
            Token::Word("reta"),
            Token::Text("(entry,queue)[,(entry,queue)]"),
        ],
        help: "Point redirection table entries of port_id at rx queues.",
        section: Section::Ports,
        run: config_reta,
    },
    Command {
        tokens: &[
            Token::Word("show"),
            Token::Word("port"),
            Token::Port,
            Token::Word("rss"),
            Token::Word("reta"),
        ],
        help: "Display the RSS redirection table of port_id.",
        section: Section::Display,
        run: show_reta,
    },
    Command {
        tokens: &[
            Token::Word("show"),
            Token::Word("port"),
            Token::Port,
            Token::Word("rss"),
            Token::Word("reta"),
            Token::Number("size"),
            Token::Text("mask0[,mask1]*"),
        ],
        help: "Display the redirection table entries the 64-bit hex masks select (testpmd's form).",
        section: Section::Display,
        run: show_reta_masked,
    },
    Command {
        tokens: &[
            Token::Word("show"),
            Token::Choice(&["rxq", "txq"]),
            Token::Word("info"),
            Token::Port,
            Token::Number("queue_id"),
        ],
        help: "Display the facts of an rx or tx queue.",
        section: Section::Display,
        run: queue_info,
    },
    Command {
        tokens: &[
            Token::Word("show"),
            Token::Word("port"),
            Token::PortOrAll,
            Token::Word("queue-stats"),
        ],
        help: "Display each queue's packets and bytes (the first 16 queues).",
        section: Section::Display,
        run: queue_stats,
    },
    Command {
        tokens: &[
            Token::Word("show"),
            Token::Word("config"),
            Token::Word("rxtx"),
        ],
        help: "Display the engine, burst, forwarding cores and each port's queues.",
        section: Section::Display,
        run: config_rxtx,
    },
];

fn one_port(session: &Session, values: &[Value]) -> Result<usize, String> {
    Ok(session.select(port_arg(values)?)?[0])
}

fn number(values: &[Value]) -> Result<u16, String> {
    find_value(values, |v| match v {
        Value::Number(n) => Some(*n),
        _ => None,
    })
}

fn word(values: &[Value]) -> Result<&'static str, String> {
    find_value(values, |v| match v {
        Value::Word(w) => Some(*w),
        _ => None,
    })
}

fn text(values: &[Value]) -> Result<&str, String> {
    find_value(values, |v| match v {
        Value::Text(t) => Some(t.as_str()),
        _ => None,
    })
}

fn config_queues(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    let n = Some(number(values)?);
    let (rx, tx) = if word(values)? == "rxq" {
        (n, None)
    } else {
        (None, n)
    };
    session.configure_queues(rx, tx).map(Reply::Print)
}

fn config_rss(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    Ok(Reply::Print(session.set_rss_types(word(values)?)))
}

fn config_rss_key(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    let port = one_port(session, values)?;
    session
        .set_rss_key(port, word(values)?, text(values)?)
        .map(Reply::Print)
}

fn config_reta(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    let port = one_port(session, values)?;
    session.set_reta(port, text(values)?).map(Reply::Print)
}

fn show_reta(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    let port = one_port(session, values)?;
    Ok(Reply::Print(session.show_reta(port)))
}

fn show_reta_masked(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    let port = one_port(session, values)?;
    session
        .show_reta_masked(port, number(values)?, text(values)?)
        .map(Reply::Print)
}

fn queue_info(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    let port = one_port(session, values)?;
    let rx = word(values)? == "rxq";
    Ok(Reply::Print(session.show_queue_info(
        port,
        number(values)?,
        rx,
    )))
}

fn queue_stats(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    let ports = session.select(port_arg(values)?)?;
    session.show_queue_stats(&ports).map(Reply::Print)
}

fn config_rxtx(session: &mut Session, _: &[Value]) -> Result<Reply, String> {
    Ok(Reply::Print(session.rxtx_config()))
}
