//! Which of a leg's tracked SSRCs are RTCP session members and senders
//! (RFC 3550 6.3.4 and 6.3.5), as pure state: times come in as arguments.
//!
//! A tracked SSRC stops being a member when its BYE is heard (for good),
//! or when it has sent neither RTP nor RTCP for `M * Td` (6.3.5: `M` =
//! [`TIMEOUT_MULTIPLIER`], `Td` the deterministic interval of a receiver);
//! it is a member again as soon as it is heard from. A member is a sender
//! while it has sent RTP within the last `2 * Td` (6.3.5 says two report
//! intervals; the deterministic one makes the check reproducible).
//!
//! RTP activity is sampled, not stamped per packet: [`Membership::check`]
//! compares each stream's packet count with the count it saw last time, so
//! the per-packet path stores nothing extra. A stream's last RTP packet is
//! therefore taken to be at the first check that sees its count move: a
//! timeout comes at most one check late, never early. The relay checks at
//! every report-timer expiry, i.e. at least once per transmission
//! interval, as 6.3.5 asks. RTCP from a tracked SSRC is stamped when it
//! arrives ([`Membership::heard_rtcp`]).
//!
//! RTCP-only participants (6.3.3 counts any SSRC heard in RTP or RTCP: a
//! receive-only endpoint sends receiver reports and no RTP) are members
//! too: up to [`LISTENERS_PER_LEG`] SSRCs heard only in SR/RR packets are
//! kept with the time they were last heard, leave on their BYE, time out
//! after `M * Td` like the rest, and are dropped from the list once they
//! send RTP (they are then a tracked stream).
//!
//! Invariants: no allocation, no panic; indexes at or beyond
//! [`SSRCS_PER_LEG`] are ignored; a BYE'd stream is never a member again;
//! an SSRC is never both a listener and a stream the leg added since.

use dpstack_stack::time::{Duration, Instant};

/// 6.3.5's `M`: members silent for this many deterministic intervals time
/// out.
pub const TIMEOUT_MULTIPLIER: u32 = 5;

/// RTCP-only participants a leg counts as members at most (more are not
/// counted).
pub const LISTENERS_PER_LEG: usize = 2;

// One bit per stream in each mask.
/// SSRCs per leg with statistics (one, plus one change of source, e.g.
/// after a re-INVITE or a transfer).
pub const SSRCS_PER_LEG: usize = 2;

const _: () = assert!(SSRCS_PER_LEG <= 8);

/// What the checks know of one stream's activity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Activity {
    /// The stream's packet count at the last check.
    packets_seen: u64,
    /// When RTP from it was last seen (its first packet, or a check that
    /// found new packets).
    last_rtp: Instant,
    /// When RTCP from it last arrived, if ever.
    last_rtcp: Option<Instant>,
}

impl Activity {
    fn last_heard(&self) -> Instant {
        self.last_rtcp
            .map_or(self.last_rtp, |at| at.max(self.last_rtp))
    }
}

/// A leg's membership state. See the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Membership {
    /// Bit i: stream i said BYE.
    left: u8,
    /// Bit i: stream i timed out as a member.
    timed_out: u8,
    /// Bit i: stream i sent no RTP within the sender timeout.
    not_sending: u8,
    activity: [Activity; SSRCS_PER_LEG],
    /// RTCP-only participants: their SSRC and when RTCP from them last
    /// arrived.
    listeners: [Option<(u32, Instant)>; LISTENERS_PER_LEG],
}

/// The bit of stream `index` (0 for an index beyond the streams).
fn bit(index: usize) -> u8 {
    if index >= SSRCS_PER_LEG {
        return 0;
    }
    u32::try_from(index)
        .ok()
        .and_then(|i| 1u8.checked_shl(i))
        .unwrap_or(0)
}

/// The timeouts of 6.3.5 for a deterministic receiver interval `td`:
/// (member timeout `M * Td`, sender timeout `2 * Td`).
pub fn timeouts(td: Duration) -> (Duration, Duration) {
    (td.saturating_mul(TIMEOUT_MULTIPLIER), td.saturating_mul(2))
}

