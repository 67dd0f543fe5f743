//! The RTP relay as a console service in stack mode: `rtp-relay start
//! --sessions N --port-base P [--b-peer-base IP:Q] [--echo]`, `rtp-relay
//! stop` and `show rtp`. It is `dpstack::media::relay`, the relay
//! `dpstack-rtp-relay` runs, composed into the console's handler
//! ([`super::services::Services`] hands it the batches of its sockets and
//! calls its poll), bound to the stack's first IPv4 address (and first
//! global IPv6 address, for IPv6 peers; without the address a leg needs,
//! `start` refuses and says to add one with `ip addr add`).
//!
//! Sessions are the relay app's `--sessions` ones: session `i` (named
//! `s<i>`) has leg A on ports `P+4i`/`P+4i+1`, leg B on `P+4i+2`/`P+4i+3`;
//! `--b-peer-base IP:Q` signals leg B's peer at `IP:Q+2i`. `show rtp`
//! prints the relay app's statistics lines.
//!
//! Runs on the stack lcore between two polls (control path): starting
//! binds every socket (all or nothing), stopping closes them.

use super::{Request, StackState};
use crate::commands::{Command, Reply, Section, Token, Value};
use crate::session::Session;
use dpstack::media::relay::{self, LocalAddrs, Relay, RelayOptions, ReportConfig, StartError};
use dpstack::stack::iface::Prefix;
use dpstack::stack::port::Buf;
use std::net::{IpAddr, SocketAddr};

/// An RTP relay command for the lcore.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RtpRequest {
    /// `rtp-relay start ...`.
    Start {
        /// Sessions.
        sessions: u16,
        /// The first port (even).
        port_base: u16,
        /// Leg B's signalled peer of session 0 (`IP:Q`; session `i`'s is
        /// `IP:Q+2i`).
        b_peer_base: Option<SocketAddr>,
        /// Reflect instead of relay.
        echo: bool,
    },
    /// `rtp-relay stop`.
    Stop,
    /// `show rtp`.
    Show,
}

/// The running relay and its sessions' names.
pub struct RtpService {
    /// The relay (handed the batches of its sockets by the services).
    pub relay: Relay,
    names: Vec<String>,
}

const START: [Token; 6] = [
    Token::Word("rtp-relay"),
    Token::Word("start"),
    Token::Word("--sessions"),
    Token::Number("n"),
    Token::Word("--port-base"),
    Token::Number("p"),
];

/// The RTP relay's part of the stack section of the command table.
pub const COMMANDS: &[Command] = &[
    Command {
        tokens: &START,
        help: "Relay RTP/RTCP for n sessions on ports from p (leg A p+4i, leg B p+4i+2).",
        section: Section::Stack,
        run: start,
    },
    Command {
        tokens: &[
            START[0],
            START[1],
            START[2],
            START[3],
            START[4],
            START[5],
            Token::Word("--echo"),
        ],
        help: "Echo RTP/RTCP back to its senders (with RTCP receiver reports) for n sessions.",
        section: Section::Stack,
        run: start_echo,
    },
    Command {
        tokens: &[
            START[0],
            START[1],
            START[2],
            START[3],
            START[4],
            START[5],
            Token::Word("--b-peer-base"),
            Token::Endpoint,
        ],
        help: "Relay n sessions; leg B of session i expects its peer at ip_addr, port+2i.",
        section: Section::Stack,
        run: start,
    },
    Command {
        tokens: &[
            START[0],
            START[1],
            START[2],
            START[3],
            START[4],
            START[5],
            Token::Word("--b-peer-base"),
            Token::Endpoint,
            Token::Word("--echo"),
        ],
        help: "Echo n sessions; leg B of session i expects its peer at ip_addr, port+2i.",
        section: Section::Stack,
        run: start_echo,
    },
    Command {
        tokens: &[Token::Word("rtp-relay"), Token::Word("stop")],
        help: "Stop the RTP relay: its sessions end and their ports close.",
        section: Section::Stack,
        run: stop,
    },
    Command {
        tokens: &[Token::Word("show"), Token::Word("rtp")],
        help: "Show the RTP relay's statistics: per session, leg and SSRC.",
        section: Section::Stack,
        run: show,
    },
];

fn ask(session: &mut Session, request: RtpRequest) -> Result<Reply, String> {
    session
        .stack_request(Request::Rtp(request))
        .map(Reply::Print)
}

/// `rtp-relay start ...` (relaying).
fn start(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    start_request(values, false).and_then(|r| ask(session, r))
}

