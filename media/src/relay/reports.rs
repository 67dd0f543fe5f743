//! The relay's own RTCP: receiver reports (RFC 3550 6.4.2) that a leg
//! sends its peer about what that peer sent, at the interval of 6.2/6.3
//! ([`rtcp_interval`]: the 5 s minimum, halved before the first report,
//! times a random factor in [0.5, 1.5], over `e - 3/2`), computed from the
//! session bandwidth (64 kbit/s, G.711, unless configured).
//!
//! In echo mode the relay is its senders' media endpoint, so it always
//! reports; in relay mode it does so when asked
//! ([`super::RelayOptions::rtcp_reports`]), as an RTP translator with an
//! SSRC of its own may (RFC 3550 7.1/7.2, RFC 7667 3.2.1). Each leg has
//! its own SSRC; a report is an RR with one block per SSRC the leg tracks
//! that has not said BYE (fraction lost since the last report, cumulative
//! loss, extended highest sequence number, jitter, LSR/DLSR from that
//! source's last SR), then an SDES CNAME (`relay-<ssrc in hex>`), as 6.1
//! asks of every compound. It goes from the leg's RTCP socket (its RTP
//! socket under rtcp-mux) to where the leg's RTCP goes.
//!
//! Membership ([`super::membership`]): a leg's session members are the
//! relay itself, the SSRCs it tracks that have not said BYE and have not
//! timed out (6.3.5: nothing heard, RTP or RTCP, for 5 deterministic
//! intervals), and RTCP-only participants (SSRCs heard only in SR/RR, two
//! at most); its senders are the members that sent RTP within two
//! intervals. A BYE heard on the leg (`LegState::heard_bye`, from the RTCP
//! path) takes its sources out for good; a timeout until they are heard
//! again. Either way they leave the report blocks.
//!
//! Timing ([`Timer`]): a leg is scheduled once it has a tracked SSRC (its
//! first report an initial interval later). At each expiry the interval is
//! recomputed from the current membership and average size with a fresh
//! random factor (6.3.6, timer reconsideration): the report goes out only
//! if the last one (or the start) is at least that long ago, else the
//! timer moves to that point. A BYE that shrinks the membership pulls the
//! timer in (6.3.4, reverse reconsideration), as does a timeout, checked
//! at every expiry once the next one is set. The timers are checked from
//! the relay's poll by a round-robin cursor over the session slots, at
//! most [`ReportConfig::sessions_per_poll`] sessions per poll, so the cost
//! per poll does not grow with the number of sessions (a report is late by
//! at most one sweep: `sessions / sessions_per_poll` polls). Time is
//! `ctx.now()` (a BYE's arrival time for reverse reconsideration);
//! randomness comes from the relay's seeded generator, drawn only for the
//! sessions with a timer to start or expired.
//!
//! When sessions end, [`Relay::say_bye`] sends each reporting leg's last
//! compound with a BYE (6.6).
//!
//! Invariants: no allocation and no panic; a report that cannot be sent is
//! counted (`reports_failed`) and the leg rescheduled like after a sent one;
//! a source that said BYE or timed out gets no report block and is not
//! counted as a member.

use super::membership::timeouts;
use super::timer::{Expiry, Timer};
use super::{LegState, Relay};
use crate::rtp::{
    deterministic_interval, rtcp_interval, update_avg_rtcp_size, write_bye, write_receiver_report,
    write_sdes_cname, IntervalParams, ReportBlock,
};
use crate::LegSockets;
use arrayvec::ArrayVec;
use core::net::SocketAddr;
use dpstack_stack::iface::{Interface, LcoreContext};
use dpstack_stack::port::{Buf, Port};
use dpstack_stack::time::Instant;
use dpstack_stack::udp::SocketId;

/// The RTCP senders' share of the session bandwidth (RFC 3550 6.2).
pub const RTCP_FRACTION: f64 = 0.05;
/// IPv4 and UDP headers, counted in RTCP packet sizes (6.3.3).
const HEADERS_V4: usize = 20 + 8;
/// IPv6 and UDP headers.
const HEADERS_V6: usize = 40 + 8;
/// Longest CNAME we write: `relay-` and 8 hex digits.
const CNAME_LEN: usize = 14;

