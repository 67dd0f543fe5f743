//! Display commands: ports (info, stats, xstats, summary), forwarding
//! statistics and configuration. Named after testpmd's help section; the
//! text formats themselves are in `crate::display`.

use super::{port_arg, Command, Reply, Section, Token, Value};
use crate::session::Session;

/// The display section of the command table.
pub const COMMANDS: &[Command] = &[
    Command {
        tokens: &[
            Token::Word("show"),
            Token::Word("port"),
            Token::Word("info"),
            Token::PortOrAll,
        ],
        help: "Display information for port_id, or all.",
        section: Section::Display,
        run: port_info,
    },
    Command {
        tokens: &[
            Token::Word("show"),
            Token::Word("port"),
            Token::Word("stats"),
            Token::PortOrAll,
        ],
        help: "Display port statistics, with rates since the last show.",
        section: Section::Display,
        run: port_stats,
    },
    Command {
        tokens: &[
            Token::Word("show"),
            Token::Word("port"),
            Token::Word("xstats"),
            Token::PortOrAll,
        ],
        help: "Display the extended (driver) statistics of port_id, or all.",
        section: Section::Display,
        run: port_xstats,
    },
    Command {
        tokens: &[
            Token::Word("show"),
            Token::Word("port"),
            Token::Word("summary"),
            Token::PortOrAll,
        ],
        help: "Display a line per port: MAC address, name, driver, link.",
        section: Section::Display,
        run: port_summary,
    },
    Command {
        tokens: &[
            Token::Word("show"),
            Token::Word("port"),
            Token::Port,
            Token::Word("rss-hash"),
        ],
        help: "Display the RSS hash functions of port_id.",
        section: Section::Display,
        run: rss_hash,
    },
    Command {
        tokens: &[
            Token::Word("show"),
            Token::Word("port"),
            Token::Port,
            Token::Word("rss-hash"),
            Token::Choice(&["key"]),
        ],
        help: "Display the RSS hash functions and the RSS hash key of port_id.",
        section: Section::Display,
        run: rss_hash,
    },
    Command {
        tokens: &[
            Token::Word("clear"),
            Token::Word("port"),
            Token::Word("stats"),
            Token::PortOrAll,
        ],
        help: "Clear the statistics of port_id, or all.",
        section: Section::Display,
        run: clear_port_stats,
    },
    Command {
        tokens: &[
            Token::Word("show"),
            Token::Word("fwd"),
            Token::Word("stats"),
            Token::Word("all"),
        ],
        help: "Display forwarding statistics: live while forwarding, else of the last run.",
        section: Section::Display,
        run: fwd_stats,
    },
    Command {
        tokens: &[
            Token::Word("show"),
            Token::Word("config"),
            Token::Word("fwd"),
        ],
        help: "Display the forwarding configuration the next start uses.",
        section: Section::Display,
        run: config_fwd,
    },
];

fn port_info(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    let ports = session.select(port_arg(values)?)?;
    session.show_port_info(&ports).map(Reply::Print)
}

fn port_stats(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    let ports = session.select(port_arg(values)?)?;
    session.show_port_stats(&ports).map(Reply::Print)
}

fn port_xstats(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    let ports = session.select(port_arg(values)?)?;
    session.show_port_xstats(&ports).map(Reply::Print)
}

fn port_summary(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    let ports = session.select(port_arg(values)?)?;
    session.show_port_summary(&ports).map(Reply::Print)
}

fn rss_hash(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    let ports = session.select(port_arg(values)?)?;
    let key = values.contains(&Value::Word("key"));
    let text = ports
        .iter()
        .map(|&i| session.show_rss_hash(i, key))
        .collect();
    Ok(Reply::Print(text))
}

fn clear_port_stats(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    let ports = session.select(port_arg(values)?)?;
    session.clear_port_stats(&ports).map(Reply::Print)
}

fn fwd_stats(session: &mut Session, _: &[Value]) -> Result<Reply, String> {
    Ok(Reply::Print(session.show_forward_stats()))
}

fn config_fwd(session: &mut Session, _: &[Value]) -> Result<Reply, String> {
    session.forward_config().map(Reply::Print)
}
