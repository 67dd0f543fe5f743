//! `dpstack-latency`: a request/response latency client on dpstack, one
//! request in flight, for `scripts/bench udp-latency` and `tcp-rr`.
//!
//! `dpstack-latency [EAL options] -- --ip ADDR/PREFIX (--udp HOST:PORT |
//! --tcp HOST:PORT) [--size BYTES] [--seconds S] [--warmup S] [--timeout MS]`
//! sends a request of `--size` bytes to an echo server, waits for its echo,
//! checks that the echo is the request byte for byte, records the round
//! trip, and sends the next, for `--warmup` seconds (not recorded) and
//! then `--seconds` seconds. It prints one summary line (microseconds):
//!
//! `latency udp samples=N lost=L late=K mismatched=M min_us=.. p50_us=..
//! p90_us=.. p99_us=.. p999_us=.. max_us=.. mean_us=..`
//!
//! then the counters. A UDP request whose echo has not come back within
//! `--timeout` milliseconds is counted lost and the next one goes out; an
//! echo that comes back after that is counted late and not measured (each
//! request carries its sequence number in its first 8 bytes). Over TCP the
//! stack retransmits, so nothing is lost; a connection that fails ends the
//! run. Exits 0 if at least one round trip was measured and no echo
//! differed from its request and the connection (TCP) held to the end
//! (lost requests alone do not fail the run: the summary reports them),
//! else 1.
//!
//! Everything runs inline on one polling lcore. The round trip is read
//! from the TSC just before the request is handed to the stack and just
//! after its echo comes out of it, so it includes our own transmit and
//! receive paths at both ends. Per request: two TSC reads, one histogram
//! increment, no allocation and no logging.

#[path = "histogram.rs"]
mod histogram;

use clap::Parser;
use dpstack::app::{self, App, AppSpec, CounterReport, Poller, StackArgs};
use dpstack::clock::TscClock;
use dpstack::mbuf::Mbuf;
use dpstack::stack::iface::{Batch, ConnId, InlineHandler, Interface, LcoreContext, TcpEvent};
use dpstack::stack::port::Port;
use dpstack::stack::time::Instant;
use dpstack::stack::udp::{BindOptions, SocketId};
use histogram::{Histogram, Outcomes};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

const PROGRAM: &str = "dpstack-latency";
const SPEC: AppSpec = AppSpec::new(PROGRAM, &["net_tap0,iface=dpstack2"]);

/// Bytes of the sequence number at the start of every request.
const SEQ_BYTES: usize = 8;

/// The largest UDP request over IPv4: one unfragmented datagram at MTU
/// 1500 (IPv6's header is 20 bytes longer).
const MAX_UDP_SIZE: usize = 1472;

/// The largest TCP request.
const MAX_TCP_SIZE: usize = 65536;

/// The longest `--seconds` or `--warmup` (a day).
const MAX_SECONDS: f64 = 86_400.0;

/// A request/response latency client on dpstack.
#[derive(Debug, Parser)]
#[command(
    name = PROGRAM,
    version,
    override_usage = "dpstack-latency [EAL options] -- --ip ADDR/PREFIX (--udp HOST:PORT | \
                      --tcp HOST:PORT) [--size BYTES] [--seconds S] [--warmup S] [--timeout MS]",
    mut_arg("ip", |a| a.required(true))
)]
struct Cli {
    #[command(flatten)]
    stack: StackArgs,
    /// The UDP echo server.
    #[arg(
        long,
        value_name = "HOST:PORT",
        conflicts_with = "tcp",
        required_unless_present = "tcp"
    )]
    udp: Option<SocketAddr>,
    /// The TCP echo server (one connection, requests one after the other).
    #[arg(long, value_name = "HOST:PORT")]
    tcp: Option<SocketAddr>,
    /// Bytes of each request (and of its echo): 8 to 1472 over UDP (1452
    /// over IPv6), 8 to 65536 over TCP.
    #[arg(long, default_value_t = 64)]
    size: usize,
    /// Seconds of measured requests (after the warm-up).
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Seconds of requests before the measured ones (neighbour resolution,
    /// the connection, warm caches), not recorded.
    #[arg(long, default_value_t = 0.5)]
    warmup: f64,
    /// Milliseconds a UDP request waits for its echo before it is counted
    /// lost and the next one goes out.
    #[arg(long, value_name = "MS", default_value_t = 100)]
    timeout: u64,
    /// After the run, keep the port open (no longer polled) until SIGINT or
    /// SIGTERM, so a memif peer can stop first: DPDK 22.11's memif PMD can
    /// crash a process that is still polling while its peer disconnects.
    #[arg(long)]
    hold: bool,
}