/// `rtp-relay start ... --echo`.
fn start_echo(session: &mut Session, values: &[Value]) -> Result<Reply, String> {
    start_request(values, true).and_then(|r| ask(session, r))
}

/// The request of a start line: its numbers in order (n, p) and the
/// signalled base of leg B's peers, if given.
fn start_request(values: &[Value], echo: bool) -> Result<RtpRequest, String> {
    let numbers: Vec<u16> = values
        .iter()
        .filter_map(|v| match v {
            Value::Number(n) => Some(*n),
            _ => None,
        })
        .collect();
    let b_peer_base = values.iter().find_map(|v| match v {
        Value::Endpoint(a) => Some(*a),
        _ => None,
    });
    let (Some(&sessions), Some(&port_base)) = (numbers.first(), numbers.get(1)) else {
        return Err("rtp-relay start: --sessions N --port-base P".into());
    };
    Ok(RtpRequest::Start {
        sessions,
        port_base,
        b_peer_base,
        echo,
    })
}

fn stop(session: &mut Session, _: &[Value]) -> Result<Reply, String> {
    ask(session, RtpRequest::Stop)
}

fn show(session: &mut Session, _: &[Value]) -> Result<Reply, String> {
    ask(session, RtpRequest::Show)
}

impl<B: Buf> StackState<B> {
    /// The answer to an RTP relay command.
    pub(super) fn rtp(&mut self, request: RtpRequest) -> String {
        match request {
            RtpRequest::Start {
                sessions,
                port_base,
                b_peer_base,
                echo,
            } => self
                .rtp_start(sessions, port_base, b_peer_base, echo)
                .unwrap_or_else(|e| format!("Error: {e}\n")),
            RtpRequest::Stop => match self.services.rtp.take() {
                Some(mut service) => {
                    let n = service.relay.stop(&mut self.iface);
                    format!("RTP relay stopped: {n} session(s) ended\n")
                }
                None => "Error: no RTP relay runs\n".into(),
            },
            RtpRequest::Show => match &self.services.rtp {
                Some(service) => relay::render(&service.relay.snapshot(), &service.names),
                None => "No RTP relay (rtp-relay start --sessions N --port-base P)\n".into(),
            },
        }
    }

    fn rtp_start(
        &mut self,
        sessions: u16,
        port_base: u16,
        b_peer_base: Option<SocketAddr>,
        echo: bool,
    ) -> Result<String, String> {
        if self.services.rtp.is_some() {
            return Err("an RTP relay runs already (rtp-relay stop first)".into());
        }
        // The relay's state is the home pipeline's handler's: the other
        // pipelines drop what lands on them for its sockets.
        if self.lcore_ids.len() > 1 {
            return Err("the RTP relay runs on one lcore: set nbcore 1".into());
        }
        if sessions == 0 {
            return Err("--sessions: at least 1".into());
        }
        let specs = relay::generate(u32::from(sessions), port_base, false, [None, b_peer_base])
            .map_err(|e| e.to_string())?;
        let mut local = LocalAddrs { v4: None, v6: None };
        for info in self.iface.ip_addresses() {
            match info.prefix {
                Prefix::V4(c) if local.v4.is_none() => local.v4 = Some(c.addr),
                Prefix::V6(c) if local.v6.is_none() && !c.addr.is_unicast_link_local() => {
                    local.v6 = Some(c.addr)
                }
                _ => {}
            }
        }
        // Legs without a peer are IPv4: without an IPv4 address, IPv6.
        let mut specs = specs;
        if local.v4.is_none() {
            for leg in specs.iter_mut().flat_map(|s| s.legs.iter_mut()) {
                leg.ipv6 = true;
            }
        }
        // Each start gets its own SSRCs (the console may read a clock; the
        // stack does not).
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        let options = RelayOptions {
            echo,
            reports: ReportConfig {
                seed,
                ..ReportConfig::default()
            },
            ..RelayOptions::default()
        };
        let mut relay = Relay::new(options);
        let last = (u32::from(port_base) + 4 * u32::from(sessions) - 1) as u16;
        relay
            .start(&mut self.iface, local, &specs, port_base..=last)
            .map_err(|e| match e {
                // Said in the console's words: its way to an address is
                // `ip addr add`, not the relay app's --ip.
                StartError::NoAddress { ipv6, .. } => no_address_hint(ipv6),
                e => e.to_string(),
            })?;
        let at: Vec<String> = [local.v4.map(IpAddr::V4), local.v6.map(IpAddr::V6)]
            .into_iter()
            .flatten()
            .map(|ip| ip.to_string())
            .collect();
        let names = specs.into_iter().map(|s| s.name).collect();
        self.services.rtp = Some(RtpService { relay, names });
        Ok(format!(
            "RTP relay: {} {sessions} session(s) on {} ports {port_base}-{last}\n",
            if echo { "echoing" } else { "relaying" },
            at.join(" and ")
        ))
    }
}

