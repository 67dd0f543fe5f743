//! The stack's command-line options, shared by every app as one clap
//! [`StackArgs`] struct (`#[command(flatten)]`): one `--ip ADDR/PREFIX`
//! syntax for both families and every port, routes, MTU, pool size, faults,
//! statistics, and the number of polling lcores. (`--record-core-cycles` is not among them: an app that
//! offers it calls [`super::run_on_worker_counting_cycles`].) An app that
//! wants another default or check for one of them changes it with
//! `#[command(mut_arg("ip", |a| ...))]`; names and meanings stay the same in
//! every app.

use crate::fault::FaultSpec;
use crate::stack::route::{Ipv4Cidr, Ipv6Cidr};
use clap::Args;
use std::net::{Ipv4Addr, Ipv6Addr};

/// The stack's options: addresses, routes, link and pool sizes, faults and
/// statistics.
#[derive(Debug, Clone, Args)]
pub struct StackArgs {
    /// Our address and prefix length, IPv4 or IPv6; repeat it to use more
    /// ports: the n-th IPv4 --ip goes to port n, and so does the n-th IPv6
    /// one (every port also has an IPv6 link-local address).
    #[arg(long, value_name = "ADDR/PREFIX", value_parser = parse_ip)]
    pub ip: Vec<IpArg>,
    /// Default gateway (on the network of one of the --ip prefixes).
    #[arg(long)]
    pub gateway: Option<Ipv4Addr>,
    /// A static route, PREFIX,GATEWAY, IPv4 or IPv6 (e.g.
    /// 198.51.100.0/24,10.2.0.2 or 2001:db8:99::/48,fe80::1%0); repeatable.
    /// The port is the one whose network holds the gateway; a link-local
    /// IPv6 gateway names its port after `%` (optional with one port).
    #[arg(long = "route", value_parser = parse_route, value_name = "PREFIX,GATEWAY")]
    pub routes: Vec<RouteArg>,
    /// Do not run IPv6 duplicate address detection: use the addresses at
    /// once (by default each is probed for a second first).
    #[arg(long)]
    pub no_dad: bool,
    /// Take an IPv6 default route from router advertisements.
    #[arg(long)]
    pub accept_ra: bool,
    /// Pace TCP data segments at a rate from each connection's congestion
    /// window and round trip (as Linux's internal pacing).
    #[arg(long)]
    pub pacing: bool,
    /// Ask for Explicit Congestion Notification (RFC 3168) on the TCP
    /// connections this app opens (Linux's tcp_ecn=1); without it, ECN is
    /// used only when a peer asks for it (Linux's default, tcp_ecn=2).
    #[arg(long)]
    pub ecn: bool,
    /// Keep a TCP connection's congestion window across idle periods and
    /// application-limited spells (Linux's tcp_slow_start_after_idle=0);
    /// by default the window restarts after an RTO of idle and decays
    /// while unused (RFC 5681 4.1, RFC 2861).
    #[arg(long)]
    pub no_slow_start_after_idle: bool,
    /// The ports' MTU; above 1500 (jumbo frames) the packet buffers grow to
    /// hold a whole frame and TCP's MSS follows.
    #[arg(long, default_value_t = 1500, value_parser = clap::value_parser!(u16).range(1280..))]
    pub mtu: u16,
    /// Buffers in the packet pool.
    #[arg(long, default_value_t = 8191, value_name = "N")]
    pub total_num_mbufs: u32,
    /// Inject faults into every port, e.g. drop=0.02,dup=0.01,reorder=0.02,
    /// delay=1ms,seed=7,dir=both (any of drop=P,dup=P,reorder=P,
    /// delay=Nms|Nus,seed=N,dir=rx|tx|both; for testing peers against loss).
    #[arg(long, value_name = "SPEC")]
    pub faults: Option<FaultSpec>,
    /// Print the statistics every N seconds.
    #[arg(long, value_name = "N")]
    pub stats_period: Option<u64>,
    /// Polling lcores: each polls an rx/tx queue pair of its own on every
    /// port (RSS spreads flows where the device has it). At most EAL's
    /// worker lcores (`-l 0-N`, or `--lcores=0@0,1@0,2@1` on two CPUs).
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub nb_cores: u16,
}

impl StackArgs {
    /// The IPv4 and IPv6 addresses of each port from the `--ip` list: the
    /// n-th address of each family goes to port n.
    pub fn addresses_per_port(&self) -> Vec<(Vec<Ipv4Cidr>, Vec<Ipv6Cidr>)> {
        let v4: Vec<Ipv4Cidr> = self.ip.iter().filter_map(IpArg::v4).collect();
        let v6: Vec<Ipv6Cidr> = self.ip.iter().filter_map(IpArg::v6).collect();
        (0..v4.len().max(v6.len()))
            .map(|i| {
                (
                    v4.get(i).into_iter().copied().collect(),
                    v6.get(i).into_iter().copied().collect(),
                )
            })
            .collect()
    }
}

