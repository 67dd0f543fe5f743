//! Command-line options of `dpstack-console`, with testpmd's names. They come
//! after the EAL options and `--`: `dpstack-console [EAL options] -- [options]`.

use crate::engines::ForwardMode;
use crate::forward::Topology;
use clap::Parser;
use dpstack::stack::iface::Prefix;
use dpstack::stack::port::{MacAddr, MAX_BURST};

/// testpmd-style packet forwarding on dpstack's driver layer.
#[derive(Debug, Parser)]
#[command(
    name = "dpstack-console",
    version,
    override_usage = "dpstack-console [EAL options] -- [OPTIONS]",
    after_help = "Without EAL options it runs on an embedded default: two net_null ports, \
                  two lcores, no hugepages needed.\n\
                  Example: dpstack-console --vdev=net_ring0 --vdev=net_ring1 -- --tx-first -a"
)]
pub struct Cli {
    /// Run an interactive prompt (`help` lists the commands; Tab completes,
    /// `?` lists what may come next).
    #[arg(short, long)]
    pub interactive: bool,

    /// Run the console commands in FILE (one per line, `#` comments) at
    /// start-up, then go on as without it.
    #[arg(long, value_name = "FILE")]
    pub cmdline_file: Option<std::path::PathBuf>,

    /// Start forwarding at once (interactive mode; otherwise forwarding always starts).
    #[arg(short = 'a', long)]
    pub auto_start: bool,

    /// Forwarding engine.
    #[arg(long, default_value = "io", value_parser = parse_mode)]
    pub forward_mode: ForwardMode,

    /// Print port statistics every N seconds until stopped (non-interactive).
    #[arg(long, value_name = "N")]
    pub stats_period: Option<u64>,

    /// Packets per burst (1 to 512).
    #[arg(long, default_value_t = 32, value_parser = parse_burst)]
    pub burst: usize,

    /// How ports are paired into streams.
    #[arg(long, value_enum, default_value = "paired")]
    pub port_topology: Topology,

    /// Buffers in the packet pool (default: enough for every port's queues).
    #[arg(long, value_name = "N")]
    pub total_num_mbufs: Option<u32>,

    /// Count CPU cycles per packet and print them with the forward statistics.
    #[arg(long)]
    pub record_core_cycles: bool,

    /// Send one burst of txonly packets on every stream before forwarding.
    #[arg(long)]
    pub tx_first: bool,

    /// Forwarding lcores (at most the worker lcores EAL has: `-l`/`--lcores`).
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub nb_cores: u16,

    /// Receive queues per port (flows are spread by RSS where the device has it).
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub rxq: u16,

    /// Transmit queues per port.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub txq: u16,

    /// With several rx queues, hash IP addresses only (the default).
    #[arg(long, conflicts_with = "rss_udp")]
    pub rss_ip: bool,

    /// With several rx queues, hash IP addresses and UDP ports.
    #[arg(long)]
    pub rss_udp: bool,

    /// Receive descriptors per queue.
    #[arg(long, default_value_t = 1024)]
    pub rxd: u16,

    /// Transmit descriptors per queue.
    #[arg(long, default_value_t = 1024)]
    pub txd: u16,

    /// Peer MAC of a port, for the mac and txonly engines: N,XX:XX:XX:XX:XX:XX.
    #[arg(long, value_name = "N,MAC", value_parser = parse_peer)]
    pub eth_peer: Vec<(u16, MacAddr)>,

    /// Extra transmit attempts before a burst's unsent tail is dropped.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub burst_tx_retry_num: u32,

    /// An address of port N in stack mode (--forward-mode=stack),
    /// N,ADDR/PREFIX, IPv4 or IPv6 (repeatable); `ip addr add` adds more
    /// while the stack runs.
    #[arg(long, value_name = "N,ADDR/PREFIX", value_parser = parse_stack_ip)]
    pub stack_ip: Vec<(u16, Prefix)>,
}

fn parse_mode(s: &str) -> Result<ForwardMode, String> {
    ForwardMode::from_name(s).ok_or_else(|| {
        format!(
            "unknown forwarding mode '{s}'; available: {}",
            ForwardMode::names().join(" ")
        )
    })
}

