//! `dpstack-kernel-rtp`: `dpstack-rtp-relay`'s relay logic on Linux kernel
//! UDP sockets (one per port, epoll, `recvmmsg`), with a G.711-like RTP
//! generator and a sink for leg B's peers: the reference of `scripts/bench
//! rtp-vs-kernel`. Loopback only.
//!
//! ```text
//! dpstack-kernel-rtp relay --sessions 10000 --port-base 4000 --b-peer-base 127.0.0.1:44000 --cpu 1
//! dpstack-kernel-rtp sink --sessions 10000 --base 127.0.0.1:44000 --cpu 0
//! dpstack-kernel-rtp send --sessions 10000 --port-base 4000 --pps 500000 --cpu 0 --seconds 10
//! ```
//!
//! The relay prints its report (docs/RTP.md's format) every
//! `--stats-period` seconds (totals only) and in full at SIGINT/SIGTERM;
//! `send` prints `sent N`, `sink` prints `sink received N rtp M`.

mod generator;
mod logic;
mod relay;
mod report;
mod sink;
mod sockets;
#[cfg(test)]
mod tests;

use clap::{Parser, Subcommand};
use dpstack::media::LatchConfig;
use dpstack_kernel_ref::pin_to_cpu;
use logic::RelayOptions;
use relay::{KernelRelay, RelayConfig};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

const PROGRAM: &str = "dpstack-kernel-rtp";

