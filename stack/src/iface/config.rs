//! How an interface is set up: its links (one per port, each with a MAC,
//! addresses and an MTU) and the settings they share, and the typed errors
//! a bad configuration gives.

use crate::keys::Keys;
use crate::neighbor::NeighborConfig;
use crate::port::{ChecksumStatus, MacAddr};
use crate::reassembly::ReassemblyConfig;
use crate::route::{Ipv4Cidr, Ipv6Cidr};
use crate::wire::ipv6::link_local_from_mac;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Most links (ports) one interface drives.
pub const MAX_LINKS: usize = 8;

/// How checksums of received packets are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChecksumPolicy {
    /// Trust the device's verdict when it gives one; verify in software
    /// otherwise.
    TrustOffload,
    /// Always verify in software.
    Software,
}

impl ChecksumPolicy {
    /// Whether a received checksum passes: under
    /// [`ChecksumPolicy::TrustOffload`] a device's verdict (good or bad)
    /// stands and `verify` runs only when it gave none; under
    /// [`ChecksumPolicy::Software`] `verify` always decides. The one
    /// decision every protocol and both families take.
    #[inline(always)]
    pub fn accepts(self, offload: ChecksumStatus, verify: impl FnOnce() -> bool) -> bool {
        match self.device_verdict(offload) {
            Some(verdict) => verdict,
            None => verify(),
        }
    }

    /// The device's verdict, when this policy lets it stand; `None` when
    /// the checksum must be verified in software. The same decision as
    /// [`ChecksumPolicy::accepts`], for the hand-tuned fast paths, which
    /// keep the verification inline rather than behind a closure.
    #[inline(always)]
    pub fn device_verdict(self, offload: ChecksumStatus) -> Option<bool> {
        match (self, offload) {
            (ChecksumPolicy::TrustOffload, ChecksumStatus::Good) => Some(true),
            (ChecksumPolicy::TrustOffload, ChecksumStatus::Bad) => Some(false),
            _ => None,
        }
    }
}

/// The IPv4 TTL and IPv6 hop limit of packets the stack originates (Linux's
/// default for both).
pub(crate) const DEFAULT_HOP_LIMIT: u8 = 64;

/// The TTL of a datagram to `dst`: 1 to a multicast group, which then
/// stays on the link (Linux's `IP_MULTICAST_TTL` default, RFC 1112 6.1),
/// else [`DEFAULT_HOP_LIMIT`].
#[inline]
pub(crate) fn hop_limit_to4(dst: Ipv4Addr) -> u8 {
    if dst.is_multicast() {
        1
    } else {
        DEFAULT_HOP_LIMIT
    }
}

/// The hop limit of a packet to `dst`: 1 to a multicast group (Linux's
/// `IPV6_MULTICAST_HOPS` default, RFC 3493 5.2), else [`DEFAULT_HOP_LIMIT`].
#[inline]
pub(crate) fn hop_limit_to6(dst: Ipv6Addr) -> u8 {
    if dst.is_multicast() {
        1
    } else {
        DEFAULT_HOP_LIMIT
    }
}

/// One port of an interface. Links are numbered in the order given; that
/// number is the port of a route and the device of SO_BINDTODEVICE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkConfig {
    /// The port's MAC address.
    pub mac: MacAddr,
    /// Local addresses with their prefix lengths (each adds a connected
    /// route through this link).
    pub addresses: Vec<Ipv4Cidr>,
    /// Largest IPv4 packet the link carries (bigger ones are fragmented).
    pub mtu: usize,
    /// IPv6 addresses configured on the link (global or unique local), in
    /// addition to the link-local one.
    pub addresses6: Vec<Ipv6Cidr>,
    /// Run IPv6 on the link: a link-local address derived from the MAC
    /// (fe80::/64, modified EUI-64), Neighbor Discovery, ICMPv6.
    pub ipv6: bool,
}

impl LinkConfig {
    /// A link with one address, a 1500-byte MTU and IPv6 link-local only.
    pub fn new(mac: MacAddr, address: Ipv4Cidr) -> LinkConfig {
        LinkConfig {
            mac,
            addresses: vec![address],
            mtu: 1500,
            addresses6: Vec::new(),
            ipv6: true,
        }
    }

    /// Every IPv6 address of the link: the link-local one first (if IPv6
    /// runs), then the configured ones.
    pub fn all_addresses6(&self) -> Vec<Ipv6Cidr> {
        if !self.ipv6 {
            return Vec::new();
        }
        let link_local = Ipv6Cidr {
            addr: link_local_from_mac(self.mac),
            len: 64,
        };
        core::iter::once(link_local)
            .chain(
                self.addresses6
                    .iter()
                    .copied()
                    .filter(|a| a.addr != link_local.addr),
            )
            .collect()
    }
}

