//! Multicast Listener Discovery version 2 (RFC 3810) as a listener, on
//! each IPv6 link: the groups the link joined (`Link::groups6`: each
//! address's solicited-node group, which RFC 4861 7.2.1 makes a node join;
//! never all-nodes, RFC 3810 6) are reported to the link's routers, so
//! that a switch snooping MLD keeps sending us the solicitations for our
//! addresses.
//!
//! - *State changes* ([`run`], on the home pipeline's timer): a group that
//!   appears in `groups6` or among the groups its sockets joined
//!   (`socket_groups6`, `membership`) is reported with a CHANGE_TO_EXCLUDE_MODE record
//!   (joined, all sources), one that leaves it with CHANGE_TO_INCLUDE_MODE
//!   (left); each report is sent at once and repeated [`ROBUSTNESS`] - 1
//!   times at random intervals up to [`UNSOLICITED_REPORT_INTERVAL`] (RFC
//!   3810 6.1).
//! - *Queries* ([`query`], from any pipeline): valid only from a link-local
//!   address, with hop limit 1 and the Router Alert option (RFC 3810
//!   5.1.14; else dropped, `MldInvalid`); answered after a random delay up
//!   to the query's Maximum Response Delay with a MODE_IS_EXCLUDE record
//!   per group asked about (all of them for a general query), the pending
//!   answers merged as RFC 3810 6.2 says.
//! - *MLDv1 routers* (RFC 3810 8.2.1): an MLDv1 query puts the link in
//!   MLDv1 compatibility mode for [`OLDER_VERSION_QUERIER_PRESENT`]: joins
//!   and answers are then MLDv1 reports, each to its group, and a leave is
//!   one MLDv1 done to all-routers (RFC 2710). Another listener's report
//!   does not suppress ours (RFC 2710 4's optional saving).
//!
//! Reports leave from the link-local address, or from `::` while it is
//! tentative (RFC 3810 5.2.13), to ff02::16 with hop limit 1 behind the
//! Router Alert option. The random delays are a keyed hash of the
//! interface's `Keys::jitter`, the group and the time, so a run with test
//! keys repeats. Not per packet: no cost on the data paths.

use super::buffers::new_frame;
use super::icmp::IcmpIn;
use super::transmit::Out;
use super::{Core, Listening, ALL_NODES};
use crate::counters::{DropReason, Stat};
use crate::port::{Buf, Port};
use crate::time::{Duration, Instant};
use crate::wire::ethernet::{EtherType, EthernetFrame, HEADER_LEN as ETH_LEN};
use crate::wire::icmpv6::{msg_type, Icmpv6Packet};
use crate::wire::ipv6::{multicast_mac, next_header};
use crate::wire::ipv6::{Ipv6Header, Ipv6Packet, HEADER_LEN as IP6_LEN};
use crate::wire::mld::{emit_report, emit_v1, has_router_alert, record_type, MldQuery};
use crate::wire::mld::{ALL_MLDV2_ROUTERS, RECORD_LEN, REPORT_HEADER_LEN};
use crate::wire::mld::{QUERY_V1_LEN, ROUTER_ALERT_HOP_BY_HOP};
use core::net::Ipv6Addr;

/// RFC 3810 9.1's default Robustness Variable: each state change is
/// reported this many times.
pub(crate) const ROBUSTNESS: u8 = 2;

/// RFC 3810 9.11's Unsolicited Report Interval: the longest wait between
/// the reports of one state change.
pub(crate) const UNSOLICITED_REPORT_INTERVAL: Duration = Duration::from_secs(1);

/// RFC 3810 9.12's Older Version Querier Present Timeout with the default
/// Robustness Variable (2), Query Interval (125 s) and Query Response
/// Interval (10 s): how long one MLDv1 query keeps the link in MLDv1 mode.
pub(crate) const OLDER_VERSION_QUERIER_PRESENT: Duration = Duration::from_secs(2 * 125 + 10);

