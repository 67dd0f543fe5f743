//! IGMP version 3 (RFC 3376) as a group member, on each link: the IPv4
//! groups sockets joined there (`Link::groups4`, `membership`) are
//! reported to the link's routers, so that a router or a snooping switch
//! sends us their traffic. Built as `mld` is for IPv6, on the same state
//! (`Reports`) and the same random delays.
//!
//! - *State changes* ([`run`], on the home pipeline's timer): a group that
//!   appears in `groups4` (its first socket joined) is reported with a
//!   CHANGE_TO_EXCLUDE_MODE record (all sources), one that leaves it (its
//!   last socket left or closed) with CHANGE_TO_INCLUDE_MODE; each report
//!   is sent at once and repeated [`ROBUSTNESS`] - 1 times at random
//!   intervals up to [`UNSOLICITED_REPORT_INTERVAL`] (RFC 3376 5.1).
//!   224.0.0.1 is never reported (RFC 3376 5).
//! - *Queries* ([`input`], from any pipeline): checked (checksum, a length
//!   some version has, TTL 1, a group field of 0 or a group; else dropped,
//!   `IgmpInvalid`), then answered after a random delay up to the query's
//!   Max Resp Time with a MODE_IS_EXCLUDE record per group asked about
//!   (all of them for a general query), pending answers merged as RFC 3376
//!   5.2 says. A group-and-source-specific query is answered as a
//!   group-specific one (we listen to every source: the answer that says
//!   so is the same record).
//! - *Older queriers* (RFC 3376 7.2.1): an IGMPv2 query puts the link in
//!   IGMPv2 compatibility mode, an IGMPv1 one in IGMPv1 mode, for
//!   [`OLDER_VERSION_QUERIER_PRESENT`]: joins and answers are then IGMPv2
//!   (or v1) reports, each to its group; a leave is one IGMPv2 leave to
//!   224.0.0.2 (IGMPv1 has none). Another member's report does not
//!   suppress ours (RFC 3376 7.2.1 has v3 hosts never suppress).
//!
//! Every message leaves with TTL 1, TOS 0xc0 (Internetwork Control) and
//! the IP Router Alert option (RFC 3376 4), from the link's first IPv4
//! address (0.0.0.0 without one, RFC 3376 4.2.13); IGMPv3 reports to
//! 224.0.0.22. Not per packet: no cost on the data paths.

use super::buffers::new_frame;
use super::icmp::IcmpIn;
use super::mld::{delay_key, random_delay};
use super::state::{multicast_mac4, Listening, ALL_SYSTEMS};
use super::transmit::Out;
use super::Core;
use crate::counters::{DropReason, Stat};
use crate::port::{Buf, Port};
use crate::time::{Duration, Instant};
use crate::wire::checksum;
use crate::wire::ethernet::{EtherType, EthernetFrame, HEADER_LEN as ETH_LEN};
use crate::wire::igmp::{emit_report, emit_v2, msg_type, record_type, verify_checksum};
use crate::wire::igmp::{IgmpQuery, ALL_IGMPV3_ROUTERS, ALL_ROUTERS, ROUTER_ALERT};
use crate::wire::igmp::{RECORD_LEN, REPORT_HEADER_LEN, V2_LEN};
use crate::wire::ipv4::{field, protocol, HEADER_LEN as IP_LEN};
use core::net::Ipv4Addr;

/// RFC 3376 8.1's default Robustness Variable: each state change is
/// reported this many times.
pub(crate) const ROBUSTNESS: u8 = 2;

/// RFC 3376 8.11's Unsolicited Report Interval: the longest wait between
/// the reports of one state change.
pub(crate) const UNSOLICITED_REPORT_INTERVAL: Duration = Duration::from_secs(1);

/// RFC 3376 8.12's Older Version Querier Present Timeout with the default
/// Robustness Variable (2), Query Interval (125 s) and Query Response
/// Interval (10 s).
pub(crate) const OLDER_VERSION_QUERIER_PRESENT: Duration = Duration::from_secs(2 * 125 + 10);

