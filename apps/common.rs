//! Start-up shared by the apps: EAL arguments (with the embedded default),
//! the SIGINT/SIGTERM flag, the packet pool of `--total-num-mbufs`, and the
//! launch of the polling job on the worker lcore.
//! Included by each binary with `#[path]`; control path only.

use clap::Parser;
use dpstack::eal::{split_args, EalArgs};
use dpstack::ethdev::PortConfig;
use dpstack::lcore::{launch, LaunchHandle, Lcore};
use dpstack::mempool::{Mempool, PoolConfig, PoolNeed};
use dpstack::stack::route::{Ipv4Cidr, Ipv6Cidr};
use dpstack::DpdkError;
use std::process::ExitCode;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

/// The body of every app's `main`: split the arguments, parse the app
/// options as `C`, then take the embedded default EAL options if none were
/// given, run, and turn the outcome into an exit code (2 for a usage error,
/// 1 for a failure, whose message goes to stderr). Help and version requests
/// (`APP --help`, `APP -V`, `APP -- --help`) print and exit 0 before anything
/// about EAL is decided or printed.
pub fn run_app<C: Parser>(
    program: &str,
    vdevs: &[&str],
    memory_mb: u32,
    run: impl FnOnce(&[String], &C) -> Result<(), String>,
) -> ExitCode {
    let (eal_args, app_args) = split_args(std::env::args());
    let cli = match C::try_parse_from(std::iter::once(program.to_owned()).chain(app_args)) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let eal_args = eal_args_or_default(eal_args, program, vdevs, memory_mb);
    match run(&eal_args, &cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{program}: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The EAL part of the command line; without EAL options, the embedded
/// default for `program` with `vdevs`, and a line says so.
fn eal_args_or_default(
    eal: Vec<String>,
    program: &str,
    vdevs: &[&str],
    memory_mb: u32,
) -> Vec<String> {
    if eal.len() > 1 {
        return eal;
    }
    let default = EalArgs::embedded_default(program, vdevs, memory_mb);
    let eal = default.to_vec();
    println!(
        "No EAL options given: using the embedded default ({}):\n  {}",
        if default.uses_hugepages() {
            "hugepages, in memory"
        } else {
            "no hugepages"
        },
        eal[1..].join(" ")
    );
    eal
}

/// One `--ip ADDR/PREFIX` argument, the syntax every app takes: IPv4 or
/// IPv6 (told apart by the colon), repeatable to give several.
#[derive(Debug, Clone, Copy)]
#[allow(dead_code)] // the console takes addresses by command, not --ip
pub enum IpArg {
    /// An IPv4 address and prefix length.
    V4(Ipv4Cidr),
    /// An IPv6 address and prefix length.
    V6(Ipv6Cidr),
}

/// Parses an [`IpArg`] (clap's `value_parser` for `--ip`).
#[allow(dead_code)] // the console takes addresses by command, not --ip
pub fn parse_ip(s: &str) -> Result<IpArg, String> {
    if s.contains(':') {
        s.parse().map(IpArg::V6)
    } else {
        s.parse().map(IpArg::V4)
    }
}

impl std::fmt::Display for IpArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IpArg::V4(c) => c.fmt(f),
            IpArg::V6(c) => c.fmt(f),
        }
    }
}

/// Runs `job` (the app's poll loop) on the first worker lcore, or says
/// how to give EAL one: the error every app gives.
#[allow(dead_code)] // the console launches its forwarding lcores itself
pub fn launch_worker(job: impl FnOnce() -> i32 + Send + 'static) -> Result<LaunchHandle, String> {
    let lcore = *Lcore::workers()
        .first()
        .ok_or("no worker lcore: give EAL two lcores (e.g. -l 0-1, or --lcores=0@0,1@0)")?;
    launch(lcore, job).map_err(|e| e.to_string())
}

/// A flag set to the signal number when SIGINT or SIGTERM arrives.
pub fn stop_signal() -> Result<Arc<AtomicUsize>, String> {
    let signal = Arc::new(AtomicUsize::new(0));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_usize(sig, Arc::clone(&signal), sig as usize)
            .map_err(|e| format!("cannot install a handler for signal {sig}: {e}"))?;
    }
    Ok(signal)
}

/// What `ports` ports configured as `port` need of a pool whose per-lcore
/// cache is `cache` ([`PoolNeed`]): their rings, and the caches of the two
/// lcores an app uses (the main lcore, which sets up, and the first worker,
/// which polls), or of one if EAL has only one. Call after EAL is
/// initialised (the lcore count is EAL's).
#[allow(dead_code)] // not every app has --total-num-mbufs
pub fn pool_need(port: &PortConfig, ports: usize, cache: u32) -> PoolNeed {
    let ports = u32::try_from(ports).unwrap_or(u32::MAX);
    PoolNeed::for_ports(ports, port, cache, Lcore::count().min(2))
}

/// Creates the packet pool of `--total-num-mbufs` (`config.count`) for
/// `ports` ports configured as `port`, after checking it against
/// [`pool_need`]: a count below that is refused up front with the minimum
/// and what makes it up, not with DPDK's failure (EINVAL below its own
/// floor, or ENOMEM from a receive ring that cannot be filled, which reads
/// as too little memory).
#[allow(dead_code)] // not every app has --total-num-mbufs
pub fn packet_pool(
    name: &str,
    config: &PoolConfig,
    port: &PortConfig,
    ports: usize,
) -> Result<Mempool, String> {
    pool_need(port, ports, config.cache)
        .check(config.count)
        .map_err(|e| match e {
            DpdkError::PoolTooSmall { count, need } => {
                format!("--total-num-mbufs {count} is too few: {need}")
            }
            e => e.to_string(),
        })?;
    Mempool::create(name, config).map_err(|e| e.to_string())
}
