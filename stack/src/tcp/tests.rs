//! State-machine tests written like packetdrill scripts: one connection, a
//! virtual clock, segments in (`<`) and expected segments out (`>`), in
//! packetdrill's notation:
//!
//! ```text
//! 0.000 < S 0:0(0) win 65535 <mss 1460,sackOK,TS val 100 ecr 0,nop,wscale 7>
//! +0    > S. 0:0(0) ack 1 <mss 1460,sackOK,TS val 0 ecr 100,nop,wscale 2>
//! +0.1  < . 1:1(0) ack 1 win 1024
//! ```
//!
//! Sequence numbers are relative: inbound ones to the peer's ISN, outbound
//! ones to ours, acknowledgments the other way round. Flags: `S` SYN, `F`
//! FIN, `R` RST, `P` PSH, `.` ACK, `E` ECE, `W` CWR. An expectation checks
//! flags, sequence range and length always, and the ACK, window, options
//! and IP ECN field (`[noecn]`, `[ect0]`, `[ect1]`, `[ce]` before the
//! flags; inbound segments carry `[noecn]` unless written) when written.
//! Times: `+N` after the previous line, or absolute seconds. Timers run as
//! the clock moves.

use super::congestion::{Algorithm, CongestionControl};
use super::*;
use crate::time::{Duration, Instant};
use crate::wire::tcp::{flags, TcpOptions, TcpRepr};
use crate::wire::Ecn;
use std::collections::VecDeque;

mod close;
mod cwnd_validation;
mod ecn;
mod handshake;
mod hystart;
mod idle;
mod loss;
mod pacing;
mod plpmtud;
mod rss_connect;
mod sack;
mod transfer;

/// Our ISS in every script.
const OUR_ISS: u32 = 0x1000_0000;
/// The peer's ISN in every script (close to the wrap, so scripts cross it).
const PEER_ISN: u32 = 0xffff_ff00;
const OUR_PORT: u16 = 8080;
const PEER_PORT: u16 = 40000;

/// One parsed script line.
#[derive(Debug)]
struct Line {
    time: Instant,
    inbound: bool,
    ecn: Option<Ecn>,
    flags: u8,
    seq: u32,
    len: usize,
    ack: Option<u32>,
    window: Option<u16>,
    options: Option<ScriptOptions>,
}

/// Options as a script writes them (TS values optional in expectations).
#[derive(Debug, Default, Clone)]
struct ScriptOptions {
    mss: Option<u16>,
    window_scale: Option<u8>,
    sack_permitted: bool,
    timestamps: Option<(Option<u32>, Option<u32>)>,
    /// SACK blocks, relative like the acknowledgment field.
    sack: Vec<(u32, u32)>,
}

fn parse_flags(word: &str) -> u8 {
    word.chars().fold(0, |bits, c| {
        bits | match c {
            'S' => flags::SYN,
            'F' => flags::FIN,
            'R' => flags::RST,
            'P' => flags::PSH,
            '.' => flags::ACK,
            'E' => flags::ECE,
            'W' => flags::CWR,
            other => panic!("unknown flag {other:?} in {word:?}"),
        }
    })
}

fn parse_options(text: &str) -> ScriptOptions {
    let mut options = ScriptOptions::default();
    for item in text.split(',').map(str::trim) {
        let words: Vec<&str> = item.split_whitespace().collect();
        match words.as_slice() {
            ["mss", n] => options.mss = Some(n.parse().unwrap()),
            ["wscale", n] => options.window_scale = Some(n.parse().unwrap()),
            ["sackOK"] => options.sack_permitted = true,
            ["sack", blocks @ ..] => {
                for block in blocks {
                    let (left, right) = block.split_once(':').unwrap();
                    options
                        .sack
                        .push((left.parse().unwrap(), right.parse().unwrap()));
                }
            }
            ["nop"] | ["eol"] => {}
            ["TS", "val", v, "ecr", e] => {
                let value = |s: &str| (s != "*").then(|| s.parse().unwrap());
                options.timestamps = Some((value(v), value(e)));
            }
            other => panic!("unknown option {other:?}"),
        }
    }
    options
}

