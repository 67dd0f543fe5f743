//! `dpstack-rtp-relay`: an RTP/RTCP relay (or echo) for many sessions on
//! one lcore of dpstack.
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

#[path = "../common.rs"]
mod common;

use clap::{ArgGroup, Parser};
use dpstack::clock::TscClock;
use dpstack::cycles::CycleCountingPort;
use dpstack::eal::Eal;
use dpstack::ethdev::{available_ports, EthPort, EthQueue, PortConfig};
use dpstack::fault::{FaultPort, FaultSpec};
use dpstack::mbuf::Mbuf;
use dpstack::media::relay::{
    self as config, report, LocalAddrs, Relay, RelayOptions, ReportConfig, SessionSpec, Snapshot,
    SpecError, StartError, StatsLink,
};
use dpstack::media::LatchConfig;
use dpstack::mempool::PoolConfig;
use dpstack::stack::counters::Counters;
use dpstack::stack::iface::{Interface, InterfaceConfig};
use dpstack::stack::port::Port;
use dpstack::stack::route::{Ipv4Cidr, Ipv6Cidr};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const PROGRAM: &str = "dpstack-rtp-relay";
const DEFAULT_VDEVS: [&str; 1] = ["net_tap0,iface=dpstack3"];

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
                  SIGUSR1 prints every session's statistics."
)]
struct Cli {
    /// Our address and prefix length, IPv4 or IPv6; give it twice for both
    /// (one of each family at most). An IPv6 one serves legs whose peers
    /// are IPv6, at once: no duplicate address detection.
    #[arg(
        long,
        value_name = "ADDR/PREFIX",
        default_value = "192.0.2.1/24",
        value_parser = relay_ip
    )]
    ip: Vec<common::IpArg>,
    /// Default gateway (on the --ip network).
    #[arg(long)]
    gateway: Option<Ipv4Addr>,
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
    /// Print every session's statistics every N seconds.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    stats_period: Option<u64>,
    /// Inject faults into the port, e.g. drop=0.05,seed=7,dir=rx (any of
    /// drop=P,dup=P,reorder=P,delay=Nms|Nus,seed=N,dir=rx|tx|both).
    #[arg(long, value_name = "SPEC")]
    faults: Option<FaultSpec>,
    /// Buffers in the packet pool.
    #[arg(long, default_value_t = 16383, value_name = "N")]
    total_num_mbufs: u32,
    /// Count the lcore's cycles inside the port's rx/tx bursts and print,
    /// at exit, its cycles per received packet split into the driver's and
    /// the rest (two TSC reads per burst call; as testpmd's option).
    #[arg(long)]
    record_core_cycles: bool,
}

