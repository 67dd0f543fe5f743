//! `dpstack-console`: testpmd-style packet forwarding on dpstack's driver
//! layer, non-interactive or with a prompt (`-i`), optionally after the
//! commands of a `--cmdline-file`.
//!
//! `dpstack-console [EAL options] -- [options]`. Without EAL options it runs on
//! an embedded default (two `net_null` ports, two lcores, hugepages only if
//! free) and says so. SIGINT/SIGTERM stop forwarding, print the final
//! statistics in testpmd's format, close the ports and exit 0. Stack mode
//! (`--forward-mode=stack`, `set fwd stack`) runs dpstack's TCP/IP stack on
//! the ports instead of an engine (`stack`).

mod cli;
mod commands;
mod display;
mod engines;
mod forward;
mod interactive;
mod session;
mod stack;
mod terminal;

use cli::Cli;
use crossbeam_channel::{Receiver, RecvTimeoutError};
use dpstack::app::{self, AppSpec};
use dpstack::eal::Eal;
use dpstack::ethdev::{available_ports, EthPort, PortConfig, RssConfig};
use dpstack::lcore::Lcore;
use dpstack::mempool::PoolConfig;
use dpstack::stack::port::MacAddr;
use forward::{default_peer, ForwardConfig};
use interactive::{Flow, Prompt};
use session::Session;
use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const PROGRAM: &str = "dpstack-console";
const SPEC: AppSpec = AppSpec::new(PROGRAM, &["net_null0", "net_null1"]).memory_mb(512);

fn main() -> ExitCode {
    app::run_app::<Cli>(&SPEC, run)
}

fn run(eal_args: &[String], cli: &Cli) -> Result<(), String> {
    let script = match &cli.cmdline_file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read --cmdline-file {}: {e}", path.display()))?;
            println!("CLI commands to be read from {}", path.display());
            Some((path, text))
        }
        None => None,
    };
    let signal = app::stop_signal()?;
    let _eal = Eal::init(eal_args).map_err(|e| e.to_string())?;
    let mut session = open_session(cli)?;
    let flow = match &script {
        Some((path, text)) => interactive::run_script(&mut session, path, text, &signal),
        None => Flow::Continue,
    };

    // A `quit` in the file ends only the file (as in testpmd); a signal
    // goes straight to the shutdown.
    if flow == Flow::Continue && cli.interactive {
        let mut prompt = Prompt::open();
        if cli.auto_start {
            println!("Start automatic packet forwarding");
            start(&mut session, cli.tx_first);
        }
        interactive::run(&mut session, &mut prompt, &signal);
    } else if flow == Flow::Continue {
        start(&mut session, cli.tx_first);
        match cli.stats_period {
            Some(period) => show_stats_until_signal(&mut session, period, &signal)?,
            None => wait_for_enter(&interactive::stdin_lines(), &signal),
        }
    }
    let sig = signal.load(Ordering::SeqCst);
    if sig != 0 {
        println!("\nSignal {sig} received, preparing to exit...");
    }
    print!("{}", session.close());
    let _ = std::io::stdout().flush();
    Ok(())
}

/// Starts forwarding and prints the outcome; a refusal (e.g. a port that
/// the command file stopped) is printed, as testpmd does, and the console
/// goes on.
fn start(session: &mut Session, tx_first: bool) {
    match session.start(tx_first) {
        Ok(text) => print!("{text}"),
        Err(message) => println!("{message}"),
    }
}

