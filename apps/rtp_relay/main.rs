//! `dpstack-rtp-relay`: an RTP/RTCP relay (or echo) for many sessions on
//! one lcore of dpstack, or on several (`--nb-cores N`).
//!
//! `dpstack-rtp-relay [EAL options] -- --ip ADDR/PREFIX (--sessions N
//! [--port-base P] | --config FILE) [--echo] [options]`. Each session has
//! two legs, each an RTP port and an RTCP port (or one port with rtcp-mux);
//! what a leg's peer sends is checked, counted per SSRC (RFC 3550 loss,
//! jitter, reordering, duplicates) and sent from the other leg's port to
//! the other leg's peer. Peers are learned from their first valid packets
//! (latching) or given in the configuration. `--echo` reflects media back
//! to its sender instead. SIGUSR1 (or `--stats-period`) prints every
//! session's statistics; SIGINT/SIGTERM print them and exit 0. Without EAL
//! options it runs on a `net_tap` port whose kernel side is `dpstack3`.
//! The file format and the figures are in `docs/RTP.md`.
//!
//! Several lcores: `--nb-cores N` polls on N worker lcores (lanes), each
//! with its own relay over a copy of every session (see the media crate's
//! `relay::lanes`): a leg is recorded by the lane its flow lands on, and
//! latches learned on one lane reach the others at their next poll. The
//! statistics (on SIGUSR1, each period, at exit) are every lane's snapshot
//! merged; the counters are the lanes' total, then a line per lane, and
//! `--record-core-cycles` prints each lane's cycle line.

use clap::{ArgGroup, Parser};
use dpstack::app::{self, App, AppSpec, IpArg, Poller, StackArgs, Tick};
use dpstack::clock::TscClock;
use dpstack::mbuf::Mbuf;
use dpstack::media::relay::{
    self as config, report, LocalAddrs, Relay, RelayOptions, ReportConfig, SessionSpec, Snapshot,
    SpecError, StartError, StatsLink,
};
use dpstack::media::LatchConfig;
use dpstack::stack::counters::Counters;
use dpstack::stack::iface::{Batch, ConnId, InlineHandler, LcoreContext, TcpEvent};
use dpstack::stack::port::Port;
use dpstack::stack::route::{Ipv4Cidr, Ipv6Cidr};
use dpstack::stack::udp::{Datagram, PeerError, SocketId};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const PROGRAM: &str = "dpstack-rtp-relay";
const SPEC: AppSpec = AppSpec::new(PROGRAM, &["net_tap0,iface=dpstack3"]).many_lanes();

