//! One leg's RTCP transmission timer (RFC 3550 6.3, Appendix A.7's
//! `OnExpire` and the BYE case of `OnReceive`), as pure state: times and
//! freshly computed intervals come in as arguments, so the rules can be
//! tested without a network and the caller owns the clock and the random
//! factors.
//!
//! A.7's state variables: `tp` (the last report sent, or when the timer
//! started), `tn` (the next expiry), `pmembers` (the membership `tn` was
//! last computed for) and `initial` (no report sent yet).
//!
//! - [`Timer::start`]: `tp = tc`, `tn = tc + T`, `pmembers = members`.
//! - [`Timer::expire`], when `tc >= tn` (6.3.6, timer reconsideration):
//!   `T` is recomputed from the current members, senders and average size
//!   with a fresh random factor. If `tp + T <= tc` a report goes out now
//!   ([`Timer::sent`]: `tp = tc`, `tn = tc + T'`, a new interval);
//!   otherwise no report, and `tn = tp + T`. Either way `pmembers =
//!   members`. So a membership that grew since `tn` was set postpones the
//!   report instead of sending at the smaller membership's rate.
//! - [`Timer::members_left`], on a BYE (6.3.4, reverse reconsideration):
//!   if `members < pmembers`, `tn = tc + members/pmembers * (tn - tc)`,
//!   `tp = tc - members/pmembers * (tc - tp)`, `pmembers = members`: a
//!   shrunk membership brings the next report nearer.
//!
//! With a steady membership, reconsideration sends at the first redraw
//! that does not exceed the previous one, which lengthens the mean
//! interval by `e - 3/2`: the factor [`crate::rtp::rtcp_interval`] divides
//! by, so the mean is the deterministic interval.
//!
//! Invariants: no allocation, no clock read, no panic (the ratios are
//! exact integer nanoseconds, time arithmetic saturates); a postponed `tn`
//! lies after `tc`, so an expiry never repeats at the same instant.

use dpstack_stack::time::{Duration, Instant};

/// What an expiry leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// Send a report now, then [`Timer::sent`].
    Report,
    /// Not yet: the timer was moved to `tp + T`.
    Postponed,
}

/// One leg's report timer. See the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timer {
    /// `tn`: the next expiry (`None`: not started, or stopped).
    next: Option<Instant>,
    /// `tp`: when the last report went out, or when the timer started.
    last: Instant,
    /// `pmembers`: the members (ourselves included) `tn` was computed for.
    pmembers: u32,
    /// No report sent yet (6.2's halved minimum).
    initial: bool,
}

impl Default for Timer {
    fn default() -> Timer {
        Timer::new()
    }
}

impl Timer {
    /// A timer not started, before the first report.
    pub const fn new() -> Timer {
        Timer {
            next: None,
            last: Instant::ZERO,
            pmembers: 1,
            initial: true,
        }
    }

    /// `tn`, once started.
    pub fn next_due(&self) -> Option<Instant> {
        self.next
    }

    /// `tp`: the last report, or the start.
    pub fn last(&self) -> Instant {
        self.last
    }

    /// `pmembers`.
    pub fn pmembers(&self) -> u32 {
        self.pmembers
    }

    /// True before the first report.
    pub fn is_initial(&self) -> bool {
        self.initial
    }

    /// Starts at `now` for `members`, the first expiry `interval` later.
    pub fn start(&mut self, now: Instant, interval: Duration, members: u32) {
        self.last = now;
        self.next = Some(now + interval);
        self.pmembers = members;
    }

    /// The timer expired at `now` (`tn <= now`); `interval` is T
    /// recomputed for the current `members` with a fresh random factor.
    /// Decides between a report now and `tn = tp + T` (6.3.6).
    pub fn expire(&mut self, now: Instant, interval: Duration, members: u32) -> Expiry {
        self.pmembers = members;
        let due = self.last + interval;
        if due <= now {
            return Expiry::Report;
        }
        self.next = Some(due);
        Expiry::Postponed
    }