/// The transport the requests go over.
enum Transport {
    /// A UDP socket (connected to the server).
    Udp(SocketId),
    /// A TCP connection: none until it is opened, then not ready until it
    /// is established.
    Tcp { conn: Option<ConnId>, ready: bool },
}

/// The request in flight.
#[derive(Clone, Copy)]
struct InFlight {
    /// Its sequence number.
    seq: u64,
    /// When it was handed to the stack (the TSC clock's nanoseconds).
    sent_nanos: u64,
    /// When it was sent (the poll's time): it counts if this is past the
    /// warm-up.
    sent_at: Instant,
    /// Bytes of it handed to TCP so far (its whole size for UDP).
    sent_bytes: usize,
    /// Bytes of its echo received so far (TCP).
    received: usize,
    /// Whether UDP refused to send it (no route, buffer or neighbour): it
    /// then waits out the timeout and is counted `unsent`, not lost.
    unsent: bool,
}

/// The lcore's side: one request at a time, the histogram, the outcomes.
struct Latency {
    transport: Transport,
    remote: SocketAddr,
    /// The request: its sequence number, then a fixed pattern.
    request: Vec<u8>,
    /// The echo being received (TCP).
    echo: Vec<u8>,
    in_flight: Option<InFlight>,
    next_seq: u64,
    clock: TscClock,
    timeout: Duration,
    warmup: Duration,
    seconds: Duration,
    /// The end of the warm-up (set in `start`).
    measure_from: Instant,
    /// The end of the run (set in `start`).
    end_at: Instant,
    histogram: Histogram,
    outcomes: Outcomes,
    /// Sends UDP refused (past the warm-up).
    unsent: u64,
    /// Set when the run is over: time up, or the connection failed.
    over: bool,
    /// Why the run could not go on, if it could not.
    error: Option<String>,
}

impl Latency {
    fn new(cli: &Cli, transport: Transport, remote: SocketAddr) -> Latency {
        let mut request: Vec<u8> = (0..cli.size).map(|i| (i * 7 + 11) as u8).collect();
        request[..SEQ_BYTES].fill(0);
        Latency {
            transport,
            remote,
            echo: vec![0; cli.size],
            request,
            in_flight: None,
            next_seq: 1,
            clock: TscClock::new(),
            timeout: Duration::from_millis(cli.timeout.max(1)),
            warmup: Duration::from_secs_f64(cli.warmup),
            seconds: Duration::from_secs_f64(cli.seconds),
            measure_from: Instant::ZERO,
            end_at: Instant::ZERO,
            histogram: Histogram::new(),
            outcomes: Outcomes::default(),
            unsent: 0,
            over: false,
            error: None,
        }
    }

    /// Whether a request sent at `sent_at` is measured.
    #[inline]
    fn measured(&self, sent_at: Instant) -> bool {
        sent_at >= self.measure_from
    }

    /// The echo of the request in flight is complete in `echo` (or was
    /// a datagram): compare, record, clear.
    #[inline]
    fn complete(&mut self, flight: InFlight, echo_matches: bool) {
        let now = self.clock.now().as_nanos();
        self.in_flight = None;
        if !self.measured(flight.sent_at) {
            return;
        }
        if echo_matches {
            self.histogram.record(now.saturating_sub(flight.sent_nanos));
        } else {
            self.outcomes.mismatched += 1;
        }
    }

    /// Starts the next request: stamps its sequence number and time.
    #[inline]
    fn begin(&mut self, now: Instant) -> InFlight {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.request[..SEQ_BYTES].copy_from_slice(&seq.to_be_bytes());
        InFlight {
            seq,
            sent_nanos: self.clock.now().as_nanos(),
            sent_at: now,
            sent_bytes: 0,
            received: 0,
            unsent: false,
        }
    }

    /// Sends what the request in flight still has to send over TCP.
    #[inline]
    fn push_tcp<P: Port<Buf = Mbuf>>(&mut self, conn: ConnId, ctx: &mut LcoreContext<'_, P>) {
        let Some(flight) = self.in_flight.as_mut() else {
            return;
        };
        while flight.sent_bytes < self.request.len() {
            match ctx.tcp_send(conn, &self.request[flight.sent_bytes..]) {
                Ok(0) | Err(_) => break,
                Ok(n) => flight.sent_bytes += n,
            }
        }
    }

