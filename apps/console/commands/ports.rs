//! Port commands: start, stop and close ports, promiscuous mode, link
//! up/down.

use super::{port_arg, Command, Reply, Section, Token, Value};
use crate::session::Session;

/// The ports section of the command table.
pub const COMMANDS: &[Command] = &[
    Command {
        tokens: &[Token::Word("port"), Token::Word("start"), Token::PortOrAll],
        help: "Start all ports or port_id.",
        section: Section::Ports,
        run: port_start,
    },
    Command {
        tokens: &[Token::Word("port"), Token::Word("stop"), Token::PortOrAll],
        help: "Stop all ports or port_id.",
        section: Section::Ports,
        run: port_stop,
    },
    Command {
        tokens: &[Token::Word("port"), Token::Word("close"), Token::PortOrAll],
        help: "Close all ports or port_id (stopped ones).",
        section: Section::Ports,
        run: port_close,
    },
    Command {
        tokens: &[
            Token::Word("set"),
            Token::Word("promisc"),
            Token::PortOrAll,
            Token::Choice(&["on", "off"]),
        ],
        help: "Set the promiscuous mode on port_id, or all.",
        section: Section::Ports,
        run: set_promisc,
    },
    Command {
        tokens: &[
            Token::Word("set"),
            Token::Word("link-up"),
            Token::Word("port"),
            Token::Port,
        ],
        help: "Set link up for a port.",
        section: Section::Ports,
        run: link_up,
    },
    Command {
        tokens: &[
            Token::Word("set"),
            Token::Word("link-down"),
            Token::Word("port"),
            Token::Port,
        ],
        help: "Set link down for a port.",
        section: Section::Ports,
        run: link_down,
    },
];

fn port_start(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    let ports = session.select(port_arg(values)?)?;
    Ok(Reply::Print(session.start_ports(&ports)))
}

fn port_stop(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    let ports = session.select(port_arg(values)?)?;
    Ok(Reply::Print(session.stop_ports(&ports)))
}

fn port_close(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    let ports = session.select(port_arg(values)?)?;
    Ok(Reply::Print(session.close_ports(&ports)))
}

fn set_promisc(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    let ports = session.select(port_arg(values)?)?;
    let on = values.contains(&Value::Word("on"));
    Ok(Reply::Print(session.set_promiscuous(&ports, on)))
}

fn link_up(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    set_link(session, values, true)
}

fn link_down(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    set_link(session, values, false)
}

fn set_link(session: &mut Session, values: &[Value], up: bool) -> Result<Reply, String> {
    let ports = session.select(port_arg(values)?)?;
    let text = ports.iter().map(|&i| session.set_link(i, up)).collect();
    Ok(Reply::Print(text))
}