/// One `--ip ADDR/PREFIX` argument, the syntax every app takes: IPv4 or
/// IPv6 (told apart by the colon), repeatable to give several.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpArg {
    /// An IPv4 address and prefix length.
    V4(Ipv4Cidr),
    /// An IPv6 address and prefix length.
    V6(Ipv6Cidr),
}

impl IpArg {
    /// The IPv4 prefix, if it is one.
    pub fn v4(&self) -> Option<Ipv4Cidr> {
        match *self {
            IpArg::V4(c) => Some(c),
            IpArg::V6(_) => None,
        }
    }

    /// The IPv6 prefix, if it is one.
    pub fn v6(&self) -> Option<Ipv6Cidr> {
        match *self {
            IpArg::V6(c) => Some(c),
            IpArg::V4(_) => None,
        }
    }
}

/// Parses an [`IpArg`] (clap's `value_parser` for `--ip`).
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

/// A `--route PREFIX,GATEWAY` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteArg {
    /// An IPv4 prefix and its gateway.
    V4(Ipv4Cidr, Ipv4Addr),
    /// An IPv6 prefix, its gateway, and the gateway's port if it named one
    /// (`fe80::1%0`).
    V6(Ipv6Cidr, Ipv6Addr, Option<usize>),
}

/// Parses a [`RouteArg`] (clap's `value_parser` for `--route`).
pub fn parse_route(s: &str) -> Result<RouteArg, String> {
    let (prefix, gateway) = s
        .split_once(',')
        .ok_or_else(|| format!("'{s}' is not PREFIX,GATEWAY (e.g. 198.51.100.0/24,10.2.0.2)"))?;
    let bad = || format!("bad gateway address '{gateway}'");
    if !prefix.contains(':') {
        return Ok(RouteArg::V4(
            prefix.parse()?,
            gateway.parse().map_err(|_| bad())?,
        ));
    }
    let (address, port) = match gateway.split_once('%') {
        Some((address, port)) => (address, Some(port.parse().map_err(|_| bad())?)),
        None => (gateway, None),
    };
    Ok(RouteArg::V6(
        prefix.parse()?,
        address.parse().map_err(|_| bad())?,
        port,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        stack: StackArgs,
    }

    fn parse(args: &[&str]) -> StackArgs {
        Cli::try_parse_from(std::iter::once("app").chain(args.iter().copied()))
            .expect("parses")
            .stack
    }

    #[test]
    fn the_nth_address_of_each_family_goes_to_port_n() {
        let args = parse(&[
            "--ip",
            "10.0.0.1/24",
            "--ip",
            "2001:db8::1/64",
            "--ip",
            "10.1.0.1/24",
        ]);
        let ports = args.addresses_per_port();
        assert_eq!(ports.len(), 2);
        let v4 = |s: &str| s.parse::<Ipv4Cidr>().expect("cidr");
        let v6 = |s: &str| s.parse::<Ipv6Cidr>().expect("cidr");
        assert_eq!(ports[0].0, [v4("10.0.0.1/24")]);
        assert_eq!(ports[0].1, [v6("2001:db8::1/64")]);
        assert_eq!(ports[1].0, [v4("10.1.0.1/24")]);
        assert!(ports[1].1.is_empty());
    }

    #[test]
    fn defaults_are_those_the_apps_had() {
        let args = parse(&[]);
        assert!(args.ip.is_empty());
        assert_eq!((args.mtu, args.total_num_mbufs), (1500, 8191));
        assert!(!args.no_dad && !args.accept_ra && !args.pacing && !args.ecn);
        assert!(!args.no_slow_start_after_idle);
        assert!(parse(&["--no-slow-start-after-idle"]).no_slow_start_after_idle);
        assert!(args.faults.is_none() && args.stats_period.is_none());
        assert_eq!(args.nb_cores, 1);
    }

    #[test]
    fn no_polling_lcore_is_refused() {
        assert!(Cli::try_parse_from(["app", "--nb-cores", "0"]).is_err());
        assert_eq!(parse(&["--nb-cores", "2"]).nb_cores, 2);
    }

    #[test]
    fn routes_take_either_family_and_a_link_local_port() {
        let args = parse(&[
            "--route",
            "198.51.100.0/24,10.2.0.2",
            "--route",
            "2001:db8:99::/48,fe80::1%1",
        ]);
        assert_eq!(
            args.routes,
            [
                RouteArg::V4(
                    "198.51.100.0/24".parse().expect("cidr"),
                    Ipv4Addr::new(10, 2, 0, 2)
                ),
                RouteArg::V6(
                    "2001:db8:99::/48".parse().expect("cidr"),
                    "fe80::1".parse().expect("ip"),
                    Some(1)
                ),
            ]
        );
        assert!(parse_route("10.0.0.0/8").is_err());
        assert!(parse_route("10.0.0.0/8,fe80::1").is_err());
    }

    #[test]
    fn an_mtu_below_ipv6_minimum_is_refused() {
        let refused = Cli::try_parse_from(["app", "--mtu", "1279"]);
        assert!(refused.is_err());
    }
}
