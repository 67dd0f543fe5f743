//! Fuzz target `rtcp`: the harness in fuzz/harness (`harness::rtp::rtcp`).
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::rtp::rtcp(data));
