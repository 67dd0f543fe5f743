//! The kernel relay's figures as text, in `dpstack-rtp-relay`'s format
//! (docs/RTP.md "What the figures mean") so one parser reads both: per
//! active session (the first `list` of them) a line per leg and a line per
//! SSRC, then totals, per-leg totals and drops by reason. Every figure is
//! `name value`. Control path only.
//!
//! ```text
//! session s0 leg A peer 127.0.0.1:40000 latched yes relatches 0 forwarded 250 rtcp 0 rtcp-forwarded 0 foreign 0 untracked 0 retired 0 dropped 0
//! session s0 leg A ssrc 0x50000000 packets 250 bytes 40000 expected 249 lost 0 loss 0.00% jitter 0.250ms jitter-units 2 out-of-order 0 duplicates 0 discarded 1 resyncs 0
//! total sessions 1 active 1 packets 250 bytes 40000 lost 0 forwarded 250 rtcp 0 dropped 0
//! total leg A forwarded 250 rtcp-forwarded 0 dropped 0
//! total leg B forwarded 0 rtcp-forwarded 0 dropped 0
//! relay drops: none
//! ```

use crate::logic::Session;
use dpstack::media::relay::{drops_line, is_active, leg_lines, Drops, LegReport};
use std::fmt::Write;

/// The report of `sessions` (listing at most `list` active ones), `drops`
/// and `recv_errors`.
pub fn render(sessions: &[Session], drops: &Drops, recv_errors: u64, list: usize) -> String {
    let mut out = String::new();
    let mut totals = Totals::default();
    let mut listed = 0usize;
    for (index, session) in sessions.iter().enumerate() {
        let legs = [session.legs[0].report(), session.legs[1].report()];
        if !legs.iter().any(is_active) {
            continue;
        }
        totals.active += 1;
        for (leg, report) in legs.iter().enumerate() {
            totals.add(leg, report);
        }
        if listed < list {
            listed += 1;
            for (leg, report) in ["A", "B"].iter().zip(&legs) {
                leg_lines(&mut out, &format!("s{index}"), leg, report);
            }
        }
    }
    if totals.active > listed {
        let _ = writeln!(out, "more active sessions {}", totals.active - listed);
    }
    let _ = writeln!(
        out,
        "total sessions {} active {} packets {} bytes {} lost {} forwarded {} rtcp {} dropped {}",
        sessions.len(),
        totals.active,
        totals.packets,
        totals.bytes,
        totals.lost,
        totals.forwarded.iter().sum::<u64>(),
        totals.rtcp,
        totals.dropped.iter().sum::<u64>()
    );
    for (leg, name) in ["A", "B"].iter().enumerate() {
        let _ = writeln!(
            out,
            "total leg {name} forwarded {} rtcp-forwarded {} dropped {}",
            totals.forwarded[leg], totals.rtcp_forwarded[leg], totals.dropped[leg]
        );
    }
    drops_line(&mut out, drops);
    if recv_errors > 0 {
        let _ = writeln!(out, "recv errors {recv_errors}");
    }
    out
}

#[derive(Default)]
struct Totals {
    active: usize,
    packets: u64,
    bytes: u64,
    lost: i64,
    forwarded: [u64; 2],
    rtcp_forwarded: [u64; 2],
    rtcp: u64,
    dropped: [u64; 2],
}

impl Totals {
    fn add(&mut self, leg: usize, report: &LegReport) {
        for s in &report.streams {
            self.packets += s.counters.packets;
            self.bytes += s.counters.bytes;
            self.lost += s.counters.lost;
        }
        let c = &report.counters;
        self.forwarded[leg] += c.forwarded;
        self.rtcp_forwarded[leg] += c.rtcp_forwarded;
        self.rtcp += c.rtcp;
        self.dropped[leg] += c.dropped;
    }
}
