//! The hasher of the per-packet address maps (the neighbour caches, the
//! route cache): cheap for 4- and 16-byte keys, keyed at random per map.
//!
//! Invariant: only for maps that are bounded and cleared or aged, so a
//! weak hash can slow a lookup but never grow a map (the neighbour caches
//! hold on-link addresses up to their capacity; the route cache is
//! cleared when full).

/// A keyed multiply-xorshift over an address's bytes (4 or 16): a few
/// cycles where SipHash was a visible share of a relayed packet. The key is
/// random per map.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AddressHash {
    key: u64,
}

impl AddressHash {
    pub(crate) fn random() -> AddressHash {
        use core::hash::BuildHasher;
        AddressHash {
            key: std::collections::hash_map::RandomState::new().hash_one(0x006e_6569_6768_u64) | 1,
        }
    }
}

impl core::hash::BuildHasher for AddressHash {
    type Hasher = AddressHasher;

    fn build_hasher(&self) -> AddressHasher {
        AddressHasher { state: self.key }
    }
}

/// See [`AddressHash`].
#[derive(Debug)]
pub(crate) struct AddressHasher {
    state: u64,
}

impl core::hash::Hasher for AddressHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            let x = (self.state ^ u64::from_le_bytes(word)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            self.state = x ^ (x >> 29);
        }
    }

    #[inline]
    fn finish(&self) -> u64 {
        let x = self.state.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x ^ (x >> 31)
    }
}
