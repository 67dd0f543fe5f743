//! The Internet checksum (RFC 1071): a ones' complement sum of 16-bit words.
//!
//! Sums are accumulated in 64 bits, eight bytes at a time, and folded once
//! at the end. A buffer whose checksum field is already filled in sums to
//! 0xffff when it is correct, so verification is `sum(...) == 0xffff`.
//! Buffers of [`WIDE_FROM`] bytes or more (segment payloads) take a wider
//! loop: native-endian 32-bit words into eight independent lanes, which the
//! compiler turns into vector adds, byte-swapped once at the end (RFC 1071
//! section 2(B): the sum is independent of byte order, up to a swap).

use core::net::Ipv4Addr;

/// Adds `data` to a running 64-bit sum (big-endian 16-bit words; an odd last
/// byte is padded with zero).
///
/// Below [`WIDE_FROM`] bytes: native-endian 8-byte words added with
/// end-around carry (an add and an add-with-carry per word: no byte swap,
/// no shifts), the 4-, 2- and 1-byte tail likewise, folded and swapped once
/// at the end (RFC 1071 section 2(B): the sum is independent of byte
/// order, up to a swap). Every piece starts at an even offset, so each
/// byte keeps its place in its 16-bit word.
#[inline(always)]
pub fn accumulate(sum: u64, data: &[u8]) -> u64 {
    if data.len() >= WIDE_FROM {
        return add_with_carry(sum, u64::from(wide_sum(data)));
    }
    // Two carry chains, so consecutive words do not wait on each other.
    let (mut even, mut odd) = (0u64, 0u64);
    let mut pairs = data.chunks_exact(16);
    for pair in &mut pairs {
        if let (Some(a), Some(b)) = (pair.first_chunk::<8>(), pair.last_chunk::<8>()) {
            even = add_with_carry(even, u64::from_ne_bytes(*a));
            odd = add_with_carry(odd, u64::from_ne_bytes(*b));
        }
    }
    let mut acc = add_with_carry(even, odd);
    let mut rest = pairs.remainder();
    if let Some((eight, tail)) = rest.split_first_chunk::<8>() {
        acc = add_with_carry(acc, u64::from_ne_bytes(*eight));
        rest = tail;
    }
    if let Some((four, tail)) = rest.split_first_chunk::<4>() {
        acc = add_with_carry(acc, u64::from(u32::from_ne_bytes(*four)));
        rest = tail;
    }
    if let Some((two, tail)) = rest.split_first_chunk::<2>() {
        acc = add_with_carry(acc, u64::from(u16::from_ne_bytes(*two)));
        rest = tail;
    }
    if let [last] = rest {
        acc = add_with_carry(acc, u64::from(u16::from_ne_bytes([*last, 0])));
    }
    // Folded in native order; big-endian order is the byte swap of that.
    add_with_carry(sum, u64::from(u16::from_be(fold(acc))))
}

/// Length from which [`accumulate`] takes the vectorised loop: below it
/// the add-with-carry loop (8 bytes a cycle) is as fast and starts sooner.
pub const WIDE_FROM: usize = 512;

/// The folded big-endian sum of `data` by native-endian 32-bit words in eight
/// lanes (vectorised by the compiler); lanes cannot overflow below 2^32
/// additions each, i.e. for any slice shorter than 128 GiB.
#[inline(never)]
fn wide_sum(data: &[u8]) -> u16 {
    let mut lanes = [0u64; 8];
    let mut blocks = data.chunks_exact(32);
    for block in &mut blocks {
        for (lane, word) in lanes.iter_mut().zip(block.chunks_exact(4)) {
            if let Ok(word) = <[u8; 4]>::try_from(word) {
                *lane += u64::from(u32::from_ne_bytes(word));
            }
        }
    }
    let mut acc: u64 = lanes.iter().sum();
    let mut words = blocks.remainder().chunks_exact(4);
    for word in &mut words {
        if let Ok(word) = <[u8; 4]>::try_from(word) {
            acc += u64::from(u32::from_ne_bytes(word));
        }
    }
    // The last 1-3 bytes, zero-padded as a whole word would be.
    let mut last = [0u8; 4];
    let tail = words.remainder();
    last[..tail.len()].copy_from_slice(tail);
    acc += u64::from(u32::from_ne_bytes(last));
    // Folded in native order; big-endian order is the byte swap of that.
    u16::from_be(fold(acc))
}

