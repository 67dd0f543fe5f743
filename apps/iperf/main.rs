//! `dpstack-iperf`: an iperf3-compatible server and client on dpstack.
//!
//! `dpstack-iperf [EAL options] -- --ip ADDR/PREFIX -s [-p PORT] [-1]` or
//! `... -c HOST [-u] [-b RATE] [-l LEN] [-P N] [-R] [--bidir] [-t SECS]
//! [-n BYTES] [-k BLOCKS] [-O N] [-J]`: the options mean what they mean to
//! iperf3, and a stock `iperf3` is the peer either way (the wire protocol
//! is in `proto.rs`). The test runs inline on the polling lcore: no
//! application threads, no socket queues. Without EAL options it runs on
//! a `net_tap` port whose kernel side is `dpstack2`.
//!
//! `--nb-cores N` runs it on N lanes (`lanes.rs`): the client opens stream
//! i on lane i % N and drives the test from lane 0; every lane of the
//! server listens, the lane that accepts a control connection drives that
//! test, and data connections are served where they land. TCP tests only
//! (UDP's datagrams would land on lanes that do not drive the test). With
//! more than one lane the counters are printed at exit, the lanes' total
//! then a line per lane (to stderr with -J, which keeps stdout to the JSON
//! document).

mod client;
mod json;
mod lanes;
#[cfg(test)]
mod lanes_tests;
mod proto;
mod report;
mod server;
mod stream;
mod test;
mod units;

use clap::Parser;
use dpstack::app::{self, App, AppSpec, CounterReport, Finished, Poller, StackArgs};
use dpstack::clock::TscClock;
use dpstack::mbuf::Mbuf;
use dpstack::stack::counters::Counters;
use dpstack::stack::iface::{
    Batch, ConnId, DropDatagrams, InlineHandler, Interface, LcoreContext, TcpEvent,
};
use dpstack::stack::port::{Buf, Port};
use dpstack::stack::udp::{BindOptions, SocketId};
use lanes::{Helper, Hub};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

const PROGRAM: &str = "dpstack-iperf";
const SPEC: AppSpec = AppSpec::new(PROGRAM, &["net_tap0,iface=dpstack2"])
    .memory_mb(512)
    .many_lanes();

/// iperf3 on dpstack.
#[derive(Debug, Parser)]
#[command(
    name = PROGRAM,
    version,
    override_usage = "dpstack-iperf [EAL options] -- --ip ADDR/PREFIX (-s | -c HOST) [options]",
    after_help = "A stock iperf3 is the peer either way, e.g. `iperf3 -c 192.0.2.1` against \
                  `dpstack-iperf -- --ip 192.0.2.1/24 -s`.",
    mut_arg("ip", |a| a.required(true))
)]
struct Cli {
    #[command(flatten)]
    stack: StackArgs,
    /// Run as a server.
    #[arg(short = 's', long, conflicts_with = "client")]
    server: bool,
    /// Run as a client of HOST.
    #[arg(short = 'c', long = "client", value_name = "HOST")]
    client: Option<IpAddr>,
    /// Server port.
    #[arg(short = 'p', long, default_value_t = 5201)]
    port: u16,
    /// Server: seconds a client may take over each step of setting up a
    /// test before the server gives up on it.
    #[arg(long, default_value_t = 10, value_name = "SECS")]
    setup_timeout: u64,
    /// Server: handle one test, then exit.
    #[arg(short = '1', long = "one-off")]
    one_off: bool,
    /// UDP instead of TCP.
    #[arg(short = 'u', long)]
    udp: bool,
    /// Bitrate per stream, bits/s (K, M, G: powers of 1000); 0 unlimited.
    /// UDP default 1M, TCP unlimited.
    #[arg(short = 'b', long, value_parser = parse_rate)]
    bitrate: Option<u64>,
    /// Block (TCP write or UDP datagram) size (K, M: powers of 1024).
    #[arg(short = 'l', long, value_parser = parse_size)]
    length: Option<u64>,
    /// Parallel streams.
    #[arg(short = 'P', long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=128))]
    parallel: u32,
    /// Reverse: the server sends.
    #[arg(short = 'R', long)]
    reverse: bool,
    /// Both send at once.
    #[arg(long)]
    bidir: bool,
    /// Seconds to transmit for.
    #[arg(short = 't', long, default_value_t = 10)]
    time: u32,
    /// Bytes to transmit instead of -t (K, M, G: powers of 1024).
    #[arg(short = 'n', long, value_parser = parse_size)]
    bytes: Option<u64>,
    /// Blocks to transmit instead of -t.
    #[arg(short = 'k', long)]
    blockcount: Option<u64>,
    /// Omit the first N seconds from the totals.
    #[arg(short = 'O', long, default_value_t = 0)]
    omit: u32,
    /// JSON output.
    #[arg(short = 'J', long)]
    json: bool,
    /// 64-bit UDP packet counters.
    #[arg(long)]
    udp_counters_64bit: bool,
    /// After the test, keep the port open (no longer polled) until SIGINT
    /// or SIGTERM, so a memif peer can stop first (DPDK 22.11's memif PMD
    /// can crash a process polling while its peer disconnects).
    #[arg(long)]
    hold: bool,
}