/// IGMP messages carry this TTL (RFC 3376 4), and queries must come with it.
const IGMP_TTL: u8 = 1;

/// Internetwork Control precedence (RFC 3376 4).
const IGMP_TOS: u8 = 0xc0;

/// Mixed into the delays' salt so IPv4 groups never share MLD's.
const SALT_V4: u64 = 0x6967_6d70_7633_0000;

/// True if IGMP reports `group` (every group but all-systems).
fn reported(group: Ipv4Addr) -> bool {
    group.is_multicast() && group != ALL_SYSTEMS
}

/// `group` on `link` folded to a salt for the random delays.
fn salt(group: Ipv4Addr, link: usize) -> u64 {
    SALT_V4 ^ u64::from(group.to_bits()) ^ (link as u64) << 32
}

/// An IGMP message received on `link`: a query is validated and its
/// answer scheduled a random delay ahead unless one already is by then
/// (RFC 3376 5.2); anything else is counted and dropped.
pub(super) fn input<B: Buf>(
    core: &mut Core<B>,
    link: usize,
    now: Instant,
    buf: &B,
    message: &IcmpIn<Ipv4Addr>,
) {
    let data = buf.data();
    let Some(bytes) = data.get(message.start..message.end) else {
        return core.lcore.counters.count_drop(DropReason::IgmpInvalid);
    };
    let ttl = data.get(ETH_LEN + field::TTL).copied();
    if bytes.len() < V2_LEN || !verify_checksum(bytes) || ttl != Some(IGMP_TTL) {
        return core.lcore.counters.count_drop(DropReason::IgmpInvalid);
    }
    if bytes[0] != msg_type::QUERY || !core.shared.config.igmp {
        // Other members' reports and leaves: a v3 host never suppresses
        // its own for them (RFC 3376 7.2.1); nothing to do.
        return core.lcore.counters.count_drop(DropReason::IgmpIgnored);
    }
    let query = match IgmpQuery::parse(bytes) {
        Ok(query) if query.group.is_unspecified() || query.group.is_multicast() => query,
        _ => return core.lcore.counters.count_drop(DropReason::IgmpInvalid),
    };
    core.lcore.counters.count(Stat::IgmpInQueries);
    if query.version < 3 {
        older_querier(core, link, now, query.version);
    }
    let general = query.group.is_unspecified();
    let wait = random_delay(
        delay_key(core),
        salt(query.group, link),
        now,
        query.max_response,
    );
    let due = now + wait;
    let Some(igmp) = core.shared.links.get(link).map(|l| &l.igmp) else {
        return;
    };
    if igmp.general_due.is_some_and(|d| d <= due) {
        return; // the pending general answer comes first and says it all
    }
    if general {
        return core
            .shared
            .edit(|shared| shared.links[link].igmp.general_due = Some(due));
    }
    let asked = |l: &Listening<Ipv4Addr>| l.member && l.group == query.group;
    match igmp.groups.iter().find(|l| asked(l)) {
        Some(l) if l.query_due.is_none_or(|d| d > due) => {}
        _ => return, // not ours to report, or answered sooner anyway
    }
    core.shared.edit(|shared| {
        let groups = &mut shared.links[link].igmp.groups;
        if let Some(l) = groups.iter_mut().find(|l| asked(l)) {
            l.query_due = Some(due);
        }
    });
}

/// An IGMPv1 or v2 querier (`version`) was heard on `link`: that version
/// for the next [`OLDER_VERSION_QUERIER_PRESENT`] (the shared state written
/// at most once a second, however many such queries come).
fn older_querier<B: Buf>(core: &mut Core<B>, link: usize, now: Instant, version: u8) {
    let until = now + OLDER_VERSION_QUERIER_PRESENT;
    let Some(igmp) = core.shared.links.get(link).map(|l| &l.igmp) else {
        return;
    };
    let known = if version == 1 {
        igmp.oldest_until
    } else {
        igmp.v1_until
    };
    if known.is_none_or(|known| known + Duration::from_secs(1) < until) {
        core.shared.edit(|shared| {
            let igmp = &mut shared.links[link].igmp;
            match version {
                1 => igmp.oldest_until = Some(until),
                _ => igmp.v1_until = Some(until),
            }
        });
    }
}