fn parse_line(text: &str, previous: Instant) -> Line {
    // Options open with a '<' glued to their first word; the direction
    // '<' stands alone.
    let bytes = text.as_bytes();
    let open = (0..bytes.len())
        .find(|&i| bytes[i] == b'<' && bytes.get(i + 1).is_some_and(|&c| c != b' '));
    let (head, options) = match (open, text.rfind('>')) {
        (Some(at), Some(close)) if close > at => {
            (&text[..at], Some(parse_options(&text[at + 1..close])))
        }
        _ => (text, None),
    };
    let head = head.trim();
    let words: Vec<&str> = head.split_whitespace().collect();
    let time = if let Some(delta) = words[0].strip_prefix('+') {
        previous + Duration::from_secs_f64(delta.parse().unwrap())
    } else {
        Instant::ZERO + Duration::from_secs_f64(words[0].parse().unwrap())
    };
    let inbound = match words[1] {
        "<" => true,
        ">" => false,
        other => panic!("direction {other:?}"),
    };
    let (ecn, words) = match words[2] {
        "[noecn]" => (Some(Ecn::NotEct), &words[1..]),
        "[ect0]" => (Some(Ecn::Ect0), &words[1..]),
        "[ect1]" => (Some(Ecn::Ect1), &words[1..]),
        "[ce]" => (Some(Ecn::Ce), &words[1..]),
        _ => (None, &words[..]),
    };
    let segment_flags = parse_flags(words[2]);
    let (range, len) = words[3].split_once('(').unwrap();
    let len: usize = len.trim_end_matches(')').parse().unwrap();
    let seq: u32 = range.split(':').next().unwrap().parse().unwrap();
    let mut ack = None;
    let mut window = None;
    let mut rest = words[4..].iter();
    while let Some(&word) = rest.next() {
        match word {
            "ack" => ack = Some(rest.next().unwrap().parse().unwrap()),
            "win" => window = Some(rest.next().unwrap().parse().unwrap()),
            other => panic!("unknown word {other:?} in {text:?}"),
        }
    }
    Line {
        time,
        inbound,
        ecn,
        flags: segment_flags,
        seq,
        len,
        ack,
        window,
        options,
    }
}

/// The bytes inbound segments carry: byte `i` of the peer's stream.
fn peer_byte(i: usize) -> u8 {
    b'a' + (i % 26) as u8
}

/// A connection driven by script lines.
struct Script {
    conn: Connection,
    pool: BufferPool,
    now: Instant,
    /// Segments sent and not yet matched: when, header, payload.
    sent: VecDeque<(Instant, TcpRepr, Vec<u8>)>,
    /// The IP ECN field of each segment sent, in step with `sent` at its
    /// back (tests that drain `sent` leave older ones in front).
    sent_ecn: VecDeque<Ecn>,
    verdicts: Vec<Verdict>,
}

/// The scripts' configuration. They pin NewReno: its arithmetic is what
/// their windows show (CUBIC has tests of its own in `congestion`).
fn config() -> TcpConfig {
    TcpConfig {
        send_buffer: 64 * 1024,
        recv_buffer: 64 * 1024,
        congestion: Algorithm::NewReno,
        ..TcpConfig::default()
    }
}

impl Script {
    /// A passive connection made from the script's first line (a SYN).
    fn passive(config: &TcpConfig, syn_line: &str) -> Script {
        let line = parse_line(syn_line.trim(), Instant::ZERO);
        assert!(line.inbound && line.flags & !(flags::ECE | flags::CWR) == flags::SYN);
        let syn = inbound_repr(&line);
        let mut conn = Connection::accept(config, &syn, (Seq(OUR_ISS), 1460, 0), line.time);
        conn.syn_arrived_with(line.ecn.unwrap_or_default());
        let mut script = Script {
            conn,
            pool: BufferPool::unlimited(),
            now: line.time,
            sent: VecDeque::new(),
            sent_ecn: VecDeque::new(),
            verdicts: Vec::new(),
        };
        script.collect();
        script
    }

    /// An active connection; its SYN is the first segment out.
    fn active(config: &TcpConfig) -> Script {
        let conn = Connection::connect(config, OUR_PORT, PEER_PORT, Seq(OUR_ISS), 1460, 0);
        let mut script = Script {
            conn,
            pool: BufferPool::unlimited(),
            now: Instant::ZERO,
            sent: VecDeque::new(),
            sent_ecn: VecDeque::new(),
            verdicts: Vec::new(),
        };
        script.collect();
        script
    }