fn parse_with_units(s: &str, step: f64) -> Result<u64, String> {
    let s = s.trim();
    let (number, scale) = match s.chars().last() {
        Some('k' | 'K') => (&s[..s.len() - 1], step),
        Some('m' | 'M') => (&s[..s.len() - 1], step * step),
        Some('g' | 'G') => (&s[..s.len() - 1], step * step * step),
        _ => (s, 1.0),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("'{s}' is not a number (with an optional K, M or G)"))?;
    if value < 0.0 {
        return Err(format!("'{s}' is negative"));
    }
    Ok((value * scale) as u64)
}

fn parse_rate(s: &str) -> Result<u64, String> {
    parse_with_units(s, 1000.0)
}

fn parse_size(s: &str) -> Result<u64, String> {
    parse_with_units(s, 1024.0)
}

fn main() -> ExitCode {
    app::run_app::<Cli>(&SPEC, run)
}

fn params(cli: &Cli) -> proto::Params {
    proto::Params {
        tcp: !cli.udp,
        udp: cli.udp,
        omit: cli.omit,
        time: cli.time,
        num: cli.bytes.unwrap_or(0),
        blockcount: cli.blockcount.unwrap_or(0),
        parallel: cli.parallel,
        // Always sent: a stock server without it uses 128 KiB, for UDP too.
        len: cli
            .length
            .map_or(if cli.udp { 1460 } else { 128 * 1024 }, |l| l as u32),
        bandwidth: cli.bitrate.unwrap_or(if cli.udp { 1 << 20 } else { 0 }),
        pacing_timer: 1000,
        reverse: cli.reverse,
        bidirectional: cli.bidir,
        udp_counters_64bit: u32::from(cli.udp_counters_64bit),
        client_version: "3.12".into(),
    }
}

