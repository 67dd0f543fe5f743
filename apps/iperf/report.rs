//! What a test prints, laid out as iperf3 3.12 lays it out: the per-second
//! interval lines (with `[SUM]` lines and separators for several streams,
//! role columns for `--bidir`), the final sender/receiver summary, and the
//! `-J` JSON document with iperf3's keys. Control path only.

use crate::proto::{Params, StreamResults};
use crate::stream::{Snapshot, Stream};
use crate::units;
use serde_json::{json, Value};

/// Which end of the test this report is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// `-c`.
    Client,
    /// `-s`.
    Server,
}

const SEPARATOR: &str = "- - - - - - - - - - - - - - - - - - - - - - - - -";

/// Collects or prints a test's reports.
#[derive(Debug)]
pub struct Reporter {
    side: Side,
    /// `-J`: collect JSON instead of printing lines.
    json: bool,
    header_done: bool,
    /// Intervals, for `-J`.
    pub intervals: Vec<Value>,
    /// Lines printed (also kept for tests).
    pub lines: Vec<String>,
}

impl Reporter {
    /// A reporter for `side`, printing lines unless `json`.
    pub fn new(side: Side, json: bool) -> Reporter {
        Reporter {
            side,
            json,
            header_done: false,
            intervals: Vec::new(),
            lines: Vec::new(),
        }
    }

    /// Prints a line (human output only).
    pub fn say(&mut self, line: String) {
        if !self.json {
            println!("{line}");
        }
        self.lines.push(line);
    }

