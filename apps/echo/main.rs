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
//! Multicast: `--join GROUP` (IPv4 or IPv6, repeatable) binds a socket to
//! the group on each UDP port and joins it on the port its route takes (else
//! the family's first): what is sent to the group is echoed back to its
//! sender from our address, and IGMPv3 (MLDv2) reports the group. The
//! ports' multicast filters follow the groups joined (`MulticastSync`, from
//! the main thread).
//!
//! Several ports: one `--ip` per port, in port order; one polling lcore
//! drives them all with one route table (`--route PREFIX,GATEWAY` adds
//! static routes). Replies leave through the port their request came in on;
//! new packets through the port their route names.
//!
//! Several lcores: `--nb-cores N` polls on N worker lcores (lanes), each
//! with an rx/tx queue pair of its own on every port (RSS over addresses
//! and TCP/UDP ports spreads flows where the device has it; a multi-queue
//! `net_tap`'s kernel spreads them by its own flow hash). Every lane has
//! its own `Echo` handler and counters; the UDP sockets are bound once
//! and shared by all lanes, each lane listens on the TCP ports itself.
//! Lane 0 reports duplicate address detection and serves `--queue-mode`'s
//! application threads; its listeners take the connections that land on
//! other lanes (handed over by TCP steering). The counters at exit
//! and on SIGUSR1 are the lanes' total, then a line per lane.

use clap::Parser;
use dpstack::app::{self, App, AppSpec, CounterReport, MulticastSync, StackArgs};
use dpstack::mbuf::Mbuf;
use dpstack::mempool::PoolPair;
use dpstack::stack::counters::Counters;
use dpstack::stack::iface::{ConnId, InlineHandler, Interface, LcoreContext, LinkConfig, TcpEvent};
use dpstack::stack::port::Port;
use dpstack::stack::route::Ipv6Cidr;
use dpstack::stack::socket::{SocketError, TcpListener, TcpStream, UdpSocket};
use dpstack::stack::udp::{BindOptions, Datagram, GroupLink};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const PROGRAM: &str = "dpstack-echo";
const SPEC: AppSpec = AppSpec::new(PROGRAM, &["net_tap0,iface=dpstack0"])
    .reassembly_buffers(63)
    .many_lanes();

/// A UDP echo server on dpstack.
#[derive(Debug, Parser)]
#[command(
    name = PROGRAM,
    version,
    override_usage = "dpstack-echo [EAL options] -- --ip ADDR/PREFIX [--gateway ADDR] --udp PORT \
                      [--tcp PORT] [--join GROUP] [--nb-cores N]",
    after_help = "Without EAL options it runs on a net_tap port whose kernel side is `dpstack0`:\n  \
                  ip addr add 192.0.2.2/24 dev dpstack0; ping 192.0.2.1; \
                  echo hi | socat - UDP:192.0.2.1:7\n\
                  On N lcores: EAL options with N worker lcores (e.g. -l 0-2, or \
                  --lcores=0@0,1@0,2@1 on two CPUs) and --nb-cores N.",
    mut_arg("ip", |a| a.default_value("192.0.2.1/24"))
)]
struct Cli {
    #[command(flatten)]
    stack: StackArgs,
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
    /// Join multicast GROUP (IPv4 or IPv6, e.g. 239.1.2.3 or ff15::1234)
    /// on the port its route takes (else the family's first port), with a
    /// socket bound to GROUP on each UDP port (inline mode with IPv6
    /// addresses: the `[::]` socket of each port joins it): what is sent
    /// to the group is echoed back to its sender from our address. IGMP
    /// (MLD for IPv6) reports the group. Repeatable.
    #[arg(long = "join", value_name = "GROUP", value_parser = parse_group)]
    joins: Vec<IpAddr>,
    /// Echo from application threads (one per address and port, at most 64) through
    /// queue-mode sockets, instead of inline on the polling lcore (served by
    /// lane 0; UDP only with --nb-cores above 1).
    #[arg(long, conflicts_with = "sink")]
    queue_mode: bool,
    /// Count each polling lcore's cycles inside the port's rx/tx bursts and
    /// print, at exit, its cycles per received packet split into the
    /// driver's and the rest (two TSC reads per burst call; as testpmd's
    /// option).
    #[arg(long)]
    record_core_cycles: bool,
}