    /// A passive connection established after one `rtt` with timestamps, SACK,
    /// an MSS of 1000 and a peer window of 8 MiB: the sender of the bulk
    /// tests, whose peer echoes timestamps in milliseconds.
    fn bulk_sender(config: &TcpConfig, rtt: Duration) -> Script {
        let mut t = Script::passive(
            config,
            "0 < S 0:0(0) win 65535 <mss 1000,sackOK,TS val 1 ecr 0,nop,wscale 7>",
        );
        let (_, syn_ack, _) = t.sent.pop_front().expect("a SYN-ACK");
        let (our_ts, _) = syn_ack.options.timestamps.expect("timestamps agreed");
        // The peer's clock ticks in milliseconds from 1 at time 0.
        let secs = rtt.as_secs_f64();
        let peer_ts = 1 + rtt.as_millis();
        t.run(&format!(
            "{secs:.9} < . 1:1(0) ack 1 win 65535 <nop,nop,TS val {peer_ts} ecr {our_ts}>"
        ));
        t
    }

    /// Runs script lines (blank lines and `//` comments skipped).
    fn run(&mut self, lines: &str) {
        for text in lines.lines().map(str::trim) {
            if text.is_empty() || text.starts_with("//") {
                continue;
            }
            let line = parse_line(text, self.now);
            self.advance(line.time);
            if line.inbound {
                let repr = inbound_repr(&line);
                let payload: Vec<u8> = (0..line.len)
                    .map(|i| peer_byte(line.seq as usize + i - 1))
                    .collect();
                let ecn = line.ecn.unwrap_or_default();
                let verdict =
                    self.conn
                        .on_segment_ecn(&repr, &payload, ecn, self.now, &mut self.pool);
                self.verdicts.push(verdict);
                self.collect();
            } else {
                let stale = self.sent_ecn.len() - self.sent.len();
                self.sent_ecn.drain(..stale);
                let (at, got, payload) = self
                    .sent
                    .pop_front()
                    .unwrap_or_else(|| panic!("expected {text:?}, nothing was sent"));
                let ecn = self.sent_ecn.pop_front().unwrap_or_default();
                check(&line, &got, payload.len(), text);
                if let Some(expected) = line.ecn {
                    let shown = describe(&got, payload.len());
                    assert_eq!(ecn, expected, "ECN field: expected {text:?}, got {shown:?}");
                }
                let early = line.time.saturating_duration_since(at);
                let late = at.saturating_duration_since(line.time);
                assert!(
                    early.max(late) <= Duration::from_millis(2),
                    "{text:?} was sent at {:?}",
                    at.as_nanos() as f64 / 1e9
                );
            }
        }
    }

    /// Moves the clock to `to`, running timers on the way.
    fn advance(&mut self, to: Instant) {
        while let Some(deadline) = self.conn.next_deadline() {
            if deadline > to {
                break;
            }
            self.now = self.now.max(deadline);
            self.conn.on_timer(self.now);
            self.collect();
        }
        self.now = self.now.max(to);
        self.collect();
    }

    fn collect(&mut self) {
        let mut payload = [0u8; 2048];
        while let Some((repr, len, ecn)) = self.conn.poll_transmit_ecn(self.now, &mut payload) {
            self.sent
                .push_back((self.now, repr, payload[..len].to_vec()));
            self.sent_ecn.push_back(ecn);
        }
    }

    /// Asserts nothing more was sent.
    fn quiet(&self) {
        assert!(
            self.sent.is_empty(),
            "unexpected segments: {:?}",
            self.sent
                .iter()
                .map(|(_, r, p)| describe(r, p.len()))
                .collect::<Vec<_>>()
        );
    }

    /// The application writes.
    fn write(&mut self, data: &[u8]) -> usize {
        let n = self.conn.send(data, &mut self.pool).unwrap();
        self.collect();
        n
    }

    /// The application writes `byte`s towards `total`, `chunk` at most at
    /// a time, until `*written` reaches `total` or the send buffer is full.
    fn write_towards(&mut self, written: &mut usize, total: usize, chunk: usize, byte: u8) {
        while *written < total {
            let n = self.write(&vec![byte; (total - *written).min(chunk)]);
            if n == 0 {
                break;
            }
            *written += n;
        }
    }

    /// The application reads everything readable.
    fn read_all(&mut self) -> Vec<u8> {
        let mut out = vec![0u8; 1 << 20];
        let n = self.conn.recv(&mut out, &mut self.pool).unwrap();
        out.truncate(n);
        self.collect();
        out
    }

    /// The application closes.
    fn close(&mut self) {
        self.conn.close();
        self.collect();
    }
}