/// What the report interval depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportConfig {
    /// The session bandwidth in bits per second (RTCP gets 5 % of it).
    pub session_bandwidth: u32,
    /// Seed of the random factors and of the legs' SSRCs.
    pub seed: u64,
    /// Sessions whose timers one poll examines.
    pub sessions_per_poll: u32,
}

impl Default for ReportConfig {
    fn default() -> ReportConfig {
        ReportConfig {
            // G.711: 64 kbit/s of payload.
            session_bandwidth: 64_000,
            seed: 0x005e_ed0f_7e1a_4a11,
            sessions_per_poll: 32,
        }
    }
}

/// One leg's report state.
#[derive(Debug, Clone, Copy)]
pub struct ReportState {
    /// Our SSRC toward this leg's peer.
    ssrc: u32,
    /// When reports go out (6.3's tp, tn, pmembers, initial).
    timer: Timer,
    /// 6.3.3's average compound RTCP size, headers included.
    avg_size: f64,
    /// A BYE went out: the leg reports no more.
    said_bye: bool,
}

impl ReportState {
    /// A leg that reports as `ssrc`.
    pub fn new(ssrc: u32) -> ReportState {
        ReportState {
            ssrc,
            timer: Timer::new(),
            // Our own compound with one block: RR 32 + SDES 24, plus headers.
            avg_size: (32 + 24 + HEADERS_V4) as f64,
            said_bye: false,
        }
    }

    /// Our SSRC toward this leg's peer.
    pub fn ssrc(&self) -> u32 {
        self.ssrc
    }

    /// When the next report is due, once scheduled.
    pub fn next_due(&self) -> Option<Instant> {
        self.timer.next_due()
    }

    /// The report timer.
    pub fn timer(&self) -> &Timer {
        &self.timer
    }

    /// Notes an RTCP packet of `size` bytes received on the leg (6.3.3).
    pub(crate) fn heard_rtcp(&mut self, size: usize, v6: bool) {
        let headers = if v6 { HEADERS_V6 } else { HEADERS_V4 };
        self.avg_size = update_avg_rtcp_size(self.avg_size, size + headers);
    }
}

impl LegState {
    /// A BYE heard on the leg at `now` from `sources` (RFC 3550 6.3.4):
    /// those the leg tracks leave its membership, and if it shrank the
    /// report timer is pulled in (reverse reconsideration). RTCP path: no
    /// allocation.
    pub(crate) fn heard_bye(&mut self, sources: impl Iterator<Item = u32>, now: Instant) {
        let mut left = false;
        for ssrc in sources {
            left |= self.mark_left(ssrc);
        }
        if left {
            let members = Group::of(self).members;
            self.reports.timer.members_left(now, members);
        }
    }

    /// RFC 3550 6.3.5 at `now`: members silent for `M * Td` time out,
    /// members without RTP for `2 * Td` stop counting as senders, and if
    /// the membership shrank the report timer is pulled in (reverse
    /// reconsideration, as for a BYE).
    fn time_out_members(&mut self, config: &ReportConfig, now: Instant) {
        let receiver = IntervalParams {
            we_sent: false,
            initial: false,
            ..params(config, &self.reports, Group::of(self))
        };
        let (member_timeout, sender_timeout) = timeouts(deterministic_interval(&receiver));
        if self.check_membership(now, member_timeout, sender_timeout) {
            let members = Group::of(self).members;
            self.reports.timer.members_left(now, members);
        }
    }
}

/// A leg's RTCP session as the interval sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Group {
    /// Its members: the tracked SSRCs that are members, the RTCP-only
    /// participants, and ourselves.
    members: u32,
    /// Those of them that send RTP (never ourselves: `we_sent` is false).
    senders: u32,
}

impl Group {
    fn of(leg: &LegState) -> Group {
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Group {
            members: count(leg.member_count()).saturating_add(1),
            senders: count(leg.sender_count()),
        }
    }
}

/// The interval's inputs for a leg whose session is `group`.
fn params(config: &ReportConfig, state: &ReportState, group: Group) -> IntervalParams {
    IntervalParams {
        members: group.members,
        senders: group.senders,
        rtcp_bandwidth: f64::from(config.session_bandwidth) * RTCP_FRACTION / 8.0,
        we_sent: false,
        avg_rtcp_size: state.avg_size,
        initial: state.timer.is_initial(),
    }
}

