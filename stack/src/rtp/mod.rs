//! RTP and RTCP (RFC 3550): header validation, per-SSRC receive statistics,
//! RTCP reports. (Being written.)