/// The sum of `data[start..end]` (as [`accumulate`] from 0, which also
/// takes spans of [`WIDE_FROM`] bytes or more), below 2^32 (folded to 32
/// bits, not 16), faster for short spans when at least 8 bytes precede
/// `start` (headers do): little-endian 8-byte words in carry chains of up
/// to eight words, and the last partial word one 8-byte load ending at
/// `end`, shifted down so the bytes before the span fall off and each kept
/// byte sits at its offset's place; swapped to big-endian order once.
#[inline(always)]
pub fn accumulate_span(data: &[u8], start: usize, end: usize) -> u64 {
    let Some(body) = data.get(start..end) else {
        return 0;
    };
    if start < 8 || body.len() >= WIDE_FROM {
        return accumulate(0, body);
    }
    let acc = span_le(data, body, end);
    // Folded to 32 bits, not 16: the byte swap of a 32-bit word swaps each
    // 16-bit half (to big-endian order) and exchanges the halves, which
    // does not change their sum.
    let (half, carry) = (acc as u32).overflowing_add((acc >> 32) as u32);
    u64::from((half + u32::from(carry)).swap_bytes())
}

/// True if `pseudo_le` plus the sum of `data[start..end]` verifies, where
/// `pseudo_le` is a little-endian sum below 2^47 (such as a pseudo-header
/// whose words were read with `from_le_bytes`, its byte-order-dependent
/// constants shifted left by 8): the same answer as `sum_verifies(pseudo +
/// accumulate_span(data, start, end))` for the big-endian sum `pseudo` it
/// stands for. Modulo 0xffff, all a verification looks at, a little-endian
/// sum is 256 times the big-endian one (a 16-bit word's byte swap is a
/// multiplication by 2^8, and 256 is invertible modulo 0xffff), so neither
/// the span's sum nor the pseudo-header is folded or byte-swapped; a
/// 64-bit sum with end-around carry keeps its value modulo 0xffff, a
/// factor of 2^64 - 1. Per received datagram.
#[inline(always)]
pub fn span_verifies_le(data: &[u8], start: usize, end: usize, pseudo_le: u64) -> bool {
    let Some(body) = data.get(start..end) else {
        return sum_verifies(pseudo_le);
    };
    if start < 8 || body.len() >= WIDE_FROM {
        // `accumulate`'s sum is big-endian and below 2^17.
        return sum_verifies(pseudo_le + (accumulate(0, body) << 8));
    }
    let span = if body.len() < SHORT_SPAN {
        short_span_le(data, body, end)
    } else {
        span_le(data, body, end)
    };
    let total = add_with_carry(span, pseudo_le);
    total != 0 && total % 0xffff == 0
}

/// Spans shorter than this (a small datagram: a request, a voice frame)
/// take [`short_span_le`].
const SHORT_SPAN: usize = 32;

/// [`span_le`] for a span `body` (`data[..end]`'s tail) of fewer than [`SHORT_SPAN`]
/// bytes with at least 8 bytes before it: its (at most three) whole words
/// added straight, each behind a test of the length and no loop (a small
/// datagram's span, summed per packet, gains nothing from the blocks of
/// [`span_le`], whose dispatch costs more than it saves here, and a loop's
/// counter and pointer cost as much as its adds), then the partial word as
/// [`span_le`] reads it.
#[inline(always)]
fn short_span_le(data: &[u8], body: &[u8], end: usize) -> u64 {
    let word = |at: usize| {
        body.get(at..at + 8)
            .and_then(|w| w.first_chunk::<8>())
            .map_or(0, |w| u64::from_le_bytes(*w))
    };
    let len = body.len();
    let mut acc = 0u64;
    if len >= 8 {
        acc = word(0);
    }
    if len >= 16 {
        acc = add_with_carry(acc, word(8));
    }
    if len >= 24 {
        acc = add_with_carry(acc, word(16));
    }
    let left = len % 8;
    if left > 0 {
        if let Some(last) = data[..end].last_chunk::<8>() {
            acc = add_with_carry(acc, u64::from_le_bytes(*last) >> (8 * (8 - left)));
        }
    }
    acc
}