fn parse_group(s: &str) -> Result<IpAddr, String> {
    match s.parse::<IpAddr>() {
        Ok(ip) if ip.is_multicast() => Ok(ip),
        _ => Err(format!("'{s}' is not a multicast address")),
    }
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

/// Echoes every datagram back to its sender from its own buffer, or drops
/// it (sink mode); echoes TCP connections' bytes (or reads and drops them).
/// Once no IPv6 address is tentative any more, sends the duplicates found
/// on `dad`.
struct Echo {
    sink: bool,
    scratch: Box<[u8; 16384]>,
    /// `--tcp-close-after`: close a connection once this many of its bytes
    /// were echoed.
    close_after: Option<usize>,
    /// Bytes echoed so far per open connection (only with `close_after`).
    echoed: HashMap<ConnId, usize>,
    dad: Option<crossbeam_channel::Sender<Vec<(usize, Ipv6Cidr)>>>,
}

impl Echo {
    /// Drops a connection's byte count (nothing to do, and no hashing,
    /// without `--tcp-close-after`).
    fn forget(&mut self, conn: ConnId) {
        if self.close_after.is_some() {
            self.echoed.remove(&conn);
        }
    }
}

impl InlineHandler<Mbuf> for Echo {
    /// Each datagram is answered on its own, straight from the receive
    /// path.
    const EACH_DATAGRAM: bool = true;

    /// Inlined into the receive loop: the datagram stays in registers.
    #[inline(always)]
    fn on_datagram<P: Port<Buf = Mbuf>>(
        &mut self,
        datagram: Datagram<Mbuf>,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        if !self.sink {
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
            self.forget(conn);
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
            self.forget(conn);
            ctx.tcp_close(conn);
        }
    }
}

impl App for Echo {
    #[inline]
    fn done(&mut self, iface: &Interface<Mbuf>) -> bool {
        if self.dad.is_some() && !iface.dad_pending() {
            if let Some(done) = self.dad.take() {
                let _ = done.send(iface.duplicates6());
            }
        }
        false
    }
}

fn main() -> ExitCode {
    app::run_app::<Cli>(&SPEC, run)
}

fn run(eal_args: &[String], cli: &Cli) -> Result<(), String> {
    let signals = app::Signals::install()?;
    let stack = app::set_up(&SPEC, eal_args, &cli.stack, |_| {})?;
    let mut multicast = MulticastSync::new(stack.iface.control(), &stack.ports, PROGRAM);
    let (mut iface, pool) = (stack.iface, stack.pool);
    let mut more_lanes = stack.more_lanes;
    let large = stack
        .reassembly_pool
        .ok_or("the echo runs with a reassembly pool")?;
    let per_port = cli.stack.addresses_per_port();
    let addresses6: Vec<Vec<Ipv6Cidr>> = iface
        .config()
        .links
        .iter()
        .map(LinkConfig::all_addresses6)
        .collect();
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
    // `--join`: a socket bound to each group on each port.
    let group_locals: Vec<SocketAddr> = (cli.joins.iter())
        .flat_map(|&group| {
            (cli.udp_ports.iter())
                .flat_map(move |r| (r.0..=r.1).map(move |p| SocketAddr::new(group, p)))
        })
        .collect();
    if cli.queue_mode && locals.len() + group_locals.len() > MAX_QUEUE_MODE_SOCKETS {
        return Err(format!(
            "--queue-mode runs a thread per socket (address and port): \
             give at most {MAX_QUEUE_MODE_SOCKETS}"
        ));
    }
    let send_pools = PoolPair {
        regular: pool,
        large,
    };
    let handle = cli.queue_mode.then(|| iface.handle(send_pools, 1024));
    let mut joined = Vec::new();
    if !cli.queue_mode {
        for &local in &locals {
            let socket = iface
                .udp_bind(local, BindOptions::default())
                .map_err(|e| format!("cannot bind UDP {local}: {e}"))?;
            // The dual-stack `[::]` socket of a port joins the groups
            // itself (it holds the port: a socket bound to a group beside
            // it would be refused, as in Linux without SO_REUSEADDR).
            for &group in cli.joins.iter().filter(|_| dual_stack) {
                let link = iface
                    .udp_join(socket, group, GroupLink::Default)
                    .map_err(|e| format!("cannot join {group}: {e}"))?;
                joined.push((group, link));
            }
        }
        for &local in group_locals.iter().filter(|_| !dual_stack) {
            let socket = iface
                .udp_bind(local, BindOptions::default())
                .map_err(|e| format!("cannot bind UDP {local}: {e}"))?;
            let link = iface
                .udp_join(socket, local.ip(), GroupLink::Default)
                .map_err(|e| format!("cannot join {}: {e}", local.ip()))?;
            joined.push((local.ip(), link));
        }
    }
    // TCP listeners: one dual-stack [::] per port with IPv6, else 0.0.0.0.
    let any: IpAddr = if per_port.iter().any(|(_, v6)| !v6.is_empty()) {
        IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED)
    } else {
        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
    };
    // Listeners are per pipeline: every lane listens.
    if !cli.queue_mode {
        let pipelines =
            std::iter::once(&mut iface).chain(more_lanes.iter_mut().map(|l| &mut l.iface));
        for pipeline in pipelines {
            for &port in &cli.tcp_ports {
                pipeline
                    .tcp_listen(SocketAddr::new(any, port), 1024)
                    .map_err(|e| format!("cannot listen on TCP port {port}: {e}"))?;
            }
        }
    }
    let mut lanes = vec![app::Lane {
        iface,
        queues: stack.queues,
    }];
    lanes.append(&mut more_lanes);
    let counters: Vec<Arc<Counters>> = lanes
        .iter()
        .map(|l| Arc::clone(l.iface.counters()))
        .collect();
    // Lane 0 runs duplicate address detection (a shared timer) and reports it.
    let (dad_tx, dad_rx) = crossbeam_channel::bounded::<Vec<(usize, Ipv6Cidr)>>(1);
    let mut dad_tx = Some(dad_tx);
    let make = |_lane: usize| Echo {
        sink: cli.sink,
        scratch: Box::new([0; 16384]),
        dad: dad_tx.take(),
        close_after: cli.tcp_close_after,
        echoed: HashMap::new(),
    };
    let workers =
        app::run_on_workers_counting_cycles(lanes, make, &cli.stack, cli.record_core_cycles)?;
    // Queue mode: the lcore runs now, so binds through the handle complete.
    let app_stop = Arc::new(AtomicBool::new(false));
    let mut app_threads = Vec::new();
    if let Some(handle) = &handle {
        for &local in &locals {
            let socket = handle
                .udp_bind(local)
                .map_err(|e| format!("cannot bind UDP {local}: {e}"))?;
            let app_stop = Arc::clone(&app_stop);
            app_threads.push(std::thread::spawn(move || {
                echo_from_thread(&socket, &app_stop)
            }));
        }
        for &local in &group_locals {
            let socket = handle
                .udp_bind(local)
                .map_err(|e| format!("cannot bind UDP {local}: {e}"))?;
            let link = socket
                .join(local.ip(), GroupLink::Default)
                .map_err(|e| format!("cannot join {}: {e}", local.ip()))?;
            joined.push((local.ip(), link));
            let app_stop = Arc::clone(&app_stop);
            app_threads.push(std::thread::spawn(move || {
                echo_from_thread(&socket, &app_stop)
            }));
        }
        for &port in &cli.tcp_ports {
            let listener = handle
                .tcp_listen(SocketAddr::new(any, port), 128)
                .map_err(|e| format!("cannot listen on TCP port {port}: {e}"))?;
            let app_stop = Arc::clone(&app_stop);
            let close_after = cli.tcp_close_after;
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
    let bound = locals.len() + if dual_stack { 0 } else { group_locals.len() };
    joined.sort();
    joined.dedup();
    for (group, link) in &joined {
        println!("{PROGRAM}: joined {group} on port {link}");
    }
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
    for (link, port) in stack.ports.iter().enumerate() {
        let info = port.info().map_err(|e| e.to_string())?;
        let v4 = per_port.get(link).map_or(&[][..], |(v4, _)| v4);
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
    if counters.len() > 1 {
        println!(
            "{PROGRAM}: polling on {} lcores, each on its own queue pair of every port",
            counters.len()
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
    let mut report = CounterReport::of_lanes(counters.clone());
    // Every 20 ms: the ports' multicast filters follow the groups joined.
    let done = || {
        multicast.sync();
        false
    };
    signals.wait(cli.stack.stats_period, done, |tick| report.print(tick));
    // Its handle shares the stack's state (the neighbours' queued frames
    // among it), which must go with the interface before the pools are
    // counted.
    drop(multicast);
    app_stop.store(true, Ordering::SeqCst);
    for thread in app_threads {
        let _ = thread.join();
    }
    // The neighbours and fault counts, then the interface goes: the
    // buffers it held (queued for a neighbour, reassembling) are back in
    // the pools before the pools are counted.
    let tail = workers
        .stop()
        .map(|lanes| {
            let home = lanes
                .first()
                .map_or_else(String::new, |l| neighbors(&l.iface));
            home + &cycle_lines(&lanes) + &app::lanes_fault_lines(&lanes)
        })
        .unwrap_or_default();
    println!("\nSignal {} received, exiting.", signals.received());
    app::print_lane_counters(&counters);
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
    print!("{tail}");
    Ok(())
}

/// The neighbour tables, a line per entry.
fn neighbors(iface: &Interface<Mbuf>) -> String {
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

/// `--record-core-cycles`' line of every lane: `dpstack-echo: lcore
/// cycles: ...` with one lane, `dpstack-echo: lane N lcore cycles: ...`
/// with several.
fn cycle_lines(lanes: &[app::Finished<Echo>]) -> String {
    let mut out = String::new();
    for (n, finished) in lanes.iter().enumerate() {
        if let Some(line) = &finished.cycles {
            match lanes.len() {
                1 => out.push_str(&format!("{PROGRAM}: {line}\n")),
                _ => out.push_str(&format!("{PROGRAM}: lane {n} {line}\n")),
            }
        }
    }
    out
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
