//! Which sessions the relay runs: generated from flags (`--sessions N
//! --port-base P`) or read from a file (`--config FILE`). Control path
//! only; every mistake is a typed [`SpecError`] naming the line (and, for
//! a port used twice, the session and line that has it first).
//!
//! The file format, one session per line (`#` starts a comment; blank
//! lines are skipped):
//!
//! ```text
//! session NAME A_PORT B_PORT [a-peer=IP:PORT] [b-peer=IP:PORT] [mux] [a-ip6] [b-ip6]
//! ```
//!
//! `A_PORT` and `B_PORT` are the legs' even RTP ports (RTCP on the next
//! port), or `auto` for the next free pair of `--port-range`. A peer is
//! where signalling said the leg's endpoint sends from and listens on
//! (its RTCP on the next port, or the same port with `mux`): media for
//! the leg goes there until the leg latches onto where packets really
//! come from. `mux` runs RTP and RTCP on one port per leg (rtcp-mux).
//! A leg is IPv6 (bound to the relay's IPv6 address) if its peer is an
//! IPv6 address (`[2001:db8::2]:5004`), or if `a-ip6` / `b-ip6` says so.
//! A peer is a unicast address and a port above 0 (below 65535 without
//! `mux`, so that its RTCP port exists); an option appears once a line and
//! a fixed port once a file.
//!
//! Generated sessions: session `i` (named `s<i>`) has leg A on ports
//! `P+4i` (RTP) and `P+4i+1` (RTCP), leg B on `P+4i+2` and `P+4i+3`;
//! `--a-peer-base IP:Q` gives leg A of session `i` the peer `IP:Q+2i`
//! (likewise `--b-peer-base`).
//!
//! [`assign_ports`] turns the specs into ports: fixed ones first (reserved
//! in the range's [`PortAllocator`] when inside it, so `auto` never takes
//! them), then `auto` ones in order.

use super::error::{PeerProblem, SpecError};
use crate::PortAllocator;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::ops::RangeInclusive;

/// A leg's local RTP port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalPort {
    /// This even port (RTCP on the next).
    Fixed(u16),
    /// The next free pair of the port range.
    Auto,
}

/// One leg of a session as configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LegSpec {
    /// Where the leg listens.
    pub port: LocalPort,
    /// Where signalling said its endpoint is (RTP).
    pub peer: Option<SocketAddr>,
    /// The leg is IPv6 (bound to the IPv6 address): set for an IPv6 peer,
    /// or by `a-ip6` / `b-ip6` in a file.
    pub ipv6: bool,
}

impl LegSpec {
    /// A leg on `port` whose endpoint signalling put at `peer` (IPv6 if
    /// the peer is).
    pub fn new(port: LocalPort, peer: Option<SocketAddr>) -> LegSpec {
        LegSpec {
            port,
            peer,
            ipv6: peer.is_some_and(|p| p.is_ipv6()),
        }
    }
}

/// A session as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSpec {
    /// Its name in the statistics.
    pub name: String,
    /// Legs A and B.
    pub legs: [LegSpec; 2],
    /// RTP and RTCP share each leg's port.
    pub mux: bool,
}

/// `count` sessions on consecutive port quartets from `base` (see the
/// module documentation).
pub fn generate(
    count: u32,
    base: u16,
    mux: bool,
    peer_bases: [Option<SocketAddr>; 2],
) -> Result<Vec<SessionSpec>, SpecError> {
    if base % 2 != 0 || base == 0 {
        return Err(SpecError::PortBase(base));
    }
    if u32::from(base) + 4 * count > 65536 {
        return Err(SpecError::PortsBeyond { count, base });
    }
    let peer = |base: Option<SocketAddr>, i: u32| -> Result<Option<SocketAddr>, SpecError> {
        let Some(mut addr) = base else {
            return Ok(None);
        };
        let port = u16::try_from(u32::from(addr.port()) + 2 * i).map_err(|_| {
            SpecError::PeerBaseBeyond {
                base: addr,
                session: i,
            }
        })?;
        addr.set_port(port);
        check_peer(addr, mux)?;
        Ok(Some(addr))
    };
    (0..count)
        .map(|i| {
            let rtp = base + 4 * i as u16;
            Ok(SessionSpec {
                name: format!("s{i}"),
                legs: [
                    LegSpec::new(LocalPort::Fixed(rtp), peer(peer_bases[0], i)?),
                    LegSpec::new(LocalPort::Fixed(rtp + 2), peer(peer_bases[1], i)?),
                ],
                mux,
            })
        })
        .collect()
}