/// The little-endian sum of `body`, which is `data[..end]`'s tail of fewer
/// than [`WIDE_FROM`] bytes with at least 8 bytes before it (see
/// [`accumulate_span`]), unfolded.
#[inline(always)]
fn span_le(data: &[u8], body: &[u8], end: usize) -> u64 {
    // One carry chain per block of words; the chains' carries out are
    // counted apart and added back once.
    let (mut acc, mut carries) = (0u64, 0u64);
    let mut blocks = body.chunks_exact(64);
    for block in &mut blocks {
        if let Some(block) = block.first_chunk::<64>() {
            add_words(&mut acc, &mut carries, block);
        }
    }
    let mut rest = blocks.remainder();
    if let Some((block, tail)) = rest.split_first_chunk::<32>() {
        add_words(&mut acc, &mut carries, block);
        rest = tail;
    }
    if let Some((block, tail)) = rest.split_first_chunk::<16>() {
        add_words(&mut acc, &mut carries, block);
        rest = tail;
    }
    if let Some((block, tail)) = rest.split_first_chunk::<8>() {
        add_words(&mut acc, &mut carries, block);
        rest = tail;
    }
    acc = add_with_carry(acc, carries);
    let left = rest.len();
    if left > 0 {
        if let Some(last) = data[..end].last_chunk::<8>() {
            acc = add_with_carry(acc, u64::from_le_bytes(*last) >> (8 * (8 - left)));
        }
    }
    acc
}

/// Adds the little-endian 8-byte words of `block` (`N` a multiple of 8) to
/// `sum` in one carry chain (an add-with-carry instruction a word), and
/// its carry out to `carries`.
#[inline(always)]
fn add_words<const N: usize>(sum: &mut u64, carries: &mut u64, block: &[u8; N]) {
    let mut carry = false;
    for word in block.chunks_exact(8) {
        if let Some(word) = word.first_chunk::<8>() {
            // u64::carrying_add (unstable), in the form the compiler
            // turns into add-with-carry.
            let (partial, c1) = sum.overflowing_add(u64::from_le_bytes(*word));
            let (partial, c2) = partial.overflowing_add(u64::from(carry));
            (*sum, carry) = (partial, c1 | c2);
        }
    }
    *carries += u64::from(carry);
}

/// Ones' complement addition: a carry out of bit 63 wraps into bit 0.
#[inline]
pub fn add_with_carry(a: u64, b: u64) -> u64 {
    let (sum, carry) = a.overflowing_add(b);
    sum + u64::from(carry)
}

/// Folds a running sum into 16 bits (not complemented).
#[inline]
pub fn fold(sum: u64) -> u16 {
    // 64 -> 33 -> 32 bits, then 32 -> 17 -> 16, each with end-around carry.
    let sum = (sum & 0xffff_ffff) + (sum >> 32);
    let sum = (sum & 0xffff_ffff) + (sum >> 32);
    let sum = (sum & 0xffff) + (sum >> 16);
    let sum = (sum & 0xffff) + (sum >> 16);
    sum as u16
}

/// Folds a running sum below 2^48 into 16 bits (not complemented): three
/// 16-bit end-around steps, cheaper than [`fold`] for short header sums.
#[inline]
pub fn fold_small(sum: u64) -> u16 {
    debug_assert!(sum < 1 << 48);
    let sum = (sum & 0xffff) + (sum >> 16);
    let sum = (sum & 0xffff) + (sum >> 16);
    let sum = (sum & 0xffff) + (sum >> 16);
    sum as u16
}

