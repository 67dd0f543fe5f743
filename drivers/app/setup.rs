//! Start-up: the body of `main` ([`run_app`]: arguments, the embedded EAL
//! default, exit codes), the packet pool of `--total-num-mbufs`, and
//! [`set_up`]: EAL -> pool -> ports -> [`Interface`] with its config and
//! routes, and with `--nb-cores N` its N lanes: lane i is pipeline i of the
//! stack over rx/tx queue pair i of every port, for worker lcore i. Control
//! path only.

use super::args::{RouteArg, StackArgs};
use crate::eal::{split_args, Eal, EalArgs};
use crate::ethdev::{
    available_ports, EthPort, EthQueue, PortConfig, PortInfo, QueueSpreading, RssConfig,
};
use crate::lcore::Lcore;
use crate::mbuf::Mbuf;
use crate::mempool::{Mempool, PoolConfig, PoolNeed};
use crate::stack::iface::{Interface, InterfaceConfig, LinkConfig};
use crate::stack::route::Ipv4Cidr;
use crate::stack::tcp::EcnMode;
use crate::DpdkError;
use clap::Parser;
use std::process::ExitCode;

/// What start-up needs to know of an app.
#[derive(Debug, Clone, Copy)]
pub struct AppSpec {
    /// The program's name, as its messages begin.
    pub program: &'static str,
    /// The devices of the embedded default EAL options (e.g.
    /// `net_tap0,iface=dpstack0`); the first is the example of the "no
    /// port" message.
    pub vdevs: &'static [&'static str],
    /// Megabytes of memory of the embedded default.
    pub memory_mb: u32,
    /// Buffers of the reassembly pool (large buffers that hold a whole
    /// reassembled datagram); 0 for none.
    pub reassembly_buffers: u32,
    /// Whether the app runs a lane on each of `--nb-cores` lcores
    /// ([`super::run_on_workers`]); an app that polls one lane refuses
    /// `--nb-cores` above 1 (its other queues would be polled by no one).
    pub many_lanes: bool,
}