    /// Reads the echo of the request in flight from TCP.
    #[inline]
    fn pull_tcp<P: Port<Buf = Mbuf>>(&mut self, conn: ConnId, ctx: &mut LcoreContext<'_, P>) {
        while let Some(mut flight) = self.in_flight {
            if flight.received == self.echo.len() {
                break;
            }
            let n = ctx
                .tcp_recv(conn, &mut self.echo[flight.received..])
                .unwrap_or(0);
            if n == 0 {
                self.in_flight = Some(flight);
                return;
            }
            flight.received += n;
            self.in_flight = Some(flight);
            if flight.received == self.echo.len() {
                let matches = self.echo == self.request;
                self.complete(flight, matches);
            }
        }
    }
}

impl InlineHandler<Mbuf> for Latency {
    #[inline]
    fn on_datagrams<P: Port<Buf = Mbuf>>(
        &mut self,
        _socket: SocketId,
        batch: &mut Batch<Mbuf>,
        _ctx: &mut LcoreContext<'_, P>,
    ) {
        for datagram in batch.drain(..) {
            let payload = datagram.payload();
            let seq = (payload.get(..SEQ_BYTES))
                .and_then(|b| b.try_into().ok())
                .map(u64::from_be_bytes);
            match self.in_flight {
                Some(flight) if seq == Some(flight.seq) => {
                    let matches = payload == self.request.as_slice();
                    self.complete(flight, matches);
                }
                // An echo of a request already counted lost, or not ours.
                _ => self.outcomes.late += 1,
            }
        }
    }

    fn on_tcp<P: Port<Buf = Mbuf>>(
        &mut self,
        conn: ConnId,
        event: TcpEvent,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        let Transport::Tcp { conn: ours, ready } = &mut self.transport else {
            return;
        };
        if *ours != Some(conn) {
            return;
        }
        match event {
            TcpEvent::Connected => *ready = true,
            TcpEvent::Readable => {
                self.pull_tcp(conn, ctx);
                self.push_tcp(conn, ctx);
            }
            TcpEvent::Closed(error) => {
                *ours = None;
                *ready = false;
                if !self.over {
                    self.over = true;
                    self.error = Some(match error {
                        Some(e) => format!("the connection failed: {e}"),
                        None => "the server closed the connection".into(),
                    });
                }
            }
            TcpEvent::Accepted(_) => {}
        }
    }

    /// Times out the request in flight, or sends the next one.
    #[inline]
    fn on_poll<P: Port<Buf = Mbuf>>(&mut self, ctx: &mut LcoreContext<'_, P>) {
        let now = ctx.now();
        if self.over {
            return;
        }
        if now >= self.end_at {
            self.over = true;
            if let Transport::Tcp {
                conn: Some(conn), ..
            } = self.transport
            {
                ctx.tcp_close(conn);
            }
            return;
        }
        if let Some(flight) = self.in_flight {
            if let Transport::Tcp { conn, .. } = self.transport {
                // Whatever of a large request did not fit the send buffer.
                if let Some(conn) = conn.filter(|_| flight.sent_bytes < self.request.len()) {
                    self.push_tcp(conn, ctx);
                }
                return;
            }
            if now < flight.sent_at + self.timeout {
                return;
            }
            self.in_flight = None;
            if self.measured(flight.sent_at) {
                if flight.unsent {
                    self.unsent += 1;
                } else {
                    self.outcomes.lost += 1;
                }
            }
        }
        match self.transport {
            Transport::Udp(socket) => {
                let mut flight = self.begin(now);
                flight.sent_bytes = self.request.len();
                flight.unsent = ctx.send_to(socket, self.remote, &self.request).is_err();
                self.in_flight = Some(flight);
            }
            Transport::Tcp {
                conn: Some(conn),
                ready: true,
            } => {
                self.in_flight = Some(self.begin(now));
                self.push_tcp(conn, ctx);
            }
            Transport::Tcp { .. } => {}
        }
    }
}