/// ff02::2, the all-routers group an MLDv1 done goes to (RFC 2710 3).
const ALL_ROUTERS: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 2);

/// MLD messages carry this hop limit (RFC 3810 5).
const MLD_HOP_LIMIT: u8 = 1;

/// Mixed into `Keys::jitter` so the delays tell nothing of its other uses.
const DELAY_KEY: u64 = 0x6d6c_6476_325f_6a69;

/// True if MLD reports `group`: neither all-nodes nor of a scope below
/// link-local (RFC 3810 6).
fn reported(group: Ipv6Addr) -> bool {
    group.is_multicast() && group.segments()[0] & 0x000f >= 2 && group != ALL_NODES
}

/// A delay in `[0, most]`, at millisecond grain: a keyed hash of `salt`
/// and the time.
pub(super) fn random_delay(key: u64, salt: u64, now: Instant, most: Duration) -> Duration {
    let most = most.as_millis().min(u128::from(u64::MAX - 1)) as u64;
    // splitmix64's finalizer over the key, the salt and the time.
    let mut z = (key ^ DELAY_KEY ^ salt.rotate_left(29)).wrapping_add(now.as_nanos());
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    Duration::from_millis(z % (most + 1))
}

/// `group` folded to a salt for [`random_delay`].
fn salt(group: Ipv6Addr, link: usize) -> u64 {
    let bits = group.to_bits();
    (bits as u64) ^ ((bits >> 64) as u64) ^ link as u64
}

/// The key of the interface's delays.
pub(super) fn delay_key<B: Buf>(core: &Core<B>) -> u64 {
    core.shared.config.keys.as_ref().map_or(0, |k| k.jitter)
}

/// A multicast listener query received on `link` (its ICMPv6 checksum
/// checked): validated (RFC 3810 5.1.14), then an answer scheduled a
/// random delay ahead unless one already is by then (RFC 3810 6.2).
pub(super) fn query<B: Buf>(
    core: &mut Core<B>,
    link: usize,
    now: Instant,
    buf: &B,
    message: &IcmpIn<Ipv6Addr>,
) {
    if !core.shared.config.mld {
        return core.lcore.counters.count_drop(DropReason::Icmp6Unhandled);
    }
    let valid = message.src.is_unicast_link_local() && came_as_mld(buf, message.start);
    let query = match MldQuery::parse(&buf.data()[message.start..message.end]) {
        Ok(query) if valid => query,
        _ => return core.lcore.counters.count_drop(DropReason::MldInvalid),
    };
    let general = query.group.is_unspecified();
    if !general && !query.group.is_multicast() {
        return core.lcore.counters.count_drop(DropReason::MldInvalid);
    }
    core.lcore.counters.count(Stat::Icmp6InGroupMembQueries);
    if query.version == 1 {
        older_querier(core, link, now);
    }
    let wait = random_delay(
        delay_key(core),
        salt(query.group, link),
        now,
        query.max_response_delay,
    );
    let due = now + wait;
    let Some(mld) = core.shared.links.get(link).map(|l| &l.mld) else {
        return;
    };
    if mld.general_due.is_some_and(|d| d <= due) {
        return; // the pending general answer comes first and says it all
    }
    if general {
        return core
            .shared
            .edit(|shared| shared.links[link].mld.general_due = Some(due));
    }
    let asked = |l: &Listening| l.member && l.group == query.group;
    match mld.groups.iter().find(|l| asked(l)) {
        Some(l) if l.query_due.is_none_or(|d| d > due) => {}
        _ => return, // not ours to report, or answered sooner anyway
    }
    core.shared.edit(|shared| {
        let groups = &mut shared.links[link].mld.groups;
        if let Some(l) = groups.iter_mut().find(|l| asked(l)) {
            l.query_due = Some(due);
        }
    });
}