/// IGMP's timer on `link`: joins and leaves of `groups4` noticed, and the
/// state change reports and query answers whose time has come sent.
pub(super) fn run<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
) {
    let Some(here) = (core.shared.links.get(link)).filter(|_| core.shared.config.igmp) else {
        return;
    };
    let igmp = &here.igmp;
    let listed = |g: Ipv4Addr| igmp.groups.iter().any(|l| l.member && l.group == g);
    let joined = (here.groups4.iter()).any(|m| reported(m.group) && !listed(m.group));
    let member = |g: Ipv4Addr| here.groups4.iter().any(|m| m.group == g);
    let left = (igmp.groups.iter()).any(|l| l.member && !member(l.group));
    let due = |at: Option<Instant>| at.is_some_and(|at| now >= at);
    let any_due = due(igmp.general_due)
        || (igmp.groups.iter())
            .any(|l| l.changes_left > 0 && now >= l.change_due || due(l.query_due));
    if !(joined || left || any_due) {
        return;
    }
    let key = delay_key(core);
    let v1 = igmp.oldest_until.is_some_and(|until| now < until);
    let v2 = !v1 && igmp.v1_until.is_some_and(|until| now < until);
    // Decided under the lock, sent after it.
    let mut changes = Vec::new();
    let mut current = Vec::new();
    core.shared.edit(|shared| {
        let here = &mut shared.links[link];
        let wanted: Vec<Ipv4Addr> = (here.groups4.iter())
            .map(|m| m.group)
            .filter(|&g| reported(g))
            .collect();
        let igmp = &mut here.igmp;
        let changed = |l: &mut Listening<Ipv4Addr>, member: bool| {
            l.member = member;
            l.changes_left = ROBUSTNESS;
            l.change_due = now;
            l.query_due = None;
        };
        for &group in &wanted {
            match igmp.groups.iter_mut().find(|l| l.group == group) {
                Some(l) if l.member => {}
                Some(l) => changed(l, true),
                None => igmp.groups.push(Listening {
                    group,
                    member: true,
                    changes_left: ROBUSTNESS,
                    change_due: now,
                    query_due: None,
                }),
            }
        }
        for l in (igmp.groups.iter_mut()).filter(|l| l.member && !wanted.contains(&l.group)) {
            changed(l, false);
        }
        let general = due(igmp.general_due);
        if general {
            igmp.general_due = None;
        }
        for l in &mut igmp.groups {
            if l.changes_left > 0 && now >= l.change_due {
                l.changes_left -= 1;
                if (v1 || v2) && !l.member {
                    l.changes_left = 0; // IGMPv2 leaves once, IGMPv1 never
                }
                let wait = random_delay(key, salt(l.group, link), now, UNSOLICITED_REPORT_INTERVAL);
                l.change_due = now + wait.max(Duration::from_millis(1));
                changes.push((
                    if l.member {
                        record_type::CHANGE_TO_EXCLUDE_MODE
                    } else {
                        record_type::CHANGE_TO_INCLUDE_MODE
                    },
                    l.group,
                ));
            }
            if l.member && (general || due(l.query_due)) {
                l.query_due = None;
                current.push((record_type::MODE_IS_EXCLUDE, l.group));
            }
        }
        igmp.groups.retain(|l| l.member || l.changes_left > 0);
    });
    if v1 || v2 {
        for (kind, group) in changes.into_iter().chain(current) {
            send_v2(core, out, link, kind, group, v1);
        }
        return;
    }
    send_reports(core, out, link, &changes);
    send_reports(core, out, link, &current);
}

