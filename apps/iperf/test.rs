//! A running test's data side, shared by the server and the client: its
//! streams, sending (TCP send buffers kept full, UDP datagrams paced to the
//! per-stream bitrate), receiving, the omitted start, per-second interval
//! reports, and the results each side sends at the end.
//!
//! Runs on the polling lcore inside the stack's callbacks: the per-packet
//! paths (`on_readable`, `on_datagram`, `pump`) do not allocate; the
//! reports once a second do.

use crate::proto::{Params, Results, UdpHeader};
use crate::report::Reporter;
use crate::stream::{Snapshot, Stream, Transport};
use dpstack::stack::iface::{ConnId, LcoreContext};
use dpstack::stack::port::Port;
use dpstack::stack::time::Instant;
use dpstack::stack::udp::SocketId;
use std::net::SocketAddr;
use std::time::Duration;

/// Datagrams one stream sends per poll at most (keeps polls short).
const UDP_PER_POLL: usize = 32;

/// A test in progress.
#[derive(Debug)]
pub struct Test {
    /// What the client asked for.
    pub params: Params,
    /// Its streams, in creation order.
    pub streams: Vec<Stream>,
    /// When TEST_START went (server) or came (client).
    pub started: Option<Instant>,
    /// When the omitted seconds ended (the start of the totals).
    pub counted_from: Option<Instant>,
    /// Senders stop once TEST_END is sent or received.
    pub sending: bool,
    next_report: Option<Instant>,
    interval_from: Option<Instant>,
    /// Payload for every write (random bytes, as iperf3 sends).
    block: Vec<u8>,
    scratch: Vec<u8>,
    /// Where the reports go.
    pub reporter: Reporter,
}

impl Test {
    /// A test of `params`, reported as `side` ("client" or "server").
    pub fn new(params: Params, reporter: Reporter, seed: u64) -> Test {
        let len = params.block_len().max(UdpHeader::len(true));
        let mut x = seed | 1;
        let block = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        Test {
            params,
            streams: Vec::new(),
            started: None,
            counted_from: None,
            sending: false,
            next_report: None,
            interval_from: None,
            block,
            scratch: vec![0; 256 * 1024],
            reporter,
        }
    }

    /// The test starts now: data may flow.
    pub fn start(&mut self, now: Instant) {
        self.started = Some(now);
        self.sending = true;
        self.interval_from = Some(now);
        self.next_report = Some(now + Duration::from_secs(1));
        if self.params.omit == 0 {
            self.counted_from = Some(now);
        }
    }

    /// True while data is counted as part of the test.
    pub fn running(&self) -> bool {
        self.started.is_some()
    }

    /// Seconds since the totals started.
    pub fn elapsed(&self, now: Instant) -> f64 {
        self.counted_from
            .or(self.started)
            .map_or(0.0, |t| now.saturating_duration_since(t).as_secs_f64())
    }

    /// The stream carried by connection `conn`.
    pub fn stream_of_conn(&mut self, conn: ConnId) -> Option<&mut Stream> {
        self.streams.iter_mut().find(|s| s.conn() == Some(conn))
    }

    /// Reads what arrived on connection `conn` (a receiving stream counts
    /// it; anything else is drained). Returns true at the end of its stream.
    pub fn on_readable<P: Port>(&mut self, conn: ConnId, ctx: &mut LcoreContext<'_, P>) -> bool {
        let running = self.running();
        let Some(stream) = self.streams.iter_mut().find(|s| s.conn() == Some(conn)) else {
            return false;
        };
        loop {
            match ctx.tcp_recv(conn, &mut self.scratch) {
                Ok(0) | Err(_) => break,
                Ok(n) if running && !stream.sender => stream.now.bytes += n as u64,
                Ok(_) => {}
            }
        }
        if ctx.tcp_at_eof(conn) && !stream.finished {
            stream.finished = true;
            ctx.tcp_close(conn);
        }
        stream.finished
    }

