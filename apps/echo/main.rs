//! `dpstack-echo`: a UDP echo server on dpstack's IPv4 stack.
//!
//! `dpstack-echo [EAL options] -- --ip ADDR/PREFIX [--gateway ADDR] --udp PORT
//! [--tcp PORT]`. It answers ARP and ping, echoes every TCP connection on its
//! TCP ports (inline, on the lcore), echoes every datagram sent to its UDP ports
//! (inline mode: the reply is built in the received buffer on the polling
//! lcore), and answers closed ports with ICMP port unreachable. Without EAL
//! options it runs on an embedded default: a `net_tap` port whose kernel side
//! is the interface `dpstack0`. SIGINT/SIGTERM print the counters and exit 0;
//! SIGUSR1 prints them and goes on (a block ending `end of counters`). At
//! exit it also prints how many packet buffers were in use at start and at
//! exit (a leak shows as the difference).
//!
//! Several ports: one `--ip` per port, in port order; one polling lcore
//! drives them all with one route table (`--route PREFIX,GATEWAY` adds
//! static routes). Replies leave through the port their request came in on;
//! new packets through the port their route names.

#[path = "../common.rs"]
mod common;
use common::IpArg;

use clap::Parser;
use dpstack::clock::TscClock;
use dpstack::eal::Eal;
use dpstack::ethdev::{available_ports, EthPort, EthQueue, PortConfig};
use dpstack::fault::{FaultPort, FaultSpec};
use dpstack::mbuf::Mbuf;
use dpstack::mempool::{Mempool, PoolConfig, PoolPair};
use dpstack::stack::counters::{Counters, Stat};
use dpstack::stack::iface::{
    Batch, ConnId, InlineHandler, Interface, InterfaceConfig, LcoreContext, LinkConfig, TcpEvent,
};
use dpstack::stack::port::Port;
use dpstack::stack::route::{Ipv4Cidr, Ipv6Cidr};
use dpstack::stack::socket::{SocketError, TcpListener, TcpStream, UdpSocket};
use dpstack::stack::udp::{BindOptions, SocketId};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const PROGRAM: &str = "dpstack-echo";
const DEFAULT_VDEVS: [&str; 1] = ["net_tap0,iface=dpstack0"];

/// A UDP echo server on dpstack.
#[derive(Debug, Parser)]
#[command(
    name = PROGRAM,
    version,
    override_usage = "dpstack-echo [EAL options] -- --ip ADDR/PREFIX [--gateway ADDR] --udp PORT",
    after_help = "Without EAL options it runs on a net_tap port whose kernel side is `dpstack0`:\n  \
                  ip addr add 192.0.2.2/24 dev dpstack0; ping 192.0.2.1; \
                  echo hi | socat - UDP:192.0.2.1:7"
)]
struct Cli {
    /// Our address and prefix length, IPv4 or IPv6; repeat it to use more
    /// ports: the n-th IPv4 --ip goes to port n, and so does the n-th IPv6
    /// one (every port also has an IPv6 link-local address).
    #[arg(long, default_value = "192.0.2.1/24", value_parser = common::parse_ip)]
    ip: Vec<IpArg>,
    /// Default gateway (on the network of one of the --ip prefixes).
    #[arg(long)]
    gateway: Option<Ipv4Addr>,
    /// A static route, PREFIX,GATEWAY, IPv4 or IPv6 (e.g.
    /// 198.51.100.0/24,10.2.0.2 or 2001:db8:99::/48,fe80::1%0); repeatable.
    /// The port is the one whose network holds the gateway; a link-local
    /// IPv6 gateway names its port after `%` (optional with one port).
    #[arg(long = "route", value_parser = parse_route, value_name = "PREFIX,GATEWAY")]
    routes: Vec<Route>,
    /// Do not run IPv6 duplicate address detection: use the addresses at
    /// once (by default each is probed for a second first).
    #[arg(long)]
    no_dad: bool,
    /// Take an IPv6 default route from router advertisements.
    #[arg(long)]
    accept_ra: bool,
    /// Pace TCP data segments at a rate from each connection's congestion
    /// window and round trip (as Linux's internal pacing).
    #[arg(long)]
    pacing: bool,
    /// UDP port or range to echo on, e.g. 7 or 10000-19999 (repeatable).
    #[arg(long = "udp", default_value = "7", value_parser = parse_ports)]
    udp_ports: Vec<PortRange>,
    /// TCP port to echo on too (repeatable): every connection's bytes come
    /// back until the peer closes, then we close.
    #[arg(long = "tcp", value_name = "PORT")]
    tcp_ports: Vec<u16>,
    /// Close each TCP connection first, once BYTES of it have been echoed (as
    /// an HTTP/1.0 server does): our side then holds the connection in
    /// TIME-WAIT, and a client reconnecting on the same port reopens it.
    #[arg(long, value_name = "BYTES", conflicts_with = "sink")]
    tcp_close_after: Option<usize>,
    /// Receive and drop instead of echoing (a sink, for benchmarks).
    #[arg(long)]
    sink: bool,
    /// Echo from application threads (one per address and port, at most 64) through
    /// queue-mode sockets, instead of inline on the polling lcore.
    #[arg(long, conflicts_with = "sink")]
    queue_mode: bool,
    /// The ports' MTU; above 1500 (jumbo frames) the packet buffers grow to
    /// hold a whole frame and TCP's MSS follows.
    #[arg(long, default_value_t = 1500, value_parser = clap::value_parser!(u16).range(1280..))]
    mtu: u16,
    /// Buffers in the packet pool.
    #[arg(long, default_value_t = 8191, value_name = "N")]
    total_num_mbufs: u32,
    /// Inject faults into every port, e.g. drop=0.02,dup=0.01,reorder=0.02,
    /// delay=1ms,seed=7,dir=both (for testing peers against loss).
    #[arg(long, value_name = "SPEC")]
    faults: Option<FaultSpec>,
    /// Print the counters every N seconds.
    #[arg(long, value_name = "N")]
    stats_period: Option<u64>,
}