fn run(eal_args: &[String], cli: &Cli) -> Result<(), String> {
    if !cli.server && cli.client.is_none() {
        return Err("give -s (server) or -c HOST (client)".into());
    }
    if let Some(len) = cli.length {
        if cli.udp && len > 65507 {
            return Err(format!(
                "-l {len}: a UDP datagram holds at most 65507 bytes"
            ));
        }
    }
    let lane_count = usize::from(cli.stack.nb_cores.max(1));
    if cli.udp && lane_count > 1 {
        return Err(format!(
            "-u on --nb-cores {lane_count}: UDP tests run on one lane (--nb-cores 1)"
        ));
    }
    let signals = app::Signals::install()?;
    let stack = app::set_up(&SPEC, eal_args, &cli.stack, |config| {
        // Room for iperf3's default 128 KiB blocks in flight.
        config.tcp.send_buffer = config.tcp.send_buffer.max(512 * 1024);
        config.tcp.recv_buffer = config.tcp.recv_buffer.max(512 * 1024);
    })?;
    let mut lanes = vec![app::Lane {
        iface: stack.iface,
        queues: stack.queues,
    }];
    lanes.extend(stack.more_lanes);
    let buffers = (
        lanes[0].iface.config().tcp.send_buffer,
        lanes[0].iface.config().tcp.recv_buffer,
    );
    let seed = TscClock::cycles();
    let hub = Hub::new(lanes.len());
    let helper = |lane: usize| Helper::new(Arc::clone(&hub), lane, seed ^ lane as u64);
    if cli.server {
        let any4 = SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), cli.port);
        let any6 = SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), cli.port);
        // Listeners are per lane: every lane accepts what lands on it.
        for lane in &mut lanes {
            lane.iface
                .tcp_listen(any6, 128)
                .map_err(|e| format!("cannot listen on TCP port {}: {e}", cli.port))?;
        }
        let v6_only = BindOptions {
            v6_only: true,
            ..BindOptions::default()
        };
        let home = &mut lanes[0].iface;
        let udp4 = home
            .udp_bind(any4, BindOptions::default())
            .map_err(|e| format!("cannot bind UDP port {}: {e:?}", cli.port))?;
        let udp6 = home
            .udp_bind(any6, v6_only)
            .map_err(|e| format!("cannot bind UDP port {}: {e:?}", cli.port))?;
        let setup_timeout = Duration::from_secs(cli.setup_timeout.max(1));
        let make = |lane: usize| {
            let udp = vec![udp4, udp6];
            let mut server = server::Server::new(
                cli.port,
                udp,
                cli.one_off,
                seed.rotate_left(lane as u32),
                helper(lane),
            );
            server.setup_timeout = setup_timeout;
            server
        };
        let Some(finished) = drive(lanes, make, cli, &signals)? else {
            return Ok(());
        };
        let over = finished.iter().any(|f| f.handler.finished);
        let errors = finished.iter().flat_map(|f| &f.handler.errors);
        match errors.last() {
            Some(e) if over => Err(format!("the test failed: {e}")),
            _ => Ok(()),
        }
    } else {
        let host = cli.client.ok_or("no -c HOST")?;
        let server = SocketAddr::new(host, cli.port);
        let unspecified: IpAddr = if host.is_ipv4() {
            Ipv4Addr::UNSPECIFIED.into()
        } else {
            Ipv6Addr::UNSPECIFIED.into()
        };
        let params = params(cli);
        let mut sockets = Vec::new();
        if cli.udp {
            for _ in 0..params.streams() {
                sockets.push(
                    lanes[0]
                        .iface
                        .udp_bind(SocketAddr::new(unspecified, 0), BindOptions::default())
                        .map_err(|e| format!("cannot bind a UDP socket: {e:?}"))?,
                );
            }
        }
        if !cli.json {
            println!("Connecting to host {host}, port {}", cli.port);
            if cli.reverse {
                println!("Reverse mode, remote host {host} is sending");
            }
        }
        let mut client = Some(
            client::Client::new(server, params, sockets, cli.json, seed)
                .with_buffers(buffers.0, buffers.1)
                .on_lanes(Arc::clone(&hub)),
        );
        // Lane 0 drives the test; the others help.
        let make = |lane: usize| match client.take_if(|_| lane == 0) {
            Some(client) => ClientLane::Driver(Box::new(client)),
            None => ClientLane::Helper(helper(lane)),
        };
        let finished = drive(lanes, make, cli, &signals)?;
        finished
            .and_then(
                |mut lanes| match lanes.first_mut().map(|f| &mut f.handler) {
                    Some(ClientLane::Driver(client)) => client.outcome.take(),
                    _ => None,
                },
            )
            .unwrap_or_else(|| Err("interrupted".into()))
    }
}

