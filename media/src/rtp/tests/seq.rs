//! Appendix A.1/A.3 by hand: probation, wrap, reordering, duplicates,
//! jumps and resync, loss and fraction lost over report intervals.

use crate::rtp::seq::SeqOutcome::*;
use crate::rtp::seq::*;

fn feed(s: &mut SeqState, seqs: &[u16]) -> Vec<SeqOutcome> {
    seqs.iter().map(|&q| s.update(q)).collect()
}

#[test]
fn probation_needs_two_in_sequence() {
    let mut s = SeqState::new();
    // 10 starts probation, 20 is not 11 so probation restarts at 20,
    // 21 follows 20 and ends it: counts start at 21.
    assert_eq!(feed(&mut s, &[10, 20]), [Probation, Probation]);
    assert!(!s.is_valid());
    assert_eq!((s.expected(), s.received(), s.lost()), (0, 0, 0));
    assert_eq!(s.update(21), InOrder);
    assert!(s.is_valid());
    assert_eq!((s.base_seq(), s.expected(), s.received()), (21, 1, 1));
    // Probation of 1: valid on the first packet.
    let mut one = SeqState::with_probation(0);
    assert_eq!(one.update(500), InOrder);
    assert_eq!(
        (one.base_seq(), one.expected(), one.received()),
        (500, 1, 1)
    );
    // Asterisk-style probation of 4.
    let mut four = SeqState::with_probation(4);
    assert_eq!(feed(&mut four, &[1, 2, 3]), [Probation; 3]);
    assert_eq!(four.update(4), InOrder);
}

#[test]
fn probation_across_the_wrap() {
    // A.1's C text would restart probation here (65535 + 1 != 0 in int).
    let mut s = SeqState::new();
    assert_eq!(feed(&mut s, &[65535, 0]), [Probation, InOrder]);
    assert_eq!((s.base_seq(), s.extended_max(), s.cycles()), (0, 0, 0));
}

#[test]
fn wrap_at_65535() {
    let mut s = SeqState::new();
    // Valid at 65534; then 65535, 0, 1: max 1 after one wrap, so the
    // extended max is 65536 + 1 = 65537 and expected 65537 - 65534 + 1 = 4.
    let got = feed(&mut s, &[65533, 65534, 65535, 0, 1]);
    assert_eq!(got, [Probation, InOrder, InOrder, InOrder, InOrder]);
    assert_eq!((s.cycles(), s.max_seq(), s.extended_max()), (1, 1, 65537));
    assert_eq!((s.expected(), s.received(), s.lost()), (4, 4, 0));
    // A gap across the wrap: 65000 .. 10 is 546 ahead, in order.
    let mut g = SeqState::new();
    feed(&mut g, &[64999, 65000]);
    assert_eq!(g.update(10), InOrder);
    // expected = (65536 + 10) - 65000 + 1 = 547, received 2.
    assert_eq!(
        (g.extended_max(), g.expected(), g.lost()),
        (65546, 547, 545)
    );
}

#[test]
fn reordering_is_not_loss() {
    let mut s = SeqState::new();
    // Valid at 11; 13 leaves a gap, 12 fills it late, then 14.
    let got = feed(&mut s, &[10, 11, 13, 12, 14]);
    assert_eq!(got, [Probation, InOrder, InOrder, Reordered, InOrder]);
    // expected 14 - 11 + 1 = 4, received 4.
    assert_eq!((s.expected(), s.received(), s.lost()), (4, 4, 0));
    // 99 behind is still late, 100 behind is a jump (A.1's MAX_MISORDER).
    let mut far = SeqState::new();
    feed(&mut far, &[999, 1000, 1200]);
    assert_eq!(far.update(1101), Reordered);
    assert_eq!(far.update(1100), Jump);
    // Late across the wrap: max 2 (after 65535), 65534 arrives late.
    let mut w = SeqState::new();
    feed(&mut w, &[65532, 65533, 2]);
    assert_eq!(w.update(65534), Reordered);
    assert_eq!((w.expected(), w.received(), w.lost()), (6, 3, 3));
}

#[test]
fn duplicates_are_counted_as_received() {
    let mut s = SeqState::new();
    feed(&mut s, &[10, 11, 13, 12, 14]);
    // 14 again (udelta 0), 13 again and 12 again (in the window).
    assert_eq!(feed(&mut s, &[14, 13, 12]), [Duplicate; 3]);
    // The probation packet 10 was never counted: now it is late, not a
    // duplicate (its bit was cleared by init_seq at 11).
    assert_eq!(s.update(10), Reordered);
    // expected 4 (11..=14), received 4 + 3 duplicates + 10 = 8.
    assert_eq!((s.expected(), s.received(), s.lost()), (4, 8, -4));
    // A long forward step clears the window: 14 + 200 = 214, then 14
    // again is 200 behind, a jump, not a duplicate; 115 (99 behind) is
    // late, then a duplicate.
    assert_eq!(s.update(214), InOrder);
    assert_eq!(s.update(14), Jump);
    assert_eq!(s.update(115), Reordered);
    assert_eq!(s.update(115), Duplicate);
}