impl AppSpec {
    /// `program` with `vdevs` as its embedded default devices, 256 MB of
    /// memory and no reassembly pool: what most apps want.
    pub const fn new(program: &'static str, vdevs: &'static [&'static str]) -> AppSpec {
        AppSpec {
            program,
            vdevs,
            memory_mb: 256,
            reassembly_buffers: 0,
            many_lanes: false,
        }
    }

    /// This spec for an app that runs a lane on each of `--nb-cores` lcores.
    pub const fn many_lanes(self) -> AppSpec {
        AppSpec {
            many_lanes: true,
            ..self
        }
    }

    /// This spec with `memory_mb` megabytes in its embedded default.
    pub const fn memory_mb(self, memory_mb: u32) -> AppSpec {
        AppSpec { memory_mb, ..self }
    }

    /// This spec with a reassembly pool of `buffers` large buffers.
    pub const fn reassembly_buffers(self, buffers: u32) -> AppSpec {
        AppSpec {
            reassembly_buffers: buffers,
            ..self
        }
    }
}

/// The body of every app's `main`: split the arguments, parse the app
/// options as `C`, then take the embedded default EAL options if none were
/// given, run, and turn the outcome into an exit code (2 for a usage error,
/// 1 for a failure, whose message goes to stderr). Help and version requests
/// (`APP --help`, `APP -V`, `APP -- --help`) print and exit 0 before anything
/// about EAL is decided or printed.
pub fn run_app<C: Parser>(
    spec: &AppSpec,
    run: impl FnOnce(&[String], &C) -> Result<(), String>,
) -> ExitCode {
    let program = spec.program;
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
    let eal_args = eal_args_or_default(eal_args, spec);
    match run(&eal_args, &cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{program}: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The EAL part of the command line; without EAL options, the embedded
/// default of `spec`, and a line says so.
fn eal_args_or_default(eal: Vec<String>, spec: &AppSpec) -> Vec<String> {
    if eal.len() > 1 {
        return eal;
    }
    let default = EalArgs::embedded_default(spec.program, spec.vdevs, spec.memory_mb);
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

/// What `ports` ports configured as `port` need of a pool whose per-lcore
/// cache is `cache` ([`PoolNeed`]): their rings, and the caches of the
/// lcores an app uses (the main lcore, which sets up, and a polling worker
/// for each receive queue of a port), or of as many as EAL has if fewer.
/// Call after EAL is initialised (the lcore count is EAL's).
pub fn pool_need(port: &PortConfig, ports: usize, cache: u32) -> PoolNeed {
    let ports = u32::try_from(ports).unwrap_or(u32::MAX);
    let lcores = 1 + u32::from(port.rx_queues.max(1));
    PoolNeed::for_ports(ports, port, cache, Lcore::count().min(lcores))
}

/// Creates the packet pool of `--total-num-mbufs` (`config.count`) for
/// `ports` ports configured as `port`, after checking it against
/// [`pool_need`]: a count below that is refused up front with the minimum
/// and what makes it up, not with DPDK's failure (EINVAL below its own
/// floor, or ENOMEM from a receive ring that cannot be filled, which reads
/// as too little memory).
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

/// One polling lcore's share of the stack: its pipeline and its queue pair
/// of every port.
pub struct Lane {
    /// The pipeline ([`Interface::pipeline`] of lane 0's interface).
    pub iface: Interface<Mbuf>,
    /// This lane's queue pair of each port, in link order.
    pub queues: Vec<EthQueue>,
}

/// A stack set up from [`StackArgs`]: the interface over one queue of each
/// port that has addresses, and the pools behind them; with `--nb-cores N`,
/// also the other N - 1 lanes. Keep it (or at least its EAL) alive while the
/// ports run.
pub struct Stack {
    /// Lane 0's interface (the home pipeline, which runs the shared timers
    /// and serves queue-mode sockets), ready for binds and listens, to move
    /// to the lcore.
    pub iface: Interface<Mbuf>,
    /// Queue pair 0 of each port, in link order, to move to the lcore.
    pub queues: Vec<EthQueue>,
    /// Lanes 1 to N - 1 of `--nb-cores N` (empty with one): pipelines of
    /// the same stack, sharing its routes, neighbours, addresses and UDP
    /// sockets, each over its own queue pair. TCP listeners are per
    /// pipeline: an app listens on every lane.
    pub more_lanes: Vec<Lane>,
    /// The ports (control side), in link order.
    pub ports: Vec<EthPort>,
    /// The packet pool of `--total-num-mbufs`.
    pub pool: Mempool,
    /// The reassembly pool, if the app asked for one.
    pub reassembly_pool: Option<Mempool>,
    /// EAL, last so it is dropped after everything above.
    pub eal: Eal,
}

/// Why there is no port: none was asked for, or the devices asked for
/// (`--vdev`, `-a`) did not probe, which DPDK's own lines above say why.
fn no_port(spec: &AppSpec, eal_args: &[String]) -> String {
    let value = |long: &str, short: Option<&str>| -> Vec<String> {
        let joined = eal_args
            .iter()
            .filter_map(|a| a.strip_prefix(&format!("{long}=")[..]));
        let split = (eal_args.iter().zip(eal_args.iter().skip(1)))
            .filter(|(flag, _)| *flag == long || Some(flag.as_str()) == short)
            .map(|(_, device)| device.as_str());
        joined.chain(split).map(str::to_owned).collect()
    };
    let (vdevs, pci) = (value("--vdev", None), value("--allow", Some("-a")));
    if vdevs.is_empty() && pci.is_empty() {
        let example = spec.vdevs.first().copied().unwrap_or("net_tap0");
        return format!("no port: add one with --vdev (e.g. --vdev={example})");
    }
    let mut text = format!(
        "no port: the devices given ({}) did not probe; DPDK's lines above say why",
        [&vdevs[..], &pci[..]].concat().join(", ")
    );
    if !pci.is_empty() {
        text.push_str(
            " (a PCI device must exist and be bound to vfio-pci: dpdk-devbind.py --status)",
        );
    }
    text
}

/// `PROGRAM: port ID (MAC) is ADDR/PREFIX ...`: the line a client app
/// prints when its first port is up, with the addresses `args` gave.
pub fn port_banner(program: &str, port: &EthPort, args: &StackArgs) -> String {
    let addresses: Vec<String> = args.ip.iter().map(ToString::to_string).collect();
    format!(
        "{program}: port {} ({}) is {}",
        port.id(),
        port.mac(),
        addresses.join(" ")
    )
}

/// EAL (from `eal_args`), the packet pool, one port for each port's worth of
/// `--ip` addresses (at least one), and the [`Interface`] over them with
/// `args`' gateway, routes, MTU, DAD, RA, pacing and ECN; `configure` adjusts
/// the interface's config last (buffer sizes, an app's own defaults).
pub fn set_up(
    spec: &AppSpec,
    eal_args: &[String],
    args: &StackArgs,
    configure: impl FnOnce(&mut InterfaceConfig),
) -> Result<Stack, String> {
    let eal = Eal::init(eal_args).map_err(|e| e.to_string())?;
    let lanes = lane_count(spec, args)?;
    let port_ids = available_ports();
    if port_ids.is_empty() {
        return Err(no_port(spec, eal_args));
    }
    let mut per_port = args.addresses_per_port();
    if per_port.is_empty() {
        per_port.push((Vec::new(), Vec::new()));
    }
    if per_port.len() > port_ids.len() {
        return Err(format!(
            "--ip addresses for {} ports given but EAL found {} port(s): \
             give one IPv4 and/or one IPv6 --ip per port",
            per_port.len(),
            port_ids.len()
        ));
    }
    let pool_config = PoolConfig {
        count: args.total_num_mbufs,
        ..PoolConfig::default()
    }
    .for_mtu(args.mtu);
    let port_config = PortConfig {
        mtu: Some(args.mtu),
        rx_queues: lanes,
        tx_queues: lanes,
        ..PortConfig::default()
    };
    let pool = packet_pool("packet_pool", &pool_config, &port_config, per_port.len())?;
    let reassembly_pool = match spec.reassembly_buffers {
        0 => None,
        n => Some(
            Mempool::create("reassembly_pool", &PoolConfig::large(n)).map_err(|e| e.to_string())?,
        ),
    };
    let mut ports = Vec::new();
    // Each lane's queue pair of every port.
    let mut queues: Vec<Vec<EthQueue>> = (0..lanes).map(|_| Vec::new()).collect();
    let mut links = Vec::new();
    for (&port_id, (v4, v6)) in port_ids.iter().zip(&per_port) {
        let config = with_spreading(&port_config, port_id)?;
        let port = EthPort::open(port_id, &config, pool).map_err(|e| e.to_string())?;
        for (q, lane) in (0..lanes).zip(&mut queues) {
            let queue = port.queue(q, q).map_err(|e| e.to_string())?;
            lane.push(match reassembly_pool {
                Some(large) => queue.with_large_pool(large),
                None => queue,
            });
        }
        links.push(LinkConfig {
            addresses: v4.clone(),
            addresses6: v6.clone(),
            mtu: usize::from(args.mtu),
            ..LinkConfig::new(port.mac(), Ipv4Cidr::DEFAULT)
        });
        ports.push(port);
    }
    let mut config = InterfaceConfig::with_links(links);
    config.gateway = args.gateway;
    if args.no_dad {
        config.dad_transmits = 0;
    }
    config.accept_ra = args.accept_ra;
    config.tcp.pacing = args.pacing;
    if args.ecn {
        config.tcp.ecn = EcnMode::Request;
    }
    config.tcp.slow_start_after_idle = !args.no_slow_start_after_idle;
    configure(&mut config);
    let mut iface: Interface<Mbuf> = Interface::new(config).map_err(|e| e.to_string())?;
    for &route in &args.routes {
        match route {
            RouteArg::V4(prefix, gateway) => iface
                .add_route(prefix, gateway)
                .map_err(|e| format!("--route {prefix},{gateway}: {e}"))?,
            RouteArg::V6(prefix, gateway, port) => iface
                .add_route6(prefix, gateway, port)
                .map_err(|e| format!("--route {prefix},{gateway}: {e}"))?,
        }
    }
    let mut queues = queues.into_iter();
    let first_queues = queues.next().unwrap_or_default();
    let mut more_lanes: Vec<Lane> = queues
        .map(|queues| {
            Ok(Lane {
                iface: iface.pipeline().map_err(|e| e.to_string())?,
                queues,
            })
        })
        .collect::<Result<_, String>>()?;
    if lanes > 1 {
        place_tcp_connects(&mut iface, &ports, 0);
        for (q, lane) in (1..lanes).zip(&mut more_lanes) {
            place_tcp_connects(&mut lane.iface, &ports, q);
        }
    }
    Ok(Stack {
        iface,
        queues: first_queues,
        more_lanes,
        ports,
        pool,
        reassembly_pool,
        eal,
    })
}

/// `--nb-cores`, checked against the app (one that polls a single lane
/// refuses more) and EAL's worker lcores.
fn lane_count(spec: &AppSpec, args: &StackArgs) -> Result<u16, String> {
    let lanes = args.nb_cores.max(1);
    if lanes == 1 {
        return Ok(1);
    }
    if !spec.many_lanes {
        return Err(format!(
            "--nb-cores {lanes}: {} polls on one lcore (--nb-cores 1)",
            spec.program
        ));
    }
    let workers = Lcore::workers().len();
    if usize::from(lanes) > workers {
        return Err(format!(
            "--nb-cores {lanes}: EAL has {workers} worker lcore(s); give it {lanes}, e.g. \
             -l 0-{lanes}, or on fewer CPUs --lcores=0@0,1@0,2@1 (lcores 1 and 2 on CPUs 0 and 1)"
        ));
    }
    Ok(lanes)
}

/// `config` for port `id`: with several receive queues on a device that
/// spreads flows by RSS, RSS over addresses and TCP and UDP ports, so a
/// flow's packets meet one lane. A device without RSS is left as it is: a
/// multi-queue `net_tap`'s kernel spreads by its own flow hash, a `net_memif`
/// peer picks the queue.
fn with_spreading(config: &PortConfig, id: u16) -> Result<PortConfig, String> {
    let mut config = config.clone();
    if config.rx_queues > 1 {
        let info = PortInfo::query(id).map_err(|e| e.to_string())?;
        if QueueSpreading::of(&info).is_predictable() {
            config.rss = Some(RssConfig::ip_tcp_udp());
        }
    }
    Ok(config)
}

/// Tells lane `queue`'s pipeline where its TCP connects place their ports
/// (the RSS of its queue), when the first port's spreading is a known
/// Toeplitz; otherwise (also when the device will not say its key or
/// table) they place freely and steering carries the replies.
fn place_tcp_connects(iface: &mut Interface<Mbuf>, ports: &[EthPort], queue: u16) {
    let placement = ports
        .first()
        .and_then(|p| p.rss_placement(queue).ok().flatten());
    iface.set_tcp_rss(placement);
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        stack: StackArgs,
    }

    fn args(nb_cores: &str) -> StackArgs {
        Cli::try_parse_from(["app", "--nb-cores", nb_cores])
            .expect("parses")
            .stack
    }

    #[test]
    fn an_app_that_polls_one_lane_refuses_more() {
        let one = AppSpec::new("dpstack-one", &[]);
        assert_eq!(
            lane_count(&one, &args("2")),
            Err("--nb-cores 2: dpstack-one polls on one lcore (--nb-cores 1)".into())
        );
        assert_eq!(lane_count(&one, &args("1")), Ok(1));
    }
}
