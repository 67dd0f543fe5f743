//! Telling RTP from RTCP when both share one port (rtcp-mux, RFC 5761
//! section 4): both start with version 2; RTCP's second byte is its packet
//! type, and the types in use (SR 200 ... XR 207) lie in 192-223, a range
//! muxed RTP keeps clear by not using payload types 64-95 with the marker
//! set. Appendix A.1's rejection of payload types 72-76 is applied too, so
//! [`classify`] never calls a packet RTP that
//! [`RtpPacket::check`](super::RtpPacket::check) would reject as RTCP.
//!
//! This looks at two bytes and the length only: the full checks are the
//! parsers' ([`RtpPacket::new_checked`](super::RtpPacket::new_checked),
//! [`Compound::new_checked`](super::Compound::new_checked)).

use super::header::{looks_like_rtcp, FIXED_HEADER_LEN};
use super::VERSION;

/// Smallest RTCP packet worth parsing: a 4-byte header and an SSRC.
const MIN_RTCP_LEN: usize = 8;
const _: () = assert!(MIN_RTCP_LEN <= FIXED_HEADER_LEN);

/// What a datagram on an RTP port is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An RTP packet (version 2, not an RTCP packet type, at least 12 bytes).
    Rtp,
    /// An RTCP packet (version 2, second byte an RTCP packet type or payload
    /// type 72-76, at least 8 bytes).
    Rtcp,
    /// Anything else: another version, too short, or another protocol
    /// sharing the port (STUN, DTLS: RFC 7983).
    Other,
}

/// Classifies one datagram received on an rtcp-mux port.
#[inline]
pub fn classify(datagram: &[u8]) -> Kind {
    // Per packet: a whole fixed header (long enough for RTP and for RTCP)
    // first, one length test for the common case.
    let Some(&[first, second, ..]) = datagram.first_chunk::<FIXED_HEADER_LEN>() else {
        return classify_short(datagram);
    };
    if first >> 6 != VERSION {
        Kind::Other
    } else if looks_like_rtcp(second) {
        Kind::Rtcp
    } else {
        Kind::Rtp
    }
}

/// [`classify`] for a datagram shorter than an RTP fixed header.
#[inline]
fn classify_short(datagram: &[u8]) -> Kind {
    let (Some(&first), Some(&second)) = (datagram.first(), datagram.get(1)) else {
        return Kind::Other;
    };
    if first >> 6 != VERSION {
        return Kind::Other;
    }
    if looks_like_rtcp(second) {
        if datagram.len() >= MIN_RTCP_LEN {
            Kind::Rtcp
        } else {
            Kind::Other
        }
    } else if datagram.len() >= FIXED_HEADER_LEN {
        Kind::Rtp
    } else {
        Kind::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtp_rtcp_and_others() {
        let mut d = [0u8; 12];
        d[0] = 0x80;
        // RTP: PCMU (0), PCMA (8) with marker, dynamic 96, 111.
        for second in [0u8, 0x88, 96, 111, 0x80 | 111] {
            d[1] = second;
            assert_eq!(classify(&d), Kind::Rtp, "{second}");
        }
        // RTCP: SR, RR, SDES, BYE, APP, RTPFB, PSFB, XR, and the range ends.
        for second in [200u8, 201, 202, 203, 204, 205, 206, 207, 192, 223] {
            d[1] = second;
            assert_eq!(classify(&d), Kind::Rtcp, "{second}");
            assert_eq!(classify(&d[..8]), Kind::Rtcp);
            assert_eq!(classify(&d[..7]), Kind::Other);
        }
        d[1] = 0;
        assert_eq!(classify(&d[..11]), Kind::Other);
        // Version 1, version 0 (STUN starts 0x00/0x01), DTLS (20-63).
        for first in [0x40u8, 0x00, 0x01, 22] {
            d[0] = first;
            assert_eq!(classify(&d), Kind::Other);
        }
        assert_eq!(classify(&[]), Kind::Other);
        assert_eq!(classify(&[0x80]), Kind::Other);
    }
}