/// An RTP relay, generator and sink on kernel UDP sockets (loopback).
#[derive(Debug, Parser)]
#[command(name = PROGRAM, version)]
struct Cli {
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Debug, Subcommand)]
enum Mode {
    /// Relay RTP/RTCP between the legs of N sessions on 127.0.0.1.
    #[command(
        after_help = "Session i has leg A on ports P+4i (RTP) and P+4i+1 (RTCP), \
                            leg B on P+4i+2 and P+4i+3, as in dpstack-rtp-relay."
    )]
    Relay {
        /// Sessions.
        #[arg(long, value_name = "N", default_value_t = 1,
              value_parser = clap::value_parser!(u32).range(1..=16383))]
        sessions: u32,
        /// The first port (even).
        #[arg(long, value_name = "P", default_value_t = 30000)]
        port_base: u16,
        /// Leg A of session i expects its peer at IP:PORT+2i.
        #[arg(long, value_name = "IP:PORT")]
        a_peer_base: Option<SocketAddrV4>,
        /// Leg B of session i expects its peer at IP:PORT+2i.
        #[arg(long, value_name = "IP:PORT")]
        b_peer_base: Option<SocketAddrV4>,
        /// Packets in a row from one source that latch a leg onto it.
        #[arg(long, default_value_t = 1, value_name = "N")]
        probation: u8,
        /// Let a leg latch onto a new source once its peer was silent
        /// this many milliseconds (default: never).
        #[arg(long, value_name = "MS")]
        relatch_after: Option<u64>,
        /// DSCP of the relayed packets (46: EF).
        #[arg(long, default_value_t = 46, value_name = "N",
              value_parser = clap::value_parser!(u8).range(0..=63))]
        dscp: u8,
        /// RTP clock rate of dynamic payload types, for jitter.
        #[arg(long, default_value_t = 8000, value_name = "HZ")]
        clock_rate: u32,
        /// CPU to pin to.
        #[arg(long)]
        cpu: Option<usize>,
        /// Print the totals every N seconds.
        #[arg(long, value_name = "N")]
        stats_period: Option<u64>,
        /// Sessions listed one by one in the final report.
        #[arg(long, default_value_t = 16, value_name = "N")]
        list: usize,
    },
    /// Send G.711-like RTP to leg A of N sessions.
    Send {
        /// Sessions.
        #[arg(long, value_name = "N", default_value_t = 10000)]
        sessions: usize,
        /// The relay's first port (session i's leg A RTP: P+4i).
        #[arg(long, value_name = "P", default_value_t = 30000)]
        port_base: u16,
        /// Packets per second over all sessions (0: as fast as possible).
        #[arg(long, default_value_t = 500_000)]
        pps: u64,
        /// How long to send.
        #[arg(long, default_value_t = 10.0)]
        seconds: f64,
        /// Datagrams per sendmmsg.
        #[arg(long, default_value_t = 64)]
        batch: usize,
        /// CPU to pin to.
        #[arg(long)]
        cpu: Option<usize>,
        /// Print `sent N` every N seconds.
        #[arg(long, value_name = "N")]
        stats_period: Option<u64>,
    },
    /// Receive and count what the relay sends to leg B's peers.
    Sink {
        /// Sessions (one port each).
        #[arg(long, value_name = "N", default_value_t = 10000)]
        sessions: usize,
        /// Session i's peer port is PORT+2i (the relay's --b-peer-base).
        #[arg(long, value_name = "IP:PORT")]
        base: SocketAddrV4,
        /// Receive buffer per socket in bytes.
        #[arg(long, value_name = "BYTES")]
        rcvbuf: Option<usize>,
        /// CPU to pin to.
        #[arg(long)]
        cpu: Option<usize>,
        /// Print `sink received N rtp M` every N seconds.
        #[arg(long, value_name = "N")]
        stats_period: Option<u64>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = stop_flag().and_then(|stop| match cli.mode {
        Mode::Relay {
            sessions,
            port_base,
            a_peer_base,
            b_peer_base,
            probation,
            relatch_after,
            dscp,
            clock_rate,
            cpu,
            stats_period,
            list,
        } => {
            let config = RelayConfig {
                sessions: sessions as usize,
                port_base,
                peer_bases: [a_peer_base, b_peer_base],
                dscp,
                options: RelayOptions {
                    latch: LatchConfig {
                        probation,
                        relatch_after: relatch_after.map(Duration::from_millis),
                    },
                    clock_rate,
                },
            };
            run_relay(&config, cpu, stats_period, list, &stop)
        }
        Mode::Send {
            sessions,
            port_base,
            pps,
            seconds,
            batch,
            cpu,
            stats_period,
        } => {
            let config = generator::SendConfig {
                sessions,
                port_base,
                pps,
                duration: Duration::try_from_secs_f64(seconds)
                    .map_err(|e| format!("--seconds {seconds}: {e}"))?,
                batch,
            };
            run_send(&config, cpu, stats_period, &stop)
        }
        Mode::Sink {
            sessions,
            base,
            rcvbuf,
            cpu,
            stats_period,
        } => run_sink(base, sessions, rcvbuf, cpu, stats_period, &stop),
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{PROGRAM}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A flag SIGINT and SIGTERM set.
fn stop_flag() -> Result<Arc<AtomicBool>, String> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .map_err(|e| format!("cannot handle signal {signal}: {e}"))?;
    }
    Ok(stop)
}

fn pin(cpu: Option<usize>) -> Result<(), String> {
    match cpu {
        Some(cpu) => pin_to_cpu(cpu).map_err(|e| format!("cannot pin to CPU {cpu}: {e}")),
        None => Ok(()),
    }
}

fn loopback(addr: Option<SocketAddrV4>) -> Result<(), String> {
    match addr {
        Some(a) if !a.ip().is_loopback() => Err(format!(
            "{a} is not a loopback address: this tool only talks to loopback"
        )),
        _ => Ok(()),
    }
}

fn period(seconds: Option<u64>) -> Option<Duration> {
    seconds.map(|s| Duration::from_secs(s.max(1)))
}

fn run_relay(
    config: &RelayConfig,
    cpu: Option<usize>,
    stats_period: Option<u64>,
    list: usize,
    stop: &AtomicBool,
) -> Result<(), String> {
    config.peer_bases.iter().try_for_each(|b| loopback(*b))?;
    pin(cpu)?;
    let mut relay = KernelRelay::build(config)?;
    let last = u32::from(config.port_base) + 4 * config.sessions as u32 - 1;
    println!(
        "{PROGRAM}: relaying {} session(s) on 127.0.0.1 ports {}-{last}; pid {}",
        config.sessions,
        config.port_base,
        std::process::id()
    );
    relay.run(stop, period(stats_period), |relay| {
        print!(
            "{}",
            report::render(relay.sessions(), &relay.drops, relay.recv_errors, 0)
        );
    })?;
    println!("\n{PROGRAM}: stopped");
    print!(
        "{}",
        report::render(relay.sessions(), &relay.drops, relay.recv_errors, list)
    );
    Ok(())
}

fn run_send(
    config: &generator::SendConfig,
    cpu: Option<usize>,
    stats_period: Option<u64>,
    stop: &AtomicBool,
) -> Result<(), String> {
    pin(cpu)?;
    let socket = UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| format!("cannot bind a source socket: {e}"))?;
    println!(
        "{PROGRAM}: sending to {} session(s) from {}",
        config.sessions,
        socket.local_addr().map_err(|e| e.to_string())?
    );
    let sent = generator::send(config, &socket, stop, period(stats_period), |sent| {
        println!("sent {sent}");
    })?;
    println!("sent {sent}");
    Ok(())
}

fn run_sink(
    base: SocketAddrV4,
    sessions: usize,
    rcvbuf: Option<usize>,
    cpu: Option<usize>,
    stats_period: Option<u64>,
    stop: &AtomicBool,
) -> Result<(), String> {
    loopback(Some(base))?;
    pin(cpu)?;
    let sockets = sink::bind(base, sessions, 2, rcvbuf)?;
    println!(
        "{PROGRAM}: sinking on {} port(s) from {base}; pid {}",
        sockets.len(),
        std::process::id()
    );
    let counts = sink::run(&sockets, stop, period(stats_period), |c| {
        println!("sink received {} rtp {}", c.received, c.rtp);
    })?;
    println!("sink received {} rtp {}", counts.received, counts.rtp);
    Ok(())
}
