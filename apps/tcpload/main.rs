//! `dpstack-tcpload`: a TCP client on dpstack's stack, for tests and
//! benchmarks against any echo server (the kernel's, another dpstack's).
//!
//! `dpstack-tcpload [EAL options] -- --ip ADDR/PREFIX --connect HOST:PORT
//! [--bytes N] [--connections C]` sends N bytes on each of C connections,
//! checks the echo byte for byte, and prints what it verified and the rate.
//! `--crr SECONDS` instead runs connect/request/response/close transactions
//! (`--request` bytes each way) for that long on C connections at once and
//! prints transactions per second. Everything runs inline on the polling
//! lcores: with `--nb-cores N`, N lanes (pipelines on their worker lcores,
//! each with its own queue of the port) share the connections out, each
//! opening its share; where the port's spreading is a known RSS, each lane
//! picks local ports whose replies land on its queue, and elsewhere TCP
//! steering hands replies to the lane that owns the connection. The report
//! is the lanes' total, with a counter line per lane. Exits 0 only if every
//! transfer verified (bulk) or no transaction failed (crr).

use clap::Parser;
use dpstack::app::{self, App, AppSpec, CounterReport, Poller, StackArgs};
use dpstack::mbuf::Mbuf;
use dpstack::stack::counters::Counters;
use dpstack::stack::iface::{ConnId, InlineHandler, Interface, LcoreContext, TcpEvent};
use dpstack::stack::port::Port;
use dpstack::stack::time::Instant;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

const PROGRAM: &str = "dpstack-tcpload";
const SPEC: AppSpec = AppSpec::new(PROGRAM, &["net_tap0,iface=dpstack1"]).many_lanes();

/// A TCP load client on dpstack.
#[derive(Debug, Parser)]
#[command(
    name = PROGRAM,
    version,
    override_usage = "dpstack-tcpload [EAL options] -- --ip ADDR/PREFIX --connect HOST:PORT \
                      [--bytes N] [--connections C] [--crr SECONDS]",
    mut_arg("ip", |a| a.required(true))
)]
struct Cli {
    #[command(flatten)]
    stack: StackArgs,
    /// The echo server.
    #[arg(long)]
    connect: SocketAddr,
    /// Bytes per connection (bulk mode).
    #[arg(long, default_value_t = 1 << 20)]
    bytes: usize,
    /// Connections at once.
    #[arg(long, default_value_t = 1)]
    connections: usize,
    /// Run connect/request/response/close transactions for this many
    /// seconds instead of bulk transfers.
    #[arg(long, value_name = "SECONDS")]
    crr: Option<f64>,
    /// Bytes of each transaction's request (and response).
    #[arg(long, default_value_t = 64)]
    request: usize,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// After the run, keep the port open (no longer polled) until SIGINT or
    /// SIGTERM, so a memif peer can stop first: DPDK 22.11's memif PMD can
    /// crash a process that is still polling while its peer disconnects.
    #[arg(long)]
    hold: bool,
    /// Do not offer SACK (RFC 2018): loss recovery falls back to NewReno's
    /// one hole per round trip (for comparing what SACK buys).
    #[arg(long)]
    no_sack: bool,
}

/// Period of the stream pattern (a prime, so the pattern does not line up
/// with segment or buffer sizes).
const PERIOD: usize = 65521;

/// Byte `i` of every stream.
fn pattern(i: usize) -> u8 {
    let i = i % PERIOD;
    (i.wrapping_mul(7) ^ (i >> 9)) as u8
}

/// Two periods of the pattern: the `n <= PERIOD` bytes from stream offset
/// `at` are `table[at % PERIOD..][..n]`, so sending and checking are slice
/// copies and compares.
fn pattern_table() -> Vec<u8> {
    (0..2 * PERIOD).map(pattern).collect()
}

#[derive(Default)]
struct Stream {
    sent: usize,
    received: usize,
    mismatch: bool,
}

/// The lcore's side: bulk streams or transaction loops.
struct Load {
    remote: SocketAddr,
    bytes: usize,
    crr_until: Option<Instant>,
    request: usize,
    streams: HashMap<ConnId, Stream>,
    scratch: Vec<u8>,
    table: Vec<u8>,
    verified: usize,
    failed: usize,
    transactions: u64,
    started: Option<Instant>,
    finished: Option<Instant>,
    connections: usize,
    /// How long `--crr` runs, if it does.
    crr: Option<f64>,
    /// When the lcore started, for a load that never connected.
    began: Option<Instant>,
    /// When the load ended (or was stopped).
    ended: Option<Instant>,
    /// Why the connections could not be opened.
    connect_error: Option<String>,
}