fn parse_burst(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=MAX_BURST).contains(&n) => Ok(n),
        _ => Err(format!("burst must be 1 to {MAX_BURST}")),
    }
}

/// Parses `XX:XX:XX:XX:XX:XX`.
pub fn parse_mac(s: &str) -> Option<MacAddr> {
    let mut octets = [0u8; 6];
    let mut parts = s.split(':');
    for octet in &mut octets {
        *octet = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(MacAddr(octets))
}

fn parse_peer(s: &str) -> Result<(u16, MacAddr), String> {
    let (port, mac) = s
        .split_once(',')
        .ok_or_else(|| "expected N,XX:XX:XX:XX:XX:XX".to_owned())?;
    let port = port.parse().map_err(|_| format!("bad port '{port}'"))?;
    let mac = parse_mac(mac).ok_or_else(|| format!("bad MAC '{mac}'"))?;
    Ok((port, mac))
}

fn parse_stack_ip(s: &str) -> Result<(u16, Prefix), String> {
    let (port, prefix) = s
        .split_once(',')
        .ok_or_else(|| "expected N,ADDR/PREFIX (e.g. 0,10.0.0.1/24)".to_owned())?;
    let port = port.parse().map_err(|_| format!("bad port '{port}'"))?;
    Ok((port, prefix.parse()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn testpmd_flags_parse() {
        let cli = Cli::try_parse_from([
            "x",
            "--forward-mode=macswap",
            "-a",
            "--stats-period",
            "2",
            "--burst",
            "64",
            "--port-topology",
            "loop",
            "--eth-peer",
            "1,02:00:00:00:00:aa",
            "--record-core-cycles",
            "--cmdline-file",
            "setup.txt",
            "--stack-ip",
            "1,10.0.0.1/24",
            "--stack-ip=0,2001:db8::1/64",
            "--nb-cores=2",
            "--rxq=2",
            "--txq",
            "2",
            "--rss-udp",
        ])
        .expect("parses");
        assert_eq!(cli.forward_mode, ForwardMode::MacSwap);
        assert_eq!(
            (cli.nb_cores, cli.rxq, cli.txq, cli.rss_udp),
            (2, 2, 2, true)
        );
        assert!(cli.auto_start && cli.record_core_cycles && !cli.interactive);
        assert_eq!((cli.stats_period, cli.burst), (Some(2), 64));
        assert_eq!(cli.port_topology, Topology::Loop);
        assert_eq!(cli.eth_peer, [(1, MacAddr([2, 0, 0, 0, 0, 0xaa]))]);
        assert_eq!(cli.cmdline_file.as_deref(), Some("setup.txt".as_ref()));
        let addresses: Vec<String> = cli
            .stack_ip
            .iter()
            .map(|(n, p)| format!("{n} {p}"))
            .collect();
        assert_eq!(addresses, ["1 10.0.0.1/24", "0 2001:db8::1/64"]);
    }

    #[test]
    fn bad_values_are_rejected_with_the_choices() {
        let err = Cli::try_parse_from(["x", "--forward-mode=warp"]).expect_err("bad mode");
        assert!(
            err.to_string().contains("io mac macswap rxonly txonly"),
            "{err}"
        );
        assert!(Cli::try_parse_from(["x", "--burst", "0"]).is_err());
        assert!(Cli::try_parse_from(["x", "--burst", "513"]).is_err());
        assert!(Cli::try_parse_from(["x", "--eth-peer", "1,zz"]).is_err());
        assert!(Cli::try_parse_from(["x", "--stack-ip", "10.0.0.1/24"]).is_err());
        assert!(Cli::try_parse_from(["x", "--stack-ip", "0,10.0.0.1/33"]).is_err());
        assert!(Cli::try_parse_from(["x", "--nb-cores", "0"]).is_err());
        assert!(Cli::try_parse_from(["x", "--rxq", "65"]).is_err());
        assert!(Cli::try_parse_from(["x", "--rss-ip", "--rss-udp"]).is_err());
    }
}