/// How an interface is set up.
#[derive(Debug, Clone)]
pub struct InterfaceConfig {
    /// The ports, in link order (at least one, at most [`MAX_LINKS`]).
    pub links: Vec<LinkConfig>,
    /// Default gateway, if any (on the connected network of some link).
    pub gateway: Option<Ipv4Addr>,
    /// Receive checksum policy.
    pub checksum: ChecksumPolicy,
    /// ICMP errors allowed per second (and burst) before rate limiting.
    pub icmp_errors_per_sec: u64,
    /// Neighbour cache tunables (each link has its own cache).
    pub neighbor: NeighborConfig,
    /// Fragment reassembly tunables.
    pub reassembly: ReassemblyConfig,
    /// The secrets of the stack's hashes (ISNs, timestamp offsets,
    /// ephemeral ports, flow hashes). `None`, the default: fresh ones from
    /// the operating system's random source when the interface is made.
    /// `Some` only where runs must repeat ([`Keys::for_testing`]).
    pub keys: Option<Keys>,
    /// Extra transmit attempts before the unsent tail is dropped.
    pub tx_retries: u32,
    /// Duplicate address detection (RFC 4862 5.4): solicitations sent for
    /// each IPv6 address before it is used (1 by default; 0 turns it off
    /// and addresses are used at once). Until then an address is
    /// tentative: not answered for, not used as a source; if another node
    /// claims it, it is never used ([`super::Interface::duplicates6`]).
    pub dad_transmits: u8,
    /// Take a default IPv6 route from router advertisements (off by
    /// default): a router solicitation goes out once the link-local address
    /// is in use, and each advertisement with a non-zero router lifetime
    /// installs `::/0` through its sender for that long (unless a static
    /// default route exists).
    pub accept_ra: bool,
    /// Multicast Listener Discovery (RFC 3810, on by default): each IPv6
    /// link's solicited-node groups are reported to its routers when
    /// joined and left, and queries are answered, so that switches that
    /// snoop MLD keep forwarding our neighbour solicitations. Off, no
    /// report is sent and queries are dropped (`Icmp6Unhandled`).
    pub mld: bool,
    /// IGMP (RFC 3376, on by default): the IPv4 groups sockets join
    /// (`Interface::udp_join`) are reported to each link's routers when
    /// joined and left, and queries are answered, in IGMPv1/v2 form while
    /// such a querier is heard. Off, no report is sent and queries are
    /// dropped (`IgmpIgnored`); joined groups are still received.
    pub igmp: bool,
    /// TCP tunables.
    pub tcp: crate::tcp::TcpConfig,
}

impl InterfaceConfig {
    /// One link with one address, defaults for everything else.
    pub fn new(mac: MacAddr, address: Ipv4Cidr) -> InterfaceConfig {
        InterfaceConfig::with_links(vec![LinkConfig::new(mac, address)])
    }

    /// Several links, defaults for everything else.
    pub fn with_links(links: Vec<LinkConfig>) -> InterfaceConfig {
        InterfaceConfig {
            links,
            gateway: None,
            checksum: ChecksumPolicy::TrustOffload,
            icmp_errors_per_sec: 1000,
            neighbor: NeighborConfig::default(),
            reassembly: ReassemblyConfig::default(),
            keys: None,
            tx_retries: 4,
            dad_transmits: 1,
            accept_ra: false,
            mld: true,
            igmp: true,
            tcp: crate::tcp::TcpConfig::default(),
        }
    }
}

/// Why an interface cannot be set up as asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// No link, or more than [`MAX_LINKS`].
    LinkCount(usize),
    /// A link has no address.
    NoAddress {
        /// The link.
        link: usize,
    },
    /// An IPv4 address that cannot be an interface address (see
    /// [`Ipv4Cidr::is_host_address`]: not unicast, or its prefix's network
    /// or broadcast address).
    BadAddress(Ipv4Cidr),
    /// An IPv6 address that cannot be an interface address (multicast,
    /// unspecified, loopback, IPv4-mapped), or IPv6 addresses on a link
    /// with IPv6 turned off.
    BadAddress6(Ipv6Addr),
    /// An MTU below IPv4's minimum of 68 bytes (or above 65535).
    BadMtu {
        /// The link.
        link: usize,
        /// The MTU given.
        mtu: usize,
    },
    /// The same address on two links (or twice on one).
    DuplicateAddress(Ipv4Addr),
    /// The same IPv6 address on two links (or twice on one).
    DuplicateAddress6(Ipv6Addr),
    /// A gateway outside every link's connected networks.
    GatewayNotOnLink(Ipv4Addr),
    /// A gateway that is one of the stack's own addresses (a route through
    /// it would ask the link for our own MAC).
    GatewayIsOurs(IpAddr),
    /// A link number the interface does not have.
    NoSuchLink(usize),
    /// An IPv6 gateway that is neither on a link's prefixes nor a
    /// link-local address with its link known.
    Gateway6NotOnLink(Ipv6Addr),
    /// The operating system's random source gave no keys.
    NoRandomness(getrandom::Error),
    /// More pipelines (polling lcores) than one stack takes.
    TooManyPipelines(usize),
}

