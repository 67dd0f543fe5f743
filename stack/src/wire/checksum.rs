//! The Internet checksum (RFC 1071): a ones' complement sum of 16-bit words.
//!
//! Sums are accumulated in 64 bits, eight bytes at a time, and folded once
//! at the end. A buffer whose checksum field is already filled in sums to
//! 0xffff when it is correct, so verification is `sum(...) == 0xffff`.

use core::net::Ipv4Addr;

/// Adds `data` to a running 64-bit sum (big-endian 16-bit words; an odd last
/// byte is padded with zero).
#[inline]
pub fn accumulate(mut sum: u64, data: &[u8]) -> u64 {
    let mut chunks = data.chunks_exact(8);
    for chunk in &mut chunks {
        let word = u64::from_be_bytes([
            chunk[0], chunk[1], chunk[2], chunk[3], chunk[4], chunk[5], chunk[6], chunk[7],
        ]);
        sum = add_with_carry(sum, word);
    }
    let mut rest = chunks.remainder().chunks_exact(2);
    for pair in &mut rest {
        sum = add_with_carry(sum, u64::from(u16::from_be_bytes([pair[0], pair[1]])));
    }
    if let [last] = rest.remainder() {
        sum = add_with_carry(sum, u64::from(*last) << 8);
    }
    sum
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
pub fn pseudo_header_v4(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, length: u16) -> u64 {
    let sum = accumulate(0, &src.octets());
    let sum = accumulate(sum, &dst.octets());
    add_with_carry(sum, u64::from(protocol) + u64::from(length))
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
    fn a_filled_in_header_sums_to_all_ones() {
        // An IPv4 header with its checksum (0xb861) in place.
        let header = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(fold(accumulate(0, &header)), 0xffff);
    }
}