/// An RTP relay on dpstack.
#[derive(Debug, Parser)]
#[command(
    name = PROGRAM,
    version,
    override_usage = "dpstack-rtp-relay [EAL options] -- [--ip ADDR/PREFIX] \
                      (--sessions N [--port-base P] | --config FILE) [--echo] [options]",
    group(ArgGroup::new("what").required(true).args(["sessions", "config"])),
    after_help = "Session i of --sessions has leg A on ports P+4i (RTP) and P+4i+1 (RTCP), \
                  leg B on P+4i+2 and P+4i+3.\nConfig file lines: \
                  session NAME A_PORT|auto B_PORT|auto [a-peer=IP:PORT] [b-peer=IP:PORT] [mux] \
                  [a-ip6] [b-ip6]   (# starts a comment)\n\
                  SIGUSR1 prints every session's statistics.",
    mut_arg("ip", |a| a
        .default_value("192.0.2.1/24")
        .value_parser(relay_ip)
        .help("Our address and prefix length, IPv4 or IPv6; give it twice for both \
               (one of each family at most). An IPv6 one serves legs whose peers are \
               IPv6, at once: no duplicate address detection")),
    mut_arg("total_num_mbufs", |a| a.default_value("16383")),
    mut_arg("stats_period", |a| a
        .value_parser(clap::value_parser!(u64).range(1..))
        .help("Print every session's statistics every N seconds"))
)]
struct Cli {
    #[command(flatten)]
    stack: StackArgs,
    /// Count the lcore's cycles inside the port's rx/tx bursts and print,
    /// at exit, its cycles per received packet split into the driver's and
    /// the rest (two TSC reads per burst call; as testpmd's option).
    #[arg(long)]
    record_core_cycles: bool,
    /// Relay N sessions on consecutive ports from --port-base.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=16383))]
    sessions: Option<u32>,
    /// The first port of --sessions (even).
    #[arg(long, value_name = "P", default_value_t = 30000)]
    port_base: u16,
    /// Leg A of session i of --sessions expects its peer at IP:PORT+2i.
    #[arg(long, value_name = "IP:PORT")]
    a_peer_base: Option<SocketAddr>,
    /// Leg B of session i of --sessions expects its peer at IP:PORT+2i.
    #[arg(long, value_name = "IP:PORT")]
    b_peer_base: Option<SocketAddr>,
    /// --sessions use rtcp-mux: RTP and RTCP on one port per leg (in a
    /// --config file, `mux` on a session's line says so).
    #[arg(long)]
    mux: bool,
    /// Read the sessions from FILE (see docs/RTP.md).
    #[arg(long, value_name = "FILE",
          conflicts_with_all = ["sessions", "port_base", "a_peer_base", "b_peer_base", "mux"])]
    config: Option<PathBuf>,
    /// Where `auto` ports of --config come from.
    #[arg(long, value_name = "LOW-HIGH", default_value = "30000-39999", value_parser = parse_range,
          conflicts_with = "sessions")]
    port_range: PortRange,
    /// Reflect media (RTP and RTCP) back to its sender instead of relaying
    /// (and send it RTCP receiver reports of our own).
    #[arg(long)]
    echo: bool,
    /// Relay mode: also send each leg's peer RTCP receiver reports of our
    /// own (our SSRC) about what it sent.
    #[arg(long)]
    rtcp_reports: bool,
    /// Session bandwidth in kbit/s, for the RTCP report interval (5 % of
    /// it is RTCP's).
    #[arg(long, default_value_t = 64, value_name = "KBPS",
          value_parser = clap::value_parser!(u32).range(1..=4_000_000))]
    session_bandwidth: u32,
    /// Packets in a row (in sequence) from one source that latch a leg
    /// onto it.
    #[arg(long, default_value_t = 1, value_name = "N",
          value_parser = clap::value_parser!(u8).range(1..))]
    probation: u8,
    /// Let a leg latch onto a new source once its peer was silent this
    /// many milliseconds (default: never).
    #[arg(long, value_name = "MS")]
    relatch_after: Option<u64>,
    /// DSCP of the media sockets' packets (46: EF, expedited forwarding;
    /// 0: none). Written in the IPv4 TOS byte (DSCP << 2).
    #[arg(long, default_value_t = 46, value_name = "N",
          value_parser = clap::value_parser!(u8).range(0..=63))]
    dscp: u8,
    /// Connect each leg's socket to its peer once it latches: the stack
    /// then refuses other sources itself (so not with --relatch-after).
    #[arg(long, conflicts_with = "relatch_after")]
    connect_on_latch: bool,
    /// RTP clock rate of payload types without a static one (dynamic
    /// types), for jitter.
    #[arg(long, default_value_t = 8000, value_name = "HZ",
          value_parser = clap::value_parser!(u32).range(1..))]
    clock_rate: u32,
}

/// `--ip`: an address with its prefix that an interface can have.
/// An `--ip` for the relay: an IPv4 one must be a unicast host address
/// of its network.
fn relay_ip(s: &str) -> Result<IpArg, String> {
    let ip = app::parse_ip(s)?;
    if let IpArg::V4(cidr) = ip {
        if !cidr.is_host_address() {
            return Err(format!(
                "{cidr} cannot be the relay's address: give a unicast host address of its \
                 network (not the network's or broadcast address), e.g. 10.0.0.1/24"
            ));
        }
    }
    Ok(ip)
}

/// The relay's IPv4 and IPv6 address from the `--ip` list: one of each
/// family at most.
fn relay_addresses(ips: &[IpArg]) -> Result<(Option<Ipv4Cidr>, Option<Ipv6Cidr>), String> {
    let (mut v4, mut v6) = (None, None);
    for ip in ips {
        match *ip {
            IpArg::V4(cidr) => {
                if v4.replace(cidr).is_some() {
                    return Err("--ip: one IPv4 address at most".into());
                }
            }
            IpArg::V6(cidr) => {
                if v6.replace(cidr).is_some() {
                    return Err("--ip: one IPv6 address at most".into());
                }
            }
        }
    }
    Ok((v4, v6))
}