/// True if the leg's timer is to be started or has expired at `now`.
fn timer_work(leg: &LegState, now: Instant) -> bool {
    leg.has_streams()
        && !leg.reports.said_bye
        && leg.reports.timer.next_due().is_none_or(|at| at <= now)
}

/// One leg's timer at `now`, with two random draws: started once the leg
/// hears a source; at expiry reconsidered (6.3.6) and, if still due, a
/// report sent through `send` and the next one scheduled; then silent
/// members timed out (6.3.5).
pub(super) fn run_timer(
    leg: &mut LegState,
    sockets: &LegSockets,
    config: &ReportConfig,
    now: Instant,
    random: [u64; 2],
    send: &mut impl FnMut(SocketId, SocketAddr, &[u8]) -> bool,
) {
    if !timer_work(leg, now) {
        return;
    }
    let group = Group::of(leg);
    let p = params(config, &leg.reports, group);
    let interval = rtcp_interval(&p, factor(random[0]));
    let timer = &mut leg.reports.timer;
    if timer.next_due().is_none() {
        timer.start(now, interval, p.members);
        return;
    }
    if timer.expire(now, interval, p.members) == Expiry::Report {
        send_compound(leg, sockets, now, false, send);
        // The average size now counts this report, and it was not the first.
        let after = IntervalParams {
            initial: false,
            ..params(config, &leg.reports, group)
        };
        let next = rtcp_interval(&after, factor(random[1]));
        leg.reports.timer.sent(now, next);
    }
    // 6.3.5 at every expiry (at least once per interval, as it asks), once
    // the next expiry is set: a shrunk membership then pulls that one in.
    leg.time_out_members(config, now);
}

/// A uniform factor in [0.5, 1.5] from 64 random bits.
fn factor(random: u64) -> f64 {
    // The top 53 bits: exactly representable.
    0.5 + (random >> 11) as f64 / (1u64 << 53) as f64
}

impl Relay {
    /// Examines the next few sessions' report timers: starts those of
    /// legs that started hearing a source, reconsiders the expired ones
    /// and sends the reports still due.
    pub(crate) fn run_reports<P: Port>(&mut self, ctx: &mut LcoreContext<'_, P>) {
        let slots = self.table.slot_count();
        if slots == 0 {
            return;
        }
        let now = ctx.now();
        let config = self.options.reports;
        let visits = config.sessions_per_poll.clamp(1, slots);
        let mut send = |from, to, payload: &[u8]| ctx.send_to(from, to, payload).is_ok();
        for _ in 0..visits {
            let slot = self.cursor % slots;
            self.cursor = (slot + 1) % slots;
            let busy = self
                .table
                .slot_mut(slot)
                .is_some_and(|(_, session)| session.legs.iter().any(|l| timer_work(l, now)));
            if !busy {
                continue;
            }
            let random = [
                [self.next_random(), self.next_random()],
                [self.next_random(), self.next_random()],
            ];
            let Some((legs, session)) = self.table.slot_mut(slot) else {
                continue;
            };
            let legs = session.legs.iter_mut().zip(legs.iter());
            for ((leg, sockets), random) in legs.zip(random) {
                run_timer(leg, sockets, &config, now, random, &mut send);
            }
        }
    }
}

/// The longest compound a leg writes: RR with a block per tracked SSRC,
/// SDES CNAME, BYE.
const COMPOUND_LEN: usize = 8 + 24 * super::SSRCS_PER_LEG + 12 + CNAME_LEN + 4 + 8;

