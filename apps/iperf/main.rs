//! `dpstack-iperf`: an iperf3-compatible server and client on dpstack.
//!
//! `dpstack-iperf [EAL options] -- --ip ADDR/PREFIX -s [-p PORT] [-1]` or
//! `... -c HOST [-u] [-b RATE] [-l LEN] [-P N] [-R] [--bidir] [-t SECS]
//! [-n BYTES] [-k BLOCKS] [-O N] [-J]`: the options mean what they mean to
//! iperf3, and a stock `iperf3` is the peer either way (the wire protocol
//! is in `proto.rs`). The test runs inline on the polling lcore: no
//! application threads, no socket queues. Without EAL options it runs on
//! a `net_tap` port whose kernel side is `dpstack2`.

#[path = "../common.rs"]
mod common;

mod client;
mod json;
mod proto;
mod report;
mod server;
mod stream;
mod test;
mod units;

use clap::Parser;
use dpstack::clock::TscClock;
use dpstack::eal::Eal;
use dpstack::ethdev::{available_ports, EthPort, EthQueue, PortConfig};
use dpstack::fault::{FaultPort, FaultSpec};
use dpstack::mbuf::Mbuf;
use dpstack::mempool::{Mempool, PoolConfig};
use dpstack::stack::iface::{InlineHandler, Interface, InterfaceConfig, LinkConfig};
use dpstack::stack::port::Port;
use dpstack::stack::route::Ipv4Cidr;
use dpstack::stack::udp::BindOptions;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const PROGRAM: &str = "dpstack-iperf";
const DEFAULT_VDEVS: [&str; 1] = ["net_tap0,iface=dpstack2"];

/// iperf3 on dpstack.
#[derive(Debug, Parser)]
#[command(
    name = PROGRAM,
    version,
    override_usage = "dpstack-iperf [EAL options] -- --ip ADDR/PREFIX (-s | -c HOST) [options]",
    after_help = "A stock iperf3 is the peer either way, e.g. `iperf3 -c 192.0.2.1` against \
                  `dpstack-iperf -- --ip 192.0.2.1/24 -s`."
)]
struct Cli {
    /// Our address and prefix length (IPv4 or IPv6; repeat for both).
    #[arg(long, required = true, value_name = "ADDR/PREFIX", value_parser = common::parse_ip)]
    ip: Vec<common::IpArg>,
    /// Default gateway (IPv4).
    #[arg(long)]
    gateway: Option<Ipv4Addr>,
    /// Do not run IPv6 duplicate address detection.
    #[arg(long)]
    no_dad: bool,
    /// The port's MTU (see dpstack-echo --mtu).
    #[arg(long, default_value_t = 1500, value_parser = clap::value_parser!(u16).range(1280..))]
    mtu: u16,
    /// Inject faults into the port (see dpstack-echo --faults).
    #[arg(long, value_name = "SPEC")]
    faults: Option<FaultSpec>,
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
    common::run_app::<Cli>(PROGRAM, &DEFAULT_VDEVS, 512, run)
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
    let signal = common::stop_signal()?;
    let _eal = Eal::init(eal_args).map_err(|e| e.to_string())?;
    let Some(&port_id) = available_ports().first() else {
        return Err("no port: add one with --vdev (e.g. --vdev=net_tap0,iface=dpstack2)".into());
    };
    let pool = Mempool::create("iperf_pool", &PoolConfig::default().for_mtu(cli.mtu))
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
    if cli.no_dad {
        config.dad_transmits = 0;
    }
    // Room for iperf3's default 128 KiB blocks in flight.
    config.tcp.send_buffer = config.tcp.send_buffer.max(512 * 1024);
    config.tcp.recv_buffer = config.tcp.recv_buffer.max(512 * 1024);
    let buffers = (config.tcp.send_buffer, config.tcp.recv_buffer);
    let mut iface: Interface<Mbuf> = Interface::new(config).map_err(|e| e.to_string())?;
    let seed = TscClock::cycles();
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    let (report_tx, report_rx) = crossbeam_channel::bounded::<Result<(), String>>(1);
    let job: Box<dyn FnOnce() -> i32 + Send> = if cli.server {
        let any4 = SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), cli.port);
        let any6 = SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), cli.port);
        iface
            .tcp_listen(any6, 128)
            .map_err(|e| format!("cannot listen on TCP port {}: {e}", cli.port))?;
        let v6_only = BindOptions {
            v6_only: true,
            ..BindOptions::default()
        };
        let udp4 = iface
            .udp_bind(any4, BindOptions::default())
            .map_err(|e| format!("cannot bind UDP port {}: {e:?}", cli.port))?;
        let udp6 = iface
            .udp_bind(any6, v6_only)
            .map_err(|e| format!("cannot bind UDP port {}: {e:?}", cli.port))?;
        let mut handler = server::Server::new(cli.port, vec![udp4, udp6], cli.one_off, seed);
        handler.setup_timeout = Duration::from_secs(cli.setup_timeout.max(1));
        let (stop, done) = (Arc::clone(&stop), Arc::clone(&done));
        let faults = cli.faults;
        Box::new(move || {
            let result = match faults {
                Some(spec) => {
                    let port = FaultPort::new(queue, spec);
                    let counts = Arc::clone(port.counts());
                    let result = serve(iface, port, handler, &stop);
                    // On stderr: -J keeps stdout to the JSON document.
                    eprintln!("faults: {}", counts.summary());
                    result
                }
                None => serve(iface, queue, handler, &stop),
            };
            done.store(true, Ordering::SeqCst);
            let _ = report_tx.send(result);
            0
        })
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
                    iface
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
        let handler = client::Client::new(server, params, sockets, cli.json, seed)
            .with_buffers(buffers.0, buffers.1);
        let (stop, done) = (Arc::clone(&stop), Arc::clone(&done));
        let faults = cli.faults;
        Box::new(move || {
            let result = match faults {
                Some(spec) => {
                    let port = FaultPort::new(queue, spec);
                    let counts = Arc::clone(port.counts());
                    let result = run_client(iface, port, handler, &stop);
                    eprintln!("faults: {}", counts.summary());
                    result
                }
                None => run_client(iface, queue, handler, &stop),
            };
            done.store(true, Ordering::SeqCst);
            let _ = report_tx.send(result);
            0
        })
    };
    let handle = common::launch_worker(job)?;
    while !done.load(Ordering::SeqCst) && signal.load(Ordering::SeqCst) == 0 {
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::SeqCst);
    let _ = handle.wait();
    if cli.hold {
        use std::io::Write;
        eprintln!("{PROGRAM}: holding the port open until SIGINT");
        let _ = std::io::stdout().flush();
        while signal.load(Ordering::SeqCst) == 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    match report_rx.try_recv() {
        Ok(result) => result,
        Err(_) if cli.server => Ok(()),
        Err(_) => Err("interrupted".into()),
    }
}