fn inbound_repr(line: &Line) -> TcpRepr {
    let options = line.options.clone().unwrap_or_default();
    TcpRepr {
        src_port: PEER_PORT,
        dst_port: OUR_PORT,
        seq: PEER_ISN.wrapping_add(line.seq),
        ack: line.ack.map_or(0, |a| OUR_ISS.wrapping_add(a)),
        flags: line.flags,
        window: line.window.unwrap_or(65535),
        options: TcpOptions {
            mss: options.mss,
            window_scale: options.window_scale,
            sack_permitted: options.sack_permitted,
            timestamps: options
                .timestamps
                .map(|(v, e)| (v.unwrap_or(0), e.unwrap_or(0))),
            sack: {
                let mut blocks = crate::wire::tcp::SackBlocks::default();
                for &(left, right) in &options.sack {
                    blocks.push(OUR_ISS.wrapping_add(left), OUR_ISS.wrapping_add(right));
                }
                blocks
            },
        },
    }
}

/// A sent segment in script notation (relative numbers).
fn describe(repr: &TcpRepr, len: usize) -> String {
    let mut flag_text = String::new();
    for (bit, c) in [
        (flags::SYN, 'S'),
        (flags::FIN, 'F'),
        (flags::RST, 'R'),
        (flags::PSH, 'P'),
        (flags::ACK, '.'),
        (flags::ECE, 'E'),
        (flags::CWR, 'W'),
    ] {
        if repr.flags & bit != 0 {
            flag_text.push(c);
        }
    }
    let seq = repr.seq.wrapping_sub(OUR_ISS);
    let blocks: Vec<String> = repr
        .options
        .sack
        .as_slice()
        .iter()
        .map(|&(l, r)| format!("{}:{}", l.wrapping_sub(PEER_ISN), r.wrapping_sub(PEER_ISN)))
        .collect();
    format!(
        "> {flag_text} {seq}:{}({len}) ack {} win {} sack [{}] {:?}",
        seq.wrapping_add(len as u32),
        repr.ack.wrapping_sub(PEER_ISN),
        repr.window,
        blocks.join(" "),
        repr.options
    )
}

fn check(line: &Line, got: &TcpRepr, len: usize, text: &str) {
    let shown = describe(got, len);
    assert_eq!(
        got.flags, line.flags,
        "flags: expected {text:?}, got {shown:?}"
    );
    assert_eq!(
        got.seq,
        OUR_ISS.wrapping_add(line.seq),
        "seq: expected {text:?}, got {shown:?}"
    );
    assert_eq!(len, line.len, "length: expected {text:?}, got {shown:?}");
    if let Some(ack) = line.ack {
        assert_eq!(
            got.ack,
            PEER_ISN.wrapping_add(ack),
            "ack: expected {text:?}, got {shown:?}"
        );
    }
    if let Some(window) = line.window {
        assert_eq!(
            got.window, window,
            "window: expected {text:?}, got {shown:?}"
        );
    }
    if let Some(options) = &line.options {
        let o = &got.options;
        assert_eq!(
            (o.mss, o.window_scale, o.sack_permitted),
            (options.mss, options.window_scale, options.sack_permitted),
            "options: expected {text:?}, got {shown:?}"
        );
        match (options.timestamps, o.timestamps) {
            (None, None) => {}
            (Some((value, echo)), Some((v, e))) => {
                assert!(value.is_none_or(|x| x == v), "TSval: {text:?} vs {shown:?}");
                assert!(echo.is_none_or(|x| x == e), "TSecr: {text:?} vs {shown:?}");
            }
            _ => panic!("timestamps: expected {text:?}, got {shown:?}"),
        }
        let blocks: Vec<(u32, u32)> = o
            .sack
            .as_slice()
            .iter()
            .map(|&(l, r)| (l.wrapping_sub(PEER_ISN), r.wrapping_sub(PEER_ISN)))
            .collect();
        assert_eq!(
            blocks, options.sack,
            "SACK: expected {text:?}, got {shown:?}"
        );
    }
}

#[test]
fn the_script_parser_reads_packetdrill_lines() {
    let line = parse_line(
        "+0.25 < S. 0:0(0) ack 1 win 5840 <mss 1460,nop,wscale 7,TS val 5 ecr *>",
        Instant::ZERO,
    );
    assert_eq!(line.time, Instant::from_nanos(250_000_000));
    assert!(line.inbound);
    assert_eq!(line.flags, flags::SYN | flags::ACK);
    assert_eq!(
        (line.seq, line.len, line.ack, line.window),
        (0, 0, Some(1), Some(5840))
    );
    let options = line.options.unwrap();
    assert_eq!((options.mss, options.window_scale), (Some(1460), Some(7)));
    assert_eq!(options.timestamps, Some((Some(5), None)));
    let out = parse_line("1.5 > P. 1:101(100) ack 1", Instant::ZERO);
    assert!(!out.inbound && out.options.is_none());
    assert_eq!(out.len, 100);
}