/// An inclusive range of UDP ports.
#[derive(Debug, Clone, Copy)]
struct PortRange(u16, u16);

fn parse_ports(s: &str) -> Result<PortRange, String> {
    let bad = || format!("'{s}' is not a port or a range like 10000-19999");
    let (low, high) = s.split_once('-').unwrap_or((s, s));
    let low: u16 = low.parse().map_err(|_| bad())?;
    let high: u16 = high.parse().map_err(|_| bad())?;
    if low == 0 || high < low {
        return Err(bad());
    }
    Ok(PortRange(low, high))
}

/// The IPv4 and IPv6 addresses of each port, from the --ip list.
fn addresses_per_port(ips: &[IpArg]) -> Vec<(Vec<Ipv4Cidr>, Vec<Ipv6Cidr>)> {
    let v4: Vec<Ipv4Cidr> = ips
        .iter()
        .filter_map(|c| match c {
            IpArg::V4(a) => Some(*a),
            IpArg::V6(_) => None,
        })
        .collect();
    let v6: Vec<Ipv6Cidr> = ips
        .iter()
        .filter_map(|c| match c {
            IpArg::V6(a) => Some(*a),
            IpArg::V4(_) => None,
        })
        .collect();
    (0..v4.len().max(v6.len()))
        .map(|i| {
            (
                v4.get(i).into_iter().copied().collect(),
                v6.get(i).into_iter().copied().collect(),
            )
        })
        .collect()
}

/// A --route value.
#[derive(Debug, Clone, Copy)]
enum Route {
    V4(Ipv4Cidr, Ipv4Addr),
    /// Prefix, gateway, and the gateway's port if it named one.
    V6(Ipv6Cidr, std::net::Ipv6Addr, Option<usize>),
}

fn parse_route(s: &str) -> Result<Route, String> {
    let (prefix, gateway) = s
        .split_once(',')
        .ok_or_else(|| format!("'{s}' is not PREFIX,GATEWAY (e.g. 198.51.100.0/24,10.2.0.2)"))?;
    let bad = || format!("bad gateway address '{gateway}'");
    if !prefix.contains(':') {
        return Ok(Route::V4(
            prefix.parse()?,
            gateway.parse().map_err(|_| bad())?,
        ));
    }
    let (address, port) = match gateway.split_once('%') {
        Some((address, port)) => (address, Some(port.parse().map_err(|_| bad())?)),
        None => (gateway, None),
    };
    Ok(Route::V6(
        prefix.parse()?,
        address.parse().map_err(|_| bad())?,
        port,
    ))
}

/// Echoes every datagram back to its sender from its own buffer, or drops
/// it (sink mode); echoes TCP connections' bytes (or reads and drops them).
struct Echo {
    sink: bool,
    scratch: Box<[u8; 16384]>,
    /// `--tcp-close-after`: close a connection once this many of its bytes
    /// were echoed.
    close_after: Option<usize>,
    /// Bytes echoed so far per open connection (only with `close_after`).
    echoed: HashMap<ConnId, usize>,
}

