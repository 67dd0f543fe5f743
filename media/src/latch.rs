//! Remote-address latching ("symmetric RTP", RFC 4961; rtpengine's and
//! Asterisk's `strictrtp` learning): one [`Latch`] per leg and channel
//! learns where the peer really sends from (behind a NAT that is not the
//! address signalling gave) and from then on treats the socket as
//! connected to it.
//!
//! The rule:
//! - **Learning.** A source becomes the candidate with its first packet;
//!   each further packet from the same source, whose sequence number (if
//!   the caller gives one: RTP does, RTCP does not) follows the previous
//!   one, counts once more. A packet from another source, or out of
//!   sequence, makes that packet the new candidate, counted once. When the
//!   candidate has been counted `probation` times the latch holds it: the
//!   packet that completes it is [`Verdict::Latched`], the ones before
//!   [`Verdict::Learning`]. With `probation` 1 (the default) the first
//!   packet latches, as rtpengine does; Asterisk's `probation=4` is 4.
//! - **Latched.** Packets from the peer are [`Verdict::Peer`]; packets from
//!   anyone else are [`Verdict::Foreign`], unless re-latching is on
//!   (`relatch_after`) and the peer has been silent that long: then other
//!   sources are candidates again, by the same rule, and a new peer
//!   replaces the old one ([`Latch::relatches`] counts it).
//! - **Fixed.** [`Latch::fixed`] never learns: only its peer is accepted.
//!
//! Before it latches, a latch can hold the address signalling announced
//! ([`Latch::expect`]): [`Latch::peer`] gives it, so media can be sent
//! there first, but packets from it are still learned like any other's.
//!
//! Sans-IO: the caller passes each packet's source and its receive time;
//! nothing here reads a clock, allocates or fails.

use core::net::SocketAddr;
use dpstack_stack::time::{Duration, Instant};

/// How a [`Latch`] learns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LatchConfig {
    /// Packets in a row from one source (in sequence, for RTP) that latch
    /// onto it; 0 counts as 1.
    pub probation: u8,
    /// Re-learn once the peer has been silent this long (`None`: never;
    /// once latched, only the peer is heard).
    pub relatch_after: Option<Duration>,
}

impl Default for LatchConfig {
    fn default() -> LatchConfig {
        LatchConfig {
            probation: 1,
            relatch_after: None,
        }
    }
}

/// What a latch made of one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// From the peer: accept it.
    Peer,
    /// This packet latched (or re-latched) onto its source: accept it.
    Latched,
    /// Counted towards latching onto its source, not latched yet.
    Learning,
    /// From another source than the latched peer.
    Foreign,
}

impl Verdict {
    /// True for packets from the peer (including the one that latched).
    pub fn accepted(self) -> bool {
        matches!(self, Verdict::Peer | Verdict::Latched)
    }
}

/// A source being learned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Candidate {
    source: SocketAddr,
    count: u8,
    /// The sequence number the next packet must carry to count.
    next_seq: Option<u16>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Learning,
    Latched { peer: SocketAddr, heard: Instant },
    Fixed(SocketAddr),
}

/// The latch of one leg and channel. See the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Latch {
    config: LatchConfig,
    state: State,
    candidate: Option<Candidate>,
    /// Where to send before latching (from signalling).
    expected: Option<SocketAddr>,
    relatches: u32,
}

impl Latch {
    /// A latch that learns by `config`, with no peer yet.
    pub const fn new(config: LatchConfig) -> Latch {
        Latch {
            config,
            state: State::Learning,
            candidate: None,
            expected: None,
            relatches: 0,
        }
    }

    /// A latch that only ever accepts `peer`.
    pub const fn fixed(peer: SocketAddr) -> Latch {
        Latch {
            config: LatchConfig {
                probation: 1,
                relatch_after: None,
            },
            state: State::Fixed(peer),
            candidate: None,
            expected: None,
            relatches: 0,
        }
    }

    /// Sets the address signalling announced: [`Latch::peer`] until the
    /// latch learns one.
    pub fn expect(&mut self, peer: SocketAddr) {
        self.expected = Some(peer);
    }

    /// Forgets the learned peer and learns again (e.g. after a re-INVITE);
    /// a fixed latch stays fixed.
    pub fn reset(&mut self) {
        if !matches!(self.state, State::Fixed(_)) {
            self.state = State::Learning;
        }
        self.candidate = None;
    }

    /// Holds `peer` as latched, heard at `now`, because another lane's
    /// latch of the same leg latched it (the relay on several lanes): a
    /// fixed latch, or one already holding `peer`, is left as it is. Not
    /// counted as a re-latch (the lane that learned it counts that).
    pub fn adopt(&mut self, peer: SocketAddr, now: Instant) {
        match self.state {
            State::Fixed(_) => {}
            State::Latched { peer: held, .. } if held == peer => {}
            _ => {
                self.state = State::Latched { peer, heard: now };
                self.candidate = None;
            }
        }
    }

    /// The latched peer, if there is one (not the expected one).
    pub fn latched_peer(&self) -> Option<SocketAddr> {
        match self.state {
            State::Latched { peer, .. } | State::Fixed(peer) => Some(peer),
            State::Learning => None,
        }
    }