/// An inclusive port range.
#[derive(Debug, Clone, Copy)]
struct PortRange(u16, u16);

fn parse_range(s: &str) -> Result<PortRange, String> {
    let bad = || format!("'{s}' is not a port range like 30000-39999");
    let (low, high) = s.split_once('-').ok_or_else(bad)?;
    let (low, high) = (
        low.parse().map_err(|_| bad())?,
        high.parse().map_err(|_| bad())?,
    );
    if high <= low {
        return Err(bad());
    }
    Ok(PortRange(low, high))
}

/// The sessions the command line asks for.
fn session_specs(cli: &Cli) -> Result<(Vec<SessionSpec>, PortRange), String> {
    if let Some(path) = &cli.config {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let specs = config::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        return Ok((specs, cli.port_range));
    }
    let count = cli.sessions.unwrap_or(1);
    let specs = config::generate(
        count,
        cli.port_base,
        cli.mux,
        [cli.a_peer_base, cli.b_peer_base],
    )
    .map_err(|e| match e {
        SpecError::PortBase(_) => format!("--port-base: {e}"),
        SpecError::PeerBaseBeyond { .. } | SpecError::BadPeer { .. } => {
            format!("--a-peer-base/--b-peer-base: {e}")
        }
        e => e.to_string(),
    })?;
    let last = (u32::from(cli.port_base) + 4 * count - 1) as u16;
    Ok((specs, PortRange(cli.port_base, last)))
}

fn main() -> ExitCode {
    app::run_app::<Cli>(&SPEC, run)
}

/// The main thread's end of the statistics links, one per lane.
struct StatsClients(Vec<StatsClient>);

impl StatsClients {
    /// Every lane's snapshot, merged (`None` if a lane did not answer).
    fn snapshot(&self) -> Option<Snapshot> {
        let mut lanes = self.0.iter();
        let mut merged = lanes.next()?.snapshot()?;
        for lane in lanes {
            merged.merge(&lane.snapshot()?);
        }
        Some(merged)
    }
}

/// The main thread's end of one lane's statistics link.
struct StatsClient {
    requested: Arc<AtomicBool>,
    requests: crossbeam_channel::Sender<Snapshot>,
    replies: crossbeam_channel::Receiver<Snapshot>,
    sessions: usize,
}

impl StatsClient {
    /// Asks the lcore for a snapshot (waits up to 2 s).
    fn snapshot(&self) -> Option<Snapshot> {
        let empty = Snapshot {
            sessions: Vec::with_capacity(self.sessions),
            drops: Default::default(),
        };
        self.requests.try_send(empty).ok()?;
        self.requested.store(true, Ordering::Release);
        self.replies.recv_timeout(Duration::from_secs(2)).ok()
    }
}

fn stats_link(sessions: usize) -> (StatsLink, StatsClient) {
    let requested = Arc::new(AtomicBool::new(false));
    let (requests_tx, requests_rx) = crossbeam_channel::bounded(1);
    let (replies_tx, replies_rx) = crossbeam_channel::bounded(1);
    let link = StatsLink {
        requested: Arc::clone(&requested),
        requests: requests_rx,
        replies: replies_tx,
    };
    let client = StatsClient {
        requested,
        requests: requests_tx,
        replies: replies_rx,
        sessions,
    };
    (link, client)
}