/// True if a running sum below 2^48 folds to 0xffff (`fold_small(sum) ==
/// 0xffff`: the summed data, checksum field included, is correct), tested
/// without folding. A ones' complement fold keeps the sum's remainder
/// modulo 0xffff and is zero only for a zero sum, so it ends at 0xffff
/// exactly when the sum is a non-zero multiple of 0xffff; the compiler
/// tests that divisibility with one multiply and one compare.
#[inline]
pub fn sum_verifies(sum: u64) -> bool {
    debug_assert!(sum < 1 << 48);
    sum != 0 && sum % 0xffff == 0
}

/// The UDP checksum field for a running sum (any `u64`): the complement
/// of its fold, with zero, which would mean "no checksum", sent as
/// 0xffff (RFC 768), in either byte order. A fold keeps the sum's
/// remainder modulo 0xffff, in 1..=0xffff for a non-zero sum (0 for
/// zero), so this is 0xffff minus the remainder: one multiply, not a
/// fold's steps and a test. Per forwarded datagram.
#[inline]
pub fn udp_complement(sum: u64) -> u16 {
    (0xffff - sum % 0xffff) as u16
}

/// The complement of a non-zero running sum's fold, `!fold(sum)` (a
/// header's checksum field), in one multiply rather than a fold's steps: a
/// fold of a non-zero sum is the one value in 1..=0xffff congruent to it
/// modulo 0xffff, `(sum - 1) % 0xffff + 1`. Per datagram sent.
#[inline]
pub fn complement_nonzero(sum: u64) -> u16 {
    debug_assert!(sum != 0);
    (0xfffe - sum.wrapping_sub(1) % 0xffff) as u16
}

/// Updates checksum `check` after a 16-bit word of the summed data changed
/// from `old` to `new` (RFC 1624, equation 3), without re-summing.
#[inline]
pub fn update(check: u16, old: u16, new: u16) -> u16 {
    !fold(u64::from(!check) + u64::from(!old) + u64::from(new))
}

/// The checksum of `data`: the complement of its folded sum.
#[inline]
pub fn checksum(data: &[u8]) -> u16 {
    !fold(accumulate(0, data))
}

/// The folded sum of a 20-byte IPv4 header (no options): 0xffff when its
/// checksum field is correct. Five word loads, no loop.
#[inline]
pub fn ipv4_header_sum(h: &[u8; 20]) -> u16 {
    let word = |at: usize| u64::from(u32::from_be_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]));
    fold(word(0) + word(4) + word(8) + word(12) + word(16))
}