impl Membership {
    /// Stream `index` is new: its first packet arrived at `now`.
    pub fn added(&mut self, index: usize, now: Instant) {
        let mask = !bit(index);
        self.left &= mask;
        self.timed_out &= mask;
        self.not_sending &= mask;
        if let Some(activity) = self.activity.get_mut(index) {
            *activity = Activity {
                // That packet is counted once the leg records it.
                packets_seen: 1,
                last_rtp: now,
                last_rtcp: None,
            };
        }
    }

    /// True if stream `index` is a session member.
    pub fn is_member(&self, index: usize) -> bool {
        let b = bit(index);
        b != 0 && (self.left | self.timed_out) & b == 0
    }

    /// True if stream `index` is a member that sends RTP.
    pub fn is_sender(&self, index: usize) -> bool {
        self.is_member(index) && self.not_sending & bit(index) == 0
    }

    /// Stream `index` said BYE. True if it was a member until now.
    pub fn mark_left(&mut self, index: usize) -> bool {
        let was_member = self.is_member(index);
        self.left |= bit(index);
        was_member
    }

    /// RTCP from stream `index` arrived at `now`: a member again if it had
    /// timed out (not after a BYE).
    pub fn heard_rtcp(&mut self, index: usize, now: Instant) {
        if let Some(activity) = self.activity.get_mut(index) {
            activity.last_rtcp = Some(now);
            self.timed_out &= !bit(index);
        }
    }

    /// RTCP (an SR or RR) from `ssrc`, which the leg does not track as a
    /// stream, arrived at `now`: an RTCP-only member from now on, while
    /// there is room.
    pub fn heard_listener(&mut self, ssrc: u32, now: Instant) {
        if let Some(entry) = self
            .listeners
            .iter_mut()
            .flatten()
            .find(|(s, _)| *s == ssrc)
        {
            entry.1 = now;
        } else if let Some(free) = self.listeners.iter_mut().find(|l| l.is_none()) {
            *free = Some((ssrc, now));
        }
    }

    /// `ssrc` is no RTCP-only participant any more (its BYE, or its first
    /// RTP made it a stream). True if it was one.
    pub fn forget_listener(&mut self, ssrc: u32) -> bool {
        let found = self
            .listeners
            .iter_mut()
            .find(|l| l.is_some_and(|(s, _)| s == ssrc));
        found.map(|l| l.take()).is_some()
    }

    /// How many RTCP-only participants are members.
    pub fn listener_count(&self) -> usize {
        self.listeners.iter().flatten().count()
    }