/// The lcore's run: wait for duplicate address detection, open the
/// connection (TCP), time the run, poll until it is over (closing the
/// connection then), let the close finish.
impl App for Latency {
    fn start<P: Port<Buf = Mbuf>>(&mut self, poller: &mut Poller<'_, P>) {
        poller.poll_while(self, |iface, _| iface.dad_pending());
        let now = poller.now();
        self.measure_from = now + self.warmup;
        self.end_at = self.measure_from + self.seconds;
        if let Transport::Tcp { conn, .. } = &mut self.transport {
            match (poller.iface).tcp_connect(&mut *poller.ports, now, self.remote) {
                Ok(id) => *conn = Some(id),
                Err(e) => {
                    self.error = Some(format!("cannot connect to {}: {e}", self.remote));
                    self.over = true;
                }
            }
        }
    }

    #[inline]
    fn done(&mut self, _iface: &Interface<Mbuf>) -> bool {
        self.over
    }

    /// Lets the close (TCP, sent when the time was up) leave and be
    /// answered.
    fn finish<P: Port<Buf = Mbuf>>(&mut self, poller: &mut Poller<'_, P>) {
        if let Transport::Tcp { conn: Some(_), .. } = self.transport {
            poller.linger(self, Duration::from_millis(200));
        }
    }
}

fn main() -> ExitCode {
    app::run_app::<Cli>(&SPEC, run)
}

fn run(eal_args: &[String], cli: &Cli) -> Result<(), String> {
    let (proto, remote, max) = match (cli.udp, cli.tcp) {
        (Some(udp), _) => ("udp", udp, MAX_UDP_SIZE - 20 * usize::from(udp.is_ipv6())),
        (None, Some(tcp)) => ("tcp", tcp, MAX_TCP_SIZE),
        (None, None) => return Err("give --udp HOST:PORT or --tcp HOST:PORT".into()),
    };
    for (option, seconds) in [("--seconds", cli.seconds), ("--warmup", cli.warmup)] {
        if !(0.0..=MAX_SECONDS).contains(&seconds) {
            return Err(format!("{option} {seconds}: give 0 to {MAX_SECONDS}"));
        }
    }
    if !(SEQ_BYTES..=max).contains(&cli.size) {
        return Err(format!(
            "--size {} over {proto}: give {SEQ_BYTES} to {max}",
            cli.size
        ));
    }
    let signals = app::Signals::install()?;
    let mut stack = app::set_up(&SPEC, eal_args, &cli.stack, |config| {
        config.tcp.nodelay = true;
    })?;
    let port = stack.ports.first().ok_or("no port")?;
    println!("{}", app::port_banner(PROGRAM, port, &cli.stack));
    let transport = if proto == "udp" {
        let any = SocketAddr::new(
            match remote {
                SocketAddr::V4(_) => std::net::Ipv4Addr::UNSPECIFIED.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::UNSPECIFIED.into(),
            },
            0,
        );
        let socket = (stack.iface.udp_bind(any, BindOptions::default()))
            .map_err(|e| format!("cannot bind {any}: {e}"))?;
        if !stack.iface.udp_connect(socket, remote) {
            return Err(format!("cannot connect the UDP socket to {remote}"));
        }
        Transport::Udp(socket)
    } else {
        Transport::Tcp {
            conn: None,
            ready: false,
        }
    };
    let client = Latency::new(cli, transport, remote);
    let mut report = CounterReport::new(stack.iface.counters().clone());
    let worker = app::run_on_worker(stack.iface, stack.queues, client, &cli.stack)?;
    println!(
        "{PROGRAM}: {proto} requests of {} bytes to {remote}, {} s warm-up, {} s measured",
        cli.size, cli.warmup, cli.seconds
    );
    // The run ends itself; this bound only catches a stuck start.
    let bound = Duration::from_secs_f64(cli.warmup + cli.seconds + 30.0);
    let deadline = std::time::Instant::now() + bound;
    signals.wait(
        cli.stack.stats_period,
        || worker.ended() || std::time::Instant::now() >= deadline,
        |tick| report.print(tick),
    );
    let finished = worker.stop().ok_or("the polling lcore panicked")?;
    let client = &finished.handler;
    println!(
        "{}",
        histogram::summary_line(proto, &client.histogram, client.outcomes)
    );
    if client.unsent > 0 {
        println!(
            "{PROGRAM}: {} request(s) the stack could not send",
            client.unsent
        );
    }
    app::print_counters(finished.iface.counters());
    if cli.hold {
        use std::io::Write;
        println!("{PROGRAM}: holding the port open until SIGINT");
        let _ = std::io::stdout().flush();
        while signals.received() == 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    if let Some(error) = &client.error {
        return Err(error.clone());
    }
    histogram::verdict(&client.histogram, client.outcomes)
}
