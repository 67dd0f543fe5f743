//! Fuzz target `rtcp`: the harness in fuzz/media_harness (`harness::rtp::rtcp`).
#![no_main]

#[path = "../media_harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::rtp::rtcp(data));