    /// The 6.3.5 check at `now`, given each tracked stream's packet count
    /// (stream `i` is the `i`th item): notes new RTP, times members and
    /// senders out, RTCP-only participants too. True if a member timed out
    /// (the membership shrank).
    pub fn check(
        &mut self,
        packets: impl Iterator<Item = u64>,
        now: Instant,
        member_timeout: Duration,
        sender_timeout: Duration,
    ) -> bool {
        let mut shrank = false;
        for (index, (count, activity)) in packets.zip(self.activity.iter_mut()).enumerate() {
            let b = bit(index);
            if count != activity.packets_seen {
                activity.packets_seen = count;
                activity.last_rtp = now;
                self.timed_out &= !b;
            }
            if now.saturating_duration_since(activity.last_rtp) > sender_timeout {
                self.not_sending |= b;
            } else {
                self.not_sending &= !b;
            }
            let silent = now.saturating_duration_since(activity.last_heard()) > member_timeout;
            if silent && (self.left | self.timed_out) & b == 0 {
                self.timed_out |= b;
                shrank = true;
            }
        }
        for listener in &mut self.listeners {
            if listener.is_some_and(|(_, at)| now.saturating_duration_since(at) > member_timeout) {
                *listener = None;
                shrank = true;
            }
        }
        shrank
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(n: u64) -> Instant {
        Instant::ZERO + Duration::from_secs(n)
    }

    const MEMBER: Duration = Duration::from_secs(25);
    const SENDER: Duration = Duration::from_secs(10);

    #[test]
    fn timeouts_are_m_and_two_deterministic_intervals() {
        assert_eq!(timeouts(Duration::from_secs(5)), (MEMBER, SENDER), "M = 5");
    }

    #[test]
    fn a_stream_still_sending_stays_a_member_and_sender() {
        let mut m = Membership::default();
        m.added(0, secs(0));
        for (t, count) in [(5, 250), (10, 500), (30, 1500), (60, 3000)] {
            assert!(!m.check([count].into_iter(), secs(t), MEMBER, SENDER));
            assert!(m.is_member(0) && m.is_sender(0), "at {t} s");
        }
    }

    #[test]
    fn rtp_silence_ends_sending_then_membership() {
        let mut m = Membership::default();
        m.added(0, secs(0));
        // Packets seen moving at the check at 5 s: last RTP taken as 5 s.
        assert!(!m.check([100].into_iter(), secs(5), MEMBER, SENDER));
        // 10 s after: not yet more than 2 Td.
        assert!(!m.check([100].into_iter(), secs(15), MEMBER, SENDER));
        assert!(m.is_sender(0));
        // 11 s after: no longer a sender, still a member.
        assert!(!m.check([100].into_iter(), secs(16), MEMBER, SENDER));
        assert!(m.is_member(0) && !m.is_sender(0));
        // 25 s after: still a member; 26 s after: timed out, once.
        assert!(!m.check([100].into_iter(), secs(30), MEMBER, SENDER));
        assert!(m.is_member(0));
        assert!(m.check([100].into_iter(), secs(31), MEMBER, SENDER));
        assert!(!m.is_member(0) && !m.is_sender(0));
        assert!(!m.check([100].into_iter(), secs(40), MEMBER, SENDER));
        // RTP again: a member and a sender at the next check.
        assert!(!m.check([101].into_iter(), secs(45), MEMBER, SENDER));
        assert!(m.is_member(0) && m.is_sender(0));
    }

    #[test]
    fn rtcp_keeps_a_member_that_stopped_sending() {
        let mut m = Membership::default();
        m.added(0, secs(0));
        m.heard_rtcp(0, secs(20));
        assert!(!m.check([1].into_iter(), secs(40), MEMBER, SENDER));
        assert!(m.is_member(0) && !m.is_sender(0));
        assert!(m.check([1].into_iter(), secs(46), MEMBER, SENDER));
        // RTCP brings a timed-out member back at once.
        m.heard_rtcp(0, secs(50));
        assert!(m.is_member(0) && !m.is_sender(0));
    }

    #[test]
    fn a_bye_is_for_good() {
        let mut m = Membership::default();
        m.added(0, secs(0));
        m.added(1, secs(0));
        assert!(m.mark_left(1));
        assert!(!m.mark_left(1), "already gone");
        m.heard_rtcp(1, secs(1));
        assert!(!m.check([2, 2].into_iter(), secs(2), MEMBER, SENDER));
        assert!(!m.is_member(1) && !m.is_sender(1));
        assert!(m.is_member(0));
        // Stream 1's silence does not shrink the membership it left.
        assert!(!m.check([3, 2].into_iter(), secs(100), MEMBER, SENDER));
        assert!(!m.is_member(1) && m.is_sender(0));
    }

    #[test]
    fn rtcp_only_participants_are_members_until_bye_timeout_or_rtp() {
        let mut m = Membership::default();
        m.heard_listener(0x51, secs(0));
        m.heard_listener(0x52, secs(0));
        m.heard_listener(0x53, secs(0));
        assert_eq!(m.listener_count(), 2, "room for two");
        m.heard_listener(0x51, secs(20));
        // 0x52 silent for more than M * Td: gone, the membership shrank.
        assert!(!m.check(core::iter::empty(), secs(25), MEMBER, SENDER));
        assert!(m.check(core::iter::empty(), secs(26), MEMBER, SENDER));
        assert_eq!(m.listener_count(), 1);
        // 0x51, heard at 20 s, leaves by BYE (or becomes a stream).
        assert!(m.forget_listener(0x51));
        assert!(!m.forget_listener(0x51));
        assert_eq!(m.listener_count(), 0);
        assert!(!m.check(core::iter::empty(), secs(60), MEMBER, SENDER));
    }

    #[test]
    fn indexes_beyond_the_streams_are_ignored() {
        let mut m = Membership::default();
        m.added(SSRCS_PER_LEG, secs(0));
        m.heard_rtcp(9, secs(1));
        assert!(!m.mark_left(64));
        assert!(!m.is_member(64) && !m.is_sender(SSRCS_PER_LEG));
    }
}
