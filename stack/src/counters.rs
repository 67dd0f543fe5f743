//! Per-lcore protocol and drop counters, like the kernel's SNMP MIBs.
//!
//! Each [`Counters`] block belongs to one polling lcore, the only writer: a
//! bump is a relaxed load and store (no locked instruction), and any thread
//! may read a consistent-enough snapshot at any time without slowing the
//! lcore. Every packet the stack drops increments exactly one
//! [`DropReason`]. Blocks are cache-line aligned so two lcores never share
//! a line.

use core::sync::atomic::{AtomicU64, Ordering};

macro_rules! reasons {
    ($($(#[$doc:meta])* $name:ident = $text:literal,)*) => {
        /// Why the stack dropped a packet.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(usize)]
        pub enum DropReason {
            $($(#[$doc])* $name,)*
        }

        impl DropReason {
            /// Every reason, in declaration order.
            pub const ALL: &'static [DropReason] = &[$(DropReason::$name,)*];

            /// A short snake_case name for displays and metrics.
            pub const fn name(self) -> &'static str {
                match self {
                    $(DropReason::$name => $text,)*
                }
            }
        }
    };
}

reasons! {
    /// Frame shorter than an Ethernet header.
    EthTruncated = "eth_truncated",
    /// Unicast frame for another MAC, or multicast we did not join.
    EthNotForUs = "eth_not_for_us",
    /// EtherType the stack does not handle.
    EthUnknownType = "eth_unknown_type",
    /// Source MAC with the group (I/G) bit set: multicast or broadcast,
    /// which no station sends from (IEEE 802.3). Answering one would send
    /// the reply to a whole group.
    EthGroupSource = "eth_group_source",
    /// ARP packet too short or malformed.
    ArpMalformed = "arp_malformed",
    /// ARP for another hardware/protocol type or operation.
    ArpUnsupported = "arp_unsupported",
    /// ARP request for an address that is not ours.
    ArpNotForUs = "arp_not_for_us",
    /// ARP whose sender address no neighbour can have: a network or
    /// broadcast address of one of our subnets, multicast, loopback, or
    /// ours from our own MAC (our own packet looped back).
    ArpMartianSender = "arp_martian_sender",
    /// ARP from another MAC claiming one of our addresses as its own.
    ArpAddressConflict = "arp_address_conflict",
    /// IPv4 header or total length beyond the frame.
    Ipv4Truncated = "ipv4_truncated",
    /// IPv4 version or length fields invalid.
    Ipv4Malformed = "ipv4_malformed",
    /// IPv4 header checksum wrong.
    Ipv4BadChecksum = "ipv4_bad_checksum",
    /// Source address that can never be a sender (multicast, broadcast, loopback, ours).
    Ipv4MartianSource = "ipv4_martian_source",
    /// Destination is not one of our addresses (we do not forward).
    Ipv4NotForUs = "ipv4_not_for_us",
    /// A fragment that could not be queued even after evicting: no
    /// reassembly buffer free and none of ours to give back, or a datagram
    /// larger than one source may hold.
    Ipv4ReassemblyFull = "ipv4_reassembly_full",
    /// A fragment overlapped another: the whole datagram is dropped (its
    /// later fragments start a new one, as in Linux).
    Ipv4ReassemblyOverlap = "ipv4_reassembly_overlap",
    /// A fragment repeating bytes already received exactly (a duplicate):
    /// dropped alone, its datagram kept.
    Ipv4ReassemblyDuplicate = "ipv4_reassembly_duplicate",
    /// A fragment reached past the largest datagram we reassemble.
    Ipv4ReassemblyTooBig = "ipv4_reassembly_too_big",
    /// A complete datagram whose fragments mixed Not-ECT with ECT or CE
    /// (RFC 3168 5.3: dropped whole, as Linux drops it).
    Ipv4ReassemblyEcnMix = "ipv4_reassembly_ecn_mix",
    /// A fragment's length was not a multiple of 8 (and it was not the last).
    Ipv4FragmentMalformed = "ipv4_fragment_malformed",
    /// A datagram was not complete before the reassembly timeout (one count
    /// per datagram; its fragments were already counted as received).
    Ipv4ReassemblyTimeout = "ipv4_reassembly_timeout",
    /// A datagram in reassembly evicted for a new one because its source
    /// held more than its share of the reassembly memory (one count per
    /// datagram, as timeouts).
    Ipv4ReassemblyEvictedShare = "ipv4_reassembly_evicted_share",
    /// A datagram in reassembly evicted for a new one because the memory
    /// or the table was full: the oldest of the source holding the most.
    Ipv4ReassemblyEvictedMemory = "ipv4_reassembly_evicted_memory",
    /// Protocol the stack does not handle.
    Ipv4UnknownProtocol = "ipv4_unknown_protocol",
    /// ICMP message too short or with a bad checksum.
    IcmpMalformed = "icmp_malformed",
    /// ICMP type the stack does not answer.
    IcmpUnhandled = "icmp_unhandled",
    /// UDP length invalid.
    UdpMalformed = "udp_malformed",
    /// UDP checksum wrong.
    UdpBadChecksum = "udp_bad_checksum",
    /// No socket bound to the destination port.
    UdpNoSocket = "udp_no_socket",
    /// UDP datagram to a group joined on the link it came in on, for a
    /// port where no socket that joined the group on that link is bound.
    UdpNotMember = "udp_not_member",
    /// The socket's receive queue was full.
    UdpQueueFull = "udp_queue_full",
    /// A copy of a datagram to a broadcast address or a group, for one
    /// more socket that hears it, could not be made: no buffer.
    UdpCopyNoBuffer = "udp_copy_no_buffer",
    /// A socket that hears a datagram to a broadcast address or a group got
    /// no copy: more sockets hear it than one datagram is copied to
    /// (`udp::table::BROADCAST_RECEIVERS`).
    UdpFanoutLimit = "udp_fanout_limit",
    /// A hard ICMP error for a connected UDP socket was not handed over:
    /// more sockets than `iface::state::SOCKET_ERRORS` got one in a burst.
    IcmpSocketErrorOverflow = "icmp_socket_error_overflow",
    /// An ICMP error was not sent because of the rate limit.
    IcmpRateLimited = "icmp_rate_limited",
    /// No route to the destination of an outgoing packet.
    TxNoRoute = "tx_no_route",
    /// Neighbour unresolved and its wait queue full, or resolution failed.
    TxNeighborUnresolved = "tx_neighbor_unresolved",
    /// An outgoing packet to one of our own addresses (no loopback).
    TxOwnAddress = "tx_own_address",
    /// A datagram sent, forwarded or replied to port 0, refused (Linux's
    /// EINVAL): no socket can listen there.
    TxPortZero = "tx_port_zero",
    /// The device refused the packet after the retries.
    TxDeviceFull = "tx_device_full",
    /// No buffer could be allocated for an outgoing packet.
    TxNoBuffer = "tx_no_buffer",
    /// An outgoing packet that cannot be sent at its size (over 64 KiB
    /// once fragmented, or a fragment that would not fit a buffer).
    TxTooBig = "tx_too_big",
    /// A datagram an application thread queued from a socket that was
    /// closed before the lcore sent it, or that hears no IPv4 (IPv6-only)
    /// for an IPv4 destination.
    TxNoSocket = "tx_no_socket",
    /// IPv6 header or payload length beyond the frame.
    Ipv6Truncated = "ipv6_truncated",
    /// IPv6 version field wrong.
    Ipv6Malformed = "ipv6_malformed",
    /// Multicast source, or the unspecified source outside duplicate address
    /// detection.
    Ipv6BadSource = "ipv6_bad_source",
    /// The loopback address (::1) as the source or destination of a packet
    /// from the wire (RFC 4291 2.5.3), as IPv4 counts 127/8 sources, or an
    /// IPv4-mapped source (::ffff:a.b.c.d), which no node sends from.
    Ipv6Martian = "ipv6_martian",
    /// Destination is neither one of our addresses nor a group we joined.
    Ipv6NotForUs = "ipv6_not_for_us",
    /// Extension-header chain malformed, too long or past the packet.
    Ipv6BadExtensions = "ipv6_bad_extensions",
    /// An IPv6 fragment that could not be queued even after evicting (as
    /// for IPv4).
    Ipv6ReassemblyFull = "ipv6_reassembly_full",
    /// An IPv6 fragment overlapped another, or belonged to a datagram that
    /// had (RFC 5722: the whole datagram is dropped).
    Ipv6ReassemblyOverlap = "ipv6_reassembly_overlap",
    /// An IPv6 fragment repeating bytes already received exactly (RFC 5722
    /// erratum 3089: a duplicate is not an overlap): dropped alone.
    Ipv6ReassemblyDuplicate = "ipv6_reassembly_duplicate",
    /// An IPv6 fragment reached past 65,535 bytes or the reassembly buffer.
    Ipv6ReassemblyTooBig = "ipv6_reassembly_too_big",
    /// A complete IPv6 datagram whose fragments mixed Not-ECT with ECT or
    /// CE (RFC 3168 5.3).
    Ipv6ReassemblyEcnMix = "ipv6_reassembly_ecn_mix",
    /// An IPv6 fragment's length was not a multiple of 8 (and it was not
    /// the last), or it was empty.
    Ipv6FragmentMalformed = "ipv6_fragment_malformed",
    /// A first fragment without the whole header chain (RFC 7112).
    Ipv6FragmentIncomplete = "ipv6_fragment_incomplete",
    /// An IPv6 datagram not complete before the reassembly timeout.
    Ipv6ReassemblyTimeout = "ipv6_reassembly_timeout",
    /// An IPv6 datagram in reassembly evicted because its source (its /64)
    /// held more than its share.
    Ipv6ReassemblyEvictedShare = "ipv6_reassembly_evicted_share",
    /// An IPv6 datagram in reassembly evicted because the memory or the
    /// table was full.
    Ipv6ReassemblyEvictedMemory = "ipv6_reassembly_evicted_memory",
    /// An unrecognized hop-by-hop or destination option whose type says
    /// "discard" (RFC 8200 4.2).
    Ipv6BadOption = "ipv6_bad_option",
    /// Upper-layer protocol the stack does not handle over IPv6.
    Ipv6UnknownNextHeader = "ipv6_unknown_next_header",
    /// Next header 59, "no next header" (RFC 8200 4.7): nothing follows,
    /// so nothing is delivered and nothing is answered.
    Ipv6NoNextHeader = "ipv6_no_next_header",
    /// A routing header with segments left (RFC 8200 4.4): the packet is
    /// on its way to another node, and no routing type is processed here
    /// (type 0 is deprecated, RFC 5095).
    Ipv6RoutingHeader = "ipv6_routing_header",
    /// ICMPv6 message too short or with a bad checksum.
    Icmp6Malformed = "icmp6_malformed",
    /// An ICMP error quoting a packet that is not from one of our
    /// addresses.
    IcmpBadQuote = "icmp_bad_quote",
    /// An ICMPv6 error quoting a packet that is not from one of our
    /// addresses.
    Icmp6BadQuote = "icmp6_bad_quote",
    /// ICMPv6 type the stack does not answer.
    Icmp6Unhandled = "icmp6_unhandled",
    /// A TCP segment too short or with a bad data offset or options.
    TcpMalformed = "tcp_malformed",
    /// A TCP segment with a bad checksum.
    TcpBadChecksum = "tcp_bad_checksum",
    /// A TCP segment for no connection (or one that had just closed) and
    /// no listener; one that found no connection is answered with a reset
    /// unless it was one.
    TcpNoSocket = "tcp_no_socket",
    /// A TCP segment to a broadcast or group address, or that came in a
    /// link-layer broadcast or multicast frame: TCP is unicast only (Linux
    /// drops these too).
    TcpNotUnicast = "tcp_not_unicast",
    /// A SYN for a listener whose backlog of handshakes is full, or, in
    /// queue mode, a SYN or a handshake's final ACK while its accept queue
    /// is full (the half-open connection is kept for the peer's next ACK).
    TcpListenOverflow = "tcp_listen_overflow",
    /// A TCP segment for a connection another lcore owns, while that
    /// lcore's steering ring was full (it is not keeping up).
    TcpSteerRingFull = "tcp_steer_ring_full",
    /// A SYN, or the ACK returning a SYN cookie, while the stack holds
    /// `TcpConfig::max_connections`.
    TcpConnLimit = "tcp_conn_limit",
    /// A TCP segment's data dropped: its connection's receive ring had no
    /// storage and the stack's buffer memory (`TcpConfig::buffer_memory`)
    /// was spent. The peer sends it again. Linux: `TCPRcvQDrop`.
    TcpMemLimit = "tcp_mem_limit",
    /// A TCP segment refused by PAWS (RFC 7323 5.3: a timestamp older than
    /// the last one taken), answered with an ACK. Linux: `PAWSEstab`.
    TcpPawsEstab = "tcp_paws_estab",
    /// A SYN-ACK (or reset) in SYN-SENT echoing a timestamp that is not
    /// zero and none we sent: before our first SYN or after our clock now.
    /// Answered with a reset unless it was one; the connection waits for
    /// the real SYN-ACK. Linux: `PAWSActiveRejected`.
    TcpPawsActive = "tcp_paws_active",
    /// A TCP segment outside the receive window (RFC 9293 3.10.7.4, first
    /// check), answered with an ACK. Linux: `TCP_INVALID_SEQUENCE`.
    TcpOutOfWindow = "tcp_out_of_window",
    /// A TCP segment acknowledging what was never sent or older than the
    /// peer's window (RFC 5961 5.2: answered with a challenge ACK), or an
    /// unacceptable ACK in SYN-SENT or SYN-RECEIVED (answered with a
    /// reset). Linux: `TCP_ACK_UNSENT_DATA`, `TCP_TOO_OLD_ACK`,
    /// `TCP_INVALID_ACK_SEQUENCE`.
    TcpBadAck = "tcp_bad_ack",
    /// A TCP reset not exactly at `RCV.NXT` (RFC 5961 3.2): in the window,
    /// answered with a challenge ACK; outside it, dropped silently. Linux:
    /// `TCP_RESET`.
    TcpBadRst = "tcp_bad_rst",
    /// A SYN on a synchronized TCP connection (RFC 5961 4.2), answered with
    /// a challenge ACK. Linux: `TCP_INVALID_SYN`, counted as
    /// `TCPSYNChallenge`.
    TcpBadSyn = "tcp_bad_syn",
    /// A TCP segment with flags its connection's state does not take (no
    /// ACK once synchronized; neither SYN nor RST in SYN-SENT), dropped
    /// silently; at a listener, a segment with neither ACK nor RST that is
    /// no plain SYN (no flags, SYN+FIN, FIN+PSH+URG), dropped silently too.
    /// Linux: `TCP_FLAGS`.
    TcpBadFlags = "tcp_bad_flags",
    /// A TCP reset for a connection in TIME-WAIT, dropped: it does not end
    /// TIME-WAIT early (RFC 1337; Linux with `tcp_rfc1337` set).
    TcpTimeWaitRst = "tcp_time_wait_rst",
    /// An ICMP(v6) error quoting a TCP segment of no connection of ours.
    TcpIcmpNoConnection = "tcp_icmp_no_connection",
    /// An ICMP error quoting a TCP connection another lcore owns: not
    /// handed over (the owner's retransmission and path-MTU probing recover
    /// what it would have told; a learned path MTU is shared anyway).
    TcpIcmpOtherLcore = "tcp_icmp_other_lcore",
    /// An ICMP(v6) error quoting a TCP segment whose sequence number is
    /// not in flight (RFC 5927 5.1: outside `SND.UNA..SND.NXT`), or a
    /// "fragmentation needed" / packet too big whose MTU is not below the
    /// quoted packet's size: forged or stale, ignored. Linux:
    /// `OutOfWindowIcmps`.
    TcpIcmpOutOfWindow = "tcp_icmp_out_of_window",
    /// Neighbor Discovery message failing RFC 4861's validity checks.
    NdInvalid = "nd_invalid",
    /// Neighbor solicitation for an address that is not ours on that link.
    NdNotForUs = "nd_not_for_us",
    /// Neighbor Discovery message whose link-layer address option holds a
    /// multicast or broadcast MAC, which no neighbour has (ARP refuses
    /// such senders too).
    NdGroupLinkAddress = "nd_group_link_address",
    /// Multicast listener query failing RFC 3810 5.1.14's checks (not
    /// from a link-local address, hop limit not 1, no Router Alert option)
    /// or malformed (RFC 3810 8.1: a length neither MLDv1's nor MLDv2's, a
    /// group field that is neither unspecified nor multicast).
    MldInvalid = "mld_invalid",
    /// IGMP message failing RFC 3376's checks: a bad checksum, a length no
    /// version has, a TTL other than 1, a query whose group field is
    /// neither 0 nor a multicast address, or that came fragmented.
    IgmpInvalid = "igmp_invalid",
    /// IGMP message a host has nothing to do with (another member's
    /// report or leave, an unknown type) or received with IGMP off.
    IgmpIgnored = "igmp_ignored",
}

/// Number of drop reasons.
pub const DROP_REASONS: usize = DropReason::ALL.len();

macro_rules! protocol_counters {
    ($($(#[$doc:meta])* $name:ident,)*) => {
        /// Protocol counters (what went through, not what was dropped).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(usize)]
        #[allow(non_camel_case_types)]
        pub enum Stat {
            $($(#[$doc])* $name,)*
        }

        impl Stat {
            /// Every counter, in declaration order.
            pub const ALL: &'static [Stat] = &[$(Stat::$name,)*];

            /// The counter's name.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Stat::$name => stringify!($name),)*
                }
            }
        }
    };
}

protocol_counters! {
    /// Frames received.
    EthInFrames,
    /// Frames handed to the device.
    EthOutFrames,
    /// ARP requests received for our addresses.
    ArpInRequests,
    /// ARP replies received.
    ArpInReplies,
    /// Gratuitous ARP requests received (announcements by neighbours).
    ArpInGratuitous,
    /// ARP requests sent.
    ArpOutRequests,
    /// ARP replies sent.
    ArpOutReplies,
    /// IPv4 datagrams received (before validation).
    IpInReceives,
    /// IPv4 datagrams delivered to ICMP/UDP.
    IpInDelivers,
    /// Fragments received.
    IpReasmReqds,
    /// Datagrams reassembled.
    IpReasmOKs,
    /// IPv4 datagrams sent.
    IpOutRequests,
    /// Datagrams fragmented on the way out.
    IpFragOKs,
    /// Fragments created.
    IpFragCreates,
    /// ICMP echo requests received.
    IcmpInEchos,
    /// ICMP echo replies sent.
    IcmpOutEchoReps,
    /// ICMP destination-unreachable messages sent.
    IcmpOutDestUnreachs,
    /// ICMP time-exceeded messages sent (fragment reassembly timeouts).
    IcmpOutTimeExcds,
    /// ICMP errors received (unreachable, time exceeded, parameter problem).
    IcmpInErrors,
    /// UDP datagrams delivered to sockets.
    UdpInDatagrams,
    /// UDP datagrams sent.
    UdpOutDatagrams,
    /// Datagrams forwarded in their own buffer, headers rewritten in place.
    UdpForwardedInPlace,
    /// Datagrams forwarded by copying the payload (IPv4/IPv6 family change).
    UdpForwardCopies,
    /// Route lookups on the send path (connected sockets skip them).
    RouteLookups,
    /// IPv6 packets received (before validation).
    Ip6InReceives,
    /// IPv6 packets delivered to ICMPv6/UDP.
    Ip6InDelivers,
    /// IPv6 packets sent.
    Ip6OutRequests,
    /// ICMPv6 echo requests received.
    Icmp6InEchos,
    /// ICMPv6 echo replies sent.
    Icmp6OutEchoReplies,
    /// Neighbor solicitations received for our addresses.
    Icmp6InNeighborSolicits,
    /// Neighbor advertisements sent.
    Icmp6OutNeighborAdvertisements,
    /// Neighbor advertisements received.
    Icmp6InNeighborAdvertisements,
    /// ICMPv6 destination-unreachable messages sent.
    Icmp6OutDestUnreachs,
    /// ICMPv6 time-exceeded messages sent (fragment reassembly timeouts).
    Icmp6OutTimeExcds,
    /// Neighbor solicitations sent (resolving, probing, or DAD).
    Icmp6OutNeighborSolicits,
    /// IPv6 fragments received.
    Ip6ReasmReqds,
    /// IPv6 datagrams reassembled.
    Ip6ReasmOKs,
    /// IPv6 datagrams fragmented on the way out.
    Ip6FragOKs,
    /// IPv6 fragments created.
    Ip6FragCreates,
    /// ICMPv6 parameter problems sent.
    Icmp6OutParmProblems,
    /// ICMPv6 errors received (unreachable, too big, time exceeded, ...).
    Icmp6InErrors,
    /// ICMPv6 packet-too-big messages received (path MTU learned).
    Icmp6InPktTooBigs,
    /// Router solicitations sent.
    Icmp6OutRouterSolicits,
    /// Router advertisements received and accepted.
    Icmp6InRouterAdvertisements,
    /// Multicast listener queries received and accepted (RFC 3810).
    /// Linux: `Icmp6InGroupMembQueries`.
    Icmp6InGroupMembQueries,
    /// Router advertisement MTU options ignored (RFC 4861 6.3.4): below
    /// the IPv6 minimum of 1280 or above the link's own MTU. The rest of
    /// the advertisement is taken.
    Icmp6InRaMtuIgnored,
    /// MLDv2 listener reports sent (RFC 3810: state changes on joins and
    /// leaves, answers to queries). Linux: `Icmp6OutMLDv2Reports`.
    Icmp6OutMldv2Reports,
    /// MLDv1 reports sent (while an MLDv1 querier is present). Linux:
    /// `Icmp6OutGroupMembResponses`.
    Icmp6OutGroupMembResponses,
    /// MLDv1 done messages sent (a group left while an MLDv1 querier is
    /// present). Linux: `Icmp6OutGroupMembReductions`.
    Icmp6OutGroupMembReductions,
    /// IGMP membership queries received and accepted (RFC 3376; any
    /// version).
    IgmpInQueries,
    /// IGMPv3 membership reports sent (RFC 3376: state changes on joins
    /// and leaves, answers to queries).
    IgmpOutV3Reports,
    /// IGMPv1 or IGMPv2 membership reports sent (while such a querier is
    /// present, RFC 3376 7.2.1).
    IgmpOutV2Reports,
    /// IGMPv2 leave group messages sent (a group left while an IGMPv2
    /// querier is present).
    IgmpOutLeaves,
    /// Addresses that duplicate address detection found in use (unused).
    Ip6DadDuplicates,
    /// ICMP(v6) errors handed to the sockets they concern.
    IcmpErrorsToSockets,
    /// TCP segments received.
    TcpInSegs,
    /// TCP segments sent.
    TcpOutSegs,
    /// TCP connections opened by us.
    TcpActiveOpens,
    /// TCP connections accepted by a listener.
    TcpPassiveOpens,
    /// TCP connects that took a local port whose return traffic the
    /// port's RSS sends to the connecting lcore's queue
    /// (`TcpConfig::rss`).
    TcpConnectRssPlaced,
    /// TCP connects with an RSS placement (`TcpConfig::rss`) for which no
    /// fitting local port was free: another port was taken, and the
    /// return traffic arrives on another lcore's queue.
    TcpConnectRssMissed,
    /// TCP segments this lcore received for a connection another lcore's
    /// pipeline owns (or, on any lcore but the first, for no connection and
    /// no listener here: the first lcore's listeners may take it), handed
    /// to the owner through its steering ring.
    TcpSteeredOut,
    /// TCP segments another lcore handed to this one, the owner, through
    /// its steering ring.
    TcpSteeredIn,
    /// TCP resets sent.
    TcpOutRsts,
    /// TCP challenge ACKs sent (RFC 5961: to an in-window reset not at
    /// `RCV.NXT`, a SYN on a synchronized connection, an ACK of unsent or
    /// too old data); each also counts its segment's drop reason. Linux:
    /// `TCPChallengeACK`.
    TcpChallengeACK,
    /// TCP challenge ACKs not sent: the stack's budget for the second
    /// (`TcpConfig::challenge_ack_limit`, RFC 5961 7) was spent. Linux:
    /// `TCPACKSkippedChallenge`.
    TcpACKSkippedChallenge,
    /// TCP retransmission timeouts (RTO fired: sending goes back to SND.UNA).
    TcpRetransTimeouts,
    /// SYNs and handshakes' final ACKs dropped because the listener's
    /// accept queue was full (each also a `tcp_listen_overflow` drop).
    /// Linux: `ListenOverflows`.
    TcpListenOverflows,
    /// SYN-ACKs sent with a SYN cookie: the listener's backlog of
    /// handshakes was full. Linux: `SyncookiesSent`.
    TcpSyncookiesSent,
    /// Connections refused because the stack held
    /// `TcpConfig::max_connections`: SYNs and cookie ACKs dropped (each a
    /// `tcp_conn_limit` drop) and connects failed.
    TcpConnLimitReached,
    /// Connections made from a valid cookie returned in an ACK. Linux:
    /// `SyncookiesRecv`.
    TcpSyncookiesRecv,
    /// ACKs to a listener that had sent cookies recently whose cookie did
    /// not check (forged, stale or for another tuple): answered with a
    /// reset. Linux: `SyncookiesFailed`.
    TcpSyncookiesFailed,
    /// TCP zero-window probes sent (the persist timer fired). Linux:
    /// `TCPWinProbe`.
    TcpWinProbe,
    /// TCP keepalive probes sent. Linux: `TCPKeepAlive`.
    TcpKeepAlive,
    /// ICMP "fragmentation needed" and ICMPv6 packet too big taken for a
    /// TCP connection (the quote passed RFC 5927's checks).
    TcpIcmpTooBigs,
    /// TCP connections whose MSS a smaller path MTU lowered (what was in
    /// flight is sent again at once at the new size).
    TcpMssLowered,
    /// TCP connections in SYN-SENT aborted by an ICMP(v6) destination
    /// unreachable.
    TcpIcmpAborts,
    /// ICMP(v6) errors about a TCP connection taken as soft errors (RFC
    /// 1122 4.2.3.9): counted, the connection goes on.
    TcpIcmpSoftErrors,
    /// TCP loss recoveries entered with SACK (RFC 6675). Linux:
    /// `TCPSackRecovery`.
    TcpSackRecovery,
    /// TCP loss recoveries entered without SACK (NewReno). Linux:
    /// `TCPRenoRecovery`.
    TcpRenoRecovery,
    /// TCP segments retransmitted in loss recovery (not by the timer).
    /// Linux: `TCPFastRetrans`.
    TcpFastRetrans,
    /// TCP tail loss probes sent (RFC 8985 7). Linux: `TCPLossProbes`.
    TcpLossProbes,
    /// TCP D-SACKs received: the peer got a segment twice (RFC 2883).
    /// Linux: `TCPDSACKRecv`.
    TcpDSACKRecv,
    /// TCP D-SACKs sent for data already acknowledged. Linux:
    /// `TCPDSACKOldSent`.
    TcpDSACKOldSent,
    /// TCP D-SACKs sent for out-of-order data already held. Linux:
    /// `TCPDSACKOfoSent`.
    TcpDSACKOfoSent,
    /// TCP retransmissions found lost themselves (RACK: data sent after
    /// them was delivered) and sent again before the timeout. Linux:
    /// `TCPLostRetransmit`.
    TcpLostRetransmit,
    /// TCP out-of-order segments dropped: holding them would take more
    /// separate ranges than a connection keeps. Linux: `TCPOFODrop`.
    TcpOFODrop,
    /// TCP segments whose data was dropped for want of buffer memory
    /// (each also a `tcp_mem_limit` drop). Linux: `TCPRcvQDrop`.
    TcpRcvQDrop,
    /// TCP buffer growths refused because the stack's buffer memory
    /// (`TcpConfig::buffer_memory`) was spent: receive windows that stayed
    /// small, writes refused with `TcpError::NoBufferMemory`.
    TcpMemoryLimited,
    /// TCP connections whose MSS went down because full-sized segments
    /// timed out twice in a row with no ICMP error: a suspected path MTU
    /// black hole, which path MTU probing then searches up from (RFC 4821).
    TcpMtuBlackHole,
    /// TCP path MTU probes acknowledged: the MSS went up to their size.
    /// Linux: `TCPMTUPSuccess`.
    TcpMtupSuccess,
    /// TCP path MTU probes lost: the search's upper bound went below them.
    /// Linux: `TCPMTUPFail`.
    TcpMtupFail,
    /// TCP segments whose data was refused because the receive window was
    /// zero (their ACK was still taken: RFC 9293 3.10.7.4). Linux:
    /// `TCPZeroWindowDrop`.
    TcpZeroWindowDrop,
    /// Times pacing (`TcpConfig::pacing`) held a connection's next data
    /// segment until its release time.
    TcpPacingWaits,
    /// TCP data segments that arrived marked CE (congestion experienced)
    /// on connections with ECN, each echoed with ECE (RFC 3168 6.1.3).
    /// Linux counts every IP packet marked CE as `InCEPkts`.
    TcpInCE,
    /// Times a TCP connection with ECN reduced its congestion window on
    /// the peer's echo of congestion (ECE; at most once per window of data,
    /// RFC 3168 6.1.2).
    TcpEceReductions,
    /// Times a TCP connection that sent nothing for longer than its
    /// retransmission timeout had its congestion window cut back before
    /// sending again (RFC 5681 4.1, `TcpConfig::slow_start_after_idle`).
    /// Linux restarts the same way (`tcp_cwnd_restart`) but counts nothing.
    TcpCwndRestarts,
}

/// Number of protocol counters.
pub const STATS: usize = Stat::ALL.len();

/// One lcore's counters. See the module documentation.
#[derive(Debug)]
#[repr(align(64))]
pub struct Counters {
    drops: [AtomicU64; DROP_REASONS],
    stats: [AtomicU64; STATS],
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            drops: core::array::from_fn(|_| AtomicU64::new(0)),
            stats: core::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

#[inline]
fn bump(counter: &AtomicU64, by: u64) {
    // Single writer: a plain load and store, not a locked add.
    counter.store(counter.load(Ordering::Relaxed) + by, Ordering::Relaxed);
}

impl Counters {
    /// Counts one dropped packet. Owning lcore only.
    #[inline]
    pub fn count_drop(&self, reason: DropReason) {
        bump(&self.drops[reason as usize], 1);
    }

    /// Counts `by` dropped packets. Owning lcore only.
    #[inline]
    pub fn add_drops(&self, reason: DropReason, by: u64) {
        bump(&self.drops[reason as usize], by);
    }

    /// Adds `by` to a protocol counter. Owning lcore only.
    #[inline]
    pub fn add(&self, stat: Stat, by: u64) {
        bump(&self.stats[stat as usize], by);
    }

    /// Counts one event. Owning lcore only.
    #[inline]
    pub fn count(&self, stat: Stat) {
        self.add(stat, 1);
    }

    /// Drops so far for `reason` (any thread).
    pub fn dropped(&self, reason: DropReason) -> u64 {
        self.drops[reason as usize].load(Ordering::Relaxed)
    }

    /// The value of `stat` (any thread).
    pub fn get(&self, stat: Stat) -> u64 {
        self.stats[stat as usize].load(Ordering::Relaxed)
    }

    /// Total drops over every reason (any thread).
    pub fn total_dropped(&self) -> u64 {
        self.drops.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// Every non-zero counter as `(name, value)`, drops prefixed `drop_`.
    pub fn nonzero(&self) -> Vec<(String, u64)> {
        let stats = Stat::ALL
            .iter()
            .map(|&s| (s.name().to_owned(), self.get(s)));
        let drops = DropReason::ALL
            .iter()
            .map(|&r| (format!("drop_{}", r.name()), self.dropped(r)));
        stats.chain(drops).filter(|(_, v)| *v > 0).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_read_back_per_reason() {
        let c = Counters::default();
        c.count_drop(DropReason::UdpNoSocket);
        c.count_drop(DropReason::UdpNoSocket);
        c.count(Stat::IpInReceives);
        c.add(Stat::EthOutFrames, 5);
        assert_eq!(c.dropped(DropReason::UdpNoSocket), 2);
        assert_eq!(c.dropped(DropReason::EthTruncated), 0);
        assert_eq!(c.total_dropped(), 2);
        assert_eq!(c.get(Stat::EthOutFrames), 5);
        let names: Vec<String> = c.nonzero().into_iter().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            ["EthOutFrames", "IpInReceives", "drop_udp_no_socket"]
        );
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<&str> = DropReason::ALL.iter().map(|r| r.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), DROP_REASONS);
    }
}