impl InlineHandler<Mbuf> for Echo {
    #[inline]
    fn on_datagrams<P: Port<Buf = Mbuf>>(
        &mut self,
        _socket: SocketId,
        batch: &mut Batch<Mbuf>,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        if self.sink {
            return;
        }
        for datagram in batch.drain(..) {
            ctx.reply(datagram);
        }
    }

    fn on_tcp<P: Port<Buf = Mbuf>>(
        &mut self,
        conn: ConnId,
        event: TcpEvent,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        if let TcpEvent::Closed(_) = event {
            self.echoed.remove(&conn);
        }
        if !matches!(event, TcpEvent::Accepted(_) | TcpEvent::Readable) {
            return;
        }
        // Echo as much as the send buffer takes; the rest waits (the
        // receive window closes: backpressure, not unbounded buffering).
        loop {
            let (room, ready) = ctx.tcp_room(conn);
            let n = if self.sink { ready } else { room.min(ready) }.min(self.scratch.len());
            if n == 0 {
                break;
            }
            let Ok(got) = ctx.tcp_recv(conn, &mut self.scratch[..n]) else {
                break;
            };
            if !self.sink && ctx.tcp_send(conn, &self.scratch[..got]).is_err() {
                break;
            }
            if let Some(limit) = self.close_after {
                let echoed = self.echoed.entry(conn).or_insert(0);
                *echoed += got;
                if *echoed >= limit {
                    self.echoed.remove(&conn);
                    ctx.tcp_close(conn);
                    return;
                }
            }
        }
        if ctx.tcp_at_eof(conn) {
            self.echoed.remove(&conn);
            ctx.tcp_close(conn);
        }
    }
}

fn main() -> ExitCode {
    common::run_app::<Cli>(PROGRAM, &DEFAULT_VDEVS, 256, run)
}