    /// Counts a datagram from `src` on `socket`, if it belongs to a
    /// receiving stream of this test. Returns false if no stream has it.
    pub fn on_datagram(
        &mut self,
        socket: SocketId,
        src: SocketAddr,
        payload: &[u8],
        now: Instant,
    ) -> bool {
        let wide = self.params.udp_counters_64bit != 0;
        let Some(stream) = self.streams.iter_mut().find(|s| {
            matches!(s.transport, Transport::Udp { socket: so, peer } if so == socket && peer == src)
        }) else {
            return false;
        };
        // Counted even before TEST_START reaches us: with -R the server
        // sends right after it, and the state byte can trail the first
        // datagrams (iperf3's kernel socket buffers them for it the same
        // way). The stream's set-up datagram is too short to count.
        if !stream.sender {
            if let Some(header) = UdpHeader::read(wide, payload) {
                stream.udp_received(header, now.as_nanos(), payload.len());
            }
        }
        true
    }

    /// Sends what the senders may: TCP until the send buffers are full,
    /// UDP up to the pacing allowance. Stops at the byte or block limit.
    pub fn pump<P: Port>(&mut self, ctx: &mut LcoreContext<'_, P>) {
        if !self.sending {
            return;
        }
        let Some(started) = self.started else {
            return;
        };
        let now = ctx.now();
        let since = now.saturating_duration_since(started).as_secs_f64();
        let len = self.params.block_len();
        let wide = self.params.udp_counters_64bit != 0;
        for i in 0..self.streams.len() {
            if !self.streams[i].sender || self.streams[i].finished || self.limit_reached() {
                continue;
            }
            let stream = &mut self.streams[i];
            // Pacing: bytes allowed so far at the per-stream bitrate.
            let allowance = match self.params.bandwidth {
                0 => u64::MAX,
                rate => ((rate as f64 / 8.0) * since) as u64,
            };
            match stream.transport {
                Transport::Tcp(conn) => loop {
                    if stream.now.bytes >= allowance {
                        break;
                    }
                    let from = stream.block_offset;
                    let n = match ctx.tcp_send(conn, &self.block[from..len]) {
                        Ok(n) if n > 0 => n,
                        _ => break,
                    };
                    stream.now.bytes += n as u64;
                    stream.block_offset += n;
                    if stream.block_offset == len {
                        stream.block_offset = 0;
                        stream.blocks += 1;
                    }
                },
                Transport::Elsewhere => {}
                Transport::Udp { socket, peer } => {
                    for _ in 0..UDP_PER_POLL {
                        if stream.now.bytes >= allowance {
                            break;
                        }
                        let at = now.as_nanos();
                        let header = UdpHeader {
                            sec: (at / 1_000_000_000) as u32,
                            usec: ((at % 1_000_000_000) / 1000) as u32,
                            count: stream.now.packets + 1,
                        };
                        header.write(wide, &mut self.block);
                        if ctx.send_to(socket, peer, &self.block[..len]).is_err() {
                            break;
                        }
                        stream.now.packets += 1;
                        stream.now.bytes += len as u64;
                        stream.blocks += 1;
                    }
                }
            }
            if let Transport::Tcp(conn) = stream.transport {
                if let Some(info) = ctx.tcp_info(conn) {
                    stream.now.retransmits = info.retransmits;
                }
            }
        }
    }

    /// Takes in what the other lanes counted on their streams (once per
    /// poll, before the limits, the reports and the results look); true if
    /// a stream of another lane moved bytes since the last time.
    pub fn sync(&mut self) -> bool {
        let mut moved = false;
        for s in self.streams.iter_mut().filter(|s| s.link.is_some()) {
            let before = s.now.bytes;
            s.sync();
            moved |= s.now.bytes != before;
        }
        moved
    }

    /// True once the senders moved the `-n` bytes or `-k` blocks.
    pub fn limit_reached(&self) -> bool {
        // The common -t test has no limit: no walk over the streams (this
        // runs for every stream on every pump).
        if self.params.num == 0 && self.params.blockcount == 0 {
            return false;
        }
        let sent = || self.streams.iter().filter(|s| s.sender);
        (self.params.num > 0 && sent().map(|s| s.now.bytes).sum::<u64>() >= self.params.num)
            || (self.params.blockcount > 0
                && sent().map(|s| s.blocks).sum::<u64>() >= self.params.blockcount)
    }

    /// True once the test has run its `-t` seconds (plus `-O`).
    pub fn time_is_up(&self, now: Instant) -> bool {
        let Some(started) = self.started else {
            return false;
        };
        self.params.num == 0
            && self.params.blockcount == 0
            && now.saturating_duration_since(started)
                >= Duration::from_secs(u64::from(self.params.time + self.params.omit))
    }