    /// A report went out at `now` (or failed to: it is rescheduled all the
    /// same); the next one `interval` later.
    pub fn sent(&mut self, now: Instant, interval: Duration) {
        self.last = now;
        self.next = Some(now + interval);
        self.initial = false;
    }

    /// Members left at `now` (a BYE), `members` (ourselves included)
    /// remain: reverse reconsideration (6.3.4) if fewer than `pmembers`.
    pub fn members_left(&mut self, now: Instant, members: u32) {
        if members >= self.pmembers {
            return;
        }
        if let Some(next) = self.next {
            let ahead = scale(next.saturating_duration_since(now), members, self.pmembers);
            self.next = Some(now + ahead);
            let behind = scale(
                now.saturating_duration_since(self.last),
                members,
                self.pmembers,
            );
            self.last = before(now, behind);
        }
        self.pmembers = members;
    }

    /// Stops the timer (the leg said BYE).
    pub fn stop(&mut self) {
        self.next = None;
    }
}

/// `d * num / den`, exact in nanoseconds (`d` itself if `den` is 0).
fn scale(d: Duration, num: u32, den: u32) -> Duration {
    let nanos = d
        .as_nanos()
        .saturating_mul(u128::from(num))
        .checked_div(u128::from(den))
        .unwrap_or(d.as_nanos());
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

/// `at - d`, or the clock's origin.
fn before(at: Instant, d: Duration) -> Instant {
    let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    Instant::from_nanos(at.as_nanos().saturating_sub(nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(n: u64) -> Instant {
        Instant::ZERO + Duration::from_secs(n)
    }

    fn d(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn an_unchanged_membership_reports_at_expiry() {
        let mut timer = Timer::new();
        timer.start(secs(100), d(4), 2);
        assert_eq!(timer.next_due(), Some(secs(104)));
        // The same T again (tp + T == tc), or a shorter one: report.
        assert_eq!(timer.expire(secs(104), d(4), 2), Expiry::Report);
        assert_eq!(timer.expire(secs(104), d(3), 2), Expiry::Report);
        timer.sent(secs(104), d(5));
        assert_eq!(
            (timer.last(), timer.next_due()),
            (secs(104), Some(secs(109)))
        );
        assert!(!timer.is_initial());
    }

    #[test]
    fn a_grown_membership_postpones_the_report_to_tp_plus_t() {
        let mut timer = Timer::new();
        timer.start(secs(0), d(10), 2);
        // Four members now: T doubled. tp + T = 20 > 10: no report.
        assert_eq!(timer.expire(secs(10), d(20), 4), Expiry::Postponed);
        assert_eq!(timer.next_due(), Some(secs(20)));
        assert_eq!((timer.last(), timer.pmembers()), (secs(0), 4));
        assert!(timer.is_initial(), "no report went out");
        // At 20 s, T is still 20 s: tp + T = 20 <= 20, report.
        assert_eq!(timer.expire(secs(20), d(20), 4), Expiry::Report);
    }

    #[test]
    fn a_bye_brings_the_next_report_nearer() {
        let mut timer = Timer::new();
        timer.start(secs(0), d(30), 3);
        // At 12 s one of three members leaves: tn = 12 + 2/3 * 18 = 24,
        // tp = 12 - 2/3 * 12 = 4.
        timer.members_left(secs(12), 2);
        assert_eq!(timer.next_due(), Some(secs(24)));
        assert_eq!((timer.last(), timer.pmembers()), (secs(4), 2));
        // No fewer members than pmembers: nothing moves.
        timer.members_left(secs(13), 2);
        timer.members_left(secs(13), 5);
        assert_eq!(timer.next_due(), Some(secs(24)));
        assert_eq!(timer.last(), secs(4));
        // An overdue timer stays due.
        timer.members_left(secs(30), 1);
        assert_eq!(timer.next_due(), Some(secs(30)));
    }

    #[test]
    fn a_timer_not_started_only_notes_the_membership() {
        let mut timer = Timer::new();
        timer.pmembers = 3;
        timer.members_left(secs(5), 2);
        assert_eq!((timer.next_due(), timer.pmembers()), (None, 2));
        timer.start(secs(1), d(2), 2);
        timer.stop();
        assert_eq!(timer.next_due(), None);
    }

    #[test]
    fn extreme_values_do_not_panic() {
        assert_eq!(
            scale(Duration::MAX, u32::MAX, 1).as_nanos(),
            u128::from(u64::MAX)
        );
        assert_eq!(scale(d(3), 1, 0), d(3));
        assert_eq!(before(secs(1), d(5)), Instant::ZERO);
        let mut timer = Timer::new();
        timer.start(Instant::from_nanos(u64::MAX), Duration::MAX, u32::MAX);
        assert_eq!(timer.next_due(), Some(Instant::from_nanos(u64::MAX)));
        timer.members_left(Instant::ZERO, 0);
        assert_eq!(
            timer.expire(Instant::ZERO, Duration::MAX, 0),
            Expiry::Postponed
        );
    }

    /// Through a leg: the relay's scheduling (`reports::run_timer`) with
    /// real intervals, report blocks and BYEs.
    mod through_a_leg {
        use super::*;
        use crate::relay::leg::tests::g711;
        use crate::relay::reports::{run_timer, ReportConfig};
        use crate::relay::LegState;
        use crate::rtp::{write_bye, write_receiver_report, Compound, RtcpPacket};
        use crate::{LatchConfig, LegSockets};
        use dpstack_stack::udp::{BindOptions, SocketId, UdpTable};
        use std::net::{Ipv4Addr, SocketAddrV4};

        /// 1280 bit/s: 8 B/s of RTCP, so the interval follows the membership:
        /// 84 B x 2 members / 8 B/s = 21 s (17.237 s at factor 1), x 3 members
        /// = 31.5 s (25.856 s).
        const SLOW: ReportConfig = ReportConfig {
            session_bandwidth: 1280,
            seed: 1,
            sessions_per_poll: 1,
        };
        /// A random draw that gives factor 1.
        const ONE: u64 = 1 << 63;

        fn ms(n: u64) -> Instant {
            Instant::from_nanos(n * 1_000_000)
        }

        fn due_ms(leg: &LegState) -> u128 {
            let due = leg.reports.next_due().expect("scheduled");
            due.saturating_duration_since(Instant::ZERO).as_millis()
        }

        /// A leg tracking `ssrcs`, each past probation.
        fn leg_hearing(ssrcs: &[u32]) -> LegState {
            let peer = "10.0.0.2:5004".parse().ok();
            let mut leg = LegState::new(LatchConfig::default(), peer, false, 0x1e9);
            for &ssrc in ssrcs {
                hear(&mut leg, ssrc);
            }
            leg
        }

        fn hear(leg: &mut LegState, ssrc: u32) {
            for seq in 1..=3u16 {
                leg.record(g711(ssrc, seq), ms(0), 8000);
            }
        }

        /// A socket id for the leg's sockets: the timer sends through the
        /// closure of [`tick`], which never looks at it.
        fn a_socket() -> SocketId {
            let local = SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 5004);
            UdpTable::new(1)
                .bind(local, BindOptions::default(), |_| true)
                .expect("a free port")
        }

        /// Runs the leg's timer at `now` with factor 1; returns the SSRCs of
        /// the report blocks of each compound sent.
        fn tick(leg: &mut LegState, now: Instant) -> Vec<Vec<u32>> {
            let sockets = LegSockets {
                rtp: a_socket(),
                rtcp: None,
            };
            let mut sent = Vec::new();
            let mut send = |_, _, payload: &[u8]| {
                let compound = Compound::new_checked(payload).expect("a valid compound");
                if let Some(RtcpPacket::ReceiverReport(rr)) = compound.packets().next() {
                    sent.push(rr.report_blocks().map(|b| b.ssrc).collect());
                }
                true
            };
            run_timer(leg, &sockets, &SLOW, now, [ONE; 2], &mut send);
            sent
        }

        #[test]
        fn a_leg_with_an_unchanged_membership_reports_at_expiry() {
            let mut leg = leg_hearing(&[0xa]);
            assert!(tick(&mut leg, ms(0)).is_empty(), "started, nothing due");
            assert_eq!(due_ms(&leg), 17_237);
            assert!(tick(&mut leg, ms(17_236)).is_empty(), "not yet due");
            // T recomputed at expiry is the same 17.237 s: tp + T <= tc.
            assert_eq!(tick(&mut leg, ms(17_238)), [[0xa]]);
            assert_eq!(leg.reports.timer().last(), ms(17_238));
            assert!(!leg.reports.timer().is_initial());
            assert_eq!(leg.counters().reports_sent, 1);
        }

        #[test]
        fn a_leg_whose_membership_grew_since_scheduling_postpones_its_report() {
            let mut leg = leg_hearing(&[0xa]);
            tick(&mut leg, ms(0));
            assert_eq!(due_ms(&leg), 17_237);
            hear(&mut leg, 0xb);
            // Three members now: T = 25.856 s, tp + T is later than now.
            assert!(tick(&mut leg, ms(17_238)).is_empty(), "postponed");
            assert_eq!(due_ms(&leg), 25_856, "tn = tp + T");
            assert_eq!(leg.reports.timer().last(), ms(0), "tp unchanged");
            assert_eq!(leg.counters().reports_sent, 0);
            assert_eq!(leg.reports.timer().pmembers(), 3);
            // Expiring again there, T is the same: the report goes, on both.
            assert_eq!(tick(&mut leg, ms(25_857)), [[0xa, 0xb]]);
            assert_eq!(leg.reports.timer().last(), ms(25_857));
            // A report of 112 B moved the average from 84 to 85.75 B:
            // 85.75 x 3 / 8 = 32.16 s, 26.394 s at factor 1.
            assert_eq!(due_ms(&leg), 25_857 + 26_394);
        }

        #[test]
        fn a_bye_on_a_leg_pulls_its_timer_in_and_drops_the_source_from_reports() {
            let mut leg = leg_hearing(&[0xa, 0xb]);
            tick(&mut leg, ms(0));
            assert_eq!(due_ms(&leg), 25_856);
            // A compound RR + BYE from 0xa, as the RTCP path hands it over.
            let mut buf = [0u8; 16];
            let rr = write_receiver_report(&mut buf, 0xa, &[]).expect("fits");
            let bye = write_bye(&mut buf[rr..], &[0xa]).expect("fits");
            let compound = Compound::new_checked(&buf[..rr + bye]).expect("valid");
            let heard = |leg: &mut LegState, at: Instant| {
                for packet in compound.packets() {
                    if let RtcpPacket::Bye(bye) = packet {
                        leg.heard_bye(bye.bye_sources(), at);
                    }
                }
            };
            heard(&mut leg, ms(10_000));
            // 3 members -> 2: tn = 10 + 2/3 x 15.856 s, tp = 10 - 2/3 x 10 s.
            assert_eq!(due_ms(&leg), 20_570);
            let tp = leg.reports.timer().last();
            assert_eq!(tp.saturating_duration_since(ms(0)).as_millis(), 3_333);
            assert_eq!((leg.member_count(), leg.reports.timer().pmembers()), (1, 2));
            // The same BYE again, or one of a source not tracked: no change.
            heard(&mut leg, ms(11_000));
            leg.heard_bye([0xc].into_iter(), ms(11_000));
            assert_eq!(due_ms(&leg), 20_570);
            // At expiry T (two members) is 17.237 s and tp + T = tn: report,
            // on 0xb only.
            assert_eq!(tick(&mut leg, ms(20_571)), [[0xb]]);
        }
    }
}
