//! Why a relay's sessions cannot be configured ([`SpecError`]: generated
//! from a port base, read from a file, or given ports) or started
//! ([`StartError`]: an address, a bind or the session table). Control
//! path only.
//!
//! Invariants: every message names what is wrong and where (the file's
//! line, the session, the port or the address), and none names a
//! command-line flag: callers (the app, the console) add the hint that
//! fits how their user gives the value.

use crate::{PortError, RangeError, TableError};
use dpstack_stack::udp::BindError;
use std::fmt;
use std::net::SocketAddr;
use std::ops::RangeInclusive;

/// Why an address cannot be a leg's peer (where its endpoint sends from
/// and listens on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerProblem {
    /// Port 0: nothing can send from or listen on it.
    PortZero,
    /// `0.0.0.0` or `::`.
    Unspecified,
    /// A multicast group, not an endpoint.
    Multicast,
    /// `255.255.255.255`.
    Broadcast,
    /// Port 65535 without rtcp-mux: its RTCP port would be 65536.
    NoRtcpPort,
}

impl fmt::Display for PeerProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PeerProblem::PortZero => "port 0 is no endpoint's port",
            PeerProblem::Unspecified => "the unspecified address is no endpoint's address",
            PeerProblem::Multicast => "a multicast group is no endpoint's address",
            PeerProblem::Broadcast => "the broadcast address is no endpoint's address",
            PeerProblem::NoRtcpPort => {
                "port 65535 leaves no port for RTCP (use an even port, or rtcp-mux)"
            }
        })
    }
}

/// Why a session configuration is refused (nothing was started).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpecError {
    /// The first port of generated sessions is odd or 0.
    PortBase(u16),
    /// `count` generated sessions from `base` need ports beyond 65535.
    PortsBeyond {
        /// Sessions asked for.
        count: u32,
        /// Their first port.
        base: u16,
    },
    /// Generated session `session`'s peer, `base`'s port plus
    /// `2 * session`, passes 65535.
    PeerBaseBeyond {
        /// The peer base.
        base: SocketAddr,
        /// The first session whose peer port does not fit.
        session: u32,
    },
    /// `peer` cannot be a leg's peer.
    BadPeer {
        /// The address given.
        peer: SocketAddr,
        /// Why not.
        problem: PeerProblem,
    },
    /// A mistake on a line of a file (numbered from 1).
    Line {
        /// Its number.
        line: usize,
        /// The mistake.
        error: Box<SpecError>,
    },
    /// The line does not start with `session`.
    NotASession(String),
    /// `session` and nothing after it.
    NoName,
    /// A leg's port is missing (`'A'` or `'B'`).
    MissingPort(char),
    /// A port word that is neither an even port above 0 nor `auto`.
    BadPort(String),
    /// An option the format does not have.
    UnknownOption(String),
    /// An option given twice on one line.
    RepeatedOption(String),
    /// A peer that is not `IP:PORT`.
    BadAddress(String),
    /// Both legs of a session on one port.
    SameLegPorts(u16),
    /// Two sessions with one name.
    NameTwice(String),
    /// A file with no session in it.
    NoSession,
    /// Two legs on one RTP port (and so one RTCP port).
    PortTwice {
        /// The port.
        port: u16,
        /// The session that has it first.
        first: String,
        /// The file line of that session, when it came from a file.
        first_line: Option<usize>,
    },
    /// The range `auto` ports come from holds no pair.
    Range {
        /// The range.
        range: RangeInclusive<u16>,
        /// Why it makes no allocator.
        error: RangeError,
    },
    /// No pair left in the range for a session's `auto` leg.
    Auto {
        /// The session.
        session: String,
        /// The range.
        range: RangeInclusive<u16>,
        /// Why.
        error: PortError,
    },
}