/// Whether `peer` can be a leg's peer: a unicast address and a port with
/// room for RTCP on the next one (unless `mux`).
pub fn check_peer(peer: SocketAddr, mux: bool) -> Result<(), SpecError> {
    let ip = peer.ip();
    let problem = if peer.port() == 0 {
        Some(PeerProblem::PortZero)
    } else if ip.is_unspecified() {
        Some(PeerProblem::Unspecified)
    } else if ip.is_multicast() {
        Some(PeerProblem::Multicast)
    } else if matches!(ip, IpAddr::V4(v4) if v4.is_broadcast()) {
        Some(PeerProblem::Broadcast)
    } else if peer.port() == u16::MAX && !mux {
        Some(PeerProblem::NoRtcpPort)
    } else {
        None
    };
    match problem {
        Some(problem) => Err(SpecError::BadPeer { peer, problem }),
        None => Ok(()),
    }
}

/// Parses a configuration file's text.
pub fn parse(text: &str) -> Result<Vec<SessionSpec>, SpecError> {
    let mut sessions: Vec<SessionSpec> = Vec::new();
    // Each fixed RTP port: the session that has it and its line.
    let mut taken: HashMap<u16, (usize, usize)> = HashMap::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let session = parse_line(line).map_err(|e| e.at_line(number))?;
        if sessions.iter().any(|s| s.name == session.name) {
            return Err(SpecError::NameTwice(session.name).at_line(number));
        }
        for leg in &session.legs {
            if let LocalPort::Fixed(port) = leg.port {
                if let Some(&(first, first_line)) = taken.get(&port) {
                    return Err(SpecError::PortTwice {
                        port,
                        first: sessions[first].name.clone(),
                        first_line: Some(first_line),
                    }
                    .at_line(number));
                }
                taken.insert(port, (sessions.len(), number));
            }
        }
        sessions.push(session);
    }
    if sessions.is_empty() {
        return Err(SpecError::NoSession);
    }
    Ok(sessions)
}

fn parse_line(line: &str) -> Result<SessionSpec, SpecError> {
    let mut words = line.split_whitespace();
    if words.next() != Some("session") {
        return Err(SpecError::NotASession(line.to_owned()));
    }
    let name = words.next().ok_or(SpecError::NoName)?.to_owned();
    let a = parse_port(words.next().ok_or(SpecError::MissingPort('A'))?)?;
    let b = parse_port(words.next().ok_or(SpecError::MissingPort('B'))?)?;
    let mut session = SessionSpec {
        name,
        legs: [LegSpec::new(a, None), LegSpec::new(b, None)],
        mux: false,
    };
    let mut seen: Vec<&str> = Vec::new();
    for word in words {
        let option = word.split_once('=').map_or(word, |(key, _)| key);
        if seen.contains(&option) {
            return Err(SpecError::RepeatedOption(option.to_owned()));
        }
        seen.push(option);
        match word.split_once('=') {
            Some(("a-peer", addr)) => session.legs[0].peer = Some(parse_addr(addr)?),
            Some(("b-peer", addr)) => session.legs[1].peer = Some(parse_addr(addr)?),
            None if word == "mux" => session.mux = true,
            None if word == "a-ip6" => session.legs[0].ipv6 = true,
            None if word == "b-ip6" => session.legs[1].ipv6 = true,
            _ => return Err(SpecError::UnknownOption(word.to_owned())),
        }
    }
    for leg in &mut session.legs {
        leg.ipv6 |= leg.peer.is_some_and(|p| p.is_ipv6());
        if let Some(peer) = leg.peer {
            check_peer(peer, session.mux)?;
        }
    }
    if let [LegSpec {
        port: LocalPort::Fixed(a),
        ..
    }, LegSpec {
        port: LocalPort::Fixed(b),
        ..
    }] = session.legs
    {
        if a == b {
            return Err(SpecError::SameLegPorts(a));
        }
    }
    Ok(session)
}

fn parse_port(word: &str) -> Result<LocalPort, SpecError> {
    if word == "auto" {
        return Ok(LocalPort::Auto);
    }
    match word.parse::<u16>() {
        Ok(port) if port != 0 && port % 2 == 0 => Ok(LocalPort::Fixed(port)),
        _ => Err(SpecError::BadPort(word.to_owned())),
    }
}

fn parse_addr(word: &str) -> Result<SocketAddr, SpecError> {
    word.parse()
        .map_err(|_| SpecError::BadAddress(word.to_owned()))
}

/// The local ports of one session's legs (RTP; RTCP is the next one
/// unless muxed).
pub type SessionPorts = [u16; 2];

