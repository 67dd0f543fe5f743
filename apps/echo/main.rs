//! `dpstack-echo`: a UDP echo server on dpstack's IPv4 stack.
//!
//! `dpstack-echo [EAL options] -- --ip ADDR/PREFIX [--gateway ADDR] --udp PORT`.
//! It answers ARP and ping, echoes every datagram sent to its UDP ports
//! (inline mode: the reply is built in the received buffer on the polling
//! lcore), and answers closed ports with ICMP port unreachable. Without EAL
//! options it runs on an embedded default: a `net_tap` port whose kernel side
//! is the interface `dpstack0`. SIGINT/SIGTERM print the counters and exit 0.

#[path = "../common.rs"]
mod common;

use clap::Parser;
use dpstack::clock::TscClock;
use dpstack::eal::Eal;
use dpstack::ethdev::{available_ports, EthPort, EthQueue, PortConfig};
use dpstack::lcore::{launch, Lcore};
use dpstack::mbuf::Mbuf;
use dpstack::mempool::{Mempool, PoolConfig};
use dpstack::stack::counters::Counters;
use dpstack::stack::iface::{Batch, Interface, InterfaceConfig, UdpContext, UdpHandler};
use dpstack::stack::port::Port;
use dpstack::stack::route::Ipv4Cidr;
use dpstack::stack::udp::{BindOptions, SocketId};
use std::net::{Ipv4Addr, SocketAddrV4};
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
    /// Our address and prefix length.
    #[arg(long, default_value = "192.0.2.1/24")]
    ip: Ipv4Cidr,
    /// Default gateway.
    #[arg(long)]
    gateway: Option<Ipv4Addr>,
    /// UDP port to echo on (repeatable).
    #[arg(long = "udp", default_value = "7")]
    udp_ports: Vec<u16>,
    /// Print the counters every N seconds.
    #[arg(long, value_name = "N")]
    stats_period: Option<u64>,
}

/// Echoes every datagram back to its sender, from its own buffer.
struct Echo;

impl UdpHandler<Mbuf> for Echo {
    fn on_datagrams<P: Port<Buf = Mbuf>>(
        &mut self,
        _socket: SocketId,
        batch: &mut Batch<Mbuf>,
        ctx: &mut UdpContext<'_, P>,
    ) {
        for datagram in batch.drain(..) {
            ctx.reply(datagram);
        }
    }
}

fn main() -> ExitCode {
    common::run_app::<Cli>(PROGRAM, &DEFAULT_VDEVS, 256, run)
}

fn run(eal_args: &[String], cli: &Cli) -> Result<(), String> {
    let signal = common::stop_signal()?;
    let _eal = Eal::init(eal_args).map_err(|e| e.to_string())?;
    let port_id = *available_ports()
        .first()
        .ok_or("no port: add one with --vdev (e.g. --vdev=net_tap0,iface=dpstack0)")?;
    let pool = Mempool::create("echo_pool", &PoolConfig::default()).map_err(|e| e.to_string())?;
    let port = EthPort::open(port_id, &PortConfig::default(), pool).map_err(|e| e.to_string())?;
    let large =
        Mempool::create("echo_reassembly", &PoolConfig::large(63)).map_err(|e| e.to_string())?;
    let queue = port
        .queue(0, 0)
        .map_err(|e| e.to_string())?
        .with_large_pool(large);

    let mut config = InterfaceConfig::new(port.mac(), cli.ip);
    config.gateway = cli.gateway;
    config.hash_key = TscClock::cycles().wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut iface: Interface<Mbuf> = Interface::new(config);
    for &udp_port in &cli.udp_ports {
        iface
            .udp_bind(
                SocketAddrV4::new(cli.ip.addr, udp_port),
                BindOptions::default(),
            )
            .map_err(|e| format!("cannot bind UDP port {udp_port}: {e}"))?;
    }
    let counters = Arc::clone(iface.counters());
    let stop = Arc::new(AtomicBool::new(false));
    let (done_tx, done_rx) = crossbeam_channel::bounded::<String>(1);
    let poller = {
        let stop = Arc::clone(&stop);
        move || {
            let report = poll_until_stopped(iface, queue, &stop);
            let _ = done_tx.send(report);
            0
        }
    };
    let handle = match Lcore::workers().first() {
        Some(&lcore) => launch(lcore, poller).map_err(|e| e.to_string())?,
        None => {
            return Err(
                "no worker lcore: give EAL two lcores (e.g. -l 0-1, or --lcores=0@0,1@0)".into(),
            )
        }
    };
    let info = port.info().map_err(|e| e.to_string())?;
    println!(
        "{PROGRAM}: port {port_id} ({}, {}) is {} ; echoing UDP port(s) {:?}",
        info.name,
        port.mac(),
        cli.ip,
        cli.udp_ports
    );
    wait_for_signal(&signal, &counters, cli.stats_period);
    stop.store(true, Ordering::SeqCst);
    let _ = handle.wait();
    let sig = signal.load(Ordering::SeqCst);
    println!("\nSignal {sig} received, exiting.");
    print_counters(&counters);
    if let Ok(neighbors) = done_rx.try_recv() {
        print!("{neighbors}");
    }
    Ok(())
}

/// The lcore loop: one TSC read and one poll per iteration.
fn poll_until_stopped(
    mut iface: Interface<Mbuf>,
    mut queue: EthQueue,
    stop: &AtomicBool,
) -> String {
    let clock = TscClock::new();
    while !stop.load(Ordering::Relaxed) {
        iface.poll(&mut queue, clock.now(), &mut Echo);
    }
    let mut report = String::new();
    for (ip, mac, state) in iface.neighbors() {
        let mac = mac.map_or("(incomplete)".to_owned(), |m| m.to_string());
        report.push_str(&format!("neighbor {ip} at {mac} ({state:?})\n"));
    }
    report
}

fn wait_for_signal(signal: &AtomicUsize, counters: &Counters, period: Option<u64>) {
    let period = period.map(|p| Duration::from_secs(p.max(1)));
    let mut next = period.map(|p| Instant::now() + p);
    while signal.load(Ordering::SeqCst) == 0 {
        std::thread::sleep(Duration::from_millis(50));
        if let (Some(at), Some(p)) = (next, period) {
            if Instant::now() >= at {
                next = Some(at + p);
                print_counters(counters);
            }
        }
    }
}

fn print_counters(counters: &Counters) {
    println!("counters:");
    for (name, value) in counters.nonzero() {
        println!("  {name:<28} {value}");
    }
}