/// Polls for the server until `-1`'s test is over or a signal.
fn serve<P: Port<Buf = Mbuf>>(
    mut iface: Interface<Mbuf>,
    mut port: P,
    mut server: server::Server,
    stop: &AtomicBool,
) -> Result<(), String> {
    let clock = TscClock::new();
    while !stop.load(Ordering::Relaxed) && !server.finished {
        iface.poll(&mut port, clock.now(), &mut server);
    }
    linger(&mut iface, &mut port, &mut server, &clock);
    match server.errors.last() {
        Some(e) if server.finished => Err(format!("the test failed: {e}")),
        _ => Ok(()),
    }
}

/// Polls for the client until its test is over or a signal.
fn run_client<P: Port<Buf = Mbuf>>(
    mut iface: Interface<Mbuf>,
    mut port: P,
    mut client: client::Client,
    stop: &AtomicBool,
) -> Result<(), String> {
    let clock = TscClock::new();
    while iface.dad_pending() && !stop.load(Ordering::Relaxed) {
        iface.poll(
            &mut port,
            clock.now(),
            &mut dpstack::stack::iface::DropDatagrams,
        );
    }
    while !stop.load(Ordering::Relaxed) && client.outcome.is_none() {
        iface.poll(&mut port, clock.now(), &mut client);
    }
    linger(&mut iface, &mut port, &mut client, &clock);
    client
        .outcome
        .take()
        .unwrap_or_else(|| Err("interrupted".into()))
}

/// Polls a little longer so the last closes and ACKs leave.
fn linger<P: Port<Buf = Mbuf>, H: InlineHandler<Mbuf>>(
    iface: &mut Interface<Mbuf>,
    port: &mut P,
    handler: &mut H,
    clock: &TscClock,
) {
    let until = clock.now() + Duration::from_millis(200);
    while clock.now() < until {
        iface.poll(port, clock.now(), handler);
    }
}
