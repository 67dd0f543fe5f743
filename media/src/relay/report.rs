//! The statistics as they leave the lcore ([`Snapshot`], through a
//! [`StatsLink`]) and as text (control path, main thread): per session
//! and leg a line of leg counters and a line per SSRC, then totals and the
//! relay's drops by reason. Every figure is `name value`, so scripts and
//! tests can pick them out.
//!
//! ```text
//! session call leg A peer 10.0.0.2:5004 latched yes relatches 0 forwarded 250 rtcp 2 rtcp-forwarded 2 foreign 0 untracked 0 retired 0 dropped 0
//! session call leg A ssrc 0x1a2b3c4d packets 250 bytes 40000 expected 249 lost 0 loss 0.00% jitter 0.250ms jitter-units 2 out-of-order 0 duplicates 0 discarded 1 resyncs 0
//! total sessions 1 active 1 packets 250 bytes 40000 lost 0 forwarded 250 rtcp 2 dropped 0
//! relay drops: none
//! ```
//!
//! Sessions that neither received nor dropped anything are summed up in
//! one `idle sessions N` line instead of listed. A leg that sends receiver
//! reports of its own (echo mode, `--rtcp-reports`) ends its line with
//! `reports N reports-failed M`.

use super::leg::{LegCounters, StreamReport};
use super::membership::SSRCS_PER_LEG;
use super::{Drops, RelayDrop};
use crate::rtp::Counters;
use arrayvec::ArrayVec;
use crossbeam_channel::{Receiver, Sender};
use std::fmt::Write;
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// A leg's figures as reported.
#[derive(Debug, Clone)]
pub struct LegReport {
    /// Where its media goes (latched, else signalled).
    pub peer: Option<SocketAddr>,
    /// The RTP peer is latched.
    pub latched: bool,
    /// Times the RTP peer changed after a quiet period.
    pub relatches: u32,
    /// Per SSRC.
    pub streams: ArrayVec<StreamReport, SSRCS_PER_LEG>,
    /// The leg's counters.
    pub counters: LegCounters,
}

/// A session's figures, by slot (the order sessions were configured in).
#[derive(Debug, Clone)]
pub struct SessionReport {
    /// The session's index.
    pub index: u32,
    /// Legs A and B.
    pub legs: [LegReport; 2],
}

/// All figures at one moment.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Per session.
    pub sessions: Vec<SessionReport>,
    /// Drops by reason.
    pub drops: Drops,
}

impl Snapshot {
    /// Adds another lane's snapshot of the same sessions to this one (the
    /// relay on several lanes, [`super::lanes`]): drops and counters add
    /// up; a stream both lanes saw (its flow moved lanes) adds its counts,
    /// keeping the larger jitter and highest sequence number; a leg's peer
    /// is the one of a lane that latched it. Sessions are matched by index;
    /// one only in `other` is added.
    pub fn merge(&mut self, other: &Snapshot) {
        for (sum, add) in self.drops.iter_mut().zip(other.drops) {
            *sum = sum.saturating_add(add);
        }
        for session in &other.sessions {
            match self.sessions.iter_mut().find(|s| s.index == session.index) {
                Some(mine) => {
                    for (leg, add) in mine.legs.iter_mut().zip(&session.legs) {
                        leg.merge(add);
                    }
                }
                None => self.sessions.push(session.clone()),
            }
        }
    }
}

impl LegReport {
    /// Adds another lane's figures of this leg ([`Snapshot::merge`]).
    pub fn merge(&mut self, other: &LegReport) {
        if other.latched && !self.latched {
            self.peer = other.peer;
            self.latched = true;
        }
        self.relatches = self.relatches.saturating_add(other.relatches);
        for stream in &other.streams {
            match self.streams.iter_mut().find(|s| s.ssrc == stream.ssrc) {
                Some(mine) => {
                    add_counters(&mut mine.counters, &stream.counters);
                    mine.jitter_ns = mine.jitter_ns.max(stream.jitter_ns);
                }
                None => {
                    // Beyond the slots a leg has: its packets are counted
                    // as untracked, as one lane counts them.
                    if self.streams.try_push(*stream).is_err() {
                        let untracked = &mut self.counters.untracked;
                        *untracked = untracked.saturating_add(stream.counters.packets);
                    }
                }
            }
        }
        let (c, o) = (&mut self.counters, &other.counters);
        for (sum, add) in [
            (&mut c.forwarded, o.forwarded),
            (&mut c.rtcp, o.rtcp),
            (&mut c.rtcp_bytes, o.rtcp_bytes),
            (&mut c.rtcp_forwarded, o.rtcp_forwarded),
            (&mut c.foreign, o.foreign),
            (&mut c.untracked, o.untracked),
            (&mut c.retired, o.retired),
            (&mut c.retired_packets, o.retired_packets),
            (&mut c.retired_bytes, o.retired_bytes),
            (&mut c.dropped, o.dropped),
            (&mut c.reports_sent, o.reports_sent),
            (&mut c.reports_failed, o.reports_failed),
        ] {
            *sum = sum.saturating_add(add);
        }
        c.retired_lost = c.retired_lost.saturating_add(o.retired_lost);
    }
}

/// Adds `add`'s counts to `sum` (one source seen on two lanes).
fn add_counters(sum: &mut Counters, add: &Counters) {
    for (s, a) in [
        (&mut sum.packets, add.packets),
        (&mut sum.bytes, add.bytes),
        (&mut sum.received, add.received),
        (&mut sum.expected, add.expected),
        (&mut sum.duplicates, add.duplicates),
        (&mut sum.out_of_order, add.out_of_order),
        (&mut sum.discarded, add.discarded),
        (&mut sum.resyncs, add.resyncs),
    ] {
        *s = s.saturating_add(a);
    }
    sum.lost = sum.lost.saturating_add(add.lost);
    sum.jitter = sum.jitter.max(add.jitter);
    sum.extended_highest_seq = sum.extended_highest_seq.max(add.extended_highest_seq);
}

