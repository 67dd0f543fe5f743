//! The TCP state machine (stack/src/tcp): one `Connection`, brought by a
//! script into a starting state chosen by the input (SYN-SENT,
//! SYN-RECEIVED, ESTABLISHED, FIN-WAIT-1/2, CLOSING, TIME-WAIT, CLOSE-WAIT,
//! LAST-ACK), then fed segments, clock steps and application calls decoded
//! from the input. The peer's byte at sequence number `s` is a fixed
//! function of `s`, and so is the application's byte at stream offset `k`.
//!
//! Invariants, after every step: every segment out round-trips through the
//! wire emitter and parser; its data is what the application wrote at
//! those offsets (never beyond it), and a FIN follows the last byte
//! written; an ACK never acknowledges what the peer did not send and never
//! moves back; what the application reads is exactly the peer's stream
//! from its first byte; states only move forward; `poll_transmit` ends; the
//! connection's buffer storage stays within the budget (a tight one for a
//! sixteenth of inputs, so refusals happen and must lose nothing); a
//! segment goes out ECN-capable only on a connection that agreed to ECN
//! and only with new data beyond everything sent before (RFC 3168 6.1.1,
//! 6.1.5), and carries ECE or CWR only on such a connection (or, on our
//! SYN, to ask for it).

use super::input::{debug, Input};
use dpstack_stack::tcp::ecn::EcnMode;
use dpstack_stack::tcp::{BufferBudget, BufferPool, Connection, Seq, State, TcpConfig};
use dpstack_stack::time::{Duration, Instant};
use dpstack_stack::wire::tcp::{flags, TcpOptions, TcpPacket, TcpRepr};
use dpstack_stack::wire::Ecn;

const OUR_ISS: u32 = 0x8000_0000 - 300;
const OUR_PORT: u16 = 80;
const PEER_PORT: u16 = 40_000;

/// A segment the peer sends: its sequence number relative to the peer's
/// ISN, with its IP header's ECN field.
struct PeerSegment {
    flag_bits: u8,
    seq_rel: u32,
    ack: u32,
    window: u16,
    len: usize,
    ts: Option<u32>,
    ecn: Ecn,
}

/// The peer's byte at sequence number `seq`.
fn peer_byte(seq: u32) -> u8 {
    (seq.wrapping_mul(0x9e37_79b1) >> 13) as u8
}

/// The application's byte at stream offset `at`.
fn our_byte(at: u32) -> u8 {
    (at.wrapping_mul(31) % 251) as u8
}

/// States in the order a connection may pass them.
fn rank(state: State) -> u8 {
    match state {
        State::SynSent | State::SynReceived => 0,
        State::Established => 1,
        State::FinWait1 | State::CloseWait => 2,
        State::FinWait2 | State::Closing | State::LastAck => 3,
        State::TimeWait => 4,
        State::Closed => 5,
    }
}

struct Harness {
    conn: Connection,
    pool: BufferPool,
    now: Instant,
    /// The peer's ISN.
    peer_isn: u32,
    /// The peer's next in-order sequence number, relative to its ISN.
    peer_next: u32,
    /// The end of everything the peer sent (SYN and FIN included), relative
    /// to its ISN, as a signed distance.
    peer_max_end: i64,
    /// The end of everything we sent, relative to our ISS.
    our_max_end: u32,
    /// Bytes the application wrote, and read.
    written: u32,
    read: u32,
    last_ack: Option<u32>,
    rank: u8,
    /// Timestamps: negotiated, the peer's clock, our last TSval.
    timestamps: bool,
    peer_ts: u32,
    our_ts: u32,
    payload: Vec<u8>,
    /// The largest MSS the connection has had: no segment may exceed it
    /// (a path MTU probe goes above the current MSS, never above that).
    largest_mss: u16,
}

impl Harness {
    fn check_state(&mut self) {
        let rank = rank(self.conn.state());
        assert!(
            rank >= self.rank,
            "state moved back to {:?}",
            self.conn.state()
        );
        self.rank = rank;
        let budget = self.pool.budget();
        assert!(self.conn.buffer_bytes() <= budget.used() && budget.used() <= budget.limit());
    }