impl SpecError {
    /// This error, said of line `line` (from 1).
    pub fn at_line(self, line: usize) -> SpecError {
        SpecError::Line {
            line,
            error: Box::new(self),
        }
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecError::PortBase(base) => {
                write!(f, "port base {base}: give an even port above 0")
            }
            SpecError::PortsBeyond { count, base } => write!(
                f,
                "{count} sessions need ports {base}-{}, beyond 65535",
                u32::from(*base) + 4 * count - 1
            ),
            SpecError::PeerBaseBeyond { base, session } => write!(
                f,
                "peer base {base}: session {session}'s peer port passes 65535"
            ),
            SpecError::BadPeer { peer, problem } => write!(f, "peer {peer}: {problem}"),
            SpecError::Line { line, error } => write!(f, "line {line}: {error}"),
            SpecError::NotASession(line) => write!(
                f,
                "'{line}': expected 'session NAME A_PORT B_PORT [options]'"
            ),
            SpecError::NoName => f.write_str("a session needs a name"),
            SpecError::MissingPort(leg) => write!(f, "leg {leg}'s port is missing"),
            SpecError::BadPort(word) => {
                write!(f, "'{word}' is not an even RTP port (2-65534) or 'auto'")
            }
            SpecError::UnknownOption(word) => write!(
                f,
                "unknown option '{word}' (use a-peer=IP:PORT, b-peer=IP:PORT, mux, a-ip6, b-ip6)"
            ),
            SpecError::RepeatedOption(word) => write!(f, "option '{word}' is given twice"),
            SpecError::BadAddress(word) => {
                write!(f, "'{word}' is not IP:PORT (e.g. 10.0.0.2:5004)")
            }
            SpecError::SameLegPorts(port) => write!(f, "both legs on port {port}"),
            SpecError::NameTwice(name) => write!(f, "session '{name}' appears twice"),
            SpecError::NoSession => {
                f.write_str("no session in the file (lines like: session NAME A_PORT B_PORT)")
            }
            SpecError::PortTwice {
                port,
                first,
                first_line,
            } => {
                write!(f, "port {port} is configured twice: session '{first}'")?;
                if let Some(line) = first_line {
                    write!(f, " (line {line})")?;
                }
                f.write_str(" has it already")
            }
            SpecError::Range { range, error } => {
                write!(f, "{}-{}: {error}", range.start(), range.end())
            }
            SpecError::Auto {
                session,
                range,
                error,
            } => write!(
                f,
                "session {session}: port range {}-{}: {error}",
                range.start(),
                range.end()
            ),
        }
    }
}

impl std::error::Error for SpecError {}

/// Why [`Relay::start`](super::Relay::start) started nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartError {
    /// The configuration itself.
    Spec(SpecError),
    /// A leg of `session` needs an address of a family the relay was not
    /// given (IPv6 when `ipv6`).
    NoAddress {
        /// The session.
        session: String,
        /// The leg is IPv6.
        ipv6: bool,
    },
    /// A leg's peer is one of the relay's own addresses.
    PeerIsUs {
        /// The session.
        session: String,
        /// The peer.
        peer: SocketAddr,
    },
    /// The stack refused a bind.
    Bind {
        /// The session.
        session: String,
        /// The address bound.
        at: SocketAddr,
        /// Why.
        error: BindError,
    },
    /// The session table refused the session.
    Table {
        /// The session.
        session: String,
        /// Why.
        error: TableError,
    },
}

impl From<SpecError> for StartError {
    fn from(error: SpecError) -> StartError {
        StartError::Spec(error)
    }
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::Spec(error) => error.fmt(f),
            StartError::NoAddress { session, ipv6 } => {
                let family = if *ipv6 { "IPv6" } else { "IPv4" };
                write!(
                    f,
                    "session {session}: an {family} leg needs an {family} address on the relay"
                )
            }
            StartError::PeerIsUs { session, peer } => write!(
                f,
                "session {session}: peer {peer} is the relay's own address"
            ),
            StartError::Bind { session, at, error } => {
                write!(f, "session {session}: cannot bind {at}: {error}")
            }
            StartError::Table { session, error } => write!(f, "session {session}: {error}"),
        }
    }
}

impl std::error::Error for StartError {}