/// What to type when the stack lacks the address a leg needs (an IPv6
/// leg: a global IPv6 address; link-local ones are not used).
fn no_address_hint(v6: bool) -> String {
    if v6 {
        "an IPv6 leg needs a global IPv6 address on the stack: add one with \
         ip addr add ADDR/LEN [port N] (e.g. ip addr add 2001:db8::1/64)"
            .into()
    } else {
        "an IPv4 leg needs an IPv4 address on the stack: add one with \
         ip addr add ADDR/LEN [port N] (e.g. ip addr add 10.0.0.1/24)"
            .into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stack::{LinkLine, StackPort};
    use dpstack::media::rtp::RtpHeader;
    use dpstack::stack::iface::{Batch, InlineHandler, Interface, InterfaceConfig, LcoreContext};
    use dpstack::stack::port::memory::{MemBuf, MemPort, MemPortConfig};
    use dpstack::stack::port::{MacAddr, Port};
    use dpstack::stack::time::{Duration, Instant};
    use dpstack::stack::udp::{BindOptions, SocketId};

    const OURS: MacAddr = MacAddr([2, 0, 0, 0, 8, 1]);
    const PEER: MacAddr = MacAddr([2, 0, 0, 0, 8, 2]);

    /// The peer's received datagrams: (source, payload).
    #[derive(Default)]
    struct Collect(Vec<(SocketAddr, Vec<u8>)>);

    impl InlineHandler<MemBuf> for Collect {
        fn on_datagrams<P: Port<Buf = MemBuf>>(
            &mut self,
            _: SocketId,
            batch: &mut Batch<MemBuf>,
            _: &mut LcoreContext<'_, P>,
        ) {
            self.0
                .extend(batch.drain(..).map(|d| (d.src(), d.payload().to_vec())));
        }
    }

    fn mem(mac: MacAddr) -> MemPort {
        MemPort::new(MemPortConfig {
            mac,
            ..MemPortConfig::default()
        })
    }

    struct World {
        state: StackState<MemBuf>,
        ports: Vec<StackPort<MemPort>>,
        peer: Interface<MemBuf>,
        peer_port: MemPort,
        got: Collect,
        now: Instant,
    }

    impl World {
        fn new() -> World {
            let links = vec![LinkLine {
                port: 0,
                mac: OURS,
                mtu: 1500,
            }];
            let setup = [(0, "10.8.0.1/24".parse().expect("prefix"))];
            let mut config = InterfaceConfig::new(PEER, "10.8.0.2/24".parse().expect("cidr"));
            config.dad_transmits = 0;
            let state = StackState::new(links, &setup, 1).expect("a stack");
            World {
                ports: vec![StackPort::new(mem(OURS), state.capture())],
                state,
                peer: Interface::new(config).expect("a peer"),
                peer_port: mem(PEER),
                got: Collect::default(),
                now: Instant::ZERO,
            }
        }

        fn tick(&mut self) {
            self.now = self.now + Duration::from_millis(20);
            self.ports[0].inner_mut().deliver_to(&mut self.peer_port);
            (self.peer).poll(&mut self.peer_port, self.now, &mut self.got);
            self.peer_port.deliver_to(self.ports[0].inner_mut());
            let state = &mut self.state;
            (state.iface).poll_ports(&mut self.ports, self.now, &mut state.services);
        }

        fn ask(&mut self, request: RtpRequest) -> String {
            self.state.rtp(request)
        }
    }

    fn rtp(seq: u16) -> Vec<u8> {
        let mut packet = vec![0u8; 12 + 160];
        RtpHeader {
            payload_type: 0,
            seq,
            timestamp: u32::from(seq) * 160,
            ssrc: 0x5151,
            ..RtpHeader::default()
        }
        .emit(&mut packet)
        .expect("fits");
        packet
    }

    #[test]
    fn the_command_lines_parse_into_requests() {
        for (line, want) in [
            (
                "rtp-relay start --sessions 3 --port-base 30000",
                (3, 30000, None, false),
            ),
            (
                "rtp-relay start --sessions 2 --port-base 40000 --echo",
                (2, 40000, None, true),
            ),
            (
                "rtp-relay start --sessions 1 --port-base 30000 --b-peer-base 10.8.0.9:6000 --echo",
                (1, 30000, Some("10.8.0.9:6000"), true),
            ),
        ] {
            let (command, values) = crate::commands::parse(line)
                .expect("parses")
                .expect("a command");
            let (sessions, port_base, peer, echo) = want;
            let handler: crate::commands::Handler = if echo { start_echo } else { start };
            assert_eq!(command.run as usize, handler as usize, "{line}");
            assert_eq!(
                start_request(&values, echo),
                Ok(RtpRequest::Start {
                    sessions,
                    port_base,
                    b_peer_base: peer.map(|p| p.parse().expect("addr")),
                    echo
                }),
                "{line}"
            );
        }
        assert!(crate::commands::parse("show rtp")
            .expect("parses")
            .is_some());
        assert!(crate::commands::parse("rtp-relay stop")
            .expect("parses")
            .is_some());
    }

    #[test]
    fn echo_sessions_start_reflect_show_and_stop() {
        let mut w = World::new();
        let started = w.ask(RtpRequest::Start {
            sessions: 2,
            port_base: 30000,
            b_peer_base: None,
            echo: true,
        });
        assert_eq!(
            started,
            "RTP relay: echoing 2 session(s) on 10.8.0.1 ports 30000-30007\n"
        );
        assert!(w
            .ask(RtpRequest::Start {
                sessions: 1,
                port_base: 31000,
                b_peer_base: None,
                echo: false
            })
            .starts_with("Error: an RTP relay runs already"));
        let socket = w
            .peer
            .udp_bind(
                "10.8.0.2:5004".parse::<SocketAddr>().expect("addr"),
                BindOptions::default(),
            )
            .expect("bind");
        // Session s1's leg A: port 30004.
        let relay: SocketAddr = "10.8.0.1:30004".parse().expect("addr");
        for seq in 1..=5 {
            // The first waits for ARP; the rest go once it is resolved.
            let _ = w
                .peer
                .send_to(&mut w.peer_port, w.now, socket, relay, &rtp(seq));
            for _ in 0..3 {
                w.tick();
            }
        }
        let echoed: Vec<(SocketAddr, Vec<u8>)> = w
            .got
            .0
            .iter()
            .filter(|(from, _)| *from == relay)
            .cloned()
            .collect();
        assert!(echoed.len() >= 4, "{} echoed", echoed.len());
        assert_eq!(echoed[echoed.len() - 1].1, rtp(5));
        let show = w.ask(RtpRequest::Show);
        let packets = relay::report::field(&show, "session s1 leg A ssrc 0x00005151", "packets");
        assert_eq!(packets, Some(echoed.len() as i64), "{show}");
        assert!(
            show.contains("session s1 leg A peer 10.8.0.2:5004 latched yes"),
            "{show}"
        );
        assert!(show.contains("idle sessions 1"), "{show}");
        assert_eq!(
            w.ask(RtpRequest::Stop),
            "RTP relay stopped: 2 session(s) ended\n"
        );
        assert!(w.ask(RtpRequest::Show).starts_with("No RTP relay"));
        assert_eq!(w.ask(RtpRequest::Stop), "Error: no RTP relay runs\n");
        // The ports are free again.
        assert!(w
            .ask(RtpRequest::Start {
                sessions: 2,
                port_base: 30000,
                b_peer_base: None,
                echo: false
            })
            .starts_with("RTP relay: relaying"));
    }

    #[test]
    fn an_ipv6_leg_without_an_ipv6_address_says_what_to_type() {
        let mut w = World::new();
        let line =
            "rtp-relay start --sessions 2 --port-base 30000 --b-peer-base [2001:db8::2]:5000";
        let (_, values) = crate::commands::parse(line)
            .expect("parses")
            .expect("a command");
        let request = start_request(&values, false).expect("a request");
        let refused = w.ask(request);
        assert_eq!(
            refused,
            "Error: an IPv6 leg needs a global IPv6 address on the stack: add one with ip addr \
             add ADDR/LEN [port N] (e.g. ip addr add 2001:db8::1/64)\n"
        );
        assert!(!refused.contains("--ip"), "the console has no --ip");
        // Nothing was bound: after the command the hint names, it starts.
        let (_, values) = crate::commands::parse("ip addr add 2001:db8::1/64")
            .expect("parses")
            .expect("a command");
        let [Value::Prefix(prefix)] = values[..] else {
            panic!("ip addr add takes a prefix: {values:?}")
        };
        assert_eq!(w.state.answer(Request::AddrAdd { link: 0, prefix }), "");
        assert_eq!(
            w.ask(request),
            "RTP relay: relaying 2 session(s) on 10.8.0.1 and 2001:db8::1 ports 30000-30007\n"
        );
    }
}