/// The sum of the IPv4 pseudo-header for TCP/UDP.
#[inline]
pub fn pseudo_header_v4(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, length: u16) -> u64 {
    // Each address as one 32-bit word: it folds like its two halves.
    u64::from(src.to_bits()) + u64::from(dst.to_bits()) + u64::from(protocol) + u64::from(length)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 section 3: 00 01 f2 03 f4 f5 f6 f7 sums to 0xddf2.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(accumulate(0, &data)), 0xddf2);
        assert_eq!(checksum(&data), !0xddf2);
    }

    #[test]
    fn fold_small_agrees_with_fold_below_its_bound() {
        let mut x = 0x1234_5678_9abcu64;
        for _ in 0..10_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1) >> 16;
            assert_eq!(fold_small(x), fold(x), "{x:#x}");
        }
        for edge in [0, 0xffff, 0x1_0000, 0xffff_ffff, 0xffff_ffff_ffff, 0x2_fffd] {
            assert_eq!(fold_small(edge), fold(edge), "{edge:#x}");
        }
    }

    #[test]
    fn sum_verifies_agrees_with_fold_small() {
        let mut x = 0x1234_5678_9abcu64;
        for _ in 0..100_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1) >> 16;
            assert_eq!(sum_verifies(x), fold_small(x) == 0xffff, "{x:#x}");
            let multiple = x - x % 0xffff;
            assert_eq!(sum_verifies(multiple), fold_small(multiple) == 0xffff);
        }
        for edge in [
            0,
            0xffff,
            0x1_0000,
            0x1_fffe,
            0xffff_ffff,
            0xffff_ffff_ffff,
            0x2_fffd,
        ] {
            assert_eq!(sum_verifies(edge), fold_small(edge) == 0xffff, "{edge:#x}");
        }
    }

    /// Sums to check the one-remainder complements against the fold on:
    /// the edges (0 first), then pseudo-random ones and multiples of
    /// 0xffff near them (whose fold is 0xffff).
    fn sample_sums() -> impl Iterator<Item = u64> {
        let random = (0..100_000u64).scan(0x1234_5678_9abcu64, |x, _| {
            *x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            Some(*x)
        });
        let shapes =
            random.flat_map(|x| [x, x >> 16, x - x % 0xffff, (x >> 16) - (x >> 16) % 0xffff]);
        let edges = [
            0,
            1,
            0xfffe,
            0xffff,
            0x1_0000,
            0x1_fffe,
            u64::MAX,
            u64::MAX - 1,
        ];
        edges.into_iter().chain(shapes)
    }

    #[test]
    fn complement_nonzero_is_the_complemented_fold() {
        for sum in sample_sums().filter(|&sum| sum != 0) {
            assert_eq!(complement_nonzero(sum), !fold(sum), "{sum:#x}");
        }
    }

    #[test]
    fn udp_complement_is_the_complemented_fold_never_zero() {
        for sum in sample_sums() {
            let expected = match !fold(sum) {
                0 => 0xffff,
                check => check,
            };
            assert_eq!(udp_complement(sum), expected, "{sum:#x}");
        }
    }

    #[test]
    fn fold_handles_every_carry() {
        assert_eq!(fold(0xffff_ffff_ffff_ffff), 0xffff);
        assert_eq!(fold(0x0001_0000_0000_0000), 0x0001);
        assert_eq!(fold(0x0000_0000_0001_fffe), 0xffff);
        assert_eq!(fold(0x0000_0000_0002_ffff), 0x0002);
    }

    #[test]
    fn incremental_update_matches_a_full_recompute() {
        let mut header = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        let before = checksum(&header);
        let old = u16::from_be_bytes([header[8], header[9]]);
        header[8] = 0x05; // TTL 64 -> 5
        let new = u16::from_be_bytes([header[8], header[9]]);
        assert_eq!(update(before, old, new), checksum(&header));
    }

    #[test]
    fn header_sum_matches_the_general_sum() {
        let header = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(ipv4_header_sum(&header), 0xffff);
        assert_eq!(ipv4_header_sum(&header), fold(accumulate(0, &header)));
    }

    #[test]
    fn odd_lengths_pad_with_zero() {
        assert_eq!(fold(accumulate(0, &[0x12, 0x34, 0x56])), 0x1234 + 0x5600);
    }

    #[test]
    fn the_wide_loop_matches_byte_pairs_at_every_length_and_offset() {
        let data: Vec<u8> = (0..4000u32).map(|i| (i * 7 + (i >> 3)) as u8).collect();
        for start in 0..4 {
            for len in (WIDE_FROM - 2..WIDE_FROM + 70).chain([1459, 1460, 1461, 3990]) {
                let span = &data[start..start + len];
                let mut slow = 0u64;
                for pair in span.chunks(2) {
                    slow += (u64::from(pair[0]) << 8) + pair.get(1).map_or(0, |&b| u64::from(b));
                }
                assert_eq!(
                    fold(accumulate(0x1_2345, span)),
                    fold(slow + 0x1_2345),
                    "{start} {len}"
                );
            }
        }
        let ones = vec![0xffu8; 9000];
        assert_eq!(fold(accumulate(0, &ones)), 0xffff);
    }

    #[test]
    fn word_at_a_time_matches_byte_pairs() {
        let data: Vec<u8> = (0..=255u8).cycle().take(1001).collect();
        let mut slow = 0u64;
        for pair in data.chunks(2) {
            let hi = u64::from(pair[0]) << 8;
            slow += hi + pair.get(1).map_or(0, |&b| u64::from(b));
        }
        assert_eq!(fold(accumulate(0, &data)), fold(slow));
    }

    #[test]
    fn every_tail_length_matches_byte_pairs() {
        let data: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37) ^ 0xa5).collect();
        for len in 0..=data.len() {
            let slice = &data[..len];
            let slow: u64 = slice
                .chunks(2)
                .map(|p| (u64::from(p[0]) << 8) + p.get(1).map_or(0, |&b| u64::from(b)))
                .sum();
            // A running sum near the top exercises the final carry.
            let start = 0xffff_ffff_ffff_fff0;
            assert_eq!(
                fold(accumulate(start, slice)),
                fold(add_with_carry(start, slow)),
                "length {len}"
            );
        }
    }

    #[test]
    fn a_span_sums_like_accumulate_at_every_start_and_length() {
        // Past WIDE_FROM too: the wide loop takes long spans.
        let data: Vec<u8> = (0..600u32)
            .map(|i| (i as u8).wrapping_mul(73) ^ 0x3c)
            .collect();
        for start in 0..24 {
            for end in start..data.len() {
                assert_eq!(
                    fold(accumulate_span(&data, start, end)),
                    fold(accumulate(0, &data[start..end])),
                    "{start}..{end}"
                );
            }
        }
        assert_eq!(accumulate_span(&data, 590, 700), 0, "out of range");
        // All ones: every carry chain carries out.
        let ones = vec![0xffu8; 600];
        for (start, end) in [(8, 600), (9, 200), (8, 72), (14, 599)] {
            assert_eq!(
                fold(accumulate_span(&ones, start, end)),
                fold(accumulate(0, &ones[start..end])),
                "{start}..{end}"
            );
        }
        assert!(accumulate_span(&ones, 8, 500) < 1 << 32);
    }

    #[test]
    fn a_span_verifies_as_its_folded_sum_does() {
        let data: Vec<u8> = (0..600u32)
            .map(|i| (i as u8).wrapping_mul(151) ^ 0x5a)
            .collect();
        for start in 0..20 {
            for end in (start..data.len()).step_by(7) {
                let sum = accumulate_span(&data, start, end);
                // A pseudo sum that makes it verify, and a few that do not.
                let complement = u64::from(!fold(sum));
                for pseudo in [complement, complement + 0xffff, complement + 1, 25, 0] {
                    assert_eq!(
                        span_verifies_le(&data, start, end, pseudo << 8),
                        sum_verifies(pseudo + sum),
                        "{start}..{end} + {pseudo:#x}"
                    );
                }
            }
        }
        let ones = vec![0xffu8; 600];
        // Long spans, and short ones (below `SHORT_SPAN`: one chain).
        for (start, end) in [
            (8, 600),
            (9, 200),
            (8, 72),
            (14, 599),
            (8, 39),
            (34, 60),
            (33, 34),
        ] {
            let sum = accumulate_span(&ones, start, end);
            for pseudo in [u64::from(!fold(sum)), 0xffff, 1 << 39] {
                assert_eq!(
                    span_verifies_le(&ones, start, end, pseudo << 8),
                    sum_verifies(pseudo + sum),
                    "{start}..{end} + {pseudo:#x}"
                );
            }
        }
        assert!(!span_verifies_le(&data, 590, 700, 0), "out of range");
    }

    #[test]
    fn pseudo_header_sums_like_its_bytes() {
        let (src, dst) = (Ipv4Addr::new(198, 18, 255, 254), Ipv4Addr::new(10, 0, 0, 1));
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&src.octets());
        bytes.extend_from_slice(&dst.octets());
        bytes.extend_from_slice(&[0, 17, 0xff, 0xf0]);
        assert_eq!(
            fold(pseudo_header_v4(src, dst, 17, 0xfff0)),
            fold(accumulate(0, &bytes))
        );
    }

    #[test]
    fn a_filled_in_header_sums_to_all_ones() {
        // An IPv4 header with its checksum (0xb861) in place.
        let header = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(fold(accumulate(0, &header)), 0xffff);
    }
}
