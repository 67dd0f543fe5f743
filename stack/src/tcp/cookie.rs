//! SYN cookies (RFC 4987 3.6): once a listener's SYN queue is full, a SYN
//! is answered with a SYN-ACK whose ISS carries what the handshake needs,
//! and nothing is kept. The ACK that returns it (`ack - 1`) is checked, and
//! only then is the connection made, straight into ESTABLISHED.
//!
//! The 32-bit cookie: bits 31..27 are the low 5 bits of a 64-second period
//! counter, bits 26..24 the index of the peer's MSS in [`MSS_TABLE`]
//! (rounded down), bits 23..0 a keyed SipHash of the 4-tuple, the period,
//! the index and the peer's ISN. A cookie is accepted in the period it was
//! made and the next (64 to 128 s), so an ACK must come from someone who
//! saw the SYN-ACK; a blind forger has one chance in 2^24 per guess.
//!
//! Options a cookie cannot hold travel in the SYN-ACK's TSval, as Linux
//! does: its low 6 bits carry the window scale the peer offered (4 bits,
//! 15 for none), whether it permitted SACK (1 bit) and whether we agreed
//! to ECN (1 bit); the peer echoes them in TSecr. Our TSval is moved back
//! (never forward) to those bits, so our timestamps stay monotonic.
//! Without timestamps a cookie connection has neither window scaling, SACK
//! nor ECN, as in Linux.

use super::table::FourTuple;
use crate::time::Instant;
use core::hash::{Hash, Hasher};

/// The MSS values a cookie can carry, ascending: the common IPv4 and IPv6
/// values over Ethernet, tunnels and jumbo frames.
pub const MSS_TABLE: [u16; 8] = [536, 1220, 1300, 1440, 1460, 4312, 8940, 8960];

const HASH_BITS: u32 = 24;
const HASH_MASK: u32 = (1 << HASH_BITS) - 1;
const INDEX_SHIFT: u32 = 24;
const PERIOD_SHIFT: u32 = 27;
const PERIOD_NANOS: u64 = 64_000_000_000;
const OPTION_BITS: u32 = 0x3f;
const NO_SCALE: u32 = 0xf;
const SACK_BIT: u32 = 0x10;
const ECN_BIT: u32 = 0x20;

/// Makes and checks cookies under one secret key.
#[derive(Clone)]
pub struct SynCookies {
    key: [u64; 2],
}

impl core::fmt::Debug for SynCookies {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("SynCookies { key: <hidden> }")
    }
}

impl SynCookies {
    /// Cookies under `key` (from [`crate::Keys`]).
    pub fn new(key: [u64; 2]) -> SynCookies {
        SynCookies { key }
    }

    /// The ISS of the SYN-ACK answering a SYN on `tuple` with ISN
    /// `peer_isn` and MSS option `peer_mss` (536 if it had none).
    pub fn make(&self, tuple: &FourTuple, peer_isn: u32, peer_mss: u16, now: Instant) -> u32 {
        let period = period(now);
        let index = MSS_TABLE.iter().rposition(|&m| m <= peer_mss).unwrap_or(0) as u32;
        ((period & 0x1f) << PERIOD_SHIFT)
            | (index << INDEX_SHIFT)
            | self.mac(tuple, period, index, peer_isn)
    }

    /// The peer's MSS if `cookie` is one we made for `tuple` and
    /// `peer_isn` in this period or the last; `None` for anything else.
    pub fn check(
        &self,
        tuple: &FourTuple,
        peer_isn: u32,
        cookie: u32,
        now: Instant,
    ) -> Option<u16> {
        let current = period(now);
        let made = cookie >> PERIOD_SHIFT;
        let age = current.wrapping_sub(made) & 0x1f;
        if age > 1 {
            return None;
        }
        let period = current.wrapping_sub(age);
        let index = (cookie >> INDEX_SHIFT) & 0x7;
        (cookie & HASH_MASK == self.mac(tuple, period, index, peer_isn))
            .then(|| MSS_TABLE[index as usize])
    }

    fn mac(&self, tuple: &FourTuple, period: u32, index: u32, peer_isn: u32) -> u32 {
        #[allow(deprecated)]
        let mut hasher = std::hash::SipHasher::new_with_keys(self.key[0], self.key[1]);
        tuple.hash(&mut hasher);
        hasher.write_u32(period);
        hasher.write_u32(index);
        hasher.write_u32(peer_isn);
        hasher.finish() as u32 & HASH_MASK
    }
}

/// The 64-second period `now` falls in.
fn period(now: Instant) -> u32 {
    (now.as_nanos() / PERIOD_NANOS) as u32
}