#[test]
fn a_big_jump_resyncs_only_after_two_in_sequence() {
    let mut s = SeqState::new();
    feed(&mut s, &[1000, 1001, 1002]);
    // 1002 + 3000 = 4002 is past MAX_DROPOUT: a jump, not counted.
    assert_eq!(s.update(4002), Jump);
    assert_eq!((s.max_seq(), s.received()), (1002, 2));
    // The old stream goes on: 1003 is in order (bad_seq stays 4003).
    assert_eq!(s.update(1003), InOrder);
    // A second unrelated jump moves bad_seq; 4003 no longer resyncs.
    assert_eq!(s.update(9000), Jump);
    assert_eq!(s.update(4003), Jump);
    assert_eq!((s.max_seq(), s.base_seq(), s.received()), (1003, 1001, 3));
    // 4004 follows 4003: resync, counts start again at 4004.
    assert_eq!(s.update(4004), Resync);
    assert_eq!((s.base_seq(), s.max_seq(), s.received()), (4004, 4004, 1));
    assert_eq!((s.expected(), s.lost()), (1, 0));
    assert_eq!(s.update(4005), InOrder);
    // 2999 ahead is still in order (a gap).
    assert_eq!(s.update(4005 + 2999), InOrder);
    assert_eq!((s.expected(), s.received(), s.lost()), (3001, 3, 2998));
}

#[test]
fn loss_and_fraction_over_two_intervals() {
    let mut s = SeqState::new();
    // Probation 100, valid at 101 (base). Then 102..=110 without 105
    // and 108: received 1 + 7 = 8, expected 110 - 101 + 1 = 10.
    feed(&mut s, &[100, 101, 102, 103, 104, 106, 107, 109, 110]);
    assert_eq!((s.expected(), s.received(), s.lost()), (10, 8, 2));
    // Interval 1: 2 lost of 10 -> (2 << 8) / 10 = 512 / 10 = 51.
    let first = s.close_interval();
    assert_eq!(
        (first.expected, first.received, first.fraction),
        (10, 8, 51)
    );
    // Interval 2: 111..=130 without 115, 120, 125 (17 packets), and 105
    // arrives 25 late (counted, fills a gap). Expected 30 - 10 = 20,
    // received 18, lost 2 -> 512 / 20 = 25 (25.6 rounded down).
    for q in 111..=130u16 {
        if ![115, 120, 125].contains(&q) {
            s.update(q);
        }
    }
    assert_eq!(s.update(105), Reordered);
    let second = s.close_interval();
    assert_eq!(
        (second.expected, second.received, second.fraction),
        (20, 18, 25)
    );
    // Cumulative: 30 expected, 26 received: 108, 115, 120, 125 lost.
    assert_eq!((s.expected(), s.received(), s.lost()), (30, 26, 4));
    // Interval 3: only a duplicate of 130. Nothing expected, one more
    // received: fraction 0, cumulative loss 3.
    assert_eq!(s.update(130), Duplicate);
    let third = s.close_interval();
    assert_eq!((third.expected, third.received, third.fraction), (0, 1, 0));
    assert_eq!(s.lost(), 3);
    // Everything lost but the last: 131 missing ... 140 arrives.
    s.update(140);
    let fourth = s.close_interval();
    // expected 10, received 1, lost 9 -> 2304 / 10 = 230.
    assert_eq!(
        (fourth.expected, fourth.received, fourth.fraction),
        (10, 1, 230)
    );
}

#[test]
fn lost_is_clamped_to_24_bits() {
    assert_eq!(clamp_lost_24(5), 5);
    assert_eq!(clamp_lost_24(-3), -3);
    assert_eq!(clamp_lost_24(0x7f_ffff), 0x7f_ffff);
    assert_eq!(clamp_lost_24(0x80_0000), 0x7f_ffff);
    assert_eq!(clamp_lost_24(-0x80_0000), -0x80_0000);
    assert_eq!(clamp_lost_24(-0x80_0001), -0x80_0000);
    assert_eq!(clamp_lost_24(i64::MIN), -0x80_0000);
}

#[test]
fn the_duplicate_window_remembers_every_packet_in_reach() {
    // In-order packets with gaps of 1 to 4 (both ways of shifting the
    // window), each followed by a late one 1..MAX_MISORDER-1 behind: a
    // duplicate exactly when that number was heard before (either half
    // of the window), else reordered (and heard from then on).
    let mut s = SeqState::with_probation(1);
    let mut heard = std::collections::HashSet::new();
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = |bound: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % bound
    };
    let mut max = 65_000u16; // wraps during the test
    assert_eq!(s.update(max), InOrder);
    heard.insert(max);
    for _ in 0..20_000 {
        max = max.wrapping_add(1 + next(4) as u16);
        assert_eq!(s.update(max), InOrder);
        heard.insert(max);
        let late = max.wrapping_sub(1 + next(u64::from(MAX_MISORDER) - 1) as u16);
        let want = if heard.insert(late) {
            Reordered
        } else {
            Duplicate
        };
        assert_eq!(s.update(late), want, "{late} behind {max}");
        assert_eq!(s.max_seq(), max);
    }
}