    /// Takes every segment the connection has to send, checking each.
    fn drain(&mut self) {
        for _ in 0..2048 {
            self.largest_mss = self.largest_mss.max(self.conn.mss());
            // The room the stack's transmit path gives a segment.
            let room = usize::from(self.conn.segment_room()).min(self.payload.len());
            let before = self.our_max_end;
            let Some((repr, len, ecn)) = self
                .conn
                .poll_transmit_ecn(self.now, &mut self.payload[..room])
            else {
                self.check_state();
                return;
            };
            self.check_out(&repr, len);
            self.check_ecn(&repr, len, ecn, before);
        }
        panic!("poll_transmit does not end");
    }

    /// ECN-capable only with new data on a connection that agreed to ECN;
    /// ECE and CWR only on such a connection, or on our first SYN asking.
    fn check_ecn(&self, repr: &TcpRepr, len: usize, ecn: Ecn, sent_before: u32) {
        let agreed = self.conn.ecn_enabled();
        if ecn != Ecn::NotEct {
            assert_eq!(ecn, Ecn::Ect0, "we send ECT(0) or nothing");
            assert!(agreed, "ECT on a connection without ECN: {repr:?}");
            assert!(len > 0, "ECT on a segment without data: {repr:?}");
            let start = repr.seq.wrapping_sub(OUR_ISS);
            assert!(
                start == sent_before,
                "ECT on a retransmission (from {start}, {sent_before} sent before): {repr:?}"
            );
        }
        let marks = repr.flags & (flags::ECE | flags::CWR);
        if marks != 0 && repr.flags & flags::RST == 0 {
            let asking = repr.flags & flags::SYN != 0 && repr.flags & flags::ACK == 0;
            assert!(agreed || asking, "ECE/CWR without ECN: {repr:?}");
        }
    }

    fn check_out(&mut self, repr: &TcpRepr, len: usize) {
        if debug() {
            eprintln!("  out {repr:?} len {len}");
        }
        assert!(len <= self.payload.len());
        let data = &self.payload[..len];
        // The header round-trips through the wire format.
        let mut bytes = vec![0u8; repr.header_len() + len];
        repr.emit(&mut bytes);
        bytes[repr.header_len()..].copy_from_slice(data);
        let packet = TcpPacket::new_checked(&bytes[..]).expect("our segment parses");
        assert_eq!(
            TcpRepr::parse(&packet).as_ref(),
            Ok(repr),
            "our segment round trip"
        );
        assert_eq!((repr.src_port, repr.dst_port), (OUR_PORT, PEER_PORT));
        if repr.flags & flags::RST != 0 {
            assert_eq!(len, 0, "a reset with data");
            return;
        }
        if let Some((value, _)) = repr.options.timestamps {
            self.our_ts = value;
        }
        let syn = repr.flags & flags::SYN != 0;
        if syn {
            assert_eq!(repr.seq, OUR_ISS, "a SYN at another sequence number");
            assert_eq!(len, 0, "data on our SYN");
        }
        if len > 0 {
            assert!(
                len <= usize::from(self.largest_mss),
                "a segment above every MSS the connection had"
            );
            let start = repr.seq.wrapping_sub(OUR_ISS.wrapping_add(1));
            for (k, &b) in data.iter().enumerate() {
                let at = start.wrapping_add(k as u32);
                assert!(
                    at < self.written,
                    "sent byte {at} the application never wrote ({} written): {repr:?} len {len}, {:?}",
                    self.written,
                    self.conn.state()
                );
                assert_eq!(
                    b,
                    our_byte(at),
                    "sent byte {at} differs from what was written"
                );
            }
        }
        let end = repr
            .seq
            .wrapping_sub(OUR_ISS)
            .wrapping_add(len as u32 + u32::from(syn));
        if repr.flags & flags::FIN != 0 {
            assert_eq!(end, self.written + 1, "a FIN before the last byte written");
        }
        let end = end + u32::from(repr.flags & flags::FIN != 0);
        if end as i32 > self.our_max_end as i32 {
            self.our_max_end = end;
        }
        if repr.flags & flags::ACK != 0 {
            let acked = i64::from(repr.ack.wrapping_sub(self.peer_isn) as i32);
            assert!(
                acked <= self.peer_max_end,
                "we acknowledged {acked}, the peer sent up to {}",
                self.peer_max_end
            );
            if let Some(last) = self.last_ack {
                assert!(
                    repr.ack.wrapping_sub(last) as i32 >= 0,
                    "our ACK moved back from {last} to {}",
                    repr.ack
                );
            }
            self.last_ack = Some(repr.ack);
        }
    }