/// `--ip`: an address with its prefix that an interface can have.
/// An `--ip` for the relay: an IPv4 one must be a unicast host address
/// of its network.
fn relay_ip(s: &str) -> Result<common::IpArg, String> {
    let ip = common::parse_ip(s)?;
    if let common::IpArg::V4(cidr) = ip {
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
fn relay_addresses(ips: &[common::IpArg]) -> Result<(Option<Ipv4Cidr>, Option<Ipv6Cidr>), String> {
    let (mut v4, mut v6) = (None, None);
    for ip in ips {
        match *ip {
            common::IpArg::V4(cidr) => {
                if v4.replace(cidr).is_some() {
                    return Err("--ip: one IPv4 address at most".into());
                }
            }
            common::IpArg::V6(cidr) => {
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
    common::run_app::<Cli>(PROGRAM, &DEFAULT_VDEVS, 256, run)
}

/// The main thread's end of the statistics link.
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
    let (ip4, ip6) = relay_addresses(&cli.ip)?;
    let signal = common::stop_signal()?;
    let usr1 = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGUSR1, Arc::clone(&usr1))
        .map_err(|e| format!("cannot install a handler for SIGUSR1: {e}"))?;
    let _eal = Eal::init(eal_args).map_err(|e| e.to_string())?;
    let &port_id = available_ports()
        .first()
        .ok_or("no port: add one with --vdev (e.g. --vdev=net_tap0,iface=dpstack3)")?;
    let pool_config = PoolConfig {
        count: cli.total_num_mbufs,
        ..PoolConfig::default()
    };
    let pool = common::packet_pool("rtp_pool", &pool_config, &PortConfig::default(), 1)?;
    let port = EthPort::open(port_id, &PortConfig::default(), pool).map_err(|e| e.to_string())?;
    let queue = port.queue(0, 0).map_err(|e| e.to_string())?;
    let mut config = InterfaceConfig::new(port.mac(), ip4.unwrap_or(Ipv4Cidr::DEFAULT));
    config.gateway = cli.gateway;
    if let Some(ip6) = ip6 {
        config.links[0].addresses6.push(ip6);
        config.dad_transmits = 0;
    }
    let mut iface: Interface<Mbuf> = Interface::new(config).map_err(|e| e.to_string())?;
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
    let (link, client) = stats_link(relay.sessions());
    relay.set_stats_link(link);
    let counters = Arc::clone(iface.counters());
    let stop = Arc::new(AtomicBool::new(false));
    let (done_tx, done_rx) = crossbeam_channel::bounded::<(Relay, String)>(1);
    let faults = cli.faults;
    let record = cli.record_core_cycles;
    let poller = {
        let stop = Arc::clone(&stop);
        move || {
            let outcome = match faults {
                Some(spec) => {
                    let faulty = FaultPort::new(queue, spec);
                    let counts = Arc::clone(faulty.counts());
                    let (relay, cycles) = poll_until_stopped(iface, faulty, &stop, relay, record);
                    let faults = format!("faults on port 0: {}\n", counts.summary());
                    (relay, cycles + &faults)
                }
                None => poll_until_stopped::<EthQueue>(iface, queue, &stop, relay, record),
            };
            let _ = done_tx.send(outcome);
            0
        }
    };
    let handle = common::launch_worker(poller)?;
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
    println!(
        "{PROGRAM}: {} {} session(s); pid {} (SIGUSR1 prints the statistics)",
        if cli.echo { "echoing" } else { "relaying" },
        specs.len(),
        std::process::id()
    );
    let names: Vec<String> = specs.into_iter().map(|s| s.name).collect();
    wait_for_signal(&signal, &usr1, cli.stats_period, &client, &names);
    stop.store(true, Ordering::SeqCst);
    let _ = handle.wait();
    println!(
        "\nSignal {} received, exiting.",
        signal.load(Ordering::SeqCst)
    );
    match done_rx.try_recv() {
        Ok((relay, faults)) => {
            print!("{}", report::render(&relay.snapshot(), &names));
            print_counters(&counters);
            print!("{faults}");
        }
        Err(_) => print_counters(&counters),
    }
    Ok(())
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

/// The lcore loop: one TSC read and one poll per iteration (the read is
/// every packet's receive timestamp). Returns the relay when told to stop,
/// and, with `record_cycles`, a line on where the lcore's cycles went.
fn poll_until_stopped<P: Port<Buf = Mbuf>>(
    iface: Interface<Mbuf>,
    port: P,
    stop: &AtomicBool,
    relay: Relay,
    record_cycles: bool,
) -> (Relay, String) {
    if !record_cycles {
        return (poll_loop(iface, port, stop, relay).0, String::new());
    }
    let clock = TscClock::new();
    let start = TscClock::cycles();
    let (relay, port) = poll_loop(iface, CycleCountingPort::new(port), stop, relay);
    let total = TscClock::cycles().wrapping_sub(start);
    let line = port.counts().summary(total, clock.hz());
    (relay, format!("{PROGRAM}: {line}\n"))
}

/// Polls until told to stop, then says BYE; gives the relay and port back.
fn poll_loop<P: Port<Buf = Mbuf>>(
    mut iface: Interface<Mbuf>,
    mut port: P,
    stop: &AtomicBool,
    mut relay: Relay,
) -> (Relay, P) {
    let clock = TscClock::new();
    while !stop.load(Ordering::Relaxed) {
        iface.poll(&mut port, clock.now(), &mut relay);
    }
    // RTCP BYE (RFC 3550 6.6) from every leg that sent reports.
    relay.say_bye(&mut iface, core::slice::from_mut(&mut port), clock.now());
    (relay, port)
}

/// Waits for SIGINT/SIGTERM, printing the statistics on SIGUSR1 and every
/// `period` seconds.
fn wait_for_signal(
    signal: &AtomicUsize,
    usr1: &AtomicBool,
    period: Option<u64>,
    client: &StatsClient,
    names: &[String],
) {
    let period = period.map(|p| Duration::from_secs(p.max(1)));
    let mut last = Instant::now();
    while signal.load(Ordering::SeqCst) == 0 {
        std::thread::sleep(Duration::from_millis(20));
        let due = period.is_some_and(|p| last.elapsed() >= p);
        if !(usr1.swap(false, Ordering::SeqCst) || due) {
            continue;
        }
        last = Instant::now();
        match client.snapshot() {
            Some(snapshot) => print!("{}", report::render(&snapshot, names)),
            None => println!("{PROGRAM}: the lcore did not answer the statistics request"),
        }
    }
}

fn print_counters(counters: &Counters) {
    println!("counters:");
    for (name, value) in counters.nonzero() {
        println!("  {name:<28} {value}");
    }
}