/// An MLDv1 querier was heard on `link`: MLDv1 for the next
/// [`OLDER_VERSION_QUERIER_PRESENT`] (the shared state written at most once
/// a second, however many such queries come).
fn older_querier<B: Buf>(core: &mut Core<B>, link: usize, now: Instant) {
    let until = now + OLDER_VERSION_QUERIER_PRESENT;
    let Some(mld) = core.shared.links.get(link).map(|l| &l.mld) else {
        return;
    };
    if mld
        .v1_until
        .is_none_or(|known| known + Duration::from_secs(1) < until)
    {
        core.shared
            .edit(|shared| shared.links[link].mld.v1_until = Some(until));
    }
}

/// True if the IPv6 packet in `buf` whose upper-layer message starts at
/// `start` came as MLD messages must: hop limit 1, a Router Alert option
/// in its hop-by-hop header.
fn came_as_mld<B: Buf>(buf: &B, start: usize) -> bool {
    let data = buf.data();
    let Some(ip) = data.get(ETH_LEN..).filter(|ip| ip.len() >= IP6_LEN) else {
        return false;
    };
    let ip = Ipv6Packet::new_unchecked(ip);
    let hop_by_hop = ETH_LEN + IP6_LEN;
    ip.hop_limit() == MLD_HOP_LIMIT
        && ip.next_header() == next_header::HOP_BY_HOP
        && data.get(hop_by_hop..start).is_some_and(has_router_alert)
}