    fn role(&self, params: &Params, sender: bool) -> &'static str {
        if !params.bidirectional {
            return "";
        }
        match (self.side, sender) {
            (Side::Client, true) => "[TX-C]",
            (Side::Client, false) => "[RX-C]",
            (Side::Server, true) => "[TX-S]",
            (Side::Server, false) => "[RX-S]",
        }
    }

    /// One interval: a line per stream, `[SUM]` lines when there are
    /// several, `(omitted)` during the omitted seconds.
    pub fn interval(
        &mut self,
        params: &Params,
        rows: &[(Stream, Snapshot, Option<u32>)],
        start: f64,
        end: f64,
        omitted: bool,
    ) {
        if self.json {
            self.interval_json(params, rows, start, end, omitted);
            return;
        }
        let any_sender = rows.iter().any(|r| r.0.sender);
        if !self.header_done {
            self.header_done = true;
            let role = if params.bidirectional { "[Role]" } else { "" };
            let tail = match (params.udp, any_sender) {
                (false, true) => "         Retr  Cwnd",
                (false, false) => "",
                (true, true) if !params.bidirectional => "         Total Datagrams",
                (true, _) => "         Jitter    Lost/Total Datagrams",
            };
            self.say(format!(
                "[ ID]{role} Interval           Transfer     Bitrate{tail}"
            ));
        }
        let tag = if omitted { "(omitted)" } else { "" };
        for (stream, d, cwnd) in rows {
            let start_of = units::line_start(
                &units::id(stream.id),
                self.role(params, stream.sender),
                start,
                end,
                d.bytes,
            );
            let line = match (params.udp, stream.sender) {
                (false, true) => format!(
                    "{start_of}  {:3}   {}s       {tag}",
                    d.retransmits,
                    units::bytes(f64::from(cwnd.unwrap_or(0)))
                ),
                (false, false) => format!("{start_of}                  {tag}"),
                (true, true) => format!("{start_of}  {}  {tag}", d.packets),
                (true, false) => format!(
                    "{start_of}  {:5.3} ms  {}  {tag}",
                    stream.jitter * 1000.0,
                    units::loss(d.lost, d.packets as i64)
                ),
            };
            self.say(line);
        }
        for sender in [true, false] {
            let of: Vec<_> = rows.iter().filter(|r| r.0.sender == sender).collect();
            if of.len() < 2 {
                continue;
            }
            let bytes = of.iter().map(|r| r.1.bytes).sum::<u64>();
            let start_of = units::line_start("SUM", self.role(params, sender), start, end, bytes);
            let line = match (params.udp, sender) {
                (false, true) => format!(
                    "{start_of}  {:3}             {tag}",
                    of.iter().map(|r| r.1.retransmits).sum::<u64>()
                ),
                (true, true) => format!(
                    "{start_of}  {}  {tag}",
                    of.iter().map(|r| r.1.packets).sum::<u64>()
                ),
                _ => format!("{start_of}                  {tag}"),
            };
            self.say(line);
        }
        if rows.len() > 1 {
            self.say(SEPARATOR.into());
        }
    }

    fn interval_json(
        &mut self,
        params: &Params,
        rows: &[(Stream, Snapshot, Option<u32>)],
        start: f64,
        end: f64,
        omitted: bool,
    ) {
        let seconds = (end - start).max(1e-9);
        let streams: Vec<Value> = rows
            .iter()
            .map(|(s, d, cwnd)| {
                let mut v = json!({
                    "socket": s.id, "start": start, "end": end, "seconds": seconds,
                    "bytes": d.bytes, "bits_per_second": d.bytes as f64 * 8.0 / seconds,
                    "omitted": omitted, "sender": s.sender,
                });
                if params.udp {
                    v["packets"] = json!(d.packets);
                    if !s.sender {
                        v["jitter_ms"] = json!(s.jitter * 1000.0);
                        v["lost_packets"] = json!(d.lost);
                        v["lost_percent"] = json!(percent(d.lost, d.packets as i64));
                    }
                } else if s.sender {
                    v["retransmits"] = json!(d.retransmits);
                    v["snd_cwnd"] = json!(cwnd.unwrap_or(0));
                }
                v
            })
            .collect();
        let bytes: u64 = rows.iter().map(|r| r.1.bytes).sum();
        self.intervals.push(json!({
            "streams": streams,
            "sum": {"start": start, "end": end, "seconds": seconds, "bytes": bytes,
                    "bits_per_second": bytes as f64 * 8.0 / seconds, "omitted": omitted,
                    "sender": rows.iter().any(|r| r.0.sender)},
        }));
    }

    /// The final summary. `local` are our streams' results, `remote` the
    /// peer's (the client has both; the server prints only its own).
    pub fn summary(
        &mut self,
        params: &Params,
        streams: &[Stream],
        local: &[StreamResults],
        remote: &[StreamResults],
    ) {
        if self.json {
            return;
        }
        self.say(SEPARATOR.into());
        let role = if params.bidirectional { "[Role]" } else { "" };
        let tail = if params.udp {
            "         Jitter    Lost/Total Datagrams"
        } else if streams.iter().any(|s| s.sender) || self.side == Side::Client {
            "         Retr"
        } else {
            ""
        };
        self.say(format!(
            "[ ID]{role} Interval           Transfer     Bitrate{tail}"
        ));
        let mut sums: [(u64, i64, f64, i64, i64, f64); 2] = [(0, 0, 0.0, 0, 0, 0.0); 2];
        for (stream, mine) in streams.iter().zip(local) {
            let theirs = remote.iter().find(|r| r.id == stream.id);
            let (send, recv) = if stream.sender {
                (Some(mine), theirs)
            } else {
                (theirs, Some(mine))
            };
            let role = self.role(params, stream.sender);
            if self.side == Side::Client || stream.sender {
                if let Some(r) = send {
                    let line = self.result_line(params, &units::id(stream.id), role, r, true);
                    self.say(line);
                    add(&mut sums[0], r);
                }
            }
            if self.side == Side::Client || !stream.sender {
                if let Some(r) = recv {
                    let line = self.result_line(params, &units::id(stream.id), role, r, false);
                    self.say(line);
                    add(&mut sums[1], r);
                }
            }
        }
        if streams.len() > 1 && !params.bidirectional {
            for (i, label) in [(0, true), (1, false)] {
                let (bytes, retr, end, lost, packets, jitter) = sums[i];
                if bytes == 0 && end == 0.0 {
                    continue;
                }
                let r = StreamResults {
                    bytes,
                    retransmits: retr,
                    end_time: end,
                    errors: lost,
                    packets,
                    jitter,
                    ..StreamResults::default()
                };
                let line = self.result_line(params, "SUM", "", &r, label);
                self.say(line);
            }
        }
    }

    fn result_line(
        &self,
        params: &Params,
        id: &str,
        role: &str,
        r: &StreamResults,
        sender: bool,
    ) -> String {
        let label = if sender { "sender" } else { "receiver" };
        let start_of = units::line_start(id, role, 0.0, r.end_time, r.bytes);
        if params.udp {
            let (jitter, lost, total) = if sender {
                (0.0, 0, r.packets)
            } else {
                (r.jitter, r.errors, r.packets)
            };
            format!(
                "{start_of}  {:5.3} ms  {}  {label}",
                jitter * 1000.0,
                units::loss(lost, total)
            )
        } else if sender && r.retransmits >= 0 {
            format!("{start_of}  {:3}             {label}", r.retransmits)
        } else {
            format!("{start_of}                  {label}")
        }
    }
}

fn add(sum: &mut (u64, i64, f64, i64, i64, f64), r: &StreamResults) {
    sum.0 += r.bytes;
    sum.1 += r.retransmits.max(0);
    sum.2 = sum.2.max(r.end_time);
    sum.3 += r.errors.max(0);
    sum.4 += r.packets.max(0);
    sum.5 = sum.5.max(r.jitter);
}

/// `lost` of `total` as a percentage.
pub fn percent(lost: i64, total: i64) -> f64 {
    if total > 0 {
        100.0 * lost as f64 / total as f64
    } else {
        0.0
    }
}