/// How the main thread gets snapshots from the lcore: it sends an empty
/// [`Snapshot`] (with room for every session) on `requests` and sets
/// `requested`; the next poll fills it and sends it back on `replies`.
#[derive(Debug)]
pub struct StatsLink {
    /// Set by the main thread when a request waits.
    pub requested: Arc<AtomicBool>,
    /// Empty snapshots to fill.
    pub requests: Receiver<Snapshot>,
    /// Filled snapshots.
    pub replies: Sender<Snapshot>,
}

/// The snapshot as text; `names` are the sessions' names by index.
pub fn render(snapshot: &Snapshot, names: &[String]) -> String {
    let mut out = String::new();
    let mut totals = Totals::default();
    let mut idle = 0usize;
    for session in &snapshot.sessions {
        let active = session.legs.iter().any(is_active);
        if !active {
            idle += 1;
            continue;
        }
        totals.active += 1;
        let name = names
            .get(session.index as usize)
            .map_or("?", String::as_str);
        for (leg, report) in ["A", "B"].iter().zip(&session.legs) {
            leg_lines(&mut out, name, leg, report);
            totals.add(report);
        }
    }
    if idle > 0 {
        let _ = writeln!(out, "idle sessions {idle}");
    }
    let _ = writeln!(
        out,
        "total sessions {} active {} packets {} bytes {} lost {} forwarded {} rtcp {} dropped {}",
        snapshot.sessions.len(),
        totals.active,
        totals.packets,
        totals.bytes,
        totals.lost,
        totals.forwarded,
        totals.rtcp,
        totals.dropped
    );
    drops_line(&mut out, &snapshot.drops);
    out
}

/// Appends the `relay drops:` line: each reason that dropped anything with
/// its count, or `none`.
pub fn drops_line(out: &mut String, drops: &Drops) {
    let named: Vec<String> = RelayDrop::ALL
        .iter()
        .zip(drops)
        .filter(|(_, n)| **n > 0)
        .map(|(reason, n)| format!("{} {n}", reason.name()))
        .collect();
    if named.is_empty() {
        out.push_str("relay drops: none\n");
    } else {
        let _ = writeln!(out, "relay drops: {}", named.join(" "));
    }
}

/// True if a leg saw anything (a stream, RTCP or a drop): idle legs are
/// left out of the per-session lines.
pub fn is_active(leg: &LegReport) -> bool {
    let c = &leg.counters;
    !leg.streams.is_empty() || c.rtcp > 0 || c.dropped > 0 || c.untracked > 0
}

/// Appends a leg's line and one line per stream (session `name`, leg
/// `leg`), in the relay's report format (also used by
/// `dpstack-kernel-rtp`, so both reports read alike).
pub fn leg_lines(out: &mut String, name: &str, leg: &str, report: &LegReport) {
    let c = &report.counters;
    let peer = report.peer.map_or("-".to_owned(), |p| p.to_string());
    let _ = writeln!(
        out,
        "session {name} leg {leg} peer {peer} latched {} relatches {} forwarded {} rtcp {} \
         rtcp-forwarded {} foreign {} untracked {} retired {} dropped {}",
        if report.latched { "yes" } else { "no" },
        report.relatches,
        c.forwarded,
        c.rtcp,
        c.rtcp_forwarded,
        c.foreign,
        c.untracked,
        c.retired,
        c.dropped
    );
    if c.reports_sent > 0 || c.reports_failed > 0 {
        // Only a leg that sends RTCP of its own has these.
        out.pop();
        let _ = writeln!(
            out,
            " reports {} reports-failed {}",
            c.reports_sent, c.reports_failed
        );
    }
    for stream in &report.streams {
        let s = &stream.counters;
        let loss = if s.expected == 0 {
            0.0
        } else {
            100.0 * s.lost as f64 / s.expected as f64
        };
        let _ = writeln!(
            out,
            "session {name} leg {leg} ssrc {:#010x} packets {} bytes {} expected {} lost {} \
             loss {loss:.2}% jitter {:.3}ms jitter-units {} out-of-order {} duplicates {} \
             discarded {} resyncs {}",
            stream.ssrc,
            s.packets,
            s.bytes,
            s.expected,
            s.lost,
            stream.jitter_ns as f64 / 1e6,
            s.jitter,
            s.out_of_order,
            s.duplicates,
            s.discarded,
            s.resyncs
        );
    }
}

#[derive(Default)]
struct Totals {
    active: usize,
    packets: u64,
    bytes: u64,
    lost: i64,
    forwarded: u64,
    rtcp: u64,
    dropped: u64,
}

impl Totals {
    fn add(&mut self, leg: &LegReport) {
        for s in &leg.streams {
            self.packets += s.counters.packets;
            self.bytes += s.counters.bytes;
            self.lost += s.counters.lost;
        }
        // Streams whose slot a newer SSRC took still count.
        self.packets += leg.counters.retired_packets;
        self.bytes += leg.counters.retired_bytes;
        self.lost += leg.counters.retired_lost;
        self.forwarded += leg.counters.forwarded;
        self.rtcp += leg.counters.rtcp;
        self.dropped += leg.counters.dropped;
    }
}

/// The value after `name ` in the first line that starts with `prefix`
/// (an integer figure; for tests and tools reading a report).
pub fn field(report: &str, prefix: &str, name: &str) -> Option<i64> {
    let line = report.lines().find(|l| l.starts_with(prefix))?;
    let mut words = line.split_whitespace();
    words.find(|w| *w == name)?;
    words.next()?.parse().ok()
}