/// Runs `make(lane)`'s handler on each lane's worker lcore until the test
/// is over or a signal, then (with --hold) keeps the port open until
/// SIGINT; gives back what the lcores had. `--faults`' counts and, on
/// several lanes, the counters go to stderr with -J (which keeps stdout to
/// the JSON document), else to stdout.
fn drive<H: App>(
    lanes: Vec<app::Lane>,
    make: impl FnMut(usize) -> H,
    cli: &Cli,
    signals: &app::Signals,
) -> Result<Option<Vec<Finished<H>>>, String> {
    let counters: Vec<Arc<Counters>> = lanes
        .iter()
        .map(|l| Arc::clone(l.iface.counters()))
        .collect();
    let workers = app::run_on_workers(lanes, make, &cli.stack)?;
    let mut report = CounterReport::of_lanes(counters.clone());
    signals.wait(
        cli.stack.stats_period,
        || workers.ended(),
        |tick| report.print(tick),
    );
    let finished = workers.stop();
    for counts in finished.iter().flatten().flat_map(|f| &f.faults) {
        eprintln!("faults: {}", counts.summary());
    }
    if counters.len() > 1 {
        let block = app::lane_counters_block(&counters);
        if cli.json {
            eprint!("{block}");
        } else {
            print!("{block}");
        }
    }
    if cli.hold {
        use std::io::Write;
        eprintln!("{PROGRAM}: holding the port open until SIGINT");
        let _ = std::io::stdout().flush();
        while signals.received() == 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    Ok(finished)
}

/// A lane of the client: lane 0 drives the test, the others move the
/// bytes of the streams they are told to open.
enum ClientLane {
    Driver(Box<client::Client>),
    Helper(Helper),
}

impl<B: Buf> InlineHandler<B> for ClientLane {
    fn on_datagrams<P: Port<Buf = B>>(
        &mut self,
        socket: SocketId,
        batch: &mut Batch<B>,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        if let ClientLane::Driver(client) = self {
            client.on_datagrams(socket, batch, ctx);
        }
    }

    fn on_tcp<P: Port<Buf = B>>(
        &mut self,
        conn: ConnId,
        event: TcpEvent,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        match self {
            ClientLane::Driver(client) => client.on_tcp(conn, event, ctx),
            ClientLane::Helper(helper) => {
                if !helper.on_tcp(conn, event, ctx) && matches!(event, TcpEvent::Accepted(_)) {
                    ctx.tcp_abort(conn);
                }
            }
        }
    }

    #[inline]
    fn on_poll<P: Port<Buf = B>>(&mut self, ctx: &mut LcoreContext<'_, P>) {
        match self {
            ClientLane::Driver(client) => client.on_poll(ctx),
            ClientLane::Helper(helper) => helper.on_poll(ctx),
        }
    }
}

/// The driver waits for duplicate address detection (a helper's lane
/// waits for its orders), polls until the test is over, then lingers.
impl App for ClientLane {
    fn start<P: Port<Buf = Mbuf>>(&mut self, poller: &mut Poller<'_, P>) {
        if let ClientLane::Driver(_) = self {
            poller.poll_while(&mut DropDatagrams, |iface, _| iface.dad_pending());
        }
    }

    #[inline]
    fn done(&mut self, _iface: &Interface<Mbuf>) -> bool {
        match self {
            ClientLane::Driver(client) => client.outcome.is_some(),
            ClientLane::Helper(helper) => helper.hub().over.load(Ordering::Relaxed),
        }
    }

    fn finish<P: Port<Buf = Mbuf>>(&mut self, poller: &mut Poller<'_, P>) {
        poller.linger(self, LINGER);
    }
}

/// The server polls until `-1`'s test is over, then lingers.
impl App for server::Server {
    #[inline]
    fn done(&mut self, _iface: &Interface<Mbuf>) -> bool {
        self.over()
    }

    fn finish<P: Port<Buf = Mbuf>>(&mut self, poller: &mut Poller<'_, P>) {
        poller.linger(self, LINGER);
    }
}

/// The client waits for duplicate address detection, polls until its test
/// is over, then lingers.
impl App for client::Client {
    fn start<P: Port<Buf = Mbuf>>(&mut self, poller: &mut Poller<'_, P>) {
        poller.poll_while(&mut DropDatagrams, |iface, _| iface.dad_pending());
    }

    #[inline]
    fn done(&mut self, _iface: &Interface<Mbuf>) -> bool {
        self.outcome.is_some()
    }

    fn finish<P: Port<Buf = Mbuf>>(&mut self, poller: &mut Poller<'_, P>) {
        poller.linger(self, LINGER);
    }
}

/// How long the lcore polls after a test, so the last closes and ACKs
/// leave.
const LINGER: Duration = Duration::from_millis(200);