    /// Where to send to: the latched or fixed peer, else the expected one.
    pub fn peer(&self) -> Option<SocketAddr> {
        match self.state {
            State::Latched { peer, .. } | State::Fixed(peer) => Some(peer),
            State::Learning => self.expected,
        }
    }

    /// How the latch learns.
    pub fn config(&self) -> LatchConfig {
        self.config
    }

    /// True once a peer is latched (or fixed).
    pub fn is_latched(&self) -> bool {
        !matches!(self.state, State::Learning)
    }

    /// Times a new peer replaced a silent one.
    pub fn relatches(&self) -> u32 {
        self.relatches
    }

    /// Judges one packet from `source`, received at `now`, with its RTP
    /// sequence number if it has one. Per packet: a compare in the common
    /// case.
    #[inline]
    pub fn observe(&mut self, source: SocketAddr, seq: Option<u16>, now: Instant) -> Verdict {
        match self.state {
            State::Fixed(peer) if peer == source => Verdict::Peer,
            State::Fixed(_) => Verdict::Foreign,
            State::Latched {
                peer,
                ref mut heard,
            } if peer == source => {
                *heard = now;
                if self.candidate.is_some() {
                    self.candidate = None;
                }
                Verdict::Peer
            }
            State::Latched { heard, .. } => match self.config.relatch_after {
                Some(quiet) if now.saturating_duration_since(heard) >= quiet => {
                    self.learn(source, seq, now, true)
                }
                _ => Verdict::Foreign,
            },
            State::Learning => self.learn(source, seq, now, false),
        }
    }