/// Writes one leg's compound into `buf`: an RR (a block per member SSRC
/// with news), its SDES CNAME, and with `bye` a BYE for its SSRC (RFC 3550
/// 6.6: last, after a report). Returns its length.
fn write_compound(
    leg: &mut LegState,
    now: Instant,
    bye: bool,
    buf: &mut [u8; COMPOUND_LEN],
) -> Option<usize> {
    let ssrc = leg.reports.ssrc;
    let mut blocks: ArrayVec<ReportBlock, { super::SSRCS_PER_LEG }> = ArrayVec::new();
    for stream in leg.members_mut() {
        if let Some(block) = stream.report_block(now) {
            blocks.push(block);
        }
    }
    let mut cname = [0u8; CNAME_LEN];
    cname[..6].copy_from_slice(b"relay-");
    for (i, digit) in cname[6..].iter_mut().enumerate() {
        let nibble = (ssrc >> (28 - 4 * i)) & 0xf;
        *digit = b"0123456789abcdef"[nibble as usize];
    }
    let rr = write_receiver_report(buf, ssrc, &blocks).ok()?;
    let sdes = write_sdes_cname(&mut buf[rr..], ssrc, &cname).ok()?;
    let end = if bye {
        rr + sdes + write_bye(&mut buf[rr + sdes..], &[ssrc]).ok()?
    } else {
        rr + sdes
    };
    Some(end)
}

/// Writes and sends one leg's receiver report (RR + SDES CNAME, and a BYE
/// with `bye`) through `send(from, to, payload)`, counting it.
fn send_compound(
    leg: &mut LegState,
    sockets: &LegSockets,
    now: Instant,
    bye: bool,
    send: &mut impl FnMut(SocketId, SocketAddr, &[u8]) -> bool,
) -> bool {
    let mut buf = [0u8; COMPOUND_LEN];
    let written = write_compound(leg, now, bye, &mut buf);
    let dst = leg.rtcp_destination(sockets.is_mux());
    let from = leg.rtcp_sender(*sockets);
    let counters = leg.counters_mut();
    let (Some(len), Some(dst)) = (written, dst) else {
        counters.reports_failed = counters.reports_failed.saturating_add(1);
        return false;
    };
    let sent = send(from, dst, &buf[..len]);
    if sent {
        counters.reports_sent = counters.reports_sent.saturating_add(1);
    } else {
        counters.reports_failed = counters.reports_failed.saturating_add(1);
    }
    let headers = if dst.is_ipv6() {
        HEADERS_V6
    } else {
        HEADERS_V4
    };
    leg.reports.avg_size = update_avg_rtcp_size(leg.reports.avg_size, len + headers);
    sent
}

impl Relay {
    /// Says goodbye (RFC 3550 6.6) on every leg that reports: a last RR +
    /// SDES + BYE for its SSRC to where its RTCP goes, so the peer drops
    /// the relay from its session at once instead of timing it out. Call
    /// before [`Relay::stop`] (control path; `ports` in link order). Returns
    /// how many BYEs left.
    pub fn say_bye<B: Buf, P: Port<Buf = B>>(
        &mut self,
        iface: &mut Interface<B>,
        ports: &mut [P],
        now: Instant,
    ) -> usize {
        let mut send =
            |from, to, payload: &[u8]| iface.send_to_ports(ports, now, from, to, payload).is_ok();
        let mut sent = 0;
        for slot in 0..self.table.slot_count() {
            let Some((legs, session)) = self.table.slot_mut(slot) else {
                continue;
            };
            for (leg, sockets) in session.legs.iter_mut().zip(legs.iter()) {
                // A leg reports once it is scheduled (it heard a source).
                let scheduled = leg.reports.timer.next_due().is_some();
                if scheduled && send_compound(leg, sockets, now, true, &mut send) {
                    leg.reports.timer.stop();
                    leg.reports.said_bye = true;
                    sent += 1;
                }
            }
        }
        sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factors_are_uniform_in_range() {
        assert_eq!(factor(0), 0.5);
        assert!(factor(u64::MAX) <= 1.5 && factor(u64::MAX) > 1.499);
        assert_eq!(factor(1 << 63), 1.0);
    }

    #[test]
    fn a_g711_leg_gets_the_minimum_interval() {
        let state = ReportState::new(1);
        let group = Group {
            members: 2,
            senders: 1,
        };
        let p = params(&ReportConfig::default(), &state, group);
        // 400 B/s of RTCP, two members: 2 * 84 / 400 = 0.42 s, under the
        // 2.5 s initial minimum: 2.5 / (e - 1.5) = 2.052 s at factor 1.
        assert_eq!((p.members, p.senders), (2, 1));
        assert_eq!(p.rtcp_bandwidth, 400.0);
        assert_eq!(rtcp_interval(&p, 1.0).as_millis(), 2052);
    }
}