fn open_session(cli: &Cli) -> Result<Session, String> {
    let ids = available_ports();
    if ids.is_empty() {
        return Err(
            "no ports: add a device with --vdev (e.g. --vdev=net_null0) or bind a NIC to a \
             DPDK driver"
                .into(),
        );
    }
    let lcores = Lcore::workers();
    if lcores.is_empty() {
        return Err(app::NO_WORKER_LCORE.into());
    }
    let nb_cores = usize::from(cli.nb_cores);
    if nb_cores > lcores.len() {
        return Err(format!(
            "--nb-cores={nb_cores}: EAL has {} worker lcore(s); give it more, e.g. -l 0-{nb_cores} \
             or, on fewer CPUs, --lcores=0@0,1@0,2@1",
            lcores.len()
        ));
    }
    let config = PortConfig {
        rx_queues: cli.rxq,
        tx_queues: cli.txq,
        rx_descriptors: cli.rxd,
        tx_descriptors: cli.txd,
        ..PortConfig::default()
    };
    let rss = if cli.rss_udp {
        RssConfig::ip_udp()
    } else {
        RssConfig::ip()
    };
    let per_port = u32::from(cli.rxd) * u32::from(cli.rxq)
        + u32::from(cli.txd) * u32::from(cli.txq)
        + 2 * cli.burst as u32 * u32::from(cli.rxq)
        + 512;
    let count = cli.total_num_mbufs.unwrap_or_else(|| {
        let need = app::pool_need(&config, ids.len(), PoolConfig::default().cache);
        (per_port * ids.len() as u32).max(need.minimum()).max(8191)
    });
    let pool_config = PoolConfig {
        count,
        ..PoolConfig::default()
    };
    let pool = app::packet_pool("mbuf_pool_socket_0", &pool_config, &config, ids.len())?;
    let mut ports = Vec::new();
    for id in ids {
        let (port_config, note) = session::with_rss(&config, &rss, id);
        if let Some(note) = note {
            println!("{note}");
        }
        let port = EthPort::open(id, &port_config, pool).map_err(|e| e.to_string())?;
        // testpmd's lines (it prints the first before configuring).
        let socket = port.info().ok().and_then(|i| i.socket).unwrap_or(0);
        println!("Configuring Port {id} (socket {socket})");
        println!("Port {id}: {}", port.mac());
        ports.push(port);
    }
    println!("Checking link statuses...\nDone");
    let peers: Vec<MacAddr> = ports
        .iter()
        .map(|p| {
            cli.eth_peer
                .iter()
                .rev()
                .find(|(id, _)| *id == p.id())
                .map_or(default_peer(usize::from(p.id())), |(_, mac)| *mac)
        })
        .collect();
    let forward = ForwardConfig {
        mode: cli.forward_mode,
        burst: cli.burst,
        tx_retries: cli.burst_tx_retry_num,
        tx_first: cli.tx_first,
        record_cycles: cli.record_core_cycles,
    };
    let mut session = Session::new(
        ports,
        peers,
        (forward, cli.port_topology),
        (lcores, nb_cores),
        (config, rss),
    );
    session.stack.setup = cli.stack_ip.clone();
    Ok(session)
}

/// testpmd's non-interactive mode: forward until Enter, end of input, or a
/// signal.
fn wait_for_enter(lines: &Receiver<String>, signal: &AtomicUsize) {
    println!("Press enter to exit");
    let _ = std::io::stdout().flush();
    while signal.load(Ordering::SeqCst) == 0 {
        match lines.recv_timeout(Duration::from_millis(100)) {
            Ok(_) | Err(RecvTimeoutError::Disconnected) => return,
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
}

/// `--stats-period`: print every port's statistics each period until a signal.
fn show_stats_until_signal(
    session: &mut Session,
    period: u64,
    signal: &AtomicUsize,
) -> Result<(), String> {
    let period = Duration::from_secs(period.max(1));
    let all: Vec<usize> = (0..session.ports().len()).collect();
    // Prime the rate counters so the first display shows real rates.
    session.show_port_stats(&all)?;
    let mut next = Instant::now() + period;
    let clear = if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        "\x1b[2J\x1b[1;1H"
    } else {
        ""
    };
    while signal.load(Ordering::SeqCst) == 0 {
        std::thread::sleep(Duration::from_millis(50));
        if Instant::now() < next {
            continue;
        }
        next += period;
        let text = session.show_port_stats(&all)?;
        print!("{clear}\nPort statistics ===================================={text}");
        let _ = std::io::stdout().flush();
    }
    Ok(())
}
