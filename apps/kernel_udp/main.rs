//! `dpstack-kernel-udp`: a Linux-kernel UDP echo server and load generator
//! with `recvmmsg`/`sendmmsg`, pinned to a CPU: the reference of
//! `scripts/bench udp-vs-kernel`; and a request/response latency client
//! (`rr`: one request in flight, blocking `send`/`recv`), the kernel's side
//! of `scripts/bench udp-latency`, which prints the summary line
//! `dpstack-latency` prints. Traffic goes to loopback only, or with
//! `--namespaced` to an address of a namespace the caller made.
//!
//! `dpstack-kernel-udp echo --bind 127.0.0.1:9000 --cpu 1 --stats-period 1`
//! `dpstack-kernel-udp flood --target 127.0.0.1:9000 --cpu 0 --seconds 10`
//! `dpstack-kernel-udp rr --target 127.0.0.1:9000 --cpu 0 --seconds 5`

#[path = "../latency/histogram.rs"]
mod histogram;
#[path = "../latency/rr.rs"]
mod rr;

use clap::{Parser, Subcommand};
use dpstack_kernel_ref::{pin_to_cpu, recv_batch, send_batch, Batch, MAX_BATCH};
use rr::{RrArgs, Run};
use std::io::ErrorKind;
use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Kernel UDP reference programs for the benchmarks.
#[derive(Debug, Parser)]
#[command(name = "dpstack-kernel-udp", version)]
struct Cli {
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Debug, Subcommand)]
enum Mode {
    /// Echo every datagram back (recvmmsg, then sendmmsg of the batch).
    Echo {
        /// Address to serve on (loopback).
        #[arg(long, default_value = "127.0.0.1:9000")]
        bind: SocketAddrV4,
        /// CPU to pin to.
        #[arg(long)]
        cpu: Option<usize>,
        /// Print `rx-pps: N` every N seconds.
        #[arg(long, default_value_t = 1)]
        stats_period: u64,
        /// The address is in a network namespace the caller created.
        #[arg(long)]
        namespaced: bool,
    },
    /// Send datagrams as fast as possible from several sockets.
    Flood {
        /// Where to send (loopback).
        #[arg(long, default_value = "127.0.0.1:9000")]
        target: SocketAddrV4,
        /// CPU to pin to.
        #[arg(long)]
        cpu: Option<usize>,
        /// Source sockets, used round-robin.
        #[arg(long, default_value_t = 16)]
        sockets: usize,
        /// Payload bytes per datagram (18: 64-byte Ethernet frames).
        #[arg(long, default_value_t = 18)]
        payload: usize,
        /// How long to send.
        #[arg(long, default_value_t = 10)]
        seconds: u64,
    },
    /// Send a request, wait for its echo (or the timeout), repeat; print
    /// the round trips' summary line.
    Rr(RrArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.mode {
        Mode::Echo {
            bind,
            cpu,
            stats_period,
            namespaced,
        } => echo(bind, cpu, stats_period, namespaced),
        Mode::Flood {
            target,
            cpu,
            sockets,
            payload,
            seconds,
        } => flood(target, cpu, sockets, payload, seconds),
        Mode::Rr(args) => request_response(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dpstack-kernel-udp: {e}");
            ExitCode::FAILURE
        }
    }
}

fn loopback_only(addr: SocketAddrV4) -> Result<(), String> {
    if addr.ip().is_loopback() {
        Ok(())
    } else {
        Err(format!(
            "{addr} is not a loopback address: this tool only talks to loopback"
        ))
    }
}

fn echo(
    bind: SocketAddrV4,
    cpu: Option<usize>,
    period: u64,
    namespaced: bool,
) -> Result<(), String> {
    if !namespaced {
        loopback_only(bind)?;
    }
    if let Some(cpu) = cpu {
        pin_to_cpu(cpu).map_err(|e| format!("cannot pin to CPU {cpu}: {e}"))?;
    }
    let socket = UdpSocket::bind(bind).map_err(|e| format!("cannot bind {bind}: {e}"))?;
    let echoed = Arc::new(AtomicU64::new(0));
    {
        let echoed = Arc::clone(&echoed);
        let period = Duration::from_secs(period.max(1));
        std::thread::spawn(move || {
            let mut last = (Instant::now(), 0);
            loop {
                std::thread::sleep(period);
                let count = echoed.load(Ordering::Relaxed);
                let rate = (count - last.1) as f64 / last.0.elapsed().as_secs_f64();
                println!("rx-pps: {rate:.0}");
                last = (Instant::now(), count);
            }
        });
    }
    println!("dpstack-kernel-udp: echoing on {bind}");
    let mut batch = Batch::default();
    let mut count = 0u64;
    loop {
        let n = recv_batch(&socket, &mut batch).map_err(|e| format!("recvmmsg: {e}"))?;
        let mut payloads: [&[u8]; MAX_BATCH] = [&[]; MAX_BATCH];
        let mut peers = [bind; MAX_BATCH];
        for i in 0..n {
            (payloads[i], peers[i]) = batch.get(i);
        }
        let _ = send_batch(&socket, &payloads[..n], &peers[..n]);
        count += n as u64;
        echoed.store(count, Ordering::Relaxed);
    }
}

fn flood(
    target: SocketAddrV4,
    cpu: Option<usize>,
    sockets: usize,
    payload: usize,
    seconds: u64,
) -> Result<(), String> {
    loopback_only(target)?;
    if let Some(cpu) = cpu {
        pin_to_cpu(cpu).map_err(|e| format!("cannot pin to CPU {cpu}: {e}"))?;
    }
    let sources = (0..sockets.max(1))
        .map(|_| UdpSocket::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let data = vec![0x5au8; payload];
    let payloads = [&data[..]; MAX_BATCH];
    let peers = [target; MAX_BATCH];
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut sent = 0u64;
    'outer: loop {
        for source in &sources {
            if Instant::now() >= deadline {
                break 'outer;
            }
            sent += send_batch(source, &payloads, &peers).unwrap_or(0) as u64;
        }
    }
    println!("sent {sent} datagrams");
    Ok(())
}

/// The largest request: one unfragmented datagram at MTU 1500.
const MAX_RR_SIZE: usize = 1472;

/// `rr`: one request in flight over a connected socket. An echo that comes
/// after its request timed out is counted late and skipped; a refused
/// request (ICMP port unreachable) counts as lost.
fn request_response(args: &RrArgs) -> Result<(), String> {
    args.check(MAX_RR_SIZE)?;
    if let Some(cpu) = args.cpu {
        pin_to_cpu(cpu).map_err(|e| format!("cannot pin to CPU {cpu}: {e}"))?;
    }
    let local: SocketAddr = match args.target {
        SocketAddr::V4(_) => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let socket = UdpSocket::bind(local).map_err(|e| format!("cannot bind {local}: {e}"))?;
    let timeout = args.timeout();
    socket
        .connect(args.target)
        .and_then(|()| socket.set_read_timeout(Some(timeout)))
        .map_err(|e| format!("cannot connect to {}: {e}", args.target))?;
    println!(
        "dpstack-kernel-udp: udp requests of {} bytes to {}, {} s warm-up, {} s measured",
        args.size, args.target, args.warmup, args.seconds
    );
    let mut run = Run::new(args);
    // One byte more than a request, so a longer echo shows as a mismatch.
    let mut echo = vec![0u8; args.size + 1];
    while let Some((seq, sent)) = run.next() {
        if let Err(e) = socket.send(&run.request) {
            if e.kind() != ErrorKind::ConnectionRefused {
                return Err(format!("send: {e}"));
            }
        }
        // Each pass either ends the request or skips one late echo; the
        // timeout bounds the passes.
        loop {
            match socket.recv(&mut echo) {
                Ok(n) if rr::seq_of(&echo[..n]) == Some(seq) => {
                    run.answered(sent, &echo[..n]);
                    break;
                }
                Ok(_) => {
                    run.outcomes.late += 1;
                    if sent.elapsed() >= timeout {
                        run.lost(sent);
                        break;
                    }
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::ConnectionRefused
                    ) =>
                {
                    run.lost(sent);
                    if e.kind() == ErrorKind::ConnectionRefused {
                        // Nothing listens: do not spin.
                        std::thread::sleep(timeout);
                    }
                    break;
                }
                Err(e) => return Err(format!("recv: {e}")),
            }
        }
    }
    run.finish("udp")
}