fn run(eal_args: &[String], cli: &Cli) -> Result<(), String> {
    let signal = common::stop_signal()?;
    let usr1 = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGUSR1, Arc::clone(&usr1))
        .map_err(|e| format!("cannot install a handler for SIGUSR1: {e}"))?;
    let _eal = Eal::init(eal_args).map_err(|e| e.to_string())?;
    let port_ids = available_ports();
    if port_ids.is_empty() {
        return Err("no port: add one with --vdev (e.g. --vdev=net_tap0,iface=dpstack0)".into());
    }
    let per_port = addresses_per_port(&cli.ip);
    if per_port.len() > port_ids.len() {
        return Err(format!(
            "--ip addresses for {} ports given but EAL found {} port(s): \
             give one IPv4 and/or one IPv6 --ip per port",
            per_port.len(),
            port_ids.len()
        ));
    }
    let pool_config = PoolConfig {
        count: cli.total_num_mbufs,
        ..PoolConfig::default()
    }
    .for_mtu(cli.mtu);
    let port_config = PortConfig {
        mtu: Some(cli.mtu),
        ..PortConfig::default()
    };
    let pool = common::packet_pool("echo_pool", &pool_config, &port_config, per_port.len())?;
    let large =
        Mempool::create("echo_reassembly", &PoolConfig::large(63)).map_err(|e| e.to_string())?;
    let mut eth_ports = Vec::new();
    let mut queues = Vec::new();
    let mut links = Vec::new();
    for (&port_id, (v4, v6)) in port_ids.iter().zip(&per_port) {
        let port = EthPort::open(port_id, &port_config, pool).map_err(|e| e.to_string())?;
        let queue = port
            .queue(0, 0)
            .map_err(|e| e.to_string())?
            .with_large_pool(large);
        links.push(LinkConfig {
            addresses: v4.clone(),
            addresses6: v6.clone(),
            mtu: usize::from(cli.mtu),
            ..LinkConfig::new(port.mac(), Ipv4Cidr::DEFAULT)
        });
        eth_ports.push(port);
        queues.push(queue);
    }
    let mut config = InterfaceConfig::with_links(links);
    config.gateway = cli.gateway;
    if cli.no_dad {
        config.dad_transmits = 0;
    }
    config.accept_ra = cli.accept_ra;
    config.tcp.pacing = cli.pacing;
    let mut iface: Interface<Mbuf> = Interface::new(config).map_err(|e| e.to_string())?;
    let addresses6: Vec<Vec<Ipv6Cidr>> = iface
        .config()
        .links
        .iter()
        .map(LinkConfig::all_addresses6)
        .collect();
    for &route in &cli.routes {
        match route {
            Route::V4(prefix, gateway) => iface
                .add_route(prefix, gateway)
                .map_err(|e| format!("--route {prefix},{gateway}: {e}"))?,
            Route::V6(prefix, gateway, port) => iface
                .add_route6(prefix, gateway, port)
                .map_err(|e| format!("--route {prefix},{gateway}: {e}"))?,
        }
    }
    // Queue mode: a socket per address and port, so a reply sent through
    // the route table comes from the address the request went to, as a
    // client's connected socket expects. Inline mode: with IPv6 addresses,
    // one dual-stack `[::]` socket per port (it hears every address of both
    // families; an inline reply comes from the address the request went
    // to); else a socket per IPv4 address and port.
    let dual_stack = !cli.queue_mode && per_port.iter().any(|(_, v6)| !v6.is_empty());
    let addresses: Vec<IpAddr> = if dual_stack {
        vec![IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED)]
    } else {
        let v4 = per_port
            .iter()
            .flat_map(|(v4, _)| v4.iter().map(|a| IpAddr::V4(a.addr)));
        let v6 = per_port
            .iter()
            .flat_map(|(_, v6)| v6.iter().map(|a| IpAddr::V6(a.addr)));
        v4.chain(v6).collect()
    };
    let locals: Vec<SocketAddr> = addresses
        .iter()
        .flat_map(|&ip| {
            cli.udp_ports
                .iter()
                .flat_map(move |r| (r.0..=r.1).map(move |p| SocketAddr::new(ip, p)))
        })
        .collect();
    if cli.queue_mode && locals.len() > MAX_QUEUE_MODE_SOCKETS {
        return Err(format!(
            "--queue-mode runs a thread per socket (address and port): \
             give at most {MAX_QUEUE_MODE_SOCKETS}"
        ));
    }
    let send_pools = PoolPair {
        regular: pool,
        large,
    };
    let stack = cli.queue_mode.then(|| iface.handle(send_pools, 1024));
    if !cli.queue_mode {
        for &local in &locals {
            iface
                .udp_bind(local, BindOptions::default())
                .map_err(|e| format!("cannot bind UDP {local}: {e}"))?;
        }
    }
    // TCP listeners: one dual-stack [::] per port with IPv6, else 0.0.0.0.
    let any: IpAddr = if per_port.iter().any(|(_, v6)| !v6.is_empty()) {
        IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED)
    } else {
        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
    };
    if !cli.queue_mode {
        for &port in &cli.tcp_ports {
            iface
                .tcp_listen(SocketAddr::new(any, port), 1024)
                .map_err(|e| format!("cannot listen on TCP port {port}: {e}"))?;
        }
    }
    let counters = Arc::clone(iface.counters());
    let stop = Arc::new(AtomicBool::new(false));
    let (done_tx, done_rx) = crossbeam_channel::bounded::<String>(1);
    let (dad_tx, dad_rx) = crossbeam_channel::bounded::<Vec<(usize, Ipv6Cidr)>>(1);
    let sink = cli.sink;
    let close_after = cli.tcp_close_after;
    let faults = cli.faults;
    let poller = {
        let stop = Arc::clone(&stop);
        move || {
            let handler = Echo {
                sink,
                scratch: Box::new([0; 16384]),
                close_after,
                echoed: HashMap::new(),
            };
            let report = match faults {
                Some(spec) => {
                    let faulty: Vec<FaultPort<EthQueue>> = queues
                        .into_iter()
                        .map(|q| FaultPort::new(q, spec))
                        .collect();
                    let counts: Vec<_> = faulty.iter().map(|p| Arc::clone(p.counts())).collect();
                    let mut report = poll_until_stopped(iface, faulty, &stop, handler, dad_tx);
                    for (port, c) in counts.iter().enumerate() {
                        report.push_str(&format!("faults on port {port}: {}\n", c.summary()));
                    }
                    report
                }
                None => poll_until_stopped(iface, queues, &stop, handler, dad_tx),
            };
            let _ = done_tx.send(report);
            0
        }
    };
    let handle = common::launch_worker(poller)?;
    // Queue mode: the lcore runs now, so binds through the handle complete.
    let app_stop = Arc::new(AtomicBool::new(false));
    let mut app_threads = Vec::new();
    if let Some(stack) = &stack {
        for &local in &locals {
            let socket = stack
                .udp_bind(local)
                .map_err(|e| format!("cannot bind UDP {local}: {e}"))?;
            let app_stop = Arc::clone(&app_stop);
            app_threads.push(std::thread::spawn(move || {
                echo_from_thread(&socket, &app_stop)
            }));
        }
        for &port in &cli.tcp_ports {
            let listener = stack
                .tcp_listen(SocketAddr::new(any, port), 128)
                .map_err(|e| format!("cannot listen on TCP port {port}: {e}"))?;
            let app_stop = Arc::clone(&app_stop);
            app_threads.push(std::thread::spawn(move || {
                accept_from_thread(&listener, &app_stop, close_after)
            }));
        }
    }
    // IPv6 addresses are used once duplicate address detection passed.
    match dad_rx.recv_timeout(Duration::from_secs(10)) {
        Ok(duplicates) => {
            for (link, address) in duplicates {
                println!(
                    "{PROGRAM}: warning: {} on port {link} is in use by another node \
                     (duplicate address detection); not using it",
                    address.addr
                );
            }
        }
        Err(_) => return Err("duplicate address detection did not finish".into()),
    }
    let bound = locals.len();
    let udp_ports: Vec<String> = cli
        .udp_ports
        .iter()
        .map(|r| {
            if r.0 == r.1 {
                r.0.to_string()
            } else {
                format!("{}-{}", r.0, r.1)
            }
        })
        .collect();
    for (link, port) in eth_ports.iter().enumerate() {
        let info = port.info().map_err(|e| e.to_string())?;
        let (v4, _) = &per_port[link];
        let addresses: Vec<String> = v4
            .iter()
            .map(ToString::to_string)
            .chain(addresses6[link].iter().map(ToString::to_string))
            .collect();
        println!(
            "{PROGRAM}: port {} ({}, {}) is {}",
            port.id(),
            info.name,
            port.mac(),
            addresses.join(" ")
        );
    }
    if !cli.tcp_ports.is_empty() {
        let ports: Vec<String> = cli.tcp_ports.iter().map(ToString::to_string).collect();
        println!("{PROGRAM}: echoing TCP port(s) {}", ports.join(","));
    }
    println!(
        "{PROGRAM}: {} UDP port(s) {} ({bound} sockets)",
        match (cli.sink, cli.queue_mode) {
            (true, _) => "sinking",
            (false, true) => "echoing from application threads on",
            (false, false) => "echoing",
        },
        udp_ports.join(",")
    );
    // Buffers in use once the ports run (their receive rings filled), to
    // compare with the count at exit: a leak shows as the difference.
    let in_use_at_start = (pool.in_use(), large.in_use());
    wait_for_signal(&signal, &usr1, &counters, cli.stats_period);
    app_stop.store(true, Ordering::SeqCst);
    for thread in app_threads {
        let _ = thread.join();
    }
    stop.store(true, Ordering::SeqCst);
    let _ = handle.wait();
    let sig = signal.load(Ordering::SeqCst);
    println!("\nSignal {sig} received, exiting.");
    print_counters(&counters);
    println!(
        "packet pool: {} in use at start, {} at exit, of {}",
        in_use_at_start.0,
        pool.in_use(),
        pool.size()
    );
    println!(
        "reassembly pool: {} in use at start, {} at exit, of {}",
        in_use_at_start.1,
        large.in_use(),
        large.size()
    );
    if let Ok(neighbors) = done_rx.try_recv() {
        print!("{neighbors}");
    }
    Ok(())
}