impl core::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ConfigError::LinkCount(n) => {
                write!(f, "an interface drives 1 to {MAX_LINKS} ports, not {n}")
            }
            ConfigError::NoAddress { link } => {
                write!(
                    f,
                    "port {link} has no IPv4 address: give it one (--ip ADDR/PREFIX)"
                )
            }
            ConfigError::BadMtu { link, mtu } => {
                write!(f, "port {link}: MTU {mtu} is outside 68..=65535")
            }
            ConfigError::DuplicateAddress(ip) => write!(f, "address {ip} is configured twice"),
            ConfigError::DuplicateAddress6(ip) => write!(f, "address {ip} is configured twice"),
            ConfigError::BadAddress(cidr) => write!(
                f,
                "{cidr} cannot be an interface address (multicast, broadcast, unspecified, \
                 loopback or reserved, or the network's or broadcast address of its prefix)"
            ),
            ConfigError::BadAddress6(ip) => write!(
                f,
                "{ip} cannot be an interface address (multicast, unspecified, loopback or \
                 IPv4-mapped, or IPv6 is off on its port)"
            ),
            ConfigError::GatewayNotOnLink(ip) => write!(
                f,
                "gateway {ip} is on none of the ports' networks: \
                 give a gateway inside an --ip prefix"
            ),
            ConfigError::GatewayIsOurs(ip) => write!(
                f,
                "gateway {ip} is one of the stack's own addresses: \
                 give another host on the port's network"
            ),
            ConfigError::NoSuchLink(link) => write!(f, "there is no port {link}"),
            ConfigError::NoRandomness(e) => write!(
                f,
                "the system's random source failed ({e}): the stack draws its ISN and hash \
                 keys from it, check that getrandom(2) or /dev/urandom works here"
            ),
            ConfigError::TooManyPipelines(most) => write!(
                f,
                "one stack runs on at most {most} polling lcores: give fewer (--nb-cores)"
            ),
            ConfigError::Gateway6NotOnLink(ip) => write!(
                f,
                "gateway {ip} is on none of the ports' IPv6 prefixes: give a gateway inside an \
                 --ip prefix, or a link-local one with its port (fe80::1%1)"
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

/// Checks a configuration's links: count, addresses, MTUs.
pub(super) fn validate(config: &InterfaceConfig) -> Result<(), ConfigError> {
    let count = config.links.len();
    if count == 0 || count > MAX_LINKS {
        return Err(ConfigError::LinkCount(count));
    }
    let mut seen: Vec<Ipv4Addr> = Vec::new();
    let mut seen6: Vec<Ipv6Addr> = Vec::new();
    for (link, l) in config.links.iter().enumerate() {
        if l.addresses.is_empty() && l.addresses6.is_empty() {
            return Err(ConfigError::NoAddress { link });
        }
        for a in &l.addresses6 {
            let ip = a.addr;
            if !l.ipv6
                || ip.is_multicast()
                || ip.is_unspecified()
                || ip.is_loopback()
                || ip.to_ipv4_mapped().is_some()
            {
                return Err(ConfigError::BadAddress6(ip));
            }
        }
        for a in l.all_addresses6() {
            // Link-local addresses repeat across links only if MACs do.
            if seen6.contains(&a.addr) && !a.addr.is_unicast_link_local() {
                return Err(ConfigError::DuplicateAddress6(a.addr));
            }
            seen6.push(a.addr);
        }
        if !(68..=65535).contains(&l.mtu) {
            return Err(ConfigError::BadMtu { link, mtu: l.mtu });
        }
        for a in &l.addresses {
            if !a.is_host_address() {
                return Err(ConfigError::BadAddress(*a));
            }
            if seen.contains(&a.addr) {
                return Err(ConfigError::DuplicateAddress(a.addr));
            }
            seen.push(a.addr);
        }
    }
    Ok(())
}