    /// A segment from the peer.
    fn segment(&mut self, segment: PeerSegment) {
        let PeerSegment {
            flag_bits,
            seq_rel,
            ack,
            window,
            len,
            ts,
            ecn,
        } = segment;
        let seq = self.peer_isn.wrapping_add(seq_rel);
        let payload: Vec<u8> = (0..len as u32)
            .map(|k| peer_byte(seq.wrapping_add(k)))
            .collect();
        let syn = flag_bits & flags::SYN != 0;
        let fin = flag_bits & flags::FIN != 0;
        let end = seq_rel.wrapping_add(len as u32 + u32::from(syn) + u32::from(fin));
        if flag_bits & flags::RST == 0 {
            self.peer_max_end = self.peer_max_end.max(i64::from(end as i32));
        }
        if seq_rel.wrapping_sub(self.peer_next) as i32 <= 0
            && end.wrapping_sub(self.peer_next) as i32 > 0
        {
            self.peer_next = end;
        }
        let options = TcpOptions {
            timestamps: ts.map(|value| (value, self.our_ts)),
            ..TcpOptions::default()
        };
        let repr = TcpRepr {
            src_port: PEER_PORT,
            dst_port: OUR_PORT,
            seq,
            ack,
            flags: flag_bits,
            window,
            options,
        };
        let opening = self.conn.state() == State::SynSent;
        let verdict = self
            .conn
            .on_segment_ecn(&repr, &payload, ecn, self.now, &mut self.pool);
        if opening && syn && !matches!(self.conn.state(), State::SynSent | State::Closed) {
            // The peer's ISN is the one of the SYN we took (nothing it sent
            // before counted): sequence numbers are relative to it now.
            self.peer_isn = seq;
            let end = end.wrapping_sub(seq_rel);
            self.peer_next = end;
            self.peer_max_end = i64::from(end);
        }
        if debug() {
            eprintln!(
                "  in {repr:?} len {len} -> {verdict:?} {:?}",
                self.conn.state()
            );
        }
        self.check_state();
        self.drain();
    }

    fn ts(&mut self) -> Option<u32> {
        self.timestamps.then(|| {
            self.peer_ts = self.peer_ts.wrapping_add(1);
            self.peer_ts
        })
    }

    /// An in-order ACK-only (or FIN) segment from the peer.
    fn ack(&mut self, extra: u8) {
        let ts = self.ts();
        let ack = OUR_ISS.wrapping_add(self.our_max_end);
        self.segment(PeerSegment {
            flag_bits: flags::ACK | extra,
            seq_rel: self.peer_next,
            ack,
            window: 65_535,
            len: 0,
            ts,
            ecn: Ecn::NotEct,
        });
    }

    fn advance(&mut self, by: Duration) {
        self.now = self.now + by;
        // Timers run as the connection table runs them: when due.
        for _ in 0..64 {
            match self.conn.next_deadline() {
                Some(at) if at <= self.now => {
                    self.conn.on_timer(self.now);
                    self.check_state();
                    self.drain();
                }
                _ => return,
            }
        }
    }

    fn send(&mut self, len: usize) {
        let data: Vec<u8> = (0..len as u32)
            .map(|k| our_byte(self.written + k))
            .collect();
        let room = self.conn.send_room();
        if let Ok(n) = self.conn.send(&data, &mut self.pool) {
            assert!(n <= len && n <= room, "send took {n} of {len}, room {room}");
            self.written += n as u32;
        }
        self.drain();
    }