/// Most ports `--queue-mode` serves (a thread each).
const MAX_QUEUE_MODE_SOCKETS: usize = 64;

/// Queue mode: receive batches from the socket's queue and send each
/// payload back, until told to stop.
fn echo_from_thread(socket: &UdpSocket<PoolPair>, stop: &AtomicBool) {
    let mut batch = Vec::with_capacity(32);
    while !stop.load(Ordering::Relaxed) {
        match socket.recv_batch(&mut batch, 32, Some(Duration::from_millis(100))) {
            Ok(_) => {
                for datagram in batch.drain(..) {
                    let _ = socket.send_to(datagram.payload(), datagram.src());
                }
            }
            Err(SocketError::TimedOut) => {}
            Err(_) => return,
        }
    }
}

/// Queue mode: accepts connections and echoes each from a thread of its
/// own, until told to stop.
fn accept_from_thread(
    listener: &TcpListener<PoolPair>,
    stop: &Arc<AtomicBool>,
    close_after: Option<usize>,
) {
    let mut connections = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        match listener.accept(Some(Duration::from_millis(100))) {
            Ok((stream, _peer)) => {
                let stop = Arc::clone(stop);
                connections.push(std::thread::spawn(move || {
                    echo_stream(stream, &stop, close_after)
                }));
            }
            Err(SocketError::TimedOut) => {}
            Err(_) => break,
        }
        connections.retain(|c| !c.is_finished());
    }
    for connection in connections {
        let _ = connection.join();
    }
}

