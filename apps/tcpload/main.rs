//! `dpstack-tcpload`: a TCP client on dpstack's stack, for tests and
//! benchmarks against any echo server (the kernel's, another dpstack's).
//!
//! `dpstack-tcpload [EAL options] -- --ip ADDR/PREFIX --connect HOST:PORT
//! [--bytes N] [--connections C]` sends N bytes on each of C connections,
//! checks the echo byte for byte, and prints what it verified and the rate.
//! `--crr SECONDS` instead runs connect/request/response/close transactions
//! (`--request` bytes each way) for that long on C connections at once and
//! prints transactions per second. Everything runs inline on one polling
//! lcore. Exits 0 only if every transfer verified (bulk) or no transaction
//! failed (crr).

#[path = "../common.rs"]
mod common;

use clap::Parser;
use dpstack::clock::TscClock;
use dpstack::eal::Eal;
use dpstack::ethdev::{available_ports, EthPort, EthQueue, PortConfig};
use dpstack::fault::{FaultPort, FaultSpec};
use dpstack::mbuf::Mbuf;
use dpstack::mempool::{Mempool, PoolConfig};
use dpstack::stack::iface::{
    ConnId, InlineHandler, Interface, InterfaceConfig, LcoreContext, LinkConfig, TcpEvent,
};
use dpstack::stack::port::Port;
use dpstack::stack::route::Ipv4Cidr;
use dpstack::stack::time::Instant;
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const PROGRAM: &str = "dpstack-tcpload";
const DEFAULT_VDEVS: [&str; 1] = ["net_tap0,iface=dpstack1"];

/// A TCP load client on dpstack.
#[derive(Debug, Parser)]
#[command(
    name = PROGRAM,
    version,
    override_usage = "dpstack-tcpload [EAL options] -- --ip ADDR/PREFIX --connect HOST:PORT \
                      [--bytes N] [--connections C] [--crr SECONDS]"
)]
struct Cli {
    /// Our address and prefix length (IPv4 or IPv6; repeat for both).
    #[arg(long, required = true, value_name = "ADDR/PREFIX", value_parser = common::parse_ip)]
    ip: Vec<common::IpArg>,
    /// Default gateway (IPv4).
    #[arg(long)]
    gateway: Option<Ipv4Addr>,
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
    /// Do not run IPv6 duplicate address detection.
    #[arg(long)]
    no_dad: bool,
    /// Inject faults into the port (see dpstack-echo --faults).
    #[arg(long, value_name = "SPEC")]
    faults: Option<FaultSpec>,
    /// After the run, keep the port open (no longer polled) until SIGINT or
    /// SIGTERM, so a memif peer can stop first: DPDK 22.11's memif PMD can
    /// crash a process that is still polling while its peer disconnects.
    #[arg(long)]
    hold: bool,
    /// The port's MTU (see dpstack-echo --mtu).
    #[arg(long, default_value_t = 1500, value_parser = clap::value_parser!(u16).range(1280..))]
    mtu: u16,
    /// Do not offer SACK (RFC 2018): loss recovery falls back to NewReno's
    /// one hole per round trip (for comparing what SACK buys).
    #[arg(long)]
    no_sack: bool,
    /// Pace data segments at a rate from the congestion window and the
    /// round trip (as Linux's internal pacing).
    #[arg(long)]
    pacing: bool,
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
}

