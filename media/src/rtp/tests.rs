//! Tests in files of their own where the code's file would pass ~400 lines
//! with them: the RTP header ([`header`]), the A.1 sequence state ([`seq`]),
//! RTCP parsing and writing ([`rtcp`]), a source's statistics turned
//! into a receiver report ([`stats`]), and random inputs that must not panic
//! ([`robust`]). Small files keep their unit tests at their end.

mod header;
mod robust;
mod rtcp;
mod seq;
mod stats;