/// Our TSval `ts_now` moved back to the nearest value whose low 6 bits
/// hold the peer's `window_scale` and `sack` (and no ECN).
pub fn ts_with_options(ts_now: u32, window_scale: Option<u8>, sack: bool) -> u32 {
    ts_with_ecn(ts_now, window_scale, sack, false)
}

/// [`ts_with_options`], the bits saying too whether we agreed to `ecn`.
pub fn ts_with_ecn(ts_now: u32, window_scale: Option<u8>, sack: bool, ecn: bool) -> u32 {
    let scale = window_scale.map_or(NO_SCALE, |s| u32::from(s.min(14)));
    let bits = scale | if sack { SACK_BIT } else { 0 } | if ecn { ECN_BIT } else { 0 };
    let candidate = (ts_now & !OPTION_BITS) | bits;
    if candidate > ts_now {
        candidate.wrapping_sub(OPTION_BITS + 1)
    } else {
        candidate
    }
}

/// The peer's window scale and SACK permission from the TSecr of the ACK
/// that returns a cookie.
pub fn options_from_ts(ts_echo: u32) -> (Option<u8>, bool) {
    let scale = ts_echo & NO_SCALE;
    let window_scale = (scale != NO_SCALE).then_some(scale as u8);
    (window_scale, ts_echo & SACK_BIT != 0)
}

/// Whether we agreed to ECN, from the TSecr of the ACK that returns a
/// cookie.
pub fn ecn_from_ts(ts_echo: u32) -> bool {
    ts_echo & ECN_BIT != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::net::{IpAddr, Ipv4Addr, SocketAddr};

    fn tuple(port: u16) -> FourTuple {
        FourTuple {
            local: SocketAddr::new(IpAddr::V4(Ipv4Addr::new(198, 18, 0, 1)), 7),
            remote: SocketAddr::new(IpAddr::V4(Ipv4Addr::new(198, 18, 0, 2)), port),
        }
    }

    fn at(seconds: u64) -> Instant {
        Instant::from_nanos(seconds * 1_000_000_000)
    }

    #[test]
    fn a_cookie_comes_back_with_the_mss_rounded_down_for_up_to_two_periods() {
        let cookies = SynCookies::new([1, 2]);
        for (offered, carried) in [(1460, 1460), (1400, 1300), (100, 536), (9000, 8960)] {
            let cookie = cookies.make(&tuple(40000), 77, offered, at(1000));
            assert_eq!(
                cookies.check(&tuple(40000), 77, cookie, at(1000)),
                Some(carried)
            );
            assert_eq!(
                cookies.check(&tuple(40000), 77, cookie, at(1000 + 64)),
                Some(carried)
            );
            assert_eq!(
                cookies.check(&tuple(40000), 77, cookie, at(1000 + 130)),
                None,
                "expired"
            );
        }
    }

    #[test]
    fn another_tuple_isn_key_or_bit_fails_the_check() {
        let cookies = SynCookies::new([1, 2]);
        let cookie = cookies.make(&tuple(40000), 77, 1460, at(5));
        assert_eq!(cookies.check(&tuple(40001), 77, cookie, at(5)), None);
        assert_eq!(cookies.check(&tuple(40000), 78, cookie, at(5)), None);
        assert_eq!(
            SynCookies::new([1, 3]).check(&tuple(40000), 77, cookie, at(5)),
            None
        );
        for bit in 0..32 {
            let check = cookies.check(&tuple(40000), 77, cookie ^ (1 << bit), at(5));
            assert_eq!(check, None, "bit {bit} flipped");
        }
    }

    #[test]
    fn guessed_cookies_pass_about_once_in_two_to_the_24() {
        let cookies = SynCookies::new([9, 9]);
        let passed = (0..200_000u32)
            .filter(|&guess| {
                let cookie = guess.wrapping_mul(0x9e37_79b9);
                cookies.check(&tuple(1), 5, cookie, at(0)).is_some()
            })
            .count();
        assert!(passed <= 2, "{passed} of 200,000 random cookies passed");
    }

    #[test]
    fn options_round_trip_through_the_timestamp_and_it_never_moves_forward() {
        for ts in [0u32, 1, 63, 64, 1000, u32::MAX - 5, u32::MAX] {
            for scale in [None, Some(0), Some(7), Some(14)] {
                for sack in [false, true] {
                    let stamped = ts_with_options(ts, scale, sack);
                    assert_eq!(options_from_ts(stamped), (scale, sack), "ts {ts}");
                    let back = ts.wrapping_sub(stamped);
                    assert!(back < 64, "ts {ts} moved back {back}, at most 63");
                }
            }
        }
    }
}