    /// Counts the packet for its source as a candidate; latches once the
    /// candidate has passed probation.
    fn learn(
        &mut self,
        source: SocketAddr,
        seq: Option<u16>,
        now: Instant,
        relatch: bool,
    ) -> Verdict {
        let follows = |c: &Candidate| {
            c.source == source
                && match (c.next_seq, seq) {
                    (Some(want), Some(got)) => want == got,
                    _ => true,
                }
        };
        let candidate = match self.candidate {
            Some(mut c) if follows(&c) => {
                c.count = c.count.saturating_add(1);
                c
            }
            _ => Candidate {
                source,
                count: 1,
                next_seq: None,
            },
        };
        if candidate.count >= self.config.probation.max(1) {
            self.state = State::Latched {
                peer: source,
                heard: now,
            };
            self.candidate = None;
            if relatch {
                self.relatches = self.relatches.saturating_add(1);
            }
            return Verdict::Latched;
        }
        self.candidate = Some(Candidate {
            next_seq: seq.map(|s| s.wrapping_add(1)),
            ..candidate
        });
        Verdict::Learning
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::net::{Ipv4Addr, SocketAddrV4};

    fn addr(last: u8, port: u16) -> SocketAddr {
        SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, last), port))
    }

    fn ms(n: u64) -> Instant {
        Instant::from_nanos(n * 1_000_000)
    }

    #[test]
    fn the_first_packet_latches_by_default_and_others_are_foreign() {
        let mut latch = Latch::new(LatchConfig::default());
        assert_eq!(latch.peer(), None);
        assert_eq!(
            latch.observe(addr(2, 5004), Some(7), ms(0)),
            Verdict::Latched
        );
        assert!(latch.is_latched());
        assert_eq!(latch.peer(), Some(addr(2, 5004)));
        assert_eq!(latch.observe(addr(2, 5004), Some(8), ms(20)), Verdict::Peer);
        // Same address, other port: another source.
        assert_eq!(
            latch.observe(addr(2, 5006), Some(9), ms(40)),
            Verdict::Foreign
        );
        assert_eq!(
            latch.observe(addr(3, 5004), Some(9), ms(99_000)),
            Verdict::Foreign,
            "no re-latching unless configured"
        );
        assert_eq!(latch.peer(), Some(addr(2, 5004)));
    }

    #[test]
    fn probation_needs_packets_in_sequence_from_one_source() {
        let mut latch = Latch::new(LatchConfig {
            probation: 3,
            relatch_after: None,
        });
        let a = addr(2, 5004);
        let b = addr(9, 6000);
        use Verdict::*;
        let verdicts: Vec<Verdict> = [
            (a, 10), // candidate a, 1
            (a, 11), // 2
            (b, 50), // b takes over, 1
            (a, 12), // a again, 1
            (a, 14), // out of sequence: restarts, 1
            (a, 15), // 2
            (a, 16), // 3: latched
            (b, 51), // foreign
        ]
        .iter()
        .enumerate()
        .map(|(i, &(src, seq))| latch.observe(src, Some(seq), ms(i as u64 * 20)))
        .collect();
        assert_eq!(
            verdicts,
            [Learning, Learning, Learning, Learning, Learning, Learning, Latched, Foreign]
        );
        assert!(verdicts.iter().filter(|v| v.accepted()).count() == 1);
    }

    #[test]
    fn sequence_numbers_wrap_and_rtcp_has_none() {
        let mut latch = Latch::new(LatchConfig {
            probation: 2,
            relatch_after: None,
        });
        let a = addr(2, 5004);
        assert_eq!(latch.observe(a, Some(65535), ms(0)), Verdict::Learning);
        assert_eq!(latch.observe(a, Some(0), ms(20)), Verdict::Latched);
        let mut rtcp = Latch::new(LatchConfig {
            probation: 2,
            relatch_after: None,
        });
        assert_eq!(rtcp.observe(a, None, ms(0)), Verdict::Learning);
        assert_eq!(rtcp.observe(a, None, ms(5000)), Verdict::Latched);
    }

    #[test]
    fn a_silent_peer_is_replaced_after_the_quiet_period() {
        let mut latch = Latch::new(LatchConfig {
            probation: 2,
            relatch_after: Some(Duration::from_secs(2)),
        });
        let (a, b) = (addr(2, 5004), addr(3, 7000));
        latch.observe(a, Some(1), ms(0));
        assert_eq!(latch.observe(a, Some(2), ms(20)), Verdict::Latched);
        assert_eq!(latch.relatches(), 0, "the first latch is no re-latch");
        // b before the quiet period: foreign, and it does not count.
        assert_eq!(latch.observe(b, Some(100), ms(1000)), Verdict::Foreign);
        assert_eq!(latch.observe(b, Some(101), ms(2019)), Verdict::Foreign);
        // a goes quiet at 20 ms; from 2020 ms b is learned.
        assert_eq!(latch.observe(b, Some(102), ms(2020)), Verdict::Learning);
        assert_eq!(latch.peer(), Some(a), "a is still the peer while b learns");
        assert_eq!(latch.observe(b, Some(103), ms(2040)), Verdict::Latched);
        assert_eq!(latch.peer(), Some(b));
        assert_eq!(latch.relatches(), 1);
        assert_eq!(latch.observe(a, Some(3), ms(2060)), Verdict::Foreign);
    }

    #[test]
    fn the_peer_speaking_again_ends_a_relatch_attempt() {
        let mut latch = Latch::new(LatchConfig {
            probation: 2,
            relatch_after: Some(Duration::from_millis(100)),
        });
        let (a, b) = (addr(2, 5004), addr(3, 7000));
        latch.observe(a, Some(1), ms(0));
        latch.observe(a, Some(2), ms(20));
        assert_eq!(latch.observe(b, Some(1), ms(500)), Verdict::Learning);
        assert_eq!(latch.observe(a, Some(3), ms(510)), Verdict::Peer);
        // The quiet period starts again at 510 ms: b is foreign now, and
        // its earlier packet no longer counts.
        assert_eq!(latch.observe(b, Some(2), ms(520)), Verdict::Foreign);
        assert_eq!(latch.observe(b, Some(3), ms(700)), Verdict::Learning);
        assert_eq!(latch.peer(), Some(a));
    }

    #[test]
    fn expected_peers_fixed_peers_and_reset() {
        let (a, b) = (addr(2, 5004), addr(3, 7000));
        let mut latch = Latch::new(LatchConfig::default());
        latch.expect(a);
        assert_eq!(latch.peer(), Some(a), "send to the signalled address first");
        assert!(!latch.is_latched());
        // Behind a NAT the packets come from b: b is learned.
        assert_eq!(latch.observe(b, Some(1), ms(0)), Verdict::Latched);
        assert_eq!(latch.peer(), Some(b));
        latch.reset();
        assert_eq!(latch.peer(), Some(a));
        assert_eq!(latch.observe(a, Some(9), ms(0)), Verdict::Latched);

        let mut fixed = Latch::fixed(a);
        assert_eq!(fixed.observe(b, Some(1), ms(0)), Verdict::Foreign);
        assert_eq!(fixed.observe(a, Some(1), ms(0)), Verdict::Peer);
        fixed.reset();
        assert_eq!(fixed.peer(), Some(a));
        assert!(fixed.is_latched());
    }

    #[test]
    fn an_adopted_peer_is_latched_without_a_relatch() {
        let (a, b) = (addr(2, 5004), addr(3, 7000));
        let mut latch = Latch::new(LatchConfig::default());
        latch.expect(a);
        assert_eq!(latch.latched_peer(), None);
        latch.adopt(b, ms(0));
        assert_eq!((latch.peer(), latch.latched_peer()), (Some(b), Some(b)));
        assert_eq!(latch.observe(a, Some(1), ms(1)), Verdict::Foreign);
        assert_eq!(latch.observe(b, Some(1), ms(1)), Verdict::Peer);
        assert_eq!(latch.relatches(), 0);
        let mut fixed = Latch::fixed(a);
        fixed.adopt(b, ms(0));
        assert_eq!(fixed.peer(), Some(a), "a fixed peer stays");
    }

    #[test]
    fn probation_zero_counts_as_one() {
        let mut latch = Latch::new(LatchConfig {
            probation: 0,
            relatch_after: None,
        });
        assert_eq!(
            latch.observe(addr(2, 1), None, Instant::ZERO),
            Verdict::Latched
        );
    }
}
