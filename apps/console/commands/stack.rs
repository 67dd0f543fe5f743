//! Stack commands (stack mode: `set fwd stack`, then `start`): addresses,
//! routes, neighbours, sockets, TCP, counters, ping and the echo services.
//! Each turns into a `crate::stack::Request` the stack's home lcore (or,
//! for what each pipeline has of its own, every stack lcore) answers; the
//! text formats are in `crate::stack`.

use super::{Command, ParseError, PortSel, Reply, Section, Token, Value};
use crate::session::Session;
use crate::stack::{Proto, Request};
use dpstack::stack::iface::Prefix;
use std::net::IpAddr;

/// The stack section of the command table.
pub const COMMANDS: &[Command] = &[
    Command {
        tokens: &[Token::Word("show"), Token::Word("ip"), Token::Word("addr")],
        help: "Display the stack's addresses, per port.",
        section: Section::Stack,
        run: show_addr,
    },
    Command {
        tokens: &[
            Token::Word("ip"),
            Token::Word("addr"),
            Token::Word("add"),
            Token::Prefix,
        ],
        help: "Add an address (ADDR/LEN) to the only port.",
        section: Section::Stack,
        run: addr_add,
    },
    Command {
        tokens: &[
            Token::Word("ip"),
            Token::Word("addr"),
            Token::Word("add"),
            Token::Prefix,
            Token::Word("port"),
            Token::Port,
        ],
        help: "Add an address (ADDR/LEN) to port_id.",
        section: Section::Stack,
        run: addr_add,
    },
    Command {
        tokens: &[
            Token::Word("ip"),
            Token::Word("addr"),
            Token::Word("del"),
            Token::Prefix,
        ],
        help: "Remove an address from the port that has it.",
        section: Section::Stack,
        run: addr_del,
    },
    Command {
        tokens: &[
            Token::Word("ip"),
            Token::Word("addr"),
            Token::Word("del"),
            Token::Prefix,
            Token::Word("port"),
            Token::Port,
        ],
        help: "Remove an address from port_id.",
        section: Section::Stack,
        run: addr_del,
    },
    Command {
        tokens: &[Token::Word("show"), Token::Word("route")],
        help: "Display the stack's IPv4 and IPv6 routes.",
        section: Section::Stack,
        run: show_route,
    },
    Command {
        tokens: &[
            Token::Word("route"),
            Token::Word("add"),
            Token::Prefix,
            Token::Word("via"),
            Token::Addr,
        ],
        help: "Add a route through a gateway (on a port's network).",
        section: Section::Stack,
        run: route_add,
    },
    Command {
        tokens: &[
            Token::Word("route"),
            Token::Word("add"),
            Token::Prefix,
            Token::Word("port"),
            Token::Port,
        ],
        help: "Add a route straight out of port_id (its hosts answer ARP/ND there).",
        section: Section::Stack,
        run: route_add,
    },
    Command {
        tokens: &[
            Token::Word("route"),
            Token::Word("add"),
            Token::Prefix,
            Token::Word("via"),
            Token::Addr,
            Token::Word("port"),
            Token::Port,
        ],
        help: "Add a route through a gateway on port_id (needed for a link-local one).",
        section: Section::Stack,
        run: route_add,
    },
    Command {
        tokens: &[Token::Word("route"), Token::Word("del"), Token::Prefix],
        help: "Remove the route to a prefix.",
        section: Section::Stack,
        run: route_del,
    },
    Command {
        tokens: &[Token::Word("show"), Token::Word("neigh")],
        help: "Display the ARP and Neighbor Discovery caches.",
        section: Section::Stack,
        run: show_neigh,
    },
    Command {
        tokens: &[Token::Word("show"), Token::Word("sockets")],
        help: "Display every UDP socket, TCP listener and connection, with queue depths.",
        section: Section::Stack,
        run: show_sockets,
    },
    Command {
        tokens: &[Token::Word("show"), Token::Word("tcp")],
        help: "Display TCP connections by state, with counters, figures and owning lcore.",
        section: Section::Stack,
        run: show_tcp,
    },
    Command {
        tokens: &[Token::Word("show"), Token::Word("counters")],
        help: "Display the counters per protocol and drops per reason: total, then per lcore.",
        section: Section::Stack,
        run: show_counters,
    },
    Command {
        tokens: &[Token::Word("ping"), Token::Addr],
        help: "Send 4 ICMP echo requests, one a second, and show the replies.",
        section: Section::Stack,
        run: ping,
    },
    Command {
        tokens: &[
            Token::Word("ping"),
            Token::Addr,
            Token::Word("count"),
            Token::Number("num"),
        ],
        help: "Send num ICMP echo requests, one a second, and show the replies.",
        section: Section::Stack,
        run: ping,
    },
    Command {
        tokens: &[
            Token::Word("udp-echo"),
            Token::Choice(&["start", "stop"]),
            Token::Number("port"),
        ],
        help: "Start or stop echoing UDP datagrams on a port (IPv4 and IPv6).",
        section: Section::Stack,
        run: udp_echo,
    },
    Command {
        tokens: &[
            Token::Word("tcp-echo"),
            Token::Choice(&["start", "stop"]),
            Token::Number("port"),
        ],
        help: "Start or stop echoing TCP connections on a port (IPv4 and IPv6).",
        section: Section::Stack,
        run: tcp_echo,
    },
];