/// Sends what an IGMPv3 record of `kind` about `group` says as IGMPv2
/// does (a leave to all-routers for a left group, else a report to the
/// group), or as IGMPv1 does (`v1`: reports only).
fn send_v2<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    kind: u8,
    group: Ipv4Addr,
    v1: bool,
) {
    let leave = kind == record_type::CHANGE_TO_INCLUDE_MODE;
    let (kind, dst, stat) = match (leave, v1) {
        (true, true) => return,
        (true, false) => (msg_type::LEAVE, ALL_ROUTERS, Stat::IgmpOutLeaves),
        (false, true) => (msg_type::REPORT_V1, group, Stat::IgmpOutV2Reports),
        (false, false) => (msg_type::REPORT_V2, group, Stat::IgmpOutV2Reports),
    };
    let emit = |message: &mut [u8]| emit_v2(message, kind, group);
    send_igmp(core, out, link, dst, (V2_LEN, emit), stat);
}

/// Sends `records` on `link` in as few IGMPv3 reports as the link's MTU
/// allows.
fn send_reports<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    records: &[(u8, Ipv4Addr)],
) {
    let Some(mtu) = core.shared.links.get(link).map(|l| l.mtu) else {
        return;
    };
    let headers = IP_LEN + ROUTER_ALERT.len() + REPORT_HEADER_LEN;
    let per_report = (mtu.saturating_sub(headers) / RECORD_LEN).max(1);
    for chunk in records.chunks(per_report) {
        let len = REPORT_HEADER_LEN + RECORD_LEN * chunk.len();
        let emit = |message: &mut [u8]| emit_report(message, chunk);
        let stat = Stat::IgmpOutV3Reports;
        send_igmp(core, out, link, ALL_IGMPV3_ROUTERS, (len, emit), stat);
    }
}

/// Sends one IGMP message on `link` to `dst`: `emit` writes its `len`
/// bytes (checksum included); TTL 1, TOS 0xc0, the Router Alert option,
/// from the link's first address; counts `stat`.
fn send_igmp<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    dst: Ipv4Addr,
    (message_len, emit): (usize, impl FnOnce(&mut [u8])),
    stat: Stat,
) {
    let Some(here) = core.shared.links.get(link) else {
        return;
    };
    let our_mac = here.mac;
    let src = here
        .addresses
        .first()
        .map_or(Ipv4Addr::UNSPECIFIED, |a| a.addr);
    let header_len = IP_LEN + ROUTER_ALERT.len();
    let total = header_len + message_len;
    let ident = core.ident();
    let Some(mut buf) = new_frame(&core.lcore.counters, out, link, ETH_LEN + total) else {
        return;
    };
    let frame = buf.data_mut();
    let mut eth = EthernetFrame::new_unchecked(&mut *frame);
    eth.set_dst(multicast_mac4(dst));
    eth.set_src(our_mac);
    eth.set_ethertype(EtherType::Ipv4);
    let ip = &mut frame[ETH_LEN..ETH_LEN + header_len];
    ip[0] = 0x40 | (header_len / 4) as u8;
    ip[1] = IGMP_TOS;
    ip[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    ip[4..6].copy_from_slice(&ident.to_be_bytes());
    ip[6..8].copy_from_slice(&[0, 0]);
    ip[8] = IGMP_TTL;
    ip[9] = protocol::IGMP;
    ip[10..12].copy_from_slice(&[0, 0]);
    ip[12..16].copy_from_slice(&src.octets());
    ip[16..20].copy_from_slice(&dst.octets());
    ip[IP_LEN..].copy_from_slice(&ROUTER_ALERT);
    let sum = checksum::checksum(ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    emit(&mut frame[ETH_LEN + header_len..]);
    core.lcore.counters.count(stat);
    core.lcore.counters.count(Stat::IpOutRequests);
    out.push(link, buf, &core.lcore.counters);
}