/// Echoes one connection's bytes until the peer closes, or until
/// `close_after` bytes were echoed (then our side closes as the stream
/// drops).
fn echo_stream(mut stream: TcpStream<PoolPair>, stop: &AtomicBool, close_after: Option<usize>) {
    let mut buf = vec![0u8; 16384];
    let mut echoed = 0;
    while !stop.load(Ordering::Relaxed) && close_after.is_none_or(|limit| echoed < limit) {
        match stream.read(&mut buf, Some(Duration::from_millis(100))) {
            Ok(0) => return,
            Ok(n) => {
                echoed += n;
                let mut written = 0;
                while written < n && !stop.load(Ordering::Relaxed) {
                    match stream.write(&buf[written..n], Some(Duration::from_millis(100))) {
                        Ok(k) => written += k,
                        Err(SocketError::TimedOut) => {}
                        Err(_) => return,
                    }
                }
            }
            Err(SocketError::TimedOut) => {}
            Err(_) => return,
        }
    }
}

/// The lcore loop: one TSC read and one poll per iteration. Once no IPv6
/// address is tentative any more, the duplicates found are sent on `dad`.
fn poll_until_stopped<P: Port<Buf = Mbuf>>(
    mut iface: Interface<Mbuf>,
    mut queues: Vec<P>,
    stop: &AtomicBool,
    mut handler: Echo,
    dad: crossbeam_channel::Sender<Vec<(usize, Ipv6Cidr)>>,
) -> String {
    let clock = TscClock::new();
    let mut dad = Some(dad);
    while !stop.load(Ordering::Relaxed) {
        iface.poll_ports(&mut queues, clock.now(), &mut handler);
        if dad.is_some() && !iface.dad_pending() {
            if let Some(done) = dad.take() {
                let _ = done.send(iface.duplicates6());
            }
        }
    }
    let mut report = String::new();
    for (link, ip, mac, state) in iface.neighbors() {
        let mac = mac.map_or("(incomplete)".to_owned(), |m| m.to_string());
        report.push_str(&format!("neighbor {ip} at {mac} ({state:?}) link {link}\n"));
    }
    for (link, ip, mac, state) in iface.neighbors6() {
        let mac = mac.map_or("(incomplete)".to_owned(), |m| m.to_string());
        report.push_str(&format!(
            "neighbor6 {ip} at {mac} ({state:?}) link {link}\n"
        ));
    }
    report
}

/// Waits for SIGINT/SIGTERM; prints the counters on SIGUSR1 (for a test or
/// an operator to read them while traffic runs); with a period, prints the
/// counters and the frame rates (`rx-pps: N tx-pps: M`) each period.
fn wait_for_signal(
    signal: &AtomicUsize,
    usr1: &AtomicBool,
    counters: &Counters,
    period: Option<u64>,
) {
    let period = period.map(|p| Duration::from_secs(p.max(1)));
    let mut last = (
        Instant::now(),
        counters.get(Stat::EthInFrames),
        counters.get(Stat::EthOutFrames),
    );
    while signal.load(Ordering::SeqCst) == 0 {
        std::thread::sleep(Duration::from_millis(20));
        if usr1.swap(false, Ordering::SeqCst) {
            print_counters(counters);
            println!("end of counters");
        }
        let Some(period) = period else { continue };
        let now = Instant::now();
        if now.duration_since(last.0) < period {
            continue;
        }
        let (rx, tx) = (
            counters.get(Stat::EthInFrames),
            counters.get(Stat::EthOutFrames),
        );
        let secs = now.duration_since(last.0).as_secs_f64();
        print_counters(counters);
        println!(
            "rx-pps: {:.0} tx-pps: {:.0}",
            (rx - last.1) as f64 / secs,
            (tx - last.2) as f64 / secs
        );
        last = (now, rx, tx);
    }
}

fn print_counters(counters: &Counters) {
    println!("counters:");
    for (name, value) in counters.nonzero() {
        println!("  {name:<28} {value}");
    }
}
