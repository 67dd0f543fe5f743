//! The secrets an interface keys its hashes with: drawn from the operating
//! system's random source when the interface is made ([`Keys::random`]),
//! never a constant, never the TSC.
//!
//! Each use has its own key, so that what one puts on the wire tells a
//! peer nothing about another: an ISN (RFC 6528), a timestamp offset
//! (RFC 7323 5.4), an ephemeral port (RFC 6056) and a fragment
//! identification (RFC 7739) are each a keyed function of the connection,
//! and a peer that sees all of them in one SYN still learns no key.
//!
//! Tests and simulations that must repeat pass [`Keys::for_testing`]
//! through `InterfaceConfig::keys`; nothing else should.

/// The keys. `Debug` prints none of them.
#[derive(Clone, PartialEq, Eq)]
pub struct Keys {
    /// TCP initial sequence numbers (RFC 6528's F: SipHash of the 4-tuple,
    /// added to a 4 µs clock).
    pub isn: [u64; 2],
    /// TCP timestamp offsets (RFC 7323 5.4, Linux's tsoffset): SipHash of
    /// the 4-tuple, so TSval and the ISS beside it in a SYN tell nothing
    /// of each other's key.
    pub ts_offset: [u64; 2],
    /// TCP SYN cookies (RFC 4987): SipHash of the 4-tuple, the period and
    /// the peer's ISN.
    pub syn_cookie: [u64; 2],
    /// The ephemeral port a connect tries first and its perturbation
    /// index (RFC 6056 algorithm 4's F and G).
    pub ports: u64,
    /// The flow hashes that never reach the wire: SO_REUSEPORT member
    /// choice (UDP and TCP), the TCP connection table's buckets and
    /// fingerprints.
    pub flow: u64,
    /// Where IPv6 fragment identifications start (RFC 7739: not
    /// predictable from outside).
    pub fragment_ident: u32,
    /// Seeds the stack's randomised limits (the challenge ACK budget of
    /// each second, RFC 5961 7).
    pub jitter: u64,
}

impl core::fmt::Debug for Keys {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Keys { .. }")
    }
}

/// Words a set of keys is made of.
const WORDS: usize = 10;

impl Keys {
    /// Fresh keys from the operating system's random source (`getrandom`);
    /// fails only if the system has none to give.
    pub fn random() -> Result<Keys, getrandom::Error> {
        let mut bytes = [0u8; WORDS * 8];
        getrandom::fill(&mut bytes)?;
        let mut words = [0u64; WORDS];
        for (word, chunk) in words.iter_mut().zip(bytes.chunks_exact(8)) {
            *word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        }
        Ok(Keys::from_words(words))
    }

    /// Keys that follow from `seed` alone: the same seed gives the same
    /// ISNs, timestamps, ports and hashes on every run. For tests and
    /// repeatable simulations only; anyone who knows or guesses the seed
    /// predicts them all.
    pub fn for_testing(seed: u64) -> Keys {
        // splitmix64: well spread words from any seed, 0 included.
        let mut state = seed;
        let words = core::array::from_fn(|_| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        });
        Keys::from_words(words)
    }

    fn from_words(w: [u64; WORDS]) -> Keys {
        Keys {
            isn: [w[0], w[1]],
            ts_offset: [w[2], w[3]],
            ports: w[4],
            flow: w[5],
            fragment_ident: w[6] as u32,
            jitter: w[7],
            syn_cookie: [w[8], w[9]],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_keys_differ_between_draws_and_test_keys_repeat() {
        let (a, b) = (Keys::random().unwrap(), Keys::random().unwrap());
        assert_ne!(a, b);
        assert_ne!(a.isn, a.ts_offset, "each use has its own key");
        assert_eq!(Keys::for_testing(3), Keys::for_testing(3));
        assert_ne!(Keys::for_testing(3), Keys::for_testing(4));
        assert_eq!(format!("{a:?}"), "Keys { .. }", "no secret in a log");
    }
}