impl Load {
    /// Whether the load is over: every stream verified or failed (bulk),
    /// the transactions' time up and every stream closed (crr), or no
    /// connection could be opened.
    fn complete(&self) -> bool {
        if self.connect_error.is_some() {
            return true;
        }
        match self.crr_until {
            Some(_) => self.finished.is_some() && self.streams.is_empty(),
            None => self.verified + self.failed >= self.connections,
        }
    }

    fn pump<P: Port<Buf = Mbuf>>(&mut self, conn: ConnId, ctx: &mut LcoreContext<'_, P>) {
        let target = if self.crr_until.is_some() {
            self.request
        } else {
            self.bytes
        };
        let Some(stream) = self.streams.get_mut(&conn) else {
            return;
        };
        loop {
            let n = ctx.tcp_recv(conn, &mut self.scratch).unwrap_or(0);
            if n == 0 {
                break;
            }
            let at = stream.received % PERIOD;
            if self.scratch[..n] != self.table[at..at + n] {
                stream.mismatch = true;
            }
            stream.received += n;
        }
        while stream.sent < target {
            let n = (target - stream.sent).min(PERIOD);
            let at = stream.sent % PERIOD;
            match ctx.tcp_send(conn, &self.table[at..at + n]) {
                Ok(0) | Err(_) => break,
                Ok(n) => stream.sent += n,
            }
            if stream.sent == target && self.crr_until.is_none() {
                ctx.tcp_close(conn);
            }
        }
        if stream.received < target {
            return;
        }
        // This stream is complete.
        let ok = !stream.mismatch;
        self.streams.remove(&conn);
        match self.crr_until {
            None => {
                if ok {
                    self.verified += 1;
                } else {
                    self.failed += 1;
                }
            }
            Some(until) => {
                ctx.tcp_close(conn);
                if ok {
                    self.transactions += 1;
                } else {
                    self.failed += 1;
                }
                if ctx.now() < until {
                    self.open(ctx);
                } else if self.finished.is_none() {
                    self.finished = Some(ctx.now());
                }
            }
        }
        if self.crr_until.is_none() && self.complete() {
            self.finished = Some(ctx.now());
        }
    }

    fn open<P: Port<Buf = Mbuf>>(&mut self, ctx: &mut LcoreContext<'_, P>) {
        match ctx.tcp_connect(self.remote) {
            Ok(conn) => {
                self.streams.insert(conn, Stream::default());
            }
            Err(_) => self.failed += 1,
        }
    }
}

impl InlineHandler<Mbuf> for Load {
    fn on_tcp<P: Port<Buf = Mbuf>>(
        &mut self,
        conn: ConnId,
        event: TcpEvent,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        match event {
            TcpEvent::Connected => {
                self.started.get_or_insert(ctx.now());
                self.pump(conn, ctx);
            }
            TcpEvent::Readable => self.pump(conn, ctx),
            TcpEvent::Closed(error) => {
                if self.streams.remove(&conn).is_some() {
                    self.failed += 1;
                    if let Some(error) = error {
                        eprintln!("{PROGRAM}: connection failed: {error}");
                    }
                    if self.crr_until.is_some_and(|u| ctx.now() < u) {
                        self.open(ctx);
                    }
                }
            }
            TcpEvent::Accepted(_) => {}
        }
    }
}

/// The lcore's run: wait for duplicate address detection, open the
/// connections, poll until the load is done or stopped, let the last
/// closes go out.
impl App for Load {
    fn start<P: Port<Buf = Mbuf>>(&mut self, poller: &mut Poller<'_, P>) {
        self.began = Some(poller.now());
        poller.poll_while(self, |iface, _| iface.dad_pending());
        let now = poller.now();
        self.crr_until = self.crr.map(|s| now + Duration::from_secs_f64(s));
        for _ in 0..self.connections {
            match poller
                .iface
                .tcp_connect(&mut *poller.ports, now, self.remote)
            {
                Ok(conn) => {
                    self.streams.insert(conn, Stream::default());
                }
                Err(e) => {
                    self.connect_error = Some(e.to_string());
                    return;
                }
            }
        }
    }

    #[inline]
    fn done(&mut self, _iface: &Interface<Mbuf>) -> bool {
        self.complete()
    }

    fn finish<P: Port<Buf = Mbuf>>(&mut self, poller: &mut Poller<'_, P>) {
        if self.connect_error.is_some() {
            return;
        }
        poller.linger(self, Duration::from_millis(200));
        self.ended = Some(poller.now());
    }
}

fn main() -> ExitCode {
    app::run_app::<Cli>(&SPEC, run)
}

