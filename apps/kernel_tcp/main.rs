//! `dpstack-kernel-tcp`: Linux-kernel TCP references for the benchmarks,
//! on loopback, pinned to a CPU: an echo server and a
//! connect/request/response/close (CRR) client, each with a fixed set of
//! threads (no thread per connection).
//!
//! `dpstack-kernel-tcp serve --bind 127.0.0.1:9100 --cpu 1 --threads 8`
//! `dpstack-kernel-tcp crr --target 127.0.0.1:9100 --cpu 0 --connections 8 --seconds 5`
//! `dpstack-kernel-tcp bulk --target 10.98.0.1:9100 --cpu 0 --bytes 200000000`
//! `dpstack-kernel-tcp rr --target 127.0.0.1:9100 --cpu 0 --seconds 5`
//!
//! `rr` is the kernel's side of `scripts/bench tcp-rr`: one connection, one
//! request in flight (blocking `write`/`read`, `TCP_NODELAY`), the round
//! trips' summary line as `dpstack-latency` prints it.
//!
//! Servers bind anywhere (the benchmark runs them in namespaces it creates);
//! clients connect to loopback or, with `--namespaced`, to an address of a
//! namespace the caller made.

#[path = "../latency/histogram.rs"]
mod histogram;
// Its lost-request and sequence-number helpers serve UDP only.
#[allow(dead_code)]
#[path = "../latency/rr.rs"]
mod rr;