/// Each session's RTP ports: fixed ones as given (reserved in the range
/// when inside it), then `auto` ones from the range, in order.
pub fn assign_ports(
    specs: &[SessionSpec],
    range: RangeInclusive<u16>,
) -> Result<Vec<SessionPorts>, SpecError> {
    let mut allocator = PortAllocator::new(range.clone()).map_err(|error| SpecError::Range {
        range: range.clone(),
        error,
    })?;
    let mut fixed = HashMap::new();
    for spec in specs {
        for leg in &spec.legs {
            if let LocalPort::Fixed(port) = leg.port {
                if let Some(first) = fixed.insert(port, &spec.name) {
                    return Err(SpecError::PortTwice {
                        port,
                        first: first.clone(),
                        first_line: None,
                    });
                }
                // Outside the range is fine: only the bind can clash.
                let _ = allocator.allocate_port(port);
            }
        }
    }
    specs
        .iter()
        .map(|spec| {
            let mut pair = [0u16; 2];
            for (slot, leg) in pair.iter_mut().zip(&spec.legs) {
                *slot = match leg.port {
                    LocalPort::Fixed(port) => port,
                    LocalPort::Auto => allocator
                        .allocate()
                        .map_err(|error| SpecError::Auto {
                            session: spec.name.clone(),
                            range: range.clone(),
                            error,
                        })?
                        .rtp(),
                };
            }
            Ok(pair)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_sessions_take_port_quartets() {
        let peer: SocketAddr = "10.0.0.9:6000".parse().unwrap();
        let specs = generate(3, 40000, false, [None, Some(peer)]).unwrap();
        assert_eq!(specs.len(), 3);
        assert_eq!(specs[2].name, "s2");
        assert_eq!(specs[2].legs[0].port, LocalPort::Fixed(40008));
        assert_eq!(specs[2].legs[1].port, LocalPort::Fixed(40010));
        assert_eq!(specs[2].legs[0].peer, None);
        assert_eq!(specs[2].legs[1].peer, "10.0.0.9:6004".parse().ok());
        assert!(generate(1, 40001, false, [None, None]).is_err());
        // 10,000 sessions take 40,000 ports: 25536-65535 is the last fit.
        assert!(generate(10_000, 25536, false, [None, None]).is_ok());
        assert!(generate(10_000, 25538, false, [None, None]).is_err());
        let high: SocketAddr = "10.0.0.9:65534".parse().unwrap();
        assert!(generate(2, 30000, false, [Some(high), None]).is_err());
    }

    #[test]
    fn the_file_format() {
        let text = "# two calls\n\
                    session call-1 30000 30002 b-peer=10.0.0.3:6000\n\
                    \n\
                    session call-2 auto auto a-peer=10.0.0.2:5004 mux  # muxed\n";
        let specs = parse(text).unwrap();
        assert_eq!(specs.len(), 2);
        assert_eq!(specs[0].legs[0].port, LocalPort::Fixed(30000));
        assert_eq!(specs[0].legs[1].peer, "10.0.0.3:6000".parse().ok());
        assert!(!specs[0].mux);
        assert_eq!(specs[1].legs[0].port, LocalPort::Auto);
        assert_eq!(specs[1].legs[0].peer, "10.0.0.2:5004".parse().ok());
        assert!(specs[1].mux);
    }

    #[test]
    fn mistakes_name_their_line() {
        for (text, needle) in [
            ("session a 30001 30002", "line 1: '30001' is not an even"),
            ("\nsession a 30000", "line 2: leg B's port is missing"),
            ("session a 30000 30002 x=1", "unknown option 'x=1'"),
            ("session a 30000 30002 a-peer=10.0.0.1", "not IP:PORT"),
            ("call a 30000 30002", "expected 'session NAME"),
            ("session a 30000 30000", "both legs on port 30000"),
            (
                "session a 30000 30002\nsession a 30004 30006",
                "line 2: session 'a' appears twice",
            ),
            (
                "session a 30000 30002\n# b\nsession b 30002 30004",
                "line 3: port 30002 is configured twice: session 'a' (line 1) has it already",
            ),
            (
                "session a 30000 30002 mux mux",
                "line 1: option 'mux' is given twice",
            ),
            (
                "session a 30000 30002 b-peer=10.0.0.3:5000 b-peer=10.0.0.4:5000",
                "option 'b-peer' is given twice",
            ),
            (
                "session a 30000 30002 b-peer=10.0.0.3:0",
                "port 0 is no endpoint's",
            ),
            ("session a 30000 30002 b-peer=0.0.0.0:5000", "unspecified"),
            ("session a 30000 30002 a-peer=[::]:5000", "unspecified"),
            (
                "session a 30000 30002 b-peer=255.255.255.255:5000",
                "broadcast",
            ),
            ("session a 30000 30002 b-peer=239.1.1.1:5000", "multicast"),
            (
                "session a 30000 30002 b-peer=10.0.0.3:65535",
                "no port for RTCP",
            ),
            ("# nothing\n", "no session"),
        ] {
            let error = parse(text).unwrap_err().to_string();
            assert!(error.contains(needle), "{text:?}: {error}");
        }
        // With rtcp-mux the last port is a peer's whole port pair.
        assert!(parse("session a 30000 30002 mux b-peer=10.0.0.3:65535").is_ok());
    }

    #[test]
    fn generated_peers_are_checked_like_the_file_s() {
        let at = |s: &str| Some(s.parse::<SocketAddr>().unwrap());
        let error = generate(2, 30000, false, [None, at("10.0.0.3:65533")]).unwrap_err();
        assert_eq!(
            error,
            SpecError::BadPeer {
                peer: "10.0.0.3:65535".parse().unwrap(),
                problem: PeerProblem::NoRtcpPort
            }
        );
        assert!(generate(2, 30000, true, [None, at("10.0.0.3:65533")]).is_ok());
        for bad in ["0.0.0.0:5000", "224.0.0.1:5000", "10.0.0.3:0"] {
            assert!(
                matches!(
                    generate(1, 30000, false, [at(bad), None]),
                    Err(SpecError::BadPeer { .. })
                ),
                "{bad}"
            );
        }
        assert_eq!(
            generate(2, 30000, false, [None, at("10.0.0.3:65534")]),
            Err(SpecError::PeerBaseBeyond {
                base: "10.0.0.3:65534".parse().unwrap(),
                session: 1
            })
        );
    }

    #[test]
    fn assigned_ports_name_the_session_that_has_a_port_first() {
        let mut specs = parse("session a 30000 30002\nsession b 30004 30006").unwrap();
        specs[1].legs[0].port = LocalPort::Fixed(30002);
        let error = assign_ports(&specs, 30000..=39999).unwrap_err();
        assert_eq!(
            error,
            SpecError::PortTwice {
                port: 30002,
                first: "a".into(),
                first_line: None
            }
        );
    }

    /// Random files, mostly of well-formed lines with random ports,
    /// peers and options, some of garbage: `parse` answers each with
    /// sessions or a typed error, never a panic, and what it accepts keeps
    /// the format's rules.
    #[test]
    fn random_files_parse_or_fail_cleanly() {
        const PORTS: [&str; 8] = [
            "auto", "auto", "0", "30001", "65534", "65535", "70000", "-2",
        ];
        const OPTIONS: [&str; 12] = [
            "mux",
            "a-ip6",
            "b-ip6",
            "a-peer=10.0.0.2:5004",
            "b-peer=10.0.0.3:65535",
            "b-peer=[2001:db8::3]:6000",
            "a-peer=0.0.0.0:1",
            "a-peer=224.0.0.9:5000",
            "b-peer=",
            "x=y",
            "# a comment",
            "\u{e9}t\u{e9}",
        ];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as usize
        };
        let mut accepted = 0;
        for _ in 0..20_000 {
            let mut text = String::new();
            for line in 0..1 + next(4) {
                if next(10) == 0 {
                    text.push_str(OPTIONS[next(OPTIONS.len())]);
                } else {
                    let mut port = || match next(3) {
                        0 => PORTS[next(PORTS.len())].to_owned(),
                        _ => (30000 + 2 * next(8)).to_string(),
                    };
                    let (a, b) = (port(), port());
                    text.push_str(&format!("session s{} {a} {b}", line + next(2)));
                    for _ in 0..next(3) {
                        text.push(if next(5) == 0 { '\t' } else { ' ' });
                        text.push_str(OPTIONS[next(OPTIONS.len())]);
                    }
                }
                text.push('\n');
            }
            let Ok(specs) = parse(&text) else { continue };
            accepted += 1;
            let mut ports = std::collections::HashSet::new();
            for spec in &specs {
                for leg in &spec.legs {
                    if let LocalPort::Fixed(port) = leg.port {
                        assert!(port != 0 && port % 2 == 0, "{text:?}");
                        assert!(ports.insert(port), "{text:?}");
                    }
                    if let Some(peer) = leg.peer {
                        assert!(check_peer(peer, spec.mux).is_ok(), "{text:?}");
                    }
                }
            }
        }
        assert!(accepted > 1000, "only {accepted} files were accepted");
    }
}