fn run(eal_args: &[String], cli: &Cli) -> Result<(), String> {
    let signals = app::Signals::install()?;
    let stack = app::set_up(&SPEC, eal_args, &cli.stack, |config| {
        config.tcp.sack = !cli.no_sack;
    })?;
    let port = stack.ports.first().ok_or("no port")?;
    println!("{}", app::port_banner(PROGRAM, port, &cli.stack));
    let lanes_count = usize::from(cli.stack.nb_cores.max(1));
    let connections = cli.connections.max(1);
    if connections < lanes_count {
        return Err(format!(
            "--connections {connections} on --nb-cores {lanes_count}: give every lane at least one"
        ));
    }
    let make = |lane: usize| Load {
        remote: cli.connect,
        bytes: cli.bytes,
        crr_until: None,
        request: cli.request.max(1),
        streams: HashMap::new(),
        scratch: vec![0; 16384],
        table: pattern_table(),
        verified: 0,
        failed: 0,
        transactions: 0,
        started: None,
        finished: None,
        // The lanes' shares: as even as can be, the first ones one more.
        connections: connections / lanes_count + usize::from(lane < connections % lanes_count),
        crr: cli.crr,
        began: None,
        ended: None,
        connect_error: None,
    };
    let mut lanes = vec![app::Lane {
        iface: stack.iface,
        queues: stack.queues,
    }];
    lanes.extend(stack.more_lanes);
    let counters: Vec<Arc<Counters>> = lanes
        .iter()
        .map(|l| Arc::clone(l.iface.counters()))
        .collect();
    let worker = app::run_on_workers(lanes, make, &cli.stack)?;
    println!("{PROGRAM}: connecting to {}", cli.connect);
    let deadline = std::time::Instant::now() + Duration::from_secs(cli.timeout);
    let mut stats = CounterReport::of_lanes(counters.clone());
    signals.wait(
        cli.stack.stats_period,
        || worker.all_ended() || std::time::Instant::now() >= deadline,
        |tick| stats.print(tick),
    );
    let finished = worker.stop();
    let done = finished
        .as_ref()
        .is_some_and(|lanes| lanes.iter().all(|f| f.handler.complete()));
    let report = finished
        .map(|lanes| report(&lanes, &counters))
        .unwrap_or_default();
    print!("{report}");
    if cli.hold {
        use std::io::Write;
        println!("{PROGRAM}: holding the port open until SIGINT");
        let _ = std::io::stdout().flush();
        while signals.received() == 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    if report.contains("FAILED") || !done {
        return Err("the load did not complete cleanly (see above)".into());
    }
    Ok(())
}

/// What the lanes' loads did together, and the counters (the total, then
/// a line per lane with more than one).
fn report(lanes: &[app::Finished<Load>], counters: &[Arc<Counters>]) -> String {
    let loads: Vec<&Load> = lanes.iter().map(|f| &f.handler).collect();
    if let Some(e) = loads.iter().find_map(|l| l.connect_error.as_ref()) {
        return format!("{PROGRAM}: FAILED to connect: {e}\n");
    }
    let sum = |f: fn(&Load) -> usize| loads.iter().map(|l| f(l)).sum::<usize>();
    let (connections, verified, failed) = (
        sum(|l| l.connections),
        sum(|l| l.verified),
        sum(|l| l.failed),
    );
    let transactions: u64 = loads.iter().map(|l| l.transactions).sum();
    let began = loads.iter().filter_map(|l| l.started.or(l.began)).min();
    let ended = loads.iter().filter_map(|l| l.finished.or(l.ended)).max();
    let secs = match (began, ended) {
        (Some(began), Some(ended)) => (ended - began).as_secs_f64(),
        _ => 0.0,
    }
    .max(1e-9);
    let bytes = loads.first().map_or(0, |l| l.bytes);
    let mut report = String::new();
    match loads.first().and_then(|l| l.crr) {
        Some(_) => report.push_str(&format!(
            "{PROGRAM}: {transactions} transactions in {secs:.2} s: {:.0} transactions/s ({connections} at once), {failed} failed{}\n",
            transactions as f64 / secs,
            if failed > 0 { " FAILED" } else { "" }
        )),
        None => report.push_str(&format!(
            "{PROGRAM}: {connections} connection(s), {bytes} bytes each way: verified {verified}, failed {failed}; {:.1} Mbit/s{}\n",
            (verified * bytes * 8) as f64 / secs / 1e6,
            if failed > 0 || verified < connections { " FAILED" } else { "" }
        )),
    }
    report.push_str(&app::lanes_fault_lines(lanes));
    report.push_str(&app::lane_counters_block(counters));
    report
}