fn run(eal_args: &[String], cli: &Cli) -> Result<(), String> {
    let (specs, range) = session_specs(cli)?;
    let (ip4, ip6) = relay_addresses(&cli.stack.ip)?;
    let signals = app::Signals::install()?;
    let stack = app::set_up(&SPEC, eal_args, &cli.stack, |config| {
        // Without an IPv4 --ip the link keeps 0.0.0.0/0, as it always had.
        if let Some(link) = config.links.first_mut() {
            if link.addresses.is_empty() {
                link.addresses.push(Ipv4Cidr::DEFAULT);
            }
        }
        if ip6.is_some() {
            config.dad_transmits = 0;
        }
    })?;
    let mut iface = stack.iface;
    let more_lanes = stack.more_lanes;
    let options = RelayOptions {
        echo: cli.echo,
        latch: LatchConfig {
            probation: cli.probation,
            relatch_after: cli.relatch_after.map(Duration::from_millis),
        },
        clock_rate: cli.clock_rate,
        dscp: cli.dscp,
        connect_on_latch: cli.connect_on_latch,
        rtcp_reports: cli.rtcp_reports,
        reports: ReportConfig {
            session_bandwidth: cli.session_bandwidth.saturating_mul(1000),
            seed: TscClock::cycles() ^ u64::from(std::process::id()) << 32,
            ..ReportConfig::default()
        },
    };
    let local = LocalAddrs {
        v4: ip4.map(|c| c.addr),
        v6: ip6.map(|c| c.addr),
    };
    let mut relay = Relay::new(options);
    let ports = relay
        .start(&mut iface, local, &specs, range.0..=range.1)
        .map_err(|e| match e {
            StartError::NoAddress { ipv6: true, .. } => {
                format!("{e} (give one with --ip, e.g. --ip 2001:db8::1/64)")
            }
            StartError::NoAddress { ipv6: false, .. } => {
                format!("{e} (give one with --ip, e.g. --ip 10.0.0.1/24)")
            }
            e => e.to_string(),
        })?;
    let sessions = relay.sessions();
    // The sockets are bound once, in the stack's shared table: every lane
    // hears them. Each lane gets its own relay over the same sessions.
    let mut relays = relay.into_lanes(1 + more_lanes.len());
    let mut clients = Vec::new();
    for relay in &mut relays {
        let (link, client) = stats_link(sessions);
        relay.set_stats_link(link);
        clients.push(client);
    }
    let clients = StatsClients(clients);
    let mut lanes = vec![app::Lane {
        iface,
        queues: stack.queues,
    }];
    lanes.extend(more_lanes);
    let counters: Vec<Arc<Counters>> = lanes
        .iter()
        .map(|l| Arc::clone(l.iface.counters()))
        .collect();
    let worker = Running::start(lanes, relays, cli)?;
    let port = stack.ports.first().ok_or("no port")?;
    let info = port.info().map_err(|e| e.to_string())?;
    let addresses: Vec<String> = (ip4.map(|c| c.to_string()).into_iter())
        .chain(ip6.map(|c| c.to_string()))
        .collect();
    println!(
        "{PROGRAM}: port {} ({}, {}) is {}",
        port.id(),
        info.name,
        port.mac(),
        addresses.join(" and ")
    );
    print_sessions(&specs, &ports);
    if counters.len() > 1 {
        println!("{PROGRAM}: polling on {} lcores", counters.len());
    }
    println!(
        "{PROGRAM}: {} {} session(s); pid {} (SIGUSR1 prints the statistics)",
        if cli.echo { "echoing" } else { "relaying" },
        specs.len(),
        std::process::id()
    );
    let names: Vec<String> = specs.into_iter().map(|s| s.name).collect();
    // SIGUSR1 and each period print every session's statistics.
    signals.wait(
        cli.stack.stats_period,
        || false,
        |_: Tick| match clients.snapshot() {
            Some(snapshot) => print!("{}", report::render(&snapshot, &names)),
            None => println!("{PROGRAM}: the lcore did not answer the statistics request"),
        },
    );
    let finished = worker.stop();
    println!("\nSignal {} received, exiting.", signals.received());
    match finished {
        Some(finished) => {
            let mut relays = finished.iter().map(|f| &f.handler.0);
            let mut snapshot = relays.next().map(Relay::snapshot).unwrap_or_default();
            for relay in relays {
                snapshot.merge(&relay.snapshot());
            }
            print!("{}", report::render(&snapshot, &names));
            app::print_lane_counters(&counters);
            if finished.len() > 1 {
                for (n, f) in finished.iter().enumerate() {
                    let news = f.handler.0.news_counters();
                    println!(
                        "{PROGRAM}: lane {n} latch news sent {} taken {} stale {} deferred {}",
                        news.sent, news.taken, news.stale, news.deferred
                    );
                }
            }
            for (n, f) in finished.iter().enumerate() {
                if let Some(line) = &f.cycles {
                    match finished.len() {
                        1 => println!("{PROGRAM}: {line}"),
                        _ => println!("{PROGRAM}: lane {n} {line}"),
                    }
                }
                print!("{}", f.fault_lines());
            }
        }
        None => app::print_lane_counters(&counters),
    }
    Ok(())
}

