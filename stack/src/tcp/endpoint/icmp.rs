//! ICMP and ICMPv6 errors about our TCP segments (RFC 5927): the quoted
//! segment's 4-tuple must name a connection and its sequence number be in
//! flight, or the error is dropped and counted (a blind attacker knows
//! neither). "Fragmentation needed" and packet too big then record the path
//! MTU and lower the connection's MSS, sending what was lost again at once
//! (path MTU discovery, RFC 1191 / RFC 8201); a destination unreachable
//! aborts a connection still in SYN-SENT; anything else is a soft error.
//!
//! Runs on the owning lcore for ICMP errors only (not per data packet): the
//! IP layer's path-MTU table may grow here, within its bound.

use super::*;

/// The smallest IPv4 path MTU a "fragmentation needed" can set: 576, the
/// datagram every IPv4 host must accept (RFC 791, RFC 1122 3.3.3), so the
/// MSS never goes below 536, TCP's default without the option (RFC 9293
/// 3.7.1). RFC 1191 allows down to 68 and Linux stops at 552
/// (`min_pmtu`), clearing DF below it; we never fragment TCP, and a floor at
/// the default MSS keeps a forged error from shrinking segments to a few
/// bytes (RFC 5927 7). Reports below it (and old routers' 0) count as 576.
pub(crate) const MIN_PATH_MTU4: usize = 576;

/// The smallest IPv6 path MTU: the minimum link MTU (RFC 8200 5, RFC 8201
/// 4: a packet too big below it does not lower the estimate), so the MSS
/// never goes below 1220.
pub(crate) const MIN_PATH_MTU6: usize = 1280;

/// The part of an ICMP error's quote TCP needs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IcmpQuote {
    /// Our connection's 4-tuple (the quoted packet went from local to
    /// remote).
    tuple: FourTuple,
    /// The quoted segment's sequence number.
    seq: Seq,
    /// The quoted packet's length as sent (its IP header's length field).
    sent: usize,
}

impl IcmpQuote {
    /// From the quoted packet's addresses (ours, the peer's), the first 8
    /// bytes of its TCP header (ports and sequence number: all a quote is
    /// sure to hold, RFC 792) and its length as sent.
    pub(crate) fn new((ours, peer): (IpAddr, IpAddr), head: &[u8], sent: usize) -> IcmpQuote {
        let word = |i: usize| u16::from_be_bytes([head[i], head[i + 1]]);
        IcmpQuote {
            tuple: FourTuple {
                local: SocketAddr::new(ours, word(0)),
                remote: SocketAddr::new(peer, word(2)),
            },
            seq: Seq(u32::from_be_bytes([head[4], head[5], head[6], head[7]])),
            sent,
        }
    }
}

/// What an ICMP error means to TCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IcmpKind {
    /// "Fragmentation needed" or packet too big: the next hop's MTU, as
    /// reported.
    TooBig(usize),
    /// A destination unreachable: how a connect fails on it.
    Unreachable(TcpError),
    /// Time exceeded, parameter problem: soft errors only.
    Soft,
}

impl<B: Buf, H: Copy> Endpoint<B, H> {
    /// An ICMP(v6) error quoting one of our TCP segments (see the module
    /// documentation).
    pub(crate) fn icmp_error<O: SegmentOut<Buf = B, Hop = H>>(
        &mut self,
        ip: &mut O,
        now: Instant,
        quote: IcmpQuote,
        kind: IcmpKind,
    ) {
        let Some(found) = self.table.lookup(&quote.tuple) else {
            return ip.counters().count_drop(DropReason::TcpIcmpNoConnection);
        };
        if found.owner() != self.owner {
            return ip.counters().count_drop(DropReason::TcpIcmpOtherLcore);
        }
        let id = found.id();
        let Some(conn) = self.peek(id) else {
            return ip.counters().count_drop(DropReason::TcpIcmpNoConnection);
        };
        if !conn.quoted_in_flight(quote.seq) {
            return ip.counters().count_drop(DropReason::TcpIcmpOutOfWindow);
        }
        match kind {
            IcmpKind::TooBig(reported) => {
                // The router could not forward the quoted packet, so the MTU it
                // reports is below that packet's size; one that is not names
                // no MTU this segment exceeded (RFC 5927 7.2: forged or
                // confused).
                if reported >= quote.sent {
                    return ip.counters().count_drop(DropReason::TcpIcmpOutOfWindow);
                }
                ip.counters().count(Stat::TcpIcmpTooBigs);
                let remote = quote.tuple.remote.ip();
                let (floor, ip_len) = match remote {
                    IpAddr::V4(_) => (MIN_PATH_MTU4, 20),
                    IpAddr::V6(_) => (MIN_PATH_MTU6, 40),
                };
                let mtu = reported.max(floor);
                ip.learn_path_mtu(remote, mtu, now);
                let path_mss = (mtu - ip_len - TCP_LEN) as u16;
                if self.conn(id).is_some_and(|c| c.lower_mss(path_mss)) {
                    ip.counters().count(Stat::TcpMssLowered);
                    self.after_activity(ip, now, id);
                }
            }
            IcmpKind::Unreachable(error) => {
                if self.conn(id).is_some_and(|c| c.unreachable(error)) {
                    ip.counters().count(Stat::TcpIcmpAborts);
                    self.after_activity(ip, now, id);
                } else {
                    ip.counters().count(Stat::TcpIcmpSoftErrors);
                }
            }
            IcmpKind::Soft => ip.counters().count(Stat::TcpIcmpSoftErrors),
        }
    }
}