fn ask(session: &Session, request: Request) -> Result<Reply, String> {
    session.stack_request(request).map(Reply::Print)
}

fn prefix(values: &[Value]) -> Result<Prefix, String> {
    values
        .iter()
        .find_map(|v| match v {
            Value::Prefix(p) => Some(*p),
            _ => None,
        })
        .ok_or_else(|| ParseError::BadArguments.to_string())
}

fn addr(values: &[Value]) -> Option<IpAddr> {
    values.iter().find_map(|v| match v {
        Value::Addr(a) => Some(*a),
        _ => None,
    })
}

fn port(values: &[Value]) -> Option<PortSel> {
    values.iter().find_map(|v| match v {
        Value::Port(p) => Some(*p),
        _ => None,
    })
}

fn number(values: &[Value]) -> Option<u16> {
    values.iter().find_map(|v| match v {
        Value::Number(n) => Some(*n),
        _ => None,
    })
}

fn show_addr(session: &mut Session, _: &[Value]) -> Result<Reply, String> {
    ask(session, Request::ShowAddr)
}

fn addr_add(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    let link = session.stack_link(port(values))?;
    let prefix = prefix(values)?;
    ask(session, Request::AddrAdd { link, prefix })
}

fn addr_del(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    let link = match port(values) {
        Some(sel) => Some(session.stack_link(Some(sel))?),
        None => None,
    };
    let addr = prefix(values)?.addr();
    ask(session, Request::AddrDel { link, addr })
}

fn show_route(session: &mut Session, _: &[Value]) -> Result<Reply, String> {
    ask(session, Request::ShowRoute)
}

fn route_add(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    let link = match port(values) {
        Some(sel) => Some(session.stack_link(Some(sel))?),
        None => None,
    };
    let request = Request::RouteAdd {
        prefix: prefix(values)?,
        via: addr(values),
        link,
    };
    ask(session, request)
}

fn route_del(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    let prefix = prefix(values)?;
    ask(session, Request::RouteDel { prefix })
}

fn show_neigh(session: &mut Session, _: &[Value]) -> Result<Reply, String> {
    ask(session, Request::ShowNeigh)
}

fn show_sockets(session: &mut Session, _: &[Value]) -> Result<Reply, String> {
    ask(session, Request::ShowSockets)
}

fn show_tcp(session: &mut Session, _: &[Value]) -> Result<Reply, String> {
    ask(session, Request::ShowTcp)
}

fn show_counters(session: &mut Session, _: &[Value]) -> Result<Reply, String> {
    ask(session, Request::ShowCounters)
}

fn ping(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    let dst = addr(values).ok_or_else(|| ParseError::BadArguments.to_string())?;
    let count = number(values).unwrap_or(4);
    if count == 0 {
        return Err("ping: bad number of packets to transmit.".into());
    }
    ask(session, Request::Ping { dst, count })
}

fn echo(session: &mut Session, values: &[Value], proto: Proto) -> Result<Reply, String> {
    let start = values.contains(&Value::Word("start"));
    let port = number(values).ok_or_else(|| ParseError::BadArguments.to_string())?;
    if port == 0 {
        return Err("port 0: give a port from 1 to 65535".into());
    }
    ask(session, Request::Echo { proto, port, start })
}

fn udp_echo(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    echo(session, values, Proto::Udp)
}

fn tcp_echo(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    echo(session, values, Proto::Tcp)
}