    fn recv(&mut self, len: usize) {
        let mut buf = vec![0u8; len];
        let ready = self.conn.recv_ready();
        if let Ok(n) = self.conn.recv(&mut buf, &mut self.pool) {
            assert!(n <= len && n <= ready.max(n));
            for (k, &b) in buf[..n].iter().enumerate() {
                let seq = self.peer_isn.wrapping_add(1 + self.read + k as u32);
                assert_eq!(
                    b,
                    peer_byte(seq),
                    "read byte {} differs from the peer's",
                    self.read
                );
            }
            self.read += n as u32;
            assert!(
                n == 0 || i64::from(self.read) < self.peer_max_end,
                "read {} bytes, more than the peer sent (up to {})",
                self.read,
                self.peer_max_end
            );
        }
        self.drain();
    }
}

/// The fuzz target: a starting state, then steps.
pub fn conn(data: &[u8]) {
    let mut input = Input::new(data);
    let start = input.u8();
    let setup = input.u8();
    let config = TcpConfig {
        send_buffer: if setup & 1 != 0 { 4096 } else { 64 * 1024 },
        recv_buffer: if setup & 2 != 0 { 4096 } else { 256 * 1024 },
        sack: setup & 4 != 0,
        rfc7323: setup & 8 == 0,
        nodelay: setup & 16 != 0,
        ecn: if setup & 128 != 0 {
            EcnMode::Request
        } else {
            EcnMode::Accept
        },
        max_retries: 4,
        max_syn_retries: 2,
        ..TcpConfig::default()
    };
    let peer_isn = input.u32();
    let peer_ts = input.u32();
    let syn_options = TcpOptions {
        mss: (setup & 32 == 0).then(|| 64 + input.u16() % 9000),
        window_scale: (setup & 64 == 0).then(|| input.u8() % 16),
        sack_permitted: setup & 128 == 0,
        timestamps: (start & 0x80 == 0).then_some((peer_ts, 0)),
        ..TcpOptions::default()
    };
    let active = start % 10 == 0;
    let now = Instant::from_nanos(1_000_000_000);
    let conn = if active {
        Connection::connect(&config, OUR_PORT, PEER_PORT, Seq(OUR_ISS), 1460, 77)
    } else {
        let syn = TcpRepr {
            src_port: PEER_PORT,
            dst_port: OUR_PORT,
            seq: peer_isn,
            ack: 0,
            // Asking for ECN in half the passive opens.
            flags: flags::SYN
                | if peer_isn & 0x100 != 0 {
                    flags::ECE | flags::CWR
                } else {
                    0
                },
            window: 65_535,
            options: syn_options,
        };
        Connection::accept(&config, &syn, (Seq(OUR_ISS), 1460, 77), now)
    };
    // A tight budget: a first send ring fits, a receive ring does not
    // while it is held.
    let budget = BufferBudget::new(if peer_ts >> 28 == 0xf {
        20 * 1024
    } else {
        usize::MAX
    });
    let mut h = Harness {
        conn,
        pool: BufferPool::new(budget, 64 * 1024),
        now,
        peer_isn,
        peer_next: u32::from(!active),
        peer_max_end: i64::from(!active),
        our_max_end: 0,
        written: 0,
        read: 0,
        last_ack: None,
        rank: 0,
        timestamps: false,
        peer_ts,
        our_ts: 0,
        payload: vec![0u8; 16 * 1024],
        largest_mss: 0,
    };
    h.drain();
    h.timestamps = !active && syn_options.timestamps.is_some() && config.rfc7323;
    // The script to the starting state (SYN-SENT and SYN-RECEIVED need
    // none).
    let target = match start % 10 {
        0 => State::SynSent,
        1 => State::SynReceived,
        2 => State::Established,
        3 => State::FinWait1,
        4 => State::FinWait2,
        5 => State::Closing,
        6 => State::TimeWait,
        7 => State::CloseWait,
        8 => State::LastAck,
        _ => State::Established,
    };
    if target != State::SynSent && target != State::SynReceived {
        h.ack(0);
        assert_eq!(h.conn.state(), State::Established, "script: handshake");
    }
    match target {
        State::FinWait1 | State::FinWait2 | State::Closing | State::TimeWait => {
            h.conn.close();
            h.drain();
            assert_eq!(h.conn.state(), State::FinWait1, "script: close");
            match target {
                State::FinWait2 => h.ack(0),
                State::TimeWait => {
                    h.ack(0);
                    h.ack(flags::FIN);
                }
                State::Closing => {
                    // A FIN that does not yet acknowledge ours.
                    let ts = h.ts();
                    let ack = OUR_ISS.wrapping_add(1);
                    h.segment(PeerSegment {
                        flag_bits: flags::ACK | flags::FIN,
                        seq_rel: h.peer_next,
                        ack,
                        window: 65_535,
                        len: 0,
                        ts,
                        ecn: Ecn::NotEct,
                    });
                }
                _ => {}
            }
        }
        State::CloseWait | State::LastAck => {
            h.ack(flags::FIN);
            if target == State::LastAck {
                h.conn.close();
                h.drain();
            }
        }
        _ => {}
    }
    assert_eq!(h.conn.state(), target, "script: starting state");

    let mut steps = 0;
    while !input.is_empty() && steps < 200 {
        steps += 1;
        let op = input.u8();
        if debug() {
            eprintln!("step op {op:#x} in {:?}", h.conn.state());
        }
        match op % 16 {
            0..=7 => {
                // Every flag, ECE and CWR included.
                let bits = input.u8();
                // Sequence and acknowledgment near where they belong,
                // sometimes anywhere.
                let seq_delta = i32::from(input.u16() as i16);
                let seq_rel = if op & 0x10 != 0 {
                    input.u32()
                } else {
                    let base = if bits & flags::SYN != 0 {
                        0
                    } else {
                        h.peer_next
                    };
                    base.wrapping_add(if op & 0x20 != 0 { seq_delta as u32 } else { 0 })
                };
                let ack_delta = i32::from(input.u8() as i8);
                let ack = if op & 0x40 != 0 {
                    input.u32()
                } else {
                    OUR_ISS
                        .wrapping_add(h.our_max_end)
                        .wrapping_add(ack_delta as u32)
                };
                let window = match input.u8() {
                    0 => 0,
                    w @ 1..=0x7f => u16::from(w) << 4,
                    _ => 65_535,
                };
                let len = match input.u8() {
                    l @ 0..=0x7f => usize::from(l),
                    l => usize::from(l & 0x7f) * 40,
                };
                let ts = match (h.timestamps, op & 0x80 != 0) {
                    (true, false) => h.ts(),
                    (true, true) => Some(h.peer_ts.wrapping_sub(u32::from(input.u8()))),
                    (false, true) => Some(input.u32()),
                    (false, false) => None,
                };
                let ecn = Ecn::from_bits(input.u8());
                h.segment(PeerSegment {
                    flag_bits: bits,
                    seq_rel,
                    ack,
                    window,
                    len,
                    ts,
                    ecn,
                });
            }
            8 => {
                let ms = u64::from(input.u16());
                h.advance(Duration::from_millis(ms));
            }
            9 => {
                let secs = u64::from(input.u8());
                h.advance(Duration::from_secs(secs));
            }
            10 | 11 => {
                let len = usize::from(input.u16()) % 20_000;
                h.send(len);
            }
            12 | 13 => {
                let len = usize::from(input.u16()) % 20_000;
                h.recv(len);
            }
            14 => {
                h.conn.close();
                h.check_state();
                h.drain();
            }
            _ => {
                if input.u8() == 0xff {
                    h.conn.abort();
                    h.check_state();
                    h.drain();
                }
            }
        }
    }
    // Let every timer run out: the connection must end up closed or idle.
    for _ in 0..40 {
        h.advance(Duration::from_secs(30));
    }
    if h.conn.is_closed() {
        assert!(h.conn.poll_transmit(h.now, &mut h.payload).is_none());
    }
}