/// The relay's poll loops: one lane as before (its own entry), or several.
enum Running {
    One(app::Worker<RelayApp>),
    Many(app::Workers<RelayApp>),
}

impl Running {
    /// Starts lane i with `relays[i]`, counting cycles if asked.
    fn start(lanes: Vec<app::Lane>, relays: Vec<Relay>, cli: &Cli) -> Result<Running, String> {
        let record = cli.record_core_cycles;
        if lanes.len() == 1 {
            let (Some(lane), Some(relay)) = (lanes.into_iter().next(), relays.into_iter().next())
            else {
                return Err("no lane".into());
            };
            let app = RelayApp(relay);
            return app::run_on_worker_counting_cycles(
                lane.iface,
                lane.queues,
                app,
                &cli.stack,
                record,
            )
            .map(Running::One);
        }
        let options = *relays.first().ok_or("no lane")?.options();
        let mut relays = relays.into_iter();
        let make = |_lane: usize| RelayApp(relays.next().unwrap_or_else(|| Relay::new(options)));
        app::run_on_workers_counting_cycles(lanes, make, &cli.stack, record).map(Running::Many)
    }

    /// Stops the loops; what each lane had, in lane order.
    fn stop(self) -> Option<Vec<app::Finished<RelayApp>>> {
        match self {
            Running::One(worker) => worker.stop().map(|f| vec![f]),
            Running::Many(workers) => workers.stop(),
        }
    }
}

/// The relay as the lcore's app: its handler, and RTCP BYE (RFC 3550 6.6)
/// from every leg that sent reports when the loop ends.
struct RelayApp(Relay);

impl InlineHandler<Mbuf> for RelayApp {
    const EACH_DATAGRAM: bool = <Relay as InlineHandler<Mbuf>>::EACH_DATAGRAM;

    #[inline(always)]
    fn on_datagram<P: Port<Buf = Mbuf>>(
        &mut self,
        datagram: Datagram<Mbuf>,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        InlineHandler::on_datagram(&mut self.0, datagram, ctx);
    }

    #[inline]
    fn on_datagrams<P: Port<Buf = Mbuf>>(
        &mut self,
        socket: SocketId,
        batch: &mut Batch<Mbuf>,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        InlineHandler::on_datagrams(&mut self.0, socket, batch, ctx);
    }

    #[inline]
    fn on_error<P: Port<Buf = Mbuf>>(
        &mut self,
        socket: SocketId,
        error: PeerError,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        InlineHandler::on_error(&mut self.0, socket, error, ctx);
    }

    #[inline]
    fn on_tcp<P: Port<Buf = Mbuf>>(
        &mut self,
        conn: ConnId,
        event: TcpEvent,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        InlineHandler::on_tcp(&mut self.0, conn, event, ctx);
    }

    #[inline]
    fn on_poll<P: Port<Buf = Mbuf>>(&mut self, ctx: &mut LcoreContext<'_, P>) {
        InlineHandler::on_poll(&mut self.0, ctx);
    }
}

impl App for RelayApp {
    fn finish<P: Port<Buf = Mbuf>>(&mut self, poller: &mut Poller<'_, P>) {
        let now = poller.now();
        self.0.say_bye(poller.iface, poller.ports, now);
    }
}

/// Each session's ports, for a few sessions; a summary for many.
fn print_sessions(specs: &[SessionSpec], ports: &[config::SessionPorts]) {
    const LISTED: usize = 16;
    for (spec, pair) in specs.iter().zip(ports).take(LISTED) {
        let rtcp = |p: u16| {
            if spec.mux {
                "mux".to_owned()
            } else {
                (p + 1).to_string()
            }
        };
        println!(
            "{PROGRAM}: session {} leg A {}/{} leg B {}/{}",
            spec.name,
            pair[0],
            rtcp(pair[0]),
            pair[1],
            rtcp(pair[1])
        );
    }
    if specs.len() > LISTED {
        let rest = specs.iter().zip(ports).skip(LISTED);
        let low = rest.clone().flat_map(|(_, p)| *p).min().unwrap_or(0);
        let high = rest
            .flat_map(|(s, p)| p.map(|port| port.saturating_add(u16::from(!s.mux))))
            .max()
            .unwrap_or(0);
        println!(
            "{PROGRAM}: ... and {} more, on ports {low}-{high}",
            specs.len() - LISTED
        );
    }
}