use clap::{Parser, Subcommand};
use dpstack_kernel_ref::pin_to_cpu;
use rr::{RrArgs, Run};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Kernel TCP reference programs for the benchmarks.
#[derive(Debug, Parser)]
#[command(name = "dpstack-kernel-tcp", version)]
struct Cli {
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Debug, Subcommand)]
enum Mode {
    /// Echo every connection's bytes until it closes.
    Serve {
        /// Address to serve on (loopback).
        #[arg(long, default_value = "127.0.0.1:9100")]
        bind: SocketAddr,
        /// CPU to pin every thread to.
        #[arg(long)]
        cpu: Option<usize>,
        /// Connections served at once (one thread each, made up front).
        #[arg(long, default_value_t = 8)]
        threads: usize,
    },
    /// Send bytes on one connection while reading their echo; report the
    /// rate one way.
    Bulk {
        /// The echo server.
        #[arg(long)]
        target: SocketAddr,
        /// CPU to pin to.
        #[arg(long)]
        cpu: Option<usize>,
        /// Bytes to send (and read back).
        #[arg(long, default_value_t = 100_000_000)]
        bytes: usize,
        /// The target is in a network namespace the caller created.
        #[arg(long)]
        namespaced: bool,
    },
    /// Connect, send a request, read the echo, close; repeat.
    Crr {
        /// The server (loopback).
        #[arg(long, default_value = "127.0.0.1:9100")]
        target: SocketAddr,
        /// CPU to pin every thread to.
        #[arg(long)]
        cpu: Option<usize>,
        /// Transactions in flight at once (one thread each).
        #[arg(long, default_value_t = 8)]
        connections: usize,
        /// How long to run.
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        /// Bytes per request (and response).
        #[arg(long, default_value_t = 64)]
        request: usize,
    },
    /// Send a request on one connection, read its echo, repeat; print the
    /// round trips' summary line.
    Rr(RrArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.mode {
        Mode::Serve { bind, cpu, threads } => serve(bind, cpu, threads),
        Mode::Crr {
            target,
            cpu,
            connections,
            seconds,
            request,
        } => crr(target, cpu, connections, seconds, request),
        Mode::Bulk {
            target,
            cpu,
            bytes,
            namespaced,
        } => bulk(target, cpu, bytes, namespaced),
        Mode::Rr(args) => request_response(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dpstack-kernel-tcp: {e}");
            ExitCode::FAILURE
        }
    }
}

fn pin(cpu: Option<usize>) {
    if let Some(cpu) = cpu {
        let _ = pin_to_cpu(cpu);
    }
}

fn serve(bind: SocketAddr, cpu: Option<usize>, threads: usize) -> Result<(), String> {
    let listener = Arc::new(TcpListener::bind(bind).map_err(|e| format!("bind {bind}: {e}"))?);
    println!("dpstack-kernel-tcp: serving on {bind}");
    let workers: Vec<_> = (0..threads.max(1))
        .map(|_| {
            let listener = Arc::clone(&listener);
            std::thread::spawn(move || {
                pin(cpu);
                let mut buf = vec![0u8; 65536];
                while let Ok((mut stream, _)) = listener.accept() {
                    let _ = stream.set_nodelay(true);
                    while let Ok(n) = stream.read(&mut buf) {
                        if n == 0 || stream.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                }
            })
        })
        .collect();
    for worker in workers {
        let _ = worker.join();
    }
    Ok(())
}

fn bulk(
    target: SocketAddr,
    cpu: Option<usize>,
    bytes: usize,
    namespaced: bool,
) -> Result<(), String> {
    if !target.ip().is_loopback() && !namespaced {
        return Err("connect to loopback, or pass --namespaced for a namespace you made".into());
    }
    pin(cpu);
    let stream = TcpStream::connect(target).map_err(|e| format!("connect {target}: {e}"))?;
    let mut reader = stream.try_clone().map_err(|e| e.to_string())?;
    let start = Instant::now();
    let writer = {
        let mut stream = stream;
        std::thread::spawn(move || {
            pin(cpu);
            let chunk = vec![0xa5u8; 65536];
            let mut left = bytes;
            while left > 0 {
                let n = left.min(chunk.len());
                if stream.write_all(&chunk[..n]).is_err() {
                    return;
                }
                left -= n;
            }
            let _ = stream.shutdown(Shutdown::Write);
        })
    };
    let mut buf = vec![0u8; 65536];
    let mut got = 0usize;
    while got < bytes {
        match reader.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    let _ = writer.join();
    let secs = start.elapsed().as_secs_f64();
    if got < bytes {
        return Err(format!("only {got} of {bytes} bytes came back"));
    }
    println!(
        "dpstack-kernel-tcp: {bytes} bytes each way in {secs:.2} s: {:.1} Mbit/s",
        bytes as f64 * 8.0 / secs / 1e6
    );
    Ok(())
}

fn crr(
    target: SocketAddr,
    cpu: Option<usize>,
    connections: usize,
    seconds: f64,
    request: usize,
) -> Result<(), String> {
    if !target.ip().is_loopback() {
        return Err("connect to a loopback address only".into());
    }
    let done = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let workers: Vec<_> = (0..connections.max(1))
        .map(|_| {
            let (done, failed, stop) = (Arc::clone(&done), Arc::clone(&failed), Arc::clone(&stop));
            std::thread::spawn(move || {
                pin(cpu);
                let message = vec![0x5au8; request];
                let mut reply = vec![0u8; request];
                while !stop.load(Ordering::Relaxed) {
                    let ok = (|| -> std::io::Result<()> {
                        let mut stream = TcpStream::connect(target)?;
                        stream.set_nodelay(true)?;
                        stream.write_all(&message)?;
                        stream.read_exact(&mut reply)?;
                        stream.shutdown(Shutdown::Both)
                    })();
                    match ok {
                        Ok(()) => done.fetch_add(1, Ordering::Relaxed),
                        Err(_) => failed.fetch_add(1, Ordering::Relaxed),
                    };
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(seconds));
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        let _ = worker.join();
    }
    let secs = start.elapsed().as_secs_f64();
    let transactions = done.load(Ordering::Relaxed);
    println!(
        "dpstack-kernel-tcp: {transactions} transactions in {secs:.2} s: {:.0} transactions/s \
         ({connections} at once), {} failed",
        transactions as f64 / secs,
        failed.load(Ordering::Relaxed)
    );
    Ok(())
}

/// The largest request.
const MAX_RR_SIZE: usize = 65536;

/// How long the connect may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// `rr`: one connection, one request in flight. TCP loses nothing; an echo
/// that takes longer than the timeout fails the run (with what it measured
/// so far printed).
fn request_response(args: &RrArgs) -> Result<(), String> {
    args.check(MAX_RR_SIZE)?;
    if let Some(cpu) = args.cpu {
        pin_to_cpu(cpu).map_err(|e| format!("cannot pin to CPU {cpu}: {e}"))?;
    }
    let target = args.target;
    let mut stream = TcpStream::connect_timeout(&target, CONNECT_TIMEOUT)
        .and_then(|s| {
            s.set_nodelay(true)?;
            s.set_read_timeout(Some(args.timeout()))?;
            s.set_write_timeout(Some(args.timeout()))?;
            Ok(s)
        })
        .map_err(|e| format!("connect {target}: {e}"))?;
    println!(
        "dpstack-kernel-tcp: tcp requests of {} bytes to {target}, {} s warm-up, {} s measured",
        args.size, args.warmup, args.seconds
    );
    let mut run = Run::new(args);
    let mut echo = vec![0u8; args.size];
    let mut failure = None;
    while let Some((_, sent)) = run.next() {
        let exchanged = stream
            .write_all(&run.request)
            .and_then(|()| stream.read_exact(&mut echo));
        match exchanged {
            Ok(()) => run.answered(sent, &echo),
            Err(e) => {
                failure = Some(format!("request/response on {target}: {e}"));
                break;
            }
        }
    }
    let _ = stream.shutdown(Shutdown::Both);
    let verdict = run.finish("tcp");
    match failure {
        Some(e) => Err(e),
        None => verdict,
    }
}