    /// Ends the omitted seconds when due and reports finished intervals.
    pub fn tick<P: Port>(&mut self, ctx: &mut LcoreContext<'_, P>) {
        let now = ctx.now();
        let (Some(started), Some(due)) = (self.started, self.next_report) else {
            return;
        };
        if now < due {
            return;
        }
        self.next_report = Some(due + Duration::from_secs(1));
        for stream in &mut self.streams {
            if let Some(info) = stream.conn().and_then(|c| ctx.tcp_info(c)) {
                stream.now.retransmits = info.retransmits;
            }
        }
        let omitting = self.counted_from.is_none();
        let from = self.interval_from.unwrap_or(started);
        let base = self.counted_from.unwrap_or(started);
        let start = from.saturating_duration_since(base).as_secs_f64();
        let end = now.saturating_duration_since(base).as_secs_f64();
        let rows: Vec<(Stream, Snapshot, Option<u32>)> = self
            .streams
            .iter_mut()
            .map(|s| {
                let d = s.take_interval();
                let cwnd = match &s.link {
                    Some(link) => Some(link.cwnd.load(std::sync::atomic::Ordering::Relaxed)),
                    None => s.conn().and_then(|c| ctx.tcp_info(c)).map(|i| i.cwnd),
                };
                (s.clone(), d, cwnd)
            })
            .collect();
        self.reporter
            .interval(&self.params, &rows, start, end, omitting);
        self.interval_from = Some(now);
        if omitting
            && now.saturating_duration_since(started)
                >= Duration::from_secs(u64::from(self.params.omit))
        {
            self.counted_from = Some(now);
            self.interval_from = Some(now);
            for s in &mut self.streams {
                s.end_omit();
            }
        }
    }

    /// This side's results for the exchange.
    pub fn results(&self, now: Instant, cpu: (f64, f64, f64)) -> Results {
        let end = self.elapsed(now);
        let tcp_sender = self.params.tcp && self.streams.iter().any(|s| s.sender);
        Results {
            cpu_util_total: cpu.0,
            cpu_util_user: cpu.1,
            cpu_util_system: cpu.2,
            sender_has_retransmits: if tcp_sender {
                1
            } else if self.streams.iter().any(|s| s.sender) {
                0
            } else {
                -1
            },
            streams: self
                .streams
                .iter()
                .map(|s| s.results(self.params.udp, end))
                .collect(),
        }
    }

    /// Closes the TCP streams (the test is over).
    pub fn close_streams<P: Port>(&mut self, ctx: &mut LcoreContext<'_, P>) {
        self.sending = false;
        for s in &mut self.streams {
            if let Transport::Tcp(conn) = s.transport {
                ctx.tcp_close(conn);
            }
        }
    }

    /// Aborts the TCP streams (the test failed).
    pub fn abort_streams<P: Port>(&mut self, ctx: &mut LcoreContext<'_, P>) {
        self.sending = false;
        for s in &mut self.streams {
            if let Transport::Tcp(conn) = s.transport {
                ctx.tcp_abort(conn);
            }
        }
    }
}

/// CPU use of this process since `since` (utime, stime in clock ticks from
/// /proc/self/stat), as iperf3's (total, user, system) percentages.
pub fn cpu_percent(since: &(u64, u64, std::time::Instant)) -> (f64, f64, f64) {
    let (user, system) = cpu_ticks();
    let wall = since.2.elapsed().as_secs_f64().max(1e-9);
    let ticks = 100.0; // USER_HZ on Linux
    let u = (user.saturating_sub(since.0)) as f64 / ticks / wall * 100.0;
    let s = (system.saturating_sub(since.1)) as f64 / ticks / wall * 100.0;
    (u + s, u, s)
}

/// (utime, stime) of this process in clock ticks; zeros if unreadable.
pub fn cpu_ticks() -> (u64, u64) {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return (0, 0);
    };
    // Fields after the parenthesised command name; utime and stime are the
    // 14th and 15th fields overall, the 12th and 13th after it.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |i: usize| fields.get(i).and_then(|f| f.parse().ok()).unwrap_or(0);
    (field(11), field(12))
}
