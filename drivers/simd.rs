//! Byte shuffles on packet headers with the CPU's vector unit.
//!
//! [`swap_eth_addrs`] swaps a frame's destination and source MAC, the work of
//! the `macswap` forwarding engine. With SSSE3 it is one 16-byte load, one
//! `pshufb` and one store; without, a few scalar moves.
//!
//! Invariant: the SSSE3 path is compiled only when the build enables the
//! feature (`cfg(target_feature = "ssse3")`; `.cargo/config.toml` builds for
//! `x86-64-v2`, the baseline DPDK 22.11 itself is built for, `-march=corei7`),
//! so every CPU that can run the binary has the instruction. Other builds take
//! the scalar path, which gives the same bytes.

/// Swaps bytes 0..6 (destination MAC) and 6..12 (source MAC) of `frame` in
/// place and leaves every other byte as it is. Frames shorter than the two
/// addresses (runts under 12 bytes) are left unchanged.
#[inline]
pub fn swap_eth_addrs(frame: &mut [u8]) {
    if let Some(word) = frame.first_chunk_mut::<16>() {
        swap_in_word(word);
    } else if let Some(header) = frame.get_mut(..12) {
        let (dst, src) = header.split_at_mut(6);
        dst.swap_with_slice(src);
    }
}

#[cfg(all(target_arch = "x86_64", target_feature = "ssse3"))]
#[inline]
fn swap_in_word(word: &mut [u8; 16]) {
    use std::arch::x86_64::{
        __m128i, _mm_loadu_si128, _mm_setr_epi8, _mm_shuffle_epi8, _mm_storeu_si128,
    };
    let ptr = word.as_mut_ptr().cast::<__m128i>();
    // SAFETY: `ptr` points to 16 bytes we borrow mutably; the unaligned load
    // and store need no alignment. The build enables SSSE3 (the cfg above),
    // so `pshufb` exists on every CPU this binary runs on.
    unsafe {
        let order = _mm_setr_epi8(6, 7, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 12, 13, 14, 15);
        _mm_storeu_si128(ptr, _mm_shuffle_epi8(_mm_loadu_si128(ptr), order));
    }
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "ssse3")))]
#[inline]
fn swap_in_word(word: &mut [u8; 16]) {
    let w = *word;
    *word = [
        w[6], w[7], w[8], w[9], w[10], w[11], w[0], w[1], w[2], w[3], w[4], w[5], w[12], w[13],
        w[14], w[15],
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_length_swaps_the_addresses_and_keeps_the_rest() {
        for len in 0..40u8 {
            let mut frame: Vec<u8> = (0..len).collect();
            swap_eth_addrs(&mut frame);
            let expected: Vec<u8> = if len < 12 {
                (0..len).collect()
            } else {
                (6..12).chain(0..6).chain(12..len).collect()
            };
            assert_eq!(frame, expected, "length {len}");
        }
    }

    #[test]
    fn the_build_has_the_vector_path_on_x86_64() {
        // .cargo/config.toml asks for x86-64-v2: if that is lost, the
        // scalar fallback would quietly take over the fast path.
        #[cfg(target_arch = "x86_64")]
        const {
            assert!(
                cfg!(target_feature = "ssse3"),
                "built without SSSE3: check .cargo/config.toml"
            )
        };
    }
}