impl Load {
    fn done(&self) -> bool {
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
        if self.crr_until.is_none() && self.done() {
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

fn main() -> ExitCode {
    common::run_app::<Cli>(PROGRAM, &DEFAULT_VDEVS, 256, run)
}

fn run(eal_args: &[String], cli: &Cli) -> Result<(), String> {
    let signal = common::stop_signal()?;
    let _eal = Eal::init(eal_args).map_err(|e| e.to_string())?;
    let Some(&port_id) = available_ports().first() else {
        return Err("no port: add one with --vdev (e.g. --vdev=net_tap0,iface=dpstack1)".into());
    };
    let pool = Mempool::create("tcpload_pool", &PoolConfig::default().for_mtu(cli.mtu))
        .map_err(|e| e.to_string())?;
    let port_config = PortConfig {
        mtu: Some(cli.mtu),
        ..PortConfig::default()
    };
    let port = EthPort::open(port_id, &port_config, pool).map_err(|e| e.to_string())?;
    let queue: EthQueue = port.queue(0, 0).map_err(|e| e.to_string())?;
    let mut link = LinkConfig {
        addresses: Vec::new(),
        mtu: usize::from(cli.mtu),
        ..LinkConfig::new(port.mac(), Ipv4Cidr::DEFAULT)
    };
    for ip in &cli.ip {
        match *ip {
            common::IpArg::V4(cidr) => link.addresses.push(cidr),
            common::IpArg::V6(cidr) => link.addresses6.push(cidr),
        }
    }
    let mut config = InterfaceConfig::with_links(vec![link]);
    config.gateway = cli.gateway;
    config.tcp.sack = !cli.no_sack;
    config.tcp.pacing = cli.pacing;
    if cli.no_dad {
        config.dad_transmits = 0;
    }
    let iface: Interface<Mbuf> = Interface::new(config).map_err(|e| e.to_string())?;
    println!(
        "{PROGRAM}: port {} ({}) is {}",
        port.id(),
        port.mac(),
        cli.ip
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    );
    let done = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let (report_tx, report_rx) = crossbeam_channel::bounded::<String>(1);
    let load = Load {
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
        connections: cli.connections.max(1),
    };
    let crr = cli.crr;
    let faults = cli.faults;
    let job = {
        let (done, stop) = (Arc::clone(&done), Arc::clone(&stop));
        move || {
            let report = match faults {
                Some(spec) => drive(iface, FaultPort::new(queue, spec), load, crr, &done, &stop),
                None => drive(iface, queue, load, crr, &done, &stop),
            };
            let _ = report_tx.send(report);
            0
        }
    };
    let handle = common::launch_worker(job)?;
    println!("{PROGRAM}: connecting to {}", cli.connect);
    let deadline = std::time::Instant::now() + Duration::from_secs(cli.timeout);
    while !done.load(Ordering::SeqCst)
        && signal.load(Ordering::SeqCst) == 0
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::SeqCst);
    let _ = handle.wait();
    let report = report_rx.try_recv().unwrap_or_default();
    print!("{report}");
    if cli.hold {
        use std::io::Write;
        println!("{PROGRAM}: holding the port open until SIGINT");
        let _ = std::io::stdout().flush();
        while signal.load(Ordering::SeqCst) == 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    if report.contains("FAILED") || !done.load(Ordering::SeqCst) {
        return Err("the load did not complete cleanly (see above)".into());
    }
    Ok(())
}

/// The lcore loop: opens the connections, polls until the load is done or
/// stopped, and reports.
fn drive<P: Port<Buf = Mbuf>>(
    mut iface: Interface<Mbuf>,
    mut port: P,
    mut load: Load,
    crr: Option<f64>,
    done: &AtomicBool,
    stop: &AtomicBool,
) -> String {
    let clock = TscClock::new();
    let start = clock.now();
    // Let duplicate address detection finish before connecting.
    while iface.dad_pending() && !stop.load(Ordering::Relaxed) {
        iface.poll(&mut port, clock.now(), &mut load);
    }
    let now = clock.now();
    load.crr_until = crr.map(|s| now + Duration::from_secs_f64(s));
    for _ in 0..load.connections {
        match iface.tcp_connect(core::slice::from_mut(&mut port), now, load.remote) {
            Ok(conn) => {
                load.streams.insert(conn, Default::default());
            }
            Err(e) => return format!("{PROGRAM}: FAILED to connect: {e}\n"),
        }
    }
    while !stop.load(Ordering::Relaxed) && !load.done() {
        iface.poll(&mut port, clock.now(), &mut load);
    }
    // Let the last closes go out.
    let linger = clock.now() + Duration::from_millis(200);
    while clock.now() < linger {
        iface.poll(&mut port, clock.now(), &mut load);
    }
    done.store(load.done(), Ordering::SeqCst);
    let mut report = String::new();
    let began = load.started.unwrap_or(start);
    let ended = load.finished.unwrap_or_else(|| clock.now());
    let secs = (ended - began).as_secs_f64().max(1e-9);
    match crr {
        Some(_) => report.push_str(&format!(
            "{PROGRAM}: {} transactions in {secs:.2} s: {:.0} transactions/s ({} at once), {} failed{}\n",
            load.transactions,
            load.transactions as f64 / secs,
            load.connections,
            load.failed,
            if load.failed > 0 { " FAILED" } else { "" }
        )),
        None => report.push_str(&format!(
            "{PROGRAM}: {} connection(s), {} bytes each way: verified {}, failed {}; {:.1} Mbit/s{}\n",
            load.connections,
            load.bytes,
            load.verified,
            load.failed,
            (load.verified * load.bytes * 8) as f64 / secs / 1e6,
            if load.failed > 0 || load.verified < load.connections { " FAILED" } else { "" }
        )),
    }
    report.push_str("counters:\n");
    for (name, value) in iface.counters().nonzero() {
        report.push_str(&format!("  {name:<28} {value}\n"));
    }
    report
}