/// MLD's timer on `link`: joins and leaves of `groups6` noticed, and the
/// state change reports and query answers whose time has come sent.
pub(super) fn run<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
) {
    let Some(here) = core
        .shared
        .links
        .get(link)
        .filter(|_| core.shared.config.mld)
    else {
        return;
    };
    let mld = &here.mld;
    let listed = |g: Ipv6Addr| mld.groups.iter().any(|l| l.member && l.group == g);
    let joined = (here
        .groups6
        .iter()
        .chain(here.socket_groups6.iter().map(|m| &m.group)))
    .any(|&g| reported(g) && !listed(g));
    let left = (mld.groups.iter()).any(|l| l.member && !here.joined(l.group));
    let due = |at: Option<Instant>| at.is_some_and(|at| now >= at);
    let any_due = due(mld.general_due)
        || (mld.groups.iter())
            .any(|l| l.changes_left > 0 && now >= l.change_due || due(l.query_due));
    if !(joined || left || any_due) {
        return;
    }
    let key = delay_key(core);
    let v1 = mld.v1_until.is_some_and(|until| now < until);
    // Decided under the lock, sent after it.
    let mut changes = Vec::new();
    let mut current = Vec::new();
    core.shared.edit(|shared| {
        let here = &mut shared.links[link];
        // The link's own groups and its sockets'.
        let groups6: Vec<Ipv6Addr> = (here.groups6.iter().copied())
            .chain(here.socket_groups6.iter().map(|m| m.group))
            .collect();
        let mld = &mut here.mld;
        let changed = |l: &mut Listening, member: bool| {
            l.member = member;
            l.changes_left = ROBUSTNESS;
            l.change_due = now;
            l.query_due = None;
        };
        for &group in groups6.iter().filter(|&&g| reported(g)) {
            match mld.groups.iter_mut().find(|l| l.group == group) {
                Some(l) if l.member => {}
                Some(l) => changed(l, true),
                None => mld.groups.push(Listening {
                    group,
                    member: true,
                    changes_left: ROBUSTNESS,
                    change_due: now,
                    query_due: None,
                }),
            }
        }
        for l in (mld.groups.iter_mut()).filter(|l| l.member && !groups6.contains(&l.group)) {
            changed(l, false);
        }
        let general = due(mld.general_due);
        if general {
            mld.general_due = None;
        }
        for l in &mut mld.groups {
            if l.changes_left > 0 && now >= l.change_due {
                l.changes_left -= 1;
                if v1 && !l.member {
                    l.changes_left = 0; // MLDv1 says done once
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
        mld.groups.retain(|l| l.member || l.changes_left > 0);
    });
    if v1 {
        for (kind, group) in changes.into_iter().chain(current) {
            send_v1(core, out, link, kind, group);
        }
        return;
    }
    send_reports(core, out, link, &changes);
    send_reports(core, out, link, &current);
}

/// Sends what an MLDv2 record of `kind` about `group` says as MLDv1 does:
/// a done for a leave (to all-routers), else a report (to the group).
fn send_v1<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    kind: u8,
    group: Ipv6Addr,
) {
    let (kind, dst, stat) = if kind == record_type::CHANGE_TO_INCLUDE_MODE {
        let stat = Stat::Icmp6OutGroupMembReductions;
        (msg_type::MLD_DONE, ALL_ROUTERS, stat)
    } else {
        let stat = Stat::Icmp6OutGroupMembResponses;
        (msg_type::MLD_REPORT_V1, group, stat)
    };
    let emit = |message: &mut [u8]| emit_v1(message, kind, group);
    send_mld(core, out, link, dst, (QUERY_V1_LEN, emit), stat);
}

/// Sends `records` on `link` in as few MLDv2 reports as the link's MTU
/// allows.
fn send_reports<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    records: &[(u8, Ipv6Addr)],
) {
    let Some(mtu) = core.shared.links.get(link).map(|l| l.mtu6) else {
        return;
    };
    let headers = IP6_LEN + ROUTER_ALERT_HOP_BY_HOP.len() + REPORT_HEADER_LEN;
    let per_report = (mtu.saturating_sub(headers) / RECORD_LEN).max(1);
    for chunk in records.chunks(per_report) {
        let len = REPORT_HEADER_LEN + RECORD_LEN * chunk.len();
        let emit = |message: &mut [u8]| emit_report(message, chunk);
        let stat = Stat::Icmp6OutMldv2Reports;
        send_mld(core, out, link, ALL_MLDV2_ROUTERS, (len, emit), stat);
    }
}

/// Sends one MLD message on `link` to `dst`: `emit` writes its `len`
/// bytes; hop limit 1, the Router Alert option, from the link-local
/// address (`::` while it is tentative); counts `stat`.
fn send_mld<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    dst: Ipv6Addr,
    (message_len, emit): (usize, impl FnOnce(&mut [u8])),
    stat: Stat,
) {
    let Some(here) = core.shared.links.get(link) else {
        return;
    };
    let our_mac = here.mac;
    let src = here.link_local6().unwrap_or(Ipv6Addr::UNSPECIFIED);
    let payload_len = ROUTER_ALERT_HOP_BY_HOP.len() + message_len;
    let len = ETH_LEN + IP6_LEN + payload_len;
    let Some(mut buf) = new_frame(&core.lcore.counters, out, link, len) else {
        return;
    };
    let frame = buf.data_mut();
    let mut eth = EthernetFrame::new_unchecked(&mut *frame);
    eth.set_dst(multicast_mac(dst));
    eth.set_src(our_mac);
    eth.set_ethertype(EtherType::Ipv6);
    Ipv6Packet::new_unchecked(&mut frame[ETH_LEN..]).emit_header(&Ipv6Header {
        src,
        dst,
        next_header: next_header::HOP_BY_HOP,
        payload_len: payload_len as u16,
        hop_limit: MLD_HOP_LIMIT,
    });
    let options = ETH_LEN + IP6_LEN;
    let message_at = options + ROUTER_ALERT_HOP_BY_HOP.len();
    frame[options..message_at].copy_from_slice(&ROUTER_ALERT_HOP_BY_HOP);
    let message = &mut frame[message_at..];
    emit(message);
    Icmpv6Packet::new_unchecked(message).fill_checksum(src, dst);
    core.lcore.counters.count(stat);
    core.lcore.counters.count(Stat::Ip6OutRequests);
    out.push(link, buf, &core.lcore.counters);
}
